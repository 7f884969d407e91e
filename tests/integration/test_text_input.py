"""Input methods: text-input v3 in the focused client relayed to an
input-method v2 client (ours, as fcitx5 would be): activation with the
surrounding text, preedit and commit strings back to the client, the
candidate window shown under the client's text cursor, keys going to the
input method while it grabs the keyboard, deactivation when focus moves,
and a second input method told it is unavailable; then fcitx5."""

import os
import re
import shutil
import sys

import pytest

import pixels
from harness import wait_for
from vinput import VirtualInput, KEY_A

HERE = os.path.dirname(os.path.abspath(__file__))
POPUP_RGB = (0xE0, 0xC0, 0x20)


def spawn(comp, script, name, *args):
    return comp.spawn([sys.executable, "-u", os.path.join(HERE, script), *args], name=name)


def sent(client, line):
    m = client.mark()
    client.send(line)
    key = "sent" if client.name.startswith("im") else "done"
    client.wait_event(key, lambda d: d["cmd"] == line.split()[0], start=m)


def test_input_method_composes_into_the_focused_client(qosway):
    im = spawn(qosway, "im_client.py", "im")
    im.wait_event("ready")
    second = spawn(qosway, "im_client.py", "im-second")
    second.wait_event("unavailable")
    c = spawn(qosway, "input_client.py", "editor", "--title", "Editor", "--color", "2050a0")
    c.wait_event("mapped")
    w = qosway.window_by_title("Editor")
    with VirtualInput(qosway.client_env()) as vi:
        c.wait_event("kb_enter")
        sent(c, "text-input")
        c.wait_event("ti_enter")
        im.wait_event("activate")
        s = im.wait_event("surrounding")
        assert s == {"text": "hello", "cursor": 5, "anchor": 5}
        im.wait_event("done")
        # composing: the preedit, then the committed text reach the client
        m = c.mark()
        sent(im, "preedit ni")
        assert c.wait_event("preedit", start=m)["text"] == "ni"
        c.wait_event("ti_done", start=m)
        m = c.mark()
        sent(im, "commit 你")
        assert c.wait_event("commit_string", start=m)["text"] == "你"
        # the candidate window shows under the text cursor (40, 50, 2x20)
        m = im.mark()
        sent(im, "popup 120 60")
        r = im.wait_event("rectangle", start=m)
        assert r == {"x": 0, "y": -20, "width": 2, "height": 20}, r
        g = w["geometry"]
        box = {"x": g["x"] + 40, "y": g["y"] + 70, "width": 120, "height": 60}

        def popup_shown(img):
            if pixels.fraction_near(img, box, POPUP_RGB, tol=8) > 0.9:
                return None
            return "no candidate window at %s: %s" % (box, pixels.describe(img, box))
        qosway.wait_screenshot(popup_shown, name="candidates")
        # a keyboard grab: keys go to the input method, not to the client
        sent(im, "grab")
        k = len(c.events("key"))
        m = im.mark()
        vi.key(KEY_A)
        im.wait_event("grab_key", lambda d: d["key"] == KEY_A and d["state"] == 1, start=m)
        im.wait_event("grab_key", lambda d: d["key"] == KEY_A and d["state"] == 0, start=m)
        sent(c, "track")  # a round trip through the client
        assert c.events("key")[k:] == []
        sent(im, "release")
        m = c.mark()
        vi.key(KEY_A)
        c.wait_event("key", lambda d: d["key"] == KEY_A and d["state"] == 1, start=m)
        # focus elsewhere (a new window takes it): the client's text input
        # leaves, the method stops
        m, mc = im.mark(), c.mark()
        other, wo = qosway.open_window("Elsewhere", width=200, height=150)
        c.wait_event("ti_leave", start=mc)
        im.wait_event("deactivate", start=m)

        def popup_gone(img):
            if pixels.fraction_near(img, box, POPUP_RGB, tol=8) < 0.1:
                return None
            return "candidate window still shown at %s" % box
        qosway.wait_screenshot(popup_gone, name="no-candidates")
    assert c.alive() and im.alive() and second.alive()


@pytest.mark.skipif(not shutil.which("fcitx5") or not shutil.which("dbus-run-session"),
                    reason="fcitx5 (and dbus-run-session) not installed")
def test_fcitx5_takes_the_keyboard_and_types_through(qosway):
    """The real input method: fcitx5 binds input-method v2, is activated for
    the focused text field, grabs the keyboard, and what it does not compose
    (its plain US keyboard engine) it types back through its virtual
    keyboard."""
    fc = qosway.spawn(["dbus-run-session", "--", "fcitx5"], name="fcitx5",
                      env_extra={"WAYLAND_DEBUG": "client"})

    def trace():
        with open(fc.stderr_path, errors="replace") as fh:
            return fh.read()
    wait_for(lambda: re.search(r"zwp_input_method_manager_v2@\d+\.get_input_method", trace()),
             timeout=30, desc="fcitx5 asked for the input method")
    c = spawn(qosway, "input_client.py", "editor", "--title", "Fcitx Editor")
    c.wait_event("mapped")
    with VirtualInput(qosway.client_env()) as vi:
        c.wait_event("kb_enter")
        sent(c, "text-input")
        c.wait_event("ti_enter")
        wait_for(lambda: re.search(r"zwp_input_method_v2@\d+\.activate\(", trace()) and
                 re.search(r"grab_keyboard", trace()), timeout=20,
                 desc="fcitx5 activated and grabbing the keyboard")
        m = c.mark()
        vi.type_text("hi")
        c.wait_event("key", lambda d: d["key"] == 35 and d["state"] == 1, start=m)
        c.wait_event("key", lambda d: d["key"] == 23 and d["state"] == 1, start=m)
    t = trace()
    # the keys went through fcitx5's grab, then back through its keyboard
    assert len(re.findall(r"zwp_input_method_keyboard_grab_v2@\d+\.key\(", t)) >= 4
    assert len(re.findall(r"zwp_virtual_keyboard_v1@\d+\.key\(", t)) >= 4
    assert fc.alive() and c.alive()
