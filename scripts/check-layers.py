#!/usr/bin/env python3
"""Lists every place a qos/ file reaches up into a higher layer.

The qos/ files form layers; a file may include the headers of, and call
the functions declared by, its own layer and the ones below it only:

  0 kernel   sys proc cgroup cgroup_v1 cgroup_v2 cglimit cputimer journal
             params admission police watchdog rules rules_parser event core
  1 reserve  reserve threads fallback optimistic rtguard
  2 member   member guardian
  3 manager  manager configure reconcile canary

qos/qos.h is the public interface, which files of every layer implement
part of: including it is allowed everywhere (its types), and each of its
functions belongs to the layer of the file that defines it.

Prints one line per include of a higher layer's header and per call of a
function of a higher layer; prints nothing and exits 0 when there is none.
"""
import glob
import os
import re
import sys

LAYERS = {
    0: "sys proc cgroup cgroup_v1 cgroup_v2 cglimit cputimer journal params admission "
    "police watchdog rules rules_parser event core",
    1: "reserve threads fallback optimistic rtguard",
    2: "member guardian",
    3: "manager configure reconcile canary",
}
LAYER = {name: n for n, names in LAYERS.items() for name in names.split()}
PUBLIC = "qos"

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "qos")


def strip(text):
    """The code without comments and string literals (but with include names)."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'^(?!\s*#\s*include)(.*)$',
            lambda m: re.sub(r'"(\\.|[^"\\\n])*"', '""', m.group(1)), text, flags=re.M)


def unit(path):
    return os.path.splitext(os.path.basename(path))[0]


files = sorted(glob.glob(os.path.join(root, "*.[ch]")))
problems = []
unknown = [unit(f) for f in files if unit(f) not in LAYER and unit(f) != PUBLIC]
for u in sorted(set(unknown)):
    problems.append("qos/%s: in no layer (add it to scripts/check-layers.py)" % u)

# Who owns each function: the layer of the header declaring it, or for the
# public header, of the file defining it.
owner = {}
decl = re.compile(r"^[a-z][^;{}()]*?\b(qos_\w+)\s*\(", re.M)
code = {f: strip(open(f).read()) for f in files}
for f, text in code.items():
    if f.endswith(".h") and unit(f) != PUBLIC:
        for m in decl.finditer(text):
            owner.setdefault(m.group(1), unit(f))
for f, text in code.items():
    if f.endswith(".c"):
        for m in re.finditer(r"^[a-z][^;{}]*?\b(qos_\w+)\s*\([^;{}]*\)\s*\{", text, re.M):
            owner.setdefault(m.group(1), unit(f))

for f, text in code.items():
    me = unit(f)
    if me == PUBLIC or me not in LAYER:
        continue
    rel = os.path.relpath(f, os.path.join(root, ".."))
    lines = text.split("\n")
    for n, line in enumerate(lines, 1):
        m = re.match(r'\s*#\s*include\s+"qos/(\w+)\.h"', line)
        if m and m.group(1) in LAYER and LAYER[m.group(1)] > LAYER[me]:
            problems.append("%s:%d: includes qos/%s.h (layer %d from layer %d)"
                    % (rel, n, m.group(1), LAYER[m.group(1)], LAYER[me]))
            continue
        for c in re.finditer(r"\b(qos_\w+)\s*\(", line):
            o = owner.get(c.group(1))
            if o and o in LAYER and LAYER[o] > LAYER[me]:
                problems.append("%s:%d: calls %s (%s, layer %d, from layer %d)"
                        % (rel, n, c.group(1), o, LAYER[o], LAYER[me]))

for p in problems:
    print(p)
sys.exit(1 if problems else 0)
