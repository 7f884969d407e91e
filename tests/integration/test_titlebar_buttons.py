"""Virtual-pointer clicks on the titlebar buttons: close closes the client;
realtime, idle and pause toggle the window's QoS class (mutually exclusive)
and the button's image."""

import harness
from harness import THEME, wait_for
import pixels
from vinput import VirtualInput

CLASS_OF = {"realtime": "realtime", "idle": "idle", "pause": "paused"}


def center(r):
    return (r["x"] + r["width"] // 2, r["y"] + r["height"] // 2)


def env_of(comp):
    return comp.client_env()


def park_pointer(vi, w):
    """Move the pointer onto the client content, away from any button, so
    screenshots show the buttons without hover highlight."""
    g = w["geometry"]
    vi.move(g["x"] + g["width"] // 2, g["y"] + g["height"] // 2)


def on_pixels(img, button):
    return pixels.count_near(img, button, THEME["button-on"], tol=12)


def test_close_button_closes_client(qosway):
    c = qosway.spawn_wlclient(title="Close Me", color="3366cc")
    c.wait_event("mapped")
    w = qosway.window_by_title("Close Me")
    with VirtualInput(env_of(qosway), keyboard=False) as vi:
        vi.click(*center(w["buttons"]["close"]))
    c.wait_event("close")
    assert c.wait(10) == 0
    wait_for(lambda: qosway.find_window(lambda x: x["id"] == w["id"]) is None,
             desc="closed window to leave qosctl's list")


def test_close_button_closes_foot(qosway):
    foot = qosway.spawn(["foot", "--title", "Foot Close", "sh"], name="foot")
    w = qosway.window_by_title("Foot Close", timeout=20)
    with VirtualInput(env_of(qosway), keyboard=False) as vi:
        vi.click(*center(w["buttons"]["close"]))
    foot.wait(10)
    qosway.wait_no_windows()


def test_class_buttons_toggle_class_and_image(qosway):
    c = qosway.spawn_wlclient(title="QoS Buttons", color="3366cc")
    c.wait_event("mapped")
    w = qosway.window_by_title("QoS Buttons")
    wid = w["id"]
    assert w["class"] == "normal"

    def win():
        return qosway.find_window(lambda x: x["id"] == wid)

    with VirtualInput(env_of(qosway), keyboard=False) as vi:
        park_pointer(vi, w)

        def all_off(img):
            for b in ("realtime", "idle", "pause"):
                n = on_pixels(img, win()["buttons"][b])
                if n > 2:
                    return "%s button shows the on colour (%d px) while off" % (b, n)
            return None
        off_img = qosway.wait_screenshot(all_off, name="off")

        for button in ("realtime", "idle", "pause"):
            vi.click(*center(win()["buttons"][button]))
            park_pointer(vi, win())
            wait_for(lambda: win()["class"] == CLASS_OF[button],
                     desc="class %s after clicking %s" % (CLASS_OF[button], button))

            def shows_on(img, button=button):
                b = win()["buttons"][button]
                n = on_pixels(img, b)
                if n < b["width"] * b["height"] // 8:
                    return "%s button not drawn 'on': %d px of %s; %s" % (
                        button, n, harness.hexcolor(THEME["button-on"]),
                        pixels.describe(img, b))
                if pixels.diff_count(off_img, img, b, tol=16) < 20:
                    return "%s button image unchanged after click" % button
                for other in ("realtime", "idle", "pause"):
                    if other != button and on_pixels(img, win()["buttons"][other]) > 2:
                        return "%s still shows on while %s is on" % (other, button)
                return None
            qosway.wait_screenshot(shows_on, name="on-" + button)

            # a second click switches it off again
            vi.click(*center(win()["buttons"][button]))
            park_pointer(vi, win())
            wait_for(lambda: win()["class"] == "normal",
                     desc="class normal after second click on " + button)
            qosway.wait_screenshot(all_off, name="off-again-" + button)
    assert c.alive(), "class buttons must not close the client"


def test_class_buttons_are_mutually_exclusive(qosway):
    c = qosway.spawn_wlclient(title="Exclusive", color="3366cc")
    c.wait_event("mapped")
    wid = qosway.window_by_title("Exclusive")["id"]

    def win():
        return qosway.find_window(lambda x: x["id"] == wid)

    with VirtualInput(env_of(qosway), keyboard=False) as vi:
        for button in ("realtime", "idle", "pause", "realtime"):
            vi.click(*center(win()["buttons"][button]))
            wait_for(lambda: win()["class"] == CLASS_OF[button],
                     desc="class %s after clicking %s" % (CLASS_OF[button], button))
        park_pointer(vi, win())

        def only_realtime(img):
            ww = win()
            if on_pixels(img, ww["buttons"]["realtime"]) < 10:
                return "realtime button not on"
            for other in ("idle", "pause"):
                if on_pixels(img, ww["buttons"][other]) > 2:
                    return "%s button still on" % other
            return None
        qosway.wait_screenshot(only_realtime, name="exclusive")


def test_class_is_per_window(qosway):
    a = qosway.spawn_wlclient(title="Win A", color="3366cc")
    a.wait_event("mapped")
    b = qosway.spawn_wlclient(title="Win B", color="cc6633")
    b.wait_event("mapped")
    wa = qosway.window_by_title("Win A")
    wb = qosway.window_by_title("Win B")
    with VirtualInput(env_of(qosway), keyboard=False) as vi:
        # raise/focus A by clicking its title first, in case B overlaps it
        vi.click(wa["titlebar"]["x"] + 10, wa["titlebar"]["y"] + wa["titlebar"]["height"] // 2)
        wa = qosway.window_by_title("Win A")
        vi.click(*center(wa["buttons"]["idle"]))
    wait_for(lambda: qosway.window_by_title("Win A")["class"] == "idle", desc="A idle")
    assert qosway.window_by_title("Win B")["class"] == "normal"
    assert wb["id"] != wa["id"]
