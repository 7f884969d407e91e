#!/usr/bin/env python3
"""Lists every place a qos/ file reaches up into a higher layer.

A qos/ file's layer is the folder it is in:

  0 kernel/   the kernel: scheduler syscalls, /proc, cgroup files, timers
  0 policy/   the pure logic: parameters, admission, police, rules, events
  1 reserve/  one reserve, its members' policy, policing, bills
  2 member/   members joining, leaving and exiting; the guardian
  3 manager/  the manager object, its loop, reserves defined and changed

A file may include the headers of, call the functions declared by, and
touch the state of its own layer and the ones below it only.

The headers at the top of qos/ are the public ones, the only ones the
compositor and the clients may include.  qos/qos.h is the interface that
files of every layer implement part of: including it is allowed
everywhere, and each of its functions belongs to the layer of the file
that defines it.  Every other public header belongs to the layer of the
.c file of the same name, and includes public headers only.

The state follows the same rule: struct qos_manager, struct qos_reserve
and struct qos_member are compositions of sub-structs, each owned by one
file (the one whose header declares it, or as SUBSTRUCT_OWNER says for
those declared lower down because the composition must hold them).  A
file may touch the sub-structs of its own layer and the ones below only.

Prints one line per include of a higher layer's header, per call of a
function of a higher layer, per use of a sub-struct owned by a higher
layer and per private header included from outside qos/; prints nothing
and exits 0 when there is none.
"""
import glob
import os
import re
import sys

FOLDER_LAYER = {"kernel": 0, "policy": 0, "reserve": 1, "member": 2, "manager": 3}
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
# Code outside the library: it may include the public headers only.
USERS = ("compositor", "clients")

top = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
root = os.path.join(top, "qos")


def strip(text):
    """The code without comments and string literals (but with include names)."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'^(?!\s*#\s*include)(.*)$',
            lambda m: re.sub(r'"(\\.|[^"\\\n])*"', '""', m.group(1)), text, flags=re.M)


def unit(path):
    return os.path.splitext(os.path.basename(path))[0]


def rel(path):
    return os.path.relpath(path, top)


problems = []
public = sorted(glob.glob(os.path.join(root, "*.h")))
private = sorted(glob.glob(os.path.join(root, "*", "*.[ch]")))
for f in sorted(glob.glob(os.path.join(root, "*.c"))):
    problems.append("%s: in no layer (move it into one of %s)"
            % (rel(f), ", ".join(f + "/" for f in FOLDER_LAYER)))
for f in sorted(glob.glob(os.path.join(root, "*", "**", "*.[ch]"), recursive=True)):
    folder = os.path.relpath(f, root).split(os.sep)[0]
    if folder not in FOLDER_LAYER or os.path.dirname(f) != os.path.join(root, folder):
        problems.append("%s: in no layer (qos/ has the folders %s, one level deep)"
                % (rel(f), ", ".join(FOLDER_LAYER)))

LAYER = {}
where = {}
for f in private:
    folder = os.path.basename(os.path.dirname(f))
    if folder not in FOLDER_LAYER:
        continue
    u = unit(f)
    if u in where and where[u] != folder:
        problems.append("%s: qos/%s/ has a file of the same name" % (rel(f), where[u]))
    where[u] = folder
    LAYER[u] = FOLDER_LAYER[folder]
for f in public:
    u = unit(f)
    if u == PUBLIC:
        continue
    if u in where:
        if os.path.exists(os.path.join(root, where[u], u + ".h")):
            problems.append("%s: qos/%s/%s.h has the same name" % (rel(f), where[u], u))
    else:
        problems.append("%s: a public header with no qos/*/%s.c (its layer is that file's)"
                % (rel(f), u))

files = [f for f in public + private if unit(f) == PUBLIC or unit(f) in LAYER]
include = re.compile(r'\s*#\s*include\s+"qos/(?:(\w+)/)?(\w+)\.h"')

# Who owns each function: the layer of the header declaring it, or for the
# public interface, of the file defining it.
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
    if me == PUBLIC:
        continue
    is_public = os.path.dirname(f) == root
    lines = text.split("\n")
    for n, line in enumerate(lines, 1):
        m = include.match(line)
        if m:
            folder, name = m.groups()
            if is_public and folder:
                problems.append("%s:%d: a public header includes qos/%s/%s.h, a private one"
                        % (rel(f), n, folder, name))
            if name in LAYER and LAYER[name] > LAYER[me]:
                problems.append("%s:%d: includes qos/%s%s.h (layer %d from layer %d)"
                        % (rel(f), n, folder + "/" if folder else "", name, LAYER[name],
                        LAYER[me]))
            continue
        for c in re.finditer(r"\b(qos_\w+)\s*\(", line):
            o = owner.get(c.group(1))
            if o and o in LAYER and LAYER[o] > LAYER[me]:
                problems.append("%s:%d: calls %s (%s, layer %d, from layer %d)"
                        % (rel(f), n, c.group(1), o, LAYER[o], LAYER[me]))
        for u in use.finditer(line):
            typ, o = member_owner[u.group(1) or u.group(2)]
            if LAYER[o] > LAYER[me]:
                problems.append("%s:%d: uses struct %s (%s's, layer %d, from layer %d)"
                        % (rel(f), n, typ, o, LAYER[o], LAYER[me]))

# The compositor and the clients see the public headers only.
for folder in USERS:
    for f in sorted(glob.glob(os.path.join(top, folder, "**", "*.[ch]"), recursive=True)):
        for n, line in enumerate(open(f).read().split("\n"), 1):
            m = include.match(line)
            if m and m.group(1):
                problems.append("%s:%d: includes qos/%s/%s.h, private to qos/ (the public "
                        "headers are the ones at the top of qos/)"
                        % (rel(f), n, m.group(1), m.group(2)))

for p in problems:
    print(p)
sys.exit(1 if problems else 0)
