"""Pointer gestures: swipes, pinches and holds raised on a headless pointer
(IPC input-gesture) reach the client with pointer focus through
zwp_pointer_gestures_v1, with their fingers, deltas, scale, rotation and
cancelled flag; a client without pointer focus gets none. Bad requests
change nothing."""

import pytest

from harness import wait_for
from test_pointer_constraints import command, spawn_input_client
from vinput import VirtualInput


def ok(comp, req):
    r = comp.ipc(req)
    assert r["success"], r
    return r


def gesture(comp, dev, event, **kw):
    ok(comp, dict(kw, command="input-gesture", device=dev, event=event))


def focused_client(comp, title):
    """An input_client with pointer focus and gesture objects bound."""
    c, win = spawn_input_client(comp, title)
    command(c, "gestures")
    return c, win


def test_gestures_reach_the_client_under_the_pointer(qosway):
    c, win = focused_client(qosway, "swiped")
    other, _ = spawn_input_client(qosway, "elsewhere", width=200, height=150)
    command(other, "gestures")
    dev = ok(qosway, {"command": "input-add", "type": "pointer"})["id"]
    with VirtualInput(qosway.client_env()) as vi:
        x, y = qosway.visible_point(win["id"], keys=("geometry",))
        m = c.mark()
        vi.move(x, y)
        c.wait_event("ptr_enter", start=m)
    m, mo = c.mark(), other.mark()
    gesture(qosway, dev, "swipe-begin", fingers=3)
    gesture(qosway, dev, "swipe-update", fingers=3, dx=12.5, dy=-4)
    gesture(qosway, dev, "swipe-end", cancelled=False)
    assert c.wait_event("swipe_begin", start=m)["fingers"] == 3
    u = c.wait_event("swipe_update", start=m)
    assert (u["dx"], u["dy"]) == (12.5, -4)
    assert c.wait_event("swipe_end", start=m)["cancelled"] == 0
    gesture(qosway, dev, "pinch-begin", fingers=2)
    gesture(qosway, dev, "pinch-update", fingers=2, dx=1, dy=2, scale=1.5, rotation=30)
    gesture(qosway, dev, "pinch-end", cancelled=True)
    assert c.wait_event("pinch_begin", start=m)["fingers"] == 2
    u = c.wait_event("pinch_update", start=m)
    assert (u["dx"], u["dy"], u["scale"], u["rotation"]) == (1, 2, 1.5, 30)
    assert c.wait_event("pinch_end", start=m)["cancelled"] == 1
    gesture(qosway, dev, "hold-begin", fingers=4)
    gesture(qosway, dev, "hold-end", cancelled=False)
    assert c.wait_event("hold_begin", start=m)["fingers"] == 4
    c.wait_event("hold_end", start=m)
    # the window without the pointer heard nothing of it
    command(other, "track")  # a round trip: anything sent before it has arrived
    assert not [line for line in other.lines[mo:] if line.split()[0].split("_")[0] in
                ("swipe", "pinch", "hold")]


@pytest.mark.parametrize("req, error", [
    ({"device": 999, "event": "swipe-begin"}, "no input device 999"),
    ({"device": "TOUCH", "event": "swipe-begin"}, "is not a pointer device"),
    ({"device": "POINTER", "event": "swipe"}, "unknown gesture event 'swipe'"),
    ({"device": "POINTER", "event": "swipe-begin", "fingers": 0}, "'fingers' must be between 1"),
    ({"device": "POINTER", "event": "pinch-update", "scale": -1}, "'scale' must be between 0"),
    ({"device": "POINTER", "event": "swipe-end", "cancelled": "yes"},
     "'cancelled' must be true or false"),
    ({"device": "POINTER", "event": "swipe-update", "dx": "NaN"}, "'dx' must be a number"),
])
def test_bad_gesture_requests_are_refused(qosway, req, error):
    ids = {"TOUCH": ok(qosway, {"command": "input-add", "type": "touch"})["id"],
           "POINTER": ok(qosway, {"command": "input-add", "type": "pointer"})["id"]}
    req = dict(req, command="input-gesture")
    if req["device"] in ids:
        req["device"] = ids[req["device"]]
    r = qosway.ipc(req)
    assert not r["success"]
    assert r["error"].startswith("input-gesture: ") and error in r["error"], r
    assert qosway.alive()


def test_virtual_pointer_is_not_a_headless_device(qosway):
    with VirtualInput(qosway.client_env()):
        devices = wait_for(lambda: [d for d in ok(qosway, {"command": "inputs"})["devices"]
                                    if d["virtual"]], desc="the virtual pointer")
        r = qosway.ipc({"command": "input-gesture", "device": devices[0]["id"],
                        "event": "hold-begin"})
    assert not r["success"] and "is not a headless device" in r["error"], r
