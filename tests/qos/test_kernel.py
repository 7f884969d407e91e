"""Kernel tests for qos/: real processes, real cgroups, real scheduling classes.

Driven through the qos-helper binary (tests/qos/qos-helper.c) from the build
directory named by $QOSWAY_BUILD_DIR (default: build).  Needs root and the
layout CI has (cgroup v1 cpu + cgroup2 at /sys/fs/cgroup/unified, or pure v2);
otherwise every test is skipped with the reason printed.
"""
import contextlib
import ctypes
import os
import resource
import signal
import subprocess
import sys
import time

import pytest

from kernel_helpers import (
    CG, Helper, ROOT, THREAD_ON_DEMAND, assert_no_test_cgroup_left, busy, cgroup_lines, cgroup_of,
    check_rttime_restored, cpu_ns, crash_after, force_cleanup, frozen, group_idle_of, info_fields,
    kill9, kill9_frozen, kill_grandchild, kill_guardian, live_guardians, manager_stats, move_to,
    place, policy_of, pytestmark, rt_events, running_helper, settled_share, share, start_periodic,
    thread_member_forks, thread_owner, wait_for, wait_frozen)
from qos_helper_driver import rmdir_when_empty

assert pytestmark  # root, or skipped with the reason printed


def sched_fields(pid, prefixes):
    """The lines of /proc/PID/sched that start with one of prefixes (diagnostics)."""
    with open("/proc/%d/sched" % pid) as f:
        return "; ".join(" ".join(line.split()) for line in f
                         if line.strip().startswith(prefixes))


def test_ceiling_other_20_percent(helper, procs):
    p = busy(procs, 1)
    place(helper, "ceil policy=other period=100ms cpu=20% fallback=pause nice=-3", p.pid)
    assert os.getpriority(os.PRIO_PROCESS, p.pid) == -3  # the thread's nice, beside the group's
    s = settled_share(p.pid)
    assert 0.17 <= s <= 0.23, s


@pytest.mark.parametrize("params", ["period=10ms cpu=5%", "period=2s cpu=20%"])
def test_ceiling_the_kernel_cannot_hold_is_policed(helper, procs, params):
    """CFS bandwidth control takes no quota under 1 ms and no period over
    1 s: such a ceiling is held by the manager (freezing at the limit), not
    left unlimited with an error event."""
    p = busy(procs, 1)
    place(helper, "ceil policy=other %s fallback=pause" % params, p.pid)
    want = 0.05 if "5%" in params else 0.20
    s = share(p.pid, 3.0 if want < 0.1 else 6.0)
    info = helper.ok("info ceil")
    assert not [e for e in helper.events if " error " in e], helper.events
    assert want * 0.6 <= s <= want * 1.5, "share %.3f; %s" % (s, info)


def test_cut_to_idle_20_percent(helper, procs):
    """other with a 20% limit and fallback idle, against a normal busy loop on
    the same CPU: 20% in each period, then (nearly) nothing as SCHED_IDLE in
    an idle group until the boundary; without policing it would get 50%."""
    busy(procs, 1)
    p = busy(procs, 1)
    place(helper, "cut policy=other period=100ms cpu=20% fallback=idle", p.pid)
    s = settled_share(p.pid)
    assert 0.16 <= s <= 0.26, s
    info = helper.ok("info cut")
    assert "overruns=0" not in info, info
    # The group alone is the fallback: the member's thread stays SCHED_OTHER
    # while its group is idle (cpu.idle = 1), never switched one by one.
    group_idle = group_idle_of(helper, "cut")
    seen = 0
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        if group_idle():
            seen += 1
            assert policy_of(p.pid) == os.SCHED_OTHER, "SCHED_IDLE in the idle group"
        time.sleep(0.007)
    assert seen, "the group was never idle"


def test_cut_to_idle_10ms_periods_keeps_10_percent(helper, procs):
    """The kernel reports the overrun of a reserve the manager polices up to a
    tick late (CPU-clock timers, no polling); what it ran over is carried into
    the next periods, so the share stays at the limit: 10% of 10 ms, against
    a busy loop (a tick is 4 ms at HZ=250, so without the carry it would get
    up to 50%)."""
    busy(procs, 1)
    p = busy(procs, 1)
    place(helper, "cut10 policy=other period=10ms slice=1ms fallback=idle", p.pid)
    s = settled_share(p.pid)
    assert 0.07 <= s <= 0.13, "share %.3f; %s" % (s, helper.ok("info cut10"))


def test_cut_to_idle_members_running_at_once_share_the_slice_watch(helper, procs):
    """Two members of a quiet reserve start running together, one on each
    CPU: from the first tick that finds them running, each member's CPU
    timer is armed at its share of what is left of the slice, not at all of
    it, so the overrun is seen when the reserve, not each member, has used
    the slice (armed at all of it, each ran the whole slice first: twice
    the limit before the switch)."""
    start = "import time; time.sleep(1.0)\nwhile True: pass"
    members = [procs(["taskset", "-c", str(cpu), sys.executable, "-c", start])
               for cpu in (0, 1)]
    helper.ok("reserve two policy=other period=1s slice=200ms fallback=idle")
    for m in members:
        helper.ok("join two %d" % m.pid)
    # Three periods: the members run on (idle, on CPUs nothing else wants),
    # and each period's timers are armed afresh while they run.
    def overruns():
        return [e for e in helper.events if e.startswith("event overrun reserve=two ")]
    wait_for(helper, lambda: len(overruns()) >= 3, 7, "not three overruns")
    over = overruns()[:3]
    used = [int(e.split(" used=")[1].split()[0]) for e in over]
    # 200 ms, plus up to a tick (4 ms at HZ=250) on each CPU and a wake-up.
    assert all(200000 <= u < 280000 for u in used), over


def test_cut_to_idle_after_running_alone_keeps_10_percent_once_loaded(helper, procs):
    """Alone on its CPU, an idle-fallback reserve runs on as SCHED_IDLE all
    the time; none of that may be carried as debt.  Once a busy loop joins
    it, it gets its 10% again (with that time carried, it had 2.7 s of debt
    after 3 s alone and got 0.4% for the next half minute)."""
    p = busy(procs, 1)
    place(helper, "cut10 policy=other period=10ms slice=1ms fallback=idle", p.pid)
    alone = share(p.pid, 2.0)
    assert alone > 0.8, "alone it should run on: %.3f" % alone
    busy(procs, 1)
    s = settled_share(p.pid, 2.0)
    assert 0.07 <= s <= 0.13, "share %.3f once loaded (%.3f alone); %s" % (
        s, alone, helper.ok("info cut10"))


def test_refused_cpu_timers_fall_back_to_polling(helper, procs):
    """A manager that may not create CPU-clock timers (each takes a queued
    signal, so RLIMIT_SIGPENDING 0 refuses them with EAGAIN) says so once
    and polls the reserve instead: the limit still holds."""
    import resource
    pid = helper.proc.pid
    old = resource.prlimit(pid, resource.RLIMIT_SIGPENDING)
    resource.prlimit(pid, resource.RLIMIT_SIGPENDING, (0, old[1]))
    try:
        busy(procs, 1)
        p = busy(procs, 1)
        place(helper, "cut policy=other period=100ms cpu=20% fallback=idle", p.pid)
        s = settled_share(p.pid)
    finally:
        resource.prlimit(pid, resource.RLIMIT_SIGPENDING, old)
    refusals = [e for e in helper.events if "no CPU-time notifications" in e]
    assert len(refusals) == 1, helper.events[-8:]
    assert "polling instead" in refusals[0]
    assert 0.16 <= s <= 0.26, s
    assert "overruns=0" not in helper.ok("info cut")


def wait_asleep(pid, timeout=5.0):
    """Until the process sleeps (state S in /proc/PID/stat)."""
    deadline = time.monotonic() + timeout
    while True:
        with open("/proc/%d/stat" % pid) as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "S":
                return
        assert time.monotonic() < deadline, "process %d never went to sleep" % pid
        time.sleep(0.002)


def manager_wakeups(helper):
    """Times the manager's fd has woken qos-helper's loop so far.  Not the
    main thread's voluntary context switches, which also count every sleep
    on a lock inside a system call (a cgroup file under contention from
    other groups being removed): once 12 in 3 s in a CI run where the loop
    woke its usual 6 times."""
    return int(manager_stats(helper)["dispatches"])


@pytest.mark.parametrize("params", [
    "policy=other period=10ms slice=1ms fallback=idle",
    # optimistic qos: polled, 50 such reserves took 43% of a CPU
    "policy=qos period=10ms slice=100us fallback=other",
], ids=["cut-to-idle", "optimistic"])
def test_quiet_policed_reserves_cost_no_wakeups(helper, procs, params):
    """20 manager-policed reserves at 10 ms whose members sleep: the kernel
    would tell the manager when one runs, so it sleeps between its 1 s
    passes and the canary's ticks, 6 wake-ups in 3 s (polling them would
    take 100+ wake-ups a second each)."""
    for i in range(20):
        p = procs(["sleep", "60"])
        # Asleep first: its start (exec, the loader) would overrun a 100 us
        # slice, and a thread the deadline class throttled for it returns
        # only at its 0-lag time, up to a second later on a slow machine,
        # with a wake-up or two (12 in one CI run).
        wait_asleep(p.pid)
        place(helper, "q%d %s" % (i, params), p.pid)
    time.sleep(0.5)
    a = manager_wakeups(helper)
    time.sleep(3)
    woke = manager_wakeups(helper) - a
    assert woke <= 10, "%d wake-ups in 3 s; %s" % (woke, helper.ok("stats"))


def test_idle_under_5_percent(helper, procs):
    normal = busy(procs, 1)
    victim = busy(procs, 1)
    place(helper, "bg policy=idle", victim.pid)
    assert policy_of(victim.pid) == os.SCHED_IDLE
    assert group_idle_of(helper, "bg")()  # cpu.idle = 1: not the group's share
    s = settled_share(victim.pid)
    assert s < 0.05, s


def test_pause_freezes_and_thaws(helper, procs):
    p = busy(procs, 1)
    place(helper, "stop policy=pause", p.pid)
    v2, _ = helper.path("stop")
    wait_frozen(v2, True, "cgroup.events never said frozen")
    # Frozen tasks do not run; a few microseconds may still be charged while
    # the last signal-delivery path of the freeze completes.
    assert share(p.pid, 1.0) < 1e-4
    helper.ok("reserve stop policy=other")
    wait_frozen(v2, False, "still frozen after thaw")
    assert share(p.pid, 0.5) > 0.2


def test_pause_reserve_freezes_the_members_after_it_was_empty(helper, procs):
    """The last member leaving thaws the group; a named pause reserve (the
    `pause` of config/qosrc, which the window menu offers) must still freeze
    whoever joins it next (it did not: the group was only set up when made)."""
    a = busy(procs, 1)
    place(helper, "stop policy=pause", a.pid)
    v2, _ = helper.path("stop")
    wait_frozen(v2, True, "the first member was never frozen")
    helper.ok("leave %d" % a.pid)
    wait_frozen(v2, False, "still frozen with no member")
    b = busy(procs, 1)
    helper.ok("join stop %d" % b.pid)
    wait_frozen(v2, True, "the next member was never frozen")
    assert share(b.pid, 0.5) < 1e-4
    assert share(a.pid, 0.5) > 0.2


def test_cut_to_idle_group_is_normal_again_for_the_next_member(helper, procs):
    """The last member leaving while the reserve is in its fallback (the
    group's cpu.idle set) must not leave the next member in an idle group:
    against a busy loop it would get next to nothing, never reach its limit,
    and so never be restored."""
    busy(procs, 1)
    a = busy(procs, 1)
    place(helper, "cut policy=other period=100ms cpu=20% fallback=idle", a.pid)
    group_idle = group_idle_of(helper, "cut")
    wait_for(helper, group_idle, 3, "the group never went idle")
    helper.ok("leave %d" % a.pid)
    b = busy(procs, 1)
    helper.ok("join cut %d" % b.pid)
    assert not group_idle()
    s = settled_share(b.pid)
    assert 0.16 <= s <= 0.26, "share %.3f; %s" % (s, helper.ok("info cut"))


@pytest.mark.parametrize("how", ["leave", "exit"])
def test_a_member_going_leaves_its_time_in_the_period(helper, procs, how):
    """What a member ran stays charged to the period it goes in: the use the
    manager counts does not drop when it leaves or exits (it did for process
    members of limited reserves, counted from their own CPU clocks: a
    reserve whose members come and go was under-charged, so its limit held
    only in part)."""
    a = busy(procs, 0)
    place(helper, "acc policy=other period=10s cpu=90% fallback=idle", a.pid)
    for _ in range(3):
        b = busy(procs, 1)
        f0 = info_fields(helper, "acc")
        helper.ok("join acc %d" % b.pid)
        time.sleep(0.5)
        f1 = info_fields(helper, "acc")
        if how == "leave":
            helper.ok("leave %d" % b.pid)
        else:
            b.kill()
            b.wait()
            wait_for(helper, lambda: info_fields(helper, "acc")["members"] == "1", 3,
                      "the exit was never seen")
        f2 = info_fields(helper, "acc")
        if f0["periods"] == f1["periods"] == f2["periods"]:  # no boundary in between
            break
        b.kill()  # a boundary came between: again, with a fresh loop on CPU 1
        b.wait()
    else:
        pytest.fail("three 10 s boundaries in a row fell between two reads")
    assert int(f1["used"]) >= 800000, f1  # two busy loops for 0.5 s
    assert int(f2["used"]) >= int(f1["used"]), (f1, f2)


def test_billed_time_counts_against_the_slice(helper, procs):
    """Time spent on a member's behalf (qos_manager_bill: the compositor's
    rendering and dispatch for it) counts like the member's own: a sleeping
    member of a 20% / 1 s reserve with fallback idle, billed 300 ms, has
    overrun at once (event, group idle), the bill shows in the period's
    figures, and the reserve is restored once the debt is paid."""
    p = procs(["sleep", "60"])
    place(helper, "b policy=other period=1s cpu=20% fallback=idle", p.pid)
    group_idle = group_idle_of(helper, "b")
    assert helper.cmd("bill no-such 1000").startswith("err ")
    for _ in range(3):
        before = info_fields(helper, "b")
        mark = len(helper.events)
        helper.ok("bill b 300000")
        raw = helper.ok("info b")
        after = dict(kv.split("=", 1) for kv in raw.split()[1:])
        if after["periods"] == before["periods"]:  # no boundary in between
            break
    else:
        pytest.fail("three 1 s boundaries in a row fell between two reads")
    assert after["billed"] == "300000" and int(after["used"]) >= 300000, raw
    assert " fallback=1 " in raw, raw
    assert group_idle()
    overruns = [e for e in helper.events[mark:] if e.startswith("event overrun reserve=b ")]
    assert overruns, helper.events[mark:]
    wait_for(helper, lambda: not group_idle(), 4, "never restored after the debt")
    assert any(e.startswith("event restored reserve=b ") for e in helper.events[mark:]), \
        helper.events[mark:]


def test_billed_time_freezes_a_ceiling_the_kernel_holds(helper, procs):
    """A ceiling the kernel holds by itself (CFS quota) is looked at lazily;
    a bill must still count in the period running now and, past the slice,
    freeze the group until the debt is paid (the bill used to land in a
    long-ended period and only raise a debt nothing acted on)."""
    p = busy(procs, 1)
    place(helper, "ceil policy=other period=100ms cpu=20% fallback=pause", p.pid)
    v2, _ = helper.path("ceil")
    time.sleep(0.5)
    helper.ok("bill ceil 300000")
    wait_frozen(v2, True, "a bill of three slices never froze the ceiling")
    # 20 ms of the debt is paid each 100 ms: some 1.4 s
    wait_frozen(v2, False, "never thawed once the debt was paid", timeout=4)


def test_reserves_named_like_control_files_get_groups_of_their_own(helper, procs):
    """A reserve named after a control file of the manager's root gets a
    directory beside the file, and its member is really in it; the files
    are left as they were."""
    for name in ("cgroup.procs", "tasks", "cpu.shares", "cgroup.freeze"):
        p = procs(["sleep", "60"])
        place(helper, "%s policy=pause" % name, p.pid)
        v2, cpu = helper.path(name)
        assert os.path.basename(v2) == name + "~1", v2
        assert os.path.isdir(v2) and os.path.isdir(cpu), (v2, cpu)
        with open(v2 + "/cgroup.procs") as f:
            assert str(p.pid) in f.read().split()
        wait_frozen(v2, True, "%s: cgroup.events never said frozen" % name)
        helper.ok("leave %d" % p.pid)
        with open("/proc/%d/cgroup" % p.pid) as f:
            assert name + "~1" not in f.read()
        assert any(os.path.isfile(os.path.join(os.path.dirname(d), name)) for d in (v2, cpu))


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


def test_cut_to_idle_job_within_its_limit_is_never_cut(helper, procs):
    """A job of 4 ms every 20 ms in a 50% / 20 ms reserve with fallback
    idle, against a busy loop on each CPU: it never uses its limit (even
    two jobs in one period, after a late one, stay under it), so it is
    never cut, and the use the manager reports for a period is the job's.
    The member sleeps when it joins and the test queries the reserve while
    it runs: before session 14 the manager then stopped checking at period
    ends (nothing used since the last check) until a slice had been used,
    and charged all of it to one period, an overrun in about half the runs.
    Each period end starts the next period by re-arming the member's CPU
    timer, which gives back its clock (qos_cputimer_rearm_after): a wrong
    clock there would show as a wrong use, or as a cut."""
    for cpu in (0, 1):
        busy(procs, cpu)
    w = start_periodic(helper, procs, "job policy=other period=20ms cpu=50% fallback=idle")
    time.sleep(1.5)
    lasts = []
    for _ in range(20):
        info = helper.ok("info job")
        lasts.append(int(info.split(" last=")[1].split()[0]))
        time.sleep(0.05)
    # Taken while the job still runs: the interpreter's exit may well use
    # more than the limit in its last period.
    over = [e for e in helper.events if e.startswith("event overrun reserve=job ")]
    missed, n = map(int, w.stdout.readline().split())
    w.wait(5)
    print("missed %d of %d, last uses %s, %s" % (missed, n, lasts, info))
    assert n == 150
    assert not over and " overruns=0 " in info, (over, info)
    # 4 ms of CPU a period: a job may straddle a boundary (say 6.5 ms in one
    # period and 1.5 in the next), never more than two jobs in one.
    assert max(lasts) <= 8600 and 2000 <= sum(lasts) / len(lasts) <= 6000, lasts


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


def fifo_phases(p, rival, seconds=3.0):
    """Sampled every 2 ms: {policy seen at the start of a step: [member CPU,
    rival CPU, wall]} (ns), and the same as text for assertion messages."""
    phases = {os.SCHED_FIFO: [0, 0, 0], os.SCHED_OTHER: [0, 0, 0]}
    mine, theirs, t = cpu_ns(p.pid), cpu_ns(rival.pid), time.monotonic_ns()
    end = t + int(seconds * 1e9)
    while t < end:
        pol = policy_of(p.pid)
        time.sleep(0.002)
        m, r, now = cpu_ns(p.pid), cpu_ns(rival.pid), time.monotonic_ns()
        step = phases.setdefault(pol, [0, 0, 0])
        step[0] += m - mine
        step[1] += r - theirs
        step[2] += now - t
        mine, theirs, t = m, r, now
    shown = {k: "%.2f s: member %.2f, rival %.2f" % (v[2] / 1e9, v[0] / max(v[2], 1),
                                                      v[1] / max(v[2], 1))
             for k, v in phases.items()}
    return phases, shown


def assert_fifo_then_other(phases, shown, share, info):
    """fifo for about `share` of the time with the CPU to itself, other for
    the rest with a fair part of it."""
    fifo, other = phases[os.SCHED_FIFO], phases[os.SCHED_OTHER]
    assert set(phases) == {os.SCHED_FIFO, os.SCHED_OTHER}, (shown, info)
    assert share - 0.1 <= fifo[2] / (fifo[2] + other[2]) <= share + 0.1, (shown, info)
    assert fifo[0] / fifo[2] >= 0.9 and fifo[1] / fifo[2] <= 0.1, (shown, info)
    assert other[0] / other[2] >= 0.3, (shown, info)


@contextlib.contextmanager
def safe_fifo_beside_a_loop(procs):
    """A manager whose thread is on CPU 1, a busy loop there, and a busy
    member of "safe" (fifo, 50% of 100 ms, fallback other) there too,
    settled for 0.3 s: (helper, member, loop).  A 60 s RLIMIT_RTTIME bound
    keeps the guard (which moves a thread that never sleeps out for good)
    out of the way."""
    with running_helper(extra=["--rttime", "60000"]) as h:
        os.sched_setaffinity(h.proc.pid, {1})
        rival = busy(procs, 1)
        p = busy(procs, 1)
        place(h, "safe policy=fifo priority=10 period=100ms cpu=50% fallback=other", p.pid)
        time.sleep(0.3)
        yield h, p, rival


def test_fifo_safety_limit_runs_on_as_other(rt_bandwidth, procs):
    """fifo with a 50% limit and fallback other (the thesis's <safe>, with a
    lower limit), against a normal busy loop on the same CPU, sampled every
    2 ms for 3 s: the member is fifo about half the time and then has the
    CPU to itself, and runs on as other for the rest, sharing it with the
    loop, instead of stopping.  With fallback pause it would not run at all
    outside fifo; without the limit it would be fifo throughout.

    The manager's thread is put on the member's CPU, the hard case: once
    it gives the member its policy it runs only when the kernel throttles
    the member.  Before the join read the clocks and started the period
    ahead of that, the period began 50 ms late, the kernel's real-time
    window stayed that far ahead for good, and the member was fifo and
    throttled in half of every period and other for a few ms (4 runs of 4
    with the manager there; about 1 in 5 under pytest when the kernel woke
    it there by itself).
    """
    with safe_fifo_beside_a_loop(procs) as (h, p, rival):
        phases, shown = fifo_phases(p, rival)
        info = h.ok("info safe")
        assert_fifo_then_other(phases, shown, 0.5, info)
        assert not rt_events(h, "demoted"), rt_events(h, "demoted")


def test_fifo_safety_limit_changed_in_its_fallback_stays_with_the_kernel(rt_bandwidth, procs):
    """The same reserve, its limit changed to 40% while the member runs as
    other, the manager again on the member's CPU.  The kernel's window runs
    on in its phase across the change, so the manager's period must too:
    restarted at the change, it ran that far behind from then on, and the
    member was fifo and throttled 84% of the time (4 runs of 4)."""
    with safe_fifo_beside_a_loop(procs) as (h, p, rival):
        deadline = time.monotonic() + 2
        while policy_of(p.pid) != os.SCHED_OTHER:
            assert time.monotonic() < deadline, "never in its fallback: " + h.ok("info safe")
            time.sleep(0.001)
        h.ok("reserve safe policy=fifo priority=10 period=100ms cpu=40% fallback=other")
        time.sleep(0.3)
        phases, shown = fifo_phases(p, rival)
        info = h.ok("info safe")
        assert_fifo_then_other(phases, shown, 0.4, info)


# Spins for argv[1] seconds, then forever spins argv[2] seconds and sleeps
# argv[3] seconds (default 10 ms and 5 ms: within the fifo safety limit of 90%).
PULSE = r"""
import sys, time
spin_first, spin, nap = (list(map(float, sys.argv[1:])) + [0.01, 0.005])[:3]
t = time.monotonic()
while time.monotonic() - t < spin_first:
    pass
while True:
    t = time.monotonic()
    while time.monotonic() - t < spin:
        pass
    time.sleep(nap)
"""


def test_fifo_thread_that_never_sleeps_is_moved_out_not_killed(rt_bandwidth, procs):
    """RLIMIT_RTTIME (3 s here) kills a real-time thread that runs that long
    without sleeping, and a policy change does not reset the kernel's count.
    The manager moves such a thread to other in time (halfway, at a 3 s
    bound) instead: after 4.5 s the busy loop is alive, as other for good
    (not only in its safety limit's fallback), and the event says why.
    Before, the kernel killed it at 3 s."""
    with running_helper(extra=["--rttime", "3000"]) as h:
        p = busy(procs, 1)
        place(h, "f policy=fifo priority=10", p.pid)
        # fifo; or, when this process shared CPU 1 with the loop and got to
        # look only after the loop's first 45 ms, in its safety fallback.
        pol = policy_of(p.pid)
        h.ok("sync")
        assert pol == os.SCHED_FIFO or any(
            e.startswith("event overrun reserve=f ") for e in h.events), (pol, h.events)
        time.sleep(4.5)
        assert p.poll() is None, "killed (status %s); events: %s" % (
            p.returncode, rt_events(h, "demoted"))
        demoted = rt_events(h, "demoted")
        assert len(demoted) == 1, h.events[-5:]
        assert "without sleeping" in demoted[0] and "pid=%d" % p.pid in demoted[0]
        for _ in range(10):
            assert policy_of(p.pid) == os.SCHED_OTHER
            time.sleep(0.06)
        assert " members=1 " in h.ok("info f")


@pytest.mark.parametrize("how", ["toggle", "move"])
def test_busy_fifo_thread_toggled_or_moved_is_never_killed(rt_bandwidth, procs, how):
    """A busy fifo loop whose reserve turns other and fifo again every 0.8 s
    (toggle), or that moves between two fifo reserves every 0.7 s (move),
    is made fifo again each time; the kernel's RLIMIT_RTTIME count is not
    reset by that, and it used to reach the 3 s bound (SIGKILL at 10-12 s)
    because the guard that had moved the thread out was gone.  It lives."""
    with running_helper(extra=["--rttime", "3000"]) as h:
        p = busy(procs, 1)
        busy(procs, 1)
        place(h, "f1 policy=fifo priority=10 period=100ms cpu=40% fallback=other", p.pid)
        h.ok("reserve f2 policy=rr priority=10 period=100ms cpu=30% fallback=other")
        end = time.monotonic() + 13
        turn = 0
        while time.monotonic() < end and p.poll() is None:
            turn += 1
            if how == "toggle":
                h.ok("reserve f1 policy=%s" % ("other" if turn % 2 else
                                               "fifo priority=10 period=100ms cpu=40% "
                                               "fallback=other"))
                time.sleep(0.8)
            else:
                h.ok("join %s %d" % ("f2" if turn % 2 else "f1", p.pid))
                time.sleep(0.7)
        assert p.poll() is None, "killed (status %s); events: %s" % (
            p.returncode, rt_events(h, "demoted")[-4:])


def test_fifo_thread_that_sleeps_stays_real_time(rt_bandwidth, procs):
    """A thread that sleeps 5 ms after every 10 ms resets the kernel's count
    at each wake-up: it stays fifo throughout (5 s at a 3 s bound)."""
    with running_helper(extra=["--rttime", "3000"]) as h:
        p = procs([sys.executable, "-c", PULSE, "0"])
        os.sched_setaffinity(p.pid, {1})
        place(h, "f policy=fifo priority=10", p.pid)
        for _ in range(10):
            time.sleep(0.5)
            assert policy_of(p.pid) == os.SCHED_FIFO, h.events[-5:]
        assert p.poll() is None
        assert not rt_events(h, "demoted"), rt_events(h, "demoted")


def test_fifo_thread_over_its_limit_that_sleeps_stays_real_time(rt_bandwidth, procs):
    """A thread using 95% of its CPU in a fifo reserve with the default
    safety limit (90% of 50 ms, fallback other): it is moved to its fallback
    in most periods, and sleeps both as fifo and as other.  Its wake-ups as
    fifo reset the kernel's count, so it must not be moved out (the guard's
    first version counted every pass with a fallback switch in it as one
    without sleep, and moved it out after 1.5 s)."""
    with running_helper(extra=["--rttime", "3000"]) as h:
        p = procs([sys.executable, "-c", PULSE, "0", "0.02", "0.001"])  # 95%
        os.sched_setaffinity(p.pid, {1})
        place(h, "f policy=fifo priority=10", p.pid)
        time.sleep(5)
        assert p.poll() is None, "killed (status %s)" % p.returncode
        info = h.ok("info f")
        fields = dict(kv.split("=", 1) for kv in info.split()[1:])
        # Nearly every period on a quiet machine (98-100 of 100), about half
        # when a busy loop shares the manager's CPU.  Before the switch came
        # ahead of the group's real-time throttle, a period boundary in the
        # throttled gap locked it out: no overrun at all in 1 run of 20.
        assert int(fields["overruns"]) * 4 >= int(fields["periods"]), (info, h.events[-12:])
        assert not rt_events(h, "demoted"), rt_events(h, "demoted")


def assert_demoted_not_killed(h, p, seconds):
    """Within `seconds` the guard moves the busy fifo loop p to other, and
    the kernel's RLIMIT_RTTIME has not killed it first."""
    deadline = time.monotonic() + seconds
    while p.poll() is None and not rt_events(h, "demoted") and time.monotonic() < deadline:
        h.ok("sync")
        time.sleep(0.1)
    assert p.poll() is None, "killed (status %s); %s" % (p.returncode, h.events[-5:])
    assert rt_events(h, "demoted"), h.events[-5:]


def test_fifo_thread_made_fifo_again_keeps_its_count(rt_bandwidth, procs):
    """The kernel's RLIMIT_RTTIME count stops while a thread is not
    real-time and falls only when it wakes as real-time: a busy fifo thread
    made normal and fifo again (a window clicked twice) goes on from where
    it was.  So does the guard's estimate (it began afresh, at most a pass,
    and the kernel killed the thread at its 5 s before the guard moved it
    out)."""
    with running_helper() as h:  # the default 5 s bound
        p = busy(procs, 1)
        h.ok("class %d policy=fifo priority=10" % p.pid)
        time.sleep(3.0)
        assert not rt_events(h, "demoted"), h.events[-5:]
        h.ok("leave %d" % p.pid)
        h.ok("class %d policy=fifo priority=10" % p.pid)
        assert_demoted_not_killed(h, p, 4)
        assert policy_of(p.pid) == os.SCHED_OTHER


def test_fifo_thread_moving_to_another_fifo_reserve_keeps_its_count(rt_bandwidth, procs):
    """As above, moved straight from one fifo reserve to another that was
    made first (its guard looks first at each pass): the estimate goes with
    the thread as it leaves, not at the old reserve's next pass, which came
    after the new guard had started it afresh."""
    with running_helper() as h:
        # Real-time groups share the root's 90%: 30% + 60%.  Fifo 60% of the
        # time in a, the count is about 3 s after 5 s; fifo 30% of the time
        # in b, the kernel's 5 s come 6.7 s later, a guard starting afresh
        # (at 1 s) reaches its 3.5 s after 8.3 s.
        h.ok("reserve b policy=fifo priority=10 period=100ms cpu=30% fallback=other")
        h.ok("reserve a policy=fifo priority=10 period=100ms cpu=60% fallback=other")
        p = busy(procs, 1)
        h.ok("join a %d" % p.pid)
        time.sleep(5.0)
        assert not rt_events(h, "demoted"), h.events[-5:]
        h.ok("join b %d" % p.pid)
        assert_demoted_not_killed(h, p, 8)


def test_fifo_thread_moved_out_is_real_time_again_once_it_sleeps(rt_bandwidth, procs):
    """Spinning 2.5 s at a 3 s bound gets the thread moved to other; once it
    sleeps it is fifo again, and, since it keeps sleeping, stays so."""
    with running_helper(extra=["--rttime", "3000"]) as h:
        p = procs([sys.executable, "-c", PULSE, "2.5"])
        os.sched_setaffinity(p.pid, {1})
        place(h, "f policy=fifo priority=10", p.pid)
        deadline = time.monotonic() + 6
        while not rt_events(h, "resumed") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert rt_events(h, "demoted"), h.events[-5:]
        assert rt_events(h, "resumed"), h.events[-5:]
        time.sleep(3.5)
        assert p.poll() is None, "killed (status %s)" % p.returncode
        assert policy_of(p.pid) == os.SCHED_FIFO
        assert len(rt_events(h, "demoted")) == 1, h.events[-5:]


def test_fifo_thread_under_a_tighter_limit_of_its_own_is_moved_out_in_time(rt_bandwidth, procs):
    """A process with an RLIMIT_RTTIME of its own (4 s) under the manager's
    bound (5 s): the kernel kills at 4 s, so the guard moves a busy thread
    out 1.5 passes before that (it went by the 5 s bound, at 3.5 s or more,
    and the thread was killed in about half the runs).  A limit too short
    for the guard (200 ms, as rtkit's clients set) is said at the join."""
    with running_helper() as h:
        p = procs(["prlimit", "--rttime=4000000:4000000", sys.executable, "-c", PULSE, "30"])
        os.sched_setaffinity(p.pid, {1})
        wait_for(h, lambda: not os.readlink("/proc/%d/exe" % p.pid).endswith("prlimit"),
                  5, "prlimit never ran python")
        place(h, "f policy=fifo priority=10", p.pid)
        wait_for(h, lambda: rt_events(h, "demoted"), 5, "never moved out")
        (ev,) = rt_events(h, "demoted")
        used = int(ev.split("used=")[1].split()[0])
        assert used < 3500000, ev
        time.sleep(1.5)
        assert p.poll() is None, "killed (status %s)" % p.returncode
        assert policy_of(p.pid) == os.SCHED_OTHER
        q = procs(["prlimit", "--rttime=200000:200000", "sleep", "30"])
        wait_for(h, lambda: os.readlink("/proc/%d/exe" % q.pid).endswith("sleep"), 5,
                  "prlimit never ran sleep")
        h.ok("join f %d" % q.pid)
        assert any("RLIMIT_RTTIME of its own of 0.20 s" in e for e in h.events), h.events[-3:]


SPIN_NAP_SPIN = r"""
import time
def spin(s):
    t = time.monotonic()
    while time.monotonic() - t < s:
        pass
spin(2.4)
time.sleep(0.02)
spin(4.0)
while True:
    spin(0.01)
    time.sleep(0.005)
"""


def test_fifo_thread_that_slept_as_other_is_real_time_again_only_asleep(rt_bandwidth, procs):
    """A thread moved to other near the bound (3 s here) that then sleeps
    once, as other, keeps the kernel's count: sleeping resets it only for a
    real-time thread.  Made fifo again while it spins on, it had less than
    a pass left (at 5 s, killed in 4 of 4 runs).  It stays other while it
    spins, and is made fifo again once caught asleep: it wakes as fifo,
    which resets the count."""
    with running_helper(extra=["--rttime", "3000"]) as h:
        p = procs([sys.executable, "-c", SPIN_NAP_SPIN])
        t0 = time.monotonic()
        os.sched_setaffinity(p.pid, {1})
        place(h, "f policy=fifo priority=10", p.pid)
        wait_for(h, lambda: rt_events(h, "demoted"), 4, "never moved out")
        assert time.monotonic() - t0 < 2.4, "moved out only after its nap"
        while time.monotonic() - t0 < 6.2:
            assert p.poll() is None, "killed (status %s)" % p.returncode
            assert policy_of(p.pid) == os.SCHED_OTHER, "made fifo again while it spins"
            time.sleep(0.05)
        wait_for(h, lambda: rt_events(h, "resumed"), 3, "never made fifo again")
        time.sleep(1.5)
        assert p.poll() is None, "killed (status %s)" % p.returncode
        assert policy_of(p.pid) == os.SCHED_FIFO


FORKER = r"""
import os, sys, time
sys.stdout.write("ready\n"); sys.stdout.flush(); sys.stdin.readline()
pid = os.fork()
if pid == 0:
    time.sleep(30)
    os._exit(0)
print(pid, flush=True)
time.sleep(30)
"""


def test_rt_member_child_is_not_rt(rt_bandwidth, helper, procs):
    """The member carries SCHED_RESET_ON_FORK, so the kernel starts its child
    as other (flag cleared too); without inherit the manager leaves it so,
    also past its next 1 s pass.  (With inherit=yes the manager adopts the
    child on purpose, under the reserve's limit: the inherit tests.)"""
    p = procs([sys.executable, "-c", FORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
              text=True)
    assert p.stdout.readline().strip() == "ready"
    place(helper, "f policy=fifo priority=10 period=100ms cpu=50% fallback=other inherit=no",
          p.pid)
    assert os.sched_getscheduler(p.pid) == os.SCHED_FIFO | 0x40000000  # SCHED_RESET_ON_FORK
    p.stdin.write("fork\n")
    p.stdin.flush()
    child = int(p.stdout.readline())
    try:
        assert os.sched_getscheduler(child) == os.SCHED_OTHER
        helper.ok("forked %d %d" % (p.pid, child))
        time.sleep(1.3)
        helper.ok("stats")
        assert os.sched_getscheduler(child) == os.SCHED_OTHER
        assert " members=1 " in helper.ok("info f")
    finally:
        kill_grandchild(child)


# Forks argv[1] children (sleepers) per line read, printing their pids.
FORK_ON_DEMAND = r"""
import os, sys, time
sys.stdout.write("ready\n"); sys.stdout.flush()
for line in sys.stdin:
    pids = []
    for _ in range(int(sys.argv[1])):
        pid = os.fork()
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        pids.append(pid)
    print(" ".join(map(str, pids)), flush=True)
"""


def forking_member(procs, n):
    p = procs([sys.executable, "-c", FORK_ON_DEMAND, str(n)], stdin=subprocess.PIPE,
              stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    return p


def fork_children(p):
    p.stdin.write("fork\n")
    p.stdin.flush()
    return [int(x) for x in p.stdout.readline().split()]


def test_forked_child_is_adopted_at_once(helper, procs):
    """inherit=yes: told of the fork (the compositor passes on the kernel's
    process-event connector), the manager adopts the child right then, not
    at its next 1 s pass: it is a member, with the reserve's policy, when
    the command returns.  Two more forks within the 10 ms gap between such
    passes are adopted by the pass after it."""
    p = forking_member(procs, 1)
    place(helper, "kin policy=idle inherit=yes", p.pid)
    children = []
    try:
        (child,) = fork_children(p)
        children.append(child)
        helper.ok("forked %d %d" % (p.pid, child))
        assert policy_of(child) == os.SCHED_IDLE
        assert " members=2 " in helper.ok("info kin")
        more = fork_children(p) + fork_children(p)
        children += more
        for c in more:
            helper.ok("forked %d %d" % (p.pid, c))
        wait_for(helper, lambda: " members=4 " in helper.ok("info kin"), 3,
                  "the two forks were never adopted")
        assert all(policy_of(c) == os.SCHED_IDLE for c in more)
    finally:
        for c in children:
            kill_grandchild(c)


def member_forks_and_exits(helper, procs, params, before_fork=None):
    """A shell in reserve c (PARAMS) forks a sleeper and exits at once;
    returns (the group's v2 path, the sleeper's pid) once the manager saw
    the exit.  before_fork() runs after the join."""
    sh = procs(["sh", "-c", "read x; sleep 60 & echo $!"], stdin=subprocess.PIPE,
               stdout=subprocess.PIPE, text=True)
    place(helper, "c " + params, sh.pid)
    if before_fork:
        before_fork()
    v2, _ = helper.path("c")
    sh.stdin.write("go\n")
    sh.stdin.flush()
    child = int(sh.stdout.readline())
    try:
        sh.wait(5)
        exited = "event exited reserve=c pid=%d " % sh.pid
        wait_for(helper, lambda: any(e.startswith(exited) for e in helper.events), 3,
                  "the member's exit was never seen")
    except BaseException:
        kill_grandchild(child)
        raise
    return v2, child


def in_group(v2, pid):
    with open(v2 + "/cgroup.procs") as f:
        return str(pid) in f.read().split()


@pytest.mark.parametrize("inherit", ["no", "yes"])
def test_child_of_a_last_member_that_went_at_once_is_not_stranded(helper, procs, inherit):
    """The last member forks and exits before a pass sees the child: the
    child is adopted (inherit) or sent where the member came from, not left
    in the group under its 20% ceiling, a member of nothing."""
    v2, child = member_forks_and_exits(
        helper, procs, "policy=other period=100ms cpu=20%% fallback=pause inherit=%s" % inherit)
    try:
        info = helper.ok("info c")
        if inherit == "yes":
            assert in_group(v2, child) and " members=1 " in info, info
        else:
            assert not in_group(v2, child) and " members=0 " in info, info
    finally:
        kill_grandchild(child)


def test_child_of_the_last_process_member_is_not_stranded_beside_a_thread_member(
        helper, procs):
    """The same with a thread member of another process still in the
    reserve: the last *process* member going is what counts (a thread member
    cannot say where a process came from)."""
    owner, (tid,) = thread_owner(procs)
    v2, child = member_forks_and_exits(
        helper, procs, "policy=other period=100ms cpu=20% fallback=pause",
        lambda: helper.ok("join c %d %d" % (owner.pid, tid)))
    try:
        time.sleep(1.3)  # and a pass
        helper.ok("sync")
        assert not in_group(v2, child)
        assert " members=1 " in helper.ok("info c")
    finally:
        kill_grandchild(child)


def test_thread_member_refused_a_ceiling_only_a_freeze_could_hold(helper, procs):
    """A thread moves alone in the v1 cpu tree only: a ceiling the kernel's
    CFS bandwidth takes holds it there, one outside its range (period over
    1 s) would be a freeze of a v2 group the thread is not in."""
    if not os.path.exists(CG + "/unified"):
        pytest.skip("hybrid layout only (on cgroup v2 thread members take no limit)")
    owner, (tid,) = thread_owner(procs)
    helper.ok("reserve long policy=other period=2s cpu=20% fallback=pause")
    reply = helper.cmd("join long %d %d" % (owner.pid, tid))
    assert reply.startswith("err ") and "join the process instead" in reply, reply
    helper.ok("reserve short policy=other period=100ms cpu=20% fallback=pause")
    helper.ok("join short %d %d" % (owner.pid, tid))


def test_group_listing_stays_open_and_is_given_back(helper, procs):
    """Every pass lists a reserve's group for children to adopt, through
    its cgroup.procs kept open (read again from the start, it lists the
    group anew): children forked after it was opened are adopted through
    it, one descriptor serves every pass, and deleting the reserve closes
    it."""
    p = forking_member(procs, 1)
    place(helper, "kept policy=idle inherit=yes", p.pid)
    listing = helper.path("kept")[0] + "/cgroup.procs"
    children = []
    try:
        for members in (2, 3, 4):
            time.sleep(0.05)  # past the gap between two fork passes
            (child,) = fork_children(p)
            children.append(child)
            helper.ok("forked %d %d" % (p.pid, child))
            wait_for(helper, lambda: " members=%d " % members in helper.ok("info kept"), 3,
                      "child %d was not adopted" % child)
            assert policy_of(child) == os.SCHED_IDLE
            assert helper.open_files().count(listing) == 1, helper.open_files()
    finally:
        for c in children:
            kill_grandchild(c)
    helper.ok("leave %d" % p.pid)
    wait_for(helper, lambda: " members=0 " in helper.ok("info kept"), 3,
              "the killed children are still members")
    helper.ok("delete kept")
    assert listing not in helper.open_files()


def test_forked_child_without_inherit_is_sent_back_at_once(helper, procs):
    """Without inherit the child goes back to its parent's original groups
    when the manager is told of the fork (it started in the reserve's)."""
    p = forking_member(procs, 1)
    before = cgroup_lines(p.pid)
    place(helper, "solo policy=idle", p.pid)
    assert cgroup_lines(p.pid) != before
    (child,) = fork_children(p)
    try:
        helper.ok("forked %d %d" % (p.pid, child))
        assert cgroup_lines(child) == before
        assert policy_of(child) == os.SCHED_OTHER
        assert " members=1 " in helper.ok("info solo")
    finally:
        kill_grandchild(child)


def test_fork_reports_of_strangers_are_ignored(helper, procs):
    p = busy(procs)
    helper.ok("forked 1 %d" % p.pid)
    helper.ok("forked %d %d" % (p.pid, p.pid))
    helper.ok("forked 999999 999998")
    assert policy_of(p.pid) == os.SCHED_OTHER


def test_new_thread_of_member_gets_policy_at_once(rt_bandwidth, helper, procs):
    """A thread a fifo member starts is SCHED_OTHER (reset on fork); told of
    it, the manager makes it fifo right then, not at its next 1 s pass."""
    p = procs([sys.executable, THREAD_ON_DEMAND], stdin=subprocess.PIPE,
              stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    place(helper, "f policy=fifo priority=10 period=100ms cpu=50% fallback=other", p.pid)
    p.stdin.write("go\n")
    p.stdin.flush()
    tid = int(p.stdout.readline())
    helper.ok("thread %d %d" % (p.pid, tid))
    assert policy_of(tid) == os.SCHED_FIFO


def test_rttime_bound_stays_while_a_thread_member_is_real_time(rt_bandwidth, helper, procs):
    """RLIMIT_RTTIME is per process: with two threads of one process in fifo
    reserves, the first to leave does not lift the bound the other still
    runs under; the last gives back the limit from before the first."""
    p, tids = thread_owner(procs, 2)
    before = resource.prlimit(p.pid, resource.RLIMIT_RTTIME)
    for i, tid in enumerate(tids):
        helper.ok("reserve rt%d policy=fifo priority=10 period=100ms cpu=20%% fallback=other" % i)
        helper.ok("join rt%d %d %d" % (i, p.pid, tid))
    bounded = resource.prlimit(p.pid, resource.RLIMIT_RTTIME)
    assert bounded != before and bounded[1] != resource.RLIM_INFINITY, bounded
    helper.ok("leave %d %d" % (p.pid, tids[0]))
    assert policy_of(tids[1]) == os.SCHED_FIFO
    assert resource.prlimit(p.pid, resource.RLIMIT_RTTIME) == bounded
    helper.cmd("sync")
    # Not even tried (without CAP_SYS_RESOURCE a try shows as this error).
    assert not [e for e in helper.events if "RLIMIT_RTTIME" in e], helper.events
    helper.ok("leave %d %d" % (p.pid, tids[1]))
    helper.cmd("sync")
    check_rttime_restored(p.pid, before, bounded, helper.events)


def test_member_made_fifo_by_a_change_gets_the_rttime_bound(rt_bandwidth, helper, procs):
    """A member is bounded when its reserve becomes fifo, not only when it
    joins one: a window clicked idle (or real-time) and then fifo kept its
    process's RLIMIT_RTTIME unlimited.  Leaving gives the limit back."""
    p = procs(["sleep", "60"])
    before = resource.prlimit(p.pid, resource.RLIMIT_RTTIME)
    helper.ok("class %d policy=idle" % p.pid)
    assert resource.prlimit(p.pid, resource.RLIMIT_RTTIME) == before
    helper.ok("class %d policy=fifo priority=10" % p.pid)
    assert policy_of(p.pid) == os.SCHED_FIFO
    bounded = resource.prlimit(p.pid, resource.RLIMIT_RTTIME)
    assert bounded == (5000000, 5000000) != before, bounded
    helper.ok("leave %d" % p.pid)
    helper.cmd("sync")
    check_rttime_restored(p.pid, before, bounded, helper.events)


def test_process_joining_folds_in_its_thread_members(rt_bandwidth, helper, procs):
    """A process joining the reserve its thread already joined alone takes
    that thread in: one member, and leaving leaves nothing behind (the
    thread stayed listed, and the next pass made it fifo again outside
    the group)."""
    p, (tid,) = thread_owner(procs)
    before = resource.prlimit(p.pid, resource.RLIMIT_RTTIME)
    helper.ok("reserve f policy=fifo priority=10 period=100ms cpu=20% fallback=other")
    helper.ok("join f %d %d" % (p.pid, tid))
    bounded = resource.prlimit(p.pid, resource.RLIMIT_RTTIME)
    helper.ok("join f %d" % p.pid)
    assert " members=1 " in helper.ok("info f")
    assert policy_of(tid) == os.SCHED_FIFO and policy_of(p.pid) == os.SCHED_FIFO
    helper.ok("leave %d" % p.pid)
    assert " members=0 " in helper.ok("info f")
    time.sleep(1.3)  # past a housekeeping pass
    helper.ok("sync")
    assert policy_of(tid) == os.SCHED_OTHER and policy_of(p.pid) == os.SCHED_OTHER
    with open("/proc/%d/task/%d/cgroup" % (p.pid, tid)) as f:
        assert "/%s/" % ROOT not in f.read()
    check_rttime_restored(p.pid, before, bounded, helper.events)


def test_single_threads_cannot_be_paused(helper, procs):
    """The freezer acts on a group's processes, which a single thread's are
    not: a thread cannot join a pause reserve, and a reserve holding a
    thread cannot become one; both say to join the process instead."""
    p, (tid,) = thread_owner(procs)
    helper.ok("reserve frz policy=pause")
    reply = helper.cmd("join frz %d %d" % (p.pid, tid))
    assert reply.startswith("err") and "join the process instead" in reply, reply
    helper.ok("reserve one policy=other nice=5")
    helper.ok("join one %d %d" % (p.pid, tid))
    reply = helper.cmd("reserve one policy=pause")
    assert reply.startswith("err") and "single threads" in reply, reply
    assert "policy=other" in helper.ok("info one")


def test_stranger_left_in_deleted_paused_group_is_released(helper, procs):
    """A process we never tracked that sits in a reserve's group when the
    reserve is deleted keeps the group from being removed (EBUSY).  It is
    not left there under the group's settings: the next 1 s pass sends it
    back and removes the group.  Meanwhile a new reserve of that name gets a
    group of its own.  (One there while the last member leaves is sent back
    then: test_child_of_a_last_member_that_went_at_once_is_not_stranded.)"""
    member = procs(["sleep", "60"])
    stranger = busy(procs, 1)
    place(helper, "stop policy=pause", member.pid)
    v2, cpu = helper.path("stop")
    wait_frozen(v2, True, "cgroup.events never said frozen")
    helper.ok("leave %d" % member.pid)
    for tree in (v2, cpu):
        with open(tree + "/cgroup.procs", "w") as f:
            f.write(str(stranger.pid))
    helper.ok("delete stop")
    assert any("reserve=stop" in e and "cannot remove group stop: Device or resource busy" in e
               for e in helper.events), helper.events
    # A new reserve of the same name does not take over the group (nor the stranger).
    place(helper, "stop policy=other nice=5", member.pid)
    assert helper.path("stop")[0] == v2 + "~1"
    deadline = time.monotonic() + 3
    while os.path.exists(v2) or os.path.exists(cpu):
        assert time.monotonic() < deadline, "the group was not removed at a later pass"
        helper.ok("sync")
        time.sleep(0.05)
    assert not any(ROOT in line for line in cgroup_lines(stranger.pid))
    assert share(stranger.pid, 0.5) > 0.5, "the stranger should run again"


def test_kill9_manager_next_instance_thaws(procs):
    p, v2 = kill9_frozen(procs, guardian=False)
    try:
        time.sleep(0.3)
        assert frozen(v2), "nothing should have thawed it without a guardian"
        h = Helper()
        try:
            assert not os.path.exists(v2), "reconcile should remove the stale group"
            assert share(p.pid, 0.5) > 0.5
        finally:
            h.close()
    finally:
        force_cleanup(ROOT)


def test_guardian_sees_the_manager_die_though_a_child_holds_its_socket(procs):
    """A child the manager's process forked without exec (an embedder's
    helper) holds the guardian's socket end too: killed (-9), the manager
    left its paused member frozen until that child exited, since the end
    never closed.  The guardian also watches the manager's process (a
    pidfd), so it thaws at once.  And a clean exit, with such a child
    alive, no longer waits for the guardian for ever: the socket is shut
    down, not just closed here."""
    p = busy(procs, 1)
    h = Helper(guardian=True)
    holder = None
    try:
        place(h, "stop policy=pause", p.pid)
        v2, _ = h.path("stop")
        wait_frozen(v2, True, "cgroup.events never said frozen")
        holder = int(h.ok("hold 30").split()[1])
        kill9(h)
        wait_frozen(v2, False, "the guardian did not thaw while a child held its socket",
                    timeout=3)
        Helper().close()  # the next instance reconciles the leftover group
        h = Helper(guardian=True)
        os.kill(holder, signal.SIGKILL)
        holder = int(h.ok("hold 30").split()[1])
        h.proc.stdin.write("quit\n")
        h.proc.stdin.flush()
        h.proc.wait(timeout=5)
    finally:
        h.close()
        if holder:
            with contextlib.suppress(ProcessLookupError):
                os.kill(holder, signal.SIGKILL)
        force_cleanup(ROOT)


def test_guardian_holds_no_inherited_descriptor(procs):
    """The guardian closes every descriptor it inherits, however high (a
    compositor raises RLIMIT_NOFILE): a client socket held there would
    outlive the compositor, and its pipe's write end would keep it from
    ever seeing the manager die.  It keeps its standard streams and the
    read end, and opens a pidfd of the manager."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    high = 1500
    if hard != resource.RLIM_INFINITY and hard <= high:
        pytest.skip("RLIMIT_NOFILE hard limit %d is too low for fd %d" % (hard, high))
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, high + 1), hard))
    r, w = os.pipe()
    try:
        os.dup2(w, high)
        with running_helper(pass_fds=(high,)) as h:
            pid = h.proc.pid

            def guardians():
                with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
                    kids = f.read().split()
                found = []
                for k in kids:
                    with open("/proc/%s/comm" % k) as f:
                        if f.read().strip() == "qos-guardian":
                            found.append(int(k))
                return found
            # The child names itself once it has closed what it inherited,
            # which under load may come after the manager is ready.
            wait_for(h, lambda: guardians(), 5, "no child named qos-guardian")
            assert len(guardians()) == 1, guardians()
            g = guardians()[0]
            fds = [int(fd) for fd in os.listdir("/proc/%d/fd" % g)]
            kinds = sorted(os.readlink("/proc/%d/fd/%d" % (g, fd)).split(":")[0]
                           for fd in fds if fd >= 3)
            # its end of the socket, and a pidfd of the manager it opened
            assert kinds == ["anon_inode", "socket"], (sorted(fds), kinds)
            assert high not in fds
    finally:
        for fd in (r, w, high):
            with contextlib.suppress(OSError):
                os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_kill9_manager_guardian_thaws(procs):
    p, v2 = kill9_frozen(procs, guardian=True)
    try:
        wait_frozen(v2, False, "guardian did not thaw")
        assert share(p.pid, 0.5) > 0.5
        Helper().close()  # the next instance reconciles the leftover group
        assert not os.path.exists(v2)
    finally:
        force_cleanup(ROOT)


def test_killing_the_managers_cgroup_spares_the_guardian(procs):
    """The manager's whole cgroup killed at once (cgroup.kill, as when its
    unit is stopped or the OOM killer takes the group) while a member is
    paused: the guardian runs in a leaf of the root of its own, ".guardian",
    so it is not killed with it, and thaws the member.  A clean close of the
    next instance removes the leaf with the root."""
    v2_base = CG + "/unified" if os.path.exists(CG + "/unified/cgroup.procs") else CG
    session = "%s/qosway-test-session-%d" % (v2_base, os.getpid())
    os.mkdir(session)
    p = busy(procs, 1)
    try:
        h = Helper(guardian=True, prefix=[
            "sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', session])
        try:
            place(h, "stop policy=pause", p.pid)
            v2, _ = h.path("stop")
            wait_frozen(v2, True, "cgroup.events never said frozen")
            (guardian,) = wait_for(h, lambda: live_guardians(h.proc.pid), 5, "no guardian")
            leaf = os.path.dirname(v2) + "/.guardian"
            with open(leaf + "/cgroup.procs") as f:
                assert f.read().split() == [str(guardian)]
            with open(session + "/cgroup.kill", "w") as f:
                f.write("1")
            h.proc.wait(5)
        except BaseException:
            h.close()
            raise
        wait_frozen(v2, False, "the guardian did not thaw the member", timeout=3)
        assert share(p.pid, 0.5) > 0.5
        Helper().close()  # reconciles the leftover group; closing removes the root
        assert not os.path.exists(leaf) and not os.path.exists(os.path.dirname(v2))
    finally:
        force_cleanup(ROOT)
        rmdir_when_empty(session, 50)


def test_kill9_manager_guardian_demotes_real_time_members(rt_bandwidth, procs):
    """With the manager killed, nothing demotes a busy fifo member at its
    limit any more, and RLIMIT_RTTIME's SIGXCPU would end it: the guardian
    takes every fifo, rr and deadline thread under the root back to
    time-sharing (a thread member too), and the processes live on."""
    fifo = busy(procs)
    dl = procs(["sleep", "30"])
    owner, (tid,) = thread_owner(procs)
    h = Helper(guardian=True)
    try:
        place(h, "rtf policy=fifo priority=10 period=100ms cpu=50% fallback=other", fifo.pid)
        place(h, "rtd policy=qos period=100ms cpu=10% fallback=pause", dl.pid)
        h.ok("reserve rtt policy=rr priority=5 period=100ms cpu=10% fallback=other")
        h.ok("join rtt %d %d" % (owner.pid, tid))
        assert policy_of(dl.pid) == 6 and policy_of(tid) == os.SCHED_RR
        kill9(h)
    except BaseException:
        h.close()
        raise
    try:
        for t in (fifo.pid, dl.pid, tid):
            give_up = time.monotonic() + 5
            while policy_of(t) != os.SCHED_OTHER:
                assert time.monotonic() < give_up, (t, policy_of(t))
                time.sleep(0.02)
        assert fifo.poll() is None and dl.poll() is None and owner.poll() is None
        Helper().close()  # the next instance reconciles the leftover groups
    finally:
        force_cleanup(ROOT)


def test_kill9_guardian_is_replaced_and_kill9_manager_still_restores(rt_bandwidth, procs):
    """The guardian killed (-9) while a member is paused and fifo members
    run: the manager sees it die at once (a pidfd in its epoll set), says
    so in an error event and starts another, which a later kill -9 of the
    manager finds ready to do the first's work: the paused member thawed,
    the fifo process and the rr thread member back to other.  (The manager
    used to go on with no guardian and no word, and its death left them
    frozen and real-time.)"""
    paused = busy(procs, 1)
    # asleep: a busy one is other whenever its limit's fallback holds it
    fifo = procs(["sleep", "30"])
    owner, (tid,) = thread_owner(procs)
    h = Helper(guardian=True)
    try:
        place(h, "stop policy=pause", paused.pid)
        v2, _ = h.path("stop")
        wait_frozen(v2, True, "cgroup.events never said frozen")
        place(h, "rtf policy=fifo priority=10 period=100ms cpu=50% fallback=other", fifo.pid)
        h.ok("reserve rtt policy=rr priority=5 period=100ms cpu=10% fallback=other")
        h.ok("join rtt %d %d" % (owner.pid, tid))
        assert policy_of(fifo.pid) == os.SCHED_FIFO and policy_of(tid) == os.SCHED_RR
        said = kill_guardian(h)
        assert "a new one" in said, said
        assert frozen(v2) and policy_of(fifo.pid) == os.SCHED_FIFO
        kill9(h)
    except BaseException:
        h.close()
        raise
    try:
        wait_frozen(v2, False, "the new guardian did not thaw", timeout=5)
        for t in (fifo.pid, tid):
            give_up = time.monotonic() + 5
            while policy_of(t) != os.SCHED_OTHER:
                assert time.monotonic() < give_up, (t, policy_of(t))
                time.sleep(0.02)
        assert share(paused.pid, 0.5) > 0.5
        assert fifo.poll() is None and owner.poll() is None
        Helper().close()  # the next instance reconciles the leftover groups
    finally:
        force_cleanup(ROOT)


def test_no_guardian_refuses_real_time_and_pauses_until_one_runs(procs):
    """When no guardian can be started after one died (here the manager's
    pids group allows no fork), nothing would undo a real-time class or a
    freeze at the manager's death: joins that would give either are
    refused as forbidden, with the reason, while others go on; a guardian
    is started at a 1 s pass once forks work again, and pauses with it."""
    pids = CG + "/pids"
    if not os.path.exists(pids + "/tasks") or os.path.exists(CG + "/cgroup.controllers"):
        pytest.skip("needs the v1 pids hierarchy (hybrid layout) to refuse the manager a fork")
    group = "%s/%s-pids" % (pids, ROOT)
    p = busy(procs, 1)
    h = Helper(guardian=True)
    try:
        os.mkdir(group)
        with open(group + "/cgroup.procs", "w") as f:
            f.write(str(h.proc.pid))
        with open(group + "/pids.current") as f:
            current = f.read().strip()
        with open(group + "/pids.max", "w") as f:
            f.write(current)
        said = kill_guardian(h, replaced=False)
        assert "no new one could be started" in said, said
        h.ok("reserve rtf policy=fifo priority=10 period=100ms cpu=10% fallback=other")
        h.ok("reserve stop policy=pause")
        for name in ("rtf", "stop"):
            reply = h.cmd("join %s %d" % (name, p.pid))
            assert reply.startswith("err") and "no thaw guardian runs" in reply, reply
            assert reply.endswith("[forbidden]"), reply
        place(h, "calm policy=other nice=5", p.pid)
        reply = h.cmd("reserve calm policy=pause")
        assert reply.startswith("err") and "no thaw guardian runs" in reply, reply
        assert policy_of(p.pid) == os.SCHED_OTHER
        with open(group + "/pids.max", "w") as f:
            f.write("max")
        give_up = time.monotonic() + 3
        while not live_guardians(h.proc.pid):
            assert time.monotonic() < give_up, "no guardian started once forks worked again"
            h.ok("sync")
            time.sleep(0.05)
        h.ok("join stop %d" % p.pid)
        wait_frozen(h.path("stop")[0], True, "cgroup.events never said frozen")
    finally:
        h.close()
        force_cleanup(ROOT)
        rmdir_when_empty(group, 100)  # the helper and its guardian may still be exiting
        assert not os.path.exists(group), "test cgroup %s left behind" % group


def test_clean_close_after_the_guardian_died_removes_its_leaf(procs):
    """A guardian that died and could not be replaced leaves its leaf of
    the root (".guardian") empty: a clean close still removes it, and with
    it the root, rather than leave both behind."""
    pids = CG + "/pids"
    if not os.path.exists(pids + "/tasks") or os.path.exists(CG + "/cgroup.controllers"):
        pytest.skip("needs the v1 pids hierarchy (hybrid layout) to refuse the manager a fork")
    group = "%s/%s-pids" % (pids, ROOT)
    root = "%s/unified/%s" % (CG, ROOT)
    h = Helper(guardian=True)
    try:
        os.mkdir(group)
        with open(group + "/cgroup.procs", "w") as f:
            f.write(str(h.proc.pid))
        with open(group + "/pids.current") as f:
            current = f.read().strip()
        with open(group + "/pids.max", "w") as f:
            f.write(current)
        kill_guardian(h, replaced=False)
        assert os.path.isdir(root + "/.guardian")
        h.close()
        assert h.quit_cleanly
        assert not os.path.exists(root), os.listdir(root)
    finally:
        h.close()
        force_cleanup(ROOT)
        rmdir_when_empty(group, 100)  # the helper may still be exiting
        assert not os.path.exists(group), "test cgroup %s left behind" % group


def dl_total_bw():
    """The root domain's SCHED_DEADLINE bandwidth in use (1/1048576 CPU),
    from debugfs; None where it cannot be read."""
    try:
        with open("/sys/kernel/debug/sched/debug") as f:
            for line in f:
                if "dl_bw->total_bw" in line:
                    return int(line.split()[-1])
    except (OSError, ValueError):
        pass
    return None


def test_kill9_guardian_gives_back_deadline_bandwidth(procs):
    """The guardian demotes a sleeping deadline member the way leave does:
    switched straight to other, the kernel (6.18) kept its 10% in the
    books for good, and every crash ate that much of the capacity later
    qos joins need."""
    before = dl_total_bw()
    if before is None:
        pytest.skip("no /sys/kernel/debug/sched/debug to read deadline bandwidth from")
    dl = procs(["sleep", "30"])
    h = Helper(guardian=True)
    try:
        place(h, "rtd policy=qos period=100ms cpu=10% fallback=pause", dl.pid)
        assert policy_of(dl.pid) == 6
        time.sleep(0.3)  # asleep past its 0-lag time
        kill9(h)
    except BaseException:
        h.close()
        raise
    try:
        give_up = time.monotonic() + 5
        while policy_of(dl.pid) != os.SCHED_OTHER:
            assert time.monotonic() < give_up, policy_of(dl.pid)
            time.sleep(0.02)
        dl.kill()
        dl.wait()
        Helper().close()
        after = dl_total_bw()
        # 10% of a CPU is 104857; a thread's rounding is a few units
        assert after - before < 10000, (before, after)
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


def test_leaving_after_origin_removed_goes_to_the_top_not_stays_frozen(helper, procs, origin):
    """A member whose origin group was removed while it was away (a
    transient scope that emptied) leaves a paused reserve for the top of the
    tree, not for nowhere: it is out of the frozen group and runs, and an
    error event says where it went."""
    rel, dirs = origin
    p = procs(["sh", "-c", "while :; do :; done"])
    move_to(dirs, p.pid)
    place(helper, "held policy=pause", p.pid)
    v2, _ = helper.path("held")
    wait_frozen(v2, True, "cgroup.events never said frozen")
    for d in dirs:
        os.rmdir(d)
    helper.ok("leave %d" % p.pid)
    assert cgroup_of(p.pid) == {"v2": "/", "cpu": "/"}, cgroup_of(p.pid)
    assert share(p.pid, 0.5) > 0.2
    helper.cmd("reserves")  # collects the events printed meanwhile
    assert any(e.startswith("event error reserve=held ") and "top of the tree" in e
               for e in helper.events), helper.events


def test_leaving_after_origin_removed_goes_to_its_nearest_ancestor(helper, procs, origin):
    """A member whose scope was removed while it was away (systemd removes a
    transient scope once it empties) goes back to the nearest cgroup above it
    that still exists (its slice), not to the top of the tree."""
    rel, dirs = origin
    inner = [d + "/scope" for d in dirs]
    for d in inner:
        os.mkdir(d)
    p = procs(["sleep", "30"])
    try:
        move_to(inner, p.pid)
        place(helper, "away policy=other nice=2", p.pid)
        for d in inner:
            os.rmdir(d)
        helper.ok("leave %d" % p.pid)
        assert cgroup_of(p.pid) == {"v2": rel, "cpu": rel}, cgroup_of(p.pid)
        helper.ok("sync")
        assert any(e.startswith("event error reserve=away ") and "moved to %s" % rel in e
                   for e in helper.events), helper.events
    finally:
        p.kill()
        p.wait()
        for d in inner:
            if os.path.isdir(d):
                os.rmdir(d)


def test_member_joining_during_a_cut_to_idle_fallback_stays_time_sharing(helper, procs):
    """While a cut-to-idle reserve's group is idle (cpu.idle = 1: the whole
    fallback), a process that joins keeps SCHED_OTHER: it used to be made
    SCHED_IDLE, which nothing undid at the boundary, so it ran idle for good."""
    a = busy(procs, 1)
    place(helper, "cut policy=other period=1s cpu=5% fallback=idle", a.pid)
    group_idle = group_idle_of(helper, "cut")
    wait_for(helper, group_idle, 3, "the group never went idle")
    b = busy(procs, 1)
    helper.ok("join cut %d" % b.pid)
    assert policy_of(b.pid) == os.SCHED_OTHER
    wait_for(helper, lambda: not group_idle(), 3, "the group never left its fallback")
    assert policy_of(b.pid) == os.SCHED_OTHER and policy_of(a.pid) == os.SCHED_OTHER


@pytest.mark.skipif(os.path.exists(CG + "/cgroup.controllers"),
                    reason="only the hybrid layout moves single threads (v1 cpu tree)")
def test_cut_to_idle_threads_switched_one_by_one_go_back(helper, procs):
    """With a thread member in it, a cut-to-idle reserve's fallback makes
    each thread SCHED_IDLE; the thread member leaves before the boundary,
    after which the group alone could be the fallback.  The process
    member's threads, switched one by one, still go back to other (they
    stayed idle for good)."""
    a = busy(procs, 1)
    owner, (tid,) = thread_owner(procs)
    place(helper, "cut policy=other period=1s cpu=5% fallback=idle", a.pid)
    helper.ok("join cut %d %d" % (owner.pid, tid))
    wait_for(helper, lambda: policy_of(a.pid) == os.SCHED_IDLE, 3,
              "the member never went idle")
    helper.ok("leave %d %d" % (owner.pid, tid))
    wait_for(helper, lambda: policy_of(a.pid) == os.SCHED_OTHER, 3,
              "the member stayed idle past the boundary")


def test_kill9_next_instance_returns_members_where_they_came_from(procs, origin):
    """Reconciliation after a crash sends a member back to the cgroups it
    came from (not to the top of the tree) with the nice level it had, and a
    child born in the reserve goes where its parent came from.  The origin
    is recorded on the group before the move (qos/journal.h)."""
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
def test_child_of_a_thread_member_is_sent_home(helper, procs):
    """A process a thread member's thread forks is born in the reserve's cpu
    group only (its process's other cgroups are elsewhere), a member of
    nothing: the next pass sends it back where the thread came from, even
    with inherit (it cannot be frozen or limited with the group there),
    instead of leaving it under the reserve's nice and limits for good."""
    p, tid, home, child = thread_member_forks(helper, procs)
    try:
        wait_for(helper, lambda: cgroup_of(child)["cpu"] == home["cpu"], 3,
                  "the child stayed in the reserve's cpu group: %r" % cgroup_of(child))
        assert os.getpriority(os.PRIO_PROCESS, child) == 0
        assert "members=1" in helper.ok("info tf")
    finally:
        os.kill(child, signal.SIGKILL)


@pytest.mark.skipif(os.path.exists(CG + "/cgroup.controllers"),
                    reason="only the hybrid layout moves single threads (v1 cpu tree)")
def test_child_of_a_thread_member_goes_home_when_the_thread_leaves(helper, procs):
    """... and when the thread member leaves before a pass saw the child, the
    child goes home with it, not left behind in the group."""
    p, tid, home, child = thread_member_forks(helper, procs)
    try:
        helper.ok("leave %d %d" % (p.pid, tid))
        assert cgroup_of(child)["cpu"] == home["cpu"], cgroup_of(child)
    finally:
        os.kill(child, signal.SIGKILL)


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


def test_fifo_member_leaving_gets_its_rttime_back(rt_bandwidth, helper, procs):
    p = procs(["sleep", "60"])
    before = resource.prlimit(p.pid, resource.RLIMIT_RTTIME)
    place(helper, "rt policy=fifo priority=10 period=100ms cpu=50% fallback=other", p.pid)
    bounded = resource.prlimit(p.pid, resource.RLIMIT_RTTIME)
    helper.ok("leave %d" % p.pid)
    assert policy_of(p.pid) == os.SCHED_OTHER
    check_rttime_restored(p.pid, before, bounded, helper.events)


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


def test_leaving_member_takes_its_origin_record_along(helper, procs, origin):
    """The record lives only while the member is in the group."""
    rel, dirs = origin
    a, b = procs(["sleep", "60"]), procs(["sleep", "60"])
    move_to(dirs, a.pid)
    place(helper, "pair policy=other", a.pid)
    helper.ok("join pair %d" % b.pid)
    v2, _ = helper.path("pair")
    names = sorted(n for n in os.listxattr(v2) if n.startswith("user.qosway."))
    assert names == sorted(["user.qosway.%d" % a.pid, "user.qosway.%d" % b.pid])
    helper.ok("leave %d" % a.pid)
    assert [n for n in os.listxattr(v2) if n.startswith("user.qosway.")] == \
        ["user.qosway.%d" % b.pid]
    assert cgroup_of(a.pid) == {"v2": rel, "cpu": rel}


def test_auto_reserve_passes_to_member_then_dies_empty(helper, procs):
    owner = procs(["sleep", "60"])
    other = procs(["sleep", "60"])
    helper.ok("class %d policy=other nice=5" % owner.pid)
    first, second = "auto-%d" % owner.pid, "auto-%d" % other.pid
    assert "owner=%d auto=1" % owner.pid in helper.ok("info " + first)
    helper.ok("join %s %d" % (first, other.pid))
    v2, cpu = helper.path(first)
    assert os.path.isdir(v2) and os.path.isdir(cpu)

    # The owner exits: the reserve, its group and its parameters pass to the
    # remaining member under that member's name (thesis 3.7.2).
    owner.kill()
    owner.wait()
    wait_for(helper, lambda: helper.cmd("info " + second).startswith("ok"), 5,
              "the automatic reserve was not passed on")
    info = helper.ok("info " + second)
    assert "members=1" in info and "owner=%d auto=1" % other.pid in info, info
    assert "nice=5" in info, info
    assert helper.cmd("info " + first).startswith("err")
    assert any(e.startswith("event renamed reserve=%s pid=%d" % (second, other.pid))
               and e.endswith("msg=" + first) for e in helper.events), helper.events
    # The group stays where it is (cgroup2 cannot rename) and keeps the member.
    assert helper.path(second) == (v2, cpu)
    for group in (v2, cpu):
        with open(group + "/cgroup.procs") as f:
            assert f.read().split() == [str(other.pid)]
    assert os.getpriority(os.PRIO_PROCESS, other.pid) == 5

    # The last member exits: the reserve and its groups are deleted.
    other.kill()
    other.wait()
    wait_for(helper, lambda: helper.cmd("info " + second).startswith("err"), 5,
              "the empty automatic reserve was not deleted")
    assert any(e.startswith("event deleted reserve=" + second) for e in helper.events)
    assert not os.path.exists(v2) and not os.path.exists(cpu)


def test_auto_reserve_owner_leaving_alive_keeps_it(helper, procs):
    """A leave (not an exit) of the owner also passes the reserve on; leaving
    the last member deletes it, and the process is back where it was."""
    owner = procs(["sleep", "60"])
    other = procs(["sleep", "60"])
    with open("/proc/%d/cgroup" % owner.pid) as f:
        before = f.read()
    helper.ok("class %d policy=other nice=3" % owner.pid)
    helper.ok("join auto-%d %d" % (owner.pid, other.pid))
    helper.ok("leave %d" % owner.pid)
    assert "owner=%d" % other.pid in helper.ok("info auto-%d" % other.pid)
    with open("/proc/%d/cgroup" % owner.pid) as f:
        assert f.read() == before
    assert os.getpriority(os.PRIO_PROCESS, owner.pid) == 0
    v2, cpu = helper.path("auto-%d" % other.pid)
    helper.ok("leave %d" % other.pid)
    assert helper.cmd("info auto-%d" % other.pid).startswith("err")
    with open("/proc/%d/cgroup" % other.pid) as f:
        assert f.read() == before
    assert os.getpriority(os.PRIO_PROCESS, other.pid) == 0
    assert not os.path.exists(v2) and not os.path.exists(cpu)


SPAWNER = r"""
import os, sys, time
sys.stdout.write("ready\n"); sys.stdout.flush()
for line in sys.stdin:
    pid = os.fork()
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    print(pid, flush=True)
"""


def _cgroups(pid):
    with open("/proc/%d/cgroup" % pid) as f:
        return f.read()


@pytest.mark.parametrize("inherit", ["yes", "no"])
def test_inherit_children(helper, procs, inherit):
    """With inherit a member's child joins the reserve (and leaving puts it
    where its parent came from); without, it is moved back out."""
    parent = procs(["chrt", "-b", "0", sys.executable, "-c", SPAWNER], stdin=subprocess.PIPE,
                   stdout=subprocess.PIPE, text=True)
    assert parent.stdout.readline().strip() == "ready"
    before = _cgroups(parent.pid)
    place(helper, "kids policy=other nice=4 inherit=%s" % inherit, parent.pid)
    assert policy_of(parent.pid) == os.SCHED_OTHER
    v2, _ = helper.path("kids")
    parent.stdin.write("fork\n")
    parent.stdin.flush()
    child = int(parent.stdout.readline())
    try:
        assert os.getpriority(os.PRIO_PROCESS, child) == 4  # fork keeps nice
        if inherit == "yes":
            wait_for(helper, lambda: "members=2" in helper.ok("info kids"), 3,
                      "the child was not adopted")
            assert any(e.startswith("event joined reserve=kids pid=%d" % child) and
                       e.endswith("inherited from %d" % parent.pid) for e in helper.events)
            with open(v2 + "/cgroup.procs") as f:
                assert sorted(f.read().split()) == sorted([str(parent.pid), str(child)])
            # A member in its own right: it stays when the parent leaves, and
            # leaving takes it to the parent's original cgroups and nice.
            helper.ok("leave %d" % parent.pid)
            assert "members=1" in helper.ok("info kids")
            helper.ok("leave %d" % child)
            assert _cgroups(child) == before
            assert os.getpriority(os.PRIO_PROCESS, child) == 0
            assert policy_of(child) == os.SCHED_BATCH  # the parent's own class
        else:
            wait_for(helper, lambda: _cgroups(child) == before, 3,
                      "the child was left in the reserve's group")
            assert os.getpriority(os.PRIO_PROCESS, child) == 0
            assert policy_of(child) == os.SCHED_BATCH  # the parent's own class
            assert "members=1" in helper.ok("info kids")
            assert os.getpriority(os.PRIO_PROCESS, parent.pid) == 4
    finally:
        kill_grandchild(child)


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
