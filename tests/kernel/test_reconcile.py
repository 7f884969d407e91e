"""Kernel tests of start-up reconciliation after a crash (qos/manager/reconcile.c): the
next instance thaws what was left, sends members back where their origin
record says with their nice level and RLIMIT_RTTIME, and removes the groups."""
import os
import resource
import subprocess
import sys
import time

import pytest

import kernel_helpers
from kernel_helpers import (
    CG, Helper, ROOT, THREAD_ON_DEMAND, assert_no_test_cgroup_left, cgroup_of,
    check_rttime_restored, crash_after, force_cleanup, frozen, kill9, kill9_frozen,
    kill_grandchild, move_to, place, policy_of, runs, thread_owner, wait_for)

pytestmark = kernel_helpers.pytestmark  # root, or each test skipped with the reason


def test_kill9_manager_next_instance_thaws(procs):
    p, v2 = kill9_frozen(procs, guardian=False)
    try:
        time.sleep(0.3)
        assert frozen(v2), "nothing should have thawed it without a guardian"
        h = Helper()
        try:
            assert not os.path.exists(v2), "reconcile should remove the stale group"
            assert runs(p.pid)
        finally:
            h.close()
    finally:
        force_cleanup(ROOT)


def forking_shell(procs, dirs, then):
    """A shell in the cgroup `dirs` at nice 3 that, told "go", starts a
    child (sleep), prints its pid and runs `then`."""
    p = procs(["sh", "-c", "read x; sleep 60 & echo $!; " + then], stdin=subprocess.PIPE,
              stdout=subprocess.PIPE, text=True)
    move_to(dirs, p.pid)
    os.setpriority(os.PRIO_PROCESS, p.pid, 3)
    return p


def tell(p, line):
    """Writes a line to p and returns the number it answers."""
    p.stdin.write(line + "\n")
    p.stdin.flush()
    return int(p.stdout.readline())


def test_kill9_next_instance_returns_members_where_they_came_from(procs, origin):
    """Reconciliation after a crash sends a member back to the cgroups it
    came from (not to the top of the tree) with the nice level it had, and a
    child born in the reserve goes where its parent came from.  The origin
    is recorded on the group before the move (qos/kernel/journal.h)."""
    rel, dirs = origin
    p = forking_shell(procs, dirs, "wait")
    h = Helper(guardian=False)
    try:
        place(h, "home policy=other nice=-5 inherit=yes", p.pid)
        v2, _ = h.path("home")
        assert os.getpriority(os.PRIO_PROCESS, p.pid) == -5
        child = tell(p, "go")
        assert cgroup_of(child)["v2"] == cgroup_of(p.pid)["v2"] != rel
        kill9(h)
    except BaseException:
        h.close()
        raise
    try:
        assert cgroup_of(p.pid)["v2"].endswith("/" + ROOT + "/home"), "the crash left it there"
        Helper().close()
        assert not os.path.exists(v2), "reconcile should remove the group"
        for pid in (p.pid, child):
            assert cgroup_of(pid) == {"v2": rel, "cpu": rel}, (pid, cgroup_of(pid))
            assert os.getpriority(os.PRIO_PROCESS, pid) == 3, pid
    finally:
        kill_grandchild(child)
        force_cleanup(ROOT)


def test_kill9_adopted_child_of_exited_member_returns_to_its_origin(procs, origin):
    """An inheriting child outlives the member it was born to; the member's
    record went with it, so the child carries a record of its own and a
    crash still sends it where its parent came from."""
    rel, dirs = origin
    p = forking_shell(procs, dirs, "read y")
    h = Helper(guardian=False)
    child = None
    try:
        place(h, "home policy=other nice=-5 inherit=yes", p.pid)
        v2, _ = h.path("home")
        child = tell(p, "go")
        wait_for(h, lambda: "members=2" in h.ok("info home"), 3, "the child was not adopted")
        p.stdin.write("bye\n")
        p.stdin.flush()
        p.wait()
        wait_for(h, lambda: "members=1" in h.ok("info home"), 3, "the exit was not seen")
        assert [n for n in os.listxattr(v2) if n.startswith("user.qosway.")] == \
            ["user.qosway.%d" % child]
        kill9(h)
    except BaseException:
        h.close()
        if child:
            kill_grandchild(child)
        raise
    try:
        Helper().close()
        assert not os.path.exists(v2)
        assert cgroup_of(child) == {"v2": rel, "cpu": rel}
        assert os.getpriority(os.PRIO_PROCESS, child) == 3
    finally:
        kill_grandchild(child)
        force_cleanup(ROOT)


def thread_cpu_cgroup(pid, tid):
    with open("/proc/%d/task/%d/cgroup" % (pid, tid)) as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            if "cpu" in ctrls.split(","):
                return path
    return None


@pytest.mark.skipif(os.path.exists(CG + "/cgroup.controllers"),
                    reason="only the hybrid layout moves single threads (v1 cpu tree)")
def test_kill9_thread_member_returns_to_its_origin(procs, origin):
    """A thread member (moved alone, in the v1 cpu tree) has a record of its
    own, <pid>.<tid>, and goes back to its cpu group at its nice level."""
    rel, dirs = origin
    p = procs([sys.executable, THREAD_ON_DEMAND], stdin=subprocess.PIPE,
              stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    move_to(dirs, p.pid)
    tid = tell(p, "")
    os.setpriority(os.PRIO_PROCESS, tid, 2)
    def setup(h):
        h.ok("reserve th policy=other nice=-3")
        h.ok("join th %d %d" % (p.pid, tid))
        assert thread_cpu_cgroup(p.pid, tid).endswith("/th")
        assert thread_cpu_cgroup(p.pid, p.pid) == rel
        assert "user.qosway.%d.%d" % (p.pid, tid) in os.listxattr(h.path("th")[0])
        return h.path("th")[1]
    cpu = crash_after(setup)
    try:
        Helper().close()
        assert not os.path.exists(cpu)
        assert thread_cpu_cgroup(p.pid, tid) == rel
        assert os.getpriority(os.PRIO_PROCESS, tid) == 2
    finally:
        force_cleanup(ROOT)


def crash_with_bounded_rttime(pid, tid, setup):
    """setup(helper) makes tid fifo, which bounds pid's RLIMIT_RTTIME; the
    manager (without a guardian) is killed, and the next instance reconciles.
    Returns (limit before, the bound, the next instance's events)."""
    before = resource.prlimit(pid, resource.RLIMIT_RTTIME)

    def bound(h):
        setup(h)
        assert policy_of(tid) == os.SCHED_FIFO
        return resource.prlimit(pid, resource.RLIMIT_RTTIME)
    bounded = crash_after(bound)
    assert bounded == (5000000, 5000000) != before
    assert policy_of(tid) == os.SCHED_FIFO
    h = Helper()
    h.close()
    assert policy_of(tid) == os.SCHED_OTHER
    return before, bounded, h.events


def test_kill9_next_instance_restores_real_time_members(rt_bandwidth, procs, origin):
    """A fifo member left behind by a crash is back to time sharing, with
    the RLIMIT_RTTIME it had before the manager bounded it, in its cgroup."""
    rel, dirs = origin
    p = procs(["sleep", "60"])
    move_to(dirs, p.pid)
    try:
        before, bounded, events = crash_with_bounded_rttime(p.pid, p.pid, lambda h: place(
            h, "rt policy=fifo priority=10 period=100ms cpu=50% fallback=other", p.pid))
        check_rttime_restored(p.pid, before, bounded, events)
        assert cgroup_of(p.pid) == {"v2": rel, "cpu": rel}
    finally:
        force_cleanup(ROOT)


@pytest.mark.parametrize("fold", [False, True])
def test_kill9_next_instance_restores_rttime_of_a_thread_member(rt_bandwidth, procs, fold):
    """A fifo thread member bounded its process's RLIMIT_RTTIME; after a
    crash the next instance gives the limit back (or says it cannot), as
    for a process member.  With fold, the process joined after its thread
    and took the thread over: its record must hold the limit from before
    the bound, not the bound (then the crash left it looking like the
    process's own)."""
    owner, (tid,) = thread_owner(procs)

    def setup(h):
        h.ok("reserve rtt policy=fifo priority=10 period=100ms cpu=20% fallback=other")
        h.ok("join rtt %d %d" % (owner.pid, tid))
        if fold:
            h.ok("join rtt %d" % owner.pid)
    try:
        before, bounded, events = crash_with_bounded_rttime(owner.pid, tid, setup)
        check_rttime_restored(owner.pid, before, bounded, events)
    finally:
        force_cleanup(ROOT)


def test_kill9_damaged_origin_record_sends_member_to_the_top(procs, origin):
    """A record that cannot be parsed is not trusted: the member goes to the
    top of the tree, the group is still removed and the manager runs on."""
    rel, dirs = origin
    p = procs(["sleep", "60"])
    move_to(dirs, p.pid)
    h = Helper(guardian=False)
    try:
        place(h, "home policy=other", p.pid)
        v2, _ = h.path("home")
        name = "user.qosway.%d" % p.pid
        assert b"v2=%s\n" % rel.encode() in os.getxattr(v2, name)
        os.setxattr(v2, name, b"qosway-journal 1\nstart=1\nv2=/../x\n")
        kill9(h)
    except BaseException:
        h.close()
        raise
    try:
        h = Helper()
        try:
            h.ok("sync")
        finally:
            h.close()
        assert not os.path.exists(v2)
        assert cgroup_of(p.pid) == {"v2": "/", "cpu": "/"}
    finally:
        force_cleanup(ROOT)


def test_zz_no_test_cgroup_left():
    assert_no_test_cgroup_left()
