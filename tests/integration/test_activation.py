"""Activation without theft: xdg_activation_v1 focuses a window only with a
token made from the input of the client that has the keyboard; any other
request (no serial, or a token whose client lost the keyboard) marks the
window urgent: `urgent` in `qosctl --json windows`, the titlebar-urgent
colour on its titlebar, until it is focused. foot with bell.urgent=yes
ringing in the background does not take the keyboard.

"Focus does not move" checks wait QUIET seconds after the request has
reached the compositor (a roundtrip)."""

import os
import shutil
import sys
import tempfile
import time

import pytest

import harness
from harness import wait_for
import pixels
from vinput import VirtualInput, KEY_A

pytestmark = pytest.mark.keyboard

HERE = os.path.dirname(os.path.abspath(__file__))
QUIET = 0.5
URGENT = (0xD0, 0x20, 0xA0)


def config():
    return harness.test_config("color titlebar-urgent %s\n" % harness.hexcolor(URGENT))


@pytest.fixture
def acomp(start_qosway):
    return start_qosway(config=config())


def app(comp, title):
    c = comp.spawn([sys.executable, "-u", os.path.join(HERE, "activation_client.py"),
                    "--title", title], name=title)
    assert "xdg_activation_v1" in c.wait_event("ready")["globals"]
    c.wait_event("mapped")
    return c, comp.window_by_title(title)


def window(comp, wid):
    return comp.find_window(lambda w: w["id"] == wid)


def focused_title(comp):
    for w in comp.windows():
        if w.get("focused"):
            return w["title"]
    return None


def token(c, kind):
    m = c.mark()
    c.send("token " + kind)
    return c.wait_event("token", start=m)["token"]


def activate(c, tok):
    m = c.mark()
    c.send("activate " + tok)
    c.wait_event("activated", start=m)


def titlebar_colour_is(comp, w, rgb):
    """Most of the titlebar (all but the title text and buttons) is rgb."""
    box = dict(w["frame"])
    box["y"] += harness.BORDER_WIDTH
    box["height"] = harness.TITLEBAR_HEIGHT

    def check(img):
        f = pixels.fraction_near(img, box, rgb, tol=4)
        return None if f > 0.6 else pixels.describe(img, box)
    return comp.wait_screenshot(check, name="urgent")


def test_token_from_the_focused_clients_input_focuses(acomp):
    launcher, lw = app(acomp, "Launcher")
    target, tw = app(acomp, "Target")
    with VirtualInput(acomp.client_env()) as vi:
        g = lw["geometry"]
        m = launcher.mark()
        vi.click(g["x"] + 10, g["y"] + 10)  # Target covers the rest
        launcher.wait_event("kb_enter", start=m)
        vi.key(KEY_A)
        launcher.wait_event("key", start=m)
    tok = token(launcher, "serial")
    m = target.mark()
    activate(target, tok)
    target.wait_event("kb_enter", start=m)
    assert focused_title(acomp) == "Target"
    assert window(acomp, tw["id"])["urgent"] is False


def test_token_without_serial_marks_urgent(acomp):
    bg, bw = app(acomp, "Background")
    fg, fw = app(acomp, "Foreground")
    assert focused_title(acomp) == "Foreground"
    m = fg.mark()
    activate(bg, token(bg, "bare"))
    wait_for(lambda: window(acomp, bw["id"])["urgent"], desc="Background urgent")
    time.sleep(QUIET)
    assert focused_title(acomp) == "Foreground"
    assert not [ln for ln in fg.lines[m:] if ln.startswith("kb_leave")]
    titlebar_colour_is(acomp, window(acomp, bw["id"]), URGENT)
    # focusing it clears the mark
    r = acomp.qosctl("focus", str(bw["id"]))
    assert r.returncode == 0, r.stderr
    wait_for(lambda: not window(acomp, bw["id"])["urgent"], desc="urgent cleared")


def test_token_of_a_client_that_lost_the_keyboard_marks_urgent(acomp):
    launcher, lw = app(acomp, "Launcher")
    target, tw = app(acomp, "Target")
    other, ow = app(acomp, "Other")
    with VirtualInput(acomp.client_env()) as vi:
        g = lw["geometry"]
        m = launcher.mark()
        vi.click(g["x"] + 10, g["y"] + 10)
        launcher.wait_event("kb_enter", start=m)
        tok = token(launcher, "serial")
        # the user moves on before the token is used
        g = ow["geometry"]
        vi.click(g["x"] + g["width"] - 10, g["y"] + g["height"] - 10)
        wait_for(lambda: focused_title(acomp) == "Other", desc="Other focused")
    activate(target, tok)
    wait_for(lambda: window(acomp, tw["id"])["urgent"], desc="Target urgent")
    time.sleep(QUIET)
    assert focused_title(acomp) == "Other"


@pytest.mark.skipif(shutil.which("foot") is None, reason="foot is not installed")
def test_foot_bell_in_the_background_marks_urgent(acomp):
    conf = os.path.join(acomp.home, ".config", "foot")
    os.makedirs(conf, exist_ok=True)
    with open(os.path.join(conf, "foot.ini"), "w") as fh:
        fh.write("[bell]\nurgent=yes\n")
    fifo = os.path.join(tempfile.mkdtemp(prefix="qw-bell-"), "ring")
    os.mkfifo(fifo)
    foot = acomp.spawn(["foot", "--title", "Ringing", "sh", "-c",
                        "cat %s >/dev/null; printf '\\a'; exec cat" % fifo], name="foot")
    fw = acomp.window_by_title("Ringing", timeout=20)
    typing, tw = app(acomp, "Typing")
    assert focused_title(acomp) == "Typing"
    m = typing.mark()
    with open(fifo, "w") as fh:  # foot's shell rings the bell
        fh.write("ring\n")
    wait_for(lambda: window(acomp, fw["id"])["urgent"], timeout=15, desc="foot urgent")
    time.sleep(QUIET)
    assert focused_title(acomp) == "Typing"
    assert not [ln for ln in typing.lines[m:] if ln.startswith("kb_leave")]
    with VirtualInput(acomp.client_env()) as vi:
        vi.key(KEY_A)
        typing.wait_event("key", start=m)
    # the last cat reads foot's terminal: it ends when foot does
    foot.kill()
    shutil.rmtree(os.path.dirname(fifo), ignore_errors=True)


@pytest.mark.skipif(not os.access("/usr/bin/Xwayland", os.X_OK), reason="Xwayland is not installed")
def test_x11_activation_and_urgency_hint(start_qosway, tmp_path):
    from test_xwayland import XWin, child_display
    comp = start_qosway(config=harness.test_config("xwayland lazy\n"))
    display = child_display(comp, tmp_path)
    xwin = XWin(comp, display, "X Background")
    typing, tw = app(comp, "Typing")
    assert focused_title(comp) == "Typing"
    m = typing.mark()
    # _NET_ACTIVE_WINDOW from a program that does not have the focus
    mx = xwin.client.mark()
    xwin.client.send("activate")
    xwin.client.wait_event("done", start=mx)
    wait_for(lambda: xwin.w()["urgent"], desc="X window urgent after activate")
    time.sleep(QUIET)
    assert focused_title(comp) == "Typing"
    assert not [ln for ln in typing.lines[m:] if ln.startswith("kb_leave")]
    comp.qosctl("focus", str(xwin.id))
    wait_for(lambda: not xwin.w()["urgent"], desc="urgent cleared by focus")
    comp.qosctl("focus", str(tw["id"]))
    wait_for(lambda: focused_title(comp) == "Typing", desc="Typing focused")
    # the ICCCM urgency hint sets and clears the mark
    mx = xwin.client.mark()
    xwin.client.send("urgent")
    xwin.client.wait_event("done", start=mx)
    wait_for(lambda: xwin.w()["urgent"], desc="X window urgent by its hint")
    mx = xwin.client.mark()
    xwin.client.send("calm")
    xwin.client.wait_event("done", start=mx)
    wait_for(lambda: not xwin.w()["urgent"], desc="hint cleared")
    assert focused_title(comp) == "Typing"
