# ward's own check for the dialects: read two numbers, print their sum and
# the arguments it was given.
import sys
a, b = map(int, sys.stdin.readline().split())
print("sum", a + b, "args", len(sys.argv) - 1)
