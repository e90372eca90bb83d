#!/usr/bin/env python3
"""Compares the WGSL two `forge` binaries emit for every built-in, at its declared schedule
and at every schedule of its tuning space: counts per kernel and schedule of `fma`s,
barriers, `var`s (and `var` arrays), `let`s, loops, `if`s and helper functions, and the
lines that differ.

    scripts/wgsl_compare.py BEFORE/forge AFTER/forge [OUT_DIR]

Needs no GPU (`forge emit` only runs naga). OUT_DIR (default /tmp/wgsl_compare) receives
`before/` and `after/`, one file per kernel and schedule, to diff by hand.
"""
import itertools
import os
import re
import subprocess
import sys


def kernels(forge):
    """(name, [schedule, ...]) for every kernel `forge list` prints."""
    out = subprocess.run([forge, "list"], capture_output=True, text=True, check=True).stdout
    found, name, scheds = [], None, []
    for line in out.splitlines():
        if line and not line.startswith(" "):
            if name:
                found.append((name, scheds))
            name, scheds = line.strip(), []
        elif line.strip().startswith("schedule:"):
            scheds.append(line.split(":", 1)[1].strip().replace(" ", ","))
        elif line.strip().startswith("tune space:"):
            axes = re.findall(r"(\w+) \[([^\]]*)\]", line)
            key = {"workgroup": "wg", "items": "items", "vector": "vec"}
            values = [[f"{key.get(a, a)}={v.strip()}" for v in vs.split(",")] for a, vs in axes]
            scheds += [",".join(c) for c in itertools.product(*values)]
    if name:
        found.append((name, scheds))
    return found


def emit(forge, kernel, schedule):
    r = subprocess.run([forge, "emit", kernel, "--backend", "wgsl", "--schedule", schedule],
                       capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None


def counts(t):
    pats = {
        "fma": r"\bfma\(", "barrier": r"workgroupBarrier\(\)", "var": r"^\s*var ",
        "var_array": r"^\s*var \w+: array<", "let": r"^\s*let ", "for": r"\bfor \(",
        "loop": r"\bloop \{|\bwhile ", "if": r"\bif\b", "fn": r"^fn ",
    }
    c = {k: len(re.findall(p, t, re.M)) for k, p in pats.items()}
    c["lines"] = t.count("\n")
    return c


def main():
    before, after = sys.argv[1], sys.argv[2]
    out = sys.argv[3] if len(sys.argv) > 3 else "/tmp/wgsl_compare"
    for name, scheds in kernels(after):
        for s in dict.fromkeys(scheds):
            texts = [emit(before, name, s), emit(after, name, s)]
            for side, t in zip(("before", "after"), texts):
                if t is not None:
                    os.makedirs(os.path.join(out, side, name), exist_ok=True)
                    with open(os.path.join(out, side, name, s + ".wgsl"), "w") as f:
                        f.write(t)
            if None in texts:
                print(f"{name:20} {s:24} only {'after' if texts[0] is None else 'before'}")
                continue
            cb, ca = counts(texts[0]), counts(texts[1])
            diff = " ".join(f"{k}:{cb[k]}->{ca[k]}" for k in cb if cb[k] != ca[k])
            print(f"{name:20} {s:24} {diff or 'same'}")


if __name__ == "__main__":
    main()
