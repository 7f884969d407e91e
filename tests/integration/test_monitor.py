"""qosway-monitor against a real compositor and QoS manager: its frame shows
a bar for every reserve that exists (own use in its colour, the slice
marked, the admission capacity filled), its members with their windows'
titles; its editor applies parameters through the IPC and shows a refusal;
the reserve menu's "Monitor..." starts it.

Where things are drawn comes from the monitor itself (--layout-json), so
the pixel checks look at the rows and bars it says it drew."""

import json
import os
import subprocess

import pytest

import harness
import pixels
from harness import wait_for
from test_qos_buttons import no_frozen_leftovers  # noqa: F401  (fixture)
from vinput import VirtualInput, BTN_RIGHT, KEY_ENTER, KEY_ESC

CLIENTS = os.path.join(harness.build_dir(), "clients")
MONITOR = os.path.join(CLIENTS, "qosway-monitor")
LOADGEN = os.path.join(CLIENTS, "qos-loadgen")


def rgb(hexcolor):
    return tuple(int(hexcolor[i:i + 2], 16) for i in (1, 3, 5))


@pytest.fixture
def mcomp(start_qosway):
    # the menu starts qosway-monitor from PATH, as an installed one would be
    path = CLIENTS + ":" + os.environ.get("PATH", "/usr/bin:/bin")
    return start_qosway(config=harness.qos_test_config(), env_extra={"PATH": path})


def define(comp, name, params):
    r = comp.ipc({"command": "reserve", "name": name, "params": params})
    assert r["success"], r


def reserves(comp):
    r = comp.ipc({"command": "reserves"})
    assert r["success"], r
    return {x["name"]: x for x in r["reserves"]}


def run_monitor(comp, *args, name="monitor"):
    """Runs the monitor headless; returns (returncode, stderr, image, layout)."""
    png = os.path.join(comp.logdir, name + ".png")
    layout = os.path.join(comp.logdir, name + ".json")
    env = comp.client_env()
    env.update(harness.sanitizer_env())
    r = subprocess.run([MONITOR, "--png", png, "--layout-json", layout] + list(args),
                       env=env, capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    if not os.path.exists(png):
        return r.returncode, r.stderr, None, None
    from PIL import Image
    img = Image.open(png).convert("RGB")
    with open(layout) as fh:
        return r.returncode, r.stderr, img, json.load(fh)


def loadgen(comp, *args, name=None):
    return comp.spawn([LOADGEN, "-q"] + list(args), name=name)


def row_of(layout, name):
    rows = [r for r in layout["rows"] if r["name"] == name]
    assert rows, "no row for %r in %r" % (name, [r["name"] for r in layout["rows"]])
    return rows[0]


def test_png_shows_a_bar_for_every_reserve(mcomp):
    define(mcomp, "busy", "policy=qos period=20ms slice=8ms fallback=other")
    define(mcomp, "quiet", "policy=qos period=40ms slice=4ms fallback=other")
    define(mcomp, "empty", "policy=qos period=10ms slice=2ms fallback=other")
    hog = loadgen(mcomp, "--hogs", "1", "--reserve", "busy", name="hog")
    client, win = mcomp.open_window("Monitored Window")
    r = mcomp.ipc({"command": "join", "target": "pid:%d" % client.pid, "reserve": "quiet"})
    assert r["success"], r
    wait_for(lambda: reserves(mcomp)["busy"]["last_used_us"] > 0, desc="the hog's use booked")

    # A frame shows the reserve's last period only, and on a loaded machine
    # the hog need not have used CPU in that one: frames are drawn until one
    # shows its use.
    frame = {}

    def busy_drawn():
        frame["shot"] = run_monitor(mcomp)
        rc, err, _, layout = frame["shot"]
        assert rc == 0, err
        return row_of(layout, "busy")["own"]["width"] > 0

    wait_for(busy_drawn, timeout=30, desc="a frame showing the hog's use")
    rc, err, img, layout = frame["shot"]
    colors = {k: rgb(v) for k, v in layout["colors"].items()}
    existing = list(reserves(mcomp))
    assert [r["name"] for r in layout["rows"]] == existing

    busy, quiet, empty = (row_of(layout, n) for n in ("busy", "quiet", "empty"))
    for row in (busy, quiet, empty):
        bar = row["bar"]
        mid = bar["y"] + bar["height"] // 2
        own = row["own"]["width"] + row["billed"]["width"]
        # past the use and the slice mark, the bar is empty
        tail = {"x": max(bar["x"] + own, row["slice_x"]) + 3, "y": bar["y"] + 2,
                "width": bar["x"] + bar["width"] - max(bar["x"] + own, row["slice_x"]) - 5,
                "height": bar["height"] - 4}
        if tail["width"] > 4:
            assert pixels.fraction_near(img, tail, colors["bar"]) > 0.95, \
                pixels.describe(img, tail)
        # the slice is marked where the layout says
        assert pixels.near(img.getpixel((row["slice_x"], bar["y"] - 2)), colors["slice"], 10)
        # the own part is drawn as long as the layout says, in its colour,
        # but for the slice mark (2 pixels) drawn over it
        o = row["own"]
        drawn = sum(1 for x in range(bar["x"], bar["x"] + bar["width"])
                    if pixels.near(img.getpixel((x, mid)), colors["own"], 10))
        under_mark = sum(1 for x in (row["slice_x"] - 1, row["slice_x"])
                         if o["x"] <= x < o["x"] + o["width"])
        assert drawn == o["width"] - under_mark, (row, drawn)
    assert busy["own"]["width"] > 0, busy
    assert empty["own"]["width"] == 0 and empty["billed"]["width"] == 0, empty
    assert empty["members"] == []
    # the hog's one task (qos-loadgen's child) is the member shown
    assert [parent_of(m["pid"]) for m in busy["members"]] == [hog.pid], busy["members"]
    assert quiet["members"] == [{"pid": client.pid, "titles": "Monitored Window"}]

    cap = mcomp.ipc({"command": "capacity"})
    granted = layout["capacity_granted"]
    expect = round(cap["granted_ppm"] / cap["total_ppm"] * layout["capacity_bar"]["width"])
    assert abs(granted["width"] - expect) <= 1, (granted, cap)
    assert pixels.fraction_near(img, granted, colors["capacity_granted"], inset=2) > 0.95
    hog.kill()


def parent_of(pid):
    with open("/proc/%d/stat" % pid) as fh:
        return int(fh.read().rsplit(")", 1)[1].split()[1])


def test_editor_applies_parameters(mcomp):
    define(mcomp, "edited", "policy=qos period=20ms slice=4ms fallback=other nice=3")
    rc, err, img, layout = run_monitor(
        mcomp, "--edit", "edited", "--set", "period=30ms", "--set", "slice=6ms",
        "--set", "fallback=idle", "--apply")
    assert rc == 0, err
    r = reserves(mcomp)["edited"]
    assert (r["policy"], r["period_us"], r["slice_us"], r["fallback"]) == \
        ("qos", 30000, 6000, "idle"), r
    assert "nice=3" in r["params"], "a key the editor does not show was lost: %s" % r["params"]
    # the frame shows the editor with no refusal, and the row the new slice
    dialog = layout["dialog"]
    assert dialog is not None
    refusal = rgb(layout["colors"]["refusal"])
    assert pixels.count_near(img, dialog["message"], refusal) == 0
    row = row_of(layout, "edited")
    assert row["slice_x"] == row["bar"]["x"] + round(row["bar"]["width"] * 6 / 30)


def test_editor_shows_the_refusal(mcomp):
    define(mcomp, "first", "policy=qos period=20ms slice=10ms fallback=other")
    define(mcomp, "second", "policy=qos period=20ms slice=6ms fallback=other")
    # a reserve holds capacity once it has a member
    for name in ("first", "second"):
        member = mcomp.spawn(["sleep", "600"], name="member-" + name)
        r = mcomp.ipc({"command": "join", "target": "pid:%d" % member.pid, "reserve": name})
        assert r["success"], r
    before = reserves(mcomp)
    assert before["first"]["granted"] and before["second"]["granted"], before
    # 50% + 60% is more than the 90% the test config lets admission grant
    rc, err, img, layout = run_monitor(mcomp, "--edit", "second", "--set", "slice=12ms",
                                       "--apply")
    assert rc == 1, err
    assert "second" in err and "reservable" in err, err
    assert reserves(mcomp)["second"]["params"] == before["second"]["params"]
    message = layout["dialog"]["message"]
    refusal = rgb(layout["colors"]["refusal"])
    assert pixels.fraction_near(img, message, refusal, tol=10) > 0.5, \
        pixels.describe(img, message)


def test_bad_monitor_arguments(mcomp):
    define(mcomp, "kept", "policy=qos period=20ms slice=4ms fallback=other")
    before = {n: r["params"] for n, r in reserves(mcomp).items()}
    env = dict(mcomp.client_env(), **harness.sanitizer_env())
    cases = [
        (["--interval", "5ms"], "--interval"),
        (["--size", "10x10", "--png", "/dev/null"], "--size"),
        (["--set", "slice=5ms"], "--edit"),
        (["--edit", "kept", "--set", "nonsense"], "KEY=VALUE"),
        (["--edit", "kept", "--set", "colour=red", "--png", "/dev/null"], "colour"),
        (["--edit", "missing", "--png", "/dev/null"], "missing"),
        (["--bogus"], "--bogus"),
    ]
    for args, word in cases:
        r = subprocess.run([MONITOR] + args, env=env, capture_output=True, text=True,
                           timeout=30, stdin=subprocess.DEVNULL)
        assert r.returncode == 2, (args, r.returncode, r.stderr)
        assert word in r.stderr, (args, r.stderr)
    assert {n: r["params"] for n, r in reserves(mcomp).items()} == before


def monitor_window(comp):
    return comp.find_window(lambda w: w["app_id"] == "qosway-monitor")


def test_editor_driven_with_pointer_and_keyboard(mcomp):
    define(mcomp, "first", "policy=qos period=20ms slice=10ms fallback=other")
    define(mcomp, "second", "policy=qos period=20ms slice=6ms fallback=other")
    for name in ("first", "second"):
        member = mcomp.spawn(["sleep", "600"], name="member-" + name)
        r = mcomp.ipc({"command": "join", "target": "pid:%d" % member.pid, "reserve": name})
        assert r["success"], r
    layout_path = os.path.join(mcomp.logdir, "live.json")
    mon = mcomp.spawn([MONITOR, "--interval", "200ms", "--layout-json", layout_path],
                      name="monitor-live", env_extra=harness.sanitizer_env())
    w = mcomp.wait_window(lambda x: x["app_id"] == "qosway-monitor", desc="monitor window")

    def layout():
        with open(layout_path) as fh:
            return json.load(fh)
    wait_for(lambda: len(layout()["rows"]) == 2, desc="both rows drawn")
    g = w["geometry"]
    row = row_of(layout(), "second")["row"]
    with VirtualInput(mcomp.client_env()) as vi:
        vi.click(g["x"] + row["x"] + 20, g["y"] + row["y"] + 10)
        lay = wait_for(lambda: (lambda x: x if x["dialog"] else None)(layout()),
                       desc="the editor opened")
        # the slice field has the focus: replace 6ms with 12ms, then Enter
        for _ in range(8):
            vi.key(14)  # KEY_BACKSPACE
        vi.type_text("12ms")
        vi.key(KEY_ENTER)
        message = dict(lay["dialog"]["message"])
        message["x"] += g["x"]
        message["y"] += g["y"]
        refusal = rgb(lay["colors"]["refusal"])

        def shown(img):
            if pixels.fraction_near(img, message, refusal, tol=10) > 0.5:
                return None
            return "no refusal drawn: %s" % pixels.describe(img, message)
        mcomp.wait_screenshot(shown, name="refusal")
        assert reserves(mcomp)["second"]["slice_us"] == 6000
        # Escape closes the editor, a second one quits
        vi.key(KEY_ESC)
        wait_for(lambda: layout()["dialog"] is None, desc="the editor closed")
        vi.key(KEY_ESC)
    assert mon.wait(10) == 0, mon.stderr_tail()
    assert monitor_window(mcomp) is None


def test_menu_starts_the_monitor(mcomp):
    from test_qos_menu import QOSRC_RESERVES, ITEM_H, open_menu, menu_shown
    from test_qos_buttons import Win
    win = Win(mcomp, "Menu Monitor")
    r = mcomp.ipc({"command": "join", "target": "pid:%d" % win.pid, "reserve": "ui"})
    assert r["success"], r
    with VirtualInput(mcomp.client_env()) as vi:
        x, y = open_menu(vi, win)
        wait_for(lambda: menu_shown(mcomp, x, y), desc="menu drawn")
        last = len(QOSRC_RESERVES)  # after the reserves: "Monitor..."
        vi.click(x + 30, y + last * ITEM_H + ITEM_H // 2)
    w = mcomp.wait_window(lambda x: x["app_id"] == "qosway-monitor", desc="monitor window")
    with open("/proc/%d/cmdline" % w["pid"], "rb") as fh:
        argv = fh.read().split(b"\0")
    assert argv[:3] == [b"qosway-monitor", b"--select", b"ui"], argv
    # its window exists only once its IPC connection is up; the capacity
    # bar it draws from the compositor's answer is there
    _, _, _, headless = run_monitor(mcomp, name="colours")
    colors = {k: rgb(v) for k, v in headless["colors"].items()}
    bar = dict(headless["capacity_bar"])
    bar["x"] += w["geometry"]["x"]
    bar["y"] += w["geometry"]["y"]
    bar["width"] = min(bar["width"], w["geometry"]["width"] - 24)

    def capacity_drawn(img):
        n = (pixels.count_near(img, bar, colors["capacity_free"]) +
             pixels.count_near(img, bar, colors["capacity_granted"]))
        if n > 0.95 * bar["width"] * bar["height"]:
            return None
        return "no capacity bar: %s" % pixels.describe(img, bar)
    mcomp.wait_screenshot(capacity_drawn, name="menu-monitor")
    assert mcomp.ipc({"command": "close", "id": w["id"]})["success"]
    wait_for(lambda: monitor_window(mcomp) is None, desc="the monitor closed")
    assert win.w()["reserve"] == "ui"
