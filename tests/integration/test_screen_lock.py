"""Screen locking: ext-session-lock-v1 (swaylock 1.7 uses it when present)
and wlr-input-inhibitor. While a lock holds, keys, clicks and pointer
motion from any device, virtual ones made before or during the lock
included, reach only the locker; the compositor's bindings do nothing; a
locker killed with SIGKILL leaves the session locked until a new locker
unlocks it; QoS classes are left as they were.

"Nothing arrives" checks wait QUIET seconds after a wl_display roundtrip
through the input devices: the key events, had they been sent, would be
in the window's socket before the roundtrip returns."""

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

import harness
import pixels
from harness import wait_for
from test_qos_buttons import Win, no_frozen_leftovers, qcomp  # noqa: F401 (fixtures)
from vinput import VirtualInput, KEY_A, KEY_Q, KEY_LEFTMETA, KEY_ENTER

pytestmark = pytest.mark.keyboard

HERE = os.path.dirname(os.path.abspath(__file__))
QUIET = 0.5

# ext_session_lock_v1 and ext_session_lock_surface_v1 error codes
INVALID_DESTROY, INVALID_UNLOCK, ROLE, DUPLICATE_OUTPUT, ALREADY_CONSTRUCTED = range(5)
COMMIT_BEFORE_FIRST_ACK, NULL_BUFFER, DIMENSIONS_MISMATCH, INVALID_SERIAL = range(4)


def locker(comp, name="locker"):
    c = comp.spawn([sys.executable, "-u", os.path.join(HERE, "lock_client.py")], name=name)
    ready = c.wait_event("ready")
    assert "ext_session_lock_manager_v1" in ready["globals"], ready
    assert "zwlr_input_inhibit_manager_v1" in ready["globals"], ready
    return c


def lock(c):
    m = c.mark()
    c.send("lock")
    c.send("surfaces")
    c.wait_event("locked", start=m)
    c.wait_event("shown", start=m)
    return m


def _events_after(client, mark, name):
    import json
    out = []
    for line in client.lines[mark:]:
        ev, _, rest = line.partition(" ")
        if ev == name:
            out.append(json.loads(rest) if rest else {})
    return out


def assert_silent(client, mark, name, seconds=QUIET):
    time.sleep(seconds)
    got = _events_after(client, mark, name)
    assert not got, "%s got %s while locked: %r" % (client.name, name, got)


def type_and_click(vi, win_rect):
    vi.key(KEY_A)
    vi.chord([KEY_LEFTMETA], KEY_ENTER)  # Super+Return: the terminal binding
    x, y = win_rect
    vi.move(x, y)
    vi.click(x, y)


def center(comp, title):
    """A point of the window no later (cascaded, smaller) window covers."""
    g = comp.window_by_title(title)["geometry"]
    return g["x"] + g["width"] - 20, g["y"] + g["height"] - 20


def test_lock_confines_input_and_unlock_restores_it(qosway):
    win = qosway.spawn_wlclient(title="Behind")
    win.wait_event("mapped")
    win.wait_event("kb_enter")
    pos = center(qosway, "Behind")
    lk = locker(qosway)
    with VirtualInput(qosway.client_env()) as vi:
        m = lk.mark()
        wm = win.mark()
        lock(lk)
        win.wait_event("kb_leave", start=wm)
        lk.wait_event("kb_enter", lambda d: d["surface"] == "lock", start=m)
        wm = win.mark()
        lm = lk.mark()
        type_and_click(vi, pos)
        # the keys and the click go to the lock surface, and only there
        lk.wait_event("key", lambda d: d["key"] == KEY_A, start=lm)
        lk.wait_event("button", start=lm)
        assert_silent(win, wm, "key")
        assert not _events_after(win, wm, "button")
        assert not _events_after(win, wm, "ptr_enter")
        assert len(qosway.windows()) == 1, "Super+Return ran the terminal while locked"
    # a virtual keyboard made while locked is confined too
    with VirtualInput(qosway.client_env()) as vi:
        wm = win.mark()
        lm = lk.mark()
        vi.key(KEY_Q)
        lk.wait_event("key", lambda d: d["key"] == KEY_Q, start=lm)
        assert_silent(win, wm, "key")
        m = lk.mark()
        wm = win.mark()
        lk.send("unlock")
        lk.wait_event("unlocked", start=m)
        # the window on top gets the keyboard back
        win.wait_event("kb_enter", start=wm)
        vi.key(KEY_A)
        win.wait_event("key", lambda d: d["key"] == KEY_A, start=wm)


def test_second_locker_is_refused_while_the_first_lives(qosway):
    first = locker(qosway, "first")
    lock(first)
    second = locker(qosway, "second")
    m = second.mark()
    second.send("lock")
    second.wait_event("finished", start=m)
    # lock surfaces of a refused lock are inert: no configure, no error
    second.send("surfaces")
    second.send("sync")
    second.wait_event("synced", start=m)
    assert not _events_after(second, m, "configure")
    m = second.mark()
    second.send("destroy")
    second.wait_event("destroyed", start=m)
    m = first.mark()
    first.send("unlock")
    first.wait_event("unlocked", start=m)


def test_killed_locker_leaves_the_session_locked(qosway):
    win = qosway.spawn_wlclient(title="Behind")
    win.wait_event("mapped")
    pos = center(qosway, "Behind")
    first = locker(qosway, "first")
    lock(first)
    first.kill()
    with VirtualInput(qosway.client_env()) as vi:
        wm = win.mark()
        type_and_click(vi, pos)
        assert_silent(win, wm, "key")
        assert not _events_after(win, wm, "kb_enter")
        assert not _events_after(win, wm, "button")
        assert "session stays locked" in qosway.log_text()
        # a new locker takes over and may unlock
        second = locker(qosway, "second")
        lock(second)
        m = second.mark()
        second.send("unlock")
        second.wait_event("unlocked", start=m)
        wm = win.mark()
        vi.click(*pos)
        vi.key(KEY_A)
        win.wait_event("key", lambda d: d["key"] == KEY_A, start=wm)


@pytest.mark.skipif(shutil.which("swaylock") is None, reason="swaylock is not installed")
def test_swaylock_holds_keys_until_it_unlocks(qosway):
    win = qosway.spawn_wlclient(title="Typing")
    win.wait_event("mapped")
    win.wait_event("kb_enter")
    pos = center(qosway, "Typing")
    wm = win.mark()
    sl = qosway.spawn(["swaylock", "--color", "102030"], name="swaylock", stdin=False)
    win.wait_event("kb_leave", start=wm, timeout=15)
    # swaylock holds the lock: a second locker is refused
    probe = locker(qosway, "probe")
    m = probe.mark()
    probe.send("lock")
    probe.wait_event("finished", start=m)
    probe.send("destroy")
    with VirtualInput(qosway.client_env()) as vi:
        wm = win.mark()
        type_and_click(vi, pos)
        vi.type_text("secret")
        if shutil.which("wtype"):
            # wtype's own virtual keyboard is confined like any other
            r = subprocess.run(["wtype", "typed-by-wtype"], env=qosway.client_env(),
                               capture_output=True, text=True, timeout=30)
            assert r.returncode == 0, r.stderr
        assert_silent(win, wm, "key")
        assert not _events_after(win, wm, "button")
        assert sl.alive(), "swaylock exited: " + sl.stderr_tail()
        # swaylock unlocks on SIGUSR1, as after a right password
        os.kill(sl.pid, signal.SIGUSR1)
        assert sl.wait(15) == 0, sl.stderr_tail()
        wm = win.mark()
        vi.click(*pos)
        vi.key(KEY_A)
        win.wait_event("key", lambda d: d["key"] == KEY_A, start=wm)
        if shutil.which("wtype"):
            # unlocked, wtype's keys reach the window again
            wm = win.mark()
            r = subprocess.run(["wtype", "q"], env=qosway.client_env(), capture_output=True,
                               text=True, timeout=30)
            assert r.returncode == 0, r.stderr
            # (wtype maps its characters to keycodes of its own keymap)
            win.wait_event("key", start=wm)


@pytest.mark.skipif(shutil.which("swaylock") is None, reason="swaylock is not installed")
def test_swaylock_killed_stays_locked(qosway):
    win = qosway.spawn_wlclient(title="Typing")
    win.wait_event("mapped")
    win.wait_event("kb_enter")
    pos = center(qosway, "Typing")
    wm = win.mark()
    sl = qosway.spawn(["swaylock", "--color", "102030"], name="swaylock", stdin=False)
    win.wait_event("kb_leave", start=wm, timeout=15)
    sl.kill()
    with VirtualInput(qosway.client_env()) as vi:
        wm = win.mark()
        type_and_click(vi, pos)
        assert_silent(win, wm, "key")
        assert not _events_after(win, wm, "kb_enter")


def test_input_inhibitor_confines_input_to_its_client(qosway):
    win = qosway.spawn_wlclient(title="Other")
    win.wait_event("mapped")
    pos = center(qosway, "Other")
    lk = locker(qosway)
    m = lk.mark()
    lk.send("window")
    lk.wait_event("window_mapped", start=m)
    lk.wait_event("kb_enter", lambda d: d["surface"] == "window", start=m)
    lk.send("inhibit")
    lk.wait_event("inhibited", start=m)
    with VirtualInput(qosway.client_env()) as vi:
        wm = win.mark()
        lm = lk.mark()
        vi.click(*pos)  # clicking the other window moves no focus
        vi.key(KEY_A)
        lk.wait_event("key", lambda d: d["key"] == KEY_A, start=lm)
        assert_silent(win, wm, "key")
        assert not _events_after(win, wm, "kb_enter")
        assert not _events_after(win, wm, "button")
        # the inhibitor gone (released or its client dead), input is free
        lk.send("uninhibit")
        lk.wait_event("uninhibited", start=lm)
        wm = win.mark()
        vi.click(*pos)
        vi.key(KEY_A)
        win.wait_event("key", lambda d: d["key"] == KEY_A, start=wm)


def test_qos_classes_hold_while_locked(start_qosway):
    # a fixed reserve, kept for the whole test: the default one is sized
    # by use (a redraw past its slice runs at the fallback until the next
    # period) and given back after 120 idle periods (2 s)
    qcomp = start_qosway(config=harness.qos_test_config(
        "realtime-cpu 20%\nrealtime-period 20ms\nrealtime-idle-release 0\n"))
    rt = Win(qcomp, "RT", color="cc3333")
    paused = Win(qcomp, "Paused", color="3333cc")
    r = qcomp.qosctl("set", str(rt.id), "realtime")
    assert r.returncode == 0, r.stdout + r.stderr
    r = qcomp.qosctl("set", str(paused.id), "paused")
    assert r.returncode == 0, r.stdout + r.stderr
    rt.wait_class("realtime")
    paused.wait_class("paused")
    before_rt = rt.state()
    assert paused.state()["frozen"]
    lk = locker(qcomp)
    lock(lk)
    time.sleep(1.0)
    assert rt.w()["class"] == "realtime" and paused.w()["class"] == "paused"
    assert paused.state()["frozen"]
    assert rt.state()["policy"] == before_rt["policy"]
    m = lk.mark()
    lk.send("unlock")
    lk.wait_event("unlocked", start=m)
    assert rt.w()["class"] == "realtime" and paused.w()["class"] == "paused"
    assert paused.state()["frozen"]
    qcomp.qosctl("set", str(paused.id), "normal")
    paused.wait_class("normal")


@pytest.mark.parametrize("command,code,interface", [
    ("dup-output", DUPLICATE_OUTPUT, "ext_session_lock_v1"),
    ("commit-before-ack", COMMIT_BEFORE_FIRST_ACK, "ext_session_lock_surface_v1"),
    ("bad-serial", INVALID_SERIAL, "ext_session_lock_surface_v1"),
    ("wrong-size", DIMENSIONS_MISMATCH, "ext_session_lock_surface_v1"),
    ("null-buffer", NULL_BUFFER, "ext_session_lock_surface_v1"),
    ("role", ROLE, "ext_session_lock_v1"),
    ("has-buffer", ALREADY_CONSTRUCTED, "ext_session_lock_v1"),
    ("destroy", INVALID_DESTROY, "ext_session_lock_v1"),
])
def test_protocol_errors(qosway, command, code, interface):
    win = qosway.spawn_wlclient(title="Behind")
    win.wait_event("mapped")
    lk = locker(qosway)
    m = lk.mark()
    lk.send("lock")
    lk.wait_event("locked", start=m)
    if command in ("dup-output", "null-buffer"):
        lk.send("surfaces")
        lk.wait_event("shown", start=m)
    lk.send(command)
    err = lk.wait_event("error", start=m)
    # After a destructor request the client has forgotten the object, so
    # libwayland cannot name its interface.
    want = (interface, None) if command == "destroy" else (interface,)
    assert err["errno"] == 71 and err["code"] == code and err["interface"] in want, err
    # the client is gone, the session stays locked, the compositor lives
    wm = win.mark()
    with VirtualInput(qosway.client_env()) as vi:
        vi.key(KEY_A)
    assert_silent(win, wm, "key")
    assert qosway.alive()


def test_unlock_without_lock_is_an_error(qosway):
    first = locker(qosway, "first")
    lock(first)
    second = locker(qosway, "second")
    m = second.mark()
    second.send("lock")
    second.wait_event("finished", start=m)
    second.send("unlock")
    err = second.wait_event("error", start=m)
    assert err["code"] == INVALID_UNLOCK and err["interface"] in ("ext_session_lock_v1", None), err
    m = first.mark()
    first.send("unlock")
    first.wait_event("unlocked", start=m)


LOCK_RGB = (0x20, 0x30, 0x40)  # what lock_client.py draws


def output_box(o):
    return {"x": o["x"], "y": o["y"], "width": o["logical_width"], "height": o["logical_height"]}


def all_of(comp, boxes_rgb, name):
    def check(img):
        for box, rgb in boxes_rgb:
            f = pixels.fraction_near(img, box, rgb, tol=2)
            if f < 1.0:
                return "%.3f of %r is %r: %s" % (f, box, rgb, pixels.describe(img, box))
        return None
    comp.wait_screenshot(check, name=name)


def test_lock_covers_every_output_including_new_ones(qosway):
    r = qosway.ipc({"command": "output-add", "width": 800, "height": 600})
    assert r["success"], r
    wait_for(lambda: len(qosway.outputs()) == 2, desc="two outputs")
    win = qosway.spawn_wlclient(title="Behind", color="ff00ff")
    win.wait_event("mapped")
    lk = locker(qosway)
    m = lk.mark()
    lk.send("lock")
    lk.send("surfaces")
    lk.wait_event("locked", start=m)
    shown = set()
    wait_for(lambda: shown.update(d["output"] for _, d in lk.events("shown")) or len(shown) == 2,
             desc="a lock surface shown on both outputs")
    outs = qosway.outputs()
    all_of(qosway, [(output_box(o), LOCK_RGB) for o in outs], "locked")
    # the pointer on the second output reaches the lock surface there
    second = output_box(outs[1])
    with VirtualInput(qosway.client_env()) as vi:
        lm = lk.mark()
        vi.click(second["x"] + 100, second["y"] + 100)
        lk.wait_event("ptr_enter", lambda d: d["surface"] == "lock", start=lm)
        lk.wait_event("button", start=lm)
    # an output plugged in while locked shows the blank, not the desktop
    r = qosway.ipc({"command": "output-add", "width": 640, "height": 480})
    assert r["success"], r
    wait_for(lambda: len(qosway.outputs()) == 3, desc="three outputs")
    third = [o for o in qosway.outputs() if o["name"] == r["name"]][0]
    all_of(qosway, [(output_box(third), (0, 0, 0))], "new-output")
    m = lk.mark()
    lk.send("unlock")
    lk.wait_event("unlocked", start=m)
    g = qosway.window_by_title("Behind")["geometry"]
    all_of(qosway, [({"x": g["x"] + 10, "y": g["y"] + 10, "width": 50, "height": 50},
                     (0xFF, 0x00, 0xFF))], "unlocked")
