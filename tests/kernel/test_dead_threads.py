"""A member whose main thread has died while its other threads run: the
main thread is a zombie until the whole process is reaped, and stays
listed among the process's threads.  The kernel admits a zombie to
SCHED_DEADLINE and never gives that bandwidth back
(test_deadline_books.py); the manager, which gives the reserve's class to
every listed thread at the join and again at each housekeeping pass, must
not leave any booked.  Pass/fail rests on the root domain's books
(debugfs), read before the join and after the process is reaped.
"""
import os
import subprocess
import sys
import time

import pytest

from kernel_helpers import place, pytestmark

assert pytestmark

SCHED_DEBUG = "/sys/kernel/debug/sched/debug"

# The main thread leaves with pthread_exit (ctypes lets the interpreter go
# for the call), the worker sleeps on.
ZOMBIE_LEADER = r"""
import ctypes, threading, time
threading.Thread(target=lambda: [time.sleep(0.05) for _ in iter(int, 1)]).start()
print("ready", flush=True)
ctypes.CDLL(None).pthread_exit(None)
"""


def total_bw():
    with open(SCHED_DEBUG) as f:
        return max(int(line.split(":")[1]) for line in f if "dl_bw->total_bw" in line)


def state(pid, tid):
    with open("/proc/%d/task/%d/stat" % (pid, tid)) as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def test_a_dead_main_thread_is_left_no_deadline_bandwidth(helper, procs):
    if not os.path.exists(SCHED_DEBUG):
        pytest.skip("%s is not there (mount -t debugfs none /sys/kernel/debug)" % SCHED_DEBUG)
    w = procs([sys.executable, "-c", ZOMBIE_LEADER], stdout=subprocess.PIPE, text=True)
    assert w.stdout.readline().strip() == "ready"
    deadline = time.monotonic() + 5
    while state(w.pid, w.pid) != "Z":
        assert time.monotonic() < deadline, "the main thread never died"
        time.sleep(0.01)
    before = total_bw()
    place(helper, "dead policy=qos period=20ms cpu=20% fallback=other", w.pid)
    time.sleep(2.5)  # two housekeeping passes give the class to every thread again
    helper.ok("sync")
    assert state(w.pid, w.pid) == "Z"
    w.kill()
    w.wait()
    time.sleep(0.3)  # past the 0-lag time of the worker's inactive timer
    kept = (total_bw() - before) / 2**20
    assert kept < 0.001, "%.3f of a CPU stayed booked" % kept


def test_deadline_threads_moved_to_a_paused_reserve_leave_no_bandwidth(helper, procs):
    """A sleeping deadline member moved into a paused (frozen) reserve: the
    freeze wakes it into the freezer, where it sleeps again a moment later.
    Read as running in that moment and switched out once asleep, the kernel
    keeps its bandwidth for good; the manager takes it out of its class
    before the move.  Many moves, each a chance for that moment."""
    if not os.path.exists(SCHED_DEBUG):
        pytest.skip("%s is not there (mount -t debugfs none /sys/kernel/debug)" % SCHED_DEBUG)
    helper.ok("reserve rt policy=qos period=20ms cpu=40% fallback=other")
    helper.ok("reserve frozen policy=pause")
    before = total_bw()
    for _ in range(20):
        p = procs(["sleep", "60"])
        time.sleep(0.05)
        helper.ok("join rt %d" % p.pid)
        time.sleep(0.05)  # past its 0-lag time, asleep
        helper.ok("join frozen %d" % p.pid)
        helper.ok("leave %d" % p.pid)
        p.kill()
        p.wait()
    time.sleep(0.3)
    kept = (total_bw() - before) / 2**20
    assert kept < 0.001, "%.3f of a CPU stayed booked" % kept
