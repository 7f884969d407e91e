"""Stacking window management: new windows cascade, a titlebar double-click
toggles maximize, Super+right-drag and border drags resize."""

from harness import wait_for
from vinput import VirtualInput, KEY_LEFTMETA, BTN_RIGHT

XDG_STATE_MAXIMIZED = 1


def rect(w, key="geometry"):
    r = w[key]
    return (r["x"], r["y"], r["width"], r["height"])


def test_new_windows_cascade(qosway):
    frames = []
    for i in range(3):
        c = qosway.spawn_wlclient(title="Cascade %d" % i, width=300, height=200)
        c.wait_event("mapped")
        frames.append(qosway.window_by_title("Cascade %d" % i)["frame"])
    pos = [(f["x"], f["y"]) for f in frames]
    assert len(set(pos)) == 3, "windows stacked at the same place: %r" % pos
    # every earlier window keeps its titlebar's left end visible
    ws = {w["title"]: w for w in qosway.windows()}
    for i in range(2):
        tb = ws["Cascade %d" % i]["titlebar"]
        later = [ws["Cascade %d" % j]["frame"] for j in range(i + 1, 3)]
        px, py = tb["x"] + 2, tb["y"] + 2
        hidden = all(f["x"] <= px < f["x"] + f["width"] and f["y"] <= py < f["y"] + f["height"]
                     for f in later[:1])
        assert not hidden, "titlebar of Cascade %d hidden behind the next window" % i


def test_titlebar_double_click_toggles_maximize(qosway):
    c = qosway.spawn_wlclient(title="Maximize Me", width=320, height=240)
    c.wait_event("mapped")
    w0 = qosway.window_by_title("Maximize Me")
    out = qosway.outputs()[0]
    tb = w0["titlebar"]
    point = (tb["x"] + 30, tb["y"] + tb["height"] // 2)
    with VirtualInput(qosway.client_env(), keyboard=False) as vi:
        mark = c.mark()
        vi.double_click(*point)
        cfg = c.wait_event("configure", lambda d: XDG_STATE_MAXIMIZED in d["states"],
                           start=mark)
        assert cfg["width"] > 320 and cfg["height"] > 240
        c.wait_event("resized", start=mark)
        wm = wait_for(lambda: (lambda w: w if w.get("maximized") and
                               w["geometry"]["width"] == cfg["width"] else None)(
            qosway.window_by_title("Maximize Me")), desc="maximized in qosctl")
        f = wm["frame"]
        # the frame fills the output
        assert f["x"] <= out["x"] + 1 and f["y"] <= out["y"] + 1
        assert f["x"] + f["width"] >= out["x"] + out["width"] - 1
        assert f["y"] + f["height"] >= out["y"] + out["height"] - 1
        assert wm["geometry"]["width"] == cfg["width"]
        # double-click again restores the old geometry
        tb = wm["titlebar"]
        mark = c.mark()
        vi.double_click(tb["x"] + 30, tb["y"] + tb["height"] // 2)
        c.wait_event("configure", lambda d: XDG_STATE_MAXIMIZED not in d["states"],
                     start=mark)
        wr = wait_for(lambda: (lambda w: w if not w.get("maximized") and
                               rect(w) == rect(w0) else None)(
            qosway.window_by_title("Maximize Me")),
            desc="geometry restored to %r" % (rect(w0),))
        assert rect(wr) == rect(w0)


def test_super_right_drag_resizes(qosway):
    c = qosway.spawn_wlclient(title="Resize Me", width=300, height=200)
    c.wait_event("mapped")
    w = qosway.window_by_title("Resize Me")
    g = w["geometry"]
    start = (g["x"] + g["width"] - 20, g["y"] + g["height"] - 20)
    with VirtualInput(qosway.client_env()) as vi:
        mark = c.mark()
        vi.drag(start, (start[0] + 100, start[1] + 80), button=BTN_RIGHT, steps=8,
                mods=(KEY_LEFTMETA,))
    # the last configure (resizing state 3 cleared) carries the final size
    final = c.wait_event("configure", lambda d: d["width"] > 300 and 3 not in d["states"],
                         start=mark)
    assert abs(final["width"] - 400) <= 4 and abs(final["height"] - 280) <= 4, final
    r = wait_for(lambda: (lambda w: w if w["geometry"]["width"] == final["width"] else None)(
        qosway.window_by_title("Resize Me")), desc="final size in qosctl")
    assert r["geometry"]["height"] == final["height"]
    # the top-left corner stays put when resizing from the bottom-right
    assert (r["geometry"]["x"], r["geometry"]["y"]) == (g["x"], g["y"])


def test_border_drag_resizes(qosway):
    c = qosway.spawn_wlclient(title="Border Resize", width=300, height=200)
    c.wait_event("mapped")
    w = qosway.window_by_title("Border Resize")
    g, f = w["geometry"], w["frame"]
    # the right border: between the content's right edge and the frame's
    bx = (g["x"] + g["width"] + f["x"] + f["width"]) // 2
    assert f["x"] + f["width"] > g["x"] + g["width"], "no right border in frame %r" % f
    by = g["y"] + g["height"] // 2
    with VirtualInput(qosway.client_env(), keyboard=False) as vi:
        mark = c.mark()
        vi.drag((bx, by), (bx + 120, by), steps=8)
    final = c.wait_event("configure", lambda d: d["width"] > 300 and 3 not in d["states"],
                         start=mark)
    assert abs(final["width"] - 420) <= 4, final
    r = wait_for(lambda: (lambda w: w if w["geometry"]["width"] == final["width"] else None)(
        qosway.window_by_title("Border Resize")), desc="final size in qosctl")
    assert r["geometry"]["height"] == 200
    assert (r["geometry"]["x"], r["geometry"]["y"]) == (g["x"], g["y"])
