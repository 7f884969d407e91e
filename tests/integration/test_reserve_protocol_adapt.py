"""qosway-reserve-v1 version 2: adaptive reserves (set_adaptive), work
reports (work_duration) and display-synchronous periods
(set_period_source vblank), with a real client (reserve_client.py) on the
real compositor.  A version 1 client keeps working against the version 2
global; bad version 2 arguments are protocol errors; the params changes
reach IPC subscribers."""

import json
import os
import socket

import pytest

import harness
from harness import wait_for
from test_qos_buttons import qcomp, no_frozen_leftovers  # noqa: F401  (fixtures)
from test_reserve_protocol import (
    RClient, grant_auto, request_granted, reserves, member_pids, QOS)
from test_reserve_protocol_errors import others, expect_error  # noqa: F401  (fixture)
from test_reserve_protocol_player import run_player

RESERVE = "qosway_reserve_v1"
INVALID_PARAMS, INVALID_ADAPT, INVALID_WORK = 0, 3, 4
AUTO, CONTINUOUS = 1, 2


def auto_reserve(comp, rc):
    return reserves(comp)["auto-%d" % rc.pid]


def test_v1_client_works_against_the_v2_global(qcomp):
    """The global is advertised at 2; a client binding 1 gets the same
    answers as before: params, granted, its process in the reserve."""
    rc = RClient(qcomp, version=1)
    assert rc.ready["advertised"] == 2, rc.ready
    assert rc.ready["version"] == 1, rc.ready
    idx = grant_auto(rc)
    rc.assert_no_error()
    res = auto_reserve(qcomp, rc)
    assert rc.pid in member_pids(res), res
    assert res["policy"] == "qos" and res["adapt"] is None, res
    assert res["period_vblank"] is False, res
    params = [d for e, d in rc.events("params", idx)]
    assert params[-1]["policy"] == QOS and params[-1]["slice_us"] == 5000, params


def test_adaptive_reserve_reaches_the_manager(qcomp):
    """set_adaptive before set_params: the reserve the manager holds adapts
    within the bounds asked, and work reports are taken without error."""
    rc = RClient(qcomp, version=2)
    assert rc.ready["version"] == 2, rc.ready
    idx = rc.get("")
    request_granted(rc, idx, ["adaptive %d continuous 50000 400000" % idx,
                              "params %d qos other 20000 5000 0 0" % idx,
                              "join %d 0" % idx])
    res = auto_reserve(qcomp, rc)
    print("reserve: %r" % res)
    assert res["adapt"] == {"auto": False, "continuous": True, "min_ppm": 50000,
                            "max_ppm": 400000}, res
    for actual in (3000, 9000, 4000):
        rc.send("work %d 16000 %d" % (idx, actual))
    rc.assert_no_error()
    assert rc.pid in member_pids(auto_reserve(qcomp, rc))


@pytest.mark.parametrize("max_ppm", [0, 900000])
def test_adaptation_stays_within_the_apps_limit(qcomp, max_ppm):
    """No upper bound, or one over the 50% an app may hold by default: the
    reserve adapts up to that 50% at most."""
    rc = RClient(qcomp, version=2)
    idx = rc.get("")
    request_granted(rc, idx, ["adaptive %d continuous 600000 %d" % (idx, max_ppm),
                              "params %d qos other 20000 5000 0 0" % idx,
                              "join %d 0" % idx])
    adapt = auto_reserve(qcomp, rc)["adapt"]
    assert adapt["max_ppm"] == 500000 and adapt["min_ppm"] == 500000, adapt


def test_adaptation_is_pending_state_until_set_params(qcomp):
    """set_adaptive alone changes nothing; flags 0 turns it off again."""
    rc = RClient(qcomp, version=2)
    idx = grant_auto(rc)
    rc.send("adaptive %d auto+continuous 0 0" % idx)
    rc.assert_no_error()
    assert auto_reserve(qcomp, rc)["adapt"] is None
    request_granted(rc, idx, ["params %d qos other 20000 5000 0 0" % idx])
    adapt = auto_reserve(qcomp, rc)["adapt"]
    assert adapt and adapt["auto"] and adapt["continuous"], adapt
    request_granted(rc, idx, ["adaptive %d 0 0 0" % idx,
                              "params %d qos other 20000 4000 0 0" % idx])
    assert auto_reserve(qcomp, rc)["adapt"] is None


def test_work_reports_to_a_fixed_reserve_are_no_error(qcomp):
    """The user may have replaced the client's parameters: a report to a
    reserve that does not adapt (or does not exist) is ignored."""
    rc = RClient(qcomp, version=2)
    idx = rc.get("")
    rc.send("work %d 16000 20000" % idx)
    rc.assert_no_error()
    grant_auto(rc)
    rc.send("work %d 16000 1000" % idx)
    rc.assert_no_error()


@pytest.mark.parametrize("lines,code", [
    pytest.param(["adaptive {i} 4 0 0"], INVALID_ADAPT, id="unknown-flag"),
    pytest.param(["adaptive {i} continuous 500000 100000"], INVALID_ADAPT, id="min-over-max"),
    pytest.param(["adaptive {i} continuous 0 1000001"], INVALID_ADAPT, id="max-over-a-cpu"),
    pytest.param(["adaptive {i} auto 1000001 0"], INVALID_ADAPT, id="min-over-a-cpu"),
    pytest.param(["period_source {i} 2"], INVALID_ADAPT, id="unknown-period-source"),
    pytest.param(["adaptive {i} continuous 0 0", "params {i} pause other 20000 5000 0 0"],
                 INVALID_ADAPT, id="adaptive-pause"),
    pytest.param(["adaptive {i} auto 0 0", "params {i} qos other 0 0 0 0"],
                 INVALID_ADAPT, id="adaptive-without-period"),
    pytest.param(["adaptive {i} continuous 0 0", "params {i} idle other 20000 5000 0 0"],
                 INVALID_ADAPT, id="adaptive-idle"),
    pytest.param(["period_source {i} vblank", "params {i} pause other 0 0 0 0"],
                 INVALID_ADAPT, id="vblank-pause"),
    pytest.param(["period_source {i} vblank", "params {i} qos other 0 20000 0 0"],
                 INVALID_PARAMS, id="vblank-slice-over-frame"),
    pytest.param(["work {i} 0 5000"], INVALID_WORK, id="work-target-0"),
])
def test_bad_v2_arguments_are_protocol_errors(qcomp, others, lines, code):  # noqa: F811
    rc = RClient(qcomp, version=2)
    idx = rc.get("")
    for line in lines:
        rc.send(line.format(i=idx))
    expect_error(qcomp, rc, others, code, RESERVE)


def test_v2_boundary_arguments_are_not_errors(qcomp):
    """Equal bounds, a bound of exactly one CPU, no upper bound, and a
    report of 0 us: legal."""
    rc = RClient(qcomp, version=2)
    idx = rc.get("")
    for line in ("adaptive %d continuous 200000 200000" % idx,
                 "adaptive %d auto 0 1000000" % idx,
                 "adaptive %d continuous 300000 0" % idx,
                 "period_source %d fixed" % idx,
                 "work %d 16000 0" % idx):
        rc.send(line)
    rc.assert_no_error()


class Subscriber:
    """A raw IPC subscription: events read as they come."""

    def __init__(self, comp):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(comp.sock)
        self.s.sendall(b'{"command":"subscribe"}\n')
        self.buf = b""
        reply = self.next(10)
        assert reply and reply.get("success", True), reply

    def next(self, timeout):
        self.s.settimeout(timeout)
        while b"\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def wait(self, pred, timeout=10.0):
        seen = []
        while True:
            try:
                ev = self.next(timeout)
            except socket.timeout:
                raise AssertionError("no such event in %.0fs; saw %r" % (timeout, seen))
            if ev is None:
                raise AssertionError("subscription closed; saw %r" % seen)
            if pred(ev):
                return ev
            seen.append(ev)

    def close(self):
        self.s.close()


def test_params_changes_reach_ipc_subscribers(qcomp):
    """A reserve's new slice comes to subscribers as a qos params event with
    the new period and slice, whoever changed it."""
    rc = RClient(qcomp, version=2)
    idx = grant_auto(rc)
    sub = Subscriber(qcomp)
    try:
        request_granted(rc, idx, ["params %d qos other 20000 3000 0 0" % idx])
        ev = sub.wait(lambda e: e.get("event") == "qos" and e.get("change") == "params"
                      and e.get("reserve") == "auto-%d" % rc.pid)
        print("event: %r" % ev)
        assert ev["period_us"] == 20000 and ev["slice_us"] == 3000, ev
    finally:
        sub.close()


def vblank_config(hz1, hz2):
    return harness.qos_test_config(
        "output HEADLESS-1 {\n    mode 640x480@%d\n    position 0,0\n}\n"
        "output HEADLESS-2 {\n    mode 640x480@%d\n    position 640,0\n}\n" % (hz1, hz2))


def refresh_us(comp, name):
    outs = {o["name"]: o for o in comp.ipc({"command": "outputs"})["outputs"]}
    return 1000000000 // outs[name]["refresh_mhz"]


def test_vblank_period_follows_the_windows_output(start_qosway):
    """A period=vblank reserve takes the refresh period of the output its
    window is on, and the other output's once the window is moved there
    (its first output unplugged)."""
    comp = start_qosway(config=vblank_config(50, 100),
                        env_extra={"WLR_HEADLESS_OUTPUTS": "2"})
    first, second = refresh_us(comp, "HEADLESS-1"), refresh_us(comp, "HEADLESS-2")
    assert first != second, (first, second)
    rc = RClient(comp, window="Vblank Window", version=2)
    win = wait_for(lambda: comp.window_by_title("Vblank Window"), desc="window listed")
    idx = rc.get("")
    request_granted(rc, idx, ["period_source %d vblank" % idx,
                              "params %d qos other 0 2000 0 0" % idx,
                              "join %d 0" % idx])
    res = auto_reserve(comp, rc)
    assert res["period_vblank"] is True, res
    on = win["output"]
    want = first if on == "HEADLESS-1" else second
    rc.send("animate 1")
    wait_for(lambda: auto_reserve(comp, rc)["period_us"] == want, timeout=20,
             desc="period %d us of %s (now %r)" % (want, on, auto_reserve(comp, rc)))
    # params told the client
    rc.sync()
    assert any(d["period_us"] == want for _, d in rc.events("params", idx)), rc.events("params")
    other, other_us = ("HEADLESS-2", second) if on == "HEADLESS-1" else ("HEADLESS-1", first)
    r = comp.ipc({"command": "output-remove", "name": on})
    assert r.get("success", True) and "error" not in r, r
    rc.send("animate 1")
    wait_for(lambda: auto_reserve(comp, rc)["period_us"] == other_us, timeout=20,
             desc="period %d us of %s (now %r)" % (other_us, other, auto_reserve(comp, rc)))


def test_player_asks_for_adaptation_and_reports_work(qcomp):
    """qos-player --adapt --cpu-auto --period vblank --report-work: the
    reserve it holds while playing says so, every frame is reported, and
    its JSON line counts frames and missed frames per work step."""
    player = os.path.join(harness.build_dir(), "clients", "qos-player")
    seen = {}

    def check(p):
        seen["reserve"] = wait_for(lambda: reserves(qcomp).get("auto-%d" % p.pid), 10,
                                   desc="the player's reserve")
    # -n 0 (play on) leaves the end to the schedule, as benchmarks use it
    p, stats = run_player(qcomp, [player, "-n", "0", "-W", "160", "-H", "120", "-q", "20000:4000",
                                  "--adapt=5:40", "--cpu-auto", "--period", "vblank",
                                  "--report-work", "--work-steps", "500us@1s,2ms@1s"], check)
    res = seen["reserve"]
    print("reserve while playing: %r" % res)
    assert res["adapt"] == {"auto": True, "continuous": True, "min_ppm": 50000,
                            "max_ppm": 400000}, res
    assert res["period_vblank"] is True, res
    assert stats["reserve"] == "granted", stats
    assert stats["work_reports"] >= stats["frames"] - 1 > 0, stats
    assert isinstance(stats["missed"], int) and stats["missed"] >= 0, stats
    steps = stats["steps"]
    assert [s["work_us"] for s in steps] == [500, 2000], steps
    assert all(s["frames"] > 0 for s in steps), steps
    assert sum(s["missed"] for s in steps) <= stats["missed"], stats


def test_player_v1_options_keep_a_v1_client(qcomp):
    """Without version 2 options qos-player binds version 1; its JSON line
    has no work reports."""
    player = os.path.join(harness.build_dir(), "clients", "qos-player")
    p, stats = run_player(qcomp, [player, "-n", "30", "-W", "160", "-H", "120",
                                  "-q", "20000:4000"])
    assert stats["reserve"] == "granted" and stats["work_reports"] is None, stats
    assert "version 1" not in p.stderr_tail()


def test_work_reports_resize_the_slice_and_everyone_hears(qcomp):
    """cpu=auto on frames that need a fraction of their budget: once the
    manager has its first samples the slice follows the reports, and the
    new slice reaches the client (params) and IPC subscribers alike."""
    rc = RClient(qcomp, version=2)
    idx = rc.get("")
    request_granted(rc, idx, ["adaptive %d auto+continuous 0 0" % idx,
                              "params %d qos other 20000 5000 0 0" % idx,
                              "join %d 0" % idx])
    sub = Subscriber(qcomp)
    try:
        name = "auto-%d" % rc.pid
        start = rc.mark()

        def resized():
            # a frame's work: 2 ms of a 16 ms budget, one report a frame
            rc.send("work %d 16000 2000" % idx)
            return [d for _, d in rc.events("params", idx, start=start)
                    if d["slice_us"] != 5000]
        changed = wait_for(resized, timeout=30, interval=0.016,
                           desc="the slice resized by the work reports")
        print("params after the reports: %r" % changed)
        assert changed[-1]["period_us"] == 20000, changed
        # 2 ms of 16 ms is 2.5 ms of the 20 ms period: the slice shrinks
        assert changed[-1]["slice_us"] < 5000, changed
        ev = sub.wait(lambda e: e.get("event") == "qos" and e.get("change") == "params"
                      and e.get("reserve") == name)
        assert ev["period_us"] == 20000 and ev["slice_us"] < 5000, ev
        res = auto_reserve(qcomp, rc)
        assert res["adapt_slice_us"] > 0, res
    finally:
        sub.close()


def test_user_defined_vblank_reserve_follows_the_output(start_qosway):
    """A reserve the user defines with period=vblank (qosctl reserve) and
    puts a window's process in (qosctl join) takes the refresh period of
    that window's output, as one the application asked for does."""
    comp = start_qosway(config=vblank_config(50, 100),
                        env_extra={"WLR_HEADLESS_OUTPUTS": "2"})
    rc = RClient(comp, window="User Vblank", version=1)
    win = wait_for(lambda: comp.window_by_title("User Vblank"), desc="window listed")
    r = comp.qosctl("reserve", "frames", "policy=qos period=vblank cpu=10% fallback=other")
    assert r.returncode == 0, r.stdout + r.stderr
    r = comp.qosctl("join", str(win["id"]), "frames")
    assert r.returncode == 0, r.stdout + r.stderr
    assert reserves(comp)["frames"]["period_vblank"] is True
    want = refresh_us(comp, win["output"])
    rc.send("animate 1")
    wait_for(lambda: reserves(comp)["frames"]["period_us"] == want, timeout=20,
             desc="period %d us of %s (now %r)" % (want, win["output"], reserves(comp)["frames"]))
    assert rc.pid in member_pids(reserves(comp)["frames"])
