"""A member gets its own scheduling class back when it leaves, or after a
crash from the next instance (root; skipped otherwise with test_kernel's
reason): SCHED_BATCH and SCHED_IDLE stay themselves rather than becoming
SCHED_OTHER, a fifo process gets its priority back, and each thread of a
process gets its own nice, not the main thread's."""
import os
import time

from test_kernel import (  # noqa: F401  (fixtures)
    ROOT, Helper, _force_cleanup, _kill9, assert_no_test_cgroup_left, helper, place,
    policy_of, procs, pytestmark, rt_bandwidth, thread_owner)

assert pytestmark


def nice_of(tid):
    return os.getpriority(os.PRIO_PROCESS, tid)


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
    f = sleeper(procs, "chrt", "-f", "7")
    assert policy_of(f.pid) == os.SCHED_FIFO
    place(helper, "rt policy=fifo priority=20 period=100ms cpu=50% fallback=other", f.pid)
    assert os.sched_getparam(f.pid).sched_priority == 20
    helper.ok("leave %d" % f.pid)
    assert policy_of(f.pid) == os.SCHED_FIFO
    assert os.sched_getparam(f.pid).sched_priority == 7


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


def test_kill9_next_instance_gives_back_batch_and_idle(procs):
    b, i = batch_and_idle(procs)
    h = Helper(guardian=False)
    try:
        h.ok("reserve on policy=other nice=-2")
        for p in (b, i):
            h.ok("join on %d" % p.pid)
        _kill9(h)
    except BaseException:
        h.close()
        raise
    try:
        assert policy_of(b.pid) == os.SCHED_OTHER
        Helper().close()
        assert_batch_and_idle_back(b, i)
    finally:
        _force_cleanup(ROOT)


def test_zz_no_test_cgroup_left():
    assert_no_test_cgroup_left()
