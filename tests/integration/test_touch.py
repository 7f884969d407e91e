"""Touch: events raised on a headless touch device (IPC input-touch) reach
the client under the point as wl_touch down/motion/up at surface-local
coordinates; the seat offers touch only while a touch device exists; a tap
on a titlebar button clicks it; touch is activity for idle timers; and
weston-simple-touch draws where it is touched. Bad requests change
nothing."""

import os
import re
import shutil
import sys

import pytest

from harness import OUTPUT_MODE, wait_for
from test_idle import start_timer, watcher

CLIENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "input_client.py")
W, H = OUTPUT_MODE[0], OUTPUT_MODE[1]


def spawn_input_client(comp, title, **kw):
    argv = [sys.executable, "-u", CLIENT, "--title", title, "--color", "3060c0",
            "--width", str(kw.get("width", 400)), "--height", str(kw.get("height", 300))]
    c = comp.spawn(argv, name=title.replace(" ", "-"))
    c.wait_event("mapped")
    return c, comp.window_by_title(title)


def ok(comp, req):
    r = comp.ipc(req)
    assert r["success"], r
    return r


def add_device(comp, kind):
    return ok(comp, {"command": "input-add", "type": kind})["id"]


def capabilities(comp):
    return ok(comp, {"command": "inputs"})["seat"]["capabilities"]


def touch(comp, dev, event, tid, lx=None, ly=None):
    req = {"command": "input-touch", "device": dev, "event": event, "id": tid}
    if lx is not None:
        req.update(x=lx / W, y=ly / H)
    ok(comp, req)


def test_touch_reaches_the_surface_at_local_coordinates(qosway):
    c, win = spawn_input_client(qosway, "touched")
    dev = add_device(qosway, "touch")
    c.wait_event("touch_bound")
    g = win["geometry"]
    m = c.mark()
    touch(qosway, dev, "down", 3, g["x"] + 40, g["y"] + 30)
    d = c.wait_event("touch_down", start=m)
    assert (d["id"], round(d["x"]), round(d["y"])) == (3, 40, 30)
    c.wait_event("touch_frame", start=m)
    # a finger dragged off the window stays with it, in its coordinates
    m = c.mark()
    touch(qosway, dev, "motion", 3, g["x"] + g["width"] + 50, g["y"] + 60)
    d = c.wait_event("touch_motion", start=m)
    assert (d["id"], round(d["x"]), round(d["y"])) == (3, g["width"] + 50, 60)
    m = c.mark()
    touch(qosway, dev, "up", 3)
    assert c.wait_event("touch_up", start=m)["id"] == 3
    # a second finger elsewhere on the window, then cancelled
    m = c.mark()
    touch(qosway, dev, "down", 0, g["x"] + 100, g["y"] + 200)
    d = c.wait_event("touch_down", start=m)
    assert (round(d["x"]), round(d["y"])) == (100, 200)
    touch(qosway, dev, "cancel", 0)
    c.wait_event("touch_cancel", start=m)


def test_touch_capability_follows_the_device(qosway):
    c, _ = spawn_input_client(qosway, "caps")
    assert "touch" not in capabilities(qosway)
    assert not c.events("touch_bound")
    dev = add_device(qosway, "touch")
    assert "touch" in capabilities(qosway)
    c.wait_event("touch_bound")
    devices = ok(qosway, {"command": "inputs"})["devices"]
    assert [d["type"] for d in devices if d["id"] == dev] == ["touch"]


def test_touch_on_another_window_goes_there(qosway):
    a, wa = spawn_input_client(qosway, "left one", width=300, height=200)
    b, wb = spawn_input_client(qosway, "right one", width=300, height=200)
    dev = add_device(qosway, "touch")
    # a touch that comes before a client has its wl_touch reaches nobody
    a.wait_event("touch_bound")
    b.wait_event("touch_bound")
    ga, gb = wa["geometry"], wb["geometry"]
    # a touch raises and focuses its window: each point is picked where no
    # other window covers it at that moment
    pa = qosway.visible_point(wa["id"], keys=("geometry",))
    ma, mb = a.mark(), b.mark()
    touch(qosway, dev, "down", 1, *pa)
    d = a.wait_event("touch_down", start=ma)
    assert (round(d["x"]), round(d["y"])) == (pa[0] - ga["x"], pa[1] - ga["y"])
    touch(qosway, dev, "up", 1)
    a.wait_event("touch_up", start=ma)
    wait_for(lambda: qosway.find_window(lambda w: w["id"] == wa["id"])["focused"],
             desc="the touched window has focus")
    pb = qosway.visible_point(wb["id"], keys=("geometry",))
    ma = a.mark()
    touch(qosway, dev, "down", 2, *pb)
    d = b.wait_event("touch_down", start=mb)
    assert (round(d["x"]), round(d["y"])) == (pb[0] - gb["x"], pb[1] - gb["y"])
    touch(qosway, dev, "up", 2)
    b.wait_event("touch_up", start=mb)
    assert not [line for line in a.lines[ma:] if line.startswith("touch_down")]
    wait_for(lambda: qosway.find_window(lambda w: w["id"] == wb["id"])["focused"],
             desc="the second touched window has focus")


def test_tap_on_the_close_button_closes_the_window(qosway):
    c, win = spawn_input_client(qosway, "tap close")
    dev = add_device(qosway, "touch")
    b = win["buttons"]["close"]
    x, y = b["x"] + b["width"] // 2, b["y"] + b["height"] // 2
    m = c.mark()
    touch(qosway, dev, "down", 0, x, y)
    touch(qosway, dev, "up", 0)
    c.wait_event("close", start=m)
    assert not c.events("touch_down")


def test_touch_is_activity(qosway):
    w = watcher(qosway)
    dev = add_device(qosway, "touch")
    _, mark = start_timer(w)
    w.wait_event("idle", start=mark)
    mark = w.mark()
    touch(qosway, dev, "down", 0, 10, 10)
    w.wait_event("resumed", start=mark)
    touch(qosway, dev, "up", 0)


@pytest.mark.parametrize("req, error", [
    ({"device": 999, "event": "down", "id": 0, "x": 0.5, "y": 0.5}, "no input device 999"),
    ({"device": "POINTER", "event": "down", "id": 0, "x": 0.5, "y": 0.5},
     "is not a touch device"),
    ({"device": "TOUCH", "event": "press", "id": 0, "x": 0.5, "y": 0.5},
     "unknown touch event 'press'"),
    ({"device": "TOUCH", "event": "down", "id": 0, "x": 1.5, "y": 0.5},
     "'x' must be between 0 and 1"),
    ({"device": "TOUCH", "event": "down", "id": 0, "y": 0.5}, "missing number 'x'"),
    ({"device": "TOUCH", "event": "down", "id": -1, "x": 0.5, "y": 0.5},
     "'id' must be between 0"),
    ({"device": "TOUCH", "event": "down", "id": 0, "x": "left", "y": 0.5},
     "'x' must be a number"),
    ({"device": "TOUCH", "id": 0, "x": 0.5, "y": 0.5}, "missing string 'event'"),
    ({"device": -4, "event": "up", "id": 0}, "'device' must be between 0"),
])
def test_bad_touch_requests_are_refused(qosway, req, error):
    c, win = spawn_input_client(qosway, "untouched")
    ids = {"TOUCH": add_device(qosway, "touch"), "POINTER": add_device(qosway, "pointer")}
    c.wait_event("touch_bound")
    req = dict(req, command="input-touch")
    if req["device"] in ids:
        req["device"] = ids[req["device"]]
    r = qosway.ipc(req)
    assert not r["success"]
    assert error in r["error"] and r["error"].startswith("input-touch: "), r
    # nothing was raised: a good request afterwards is the first the client sees
    g = win["geometry"]
    touch(qosway, ids["TOUCH"], "down", 7, g["x"] + 5, g["y"] + 5)
    assert c.wait_event("touch_down")["id"] == 7
    assert len(c.events("touch_down")) == 1
    assert qosway.alive()


def test_input_add_refuses_unknown_types(qosway):
    r = qosway.ipc({"command": "input-add", "type": "joystick"})
    assert not r["success"]
    assert "not 'joystick'" in r["error"] and "touch" in r["error"]
    assert "touch" not in capabilities(qosway)


@pytest.mark.skipif(shutil.which("weston-simple-touch") is None,
                    reason="weston-simple-touch not installed (Debian package weston)")
def test_weston_simple_touch_draws_where_touched(qosway):
    dev = add_device(qosway, "touch")
    st = qosway.spawn(["weston-simple-touch"], name="simple-touch",
                      env_extra={"WAYLAND_DEBUG": "client"})
    win = qosway.wait_window(lambda w: w.get("pid") == st.pid, desc="simple-touch window")
    g = win["geometry"]

    def wire():
        with open(st.stderr_path, errors="replace") as fh:
            return fh.read()
    wait_for(lambda: "wl_seat@" in wire() and "get_touch" in wire(), desc="it took wl_touch")
    # Its request for wl_touch and our IPC race: taps are repeated until
    # the compositor has its wl_touch and one arrives.
    x, y = g["x"] + g["width"] // 2, g["y"] + g["height"] // 2

    def tap():
        touch(qosway, dev, "down", 0, x, y)
        touch(qosway, dev, "motion", 0, x + 20, y + 10)
        touch(qosway, dev, "up", 0)
        return "wl_touch@" in wire() and ".up(" in wire()
    wait_for(tap, interval=0.2, desc="a tap received")
    downs = re.findall(r"wl_touch@\d+\.down\(\d+, \d+, wl_surface@\d+, 0, ([\d.]+), ([\d.]+)\)",
                       wire())
    assert downs and (round(float(downs[0][0])), round(float(downs[0][1]))) == (
        g["width"] // 2, g["height"] // 2), downs
    wait_for(lambda: re.search(r"wl_touch@\d+\.down\(.*?wl_surface@\d+\.damage",
                               wire(), re.S), desc="it drew after the touch")
    assert st.alive(), st.stderr_tail()
