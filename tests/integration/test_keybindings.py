"""Default keybindings through the virtual keyboard: Super+Q closes the
focused window, Super+Tab cycles focus, Super+Return starts the terminal
(foot).  (Super+Shift+E is in test_shutdown.py.)"""

from harness import wait_for
from vinput import (VirtualInput, KEY_LEFTMETA, KEY_Q, KEY_TAB, KEY_ENTER)


def focused_title(comp):
    f = [w["title"] for w in comp.windows() if w["focused"]]
    return f[0] if len(f) == 1 else None


def test_super_q_closes_focused_window(qosway):
    a, _ = qosway.open_window("Stay")
    b, wb = qosway.open_window("Quit Me")
    qosway.qosctl("focus", str(wb["id"]))
    wait_for(lambda: focused_title(qosway) == "Quit Me", desc="Quit Me focused")
    with VirtualInput(qosway.client_env()) as vi:
        a.wait_event("keymap")
        vi.key_down(KEY_LEFTMETA)
        vi.key_down(KEY_Q)
        b.wait_event("close")
        assert b.wait(10) == 0
        wait_for(lambda: [w["title"] for w in qosway.windows()] == ["Stay"],
                 desc="only Stay left")
        wait_for(lambda: focused_title(qosway) == "Stay", desc="Stay focused")
        # release the keys only now that "Stay" has the keyboard focus
        vi.key_up(KEY_Q)
        vi.key_up(KEY_LEFTMETA)
        a.send("title Stay")  # a round trip through the client's event loop
        a.wait_event("title")
    assert a.alive()
    # the bound key's press never reaches a client; a release may only
    # follow a wl_keyboard.enter that listed the key as pressed
    q_events = [d for ev, d in a.events("key") if d["key"] == KEY_Q]
    assert not [d for d in q_events if d["state"] == 1], a.events("key")
    if q_events:
        enters = [d for ev, d in a.events("kb_enter")]
        assert enters and KEY_Q in enters[-1]["keys"], (
            "release of bound key Q sent to a client that never saw it pressed: %r %r"
            % (enters, q_events))


def test_super_tab_cycles_focus(qosway):
    titles = ["Cycle 1", "Cycle 2", "Cycle 3"]
    for t in titles:
        qosway.open_window(t, width=300, height=200)
    seen = []
    with VirtualInput(qosway.client_env()) as vi:
        start = wait_for(lambda: focused_title(qosway), desc="a focused window")
        seen.append(start)
        for _ in range(3):
            prev = seen[-1]
            vi.chord([KEY_LEFTMETA], KEY_TAB)
            seen.append(wait_for(lambda: focused_title(qosway) not in (None, prev)
                                 and focused_title(qosway),
                                 desc="focus to move from %r" % prev))
    # three presses visit every window and come back to the start
    assert set(seen[:3]) == set(titles), seen
    assert seen[3] == seen[0], seen


def test_super_return_starts_terminal(qosway):
    assert qosway.windows() == []
    with VirtualInput(qosway.client_env()) as vi:
        vi.chord([KEY_LEFTMETA], KEY_ENTER)
    w = qosway.wait_window(lambda w: w["app_id"] == "foot", timeout=20,
                           desc="a foot window after Super+Return")
    assert w["buttons"]
