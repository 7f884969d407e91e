"""wlr-layer-shell: a panel is drawn, its exclusive zone keeps windows
(new and maximized) out of its area, and a launcher with exclusive keyboard
interactivity gets the keys, then gives focus back."""

import time

import harness
from harness import wait_for
import pixels
from vinput import VirtualInput, KEY_A, KEY_Q

PANEL_RGB = (0x00, 0xC0, 0xC0)
PANEL_H = 40


def spawn_layer(comp, name, *args, color="00c0c0"):
    argv = ["--layer"] + list(args)
    return comp.spawn_wlclient(title=name, app_id=name, color=color,
                               extra_args=argv, name=name)


def test_panel_exclusive_zone(qosway):
    panel = spawn_layer(qosway, "panel", "top", "--anchor", "top,left,right",
                        "--layer-height", str(PANEL_H), "--exclusive", str(PANEL_H))
    m = panel.wait_event("mapped")
    out_w, out_h = harness.OUTPUT_MODE[:2]
    assert (m["width"], m["height"]) == (out_w, PANEL_H)
    # layer surfaces are not windows
    assert qosway.windows() == []
    strip = {"x": 0, "y": 0, "width": out_w, "height": PANEL_H}
    qosway.wait_screenshot(
        lambda img: None if pixels.fraction_near(img, strip, PANEL_RGB, tol=2) > 0.97
        else "panel not drawn: " + pixels.describe(img, strip), name="panel")

    c = qosway.spawn_wlclient(title="Below Panel", width=300, height=200)
    c.wait_event("mapped")
    w = qosway.window_by_title("Below Panel")
    assert w["frame"]["y"] >= PANEL_H, "new window placed under the panel: %r" % w["frame"]

    # maximize fills the output minus the panel
    tb = w["titlebar"]
    with VirtualInput(qosway.client_env(), keyboard=False) as vi:
        vi.double_click(tb["x"] + 30, tb["y"] + tb["height"] // 2)
    wm = wait_for(lambda: (lambda x: x if x.get("maximized") and
                           x["geometry"]["width"] > 300 else None)(
        qosway.window_by_title("Below Panel")), desc="maximized window")
    f = wm["frame"]
    assert f["y"] == PANEL_H and f["y"] + f["height"] == out_h, f
    assert f["x"] == 0 and f["width"] == out_w, f


def test_launcher_with_exclusive_keyboard_gets_keys(qosway):
    c = qosway.spawn_wlclient(title="Under Launcher")
    c.wait_event("mapped")
    with VirtualInput(qosway.client_env()) as vi:
        c.wait_event("keymap")
        w = qosway.window_by_title("Under Launcher")
        vi.click(w["geometry"]["x"] + 20, w["geometry"]["y"] + 20)
        c.wait_event("kb_enter")
        launcher = spawn_layer(qosway, "launcher", "overlay", "--layer-width", "400",
                               "--layer-height", "100", "--kb-interactivity", "1",
                               color="c0c000")
        launcher.wait_event("mapped")
        launcher.wait_event("kb_enter")
        n_c = len(c.events("key"))
        vi.key(KEY_A)
        launcher.wait_event("key", lambda d: d["key"] == KEY_A and d["state"] == 1)
        assert [d for ev, d in c.events("key")[n_c:]] == [], "window got the launcher's keys"
        # the launcher goes away: the window gets the keyboard back
        mark = c.mark()
        launcher.send("quit")
        assert launcher.wait(10) == 0
        c.wait_event("kb_enter", start=mark)
        vi.key(KEY_Q)
        c.wait_event("key", lambda d: d["key"] == KEY_Q and d["state"] == 1, start=mark)


def test_namespace_is_logged_without_its_control_characters(qosway):
    """A layer surface's namespace is the client's own text: when the log
    quotes it (here: margins wider than the output leave it no room), its
    control characters show as '?', not as escape sequences."""
    ns = "evil\x1b]0;pwned\x07ns"
    c = qosway.spawn_wlclient(app_id=ns, name="evil-layer", extra_args=[
        "--layer", "top", "--anchor", "top,left,right", "--layer-height", "40",
        "--margin", "1000"])
    c.wait_event("ready")
    wait_for(lambda: "layer surface 'evil?]0;pwned?ns' has no room" in qosway.log_tail(),
             desc="the log line about the namespace")
    assert "\x1b" not in qosway.log_tail() and "\x07" not in qosway.log_tail()
    # Said once: the unconfigured surface's commits must not fill the log.
    for _ in range(20):
        c.send("commit")
    wait_for(lambda: sum(line.startswith("committed") for line in c.lines) == 20,
             desc="20 commits made")
    time.sleep(0.5)
    assert qosway.log_tail().count("has no room") == 1, qosway.log_tail()
    assert qosway.alive() and c.alive()
