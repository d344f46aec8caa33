#!/usr/bin/env python3
"""The loops of an nvdisasm or cuobjdump listing, found by their backward branches, with the
instructions each holds by opcode: how docs/performance.md counts the Vulkan kernel's z-loop
copies and the reduction's loops ("The Vulkan kernel's machine code").

    python3 tests/tools/sass_loops.py /tmp/sass/obj009.sass

A loop is printed as its address range, from the branch's target to the branch; nested loops
appear inside the ranges of the loops around them.
"""
import collections
import re
import sys

if len(sys.argv) != 2:
    sys.exit(__doc__)
ins = []
for line in open(sys.argv[1]).read().split("\n"):
    m = re.match(r"\s*/\*([0-9a-f]+)\*/\s+(.*?);", line)
    if m:
        ins.append((int(m.group(1), 16), m.group(2).strip()))
if not ins:
    sys.exit(f"{sys.argv[1]}: no instructions (expected lines like '/*0010*/ MOV R1, ... ;')")


def opcode(text):
    # Without the predicate, with the modifiers (FFMA.FTZ and FFMA count apart).
    return re.sub(r"^@!?U?P[T0-9]+\s+", "", text).split()[0]


print(f"{len(ins)} instructions")
for at, text in ins:
    m = re.search(r"\bBRA\b.*?(0x[0-9a-f]+)", text)
    if m and int(m.group(1), 16) < at:
        start = int(m.group(1), 16)
        body = [t for a, t in ins if start <= a <= at]
        top = ", ".join(f"{k} {v}" for k, v in collections.Counter(map(opcode, body)).most_common(12))
        print(f"  {hex(start)}-{hex(at)}: {len(body)} instructions; {top}")
