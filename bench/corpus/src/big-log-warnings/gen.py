"""Generate the 120 modules of the build (run before make): every module has 8 functions
with two warnings each; m60.c also has one real error (an undeclared identifier)."""
import os

N = 120
os.makedirs("src", exist_ok=True)

for i in range(1, N + 1):
    lines = [
        f"int f{i}_{k}(int a){{ int unused{k}; if (a = {k}) return a; }}\n" for k in range(1, 9)
    ]
    if i == 60:
        lines.append("int broken(void){ return missing_symbol; }\n")
    with open(f"src/m{i}.c", "w") as f:
        f.writelines(lines)
