"""qosway-reserve-v1: the user turns an app's real-time off
(qosctl set pid:N normal, or the titlebar's realtime button with the virtual
pointer) while the app holds a granted automatic reserve: the app receives
params describing the new state (policy other) and the process is back to
SCHED_OTHER in its own cgroups."""

import harness
from harness import wait_for
from test_qos_buttons import qcomp, no_frozen_leftovers  # noqa: F401  (fixtures)
from test_reserve_protocol import RClient, grant_auto, assert_released, OTHER


def test_params_event_on_qosctl_set_normal(qcomp):
    """qosctl set pid:N normal on an app holding its automatic reserve: the
    app receives params (policy other) and is back to SCHED_OTHER."""
    rc = RClient(qcomp)
    idx = grant_auto(rc)
    m = rc.mark()
    r = qcomp.qosctl("set", "pid:%d" % rc.pid, "normal")
    print("qosctl set normal: %d %s%s" % (r.returncode, r.stdout, r.stderr))
    assert r.returncode == 0, r.stdout + r.stderr
    try:
        ev = rc.wait("params", idx, start=m, pred=lambda d: d["policy"] == OTHER)
    finally:
        print("events after qosctl set normal: %r" % rc.events(start=m))
    print("params after qosctl set normal: %r" % ev)
    wait_for(lambda: harness.sched_attr(rc.pid)["policy"] == harness.SCHED_OTHER,
             desc="process back to SCHED_OTHER")
    assert_released(qcomp, rc.pid, rc.orig_cgroups)


def test_params_event_on_realtime_button(qcomp):
    """The app holds a protocol reserve on its own window's process; the
    user clicks real-time off (virtual pointer): the app receives params."""
    from vinput import VirtualInput
    rc = RClient(qcomp, window="Reserve Win")
    w = qcomp.window_by_title("Reserve Win")
    assert w["pid"] == rc.pid, w
    idx = grant_auto(rc)
    wid = w["id"]

    def win():
        return qcomp.find_window(lambda x: x["id"] == wid)
    wait_for(lambda: win()["class"] == "realtime", desc="window class realtime (now %r)"
             % win()["class"])
    m = rc.mark()
    with VirtualInput(qcomp.client_env()) as vi:
        b = win()["buttons"]["realtime"]
        vi.click(b["x"] + b["width"] // 2, b["y"] + b["height"] // 2)
        g = win()["geometry"]
        vi.move(g["x"] + g["width"] // 2, g["y"] + g["height"] // 2)
        wait_for(lambda: win()["class"] == "normal", desc="class normal after the click")
    try:
        ev = rc.wait("params", idx, start=m, pred=lambda d: d["policy"] == OTHER)
    finally:
        print("events after the click: %r" % rc.events(start=m))
    print("params after the realtime button: %r" % ev)
    assert_released(qcomp, rc.pid, rc.orig_cgroups)
