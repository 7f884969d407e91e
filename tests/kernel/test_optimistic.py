"""Kernel tests for optimistic qos (qos -> other): a SCHED_DEADLINE guarantee
that drops to time-sharing once the slice is used, so the member runs on past
its slice when the CPU is free (qos/reserve/optimistic.c).

The manager moves threads between SCHED_DEADLINE and the fallback at every
overrun and period; a thread put back into the deadline class at the wrong
moment never runs again (see optimistic.c).  So besides the shares, these
tests require that the member makes progress in every 100 ms window and dies
at once from SIGKILL.
"""
import os
import resource
import subprocess
import sys
import time

import pytest

from kernel_helpers import (
    PERIODIC, THREAD_ON_DEMAND, assert_no_test_cgroup_left, busy, cpu_ns, group_idle_of, place,
    policy_of, pytestmark, running_helper, wait_for)

assert pytestmark  # skipped with kernel_helpers' printed reason when not root

HZ = os.sysconf("SC_CLK_TCK")
SCHED_DEADLINE = 6


def progress(pid, seconds, window=0.1):
    """(share of one CPU, windows without any CPU time) over `seconds`."""
    first = last = cpu_ns(pid)
    t0 = time.monotonic()
    flat = 0
    while time.monotonic() - t0 < seconds:
        time.sleep(window)
        now = cpu_ns(pid)
        flat += now == last
        last = now
    return (last - first) / ((time.monotonic() - t0) * 1e9), flat


def _cpu_ticks():
    """(busy, steal) clock ticks of all CPUs together, from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[0] + v[1] + v[2] + v[5] + v[6], v[7]


def _top_cpu(before, seconds):
    """The processes that used most CPU since `before` (pid -> ticks)."""
    now = _proc_ticks()
    top = sorted(((now[p][0] - before.get(p, (0, ""))[0]) / (seconds * HZ),
                  now[p][1], p) for p in now)
    return ", ".join("%s[%d] %.2f" % (c, p, u) for u, c, p in reversed(top[-4:]))


def _proc_ticks():
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    comm, rest = f.read().rsplit(")", 1)
                v = rest.split()
                out[int(d)] = (int(v[11]) + int(v[12]), comm.split("(", 1)[1])
            except (OSError, IndexError):
                pass
    return out


def control_loop(procs, idle):
    """A plain busy loop, in the idle class when idle: a process without any
    reserve, competing with whatever else runs exactly as the member does
    once it is past its slice."""
    args = ["sh", "-c", "while :; do :; done"]
    return procs(["chrt", "--idle", "0"] + args if idle else args)


def ran_past(s, c, reserved, alone):
    """Past its reservation like the control beside it: at least `alone` of
    a CPU (a quiet machine), or, whatever else runs, a part beyond the
    reservation that is a fair fraction of what the control got in the same
    window.  A member held at its reservation has no such part, however
    busy the machine is."""
    beyond = s - reserved
    return s >= alone or (beyond >= 0.08 and beyond >= 0.3 * c)


def alone_share(procs, pid, reserved, alone, idle=False, seconds=1.5, tries=4):
    """The member's share beside a control (control_loop) measured in the
    same window, up to `tries` windows until one shows it ran past its
    reservation (ran_past).  Other work on the machine slows the control and
    the member alike, so it moves the measurement, not the verdict.
    Returns (member share, windows without progress, control share, CPUs
    used by everything else) of the last window; what used them is printed."""
    control = control_loop(procs, idle)
    try:
        for _ in range(tries):
            c0 = cpu_ns(control.pid)
            b0, st0 = _cpu_ticks()
            p0 = _proc_ticks()
            t0 = time.monotonic()
            s, flat = progress(pid, seconds)
            dt = time.monotonic() - t0
            c = (cpu_ns(control.pid) - c0) / (dt * 1e9)
            b1, st1 = _cpu_ticks()
            others = (b1 - b0) / (HZ * dt) - s - c
            print("member %.3f (reserved %.2f), control %.3f, flat windows %d; everything else "
                  "%.2f, stolen by the host %.2f CPUs; busiest: %s" % (
                      s, reserved, c, flat, others, (st1 - st0) / (HZ * dt), _top_cpu(p0, dt)))
            if ran_past(s, c, reserved, alone):
                break
        return s, flat, c, others
    finally:
        control.kill()
        control.wait()


def time_in_fallback(pid, seconds=1.0, step=0.002):
    """The part of `seconds` the member spent out of SCHED_DEADLINE, sampled
    every `step`: a busy member of a 30% reserve waits most of each period
    in its fallback, however busy the machine; one the manager never moves
    out stays in the class, throttled past its slice."""
    out = n = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        out += policy_of(pid) != SCHED_DEADLINE
        n += 1
        time.sleep(step)
    return out / n


def dies_at_once(p):
    p.kill()
    t0 = time.monotonic()
    p.wait(timeout=5)
    return time.monotonic() - t0


def overruns(helper, name):
    info = helper.ok("info " + name)
    return int(info.split("overruns=")[1].split()[0]), info


def explain(helper, name, pid):
    """What the manager and the kernel say, printed before the assertions."""
    print(overruns(helper, name)[1])
    print(helper.ok("stats"))
    print("last events: %r" % helper.events[-4:])
    with open("/proc/%d/sched" % helper.proc.pid) as f:
        print("manager: " + " ".join(l.split()[0] + "=" + l.split()[-1] for l in f
                                     if l.startswith(("policy", "nr_switches", "se.sum_exec"))))
    with open("/proc/%d/cgroup" % helper.proc.pid) as f:
        print("manager cgroups: " + f.read().replace("\n", " "))
    try:
        with open("/proc/%d/sched" % pid) as f:
            print(" ".join(l.split()[0] + "=" + l.split()[-1] for l in f
                           if l.startswith(("policy", "dl.", "nr_switches"))))
    except OSError as e:
        print("no /proc/%d/sched: %s" % (pid, e))


def test_qos_other_runs_past_its_slice_when_cpu_is_free(helper, procs):
    """30% / 20 ms with fallback other, nothing else to run: the member uses
    most of a CPU (a hard reserve would be held at 30%)."""
    p = busy(procs)
    helper.ok("reserve opt policy=qos period=20ms cpu=30% fallback=other")
    helper.ok("join opt %d" % p.pid)
    pol = policy_of(p.pid)
    if pol != 6:  # SCHED_DEADLINE, unless its first overrun already came
        helper.ok("stats")
        assert any(e.startswith("event overrun reserve=opt ") for e in helper.events), (
            pol, helper.events[-6:])
    time.sleep(0.3)
    s, flat, c, _ = alone_share(procs, p.pid, 0.3, 0.8)
    assert_ran_past_and_policed(helper, "opt", p, s, flat, c)


def assert_ran_past_and_policed(helper, name, p, s, flat, c):
    """The member of a 30% reserve with fallback other ran past its
    reservation like a plain process (ran_past: 0.8 of a CPU when nothing
    else runs), never stopped, was moved out in most periods and dies at
    once."""
    fell_back = time_in_fallback(p.pid)
    n, info = overruns(helper, name)
    explain(helper, name, p.pid)
    print("in the fallback %.0f%% of the time" % (100 * fell_back))
    assert fell_back >= 0.2, "never moved out of its reservation: %.3f" % fell_back
    # Where a plain process gets under a quarter of a CPU, the member's part
    # past its slice is as small, and the manager (time-sharing itself) puts
    # it back into its reservation late: its share no longer tells a member
    # that runs on from one held at its reservation.  The policing below
    # still does (a hard reserve has no overruns).
    measurable = s >= 0.8 or c >= 0.25
    if measurable:
        assert ran_past(s, c, 0.3, 0.8), (s, c)
    assert flat == 0, "member stopped running in %d windows of 100 ms" % flat
    # Policed (a hard reserve shows no overruns at all), in most periods: a
    # period in which the thread waits out a debt the kernel charged it a
    # tick late (0-lag time) has none, nor one the manager, itself
    # time-sharing, started late on a busy machine (0.61 of them beside two
    # builds).
    periods = int(info.split("periods=")[1].split()[0])
    assert periods >= 80 and n >= 0.5 * periods, info
    assert dies_at_once(p) < 1.0
    if not measurable:
        pytest.skip("a plain process beside the member got %.2f of a CPU: running past the "
                    "slice was not measured (the policing was)" % c)


def test_qos_other_thread_member_is_policed(helper, procs):
    """The same reserve with its member joined as a thread (join NAME PID
    TID): no CPU timers exist for another process's threads, so the manager
    polls it from schedstat; it must still run past its slice alone and be
    moved out in most periods."""
    p = busy(procs)
    helper.ok("reserve optt policy=qos period=20ms cpu=30% fallback=other")
    helper.ok("join optt %d %d" % (p.pid, p.pid))
    time.sleep(0.3)
    s, flat, c, _ = alone_share(procs, p.pid, 0.3, 0.8)
    assert_ran_past_and_policed(helper, "optt", p, s, flat, c)


def test_qos_other_keeps_its_guarantee_under_load(helper, procs):
    """Against two busy loops on each CPU the member still gets its 30%, plus
    a time-sharing part after the slice; it never stops."""
    for cpu in (0, 0, 1, 1):
        busy(procs, cpu)
    p = busy(procs)
    helper.ok("reserve opt policy=qos period=20ms cpu=30% fallback=other")
    helper.ok("join opt %d" % p.pid)
    time.sleep(0.3)
    s, flat = progress(p.pid, 3.0)
    n, info = overruns(helper, "opt")
    print("share %.3f, flat windows %d, %s" % (s, flat, info))
    assert s >= 0.27, s
    assert flat == 0, "member stopped running in %d windows of 100 ms" % flat
    assert n > 0, info
    assert dies_at_once(p) < 1.0


def test_qos_other_periodic_job_within_its_slice_stays_reserved(helper, procs):
    """A job of 4 ms every 20 ms in a 30% / 20 ms reserve with fallback
    other, against four busy loops on each CPU (as a plain process it would
    miss most periods: test_qos_periodic_workload_meets_every_period): it
    never uses its slice, so it is never moved out (the first optimistic
    policing moved it out at the tick from which less than a tick of slice
    was left: 12 overruns in 150 periods with this job) and meets every
    period."""
    for cpu in (0, 0, 0, 0, 1, 1, 1, 1):
        busy(procs, cpu)
    w = procs([sys.executable, "-c", PERIODIC, "3"], stdin=subprocess.PIPE,
              stdout=subprocess.PIPE, text=True)
    assert w.stdout.readline().strip() == "ready"
    helper.ok("reserve job policy=qos period=20ms cpu=30% fallback=other")
    helper.ok("join job %d" % w.pid)
    assert policy_of(w.pid) == 6  # SCHED_DEADLINE
    w.stdin.write("go\n")
    w.stdin.flush()
    missed, n = map(int, w.stdout.readline().split())
    w.wait(5)
    n_over, info = overruns(helper, "job")
    print("missed %d of %d, %s" % (missed, n, info))
    assert n == 150 and missed == 0, (missed, n)
    assert n_over <= 3, info


def test_qos_idle_fallback_runs_on_free_cpu_only(helper, procs):
    """qos -> idle: past the slice the member only gets idle time.  With a
    normal busy loop on every CPU that is its reservation, 0.30 (before the
    manager timed the switch to the slice's end, it left at the tick
    before: 0.20 at HZ=250); on free CPU time it runs on, as far as an
    idle-class control beside it does."""
    p = busy(procs)
    helper.ok("reserve cut policy=qos period=20ms cpu=30% fallback=idle")
    helper.ok("join cut %d" % p.pid)
    time.sleep(0.3)
    alone, flat, c, others = alone_share(procs, p.pid, 0.3, 0.6, idle=True)
    explain(helper, "cut", p.pid)
    fell_back = time_in_fallback(p.pid)
    print("in the fallback %.0f%% of the time" % (100 * fell_back))
    assert fell_back >= 0.2, "never moved out of its reservation: %.3f" % fell_back
    # Idle time is what other work leaves, and which CPU has it changes from
    # one moment to the next: an idle-class control beside the member may
    # find some while the member finds none (on a loaded 2-CPU machine: the
    # control 0.21-0.47, the member its 0.30).  So running on past the slice
    # is measured where the machine is otherwise nearly quiet.
    quiet = others < 0.3
    if quiet:
        assert alone >= 0.6 and flat == 0, (alone, c, flat)
    for cpu in (0, 1):
        busy(procs, cpu)
    time.sleep(0.3)
    loaded, flat = progress(p.pid, 3.0)
    print("loaded: share %.3f, flat windows %d, %s" % (loaded, flat, overruns(helper, "cut")[1]))
    # The manager is a normal process here: with more busy loops than CPUs
    # beside the suite its return at each period's start comes late, and
    # the member waits at the idle class meanwhile (0.264 seen in a loaded
    # CI run).  Leaving a tick early gives 0.20; running on, over 0.4.
    assert 0.24 <= loaded <= 0.4, loaded
    assert flat == 0
    # SCHED_IDLE threads alone would still get the group's share: the
    # fallback makes the reserve's group idle too (cpu.idle = 1).
    group_idle = group_idle_of(helper, "cut")
    wait_for(helper, group_idle, 2, "the group never went idle in the fallback")
    assert dies_at_once(p) < 1.0
    if not quiet:
        pytest.skip("other work used %.2f CPUs: running on past the slice into idle time "
                    "was not measured (the part under load was)" % others)


def test_rejoin_after_throttled_leave_keeps_running(helper, procs):
    """The user toggling real-time off and on: a busy member leaves its qos
    reserve while the kernel has it throttled and comes back a few ms after
    its deadline.  On 6.18 that return mostly leaves it throttled with no
    timer (it would never run again, nor die); the manager looks at every
    thread it puts into SCHED_DEADLINE right after the switch and repairs
    it there: the join's reply comes after the repair."""
    p = busy(procs)
    helper.ok("reserve rt policy=qos period=20ms cpu=25% fallback=pause")

    def stuck_events():
        return [e for e in helper.events if "stuck" in e]

    late = 0
    for attempt in range(4):
        helper.ok("join rt %d" % p.pid)
        time.sleep(0.013)  # 5 ms of runtime used: throttled until +20 ms
        helper.ok("leave %d" % p.pid)
        time.sleep(0.009)  # back 2 ms or more past the deadline, before the 0-lag time
        helper.ok("join rt %d" % p.pid)
        at_join = len(stuck_events())
        s, flat = progress(p.pid, 0.6)
        print("attempt %d: share %.3f, flat windows %d" % (attempt, s, flat))
        assert 0.2 <= s <= 0.35 and flat == 0, (attempt, s, flat)
        helper.ok("leave %d" % p.pid)
        late += len(stuck_events()) - at_join
        time.sleep(0.05)
    repairs = stuck_events()
    print("repairs %d: %r" % (len(repairs), repairs[:2]))
    # The kernel got it stuck in ~9 of 10 such returns when this was written;
    # none in four would mean the repair path was not exercised at all.
    assert repairs, "no return got stuck: the test did not exercise the repair"
    # The returns are repaired while the join is handled, not at a later
    # pass a second or so on (the flat-window check above would see that
    # wait). On a busy machine one may get stuck again after the join's
    # look, and be repaired later, but not all of them.
    assert late < len(repairs), (late, len(repairs))
    assert dies_at_once(p) < 1.0



def parked_by_division(helper, name, tid):
    """Whether the manager's division of name's slice has tid parked."""
    for item in helper.ok("threads " + name).split()[1:]:
        t, _, _, parked, _ = item.split(":")
        if int(t) == tid:
            return parked == "1"
    return False


def test_thread_started_during_the_fallback_returns_with_the_others(helper, procs):
    """A member that overran its slice waits in the fallback until the period
    ends.  A thread it starts meanwhile (SCHED_OTHER by reset on fork) must
    wait there too and enter the reservation with the others at the period
    end, not a second later at the manager's next pass.  Three rounds 0.3 s
    apart: the pass comes once a second, so it cannot be what placed the
    new thread each time."""
    p = procs([sys.executable, THREAD_ON_DEMAND], stdin=subprocess.PIPE,
              stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"

    def say(line):
        p.stdin.write(line + "\n")
        p.stdin.flush()
        return p.stdout.readline().strip()

    place(helper, "hold policy=qos period=20ms cpu=5% fallback=other", p.pid)
    rounds = tries = 0
    while rounds < 3:
        tries += 1
        assert tries <= 10, "the member was never in its fallback when its thread started"
        assert say("spin") == "ok"
        start = overruns(helper, "hold")[0]
        # Every try leaves a thread behind, and the busy thread's share of
        # the slice shrinks with each: with 12 threads it overran only 4
        # times in 2 s (17 alone), so 2 s could miss two on a loaded machine.
        deadline = time.monotonic() + 6.0
        while overruns(helper, "hold")[0] < start + 2:
            assert time.monotonic() < deadline, "a busy member never overran 5%"
            time.sleep(0.01)
        tid = int(say("go"))
        helper.ok("thread %d %d" % (p.pid, tid))
        waiting = policy_of(tid) != SCHED_DEADLINE
        assert say("rest") == "ok"
        if not waiting:
            continue  # the period had ended already: placed as in any period
        t0 = time.monotonic()
        while policy_of(tid) != SCHED_DEADLINE and time.monotonic() - t0 < 1.5:
            time.sleep(0.005)
        took = time.monotonic() - t0
        print("round %d: thread %d in the reservation after %.3f s" % (rounds, tid, took))
        if took >= 0.25 and parked_by_division(helper, "hold", tid):
            # Asleep since it started: once the return came late (a loaded
            # machine) the division parked it as idle, as any sleeping
            # thread of a divided slice; the round shows nothing.
            print("round %d: thread %d parked by the division, not counted" % (rounds, tid))
            continue
        assert took < 0.25, "by the manager's pass, not at the period end"

        rounds += 1
        time.sleep(0.3)
    assert dies_at_once(p) < 1.0


def kept_proc_files(helper):
    """What the manager has open under /proc."""
    return [f for f in helper.open_files() if f.startswith("/proc/")]


def kept_files(helper):
    """The /proc files and the group listings (cgroup.procs) the manager keeps."""
    return [f for f in helper.open_files()
            if f.startswith("/proc/") or f.endswith("/cgroup.procs")]


# Runs for half a second (so it is running in SCHED_DEADLINE when it joins), then sleeps.
RUN_THEN_SLEEP = "import time\nend = time.time() + 0.5\nwhile time.time() < end:\n    pass\ntime.sleep(60)"


def test_pass_reads_deadline_members_through_kept_files(helper, procs):
    """The 1 s pass looks at every thread of a qos reserve for a stuck
    deadline state, through its /proc/TID/sched.  That file is kept open
    from the first pass on, also for members that never left their
    reservation (here: running when they joined, asleep since), and it is
    given back when the member leaves or exits."""
    before = kept_proc_files(helper)
    helper.ok("reserve hard policy=qos period=10ms cpu=2% fallback=pause")
    members = [procs([sys.executable, "-c", RUN_THEN_SLEEP]) for _ in range(2)]
    for p in members:
        helper.ok("join hard %d" % p.pid)
    wanted = {"/proc/%d/task/%d/sched" % (p.pid, p.pid) for p in members}
    wait_for(helper, lambda: wanted <= set(kept_proc_files(helper)), 3,
              "not kept after a pass: %s" % sorted(wanted))
    helper.ok("leave %d" % members[0].pid)
    members[1].kill()
    members[1].wait()
    wait_for(helper, lambda: kept_proc_files(helper) == before, 3,
              "files not given back on leave and exit")


def test_kept_files_stay_within_a_quarter_of_the_descriptor_limit(procs):
    """Started with a soft limit of 48 descriptors, the manager keeps at most
    12 descriptors for repeated reads (/proc files, the group listing of
    each reserve); its members are switched all the same."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (48, hard))
    try:
        ctx = running_helper()
        h = ctx.__enter__()
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    try:
        before = kept_files(h)
        h.ok("reserve few policy=qos period=10ms cpu=5% fallback=other")
        members = [busy(procs) for _ in range(8)]
        for p in members:
            h.ok("join few %d" % p.pid)
        time.sleep(1.5)  # past a housekeeping pass, which lists the group
        kept = len(kept_files(h)) - len(before)
        print("kept %d, %s" % (kept, overruns(h, "few")[1]))
        assert overruns(h, "few")[0] > 0
        assert 0 < kept <= 12
    finally:
        ctx.__exit__(None, None, None)


def test_switches_keep_proc_files_and_give_them_back(helper, procs):
    """The switches of a busy optimistic reserve read its members' /proc
    files through descriptors the manager keeps (sys.h: qos_thread_files,
    the task directory).  While they switch, the manager holds some; once
    the members have left (one) and exited (the rest), it holds none of
    them any more: nothing leaks through a leave, an exit or a delete."""
    def proc_fds():
        return kept_proc_files(helper)

    before = proc_fds()
    helper.ok("reserve keep policy=qos period=10ms cpu=2% fallback=other")
    members = [busy(procs) for _ in range(3)]
    for p in members:
        helper.ok("join keep %d" % p.pid)
    time.sleep(0.5)
    during = proc_fds()
    print("kept while switching: %r" % sorted(set(during) - set(before)))
    assert overruns(helper, "keep")[0] > 0
    assert any("/task" in f for f in during) and len(during) > len(before) + 3
    helper.ok("leave %d" % members[0].pid)
    for p in members[1:]:
        p.kill()
        p.wait()
    helper.ok("sync")
    deadline = time.monotonic() + 2
    while proc_fds() != before and time.monotonic() < deadline:
        time.sleep(0.05)
        helper.ok("sync")
    assert proc_fds() == before, sorted(set(proc_fds()) - set(before))
    helper.ok("delete keep")
    assert proc_fds() == before


def test_zz_no_test_cgroup_left():
    """Run last in this file: its tests left no group behind."""
    assert_no_test_cgroup_left()
