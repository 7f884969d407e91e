"""Virtual-keyboard input reaches the focused client (our pywayland client
and foot), and click-to-focus moves keyboard focus."""

import os

from harness import wait_for
from vinput import VirtualInput, KEY_A, KEY_Q, KEY_W, KEY_E, KEY_ENTER, KEY_LEFTSHIFT


def content_center(w):
    g = w["geometry"]
    return (g["x"] + g["width"] // 2, g["y"] + g["height"] // 2)


def pressed_keys(client, start):
    return [d["key"] for ev, d in client.events("key")[start:] if d["state"] == 1]


def test_keys_reach_focused_wlclient(qosway):
    c = qosway.spawn_wlclient(title="Keyboard Target", color="2060a0")
    c.wait_event("mapped")
    w = qosway.window_by_title("Keyboard Target")
    with VirtualInput(qosway.client_env()) as vi:
        c.wait_event("keymap")  # the client has a wl_keyboard now
        vi.click(*content_center(w))
        c.wait_event("kb_enter")
        wait_for(lambda: qosway.window_by_title("Keyboard Target")["focused"],
                 desc="window focused after click")
        n0 = len(c.events("key"))
        for k in (KEY_Q, KEY_W, KEY_E, KEY_A, KEY_ENTER):
            vi.key(k)
        vi.chord([KEY_LEFTSHIFT], KEY_A)
    expected = [KEY_Q, KEY_W, KEY_E, KEY_A, KEY_ENTER, KEY_LEFTSHIFT, KEY_A]
    wait_for(lambda: pressed_keys(c, n0) == expected,
             desc="client to log key presses %r (got %r)" % (expected, pressed_keys(c, n0)))
    # releases are logged after the presses; wait for them rather than race
    wait_for(lambda: sorted(d["key"] for ev, d in c.events("key")[n0:] if d["state"] == 0)
             == sorted(expected), desc="client to log every key release")
    # shift was delivered as a modifier too
    mods = [d["depressed"] for ev, d in c.events("modifiers")]
    assert any(m & 1 for m in mods), "shift never reported in wl_keyboard.modifiers"


def test_click_to_focus_moves_keyboard_focus(qosway):
    a = qosway.spawn_wlclient(title="Focus A", color="2060a0", width=300, height=200)
    a.wait_event("mapped")
    b = qosway.spawn_wlclient(title="Focus B", color="a06020", width=300, height=200)
    b.wait_event("mapped")
    wa = qosway.window_by_title("Focus A")
    wb = qosway.window_by_title("Focus B")
    with VirtualInput(qosway.client_env()) as vi:
        a.wait_event("keymap")
        b.wait_event("keymap")
        for target, other, tc, oc in ((wa, wb, a, b), (wb, wa, b, a)):
            # click a visible part of the target's titlebar
            vi.click(*qosway.visible_point(target["id"]))
            wait_for(lambda: qosway.find_window(lambda x: x["id"] == target["id"])["focused"],
                     desc="%s focused after click" % target["title"])
            assert not qosway.find_window(lambda x: x["id"] == other["id"])["focused"]
            n0 = len(tc.events("key"))
            m0 = len(oc.events("key"))
            vi.key(KEY_A)
            wait_for(lambda: pressed_keys(tc, n0) == [KEY_A],
                     desc="key A to reach %s" % target["title"])
            assert pressed_keys(oc, m0) == [], "unfocused client got keys"


def test_typing_into_foot_runs_a_shell_command(qosway):
    marker = os.path.join(qosway.home, "typed-ok")
    foot = qosway.spawn(["foot", "--title", "Foot Typing", "sh"], name="foot")
    w = qosway.window_by_title("Foot Typing", timeout=20)
    with VirtualInput(qosway.client_env()) as vi:
        vi.click(*content_center(w))
        wait_for(lambda: qosway.window_by_title("Foot Typing")["focused"],
                 desc="foot focused")
        # foot learns about the new keyboard asynchronously; if the first
        # keys raced that, the line is garbage: type it again (at most 3x)
        for attempt in range(3):
            vi.type_text("echo Typed-OK > %s\n" % marker)
            try:
                wait_for(lambda: os.path.exists(marker) and
                         open(marker).read() == "Typed-OK\n",
                         timeout=5 if attempt < 2 else 10,
                         desc="foot's shell to run the typed command (%s)" % marker)
                break
            except AssertionError:
                if attempt == 2:
                    raise
    assert foot.alive()
