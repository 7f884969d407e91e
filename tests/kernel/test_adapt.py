"""Kernel tests for adaptive reserves (cpu=auto, adapt=yes), idle release
and period=vblank, with the real manager (qos-helper), real SCHED_DEADLINE
members and real cgroups.  Pass/fail rests on states and ranges that hold
on a loaded machine: a settled slice between what the task was measured to
use and twice that, a slice grown past what it was, an admission that
holds, never a time.
"""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_helpers import (  # noqa: E402
    cpu_ns, info_fields, place, policy_of, pytestmark, running_helper, wait_for)

assert pytestmark  # skipped with kernel_helpers' printed reason when not root

SCHED_OTHER = 0
SCHED_DEADLINE = 6

# A periodic task: at each PERIOD boundary it runs the current level's ms of
# CPU (its own clock, so preemption does not change the work), then sleeps
# to the next boundary; a job that ends late skips the boundaries it missed
# rather than running two jobs in one period.  At level 0 it sleeps.
# SIGUSR1 moves to the next level.  One thread: a qos reserve's slice is
# split over its threads, and a second one would halve the first's runtime.
DUTY = r"""
import signal, sys, time
period = float(sys.argv[1]) / 1000
levels = [float(a) / 1000 for a in sys.argv[2:]]
busy = [levels.pop(0)]
signal.signal(signal.SIGUSR1, lambda *_: busy.__setitem__(0, levels.pop(0)))
print("ready", flush=True)
start = time.monotonic()
while True:
    if not busy[0]:
        time.sleep(0.1)  # idle: no wake-up a period
        continue
    end = time.thread_time() + busy[0]
    while time.thread_time() < end:
        pass
    now = time.monotonic()
    k = int((now - start) / period) + 1  # the next boundary: a late job is not made up
    time.sleep(max(0.0, start + k * period - now))
"""


def duty(procs, period_ms, *levels_ms):
    w = procs([sys.executable, "-c", DUTY, str(period_ms)] + [str(v) for v in levels_ms],
              stdout=subprocess.PIPE, text=True)
    assert w.stdout.readline().strip() == "ready"
    return w


def next_level(w):
    os.kill(w.pid, signal.SIGUSR1)


def events_of(helper, kind, name, since=0):
    helper.ok("sync")
    return [e for e in helper.events[since:] if e.startswith("event %s reserve=%s " % (kind, name))]


def per_period_us(pid, period_ms, seconds):
    """What pid runs per period, by the test's own measurement of its CPU time."""
    a, t0 = cpu_ns(pid), time.monotonic()
    time.sleep(seconds)
    b, t1 = cpu_ns(pid), time.monotonic()
    return (b - a) / 1000 / ((t1 - t0) * 1000 / period_ms)


def test_auto_slice_settles_between_use_and_twice_it(procs):
    with running_helper() as h:
        w = duty(procs, 20, 3, 1)
        place(h, "auto policy=qos period=20ms cpu=auto fallback=other", w.pid)
        f = info_fields(h, "auto")
        assert f["slice_us"] == "10000" and f["adapt_slice"] == "10000", f  # provisional
        measured = per_period_us(w.pid, 20, 0.4)
        settled = wait_for(h, lambda: events_of(h, "params", "auto"), 20,
                           "cpu=auto never settled")
        f = info_fields(h, "auto")
        slice_us = int(f["slice_us"])
        diag = "measured %.0fus per period, %s, %s" % (measured, settled, f)
        assert "adapted: slice settled at" in settled[0], diag
        assert measured <= slice_us <= 2 * measured, diag
        assert int(f["adapt_slice"]) == slice_us and f["granted"] == "1", diag
        assert policy_of(w.pid) in (SCHED_DEADLINE, SCHED_OTHER), diag
        # Settled without adapt=yes: it stays, whatever the task does now.
        next_level(w)
        time.sleep(1.0)
        assert info_fields(h, "auto")["slice_us"] == str(slice_us)


def test_adaptive_reserve_grows_after_overruns_and_shrinks_after_under_use(procs):
    with running_helper() as h:
        w = duty(procs, 20, 6, 0.5)
        place(h, "grow policy=qos period=20ms slice=2ms adapt=yes fallback=other", w.pid)
        # A loaded machine may first run the member too little to need its
        # 2 ms (a shrink, or a growth to less): wait for it to pass them.
        grown = wait_for(h, lambda: [e for e in events_of(h, "params", "grow")
                                     if "grown to" in e] and
                         int(info_fields(h, "grow")["slice_us"]) > 2000, 20,
                         "never grew past its 2 ms")
        f = info_fields(h, "grow")
        assert int(f["slice_us"]) > 2000 and f["granted"] == "1", (grown, f)
        big = int(f["slice_us"])
        mark = len(h.events)
        next_level(w)
        shrunk = wait_for(h, lambda: [e for e in events_of(h, "params", "grow", mark)
                                      if "shrunk to" in e], 20, "never shrank")
        f = info_fields(h, "grow")
        assert int(f["slice_us"]) < big, (shrunk, f)
        # Within the bounds it has (none given: at least the floor, at most the period).
        assert 100 <= int(f["slice_us"]) <= 20000, f


# A task that runs BASE ms of CPU at each PERIOD boundary and BURST ms at
# every EVERY-th (a video's key frames), like DUTY otherwise.
BURSTY = r"""
import sys, time
period, base, burst = (float(a) / 1000 for a in sys.argv[1:4])
every = int(sys.argv[4])
print("ready", flush=True)
start = time.monotonic()
while True:
    k = int((time.monotonic() - start) / period)
    end = time.thread_time() + (burst if k % every == 0 else base)
    while time.thread_time() < end:
        pass
    now = time.monotonic()
    time.sleep(max(0.0, start + (int((now - start) / period) + 1) * period - now))
"""


def test_overruns_a_few_periods_apart_grow_the_slice(procs):
    """Most periods fit the slice, one in six bursts past it (a video's key
    frames): 2 overruns in 16 periods grow the slice (2 in 4, the rule
    before, never did), and it is not shrunk back to where it started
    between bursts, which the window of 16 periods the shrink rule reads
    mostly misses.  How far it grows depends on how the machine's load
    spreads a burst over periods (a loaded run shrank a slice grown past
    8 ms to 6.9 ms, what a burst period then used): only the direction is
    checked."""
    with running_helper() as h:
        w = procs([sys.executable, "-c", BURSTY, "20", "1", "8", "6"],
                  stdout=subprocess.PIPE, text=True)
        assert w.stdout.readline().strip() == "ready"
        place(h, "bursty policy=qos period=20ms slice=3ms adapt=yes fallback=other", w.pid)
        wait_for(h, lambda: int(info_fields(h, "bursty")["slice_us"]) >= 3750, 20,
                 "never grew for its bursts: %s" % events_of(h, "params", "bursty"))
        time.sleep(3)  # 150 periods, 25 bursts
        assert int(info_fields(h, "bursty")["slice_us"]) > 3000, events_of(h, "params", "bursty")


def test_growth_admission_refuses_keeps_the_slice(procs):
    """Adaptation never takes another reserve's grant: refused growth keeps
    the slice and says why."""
    with running_helper(extra=("--ncpus", "1")) as h:
        holder = duty(procs, 20, 0)
        place(h, "holder policy=qos period=20ms slice=15ms fallback=other", holder.pid)
        w = duty(procs, 20, 8)
        place(h, "greedy policy=qos period=20ms slice=3ms adapt=yes fallback=other", w.pid)
        refused = wait_for(h, lambda: events_of(h, "refused", "greedy"), 20,
                           "growth never refused")
        assert "adaptation asked for a slice" in refused[0] and "it keeps 3.0ms" in refused[0]
        assert info_fields(h, "greedy")["slice_us"] == "3000"
        assert info_fields(h, "holder")["granted"] == "1"


def test_idle_reserve_releases_and_wakes_into_its_fallback(procs):
    with running_helper(extra=("--ncpus", "1")) as h:
        a = duty(procs, 20, 0, 3)
        place(h, "sleepy policy=qos period=20ms slice=12ms idle-release=10 fallback=other", a.pid)
        b = duty(procs, 20, 0)
        h.ok("reserve other policy=qos period=20ms slice=12ms fallback=other")
        reply = h.cmd("join other %d" % b.pid)
        assert reply.startswith("err") and "[capacity]" in reply, reply
        released = wait_for(h, lambda: events_of(h, "released", "sleepy"), 10, "never released")
        f = info_fields(h, "sleepy")
        assert f["released"] == "1" and f["granted"] == "0", (released, f)
        # Shown with its own parameters, and its member at the fallback.
        assert f["slice_us"] == "12000" and "policy=qos" in h.ok("info sleepy"), f
        assert policy_of(a.pid) == SCHED_OTHER
        h.ok("join other %d" % b.pid)
        assert info_fields(h, "other")["granted"] == "1"
        # Waking into no capacity: the fallback, and a refusal saying why.
        mark = len(h.events)
        next_level(a)
        refused = wait_for(h, lambda: events_of(h, "refused", "sleepy", mark), 10,
                           "waking was never refused")
        assert "needs" in refused[0], refused
        f = info_fields(h, "sleepy")
        assert f["released"] == "1" and f["granted"] == "0", f
        assert policy_of(a.pid) == SCHED_OTHER
        assert info_fields(h, "other")["granted"] == "1"
        # The capacity back: granted again at a later pass.
        h.ok("leave %d" % b.pid)
        wait_for(h, lambda: events_of(h, "granted", "sleepy", mark), 10,
                 "never granted again")
        f = info_fields(h, "sleepy")
        assert f["released"] == "0" and f["granted"] == "1", f


def test_vblank_sets_the_period_and_keeps_the_share(procs):
    with running_helper() as h:
        w = duty(procs, 8, 0.5)
        place(h, "frame policy=qos period=vblank slice=4ms fallback=other", w.pid)
        assert info_fields(h, "frame")["period_us"] == "16667"
        mark = len(h.events)
        h.ok("vblank frame -1000 8333")
        f = info_fields(h, "frame")
        assert f["period_us"] == "8333" and f["granted"] == "1", f
        assert abs(int(f["slice_us"]) - 2000) <= 1, f
        changed = events_of(h, "params", "frame", mark)
        assert len(changed) == 1 and "refresh" in changed[0], changed
        # The same refresh again changes nothing, wherever the phase.
        for off in (-500, -9000, 3000):
            h.ok("vblank frame %d 8333" % off)
        assert len(events_of(h, "params", "frame", mark)) == 1
        assert info_fields(h, "frame")["period_us"] == "8333"
        # Bad calls are refused and change nothing.
        h.ok("reserve plain policy=qos period=20ms slice=2ms")
        assert "not period=vblank" in h.cmd("vblank plain 0 8333")
        assert "outside 1ms..10s" in h.cmd("vblank frame 0 10")
        assert "no reserve named" in h.cmd("vblank nosuch 0 8333")
        assert info_fields(h, "frame")["period_us"] == "8333"


def test_work_reports_size_the_slice_before_measured_use(procs):
    """A member that sleeps, whose reports say each frame's work needs more
    than the slice: the reports win over the measured use."""
    with running_helper() as h:
        w = duty(procs, 20, 0)
        place(h, "told policy=qos period=20ms slice=2ms adapt=yes fallback=other", w.pid)
        for _ in range(6):
            h.ok("work told 20000 8000")
        grown = wait_for(h, lambda: [e for e in events_of(h, "params", "told")
                                     if "grown to" in e], 10, "reports never grew the slice")
        assert "reported work" in grown[0], grown
        assert int(info_fields(h, "told")["slice_us"]) > 2000


def test_work_reports_go_to_adaptive_reserves_only(procs):
    with running_helper() as h:
        h.ok("reserve fixed policy=qos period=20ms slice=2ms")
        h.ok("reserve adaptive policy=qos period=20ms slice=2ms adapt=yes")
        assert h.cmd("work fixed 16667 3000").startswith("err")
        assert h.cmd("work adaptive 0 3000").startswith("err")
        h.ok("work adaptive 16667 3000")
