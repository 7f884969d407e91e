"""Tablets: a headless tablet tool (IPC input-tablet) becomes a
zwp_tablet_v2 of the seat with a pen tool, and its proximity, motion, tip
and pressure reach the surface under it at surface-local coordinates; the
tool leaves one window's proximity when it moves to another, or off all
windows. A tablet pad is announced. Bad requests change nothing."""

import pytest

from harness import OUTPUT_MODE
from test_pointer_constraints import command, spawn_input_client

W, H = OUTPUT_MODE[0], OUTPUT_MODE[1]


def ok(comp, req):
    r = comp.ipc(req)
    assert r["success"], r
    return r


def pen(comp, dev, event, lx=None, ly=None, **kw):
    req = dict(kw, command="input-tablet", device=dev, event=event)
    if lx is not None:
        req.update(x=lx / W, y=ly / H)
    ok(comp, req)


def tablet_client(comp, title, **kw):
    c, win = spawn_input_client(comp, title, **kw)
    command(c, "tablet")
    return c, win


def test_pen_reaches_the_surface_under_it(qosway):
    c, win = tablet_client(qosway, "drawn on")
    m = c.mark()
    dev = ok(qosway, {"command": "input-add", "type": "tablet-tool"})["id"]
    c.wait_event("tablet_added", start=m)
    g = win["geometry"]
    pen(qosway, dev, "proximity-in", g["x"] + 10, g["y"] + 20)
    c.wait_event("tool_added", start=m)
    c.wait_event("tool_proximity_in", start=m)
    d = c.wait_event("tool_motion", start=m)
    assert (round(d["x"]), round(d["y"])) == (10, 20)
    m = c.mark()
    pen(qosway, dev, "tip-down", g["x"] + 10, g["y"] + 20)
    c.wait_event("tool_down", start=m)
    pen(qosway, dev, "motion", g["x"] + 60, g["y"] + 70, pressure=0.5)
    d = c.wait_event("tool_motion", start=m)
    assert (round(d["x"]), round(d["y"])) == (60, 70)
    # the protocol's pressure is 0..65535
    assert c.wait_event("tool_pressure", start=m)["pressure"] == 32767
    pen(qosway, dev, "tip-up", g["x"] + 60, g["y"] + 70)
    c.wait_event("tool_up", start=m)
    # off every window: out of proximity
    m = c.mark()
    pen(qosway, dev, "motion", W - 5, H - 5)
    c.wait_event("tool_proximity_out", start=m)
    assert not [line for line in c.lines[m:] if line.startswith("tool_motion")]


def test_pen_moves_between_windows(qosway):
    a, wa = tablet_client(qosway, "first canvas", width=300, height=200)
    b, wb = tablet_client(qosway, "second canvas", width=300, height=200)
    dev = ok(qosway, {"command": "input-add", "type": "tablet-tool"})["id"]
    a.wait_event("tablet_added")
    b.wait_event("tablet_added")
    pa = qosway.visible_point(wa["id"], keys=("geometry",))
    pb = qosway.visible_point(wb["id"], keys=("geometry",))
    ma, mb = a.mark(), b.mark()
    pen(qosway, dev, "proximity-in", *pa)
    a.wait_event("tool_proximity_in", start=ma)
    pen(qosway, dev, "motion", *pb)
    a.wait_event("tool_proximity_out", start=ma)
    b.wait_event("tool_proximity_in", start=mb)
    d = b.wait_event("tool_motion", start=mb)
    gb = wb["geometry"]
    assert (round(d["x"]), round(d["y"])) == (pb[0] - gb["x"], pb[1] - gb["y"])
    pen(qosway, dev, "proximity-out")
    b.wait_event("tool_proximity_out", start=mb)


def test_pad_is_announced(qosway):
    c, _ = tablet_client(qosway, "pad watcher")
    m = c.mark()
    ok(qosway, {"command": "input-add", "type": "tablet-pad"})
    c.wait_event("pad_added", start=m)
    types = [d["type"] for d in ok(qosway, {"command": "inputs"})["devices"]]
    assert "tablet-pad" in types


@pytest.mark.parametrize("req, error", [
    ({"device": 999, "event": "motion", "x": 0.5, "y": 0.5}, "no input device 999"),
    ({"device": "TOUCH", "event": "motion", "x": 0.5, "y": 0.5},
     "is not a tablet-tool device"),
    ({"device": "TOOL", "event": "hover", "x": 0.5, "y": 0.5}, "unknown tablet event 'hover'"),
    ({"device": "TOOL", "event": "motion", "x": 0.5}, "missing number 'y'"),
    ({"device": "TOOL", "event": "motion", "x": 0.5, "y": 0.5, "pressure": 2},
     "'pressure' must be between 0 and 1"),
    ({"device": "TOOL", "event": "tip-down", "x": -0.1, "y": 0.5}, "'x' must be between 0"),
])
def test_bad_tablet_requests_are_refused(qosway, req, error):
    c, win = tablet_client(qosway, "untouched canvas")
    ids = {"TOUCH": ok(qosway, {"command": "input-add", "type": "touch"})["id"],
           "TOOL": ok(qosway, {"command": "input-add", "type": "tablet-tool"})["id"]}
    c.wait_event("tablet_added")
    req = dict(req, command="input-tablet")
    if req["device"] in ids:
        req["device"] = ids[req["device"]]
    r = qosway.ipc(req)
    assert not r["success"]
    assert r["error"].startswith("input-tablet: ") and error in r["error"], r
    # nothing was raised: the first event the client sees is the next good one
    g = win["geometry"]
    pen(qosway, ids["TOOL"], "proximity-in", g["x"] + 5, g["y"] + 5)
    c.wait_event("tool_proximity_in")
    assert len(c.events("tool_proximity_in")) == 1
    assert not c.events("tool_down")
