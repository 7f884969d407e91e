"""Pointer constraints and relative pointer: a confined cursor stays in the
client's region (also after the region changes), a locked cursor stays put
while relative motion still arrives and ends at the client's hint, the
constraint follows keyboard focus, and weston-confine confines the pointer
to its window."""

import os
import shutil
import sys

import pytest

from harness import wait_for
from vinput import VirtualInput

CLIENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "input_client.py")


def spawn_input_client(comp, title, **kw):
    argv = [sys.executable, "-u", CLIENT, "--title", title, "--color", kw.get("color", "3060c0"),
            "--width", str(kw.get("width", 400)), "--height", str(kw.get("height", 300))]
    c = comp.spawn(argv, name=title.replace(" ", "-"))
    c.wait_event("mapped")
    return c, comp.window_by_title(title)


def command(client, line):
    m = client.mark()
    client.send(line)
    client.wait_event("done", lambda d: d["cmd"] == line.split()[0], start=m)


def seat(comp):
    r = comp.ipc({"command": "inputs"})
    assert r["success"], r
    return r["seat"]


def cursor(comp):
    c = seat(comp)["cursor"]
    return c["x"], c["y"]


def focus_by_click(comp, vi, client, w):
    g = w["geometry"]
    vi.click(g["x"] + 20, g["y"] + 20)
    wait_for(lambda: comp.window_by_title(w["title"])["focused"], desc="focused")


def test_confine_keeps_cursor_in_region_and_follows_region_changes(qosway):
    c, w = spawn_input_client(qosway, "Confine Me")
    g = w["geometry"]
    with VirtualInput(qosway.client_env()) as vi:
        focus_by_click(qosway, vi, c, w)
        command(c, "confine 10 10 100 80")
        c.wait_event("confined")
        assert seat(qosway)["pointer_constraint"] == "confined"
        # the cursor was at (20, 20), inside: a move far away stops at the edge
        vi.move(g["x"] + 390, g["y"] + 290)
        x, y = cursor(qosway)
        assert g["x"] + 10 <= x < g["x"] + 110 and g["y"] + 10 <= y < g["y"] + 90, (x, y, g)
        vi.move(5, 5)
        x, y = cursor(qosway)
        assert g["x"] + 10 <= x < g["x"] + 110 and g["y"] + 10 <= y < g["y"] + 90, (x, y, g)
        # a new region takes effect at the client's commit: the cursor is
        # brought inside it and kept there
        command(c, "region 200 150 50 50")
        vi.move(g["x"] + 5, g["y"] + 5)
        x, y = cursor(qosway)
        assert g["x"] + 200 <= x < g["x"] + 250 and g["y"] + 150 <= y < g["y"] + 200, (x, y, g)
        # destroying the constraint frees the cursor
        command(c, "unconstrain")
        vi.move(5, 5)
        assert cursor(qosway) == (5, 5)
        assert seat(qosway)["pointer_constraint"] is None
    assert c.alive()


def test_lock_holds_cursor_sends_relative_motion_and_warps_to_hint(qosway):
    c, w = spawn_input_client(qosway, "Lock Me")
    g = w["geometry"]
    with VirtualInput(qosway.client_env()) as vi:
        focus_by_click(qosway, vi, c, w)
        command(c, "relative")
        command(c, "track")
        command(c, "lock 150 120")
        c.wait_event("locked")
        before = cursor(qosway)
        m = c.mark()
        vi.move(g["x"] + 300, g["y"] + 250)
        vi.move(g["x"] + 340, g["y"] + 260)
        assert cursor(qosway) == before
        rel = c.wait_event("relative", start=m)
        assert (rel["dx"], rel["dy"]) == (300 - 20, 250 - 20), rel
        # the cursor did not move: the next delta is again from where it is
        rel2 = c.wait_event("relative", lambda d: d["dx"] == 320, start=m)
        assert rel2["dy"] == 240
        # a command round-trips after both motions: no wl_pointer.motion came
        command(c, "track")
        assert c.events("motion") == []
        # unlocking (focus elsewhere) leaves the cursor at the hint
        other, wo = spawn_input_client(qosway, "Other", color="a04020", width=200, height=150)
        qosway.qosctl("focus", str(wo["id"]))
        c.wait_event("unlocked")
        x, y = cursor(qosway)
        w = qosway.window_by_title("Lock Me")
        assert (x, y) == (w["geometry"]["x"] + 150, w["geometry"]["y"] + 120), (x, y, w)
        # focus back: the persistent lock is active again
        m = c.mark()
        qosway.qosctl("focus", str(w["id"]))
        c.wait_event("locked", start=m)
        assert seat(qosway)["pointer_constraint"] == "locked"
    assert c.alive() and other.alive()


def test_relative_motion_without_constraint(qosway):
    c, w = spawn_input_client(qosway, "Relative")
    g = w["geometry"]
    with VirtualInput(qosway.client_env()) as vi:
        focus_by_click(qosway, vi, c, w)
        command(c, "relative")
        m = c.mark()
        vi.move(g["x"] + 50, g["y"] + 70)
        rel = c.wait_event("relative", start=m)
        assert (rel["dx"], rel["dy"]) == (30, 50), rel
        assert cursor(qosway) == (g["x"] + 50, g["y"] + 70)


def test_pointer_stays_offered_after_last_pointer_device_goes(qosway):
    """A client's wl_pointer must never turn inert: wlroots would crash on a
    relative pointer or constraint asked for on it."""
    c, w = spawn_input_client(qosway, "Sticky Pointer")
    with VirtualInput(qosway.client_env()) as vi:
        focus_by_click(qosway, vi, c, w)
    # the virtual pointer is gone; the capability stays
    wait_for(lambda: not [d for d in qosway.ipc({"command": "inputs"})["devices"]
                          if d["type"] == "pointer"], desc="no pointer device left")
    assert "pointer" in seat(qosway)["capabilities"]
    command(c, "relative")
    command(c, "confine 0 0 50 50")
    c.wait_event("confined")
    command(c, "unconstrain")
    command(c, "lock")
    c.wait_event("locked")
    assert qosway.alive() and c.alive()


@pytest.mark.skipif(shutil.which("weston-confine") is None, reason="weston-confine not installed")
def test_weston_confine_confines_to_its_window(qosway):
    wc = qosway.spawn(["weston-confine"], name="weston-confine")
    w = qosway.wait_window(lambda x: x["pid"] == wc.pid, desc="weston-confine window")
    g = w["geometry"]
    with VirtualInput(qosway.client_env()) as vi:
        # a click inside its drawing area asks for the confinement
        cx, cy = g["x"] + g["width"] // 2, g["y"] + g["height"] // 2
        vi.click(cx, cy)
        wait_for(lambda: seat(qosway)["pointer_constraint"] == "confined",
                 desc="weston-confine's pointer confined")
        vi.move(g["x"] + g["width"] + 300, g["y"] + g["height"] + 200)
        x, y = cursor(qosway)
        assert g["x"] <= x < g["x"] + g["width"] and g["y"] <= y < g["y"] + g["height"], (x, y, g)
        vi.move(0, 0)
        x, y = cursor(qosway)
        assert g["x"] <= x < g["x"] + g["width"] and g["y"] <= y < g["y"] + g["height"], (x, y, g)
    assert wc.alive()
