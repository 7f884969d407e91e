"""Idle: the org_kde_kwin_idle timers (swayidle's) see keyboard and pointer
input, virtual input included, as activity; an idle-inhibit inhibitor on a
visible surface holds them off; a minimized window's or a paused client's
inhibitor does not.

"No idle event" checks wait QUIET seconds on a timer of TIMEOUT_MS: a few
times the timeout, so that a loaded machine cannot make them pass by being
slow, while a working inhibitor keeps them silent however long they wait."""

import os
import sys

import pytest

import harness
from harness import wait_for
from test_qos_buttons import no_frozen_leftovers, qcomp  # noqa: F401 (fixtures)
from vinput import VirtualInput, KEY_A

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT_MS = 300
QUIET = 1.5


def watcher(comp):
    c = comp.spawn([sys.executable, "-u", os.path.join(HERE, "desktop_client.py")],
                   name="watcher-%d" % len(comp.clients))
    ready = c.wait_event("ready")
    assert "org_kde_kwin_idle" in ready["globals"]
    return c


def start_timer(w, msec=TIMEOUT_MS):
    mark = w.mark()
    w.send("idle %d" % msec)
    return w.wait_event("timer", start=mark)["timer"], mark


def stays_awake(w, mark, seconds=QUIET):
    with pytest.raises(AssertionError):
        w.wait_event("idle", start=mark, timeout=seconds)


def test_timeout_fires_without_activity(qosway):
    w = watcher(qosway)
    timer, mark = start_timer(w)
    assert w.wait_event("idle", start=mark)["timer"] == timer


def test_keyboard_and_pointer_are_activity(qosway):
    w = watcher(qosway)
    with VirtualInput(qosway.client_env()) as vi:
        vi.move(50, 50)
        _, mark = start_timer(w)
        w.wait_event("idle", start=mark)
        mark = w.mark()
        vi.key(KEY_A)
        w.wait_event("resumed", start=mark)
        w.wait_event("idle", start=mark)
        mark = w.mark()
        vi.move(200, 200)
        w.wait_event("resumed", start=mark)
        w.wait_event("idle", start=mark)
        mark = w.mark()
        vi.click(300, 300)
        w.wait_event("resumed", start=mark)


def test_inhibitor_on_visible_window_holds_idle_off(qosway):
    c, win = qosway.open_window("Video")
    mark = c.mark()
    c.send("inhibit")
    c.wait_event("inhibit", start=mark)
    w = watcher(qosway)
    _, mark = start_timer(w)
    stays_awake(w, mark)
    # the inhibitor gone, the timer runs again
    c.send("uninhibit")
    w.wait_event("idle", start=mark)


def test_inhibitor_of_a_closed_window_is_gone(qosway):
    c, win = qosway.open_window("Presentation")
    c.send("inhibit")
    c.wait_event("inhibit")
    w = watcher(qosway)
    _, mark = start_timer(w)
    stays_awake(w, mark, seconds=TIMEOUT_MS / 1000.0 * 2)
    c.send("quit")
    c.wait()
    w.wait_event("idle", start=mark)


def test_minimized_windows_inhibitor_does_not_count(qosway):
    c, win = qosway.open_window("Minimized Video")
    c.send("inhibit")
    c.wait_event("inhibit")
    w = watcher(qosway)
    w.wait_event("toplevel", lambda d: d["title"] == "Minimized Video")
    _, mark = start_timer(w)
    stays_awake(w, mark, seconds=TIMEOUT_MS / 1000.0 * 2)
    w.send("minimize 1")
    w.wait_event("idle", start=mark)
    # restored, it holds idle off again: a new timer stays quiet
    assert qosway.qosctl("focus", str(win["id"])).returncode == 0
    wait_for(lambda: not qosway.window_by_title("Minimized Video")["minimized"],
             desc="window restored")
    _, mark = start_timer(w)
    stays_awake(w, mark)


def test_paused_clients_inhibitor_does_not_count(qcomp):
    c, win = qcomp.open_window("Paused Video")
    c.send("inhibit")
    c.wait_event("inhibit")
    w = watcher(qcomp)
    _, mark = start_timer(w)
    stays_awake(w, mark, seconds=TIMEOUT_MS / 1000.0 * 2)
    r = qcomp.qosctl("set", str(win["id"]), "paused")
    assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: qcomp.window_by_title("Paused Video")["class"] == "paused",
             desc="window paused")
    w.wait_event("idle", start=mark)
    # running again, its inhibitor counts again
    r = qcomp.qosctl("set", str(win["id"]), "normal")
    assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: qcomp.window_by_title("Paused Video")["class"] == "normal",
             desc="window running")
    _, mark = start_timer(w)
    stays_awake(w, mark)
