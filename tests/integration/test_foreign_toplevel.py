"""Taskbars: wlr-foreign-toplevel-management lists every window with its
title, app id, output and state; a taskbar's activate, minimize, maximize
and close act on the window; a minimized window is not drawn and comes back
with activate or `qosctl focus`; `taskbar-class on` puts the QoS class in
the title taskbars see."""

import os
import sys

import harness
import pixels
from harness import wait_for

HERE = os.path.dirname(os.path.abspath(__file__))


def taskbar(comp):
    c = comp.spawn([sys.executable, "-u", os.path.join(HERE, "desktop_client.py")],
                   name="taskbar-%d" % len(comp.clients))
    ready = c.wait_event("ready")
    assert "zwlr_foreign_toplevel_manager_v1" in ready["globals"]
    return c


def entry(tb, title, pred=lambda d: True, start=0):
    return tb.wait_event("toplevel", lambda d: d["title"] == title and pred(d), start=start)


def test_taskbar_lists_windows_with_state(qosway):
    qosway.open_window("First", app_id="org.example.first")
    qosway.open_window("Second", app_id="org.example.second")
    tb = taskbar(qosway)
    first = entry(tb, "First")
    second = entry(tb, "Second")
    assert first["app_id"] == "org.example.first"
    assert second["app_id"] == "org.example.second"
    assert first["outputs"] == 1
    # the newest window has the focus
    assert "activated" in second["state"] and "activated" not in first["state"]
    # a title change reaches the taskbar
    c, _ = qosway.open_window("Third")
    mark = tb.mark()
    c.send("title Third Renamed")
    entry(tb, "Third Renamed", start=mark)


def test_activate_focuses_and_close_closes(qosway):
    a, wa = qosway.open_window("Alpha")
    b, wb = qosway.open_window("Beta")
    tb = taskbar(qosway)
    ida = entry(tb, "Alpha")["id"]
    mark = tb.mark()
    tb.send("activate %d" % ida)
    entry(tb, "Alpha", lambda d: "activated" in d["state"], start=mark)
    wait_for(lambda: qosway.window_by_title("Alpha")["focused"], desc="Alpha focused")
    mark = tb.mark()
    tb.send("maximize %d" % ida)
    entry(tb, "Alpha", lambda d: "maximized" in d["state"], start=mark)
    assert qosway.window_by_title("Alpha")["maximized"]
    tb.send("close %d" % ida)
    a.wait_event("close")
    tb.wait_event("toplevel_closed", lambda d: d["id"] == ida)
    assert a.wait() == 0


def test_minimize_hides_and_activate_restores(qosway):
    back, _ = qosway.open_window("Behind", color="20c020", width=500, height=400)
    c, w = qosway.open_window("Hide Me", color="c02020", width=300, height=200)
    g = w["geometry"]
    tb = taskbar(qosway)
    tid = entry(tb, "Hide Me")["id"]

    def shows(rgb):
        def check(img):
            n = pixels.count_near(img, g, rgb, tol=2)
            return None if n == g["width"] * g["height"] else pixels.describe(img, g)
        return check
    qosway.wait_screenshot(shows((0xc0, 0x20, 0x20)), name="before")
    mark = tb.mark()
    tb.send("minimize %d" % tid)
    entry(tb, "Hide Me", lambda d: "minimized" in d["state"], start=mark)
    hidden = qosway.window_by_title("Hide Me")
    assert hidden["minimized"] and not hidden["focused"]
    # focus passed on, and the window below shows where it was
    assert qosway.window_by_title("Behind")["focused"]
    inside = {"x": g["x"], "y": g["y"], "width": 100, "height": 100}
    g_back = qosway.window_by_title("Behind")["geometry"]
    assert g_back["x"] <= g["x"] and g_back["y"] <= g["y"]
    qosway.wait_screenshot(lambda img: None if pixels.count_near(
        img, inside, (0x20, 0xc0, 0x20), tol=2) == 100 * 100 else pixels.describe(img, inside),
        name="minimized")
    mark = tb.mark()
    tb.send("activate %d" % tid)
    entry(tb, "Hide Me", lambda d: "minimized" not in d["state"] and "activated" in d["state"],
          start=mark)
    assert not qosway.window_by_title("Hide Me")["minimized"]
    qosway.wait_screenshot(shows((0xc0, 0x20, 0x20)), name="restored")


def test_qosctl_focus_restores_minimized(qosway):
    c, w = qosway.open_window("Come Back")
    tb = taskbar(qosway)
    tid = entry(tb, "Come Back")["id"]
    mark = tb.mark()
    tb.send("minimize %d" % tid)
    entry(tb, "Come Back", lambda d: "minimized" in d["state"], start=mark)
    mark = tb.mark()
    r = qosway.qosctl("focus", str(w["id"]))
    assert r.returncode == 0, r.stdout + r.stderr
    entry(tb, "Come Back", lambda d: "minimized" not in d["state"], start=mark)
    w2 = qosway.window_by_title("Come Back")
    assert w2["focused"] and not w2["minimized"]


def test_taskbar_class_puts_class_in_title(start_qosway):
    comp = start_qosway(config=harness.qos_test_config("taskbar-class on\n"))
    c, w = comp.open_window("Classy")
    tb = taskbar(comp)
    entry(tb, "[normal] Classy")
    mark = tb.mark()
    r = comp.qosctl("set", str(w["id"]), "idle")
    assert r.returncode == 0, r.stdout + r.stderr
    entry(tb, "[idle] Classy", start=mark)
    comp.qosctl("set", str(w["id"]), "normal")
