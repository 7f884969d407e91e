"""The kernel's books of SCHED_DEADLINE bandwidth when a thread leaves the
class while it sleeps, or is given a reservation after it died: minimal
reproducers, without qosway.

Admission control keeps the sum of the deadline threads' runtime/period per
root domain (total_bw, printed by /sys/kernel/debug/sched/debug).  A thread
leaving the class is taken out of that sum at its 0-lag time: at once when
it is queued and the time has passed, by the inactive timer when the time is
still ahead.  A thread that sleeps with no inactive timer armed (it never
ran in the class, or it slept past its 0-lag time) and is then switched to
another class is never taken out: its bandwidth stays booked after it exits,
until the root domains are rebuilt (a cpuset change), and later admissions
are refused for it.  qosway's manager works around it (qos_sys_release_deadline
gives a leaving thread a reservation of zero bandwidth first, unless it is
throttled; docs/qos-kernel-mapping.md).

A thread that has died but is not reaped yet (a zombie: a process's main
thread stays one while its other threads run) is admitted to the class all
the same, and what it was given stays booked after it is reaped.  The
manager shrinks a reservation it finds given to a dead thread
(qos_sys_set_thread_policy).

The cases marked xfail are the kernel's behaviour on the 6.1 and 6.18
kernels measured here: they fail there, and pass (XPASS, not an error) on a
kernel that gives the bandwidth back.  tests/conftest.py rebuilds the books
after each test, so what they leave does not reach the next one.
"""
import ctypes
import os
import subprocess
import sys
import time

import pytest

from kernel_helpers import pytestmark

assert pytestmark

SCHED_DEBUG = "/sys/kernel/debug/sched/debug"
SCHED_DEADLINE = 6
SYS_SCHED_SETATTR = 314  # x86_64
_libc = ctypes.CDLL(None, use_errno=True)


class _Attr(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("policy", ctypes.c_uint32),
                ("flags", ctypes.c_uint64), ("nice", ctypes.c_int32),
                ("priority", ctypes.c_uint32), ("runtime", ctypes.c_uint64),
                ("deadline", ctypes.c_uint64), ("period", ctypes.c_uint64)]


def set_sched(pid, policy, runtime=0, period=0):
    a = _Attr(size=48, policy=policy, runtime=runtime, deadline=period, period=period)
    if _libc.syscall(SYS_SCHED_SETATTR, pid, ctypes.byref(a), 0) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "sched_setattr(%d): %s" % (pid, os.strerror(e)))


def total_bw():
    """Each CPU's root domain's booked bandwidth (one domain for all CPUs,
    unless a cpuset change split them)."""
    with open(SCHED_DEBUG) as f:
        found = [int(line.split(":")[1]) for line in f if "dl_bw->total_bw" in line]
    assert found, "no dl_bw->total_bw in " + SCHED_DEBUG
    return found


def grew(before, after):
    """What was booked between two total_bw() reads, in the domain it went to."""
    return max(a - b for a, b in zip(after, before))


@pytest.fixture
def books():
    if os.uname().machine != "x86_64":
        pytest.skip("sched_setattr's number is written here for x86_64 only")
    if not os.path.exists(SCHED_DEBUG):
        pytest.skip("%s is not there (mount -t debugfs none /sys/kernel/debug)" % SCHED_DEBUG)
    return total_bw


def sleeping(pid):
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        with open("/proc/%d/stat" % pid) as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "S":
                return
        time.sleep(0.01)
    raise AssertionError("process %d never slept" % pid)


def asleep():
    """A process sleeping for a minute."""
    p = subprocess.Popen(["sleep", "60"])
    sleeping(p.pid)
    return p


def kept_after(leave, make=asleep, within=0.3):
    """Books a 10 ms / 100 ms deadline reservation for the process make()
    gives, lets `leave(pid)` end it, kills and reaps the process and returns
    what stays booked (in CPUs) `within` seconds later, past the 0-lag time
    of any inactive timer.  Another deadline task on the machine coming or
    going meanwhile shows as a booking other than 10%: then again, up to 3
    times."""
    for _ in range(3):
        p = make()
        try:
            before = total_bw()
            set_sched(p.pid, SCHED_DEADLINE, 10_000_000, 100_000_000)
            booked = grew(before, total_bw())
            leave(p.pid)
        finally:
            p.kill()
            p.wait()
        until = time.monotonic() + within
        while grew(before, total_bw()) > 0 and time.monotonic() < until:
            time.sleep(0.05)
        if abs(booked - (1 << 20) // 10) < 64:
            return grew(before, total_bw()) / 2**20
        print("booked %d, not 10%%: other deadline tasks came or went" % booked)
    raise AssertionError("never saw the 10% booked alone")


def test_a_sleeping_deadline_task_that_exits_gives_its_bandwidth_back(books):
    """The control: exiting in the class frees the bandwidth."""
    assert kept_after(lambda pid: None) < 0.001


# The manager's shrink: runtime << 20 / period rounds to 0 in the kernel's
# fixed point, so the reservation books no bandwidth at all.
ZERO_BANDWIDTH = (1024, 2_000_000_000)


def shrunk_then_switched(pid):
    set_sched(pid, SCHED_DEADLINE, *ZERO_BANDWIDTH)
    set_sched(pid, os.SCHED_OTHER)


def test_a_shrunk_sleeper_leaving_keeps_nothing(books):
    """The manager's workaround: a deadline-to-deadline change is accounted
    at once, so a sleeper shrunk to no bandwidth first has none to keep."""
    assert kept_after(shrunk_then_switched) == 0


@pytest.mark.xfail(reason="kernel: a deadline task switched to another class while it sleeps "
                   "without an inactive timer keeps its bandwidth booked after it exits",
                   strict=False)
def test_a_sleeping_deadline_task_leaving_the_class_gives_its_bandwidth_back(books):
    def leave(pid):
        time.sleep(0.2)  # past its 0-lag time
        set_sched(pid, os.SCHED_OTHER)
    kept = kept_after(leave)
    print("kept %.4f of a CPU" % kept)
    assert kept < 0.001, "the kernel kept %.3f of a CPU" % kept


def spinning():
    """A process that never sleeps."""
    return subprocess.Popen(["sh", "-c", "while :; do :; done"])


def working():
    """A process that runs 6 ms and sleeps 40 ms, over and over: asleep, it
    has an inactive timer armed or not, depending on how much of its
    runtime it used."""
    return subprocess.Popen([sys.executable, "-c", """
import time
while True:
    t = time.monotonic() + 0.006
    while time.monotonic() < t:
        pass
    time.sleep(0.04)
"""])


def runtime_left(pid):
    with open("/proc/%d/sched" % pid) as f:
        for line in f:
            if line.startswith("dl.runtime"):
                return int(line.split(":")[1])
    raise AssertionError("no dl.runtime for %d" % pid)


def test_a_working_thread_shrunk_leaving_keeps_nothing(books):
    """Whether the switch meets it queued, asleep with its timer armed or
    asleep without one (a deadline-to-deadline change cancels the timer),
    the shrunk thread has nothing booked to keep.  Ten times, as the case
    met depends on the moment."""
    for _ in range(10):
        assert kept_after(shrunk_then_switched, make=working) == 0


def test_a_running_thread_shrunk_leaves_at_once(books):
    """A queued thread with runtime left, shrunk, has its 0-lag time pushed
    far into the past: it is out of the books at the switch itself, not at
    an inactive timer."""
    left_at_once = []

    def leave(pid):
        deadline = time.monotonic() + 5
        while runtime_left(pid) <= 0:  # spinning: throttled in most periods
            assert time.monotonic() < deadline, "never saw runtime left"
        before = total_bw()
        shrunk_then_switched(pid)
        left_at_once.append(-grew(before, total_bw()))
    for _ in range(5):
        assert kept_after(leave, make=spinning) == 0
        if left_at_once[-1] == (1 << 20) // 10:
            return
    # Each time, the test itself was held up past the runtime it read.
    raise AssertionError("never left at once: %s" % left_at_once)


def zombie():
    """A process killed and not reaped yet."""
    p = asleep()
    p.send_signal(9)
    deadline = time.monotonic() + 5
    while True:
        with open("/proc/%d/stat" % p.pid) as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                return p
        assert time.monotonic() < deadline, "process %d never became a zombie" % p.pid
        time.sleep(0.01)


@pytest.mark.xfail(reason="kernel: a zombie is admitted to SCHED_DEADLINE and its bandwidth "
                   "stays booked after it is reaped", strict=False)
def test_a_reservation_given_to_a_zombie_is_given_back(books):
    kept = kept_after(lambda pid: None, make=zombie)
    print("kept %.4f of a CPU" % kept)
    assert kept < 0.001, "the kernel kept %.3f of a CPU" % kept


def test_a_zombies_reservation_shrunk_keeps_next_to_nothing(books):
    """The manager's workaround: the deadline-to-deadline change is
    accounted at once, also for a zombie."""
    assert kept_after(lambda pid: set_sched(pid, SCHED_DEADLINE, *ZERO_BANDWIDTH),
                      make=zombie) < 0.001
