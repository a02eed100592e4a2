-- ward's own check for the dialects: the sum of two numbers, the arguments' count.
local a, b = io.read("n", "n")
print(string.format("sum %d args %d", a + b, #arg))
