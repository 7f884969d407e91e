"""Placement in the output's usable area (what panels' exclusive zones
leave): a window bigger than the output is asked to shrink and keeps its
titlebar buttons on screen, windows mapped before a panel move out from
under it with their buttons still clickable, and a dialog opens centred
over its parent."""

import shutil

import pytest

from harness import test_config, wait_for
from vinput import VirtualInput

SMALL = test_config("output-mode 1280x800@60\n")
PANEL = 40


def inside(box, area):
    return (box["x"] >= area[0] and box["y"] >= area[1] and
            box["x"] + box["width"] <= area[0] + area[2] and
            box["y"] + box["height"] <= area[1] + area[3])


def center(b):
    return b["x"] + b["width"] // 2, b["y"] + b["height"] // 2


def panel(comp):
    p = comp.spawn_wlclient(title="panel", extra_args=[
        "--layer", "top", "--anchor", "top,left,right", "--layer-height", str(PANEL),
        "--exclusive", str(PANEL)], name="panel")
    p.wait_event("mapped")
    return p


def test_window_bigger_than_the_output_fits_in_the_usable_area(start_qosway):
    comp = start_qosway(config=SMALL)
    panel(comp)
    c = comp.spawn_wlclient(title="Huge", width=2000, height=1400)
    c.wait_event("mapped")
    r = c.wait_event("resized")
    # the compositor may answer the IPC before it reads the client's commit
    w = wait_for(lambda: (lambda x: x if (x["geometry"]["width"], x["geometry"]["height"]) ==
                          (r["width"], r["height"]) else None)(comp.window_by_title("Huge")),
                 desc="the window at its new size")
    area = (0, PANEL, 1280, 800 - PANEL)
    assert inside(w["frame"], area), (w["frame"], area)
    for b in w["buttons"].values():
        assert inside(b, area), (b, area)


def test_windows_move_out_from_under_a_new_panel(start_qosway):
    comp = start_qosway(config=SMALL)
    c, w = comp.open_window("Under Panel", width=600, height=400)
    assert w["frame"]["y"] == 0  # the first window starts at the corner
    m, wm = comp.open_window("Maximized", width=300, height=200)
    with VirtualInput(comp.client_env(), keyboard=False) as vi:
        # a double-click on the titlebar maximizes
        x, y = comp.visible_point(wm["id"], keys=("titlebar",))
        vi.click(x, y)
        vi.click(x, y)
        wait_for(lambda: comp.window_by_title("Maximized")["maximized"], desc="maximized")
    panel(comp)
    area = (0, PANEL, 1280, 800 - PANEL)
    w = wait_for(lambda: (lambda x: x if x["frame"]["y"] >= PANEL else None)(
        comp.window_by_title("Under Panel")), desc="window below the panel")
    assert inside(w["frame"], area), w["frame"]
    wm = wait_for(lambda: (lambda x: x if x["frame"]["y"] == PANEL and
                           x["frame"]["height"] == 800 - PANEL else None)(
        comp.window_by_title("Maximized")), desc="maximized window in the new area")
    # the buttons work where they now are: the maximized window's on top,
    # then, raised, the other's
    with VirtualInput(comp.client_env(), keyboard=False) as vi:
        vi.click(*center(wm["buttons"]["close"]))
        m.wait_event("close")
        comp.qosctl("focus", str(w["id"]))
        vi.click(*center(w["buttons"]["close"]))
        c.wait_event("close")


def test_dialog_is_centred_over_its_parent(qosway):
    c, w = qosway.open_window("Parent", width=800, height=600)
    # move the parent away from the corner so centring is not cascading
    qosway.ipc({"command": "focus", "id": w["id"]})
    c.send("dialog 300 200 The Dialog")
    c.wait_event("dialog_mapped")
    d = qosway.window_by_title("The Dialog")
    pf, df = w["frame"], d["frame"]
    pc = (pf["x"] + pf["width"] / 2, pf["y"] + pf["height"] / 2)
    dc = (df["x"] + df["width"] / 2, df["y"] + df["height"] / 2)
    assert abs(pc[0] - dc[0]) <= 1 and abs(pc[1] - dc[1]) <= 1, (pf, df)


@pytest.mark.parametrize("program", ["gtk3-widget-factory", "gtk4-widget-factory"])
def test_widget_factory_at_1280x800_keeps_its_buttons_on_screen(start_qosway, program):
    if not shutil.which(program):
        pytest.skip("%s is not installed" % program)
    comp = start_qosway(config=SMALL)
    p = comp.spawn([program], env_extra={"GDK_BACKEND": "wayland"}, name=program)

    # wider than the output at its minimum size: its right end, where the
    # buttons are, stays on screen, and so does its titlebar
    def settled():
        w = comp.find_window(lambda x: x.get("pid") == p.pid)
        if not w or not w["buttons"]:
            return None
        return w if all(inside(b, (0, 0, 1280, 800)) for b in w["buttons"].values()) else None
    w = wait_for(settled, timeout=30, desc="%s's buttons inside the 1280x800 output" % program)
    assert w["frame"]["y"] >= 0 and w["frame"]["x"] + w["frame"]["width"] <= 1280, w
    with VirtualInput(comp.client_env(), keyboard=False) as vi:
        vi.click(*center(w["buttons"]["pause"]))
    # no QoS manager in this config: the click is refused, shown on the
    # button, and the program lives on
    assert p.alive()
