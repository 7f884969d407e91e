"""Kernel tests of the starvation watchdog (qos/policy/watchdog.c): a silent canary
demotes every real-time member and refuses real-time grants for the cool-down,
which outlives a crash; a stopped manager is not taken for starvation."""
import os
import signal
import subprocess
import time

import kernel_helpers
from kernel_helpers import (
    Helper, ROOT, assert_no_test_cgroup_left, force_cleanup, manager_stats, place, policy_of,
    wait_for)

pytestmark = kernel_helpers.pytestmark  # root, or each test skipped with the reason


def _feed_for(helper, seconds):
    """Feed the external canary every 200 ms for `seconds`."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        helper.ok("feed")
        time.sleep(0.2)


def test_watchdog_cooldown_outlives_a_crash(procs):
    """Killed (-9) during the cool-down after a starvation alarm, the
    manager leaves its end on the root: the next instance says so in a
    watchdog event and refuses real-time grants for the rest of it (the
    program that starved the machine could ask again at once), then grants
    them.  A clean close removes the root, and the cool-down with it."""
    args = ["--external-canary", "--watchdog-timeout", "1000", "--watchdog-cooldown", "4000"]
    p = procs(["sleep", "60"])
    h = Helper(extra=args)
    try:
        h.ok("feed")
        wait_for(h, lambda: manager_stats(h)["watchdog_alarms"] == "1", 3.5, "no watchdog alarm")
        ends = time.monotonic() + 4.0
        os.kill(h.proc.pid, signal.SIGKILL)
        h.proc.wait()
    except BaseException:
        h.close()
        raise
    try:
        h = Helper(extra=args)
        try:
            said = [e for e in h.events if e.startswith("event watchdog ")]
            assert said and "previous instance" in said[0], h.events
            assert manager_stats(h)["cooldown"] == "1"
            h.ok("reserve rt policy=qos period=100ms cpu=10% fallback=pause")
            reply = h.cmd("join rt %d" % p.pid)
            assert reply.startswith("err") and "suspended" in reply, reply
            assert policy_of(p.pid) == os.SCHED_OTHER
            _feed_for(h, ends + 0.3 - time.monotonic())
            assert manager_stats(h)["cooldown"] == "0"
            h.ok("join rt %d" % p.pid)
            assert policy_of(p.pid) == 6
            h.ok("leave %d" % p.pid)
        finally:
            h.close()
        h = Helper(extra=args)  # an alarm, then a clean close during its cool-down
        try:
            h.ok("feed")
            wait_for(h, lambda: manager_stats(h)["watchdog_alarms"] == "1", 3.5, "no second alarm")
        finally:
            h.close()
        h = Helper(extra=args)
        try:
            assert manager_stats(h)["cooldown"] == "0"
            assert not [e for e in h.events if e.startswith("event watchdog ")], h.events
        finally:
            h.close()
    finally:
        force_cleanup(ROOT)


def test_watchdog_demotes_rt_members_and_refuses_rt_grants(procs):
    """The canary is fed by the test instead of a thread: silence it and the
    manager must demote its real-time members and refuse new real-time grants
    for the cool-down, without starving anything on the machine."""
    h = Helper(extra=["--external-canary", "--watchdog-timeout", "1000",
                      "--watchdog-cooldown", "2500"])
    try:
        p = procs(["sleep", "60"])
        q = procs(["sleep", "60"])
        r = procs(["sleep", "60"])
        h.ok("reserve rt policy=qos period=100ms cpu=10% fallback=pause")
        h.ok("reserve rt2 policy=qos period=100ms cpu=10% fallback=pause")
        h.ok("reserve plain policy=other")
        h.ok("join rt %d" % p.pid)
        h.ok("join plain %d" % r.pid)
        assert policy_of(p.pid) == 6
        # Fed every 200 ms, the watchdog stays quiet over twice its timeout.
        _feed_for(h, 2.2)
        assert manager_stats(h)["watchdog_alarms"] == "0"
        assert policy_of(p.pid) == 6
        # Silence: within timeout + one housekeeping pass, the alarm.
        wait_for(h, lambda: manager_stats(h)["watchdog_alarms"] == "1", 3.5, "no watchdog alarm")
        assert any(e.startswith("event watchdog reserve=rt ") for e in h.events), h.events
        assert policy_of(p.pid) == os.SCHED_OTHER
        assert "policy=other" in h.ok("info rt")
        assert manager_stats(h)["cooldown"] == "1"
        # Every real-time reserve was demoted, empty ones too; a new one is
        # refused at its first member.
        assert "policy=other" in h.ok("info rt2")
        h.ok("feed")
        h.ok("reserve rt3 policy=qos period=100ms cpu=10% fallback=pause")
        reply = h.cmd("join rt3 %d" % q.pid)
        assert reply.startswith("err") and "suspended" in reply, reply
        assert policy_of(q.pid) == os.SCHED_OTHER
        reply = h.cmd("reserve plain policy=qos period=100ms cpu=10% fallback=pause")
        assert reply.startswith("err") and "suspended" in reply, reply
        assert policy_of(r.pid) == os.SCHED_OTHER
        # After the cool-down (canary fed again) real-time grants work again.
        _feed_for(h, 2.7)
        assert manager_stats(h)["cooldown"] == "0"
        h.ok("join rt3 %d" % q.pid)
        assert policy_of(q.pid) == 6
        assert manager_stats(h)["watchdog_alarms"] == "1"
    finally:
        h.close()
        force_cleanup(ROOT)


def test_watchdog_takes_a_stopped_manager_for_no_starvation(procs):
    """The manager and its canary thread stopped together (SIGSTOP, a
    debugger, a frozen session) are silent for longer than the timeout; at
    the resume the manager checks before its canary has run again.  Nothing
    was starved (the manager waited for no CPU), so no alarm: pinned to one
    CPU, the alarm came at every such resume (the unit test shows that a
    real silence after the resume still counts)."""
    h = Helper()
    try:
        p = procs(["sleep", "60"])
        h.ok("reserve rt policy=qos period=100ms cpu=10% fallback=pause")
        h.ok("join rt %d" % p.pid)
        subprocess.run(["taskset", "-a", "-p", "-c", "0", str(h.proc.pid)], check=True,
                       stdout=subprocess.DEVNULL)
        time.sleep(1.2)
        os.kill(h.proc.pid, signal.SIGSTOP)
        time.sleep(7)  # past the 5 s timeout
        os.kill(h.proc.pid, signal.SIGCONT)
        time.sleep(1.2)
        assert manager_stats(h)["watchdog_alarms"] == "0", h.events[-3:]
        assert policy_of(p.pid) == 6
    finally:
        h.close()
        force_cleanup(ROOT)


def test_watchdog_demotes_fifo_and_rr_members_and_refuses_their_grants(rt_bandwidth, procs):
    """As above for the static-priority classes: at the alarm a fifo and an
    rr member are demoted, and in the cool-down neither class is granted,
    to a first member or to a populated reserve changed to it."""
    h = Helper(extra=["--external-canary", "--watchdog-timeout", "1000"])
    try:
        f, r, q, o = (procs(["sleep", "60"]) for _ in range(4))
        limit = "priority=10 period=100ms cpu=10% fallback=other"
        place(h, "f policy=fifo " + limit, f.pid)
        place(h, "r policy=rr " + limit, r.pid)
        place(h, "plain policy=other", o.pid)
        assert (policy_of(f.pid), policy_of(r.pid)) == (os.SCHED_FIFO, os.SCHED_RR)
        wait_for(h, lambda: manager_stats(h)["watchdog_alarms"] == "1", 3.5, "no watchdog alarm")
        assert (policy_of(f.pid), policy_of(r.pid)) == (os.SCHED_OTHER, os.SCHED_OTHER)
        assert "policy=other" in h.ok("info f") and "policy=other" in h.ok("info r")
        h.ok("feed")
        for policy in ("fifo", "rr"):
            h.ok("reserve %s2 policy=%s %s" % (policy, policy, limit))
            reply = h.cmd("join %s2 %d" % (policy, q.pid))
            assert reply.startswith("err") and "suspended" in reply, reply
            assert policy_of(q.pid) == os.SCHED_OTHER
            reply = h.cmd("reserve plain policy=%s %s" % (policy, limit))
            assert reply.startswith("err") and "suspended" in reply, reply
            assert policy_of(o.pid) == os.SCHED_OTHER
        assert manager_stats(h)["cooldown"] == "1"
    finally:
        h.close()
        force_cleanup(ROOT)


def test_zz_no_test_cgroup_left():
    assert_no_test_cgroup_left()
