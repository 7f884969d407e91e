"""qosway-reserve-v1, positive cases with a real client
(reserve_client.py, pywayland, bindings generated from our XML): the kernel
state of the process and its threads and the events received.

Also holds the helpers the other test_reserve_protocol_* modules use."""

import json
import os
import sys
import time

import pytest

import harness
from harness import wait_for
from test_qos_buttons import (  # noqa: F401  (fixtures)
    Win, park, click_button, qcomp, no_frozen_leftovers)

HERE = os.path.dirname(os.path.abspath(__file__))
RESERVE_CLIENT = os.path.join(HERE, "reserve_client.py")

OTHER, IDLE, PAUSE, QOS, FIFO, RR = range(6)
CAPACITY, FORBIDDEN, RATE_LIMITED = range(3)


class RClient:
    """A reserve_client.py process."""

    def __init__(self, comp, window=None, name=None, expect_manager=True, app_id=None,
                 version=1):
        argv = [sys.executable, "-u", RESERVE_CLIENT, "--version", str(version)]
        if window:
            argv += ["--window", window]
        if app_id:
            argv += ["--app-id", app_id]
        self.comp = comp
        self.p = comp.spawn(argv, name=name or "reserve-%d" % len(comp.clients))
        self.ready = self.p.wait_event("ready", timeout=30)
        if expect_manager:
            assert self.ready["manager"], self.ready
        self.pid = self.p.pid
        self.nsync = 0
        self.orig_cgroups = harness.proc_cgroups(self.pid)
        if window:
            self.p.wait_event("mapped", timeout=30)

    def send(self, line):
        self.p.send(line)

    def mark(self):
        return self.p.mark()

    def get(self, name=""):
        m = self.mark()
        self.send("get " + name)
        return self.p.wait_event("object", start=m)["idx"]

    def getj(self, name):
        self.send("getj " + json.dumps(name))

    def sync(self, timeout=20.0):
        """Returns once the compositor has handled everything sent so far
        (and its answers were printed)."""
        self.nsync += 1
        n = self.nsync
        self.send("sync")
        self.p.wait_event("synced", lambda d: d["n"] == n, timeout=timeout)

    def wait(self, name, idx=None, start=0, timeout=10.0, pred=lambda d: True):
        return self.p.wait_event(
            name, lambda d: (idx is None or d.get("idx") == idx) and pred(d),
            timeout=timeout, start=start)

    def events(self, name=None, idx=None, start=0):
        with self.p._cond:
            lines = list(self.p.lines[start:])
        out = []
        for line in lines:
            ev, _, rest = line.partition(" ")
            if name is not None and ev != name:
                continue
            d = json.loads(rest) if rest else {}
            if idx is not None and d.get("idx") != idx:
                continue
            out.append((ev, d))
        return out

    def ask(self, idx, *lines):
        """Send lines, wait until the compositor has handled them: the events
        of object idx they brought, as [(name, data)]."""
        m = self.mark()
        for line in lines:
            self.send(line)
        self.sync()
        return self.events(start=m, idx=idx)

    def answers(self, idx, *lines):
        """ask(), but only the answers (granted, refused)."""
        return [(e, d) for e, d in self.ask(idx, *lines) if e in ("granted", "refused")]

    def assert_no_error(self, timeout=20.0):
        """Everything sent so far was handled, and no protocol error came."""
        self.sync(timeout)
        assert not self.events("error"), self.events("error")

    def spawn_thread(self):
        m = self.mark()
        self.send("spawn_thread")
        return self.p.wait_event("thread", start=m)["tid"]

    def state(self):
        return harness.qos_state(self.pid)

    def assert_deadline(self, timeout=3.0):
        """The client's granted qos reserve still holds.  With fallback other
        it may be between its slice and the period's end (or, throttled, the
        kernel's 0-lag time) right now, so it must be SCHED_DEADLINE again
        within a few periods; the overruns it was told of say why not."""
        try:
            wait_for(lambda: self.state()["policy"] == harness.SCHED_DEADLINE, timeout,
                     desc="pid %d back in SCHED_DEADLINE" % self.pid)
        except AssertionError as e:
            raise AssertionError("%s: state %r, overruns %r" % (
                e, self.state(), self.events("overrun"))) from None

    def error(self, timeout=10.0):
        return self.p.wait_event("error", timeout=timeout)


def reserves(comp):
    r = comp.qosctl("--json", "reserves")
    assert r.returncode == 0, r.stdout + r.stderr
    return {x["name"]: x for x in json.loads(r.stdout)["reserves"]}


def member_pids(res):
    return [m.get("pid") for m in res.get("members", [])]


def reserves_holding(comp, pid):
    return sorted(n for n, r in reserves(comp).items() if pid in member_pids(r))


def frames_keep_coming(comp, wl, seconds=1.0, min_frames=10):
    """A wlclient (another client) still gets frame callbacks."""
    m = wl.mark()
    wl.send("present %s" % seconds)
    ev = wl.wait_event("presentation", start=m, timeout=seconds + 20)
    print("%s: %d frames in %.2fs" % (wl.name, ev["frames_done"], ev["seconds"]))
    assert ev["frames_done"] >= min_frames, ev
    return ev


def bystander(comp):
    """Another client with a window, for 'the others carry on'."""
    wl = comp.spawn_wlclient(title="Bystander", color="20a0a0", width=200, height=150)
    wl.wait_event("mapped", timeout=30)
    return wl


def assert_other(st):
    assert st["policy"] == harness.SCHED_OTHER, st
    assert set(st["thread_policies"].values()) == {harness.SCHED_OTHER}, st
    assert st["nice"] == 0, st
    assert not st["frozen"], st


def assert_released(comp, pid, orig_cgroups=None, alive=True, timeout=10.0):
    """Nothing of pid left in any reserve; if it still runs, its threads are
    SCHED_OTHER again in their original cgroups."""
    wait_for(lambda: not reserves_holding(comp, pid), timeout,
             desc="pid %d out of every reserve (in %r)" % (pid, reserves_holding(comp, pid)))
    assert "auto-%d" % pid not in reserves(comp), reserves(comp).get("auto-%d" % pid)
    if alive:
        st = harness.qos_state(pid)
        assert_other(st)
        if orig_cgroups is not None:
            wait_for(lambda: harness.proc_cgroups(pid) == orig_cgroups, timeout,
                     desc="pid %d back in its cgroups %r (now %r)" % (
                         pid, orig_cgroups, harness.proc_cgroups(pid)))
    assert not [b for b in harness.qosway_cgroup_leftovers()
                if str(pid) in b[1].split()], harness.qosway_cgroup_leftovers()


def assert_deadline_split(pid, runtime_ns, period_ns):
    """Every thread SCHED_DEADLINE with the period; the reserve's slice is
    shared out among the threads (runtimes add up to it, within rounding)."""
    attrs = {t: harness.sched_attr(t) for t in harness.thread_ids(pid)}
    assert all(a["policy"] == harness.SCHED_DEADLINE and a["period"] == period_ns
               for a in attrs.values()), attrs
    total = sum(a["runtime"] for a in attrs.values())
    assert abs(total - runtime_ns) <= 1000 * len(attrs), (total, runtime_ns, attrs)


def reload_user_qosrc(comp, text):
    harness.write_user_qosrc(comp, text)
    r = comp.qosctl("--json", "reload")
    assert r.returncode == 0 and "warning" not in r.stdout, r.stdout + r.stderr


def request_granted(rc, idx, cmds, timeout=60.0):
    """Send cmds (lines) and expect granted for object idx.  Other tests on
    the machine may hold the kernel's deadline bandwidth for a moment: a
    refusal that names the kernel is retried for a while."""
    deadline = time.monotonic() + timeout
    while True:
        m = rc.mark()
        ev = rc.ask(idx, *cmds)
        names = [e for e, _ in ev]
        refused = [d for e, d in ev if e == "refused"]
        if "granted" in names and not refused:
            return m
        if refused and all("kernel" in d["message"] for d in refused) \
                and time.monotonic() < deadline:
            print("refused by the kernel, retrying: %r" % refused)
            time.sleep(1.0)
            continue
        raise AssertionError("not granted: %r" % ev)


def grant_auto(rc, policy="qos", fallback="other", period=20000, slice_=5000):
    """get "" + set_params + join 0, expect granted; returns the index."""
    idx = rc.get("")
    request_granted(rc, idx, ["params %d %s %s %d %d 0 0" % (idx, policy, fallback, period, slice_),
                              "join %d 0" % idx])
    return idx


# -- tests ------------------------------------------------------------------------

def test_params_event_right_after_get_reserve(qcomp):
    rc = RClient(qcomp)
    idx = rc.get("")
    ev = rc.wait("params", idx)
    print("params after get_reserve(\"\"): %r" % ev)
    assert ev["policy"] == OTHER and ev["period_us"] == 0 and ev["slice_us"] == 0, ev
    idx2 = rc.get("no-such-reserve")
    ev = rc.wait("params", idx2)
    assert ev["policy"] == OTHER and ev["period_us"] == 0 and ev["slice_us"] == 0, ev


def test_auto_reserve_qos_granted(qcomp):
    """Automatic reserve, qos 25% of 20 ms with fallback other, join 0:
    granted, and the whole process is SCHED_DEADLINE 5 ms / 20 ms."""
    rc = RClient(qcomp)
    tid = rc.spawn_thread()
    assert_other(rc.state())
    idx = rc.get("")
    m = request_granted(rc, idx, ["params %d qos other 20000 5000 0 0" % idx,
                                  "join %d 0" % idx])
    evs = rc.events(start=m, idx=idx)
    print("events: %r" % evs)
    assert not [e for e in evs if e[0] == "refused"], evs
    params = [d for e, d in evs if e == "params"]
    assert params and params[-1]["policy"] == QOS and params[-1]["period_us"] == 20000 \
        and params[-1]["slice_us"] == 5000 and params[-1]["fallback"] == OTHER, params
    # params reports changes: the join after set_params repeats nothing
    assert len([d for d in params if d["policy"] == QOS]) == 1, params
    st = rc.state()
    print("kernel: %r" % st)
    assert st["policy"] == harness.SCHED_DEADLINE, st
    assert set(st["thread_policies"].values()) == {harness.SCHED_DEADLINE}, st
    assert harness.sched_attr(tid)["policy"] == harness.SCHED_DEADLINE
    assert_deadline_split(rc.pid, 5_000_000, 20_000_000)
    res = reserves(qcomp)
    assert rc.pid in member_pids(res["auto-%d" % rc.pid]), res.get("auto-%d" % rc.pid)
    # destroy: everything leaves and returns to the default class
    rc.send("destroy %d" % idx)
    rc.sync()
    assert_released(qcomp, rc.pid, rc.orig_cgroups)


def test_thread_joins_qosrc_audio_reserve(qcomp):
    """One thread joins the qosrc-defined `audio` reserve; the main thread
    stays SCHED_OTHER."""
    reload_user_qosrc(qcomp, "reserve audio policy=qos period=10ms cpu=20% fallback=other\n")
    rc = RClient(qcomp)
    tid = rc.spawn_thread()
    idx = rc.get("audio")
    ev = rc.wait("params", idx)
    print("audio params: %r" % ev)
    assert ev["policy"] == QOS and ev["period_us"] == 10000 and ev["slice_us"] == 2000 \
        and ev["fallback"] == OTHER, ev
    request_granted(rc, idx, ["join %d %d" % (idx, tid)])
    a = harness.sched_attr(tid)
    main = harness.sched_attr(rc.pid)
    print("audio thread %d: %r; main: %r" % (tid, a, main))
    assert a["policy"] == harness.SCHED_DEADLINE, a
    assert a["runtime"] == 2_000_000 and a["period"] == 10_000_000, a
    assert main["policy"] == harness.SCHED_OTHER and main["nice"] == 0, main
    others = {t: p for t, p in rc.state()["thread_policies"].items() if t != tid}
    assert set(others.values()) == {harness.SCHED_OTHER}, others
    res = reserves(qcomp)["audio"]
    assert res["granted"], res
    assert rc.pid in member_pids(res), res
    # leave: the thread is back to other, the reserve stays (the user's)
    m = rc.mark()
    rc.send("leave %d %d" % (idx, tid))
    rc.sync()
    wait_for(lambda: harness.sched_attr(tid)["policy"] == harness.SCHED_OTHER,
             desc="audio thread back to SCHED_OTHER")
    assert_released(qcomp, rc.pid, rc.orig_cgroups)
    assert "audio" in reserves(qcomp)


def test_params_event_on_qosctl_reserve_change(qcomp):
    """The user changes the app's named reserve with qosctl: the app
    receives params with the new values, and the kernel follows."""
    rc = RClient(qcomp)
    idx = rc.get("game")
    request_granted(rc, idx, ["params %d qos other 20000 5000 0 0" % idx,
                              "join %d 0" % idx])
    wait_for(lambda: harness.sched_attr(rc.pid)["policy"] == harness.SCHED_DEADLINE,
             desc="SCHED_DEADLINE")
    m = rc.mark()
    r = qcomp.qosctl("reserve", "game", "policy=qos", "period=20ms", "cpu=30%")
    print("qosctl reserve: %d %s%s" % (r.returncode, r.stdout, r.stderr))
    assert r.returncode == 0, r.stdout + r.stderr
    ev = rc.wait("params", idx, start=m, pred=lambda d: d["slice_us"] == 6000)
    assert ev["policy"] == QOS and ev["period_us"] == 20000, ev
    wait_for(lambda: sum(harness.sched_attr(t)["runtime"]
                         for t in harness.thread_ids(rc.pid)) == 6_000_000,
             desc="runtime 6 ms in the kernel")
    rc.send("destroy %d" % idx)
    rc.sync()
    assert_released(qcomp, rc.pid, rc.orig_cgroups)


def test_stats_match_measured_cpu(qcomp):
    """set_feedback: stats used_us/period_us matches the thread's own CPU
    (time.thread_time_ns while it burns 20% of every 10 ms) within 10%."""
    rc = RClient(qcomp)
    tid = rc.spawn_thread()
    idx = rc.get("meter")
    m = request_granted(rc, idx, ["params %d qos other 20000 8000 0 0" % idx,
                                  "join %d %d" % (idx, tid)])
    rc.send("feedback %d 200" % idx)
    rc.wait("stats", idx, start=m, timeout=10)
    m = rc.mark()
    t0 = time.monotonic()
    rc.send("busy %d 4 20 10" % tid)
    done = rc.p.wait_event("busy_done", start=m, timeout=30)
    t1 = time.monotonic()
    rc.sync()
    measured = done["cpu_ns"] / done["wall_ns"]
    stats = [d for _, d in rc.events("stats", idx, start=m)]
    # the steady part: skip the first 0.5 s and anything after busy ended
    steady = [d for d in stats if t0 + 0.5 <= d["t"] <= t1 - 0.3]
    print("measured %.4f of a CPU; stats %r" % (measured, stats))
    assert len(steady) >= 5, stats
    # at most once per interval (200 ms), never more often than 100 ms
    ts = [d["t"] for d in stats]
    gaps = [b - a for a, b in zip(ts, ts[1:])]
    assert min(gaps) > 0.1, gaps
    reported = sum(d["used_us"] / d["period_us"] for d in steady) / len(steady)
    print("reported %.4f (mean of %d), measured %.4f" % (reported, len(steady), measured))
    assert abs(reported - measured) <= 0.10 * measured, (reported, measured)
    # feedback 0: no more stats
    rc.send("feedback %d 0" % idx)
    rc.sync()
    m = rc.mark()
    time.sleep(0.7)
    rc.sync()
    assert not rc.events("stats", idx, start=m), rc.events(start=m)


def test_paused_client_is_sent_no_stats(qcomp):
    """A client whose process the user paused cannot read: its stats wait
    until it is thawed, instead of piling up in a socket buffer that
    disconnects it once full (libwayland 1.21).  Thawed, it gets them again,
    not a burst of what was held back."""
    rc = RClient(qcomp)
    idx = rc.get("fb")
    request_granted(rc, idx, ["params %d other other 0 0 0 0" % idx, "join %d 0" % idx,
                              "feedback %d 100" % idx])
    rc.wait("stats", idx)
    r = qcomp.qosctl("set", "pid:%d" % rc.pid, "paused")
    assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: harness.cgroup2_frozen(rc.pid), desc="client frozen")
    time.sleep(1.5)
    m = rc.mark()
    r = qcomp.qosctl("set", "pid:%d" % rc.pid, "normal")
    assert r.returncode == 0, r.stdout + r.stderr
    rc.wait("stats", idx, start=m)
    time.sleep(0.5)
    times = [d["t"] for _, d in rc.events("stats", idx, start=m)]
    burst = [t for t in times if t - times[0] < 0.05]
    print("stats after the thaw: %d, %d within 50 ms of the first" % (len(times), len(burst)))
    assert len(burst) <= 2, times
    assert len(times) >= 3, times
    rc.assert_no_error()
