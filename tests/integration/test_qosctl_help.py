"""`qosctl help` prints the usage, listing every command; an unknown command
is refused with its name and the usage, before any compositor is asked."""

import re
import subprocess

from harness import qosctl_bin

COMMANDS = ["windows", "outputs", "inputs", "focus", "close", "workspaces", "workspace",
            "move-to-workspace", "exec", "set", "join",
            "reserve", "reserves", "capacity", "clients", "scheduler", "reload", "top",
            "subscribe", "version", "exit", "raw", "help"]


def run(*args):
    return subprocess.run([qosctl_bin(), *args], capture_output=True, text=True, timeout=10,
                          env={"PATH": "/usr/bin:/bin"})


def listed(text):
    return re.findall(r"^  ([a-z-]+)", text.split("Commands:\n", 1)[1], re.M)


def test_help_lists_every_command():
    r = run("help")
    assert r.returncode == 0 and r.stderr == ""
    assert r.stdout.startswith("Usage: qosctl ")
    assert listed(r.stdout) == COMMANDS
    assert run("--help").stdout == r.stdout


def test_unknown_command_is_named_with_the_usage():
    # no socket at all: the refusal comes from qosctl itself
    r = run("frobnicate", "1")
    assert r.returncode == 2
    first, rest = r.stderr.split("\n", 1)
    assert first == "qosctl: unknown command 'frobnicate'"
    assert listed(rest) == COMMANDS
    assert r.stdout == ""


def test_inputs_lists_devices_and_capabilities(qosway):
    r = qosway.qosctl("inputs")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "seat capabilities: pointer\n"
    from vinput import VirtualInput
    with VirtualInput(qosway.client_env()):
        r = qosway.qosctl("inputs")
    lines = r.stdout.splitlines()
    assert lines[-1] == "seat capabilities: pointer keyboard", r.stdout
    assert sorted(l.split()[0] for l in lines[:-1]) == ["keyboard", "pointer"], r.stdout
    assert all(l.endswith("(virtual)") for l in lines[:-1]), r.stdout


def test_wrong_arguments_are_refused_with_the_listed_synopsis():
    # help lists each command's synopsis; a usage error quotes the same one
    text = run("help").stdout.split("Commands:\n", 1)[1]
    synopsis = dict(re.findall(r"^  ([a-z-]+)(?: (.*?))?(?: {2,}|$)", text, re.M))
    assert list(synopsis) == COMMANDS
    for name, args in synopsis.items():
        if name == "help":
            continue
        wrong = ["x"] if not args or name == "top" else []
        r = run(name, *wrong)
        assert r.returncode == 2 and r.stdout == "", (name, r)
        first = r.stderr.split("\n", 1)[0]
        if name == "exec":
            assert first == "qosctl: usage: qosctl exec -- CMD [ARGS...]"
        elif args:
            assert first == f"qosctl: usage: qosctl {name} {args}", first
        else:
            assert first == f"qosctl: '{name}' takes no arguments", first
