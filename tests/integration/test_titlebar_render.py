"""A mapped window shows its server-side titlebar (background colour from the
config), title text and client content in a grim screenshot, for our own
pywayland client, foot and weston-simple-shm."""

import harness
from harness import THEME
import pixels

CONTENT_RGB = (0xFF, 0x00, 0xFF)


def title_area(w):
    """The titlebar part left of the leftmost button (where the title is)."""
    tb = w["titlebar"]
    left_button = min(b["x"] for b in w["buttons"].values())
    return pixels.sub_rect(tb, x1=left_button)


def check_titlebar(img, w):
    """None if the titlebar and title text are visible, else a message."""
    focused = w["focused"]
    bg = THEME["titlebar-focused" if focused else "titlebar-unfocused"]
    text = THEME["text-focused" if focused else "text-unfocused"]
    area = title_area(w)
    if area["width"] < 20 or area["height"] < 10:
        return "title area of %r too small: %r" % (w["title"], area)
    frac = pixels.fraction_near(img, area, bg, tol=10)
    if frac < 0.5:
        return ("titlebar of %r (focused=%s) is not mostly %s: %s"
                % (w["title"], focused, harness.hexcolor(bg), pixels.describe(img, area)))
    ntext = pixels.count_near(img, area, text, tol=48)
    if ntext < 15:
        return ("title text of %r: only %d pixels near text colour %s in %r: %s"
                % (w["title"], ntext, harness.hexcolor(text), area,
                   pixels.describe(img, area, n=8)))
    return None


def wait_titlebar(comp, find, content_check, name):
    """Poll screenshots (re-reading qosctl each time) until the titlebar and
    content checks pass."""
    def check(img):
        w = find()
        if w is None:
            return "window not listed by qosctl"
        return check_titlebar(img, w) or content_check(img, w)
    return comp.wait_screenshot(check, name=name)


def test_wlclient_shows_titlebar_title_and_content(qosway):
    c = qosway.spawn_wlclient(title="Render Test Window", color="ff00ff")
    c.wait_event("mapped")
    w = qosway.window_by_title("Render Test Window")
    assert w["app_id"] == "qosway-test"
    assert w["pid"] == c.pid
    assert w["class"] == "normal"
    assert set(w["buttons"]) == {"realtime", "idle", "pause", "close"}
    # geometry is the client's buffer size; the titlebar sits above it
    assert (w["geometry"]["width"], w["geometry"]["height"]) == (400, 300)
    tb, g = w["titlebar"], w["geometry"]
    assert tb["y"] + tb["height"] <= g["y"], "titlebar %r overlaps content %r" % (tb, g)
    assert tb["height"] == harness.TITLEBAR_HEIGHT
    # buttons in order realtime, idle, pause, close, inside the titlebar
    xs = [w["buttons"][b]["x"] for b in ("realtime", "idle", "pause", "close")]
    assert xs == sorted(xs) and len(set(xs)) == 4, w["buttons"]
    for b in w["buttons"].values():
        assert tb["x"] <= b["x"] and b["x"] + b["width"] <= tb["x"] + tb["width"]
        assert tb["y"] <= b["y"] and b["y"] + b["height"] <= tb["y"] + tb["height"]

    def content(img, w):
        frac = pixels.fraction_near(img, w["geometry"], CONTENT_RGB, tol=2, inset=1)
        if frac < 0.98:
            return "content not magenta: %s" % pixels.describe(img, w["geometry"])
        return None

    wait_titlebar(qosway, lambda: qosway.find_window(lambda x: x["pid"] == c.pid),
                  content, "wlclient")


def test_focused_and_unfocused_titlebar_colours(qosway):
    a = qosway.spawn_wlclient(title="First", color="ff00ff")
    a.wait_event("mapped")
    qosway.window_by_title("First")
    b = qosway.spawn_wlclient(title="Second", color="00ff00")
    b.wait_event("mapped")
    qosway.window_by_title("Second")
    # exactly one window is focused; the two titlebars use the two colours
    def both(img):
        ws = {w["title"]: w for w in qosway.windows()}
        if sorted(w["focused"] for w in ws.values()) != [False, True]:
            return "expected exactly one focused window: %r" % ws
        for w in ws.values():
            msg = check_titlebar(img, w)
            if msg:
                return msg
        return None
    qosway.wait_screenshot(both, name="two")


def test_foot_shows_titlebar_title_and_content(qosway):
    bg = (0x20, 0xA0, 0x60)
    foot = qosway.spawn(["foot", "--title", "Foot Render Test", "--app-id", "foot-test",
                         "-o", "colors.background=20a060", "-o", "colors.alpha=1.0",
                         "sh"], name="foot")
    qosway.window_by_title("Foot Render Test", timeout=20)

    def content(img, w):
        frac = pixels.fraction_near(img, w["geometry"], bg, tol=6, inset=2)
        if frac < 0.6:
            return "foot content not mostly #20A060: %s" % pixels.describe(img, w["geometry"])
        return None

    wait_titlebar(qosway, lambda: qosway.find_window(lambda x: x["title"] == "Foot Render Test"),
                  content, "foot")
    assert foot.alive(), foot.stderr_tail()


def test_weston_simple_shm_gets_titlebar_without_xdg_decoration(qosway):
    # weston-simple-shm does not speak xdg-decoration; it still gets a titlebar
    shm = qosway.spawn(["weston-simple-shm"], name="simple-shm")
    w = qosway.window_by_pid(shm.pid, timeout=15)
    assert w["title"] == "simple-shm"

    def content(img, w):
        cs = pixels.colors(img, w["geometry"], inset=2)
        if len(cs) < 20:
            return "simple-shm content not drawn (%d colours): %s" % (
                len(cs), pixels.describe(img, w["geometry"]))
        return None

    wait_titlebar(qosway, lambda: qosway.find_window(lambda x: x["pid"] == shm.pid),
                  content, "simple-shm")
