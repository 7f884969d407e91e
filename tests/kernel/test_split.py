"""Kernel tests for a qos slice divided among a member's threads by what
each runs, with the real manager (qos-helper), a real 12-thread member
(split-workload) under SCHED_DEADLINE and real cgroups.  Pass/fail rests on
the runtimes the kernel holds (sched_getattr), never on a time: the busy
thread's runtime comes to cover its work while the sleepers' shrink, the
runtimes never sum past the slice, and a sleeper that wakes gets one.
"""
import ctypes
import os
import signal
import subprocess
import time

from kernel_helpers import BUILD, place, pytestmark, wait_for

assert pytestmark  # skipped with kernel_helpers' printed reason when not root

WORKLOAD = os.path.join(BUILD, "tests", "kernel", "split-workload")
SYS_SCHED_GETATTR = 315
SCHED_DEADLINE = 6
MS = 1_000_000
THREADS, PERIOD_MS, BUSY_MS, WAKE_MS = 12, 20, 4, 1
SLICE = 8 * MS  # cpu=40% of 20 ms
EVEN = SLICE // THREADS


class Attr(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("policy", ctypes.c_uint32),
                ("flags", ctypes.c_uint64), ("nice", ctypes.c_int32),
                ("priority", ctypes.c_uint32), ("runtime", ctypes.c_uint64),
                ("deadline", ctypes.c_uint64), ("period", ctypes.c_uint64)]


LIBC = ctypes.CDLL(None, use_errno=True)


def runtime_ns(tid):
    """The deadline runtime thread tid holds, 0 when it is not SCHED_DEADLINE."""
    attr = Attr()
    if LIBC.syscall(SYS_SCHED_GETATTR, tid, ctypes.byref(attr), ctypes.sizeof(attr), 0) != 0:
        raise OSError(ctypes.get_errno(), "sched_getattr %d" % tid)
    return attr.runtime if attr.policy == SCHED_DEADLINE else 0


def runtimes(pid):
    return {int(t): runtime_ns(int(t)) for t in os.listdir("/proc/%d/task" % pid)}


class Totals:
    """Every reading of the runtimes, each checked against the slice."""

    def __init__(self, pid, slice_ns=SLICE):
        self.pid = pid
        self.slice_ns = slice_ns
        self.readings = 0

    def read(self):
        rt = runtimes(self.pid)
        assert sum(rt.values()) <= self.slice_ns, "runtimes %s sum past the slice" % rt
        self.readings += 1
        return rt


def start(procs, busy_ms=BUSY_MS, wake_ms=WAKE_MS, every=1):
    w = procs([WORKLOAD, str(THREADS), str(PERIOD_MS), str(busy_ms), str(wake_ms), str(every)],
              stdout=subprocess.PIPE, text=True)
    tids = {}
    for line in w.stdout:
        word = line.split()
        if word[0] == "ready":
            break
        tids[word[0]] = int(word[1])
    assert set(tids) == {"busy", "waker"}, tids
    assert len(os.listdir("/proc/%d/task" % w.pid)) == THREADS
    return w, tids["busy"], tids["waker"]


def division(helper, name):
    """The manager's view: {tid: (runtime_ns, used_ns, parked, ran_on)}."""
    out = {}
    for item in helper.ok("threads " + name).split()[1:]:
        tid, rt, used, parked, ran_on = item.split(":")
        out[int(tid)] = (int(rt), int(used), parked == "1", int(ran_on))
    return out


def test_busy_thread_gets_its_use_and_a_waking_one_gets_runtime(helper, procs):
    w, busy, waker = start(procs)
    place(helper, "split policy=qos period=%dms cpu=40%% fallback=other" % PERIOD_MS, w.pid)
    totals = Totals(w.pid)

    def divided():
        rt = totals.read()
        others = [t for t in rt if t != busy]
        return rt[busy] >= BUSY_MS * MS and all(rt[t] < EVEN for t in others) and rt
    rt = wait_for(helper, divided, 20, "the busy thread's runtime never covered its work")
    # The sleepers wait outside once idle, the busy thread keeps its runtime.
    wait_for(helper, lambda: totals.read()[waker] == 0 and division(helper, "split")[waker][2],
             20, "the sleeping thread was never parked")
    d = division(helper, "split")
    assert set(d) == set(rt), (d, rt)
    assert d[busy][0] == runtime_ns(busy) and d[busy][0] >= BUSY_MS * MS
    assert os.sched_getscheduler(waker) & ~0x40000000 == os.SCHED_OTHER

    os.kill(w.pid, signal.SIGUSR1)  # the waker runs WAKE_MS a period from now on
    wait_for(helper, lambda: totals.read()[waker] >= WAKE_MS * MS, 20,
             "the woken thread never got a runtime covering its work")
    assert totals.read()[busy] >= BUSY_MS * MS
    assert totals.readings > 3
    assert helper.ok("leave %d" % w.pid)
    assert all(v == 0 for v in runtimes(w.pid).values())


def test_a_new_thread_enters_only_with_room_in_the_slice(helper, procs):
    """The plan hands all of the slice out (its spare goes where the use
    is), so a thread started since has no room: the even split the
    manager would give it when told of it waits for the next plan, which
    counts it.  A 100 ms period
    keeps a wrong sum in the kernel long enough for the readings to see."""
    w, busy, _ = start(procs)
    place(helper, "late policy=qos period=100ms cpu=40% fallback=other", w.pid)
    totals = Totals(w.pid, slice_ns=40 * MS)
    wait_for(helper, lambda: totals.read()[busy] >= 5 * BUSY_MS * MS, 20,
             "the busy thread's runtime never covered its work")
    os.kill(w.pid, signal.SIGUSR2)
    word = w.stdout.readline().split()
    assert word[0] == "new", word
    new = int(word[1])
    helper.ok("thread %d %d" % (w.pid, new))  # as the process-event connector says
    deadline = time.monotonic() + 20
    while totals.read().get(new, 0) == 0:
        assert time.monotonic() < deadline, "the new thread never got a runtime"
        time.sleep(0.002)
    assert new in division(helper, "late")
    assert helper.ok("leave %d" % w.pid)
    assert all(v == 0 for v in runtimes(w.pid).values())


def group_weight(helper, name):
    """The reserve group's weight as a load weight (1024: one nice-0 task)."""
    _, cpu = helper.path(name)
    try:
        with open(os.path.join(cpu, "cpu.shares")) as f:
            return int(f.read())
    except FileNotFoundError:
        with open(os.path.join(cpu, "cpu.weight")) as f:
            return int(f.read()) * 1024 // 100


def test_group_weighs_1024_per_thread(helper, procs):
    """A qos reserve's group weighs as much as its threads would on their
    own, so what they run at the fallback class (parked, or the reserve
    used up) holds its share among other groups; an other reserve weighs
    one nice-0 task per member."""
    w, _, _ = start(procs)
    place(helper, "split policy=qos period=%dms cpu=40%% fallback=other" % PERIOD_MS, w.pid)
    wait_for(helper, lambda: group_weight(helper, "split") == 1024 * THREADS, 5,
             "the group's weight never counted the member's threads")
    helper.ok("reserve split policy=other")
    assert group_weight(helper, "split") == 1024


def test_single_thread_holds_the_whole_slice(helper, procs):
    """Nothing to divide: a one-thread member keeps the whole slice and the
    manager lists no division."""
    p = procs(["sh", "-c", "while :; do sleep 0.01; done"])
    place(helper, "one policy=qos period=20ms cpu=20% fallback=other", p.pid)
    assert runtime_ns(p.pid) == 4 * MS
    helper.ok("sync")
    time.sleep(0.2)  # several periods: still nothing divided
    assert division(helper, "one") == {}


def test_thread_out_of_its_share_runs_on_while_the_slice_has_room(helper, procs):
    """A decoder-like thread bursts 6 ms in one period of every 6, beside a
    steady one running 3 ms a period, in a 10 ms slice: its share, sized by
    its mean use, runs out in the middle of a burst while the reserve has
    slice to spare.  Instead of waiting throttled for its next period it
    goes on at the fallback class (run-on): the manager counts it, and the
    kernel shows the thread at SCHED_OTHER while the division has it in the
    reservation.  The steady thread, whose share covers its use once the
    division has followed it, and the sleepers never run on, and the
    runtimes the kernel holds never sum past the slice."""
    w, burst, steady = start(procs, busy_ms=6, wake_ms=3, every=6)
    os.kill(w.pid, signal.SIGUSR1)  # the steady thread starts its 3 ms a period
    place(helper, "burst policy=qos period=%dms cpu=50%% fallback=other" % PERIOD_MS, w.pid)
    slice_ns = 10 * MS
    # The division has followed their use: the steady thread holds its 3 ms.
    wait_for(helper, lambda: division(helper, "burst").get(steady, (0,))[0] >= 3 * MS, 20,
             "the steady thread's runtime never covered its work")
    before = division(helper, "burst")
    seen_other = False
    deadline = time.monotonic() + 20
    d = before
    while time.monotonic() < deadline and not (seen_other and d[burst][3] > before[burst][3]):
        rt = runtimes(w.pid)
        assert sum(rt.values()) <= slice_ns, "runtimes %s sum past the slice" % rt
        d = division(helper, "burst")
        seen_other |= rt[burst] == 0 and not d[burst][2]
        time.sleep(0.002)
    print("division %r" % d)
    assert d[burst][3] > before[burst][3], "the burst thread never ran on: %r" % d
    assert seen_other, "the burst thread was never seen outside its reservation"
    assert d[steady][3] == before[steady][3], (before, d)
    sleepers = [t for t in d if t not in (burst, steady)]
    assert all(d[t][3] == 0 for t in sleepers), d
    assert helper.ok("leave %d" % w.pid)
    assert all(v == 0 for v in runtimes(w.pid).values())
