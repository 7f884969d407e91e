"""Config files: a bad line is reported as ``file:line: message`` on stderr,
the compositor still starts, and the good lines around it still apply
(output size, titlebar height and colours)."""

import os
import re

import harness
from harness import THEME, wait_for
import pixels


def test_bad_lines_reported_with_file_and_line(start_qosway):
    config = "\n".join([
        "# a comment",                             # 1
        "output-mode 1280x720@30",                 # 2
        "frobnicate yes",                          # 3 unknown setting
        "titlebar-height banana",                  # 4 not an integer
        "color titlebar-focused #12345",           # 5 bad colour
        "color no-such-colour #FFFFFF",            # 6 unknown colour
        "buttons realtime idle pause close",       # 7 fine
        "bind Super+Nonsensekey close",            # 8 unknown key
        "output-mode huge",                        # 9 bad mode
        "color titlebar-focused #1234C8",          # 10 fine
        "titlebar-height 30",                      # 11 fine
        "realtime-period 500us",                   # 12 under the manager's 1 ms
        "realtime-period 20ms",                    # 13 fine
    ]) + "\n"
    comp = start_qosway(config=config)
    log = comp.log_text()
    path = comp.config_path
    for line in (3, 4, 5, 6, 8, 9, 12):
        pat = r"^.*%s:%d: \S.*$" % (re.escape(path), line)
        assert re.search(pat, log, re.M), "no '%s:%d: message' in stderr:\n%s" % (
            path, line, log[-4000:])
    for line in (1, 2, 7, 10, 11, 13):
        assert not re.search(r"%s:%d:" % (re.escape(path), line), log), (
            "good line %d reported as an error" % line)

    # it started, and the good lines took effect
    outs = comp.outputs()
    assert len(outs) == 1
    o = outs[0]
    assert o["name"] == "HEADLESS-1"
    assert (o["width"], o["height"]) == (1280, 720)
    assert abs(o["refresh_mhz"] - 30000) <= 100
    c = comp.spawn_wlclient(title="Config Applied")
    c.wait_event("mapped")
    w = comp.window_by_title("Config Applied")
    assert w["titlebar"]["height"] == 30
    img = comp.screenshot("cfg")
    assert img.size == (1280, 720)


def test_config_sets_output_mode_and_theme(start_qosway):
    config = harness.test_config().replace("output-mode 1920x1080@60", "output-mode 1024x768@60")
    comp = start_qosway(config=config)
    o = comp.outputs()[0]
    assert (o["width"], o["height"]) == (1024, 768)
    assert abs(o["refresh_mhz"] - 60000) <= 100
    c = comp.spawn_wlclient(title="Theme")
    c.wait_event("mapped")
    wid = comp.window_by_title("Theme")["id"]

    def themed(img):
        w = comp.find_window(lambda x: x["id"] == wid)
        bg = THEME["titlebar-focused" if w["focused"] else "titlebar-unfocused"]
        if pixels.fraction_near(img, w["titlebar"], bg, tol=10) < 0.4:
            return "titlebar not in configured colour: " + pixels.describe(img, w["titlebar"])
        return None
    img = comp.wait_screenshot(themed, name="theme")
    assert img.size == (1024, 768)


def test_default_output_is_1920x1080_at_60(start_qosway):
    comp = start_qosway(config="")  # empty config: built-in defaults
    o = comp.outputs()[0]
    assert o["name"] == "HEADLESS-1"
    assert (o["width"], o["height"]) == (1920, 1080)
    assert abs(o["refresh_mhz"] - 60000) <= 100
    assert o["enabled"] is True


def test_startup_command_gets_environment(start_qosway, tmp_path):
    out = tmp_path / "startup-env"
    comp = start_qosway(config=harness.test_config(),
                        args=["-s", "env > %s" % out])
    text = wait_for(lambda: out.exists() and "QOSWAY_SOCK=" in out.read_text()
                    and out.read_text(), desc="startup command output")
    env = dict(l.split("=", 1) for l in text.splitlines() if "=" in l)
    assert env["WAYLAND_DISPLAY"] == comp.wayland_display
    assert env["QOSWAY_SOCK"] == comp.sock


def documented_keys():
    """Every key qosway(5) starts a setting with: the bold words that open
    its entries, not the pages named as *page*(N)."""
    keys = set()
    with open(os.path.join(harness.REPO, "docs", "man", "qosway.5.scd")) as f:
        for line in f:
            if line.startswith("*"):
                keys.update(re.findall(r"\*([a-z][a-z-]*)\*(?!\()", line))
    return sorted(keys)


def test_every_documented_key_is_known(start_qosway):
    """Each key of qosway(5), given a value it cannot take, is refused by
    its own handler, never as an unknown setting; the one made-up key is."""
    keys = documented_keys()
    assert {"output-mode", "realtime-idle-release", "scheduling", "input", "bind"} <= set(keys)
    lines = ["%s @@ @@" % key for key in keys] + ["frobnicate @@ @@"]
    comp = start_qosway(config="\n".join(lines) + "\n")
    log = comp.log_text()
    unknown = re.findall(r"unknown setting '([^']*)'", log)
    assert unknown == ["frobnicate"], log[-4000:]
    assert comp.ipc({"command": "version"})["success"] is True
