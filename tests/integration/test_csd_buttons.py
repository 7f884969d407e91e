"""Windows that draw their own decorations (xdg-decoration client_side, or
GTK 3's KDE server-decoration mode client) keep them: no second titlebar and
no border, only a compact strip of the QoS buttons on their top edge, which
works like the titlebar's. `csd-buttons titlebar` frames them anyway,
`csd-buttons none` adds nothing. Clients that negotiate nothing keep the
full frame."""

import re
import shutil

import harness
import pixels
from harness import TITLEBAR_HEIGHT, BORDER_WIDTH, THEME, wait_for
from test_qos_buttons import no_frozen_leftovers, center  # noqa: F401 (fixture)
import pytest
from vinput import VirtualInput

QOS_BUTTONS = {"realtime", "idle", "pause"}


def csd_window(comp, title, mode="client_side"):
    args = ["--client-side"] if mode == "client_side" else []
    c = comp.spawn_wlclient(title=title, color="3060a0", extra_args=args)
    d = c.wait_event("decoration")
    c.wait_event("mapped")
    return c, d["mode"], comp.window_by_title(title)


def test_client_side_window_gets_the_strip(qosway):
    c, mode, w = csd_window(qosway, "Draws Its Own")
    assert mode == "client_side"
    g, f, tb = w["geometry"], w["frame"], w["titlebar"]
    # no border; a band one button high above the content
    assert (f["x"], f["width"]) == (g["x"], g["width"])
    assert f["y"] == g["y"] - TITLEBAR_HEIGHT and f["height"] == g["height"] + TITLEBAR_HEIGHT
    # the strip: three buttons wide, flush with the right edge, no close
    assert set(w["buttons"]) == QOS_BUTTONS
    assert tb["width"] == 3 * TITLEBAR_HEIGHT and tb["height"] == TITLEBAR_HEIGHT
    assert tb["x"] + tb["width"] == g["x"] + g["width"] and tb["y"] == g["y"] - TITLEBAR_HEIGHT
    for b in w["buttons"].values():
        assert tb["x"] <= b["x"] and b["x"] + b["width"] <= tb["x"] + tb["width"]
        assert b["y"] == tb["y"]
    # left of the strip nothing of ours is drawn: no titlebar, no border
    left = {"x": g["x"], "y": g["y"] - TITLEBAR_HEIGHT, "width": g["width"] - tb["width"],
            "height": TITLEBAR_HEIGHT}

    def no_titlebar(img):
        n = sum(pixels.count_near(img, left, THEME[k], tol=8)
                for k in ("titlebar-focused", "titlebar-unfocused", "border-focused"))
        return None if n == 0 else "titlebar pixels left of the strip: %s" % pixels.describe(
            img, left)
    qosway.wait_screenshot(no_titlebar, name="strip")


def test_clients_without_negotiation_keep_the_titlebar(qosway):
    c = qosway.spawn_wlclient(title="Plain", extra_args=["--no-decoration"])
    c.wait_event("mapped")
    w = qosway.window_by_title("Plain")
    assert set(w["buttons"]) == QOS_BUTTONS | {"close"}
    assert w["titlebar"]["width"] == w["geometry"]["width"]
    assert w["frame"]["x"] == w["geometry"]["x"] - BORDER_WIDTH
    c2, mode, w2 = csd_window(qosway, "Asks Server Side", mode="server_side")
    assert mode == "server_side"
    assert set(w2["buttons"]) == QOS_BUTTONS | {"close"}


@pytest.mark.skipif(not shutil.which("weston-confine"), reason="weston is not installed")
def test_toytoolkit_frame_without_negotiation_gets_the_strip(qosway):
    """weston's demo clients negotiate nothing but draw a frame and shadow,
    declared by a window geometry inside their surface: a full frame would
    be a second titlebar."""
    p = qosway.spawn(["weston-confine"], name="weston-confine")
    w = qosway.wait_window(lambda w: w.get("pid") == p.pid, desc="weston-confine window")
    assert set(w["buttons"]) == QOS_BUTTONS, w["buttons"]
    assert w["frame"]["width"] == w["geometry"]["width"]


def test_strip_buttons_work_like_titlebar_buttons(start_qosway):
    comp = start_qosway(config=harness.qos_test_config())
    c, _, w = csd_window(comp, "Strip Clicks")
    with VirtualInput(comp.client_env(), keyboard=False) as vi:
        vi.click(*center(w["buttons"]["idle"]))
        wait_for(lambda: comp.window_by_title("Strip Clicks")["class"] == "idle",
                 desc="idle class from the strip")
        vi.click(*center(w["buttons"]["idle"]))
        wait_for(lambda: comp.window_by_title("Strip Clicks")["class"] == "normal",
                 desc="back to normal from the strip")
    # the client saw none of those clicks: the strip is above its surface
    assert not c.events("button")


def test_csd_buttons_titlebar_frames_everyone(start_qosway):
    comp = start_qosway(config=harness.test_config("csd-buttons titlebar\n"))
    c, mode, w = csd_window(comp, "Framed Anyway")
    assert mode == "server_side"
    assert set(w["buttons"]) == QOS_BUTTONS | {"close"}
    assert w["titlebar"]["width"] == w["geometry"]["width"]


def test_csd_buttons_none_adds_nothing(start_qosway):
    comp = start_qosway(config=harness.test_config("csd-buttons none\n"))
    c, mode, w = csd_window(comp, "Bare")
    assert mode == "client_side"
    assert w["buttons"] == {}
    assert w["frame"] == w["geometry"]


def test_bad_csd_buttons_value_is_named(start_qosway):
    comp = start_qosway(config=harness.test_config("csd-buttons sometimes\ntaskbar-class maybe\n"))
    log = comp.log_text()
    assert re.search(r"qosway\.config:\d+: csd-buttons wants strip, titlebar or none", log), log
    assert re.search(r"qosway\.config:\d+: taskbar-class wants on or off", log), log
    # the default still applies
    c, mode, w = csd_window(comp, "Default Strip")
    assert set(w["buttons"]) == QOS_BUTTONS


@pytest.mark.skipif(not shutil.which("gtk3-widget-factory"),
                    reason="gtk3-widget-factory (gtk-3-examples) is not installed")
def test_gtk3_headerbar_app_gets_the_strip_not_a_second_titlebar(qosway):
    """A real GTK 3 app with a headerbar: it asks for client-side decorations
    through the KDE server-decoration protocol and draws its own title and
    close button, so qosway adds only the strip."""
    qosway.spawn(["gtk3-widget-factory"], env_extra={"GDK_BACKEND": "wayland"})
    w = qosway.wait_window(lambda w: w.get("app_id") == "gtk3-widget-factory", timeout=30,
                           desc="the gtk3-widget-factory window")
    g, tb = w["geometry"], w["titlebar"]
    assert set(w["buttons"]) == QOS_BUTTONS, w["buttons"]
    assert tb["width"] == 3 * TITLEBAR_HEIGHT and tb["height"] == TITLEBAR_HEIGHT
    assert tb["x"] + tb["width"] == g["x"] + g["width"] and tb["y"] == g["y"] - TITLEBAR_HEIGHT
    assert w["frame"]["width"] == g["width"]  # no border


@pytest.mark.skipif(not shutil.which("gtk4-widget-factory"),
                    reason="gtk4-widget-factory (gtk-4-examples) is not installed")
def test_gtk4_app_gets_the_strip_not_a_second_titlebar(start_qosway):
    """GTK 4 negotiates no decoration and always draws its headerbar: it
    gets the strip, whose buttons work."""
    comp = start_qosway(config=harness.qos_test_config())
    p = comp.spawn(["gtk4-widget-factory"], env_extra={"GDK_BACKEND": "wayland"})
    w = comp.wait_window(lambda w: w.get("pid") == p.pid and w["geometry"]["width"] > 0,
                         timeout=30, desc="the gtk4-widget-factory window")
    g, tb = w["geometry"], w["titlebar"]
    assert set(w["buttons"]) == QOS_BUTTONS, w["buttons"]
    assert tb["width"] == 3 * TITLEBAR_HEIGHT and tb["height"] == TITLEBAR_HEIGHT
    assert tb["x"] + tb["width"] == g["x"] + g["width"] and tb["y"] == g["y"] - TITLEBAR_HEIGHT
    assert w["frame"]["width"] == g["width"]  # no border
    with VirtualInput(comp.client_env(), keyboard=False) as vi:
        vi.click(*center(w["buttons"]["idle"]))
        wait_for(lambda: comp.window_by_title(w["title"])["class"] == "idle",
                 desc="idle class from gtk4-widget-factory's strip")


@pytest.mark.skipif(not shutil.which("foot"), reason="foot is not installed")
def test_foot_asks_for_server_side_and_keeps_the_titlebar(qosway):
    p = qosway.spawn(["foot", "--title", "Foot Framed", "sh"], name="foot")
    w = qosway.wait_window(lambda w: w.get("pid") == p.pid, timeout=30, desc="foot window")
    assert set(w["buttons"]) == QOS_BUTTONS | {"close"}
    assert w["titlebar"]["width"] == w["geometry"]["width"]
