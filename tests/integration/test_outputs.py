"""Output configuration: ``output NAME { ... }`` blocks applied at start and
on reload, wlr-output-management-unstable-v1 (driven with the real
wlr-randr), and windows leaving an output that goes away.

The compositor runs with two headless outputs, HEADLESS-1 and HEADLESS-2.
"""

import re
import shutil
import subprocess

import pytest

import harness
from harness import wait_for

TWO_OUTPUTS = {"WLR_HEADLESS_OUTPUTS": "2"}

needs_wlr_randr = pytest.mark.skipif(shutil.which("wlr-randr") is None,
                                     reason="wlr-randr is not installed "
                                     "(scripts/install-deps.sh)")


def by_name(comp):
    return {o["name"]: o for o in comp.outputs()}


def wlr_randr(comp, *args):
    return subprocess.run(["wlr-randr"] + list(args), env=comp.client_env(),
                          capture_output=True, text=True, timeout=15,
                          stdin=subprocess.DEVNULL)


def randr_heads(comp):
    """wlr-randr's listing as {name: {"enabled", "position", "scale",
    "transform", "modes"}}."""
    r = wlr_randr(comp)
    assert r.returncode == 0, r.stderr
    heads, cur = {}, None
    for line in r.stdout.splitlines():
        if line and not line[0].isspace():
            cur = heads.setdefault(line.split()[0], {"modes": []})
        elif ":" in line and not line.startswith("    "):
            key, value = line.strip().split(":", 1)
            if key != "Modes":
                cur[key.lower()] = value.strip()
        elif line.startswith("    "):
            cur["modes"].append(line.strip())
    return heads


CONFIG = harness.test_config("""
output HEADLESS-1 {
    mode 1280x720@30
    position 0,0
    scale 2
    transform 90
}
output HEADLESS-2 position 360,0
output NOT-PLUGGED-IN scale 3
""")


def start(start_qosway, config=CONFIG):
    return start_qosway(config=config, env_extra=TWO_OUTPUTS)


@needs_wlr_randr
def test_config_applied_at_start(start_qosway):
    comp = start(start_qosway)
    outs = by_name(comp)
    one, two = outs["HEADLESS-1"], outs["HEADLESS-2"]
    assert (one["width"], one["height"]) == (1280, 720)
    assert abs(one["refresh_mhz"] - 30000) <= 100
    assert (one["x"], one["y"], one["scale"], one["transform"]) == (0, 0, 2.0, "90")
    # turned a quarter and halved: what windows see
    assert (one["logical_width"], one["logical_height"]) == (360, 640)
    assert (two["x"], two["y"], two["scale"], two["transform"]) == (360, 0, 1.0, "normal")
    assert (two["width"], two["height"]) == (1920, 1080)
    # an output that is not there is no error
    assert not re.search(r"qosway.config:\d+:", comp.log_text())
    heads = randr_heads(comp)
    assert heads["HEADLESS-1"]["position"] == "0,0"
    assert heads["HEADLESS-1"]["transform"] == "90"
    assert float(heads["HEADLESS-1"]["scale"]) == 2.0
    assert any(m.startswith("1280x720 px") and "current" in m
               for m in heads["HEADLESS-1"]["modes"])
    assert heads["HEADLESS-2"]["position"] == "360,0"


def test_bad_output_values_name_key_and_line(start_qosway):
    config = "\n".join([
        "output HEADLESS-1 {",          # 1
        "    scale banana",             # 2
        "    transform 45",             # 3
        "    mode 12x12",               # 4
        "    position 10,",             # 5
        "    position 10,20",           # 6 fine
        "}",                            # 7
        "output HEADLESS-2 rotate 90",  # 8
        "output HEADLESS-2 {",          # 9 never closed
    ]) + "\n"
    comp = start(start_qosway, config)
    log = comp.log_text()
    path = re.escape(comp.config_path)
    for line, key in ((2, "output scale"), (3, "output transform"), (4, "output mode"),
                      (5, "output position"), (8, "rotate"), (9, "not closed")):
        assert re.search(r"%s:%d: .*%s" % (path, line, key), log), (line, log[-3000:])
    assert not re.search(r"%s:(6|7):" % path, log)
    assert by_name(comp)["HEADLESS-1"]["x"] == 10
    assert by_name(comp)["HEADLESS-1"]["y"] == 20


def test_reload_applies_changes_and_a_bad_file_changes_nothing(start_qosway):
    comp = start(start_qosway)
    with open(comp.config_path, "w") as fh:
        fh.write(harness.test_config("output HEADLESS-1 {\n scale 1\n transform normal\n}\n"
                                     "output HEADLESS-2 position 1280,100\n"))
    r = comp.qosctl("--json", "reload")
    assert r.returncode == 0, r.stdout + r.stderr
    outs = by_name(comp)
    assert (outs["HEADLESS-1"]["scale"], outs["HEADLESS-1"]["transform"]) == (1.0, "normal")
    assert (outs["HEADLESS-1"]["logical_width"], outs["HEADLESS-1"]["logical_height"]) == \
        (1280, 720)
    assert (outs["HEADLESS-2"]["x"], outs["HEADLESS-2"]["y"]) == (1280, 100)

    with open(comp.config_path, "w") as fh:
        fh.write("output HEADLESS-2 position 0,0\noutput HEADLESS-1 scale 99\n")
    r = comp.qosctl("--json", "reload")
    assert r.returncode != 0
    assert re.search(r"qosway.config:2: output scale wants", r.stdout + r.stderr), r.stdout
    assert by_name(comp) == outs


@needs_wlr_randr
def test_wlr_randr_sets_position_and_scale(start_qosway):
    comp = start(start_qosway)
    heads = randr_heads(comp)
    assert set(heads) == {"HEADLESS-1", "HEADLESS-2"}
    r = wlr_randr(comp, "--output", "HEADLESS-2", "--pos", "400,50", "--scale", "1.5")
    assert r.returncode == 0, r.stderr
    two = by_name(comp)["HEADLESS-2"]
    assert (two["x"], two["y"], two["scale"]) == (400, 50, 1.5)
    assert (two["logical_width"], two["logical_height"]) == (1280, 720)
    assert randr_heads(comp)["HEADLESS-2"]["position"] == "400,50"
    r = wlr_randr(comp, "--output", "HEADLESS-1", "--custom-mode", "800x600",
                  "--transform", "normal", "--scale", "1")
    assert r.returncode == 0, r.stderr
    one = by_name(comp)["HEADLESS-1"]
    assert (one["width"], one["height"], one["transform"]) == (800, 600, "normal")


@needs_wlr_randr
def test_refused_configuration_changes_nothing(start_qosway):
    """wlroots 0.15 cannot turn a headless output off: the whole request,
    including its other head's new position, fails and nothing moves."""
    comp = start(start_qosway)
    before = by_name(comp)
    r = wlr_randr(comp, "--output", "HEADLESS-1", "--off", "--output", "HEADLESS-2",
                  "--pos", "900,900")
    assert r.returncode != 0
    assert by_name(comp) == before
    assert "headless outputs cannot be disabled" in comp.log_text()


def window_output(comp, wid):
    w = comp.find_window(lambda x: x["id"] == wid)
    g = w["geometry"]
    cx, cy = g["x"] + g["width"] / 2, g["y"] + g["height"] / 2
    for o in comp.outputs():
        if (o["enabled"] and o["x"] <= cx < o["x"] + o["logical_width"]
                and o["y"] <= cy < o["y"] + o["logical_height"]):
            return o["name"], g
    return None, g


def test_windows_follow_their_output_and_leave_a_removed_one(start_qosway):
    config = harness.test_config("output HEADLESS-1 position 0,0\n"
                                 "output HEADLESS-2 position 1920,0\n")
    comp = start(start_qosway, config)
    _, w = comp.open_window("Placed", width=300, height=200)
    home, g = window_output(comp, w["id"])
    other = {"HEADLESS-1": "HEADLESS-2", "HEADLESS-2": "HEADLESS-1"}[home]
    # its output moves down: the window keeps its place on it
    with open(comp.config_path, "w") as fh:
        fh.write(config.replace("%s position" % home, "%s position 0,1080 #" % home))
    r = comp.qosctl("--json", "reload")
    assert r.returncode == 0, r.stdout
    assert by_name(comp)[home]["y"] == 1080
    name, g2 = window_output(comp, w["id"])
    assert name == home
    assert g2["y"] == g["y"] + 1080
    # unplugged: the window goes to the output that is left, same size
    r = comp.ipc({"command": "output-remove", "name": home})
    assert r["success"], r
    assert [o["name"] for o in comp.outputs()] == [other]
    name, g3 = window_output(comp, w["id"])
    assert name == other
    assert (g3["width"], g3["height"]) == (g["width"], g["height"])
    # a new output appears; bad requests are refused by name
    r = comp.ipc({"command": "output-add", "width": 800, "height": 600})
    assert r["success"], r
    assert any(o["name"] == r["name"] and o["width"] == 800 for o in comp.outputs())
    r = comp.ipc({"command": "output-remove", "name": "NOPE-1"})
    assert not r["success"] and "NOPE-1" in r["error"]
    r = comp.ipc({"command": "output-add", "width": 1, "height": 600})
    assert not r["success"] and "64 to 16384" in r["error"]
