"""Super+H (the minimize action) hides the focused window and focuses the
next; a rebinding in the config file takes its place; the window comes back
through `qosctl focus`."""

from harness import test_config, wait_for
from vinput import VirtualInput, KEY_LEFTMETA

KEY_H = 35
KEY_N = 49


def by_title(comp, title):
    return comp.window_by_title(title)


def test_super_h_minimizes_the_focused_window(qosway):
    a, wa = qosway.open_window("Stays")
    b, wb = qosway.open_window("Hides")
    qosway.qosctl("focus", str(wb["id"]))
    wait_for(lambda: by_title(qosway, "Hides")["focused"], desc="Hides focused")
    with VirtualInput(qosway.client_env()) as vi:
        b.wait_event("kb_enter")
        m = b.mark()
        vi.chord([KEY_LEFTMETA], KEY_H)
        wait_for(lambda: by_title(qosway, "Hides")["minimized"], desc="Hides minimized")
        wait_for(lambda: by_title(qosway, "Stays")["focused"], desc="Stays focused")
        # the bound key never reached the client
        assert [d for ev, d in b.events("key")[0:] if d["key"] == KEY_H and d["state"] == 1] \
            == [], b.lines[m:]
    assert not by_title(qosway, "Stays")["minimized"]
    r = qosway.qosctl("focus", str(wb["id"]))
    assert r.returncode == 0, r.stderr
    wait_for(lambda: not by_title(qosway, "Hides")["minimized"], desc="Hides shown again")


def test_minimize_can_be_bound_to_another_key(start_qosway):
    comp = start_qosway(config=test_config("bind Super+n minimize\nbind Super+h exec true\n"))
    c, w = comp.open_window("Rebound")
    with VirtualInput(comp.client_env()) as vi:
        c.wait_event("kb_enter")
        vi.chord([KEY_LEFTMETA], KEY_H)
        c.send("commit")  # a round trip through the client after the chord
        c.wait_event("committed")
        assert not by_title(comp, "Rebound")["minimized"]
        vi.chord([KEY_LEFTMETA], KEY_N)
        wait_for(lambda: by_title(comp, "Rebound")["minimized"], desc="minimized by Super+N")
