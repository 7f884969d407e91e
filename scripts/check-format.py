#!/usr/bin/env python3
"""Format check: .clang-format for C, .editorconfig for everything else.

C sources must be exactly what clang-format makes of them (one style for the
whole tree); meson files indent with tabs; no trailing whitespace; files end
with one newline. Prints file:line: message for each violation; exit 1 if any.
Fix C files with `clang-format -i FILE...`.
"""
import pathlib
import re
import subprocess
import sys

MAX_COLS = 100
TAB_WIDTH = 4


def tracked_files(root):
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=root, check=True, capture_output=True, text=True).stdout
    return [root / p for p in out.splitlines()]


def check(path, problems):
    name = path.name
    is_c = path.suffix in (".c", ".h")
    is_meson = name == "meson.build"
    is_py = path.suffix == ".py"
    if not (is_c or is_meson or is_py or path.suffix in (".sh", ".xml", ".md")):
        return
    data = path.read_bytes()
    if not data:
        return
    text = data.decode("utf-8", errors="replace")
    if not text.endswith("\n") or text.endswith("\n\n"):
        problems.append(f"{path}: must end with exactly one newline")
    for no, line in enumerate(text.split("\n")[:-1], 1):
        if line.rstrip() != line and path.suffix != ".md":
            problems.append(f"{path}:{no}: trailing whitespace")
        indent = line[:len(line) - len(line.lstrip(" \t"))]
        if (is_c or is_meson) and indent.startswith(" ") \
                and not line.lstrip().startswith("*"):
            problems.append(f"{path}:{no}: indent with tabs, not spaces")
        if is_py and "\t" in indent:
            problems.append(f"{path}:{no}: indent Python with spaces")
        if is_c and len(line.expandtabs(TAB_WIDTH)) > MAX_COLS:
            problems.append(f"{path}:{no}: longer than {MAX_COLS} columns")


def check_clang_format(root, paths, problems):
    c_files = [str(p) for p in paths if p.suffix in (".c", ".h") and p.is_file()]
    if not c_files:
        return
    try:
        out = subprocess.run(["clang-format", "--dry-run", "--Werror"] + c_files,
                             cwd=root, capture_output=True, text=True)
    except FileNotFoundError:
        problems.append("clang-format is not installed (apt-get install clang-format)")
        return
    for line in out.stderr.splitlines():
        m = re.match(r"(.*?):(\d+):\d+: (?:error|warning): code should be clang-formatted", line)
        if m:
            problems.append(f"{m.group(1)}:{m.group(2)}: not in clang-format style")
    if out.returncode and not any("clang-format" in p for p in problems):
        problems.append("clang-format failed: " + out.stderr.strip()[:200])


def main():
    root = pathlib.Path(__file__).resolve().parent.parent
    problems = []
    paths = [p for p in tracked_files(root) if p.is_file() and "_proto" not in p.parts]
    for path in paths:
        check(path, problems)
    check_clang_format(root, paths, problems)
    for p in problems:
        print(p)
    if problems:
        print(f"format check: {len(problems)} problem(s)")
        return 1
    print("format check: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
