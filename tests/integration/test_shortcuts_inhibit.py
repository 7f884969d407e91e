"""keyboard-shortcuts-inhibit: while the focused client inhibits shortcuts,
the compositor's bindings (Super+Q here) reach it as keys; the escape
binding (Super+Escape, shortcuts-inhibit-toggle) still works and gives the
bindings back; focus elsewhere deactivates the inhibitor."""

import os
import sys

from harness import wait_for
from vinput import VirtualInput, KEY_ESC, KEY_LEFTMETA, KEY_Q

CLIENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "input_client.py")


def spawn_input_client(comp, title):
    argv = [sys.executable, "-u", CLIENT, "--title", title, "--color", "20a060"]
    c = comp.spawn(argv, name=title.replace(" ", "-"))
    c.wait_event("mapped")
    return c, comp.window_by_title(title)


def command(client, line):
    m = client.mark()
    client.send(line)
    client.wait_event("done", lambda d: d["cmd"] == line.split()[0], start=m)


def pressed(client, start):
    return [d["key"] for ev, d in client.events("key")[start:] if d["state"] == 1]


def test_inhibited_bindings_reach_the_client_until_escape(qosway):
    other, wo = qosway.open_window("Bystander")
    c, w = spawn_input_client(qosway, "Remote Desktop")
    with VirtualInput(qosway.client_env()) as vi:
        c.wait_event("kb_enter")
        wait_for(lambda: qosway.window_by_title("Remote Desktop")["focused"], desc="focused")
        m = c.mark()
        command(c, "inhibit-shortcuts")
        c.wait_event("shortcuts_active", start=m)
        # Super+Q would close the window; inhibited, both keys reach it
        k = len(c.events("key"))
        vi.chord([KEY_LEFTMETA], KEY_Q)
        wait_for(lambda: pressed(c, k) == [KEY_LEFTMETA, KEY_Q], desc="Super+Q as keys")
        assert c.events("close") == []
        # the escape binding is kept by the compositor and hands keys back
        k = len(c.events("key"))
        m = c.mark()
        vi.chord([KEY_LEFTMETA], KEY_ESC)
        c.wait_event("shortcuts_inactive", start=m)
        assert KEY_ESC not in pressed(c, k)
        vi.chord([KEY_LEFTMETA], KEY_Q)
        c.wait_event("close")
        # pressed again, the client has the keys again (it ignored the close)
        m = c.mark()
        vi.chord([KEY_LEFTMETA], KEY_ESC)
        c.wait_event("shortcuts_active", start=m)
        # focus moves away: the inhibitor is inactive there, and Super+Q
        # closes the bystander instead
        m = c.mark()
        qosway.qosctl("focus", str(wo["id"]))
        c.wait_event("shortcuts_inactive", start=m)
        m = c.mark()
        vi.chord([KEY_LEFTMETA], KEY_Q)
        other.wait_event("close")
        # and back: active again (the bystander exits on close, so focus may
        # come back by itself before the explicit focus)
        qosway.qosctl("focus", str(w["id"]))
        c.wait_event("shortcuts_active", start=m)
    assert c.alive()
