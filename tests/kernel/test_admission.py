"""Kernel tests of real-time grants: the share a qos (SCHED_DEADLINE) or fifo
reserve gets under load, its runtime split over the member's threads, and the
grants admission or the kernel's bandwidth refuse as capacity, changing nothing."""
import ctypes
import os
import resource
import subprocess

import pytest

import kernel_helpers
from kernel_helpers import (
    assert_no_test_cgroup_left, busy, place, policy_of, running_helper, settled_share, share,
    start_periodic, thread_owner)

pytestmark = kernel_helpers.pytestmark  # root, or each test skipped with the reason


def sched_fields(pid, prefixes):
    """The lines of /proc/PID/sched that start with one of prefixes (diagnostics)."""
    with open("/proc/%d/sched" % pid) as f:
        return "; ".join(" ".join(line.split()) for line in f
                         if line.strip().startswith(prefixes))


def test_qos_hard_30_percent_under_load(helper, procs):
    """30% / 20 ms, fallback pause, against four pinned busy loops.  In about
    one of five runs of this file (before the clock-offset change, none
    since) the member got 42%, with no manager event, so the kernel gave
    it more.  A suspect, not confirmed: the deadline class forgives a
    task's debt when its replenishment comes a whole period late (logged
    once per boot as "DL replenish lagged too much"), which a host that
    stops this VM's CPUs for up to 24 ms could cause.  So a window out of
    range is printed, with whether the kernel logged that, and measured
    once more; both must not be."""
    for cpu in (0, 0, 1, 1):
        busy(procs, cpu)
    p = busy(procs)
    place(helper, "rt policy=qos period=20ms cpu=30% fallback=pause", p.pid)
    # SCHED_DEADLINE with SCHED_RESET_ON_FORK: a child would not share the runtime.
    assert os.sched_getscheduler(p.pid) == 6 | 0x40000000

    def why(s):
        log = subprocess.run(["dmesg"], capture_output=True, text=True).stdout
        return "share %.3f; policy %d; %s; events: %s; kernel: %s" % (
            s, policy_of(p.pid), sched_fields(p.pid, ("policy", "dl.", "nr_switches")),
            [e for e in helper.events if e.split()[1] in ("error", "overrun", "params")],
            [l for l in log.splitlines() if "lagged" in l] or "no DL lag reset logged")
    s = settled_share(p.pid)
    if not 0.27 <= s <= 0.33:
        print("first window out of range: " + why(s))
        s = share(p.pid, 3.0)
    assert 0.27 <= s <= 0.33, why(s)


def test_qos_periodic_workload_meets_every_period(helper, procs):
    """A job of 4 ms every 20 ms against four busy loops on each CPU: as a
    plain process (a fifth of a CPU at best, less after each sleep) it
    misses most periods, which the first second checks, so the load tells
    the reserve from no reserve; in a 30% / 20 ms qos reserve it misses none."""
    for cpu in (0, 0, 0, 0, 1, 1, 1, 1):
        busy(procs, cpu)
    plain = start_periodic(helper, procs, None, seconds=1)
    missed, n = map(int, plain.stdout.readline().split())
    plain.wait(5)
    assert n == 50 and missed >= n // 2, "the load is too light: %d of %d missed" % (missed, n)
    w = start_periodic(helper, procs, "rt policy=qos period=20ms cpu=30% fallback=pause")
    assert policy_of(w.pid) == 6  # SCHED_DEADLINE
    missed, n = map(int, w.stdout.readline().split())
    w.wait(5)  # reaped before the manager removes the group it died in
    assert n == 150
    assert missed == 0, "%d of %d periods missed" % (missed, n)


@pytest.fixture
def small_helper(procs):
    """A manager that may guarantee only 1 CPU (2 x 50%): admission is then
    tested without asking the kernel for more deadline bandwidth than a busy
    machine may have left."""
    with running_helper(extra=["--ncpus", "2", "--rsvd", "50"]) as h:
        yield h


def test_admission_refusal_reaches_caller(small_helper, procs):
    helper = small_helper
    a, b, c = (procs(["sleep", "30"]) for _ in range(3))
    helper.ok("reserve a policy=qos period=100ms cpu=40% fallback=pause")
    helper.ok("reserve b policy=qos period=100ms cpu=40% fallback=pause")
    helper.ok("reserve c policy=qos period=100ms cpu=30% fallback=pause")
    helper.ok("join a %d" % a.pid)
    helper.ok("join b %d" % b.pid)
    reply = helper.cmd("join c %d" % c.pid)
    assert reply.startswith("err"), reply
    assert "needs 30.0% of a CPU but only 20.0% of the 100.0% reservable" in reply, reply
    assert reply.endswith("[capacity]"), reply
    assert any(e.startswith("event refused reserve=c") for e in helper.events)
    # The refused process keeps running without QoS; earlier grants stand.
    assert policy_of(c.pid) == os.SCHED_OTHER
    assert policy_of(a.pid) == 6 and policy_of(b.pid) == 6
    assert "granted=1" in helper.ok("info a")
    assert "granted=0" in helper.ok("info c")


def test_kernel_deadline_bound_is_a_capacity_refusal(procs):
    """When the manager would admit a reserve but the kernel's own deadline
    bandwidth (95% of each CPU, less what others hold) is exhausted, the
    join is refused as capacity, not as an error, and the process runs on
    as other."""
    with running_helper(extra=["--ncpus", "64"]) as helper:
        sleepers = [procs(["sleep", "30"]) for _ in range(4)]
        replies = []
        for i, p in enumerate(sleepers):
            helper.ok("reserve k%d policy=qos period=100ms cpu=90%% fallback=pause" % i)
            replies.append(helper.cmd("join k%d %d" % (i, p.pid)))
            if replies[-1].startswith("err"):
                break
        print(replies)
        assert replies[-1].startswith("err"), replies  # 4 x 90% > 2 x 95%
        assert "kernel" in replies[-1] and replies[-1].endswith("[capacity]"), replies
        assert policy_of(sleepers[len(replies) - 1].pid) == os.SCHED_OTHER


SYS_SCHED_GETATTR = 315  # x86-64


def dl_runtime_ns(pid):
    """The deadline runtime the thread pid was given (sched_getattr)."""
    class Attr(ctypes.Structure):
        _fields_ = [("size", ctypes.c_uint32), ("policy", ctypes.c_uint32),
                    ("flags", ctypes.c_uint64), ("nice", ctypes.c_int32),
                    ("priority", ctypes.c_uint32), ("runtime", ctypes.c_uint64),
                    ("deadline", ctypes.c_uint64), ("period", ctypes.c_uint64)]
    attr = Attr()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(SYS_SCHED_GETATTR, pid, ctypes.byref(attr), ctypes.sizeof(attr), 0) != 0:
        raise OSError(ctypes.get_errno(), "sched_getattr %d" % pid)
    return attr.runtime


def test_qos_slice_is_split_over_the_member_threads(helper, procs):
    """A qos member with two threads: each gets half the slice as its
    deadline runtime, so the member's threads together keep to the slice."""
    p, (tid,) = thread_owner(procs)
    tids = sorted(int(t) for t in os.listdir("/proc/%d/task" % p.pid))
    assert tid in tids
    place(helper, "split policy=qos period=100ms cpu=10% fallback=pause", p.pid)
    n = len(tids)  # the main thread, the spinner (resting) and tid
    assert n >= 2, tids
    assert {t: dl_runtime_ns(t) for t in tids} == {t: 10_000_000 // n for t in tids}


def test_change_the_kernel_refuses_keeps_the_reserve_as_it_was(procs):
    """Growing a qos reserve past what the kernel's deadline bandwidth has
    left is refused as capacity, and the reserve keeps its parameters and
    its member its runtime: no thread is left in a class or with a runtime
    the parameters do not say."""
    with running_helper(extra=["--ncpus", "64"]) as helper:
        b = procs(["sleep", "30"])
        place(helper, "kb policy=qos period=100ms cpu=10% fallback=pause", b.pid)
        assert policy_of(b.pid) == 6  # SCHED_DEADLINE
        assert dl_runtime_ns(b.pid) == 10_000_000
        # Fill what the kernel has left (whatever other tests hold) in 90%
        # steps until it refuses one: then under 90% is left, and growing
        # kb by 90 points cannot fit.
        for i in range(4):
            helper.ok("reserve fill%d policy=qos period=100ms cpu=90%% fallback=pause" % i)
            if helper.cmd("join fill%d %d" % (i, procs(["sleep", "30"]).pid)).startswith("err"):
                break
        else:
            pytest.fail("the kernel took 4 x 90% more deadline bandwidth")
        n0 = len(helper.events)
        reply = helper.cmd("reserve kb policy=qos period=100ms cpu=100% fallback=pause")
        print(reply)
        assert reply.startswith("err") and "kernel" in reply, reply
        assert reply.endswith("[capacity]"), reply
        helper.ok("sync")
        # refused, and told so once: the revert is no change or grant of its own
        kinds = [e.split()[1] for e in helper.events[n0:] if " reserve=kb " in e]
        assert "refused" in kinds and not {"params", "granted"} & set(kinds), kinds
        assert "slice=10ms" in helper.ok("info kb")
        assert policy_of(b.pid) == 6
        assert dl_runtime_ns(b.pid) == 10_000_000


def test_leaving_fifo_gives_back_the_groups_rt_bandwidth(rt_bandwidth, helper, procs):
    """A fifo reserve changed to other gives its group's real-time bandwidth
    back: the threads leave fifo first, since the kernel will not take it
    from a group that still holds real-time tasks."""
    p = procs(["sleep", "30"])
    place(helper, "rtb policy=fifo priority=10 period=100ms slice=20ms fallback=other", p.pid)
    _, cpu = helper.path("rtb")
    with open(cpu + "/cpu.rt_runtime_us") as f:
        assert int(f.read()) == 20000
    helper.ok("reserve rtb policy=other")
    assert policy_of(p.pid) == os.SCHED_OTHER
    with open(cpu + "/cpu.rt_runtime_us") as f:
        assert int(f.read()) == 0


def test_fifo_limited_to_50_percent(rt_bandwidth, helper, procs):
    p = busy(procs, 1)
    place(helper, "f policy=fifo priority=10 period=100ms cpu=50% fallback=pause", p.pid)
    assert policy_of(p.pid) == os.SCHED_FIFO
    s = settled_share(p.pid)
    assert 0.40 <= s <= 0.53, s


def rt_group_values(helper, name):
    _, cpu = helper.path(name)
    out = []
    for f in ("cpu.rt_period_us", "cpu.rt_runtime_us"):
        with open(os.path.join(cpu, f)) as fh:
            out.append(int(fh.read()))
    return tuple(out)


def test_fifo_bandwidth_the_kernel_refuses_is_refused(rt_bandwidth, helper, procs):
    """More real-time bandwidth than the manager's root holds (90%): the
    kernel refuses the group's share, so the change is refused as capacity
    and the group keeps what it had (the reply was "ok", with the group left
    at the old runtime, or the new period and the old runtime), and a first
    member is refused and runs as other."""
    if not os.path.exists("/sys/fs/cgroup/cpu/cpu.rt_runtime_us"):
        pytest.skip("no real-time group scheduling (pure cgroup v2)")
    p = busy(procs, 1)
    place(helper, "f policy=fifo priority=10 period=100ms cpu=50% fallback=pause", p.pid)
    assert rt_group_values(helper, "f") == (100000, 50000)
    for params in ("period=100ms cpu=95%", "period=1s cpu=95%"):
        reply = helper.cmd("reserve f policy=fifo priority=10 %s fallback=pause" % params)
        assert reply.startswith("err ") and reply.endswith("[capacity]"), reply
        assert "real-time bandwidth" in reply, reply
        assert rt_group_values(helper, "f") == (100000, 50000)
        assert "period=100ms" in helper.ok("info f")
        assert policy_of(p.pid) == os.SCHED_FIFO
    q = procs(["sleep", "60"])
    helper.ok("reserve g policy=fifo priority=10 period=100ms cpu=95% fallback=pause")
    reply = helper.cmd("join g %d" % q.pid)
    assert reply.startswith("err ") and reply.endswith("[capacity]"), reply
    assert policy_of(q.pid) == os.SCHED_OTHER
    assert " members=0 " in helper.ok("info g")
    # A refused change into fifo leaves the member unbounded, as it was.
    before = resource.prlimit(q.pid, resource.RLIMIT_RTTIME)
    place(helper, "h policy=idle", q.pid)
    reply = helper.cmd("reserve h policy=fifo priority=10 period=100ms cpu=95% fallback=pause")
    assert reply.startswith("err ") and reply.endswith("[capacity]"), reply
    assert policy_of(q.pid) == os.SCHED_IDLE
    assert resource.prlimit(q.pid, resource.RLIMIT_RTTIME) == before


def test_zz_no_test_cgroup_left():
    assert_no_test_cgroup_left()
