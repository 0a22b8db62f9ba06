# Line-heavy: 3M lines of arithmetic in the program's own file, no calls.
s = 0
for i in range(1_000_000):
    s += i * i % 7
    s ^= i
print(s)
