"""Suite-wide hygiene: no test may leave a process running behind it.

A process a test started and did not stop competes with the tests after it
(one CI run lost 0.55 CPU to something for 15 s, and three CPU-share tests
with it).  After each test, every user-space process started during it that
is still alive a moment later is reported; those that descend from pytest
are killed, so the next test starts on a quiet machine.  The list is printed
at the end of the run, and a leak from a test that passed fails it.
"""
import os
import signal
import time

import pytest

HZ = os.sysconf("SC_CLK_TCK")
GRACE_S = 2.0
_leaks = []
# Under pytest-xdist the other workers start processes too: a worker only
# looks at its own, its descendants and what carries its name in the
# environment (harness.py passes it on to the compositor and its clients,
# whose daemons are reparented to init).
WORKER = os.environ.get("PYTEST_XDIST_WORKER")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "keyboard: the test's compositors start with a headless keyboard, as a "
        "desktop with one plugged in (the seat offers a keyboard only while one exists)")
    config.addinivalue_line(
        "markers", "serial: run alone, not beside other tests (scripts/test.sh runs these "
        "after the parallel part): the test depends on machine-wide state such as the "
        "kernel's deadline bandwidth or every qosway cgroup")


def _now_ticks():
    with open("/proc/uptime") as f:
        return int(float(f.read().split()[0]) * HZ)


def _stat(pid):
    """(parent, start time in ticks, name) of a process, or None."""
    try:
        # A process may name itself with any bytes, not only UTF-8.
        with open("/proc/%d/stat" % pid, errors="replace") as f:
            head, rest = f.read().rsplit(")", 1)
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            if not f.read(1):
                return None  # kernel thread, or already a zombie
    except OSError:
        return None
    v = rest.split()
    return int(v[1]), int(v[19]), head.split("(", 1)[1]


def _started_since(ticks):
    """pid -> (parent, name) of user processes started at or after `ticks`
    (under xdist: this worker's, see _ours)."""
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != os.getpid():
            s = _stat(int(d))
            if s and s[1] >= ticks and (WORKER is None or _ours(int(d))):
                out[int(d)] = (s[0], s[2])
    return out


def _ours(pid):
    if _descends_from_us(pid):
        return True
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            env = b"\0" + f.read()
    except OSError:
        return False
    return b"\0PYTEST_XDIST_WORKER=%s\0" % WORKER.encode() in env


def _descends_from_us(pid):
    me = os.getpid()
    for _ in range(64):
        s = _stat(pid)
        if s is None or s[0] <= 1:
            return False
        if s[0] == me:
            return True
        pid = s[0]
    return False


@pytest.fixture(autouse=True)
def no_process_left(request):
    start = _now_ticks()
    yield
    deadline = time.monotonic() + GRACE_S
    left = _started_since(start)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = _started_since(start)
    if not left:
        return
    ours = [p for p in left if _descends_from_us(p)]
    for p in ours:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass
    desc = ", ".join("%s[%d]%s" % (n, p, " (killed)" if p in ours else "")
                     for p, (_, n) in sorted(left.items()))
    _leaks.append("%s: %s" % (request.node.nodeid, desc))
    rep = getattr(request.node, "rep_call", None)
    if ours and rep is not None and rep.passed:
        pytest.fail("left running after the test: " + desc, pytrace=False)


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


def pytest_terminal_summary(terminalreporter):
    if _leaks:
        terminalreporter.section("processes left running by tests")
        for line in _leaks:
            terminalreporter.write_line(line)


# -- SCHED_DEADLINE bandwidth the kernel kept ------------------------------------
#
# Linux keeps a deadline task's bandwidth in its root domain's books for good
# when the task leaves the class asleep with no inactive timer armed
# (tests/kernel/test_deadline_books.py reproduces it without qosway).  The
# manager shrinks a leaving thread's reservation to zero bandwidth first
# (qos_sys_release_deadline), but the books are the whole machine's: what
# another session's or benchmark's deadline tasks leave behind would fail
# the next tests' admissions with "deadline bandwidth is exhausted".  Once
# no deadline task is left, the books are rebuilt from the tasks that exist
# (toggling an empty v1 cpuset's cpu_exclusive rebuilds the root domains),
# and what was kept is reported where debugfs shows the books.

CPUSET = "/sys/fs/cgroup/cpuset"
SCHED_DEBUG = "/sys/kernel/debug/sched/debug"
_dl_kept = []


def _deadline_task_alive():
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            tids = os.listdir("/proc/%s/task" % d)
        except OSError:
            continue
        for t in tids:
            try:
                with open("/proc/%s/task/%s/stat" % (d, t), errors="replace") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if len(fields) > 38 and fields[38] == "6":  # policy: SCHED_DEADLINE
                return True
    return False


def _dl_total_bw():
    try:
        with open(SCHED_DEBUG) as f:
            for line in f:
                if "dl_bw->total_bw" in line:
                    return int(line.split(":")[1])
    except (OSError, ValueError):
        pass
    return None


def _rebuild_root_domains():
    d = os.path.join(CPUSET, "qosway-test-rebuild-%d" % os.getpid())
    try:
        os.mkdir(d)
        try:
            for name, value in (("cpuset.mems", "0"), ("cpuset.cpus", "0-%d" % (os.cpu_count() - 1)),
                                ("cpuset.cpu_exclusive", "1"), ("cpuset.cpu_exclusive", "0")):
                with open(os.path.join(d, name), "w") as f:
                    f.write(value)
        finally:
            os.rmdir(d)
    except OSError:
        pass


# The books as last rebuilt with no deadline task: the fair servers' share.
_dl_base = []


def _settled_total_bw(wait):
    """The books once the inactive timers of threads that left the class
    have fired (a throttled thread's 0-lag time lies its overrun divided
    by its bandwidth past its deadline: up to seconds for a small one).
    Rebuilding before one fires would leave it to take its share off the
    rebuilt total, which then books less than the tasks hold."""
    total = _dl_total_bw()
    until = time.monotonic() + wait
    while (total is not None and _dl_base and total > _dl_base[0] + 1024 and
           time.monotonic() < until):
        time.sleep(0.1)
        total = _dl_total_bw()
    return total


@pytest.fixture(autouse=True)
def deadline_books_rebuilt(request):
    yield
    if os.geteuid() != 0 or not os.path.isdir(CPUSET) or _deadline_task_alive():
        return
    before = _settled_total_bw(6)
    _rebuild_root_domains()
    after = _dl_total_bw()
    if after is not None:
        _dl_base[:] = [after]
    if before is not None and after is not None and before - after > 1024:
        _dl_kept.append("%s: %.3f of a CPU" % (request.node.nodeid, (before - after) / 2**20))


def pytest_sessionfinish(session):
    if _dl_kept:
        print("\nSCHED_DEADLINE bandwidth the kernel kept after tests (rebuilt):")
        for line in _dl_kept:
            print("  " + line)
