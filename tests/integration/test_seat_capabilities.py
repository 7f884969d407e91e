"""The seat offers a keyboard only while a keyboard with a keymap exists:
fuzzel starts with no keyboard at all, gets the keyboard when one appears,
and keeps its focus (no leave/enter pair) when a second keyboard is added.
A client's keyboard goes when the last keyboard goes and comes back with
the next one; the pointer is always offered."""

import re
import shutil

import pytest

from harness import wait_for
from vinput import VirtualInput, KEY_A, KEY_ENTER

fuzzel_missing = pytest.mark.skipif(shutil.which("fuzzel") is None, reason="fuzzel not installed")


def inputs(comp):
    r = comp.ipc({"command": "inputs"})
    assert r["success"], r
    return r


def capabilities(comp):
    return inputs(comp)["seat"]["capabilities"]


def keyboards(comp):
    return [d for d in inputs(comp)["devices"] if d["type"] == "keyboard"]


def wire(proc):
    """fuzzel's WAYLAND_DEBUG=client trace so far."""
    with open(proc.stderr_path, errors="replace") as fh:
        return fh.read()


def count(pattern, text):
    return len(re.findall(pattern, text))


def start_fuzzel(comp):
    fz = comp.spawn(["sh", "-c", "printf 'alpha\\nbeta\\n' | exec fuzzel --dmenu"],
                    name="fuzzel", env_extra={"WAYLAND_DEBUG": "client"})
    # it has drawn once its configure is acked and a buffer committed
    wait_for(lambda: re.search(r"zwlr_layer_surface_v1@\d+\.ack_configure\(.*?"
                               r"wl_surface@\d+\.attach\(", wire(fz), re.S),
             desc="fuzzel drew its surface")
    return fz


def assert_chose(fz, typed, match):
    """fuzzel printed the entry the typed text matched, or (a busy machine:
    Enter came before it filtered the list) the typed text itself; either
    way every key reached it."""
    assert fz.lines in ([match], [typed]), fz.lines


@fuzzel_missing
def test_fuzzel_starts_without_a_keyboard_and_gets_one_later(qosway):
    assert capabilities(qosway) == ["pointer"]
    fz = start_fuzzel(qosway)
    assert fz.alive(), fz.stderr_tail()
    assert "get_keyboard" not in wire(fz)
    with VirtualInput(qosway.client_env()) as vi:
        assert capabilities(qosway) == ["pointer", "keyboard"]
        wait_for(lambda: re.search(r"wl_keyboard@\d+\.keymap\(.*?wl_keyboard@\d+\.enter\(",
                                   wire(fz), re.S),
                 desc="fuzzel got a keymap, then keyboard focus")
        vi.type_text("bet")
        vi.key(KEY_ENTER)
        assert fz.wait(10) == 0, fz.stderr_tail()
    assert_chose(fz, "bet", "beta")


@fuzzel_missing
def test_second_keyboard_keeps_fuzzels_focus(qosway):
    with VirtualInput(qosway.client_env()) as first:
        fz = start_fuzzel(qosway)
        wait_for(lambda: count(r"wl_keyboard@\d+\.enter\(", wire(fz)) == 1,
                 desc="fuzzel has keyboard focus")
        with VirtualInput(qosway.client_env()) as second:
            wait_for(lambda: len(keyboards(qosway)) == 2 and
                     all(k["keymap"] for k in keyboards(qosway)), desc="two keyboards")
            second.type_text("alp")
            second.key(KEY_ENTER)
            assert fz.wait(10) == 0, fz.stderr_tail()
        first.key(KEY_A)  # the first keyboard still works after the second left
    trace = wire(fz)
    assert count(r"wl_keyboard@\d+\.leave\(", trace) == 0, trace[-3000:]
    assert count(r"wl_keyboard@\d+\.enter\(", trace) == 1
    assert_chose(fz, "alp", "alpha")


def test_keyboard_capability_follows_the_keyboards(qosway):
    c, w = qosway.open_window("Caps")
    assert capabilities(qosway) == ["pointer"]
    assert c.events("keymap") == []
    for round_ in range(2):
        m = c.mark()
        with VirtualInput(qosway.client_env()) as vi:
            c.wait_event("keymap", start=m)
            c.wait_event("kb_enter", start=m)
            vi.key(KEY_A)
            c.wait_event("key", lambda d: d["key"] == KEY_A and d["state"] == 1, start=m)
        # the last keyboard went: the capability and the client's keyboard too
        c.wait_event("kb_released", start=m)
        assert capabilities(qosway) == ["pointer"]
        assert keyboards(qosway) == []
    assert c.alive()
