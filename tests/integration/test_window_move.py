"""Moving windows with the virtual pointer: a titlebar drag and a
Super+left-drag move the window by the drag delta."""

from harness import wait_for
from vinput import VirtualInput, KEY_LEFTMETA


def pos(w):
    return (w["geometry"]["x"], w["geometry"]["y"])


def test_titlebar_drag_moves_window(qosway):
    c = qosway.spawn_wlclient(title="Drag Me", color="208040")
    c.wait_event("mapped")
    w = qosway.window_by_title("Drag Me")
    tb = w["titlebar"]
    start = (tb["x"] + 20, tb["y"] + tb["height"] // 2)
    dx, dy = 170, 120
    with VirtualInput(qosway.client_env(), keyboard=False) as vi:
        vi.drag(start, (start[0] + dx, start[1] + dy), steps=12)
    x0, y0 = pos(w)
    moved = wait_for(lambda: pos(qosway.window_by_title("Drag Me")) != (x0, y0) and
                     qosway.window_by_title("Drag Me"), desc="window to move")
    assert pos(moved) == (x0 + dx, y0 + dy), "moved from %r to %r, drag was (%d,%d)" % (
        (x0, y0), pos(moved), dx, dy)
    # size unchanged, frame and buttons moved along
    assert moved["geometry"]["width"] == w["geometry"]["width"]
    assert moved["geometry"]["height"] == w["geometry"]["height"]
    assert moved["titlebar"]["x"] == tb["x"] + dx and moved["titlebar"]["y"] == tb["y"] + dy
    assert moved["buttons"]["close"]["x"] == w["buttons"]["close"]["x"] + dx
    # the client content is drawn at the new place
    import pixels
    g = moved["geometry"]
    qosway.wait_screenshot(
        lambda img: None if pixels.fraction_near(img, g, (0x20, 0x80, 0x40), tol=2, inset=1) > 0.98
        else "content not at new geometry %r: %s" % (g, pixels.describe(img, g)),
        name="moved")


def test_super_drag_moves_window(qosway):
    c = qosway.spawn_wlclient(title="Super Drag", color="208040")
    c.wait_event("mapped")
    w = qosway.window_by_title("Super Drag")
    g = w["geometry"]
    start = (g["x"] + g["width"] // 2, g["y"] + g["height"] // 2)
    dx, dy = 80, 90
    with VirtualInput(qosway.client_env()) as vi:
        vi.drag(start, (start[0] + dx, start[1] + dy), steps=8, mods=(KEY_LEFTMETA,))
    x0, y0 = pos(w)
    moved = wait_for(lambda: pos(qosway.window_by_title("Super Drag")) != (x0, y0) and
                     qosway.window_by_title("Super Drag"), desc="window to move")
    assert pos(moved) == (x0 + dx, y0 + dy)
    # the drag with Super held is a compositor move: the client saw no button
    assert not [d for ev, d in c.events("button")], "client got the Super+click"
