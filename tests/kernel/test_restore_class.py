"""A member gets its own scheduling class back when it leaves, or after a
crash from the next instance (root; skipped otherwise with the reason
kernel_helpers prints): SCHED_BATCH and SCHED_IDLE stay themselves rather
than becoming SCHED_OTHER, a fifo process gets its priority back, and each
thread of a process gets its own nice, not the main thread's."""
import os
import resource
import time

import subprocess
import sys

import pytest

from kernel_helpers import (
    CG, ROOT, THREAD_ON_DEMAND, Helper, assert_no_test_cgroup_left, cgroup_of, crash_after,
    force_cleanup, nice_of, place, policy_of, pytestmark, thread_member_forks, thread_owner)

assert pytestmark


def sleeper(procs, *prefix):
    """sleep 30 started through prefix (chrt, nice), once it runs sleep."""
    p = procs(list(prefix) + ["sleep", "30"])
    give_up = time.monotonic() + 5
    while os.readlink("/proc/%d/exe" % p.pid).split("/")[-1] != "sleep":
        assert time.monotonic() < give_up, "%s never ran sleep" % prefix[0]
        time.sleep(0.005)
    return p


def batch_and_idle(procs):
    """A SCHED_BATCH sleeper at nice 3 and a SCHED_IDLE one."""
    b = sleeper(procs, "chrt", "-b", "0", "nice", "-n", "3")
    i = sleeper(procs, "chrt", "-i", "0")
    assert policy_of(b.pid) == os.SCHED_BATCH and nice_of(b.pid) == 3
    assert policy_of(i.pid) == os.SCHED_IDLE
    return b, i


def assert_batch_and_idle_back(b, i):
    assert policy_of(b.pid) == os.SCHED_BATCH, policy_of(b.pid)
    assert nice_of(b.pid) == 3
    assert policy_of(i.pid) == os.SCHED_IDLE, policy_of(i.pid)


def test_leaving_gives_back_batch_and_idle(helper, procs):
    b, i = batch_and_idle(procs)
    helper.ok("reserve on policy=other nice=-2")
    for p in (b, i):
        helper.ok("join on %d" % p.pid)
        assert policy_of(p.pid) == os.SCHED_OTHER and nice_of(p.pid) == -2
    for p in (b, i):
        helper.ok("leave %d" % p.pid)
    assert_batch_and_idle_back(b, i)


def test_leaving_gives_back_fifo_and_its_priority(rt_bandwidth, helper, procs):
    """... and its nice, which sched_getattr does not report for fifo.  Its
    own RLIMIT_RTTIME (2 s) is under the manager's bound, which leaves it
    as it was."""
    f = sleeper(procs, "prlimit", "--rttime=2000000:2000000", "nice", "-n", "5", "chrt", "-f",
                "7")
    assert policy_of(f.pid) == os.SCHED_FIFO and nice_of(f.pid) == 5
    place(helper, "rt policy=fifo priority=20 period=100ms cpu=50% fallback=other", f.pid)
    assert os.sched_getparam(f.pid).sched_priority == 20
    helper.ok("leave %d" % f.pid)
    assert policy_of(f.pid) == os.SCHED_FIFO
    assert os.sched_getparam(f.pid).sched_priority == 7
    assert nice_of(f.pid) == 5


def test_leaving_under_a_bound_that_stays_gives_back_no_real_time(rt_bandwidth, helper, procs):
    """A fifo process with no RLIMIT_RTTIME of its own joins a fifo reserve,
    which bounds it (5 s), and leaves.  Raising a hard limit back takes
    CAP_SYS_RESOURCE (a desktop compositor never has it): where the bound
    stays, fifo back would get the process killed once it ran 5 s without
    sleeping, as it never was before (a busy one was, 5 s after leaving).
    It is given back as time-sharing at its nice, and an event says why;
    where the limit could be raised back, it gets fifo 7 back."""
    f = sleeper(procs, "nice", "-n", "5", "chrt", "-f", "7")
    before = resource.prlimit(f.pid, resource.RLIMIT_RTTIME)
    place(helper, "rt policy=fifo priority=20 period=100ms cpu=50% fallback=other", f.pid)
    assert resource.prlimit(f.pid, resource.RLIMIT_RTTIME) != before
    helper.ok("leave %d" % f.pid)
    assert nice_of(f.pid) == 5
    if resource.prlimit(f.pid, resource.RLIMIT_RTTIME) == before:
        assert policy_of(f.pid) == os.SCHED_FIFO
        assert os.sched_getparam(f.pid).sched_priority == 7
        return
    assert policy_of(f.pid) == os.SCHED_OTHER
    assert any("given back as time-sharing" in e and "RLIMIT_RTTIME" in e
               for e in helper.events), helper.events[-3:]


def test_each_thread_gets_its_own_nice_back(helper, procs):
    owner, tids = thread_owner(procs, 2)
    os.setpriority(os.PRIO_PROCESS, owner.pid, 1)
    os.setpriority(os.PRIO_PROCESS, tids[0], 6)
    os.setpriority(os.PRIO_PROCESS, tids[1], 9)
    helper.ok("reserve on policy=other nice=-2")
    helper.ok("join on %d" % owner.pid)
    assert [nice_of(t) for t in [owner.pid] + tids] == [-2, -2, -2]
    helper.ok("leave %d" % owner.pid)
    assert [nice_of(t) for t in [owner.pid] + tids] == [1, 6, 9]


def joined_to_on(h, *pids):
    h.ok("reserve on policy=other nice=-2")
    for pid in pids:
        h.ok("join on %d" % pid)


def test_kill9_next_instance_gives_each_thread_its_own_nice_and_class(rt_bandwidth, procs):
    """The record lists each thread as it was at the join: after a crash
    every thread gets its own nice back, and a fifo process all of whose
    threads were fifo has them all fifo again; a thread started after the
    join gets the main thread's nice and no real-time class."""
    owner, tids = thread_owner(procs, 2)
    os.setpriority(os.PRIO_PROCESS, owner.pid, 1)
    os.setpriority(os.PRIO_PROCESS, tids[0], 6)
    os.setpriority(os.PRIO_PROCESS, tids[1], 9)
    f = procs(["chrt", "-f", "7", sys.executable, THREAD_ON_DEMAND], stdin=subprocess.PIPE,
              stdout=subprocess.PIPE, text=True)
    assert f.stdout.readline().strip() == "ready"
    f_worker = new_thread(f)
    assert policy_of(f_worker) == os.SCHED_FIFO

    def setup(h):
        joined_to_on(h, owner.pid, f.pid)
        return new_thread(f)
    f_later = crash_after(setup)
    try:
        Helper().close()
        assert [nice_of(t) for t in [owner.pid] + tids] == [1, 6, 9]
        assert policy_of(f.pid) == policy_of(f_worker) == os.SCHED_FIFO
        assert os.sched_getparam(f_worker).sched_priority == 7
        assert policy_of(f_later) == os.SCHED_OTHER
    finally:
        force_cleanup(ROOT)


def test_kill9_thread_past_the_record_cap_gets_its_own_class_back(procs):
    """The record has lines for QOS_JOURNAL_THREADS (64) threads, spent only
    on threads whose class differs from what an unlisted thread gets back:
    of a process with 70 threads at its own nice, the one at nice 6 and
    the SCHED_BATCH one, started last, get theirs back after a crash
    (listing every thread, the record had no room left for them)."""
    owner, tids = thread_owner(procs, 70)
    os.setpriority(os.PRIO_PROCESS, owner.pid, 1)
    for t in tids:
        os.setpriority(os.PRIO_PROCESS, t, 1)
    os.setpriority(os.PRIO_PROCESS, tids[-1], 6)
    os.sched_setscheduler(tids[-2], os.SCHED_BATCH, os.sched_param(0))
    crash_after(lambda h: joined_to_on(h, owner.pid))
    try:
        assert nice_of(tids[-1]) == -2
        Helper().close()
        assert nice_of(tids[-1]) == 6
        assert policy_of(tids[-2]) == os.SCHED_BATCH and nice_of(tids[-2]) == 1
        assert [nice_of(t) for t in [owner.pid] + tids[:-1]] == [1] * 70
        assert policy_of(owner.pid) == policy_of(tids[0]) == os.SCHED_OTHER
    finally:
        force_cleanup(ROOT)


def test_kill9_next_instance_gives_back_batch_and_idle(procs):
    b, i = batch_and_idle(procs)
    crash_after(lambda h: joined_to_on(h, b.pid, i.pid))
    try:
        assert policy_of(b.pid) == os.SCHED_OTHER
        Helper().close()
        assert_batch_and_idle_back(b, i)
    finally:
        force_cleanup(ROOT)


def test_kill9_stranger_lent_a_members_record_gets_only_its_nice(procs):
    """A task found in a group after a crash with no record of its own or
    of an ancestor (written there by someone else while no manager ran) is
    sent where a member came from, with the member's nice but not its
    class: the member was SCHED_BATCH at nice 3, the stranger stays
    SCHED_OTHER."""
    b = sleeper(procs, "chrt", "-b", "0", "nice", "-n", "3")
    stranger = sleeper(procs)
    home = cgroup_of(b.pid)
    assert cgroup_of(stranger.pid) == home

    def setup(h):
        joined_to_on(h, b.pid)
        return h.path("on")
    for group in crash_after(setup):
        with open(group + "/cgroup.procs", "w") as f:
            f.write(str(stranger.pid))
    try:
        assert cgroup_of(stranger.pid) != home
        Helper().close()
        assert cgroup_of(stranger.pid) == home == cgroup_of(b.pid)
        assert nice_of(stranger.pid) == 3
        assert policy_of(stranger.pid) == os.SCHED_OTHER
        assert policy_of(b.pid) == os.SCHED_BATCH and nice_of(b.pid) == 3
    finally:
        force_cleanup(ROOT)


def test_kill9_under_a_bound_that_stays_gives_back_no_real_time(rt_bandwidth, procs):
    """As on a leave, after a crash: the next instance gives a fifo process
    whose RLIMIT_RTTIME bound it cannot lift time-sharing, not fifo, and
    says why."""
    f = sleeper(procs, "nice", "-n", "5", "chrt", "-f", "7")
    before = resource.prlimit(f.pid, resource.RLIMIT_RTTIME)
    crash_after(lambda h: place(
        h, "rt policy=fifo priority=20 period=100ms cpu=50% fallback=other", f.pid))
    try:
        h = Helper()
        h.close()
        assert nice_of(f.pid) == 5
        if resource.prlimit(f.pid, resource.RLIMIT_RTTIME) == before:
            assert policy_of(f.pid) == os.SCHED_FIFO
            return
        assert policy_of(f.pid) == os.SCHED_OTHER
        assert any("given back as time-sharing" in e for e in h.events), h.events[-3:]
    finally:
        force_cleanup(ROOT)


def fifo_process_with_a_time_sharing_thread(procs):
    """A process started at fifo 7 (no reset-on-fork) whose one extra thread
    was made SCHED_OTHER at nice 4: (process, that thread's tid).  Its own
    RLIMIT_RTTIME (2 s) is under the manager's bound, so a fifo reserve
    leaves it as it was, and leaving one may give real time back."""
    p = procs(["prlimit", "--rttime=2000000:2000000", "chrt", "-f", "7", sys.executable,
               THREAD_ON_DEMAND], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    p.stdin.write("go\n")
    p.stdin.flush()
    tid = int(p.stdout.readline())
    os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
    os.setpriority(os.PRIO_PROCESS, tid, 4)
    assert policy_of(p.pid) == os.SCHED_FIFO and policy_of(tid) == os.SCHED_OTHER
    return p, tid


def new_thread(p):
    p.stdin.write("go\n")
    p.stdin.flush()
    return int(p.stdout.readline())


def test_moving_between_reserves_passes_home_as_time_sharing(rt_bandwidth, helper, procs):
    """Moved from a fifo reserve to an other one, a fifo process is not
    given its own fifo class on the way (fifo, it could not enter a group
    without real-time runtime, and a failed join left its threads fifo);
    leaving at last, the thread it had at fifo 7 is fifo 7 again, the one
    at other stays other, and a thread started meanwhile gets no real-time
    class it never had."""
    p, tid = fifo_process_with_a_time_sharing_thread(procs)
    place(helper, "rt policy=fifo priority=20 period=100ms cpu=50% fallback=other", p.pid)
    assert policy_of(tid) == os.SCHED_FIFO
    place(helper, "ts policy=other nice=2", p.pid)
    assert policy_of(p.pid) == os.SCHED_OTHER and policy_of(tid) == os.SCHED_OTHER
    assert "members=0" in helper.ok("info rt")
    later = new_thread(p)
    helper.ok("leave %d" % p.pid)
    assert policy_of(p.pid) == os.SCHED_FIFO
    assert os.sched_getparam(p.pid).sched_priority == 7
    assert policy_of(tid) == os.SCHED_OTHER and nice_of(tid) == 4
    assert policy_of(later) == os.SCHED_OTHER


def test_kill9_next_instance_gives_real_time_back_to_its_own_thread_only(rt_bandwidth, procs):
    """The record holds the main thread's class: after a crash that thread
    is fifo 7 again; its time-sharing sibling is not made fifo."""
    p, tid = fifo_process_with_a_time_sharing_thread(procs)
    crash_after(lambda h: joined_to_on(h, p.pid))
    try:
        Helper().close()
        assert policy_of(p.pid) == os.SCHED_FIFO
        assert os.sched_getparam(p.pid).sched_priority == 7
        assert policy_of(tid) == os.SCHED_OTHER
    finally:
        force_cleanup(ROOT)


def joins_elsewhere_and_leaves(helper, pid):
    helper.ok("reserve else policy=other nice=3")
    helper.ok("join else %d" % pid)
    helper.ok("leave %d" % pid)


def test_child_joining_before_the_pass_remembers_where_its_parent_came_from(helper, procs):
    """A member's child the pass has not yet seen sits in the reserve's
    group with the reserve's class.  Joined elsewhere and leaving, it goes
    where its parent came from, not back into the parent's reserve."""
    p = procs([sys.executable, THREAD_ON_DEMAND], stdin=subprocess.PIPE,
              stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    home = cgroup_of(p.pid)
    p.stdin.write("forker\n")
    p.stdin.flush()
    p.stdout.readline()
    helper.ok("reserve lowp policy=idle inherit=no")
    helper.ok("join lowp %d" % p.pid)
    p.stdin.write("fork\n")
    p.stdin.flush()
    child = int(p.stdout.readline())
    try:
        joins_elsewhere_and_leaves(helper, child)
        assert cgroup_of(child) == home, (cgroup_of(child), home)
        assert policy_of(child) == os.SCHED_OTHER
    finally:
        os.kill(child, 9)


def test_kill9_adopted_child_of_a_fifo_process_gets_no_real_time(procs):
    """A fifo 7 process (no reset-on-fork) in an inheriting time-sharing
    reserve forks; the child is adopted.  After a crash the parent is fifo
    7 again, but the child, which never ran at fifo, stays time-sharing."""
    p = procs(["chrt", "-f", "7", sys.executable, THREAD_ON_DEMAND], stdin=subprocess.PIPE,
              stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    p.stdin.write("forker\n")
    p.stdin.flush()
    p.stdout.readline()

    def setup(h):
        h.ok("reserve kin policy=other nice=1 inherit=yes")
        h.ok("join kin %d" % p.pid)
        p.stdin.write("fork\n")
        p.stdin.flush()
        child = int(p.stdout.readline())
        h.ok("forked %d %d" % (p.pid, child))
        assert "members=2" in h.ok("info kin")
        return child
    child = crash_after(setup)
    try:
        Helper().close()
        assert policy_of(p.pid) == os.SCHED_FIFO
        assert policy_of(child) == os.SCHED_OTHER
    finally:
        os.kill(child, 9)
        force_cleanup(ROOT)


@pytest.mark.skipif(os.path.exists(CG + "/cgroup.controllers"),
                    reason="only the hybrid layout moves single threads (v1 cpu tree)")
def test_thread_members_child_joining_elsewhere_remembers_the_thread_origin(helper, procs):
    """A thread member's child is in the reserve's cpu group only (hybrid);
    joined elsewhere before the pass and leaving, it goes to the cpu group
    the thread came from, not back under the first reserve's limits."""
    _, _, home, child = thread_member_forks(helper, procs)
    try:
        joins_elsewhere_and_leaves(helper, child)
        assert cgroup_of(child) == home, (cgroup_of(child), home)
    finally:
        os.kill(child, 9)


def test_zz_no_test_cgroup_left():
    assert_no_test_cgroup_left()
