#!/usr/bin/env python3
"""Lists every place a qos/ file reaches up into a higher layer.

The qos/ files form layers; a file may include the headers of, and call
the functions declared by, its own layer and the ones below it only:

  0 kernel   sys proc cgroup cgroup_v1 cgroup_v2 cglimit cputimer journal
             params admission police adapt watchdog rules rules_parser split_rules event
             core
  1 reserve  reserve threads fallback optimistic rtguard server split
  2 member   member guardian
  3 manager  manager configure adjust reconcile canary

qos/qos.h is the public interface, which files of every layer implement
part of: including it is allowed everywhere (its types), and each of its
functions belongs to the layer of the file that defines it.

The state follows the same rule: struct qos_manager, struct qos_reserve
and struct qos_member are compositions of sub-structs, each owned by one
file (the one whose header declares it, or as SUBSTRUCT_OWNER says for
those declared lower down because the composition must hold them).  A
file may touch the sub-structs of its own layer and the ones below only.

Prints one line per include of a higher layer's header, per call of a
function of a higher layer and per use of a sub-struct owned by a higher
layer; prints nothing and exits 0 when there is none.
"""
import glob
import os
import re
import sys

LAYERS = {
    0: "sys proc cgroup cgroup_v1 cgroup_v2 cglimit cputimer journal params admission "
    "police adapt watchdog rules rules_parser split_rules event core",
    1: "reserve threads fallback optimistic rtguard server split",
    2: "member guardian",
    3: "manager configure adjust reconcile canary",
}
LAYER = {name: n for n, names in LAYERS.items() for name in names.split()}
COMPOSITIONS = ("qos_manager", "qos_reserve", "qos_member")
# Sub-structs declared below their owner (the composition holds them by value).
SUBSTRUCT_OWNER = {
    "qos_manager_deadline": "optimistic",
    "qos_manager_cookies": "reserve",
    "qos_manager_root": "reserve",
    "qos_manager_carry": "rtguard",
    "qos_manager_server": "server",
    "qos_manager_guardian": "guardian",
    "qos_manager_canary": "canary",
    "qos_reserve_cgroup": "reserve",
    "qos_reserve_forks": "reserve",
    "qos_reserve_demotion": "configure",
    "qos_member_home": "member",
    "qos_member_rttime": "member",
}
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

# The compositions' sub-struct members, by member name: their owner.
declared = {}
for f, text in code.items():
    if f.endswith(".h"):
        for m in re.finditer(r"^struct (qos_\w+) \{", text, re.M):
            declared[m.group(1)] = unit(f)
member_owner = {}
for f, text in code.items():
    for comp in COMPOSITIONS:
        m = re.search(r"^struct %s \{(.*?)^\};" % comp, text, re.M | re.S)
        if not m:
            continue
        for s in re.finditer(r"^\s*struct (qos_\w+) (\w+);", m.group(1), re.M):
            typ, name = s.groups()
            if typ in SUBSTRUCT_OWNER or (typ.startswith(comp + "_") and
                    declared.get(typ) != PUBLIC):
                o = SUBSTRUCT_OWNER.get(typ, declared.get(typ))
                if o not in LAYER:
                    problems.append("%s: struct %s has no owner (add it to SUBSTRUCT_OWNER in "
                            "scripts/check-layers.py)" % (comp, typ))
                    continue
                member_owner[name] = (typ, o)
use = re.compile(r"(?:->|\.)(%s)\b(?=\s*\.)|&\s*\w+(?:->\w+)*->(%s)\b(?!\s*[.\[])"
        % ("|".join(member_owner) or "$^", "|".join(member_owner) or "$^"))

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
        for u in use.finditer(line):
            typ, o = member_owner[u.group(1) or u.group(2)]
            if LAYER[o] > LAYER[me]:
                problems.append("%s:%d: uses struct %s (%s's, layer %d, from layer %d)"
                        % (rel, n, typ, o, LAYER[o], LAYER[me]))

for p in problems:
    print(p)
sys.exit(1 if problems else 0)
