"""X11 programs through Xwayland: a real Xwayland, real X11 clients
(xclient.py, python-xlib).

An X11 window gets the titlebar and QoS buttons; the compositor finds its
process through the X server (X-Resource), so a client lying in _NET_WM_PID
still has its own pid acted upon; override-redirect windows sit at their X
position above everything, undecorated; AutoQOS app_id rules match WM_CLASS;
`xwayland disable` and a missing binary leave children without DISPLAY."""

import os
import sys
import time

import pytest

import harness
import pixels
from harness import THEME, wait_for
from test_qos_buttons import (Win, center, click_into, no_frozen_leftovers,  # noqa: F401
                              park, qcomp, toggle_back)
from test_qos_autoqos import set_rules
from vinput import VirtualInput

XCLIENT = os.path.join(harness.HERE, "xclient.py")

pytestmark = pytest.mark.skipif(
    not os.access("/usr/bin/Xwayland", os.X_OK), reason="Xwayland is not installed "
    "(scripts/install-deps.sh installs it)")


def child_display(comp, tmp_path, name="display"):
    """DISPLAY as a child of the compositor sees it ('' when unset)."""
    out = os.path.join(str(tmp_path), name)
    rep = comp.ipc({"command": "exec",
                    "argv": ["sh", "-c", 'printf %s "${DISPLAY-}" > "$0.tmp" && mv "$0.tmp" "$0"',
                             out]})
    assert rep.get("success"), rep
    wait_for(lambda: os.path.exists(out), desc="the child's DISPLAY")
    with open(out) as fh:
        return fh.read()


def spawn_x(comp, display, *args, name=None):
    p = comp.spawn([sys.executable, "-u", XCLIENT] + list(args), name=name,
                   env_extra={"DISPLAY": display})
    p.wait_event("mapped", timeout=30)
    return p


def xwayland_pid(display):
    """The Xwayland process serving display (wlroots double-forks it, so it
    is no child of the compositor)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as fh:
                argv = fh.read().split(b"\0")
        except OSError:
            continue
        if os.path.basename(argv[0]) == b"Xwayland" and argv[1:2] == [display.encode()]:
            return int(pid)
    return None


def x_sockets_of(pid):
    """Paths under /tmp/.X11-unix of the unix sockets process pid holds."""
    inodes = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    paths = []
    with open("/proc/net/unix") as fh:
        next(fh)
        for line in fh:
            f = line.split()
            if len(f) >= 8 and f[6] in inodes and "X11-unix" in f[7]:
                paths.append(f[7])
    return paths


class XWin(Win):
    """Win's helpers for an X11 window from xclient.py."""

    def __init__(self, comp, display, title, color="3366cc", extra=()):  # noqa: super not called
        self.comp = comp
        self.title = title
        self.color = int(color, 16)
        self.client = spawn_x(comp, display, "--title", title, "--color", color, *extra)
        w = comp.window_by_title(title, timeout=15)
        self.id = w["id"]
        self.pid = self.client.pid
        wait_for(lambda: self.w()["pid"] == self.pid, desc="pid %d of X11 window %r (now %r)"
                 % (self.pid, title, self.w()["pid"]))
        self.orig_cgroups = harness.proc_cgroups(self.pid)


def test_x11_window_gets_frame_and_true_pid(qcomp, tmp_path):
    display = child_display(qcomp, tmp_path)
    assert display.startswith(":"), "children have no DISPLAY: %r" % display
    assert x_sockets_of(qcomp.pid), "lazy: no X socket listening before the first client"
    # The client claims pid 1 in _NET_WM_PID: the X server knows better.
    win = XWin(qcomp, display, "X Frame", color="3366cc",
               extra=("--class", "QwXFrame", "--instance", "qwxframe", "--net-wm-pid", "1"))
    w = win.w()
    print("X11 window: %r" % w)
    assert w["pid"] == win.pid and w["pid"] != 1, w
    assert w["app_id"] == "QwXFrame", w
    assert w["title"] == "X Frame", w
    assert sorted(w["buttons"]) == ["close", "idle", "pause", "realtime"], w
    assert w["titlebar"]["height"] == harness.TITLEBAR_HEIGHT, w
    assert "is pid %d from X-Resource" % win.pid in qcomp.log_text()
    # The rendered frame: focused titlebar above the X window's own colour.
    with VirtualInput(qcomp.client_env()) as vi:
        park(vi, win)

        def framed(img):
            w = win.w()
            t = w["titlebar"]
            bar = pixels.sub_rect(t, 0, 0, min(b["x"] for b in w["buttons"].values()) - t["x"])
            f = pixels.fraction_near(img, bar, THEME["titlebar-focused"], tol=10, inset=2)
            if f < 0.5:
                return "titlebar: %.2f focused colour; %s" % (f, pixels.describe(img, bar))
            g = dict(w["geometry"])
            g["height"] //= 3
            c = pixels.fraction_near(img, g, win.rgb(), tol=10, inset=4)
            if c < 0.9:
                return "content: %.2f of #3366cc; %s" % (c, pixels.describe(img, g))
            return None
        qcomp.wait_screenshot(framed, name="x11-frame")


def test_x11_idle_button_acts_on_the_x_client(qcomp, tmp_path):
    display = child_display(qcomp, tmp_path)
    win = XWin(qcomp, display, "X Idle", extra=("--net-wm-pid", str(os.getpid())))
    xw = xwayland_pid(display)
    assert xw, "no Xwayland serving %s" % display
    with VirtualInput(qcomp.client_env()) as vi:
        park(vi, win)
        w, st = click_into(vi, win, "idle", "idle")
        print("X11 idle: %r kernel %r" % (w, st))
        assert st["policy"] == harness.SCHED_IDLE, st
        assert st["cgroups"] != win.orig_cgroups, st
        # neither the X server nor the liar's claimed pid (the test) moved
        assert harness.sched_attr(xw)["policy"] == harness.SCHED_OTHER
        assert harness.sched_attr(os.getpid())["policy"] == harness.SCHED_OTHER
        toggle_back(vi, win, "idle")


def test_override_redirect_window_above_without_frame(qcomp, tmp_path):
    display = child_display(qcomp, tmp_path)
    win = XWin(qcomp, display, "X Under", color="3366cc")
    g = win.w()["geometry"]
    # A menu over the middle of the window's content.
    mx, my = g["x"] + 50, g["y"] + 40
    menu = spawn_x(qcomp, display, "--override-redirect", "--x", str(mx), "--y", str(my),
                   "--width", "120", "--height", "80", "--color", "20e040", name="menu")
    assert [x["title"] for x in qcomp.windows()] == ["X Under"], "the menu became a window"
    rect = {"x": mx, "y": my, "width": 120, "height": 80}
    above = {"x": mx, "y": my - 10, "width": 120, "height": 8}

    def menu_on_top(img):
        f = pixels.fraction_near(img, rect, (0x20, 0xE0, 0x40), tol=10, inset=2)
        if f < 0.95:
            return "menu area: %.2f menu colour; %s" % (f, pixels.describe(img, rect))
        # no titlebar of ours on top of it: right above is the window's content
        a = pixels.fraction_near(img, above, win.rgb(), tol=10)
        if a < 0.95:
            return "above the menu: %.2f window colour; %s" % (a, pixels.describe(img, above))
        return None
    with VirtualInput(qcomp.client_env()) as vi:
        vi.move(g["x"] + g["width"] - 5, g["y"] + g["height"] - 5)
        qcomp.wait_screenshot(menu_on_top, name="override-redirect")
    menu.kill()


def test_autoqos_matches_wm_class(qcomp, tmp_path):
    set_rules(qcomp, 'rule app_id="QwAutoX" policy=idle auto=yes\n')
    display = child_display(qcomp, tmp_path)
    win = XWin(qcomp, display, "X Auto", extra=("--class", "QwAutoX"))
    w = win.wait_class("idle")
    st = win.state()
    print("AutoQOS by WM_CLASS: %r kernel %r" % (w, st))
    assert st["policy"] == harness.SCHED_IDLE, st
    other = XWin(qcomp, display, "X Other", extra=("--class", "QwOtherX"))
    time.sleep(0.3)
    assert other.w()["class"] == "normal"
    assert other.state()["policy"] == harness.SCHED_OTHER


def test_disable_means_no_display(start_qosway, tmp_path):
    comp = start_qosway(config=harness.test_config("xwayland disable\n"),
                        env_extra={"DISPLAY": ":97"})
    assert child_display(comp, tmp_path) == ""
    log = comp.log_text()
    assert "xwayland: disabled by the configuration" in log, log
    assert "Starting Xwayland" not in log and "DISPLAY=:" not in log, log
    assert x_sockets_of(comp.pid) == [], "X sockets while disabled"


def test_missing_binary_disables_with_one_line(start_qosway, tmp_path):
    missing = os.path.join(str(tmp_path), "no-such-Xwayland")
    comp = start_qosway(config=harness.test_config("xwayland enable\n"),
                        env_extra={"WLR_XWAYLAND": missing})
    assert child_display(comp, tmp_path) == ""
    lines = [ln for ln in comp.log_text().splitlines() if "xwayland" in ln.lower()]
    assert len(lines) == 1 and missing in lines[0] and "disabled" in lines[0], lines
    # the session itself is fine
    c = comp.spawn_wlclient(title="Still Here")
    c.wait_event("mapped")
    comp.window_by_title("Still Here")


def test_bad_xwayland_value_is_named(start_qosway, tmp_path):
    comp = start_qosway(config=harness.test_config("xwayland sometimes\n"))
    log = comp.log_text()
    assert "xwayland wants enable, disable or lazy" in log, log
    # the default (lazy) stays: children get a DISPLAY
    assert child_display(comp, tmp_path).startswith(":")


def test_exit_with_x_windows_open(start_qosway, tmp_path):
    """SIGTERM with an X window and a menu up: wlroots 0.15 frees its X
    window manager only when that connection hangs up, so qosway makes it
    hang up first; then Xwayland goes, and its clients with it. Under ASan
    the teardown also finds no leak (views, X surfaces, xcb)."""
    comp = start_qosway(config=harness.test_config("xwayland lazy\n"))
    display = child_display(comp, tmp_path)
    win = XWin(comp, display, "X Exit")
    spawn_x(comp, display, "--override-redirect", "--x", "40", "--y", "40", name="menu")
    xw = xwayland_pid(display)
    assert xw, "no Xwayland serving %s" % display
    assert comp.terminate() == 0, comp.log_tail()
    log = comp.log_text()
    assert "outlived its connection" not in log, log
    assert "cannot close the window manager" not in log, log

    def xwayland_gone():
        try:
            with open("/proc/%d/stat" % xw) as fh:
                return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
        except OSError:
            return True
    wait_for(xwayland_gone, desc="Xwayland %d to exit with the session" % xw)
    win.client.wait(10)
