local a, b = io.read("n", "n")
print(math.floor(a + b))
