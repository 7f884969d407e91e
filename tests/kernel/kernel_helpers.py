"""Shared parts of the kernel tests in tests/kernel: qos-helper from the build
directory ($QOSWAY_BUILD_DIR, default build), the skip when not root or without
the cgroup layout CI has, the fixtures, and helpers to measure, wait and crash."""
import contextlib
import glob
import os
import resource
import signal
import subprocess
import sys
import time

import pytest

from qos_helper_driver import CG, QosHelper, force_cleanup, groups_below

BUILD = os.environ.get("QOSWAY_BUILD_DIR", "build")
HELPER = os.path.join(BUILD, "tests", "kernel", "qos-helper")
ROOT = "qosway-test-%d" % os.getpid()


def _skip_reason():
    if os.geteuid() != 0:
        return "kernel tests need root (cgroups, SCHED_FIFO/DEADLINE)"
    if not os.path.exists(HELPER):
        return "qos-helper not built at %s (set QOSWAY_BUILD_DIR)" % HELPER
    if not (os.path.exists(CG + "/cgroup.controllers") or os.path.exists(CG + "/unified/cgroup.procs")):
        return "no cgroup2 hierarchy"
    if os.cpu_count() < 2:
        return "needs 2 CPUs"
    return None


REASON = _skip_reason()
if REASON:
    print("skipping qos kernel tests:", REASON, file=sys.stderr)
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")


class Helper(QosHelper):
    def __init__(self, root=ROOT, guardian=True, extra=(), pass_fds=(), prefix=()):
        super().__init__(HELPER, root, guardian, extra, pass_fds=pass_fds, prefix=prefix)


@pytest.fixture
def procs():
    started = []

    def spawn(args, **kw):
        p = subprocess.Popen(args, **kw)
        started.append(p)
        return p

    yield spawn
    for p in started:
        if p.poll() is None:
            p.kill()
        p.wait()


@contextlib.contextmanager
def running_helper(**kw):
    """A Helper(**kw), closed and its cgroups cleaned up afterwards."""
    h = Helper(**kw)
    try:
        yield h
    finally:
        h.close()
        left = groups_below(ROOT) if h.quit_cleanly else []
        force_cleanup(ROOT)
    # A clean shutdown restores every member and removes every group it made.
    assert not left, "groups left by a clean shutdown: %s" % left


@pytest.fixture
def helper(procs):
    with running_helper() as h:
        yield h


@pytest.fixture
def rt_bandwidth():
    """The fifo tests need a new cpu group to get 50% real-time runtime.

    Must be requested before `helper`: the manager's root takes 90% itself.

    With RT group scheduling (hybrid v1 layout) the kernel keeps counting the
    runtime of removed-but-not-yet-freed ("dying") cgroups.  qosway now gives
    the runtime back before each rmdir, but groups left dying by older builds
    (pinned by deadline timers for up to hours, see docs/qos-kernel-mapping.md)
    can still hold it; the kernel then refuses the grant with EINVAL until it
    frees them, and the tests skip with that reason.
    """
    base = "/sys/fs/cgroup/cpu"
    if not os.path.exists(os.path.join(base, "cpu.rt_runtime_us")):
        return
    probe = os.path.join(base, "qosway-rtprobe-%d" % os.getpid())
    os.mkdir(probe)
    try:
        with open(os.path.join(probe, "cpu.rt_runtime_us"), "w") as f:
            f.write("500000")
    except OSError as e:
        holders = []
        for f in glob.glob(base + "/*/cpu.rt_runtime_us"):
            try:
                with open(f) as fh:
                    if int(fh.read()) > 0 and not f.startswith(probe):
                        holders.append(os.path.basename(os.path.dirname(f)))
            except (OSError, ValueError):
                pass
        held = ("live groups hold it: %s" % ", ".join(holders) if holders else
                "removed (dying) cpu groups hold it (see /proc/cgroups)")
        if any(h.startswith(ROOT) for h in holders):
            # ours, alive: a manager kept runtime it should have given back
            pytest.fail("kernel refuses 50%% RT group bandwidth (%s); %s" % (e, held))
        pytest.skip("kernel refuses 50%% RT group bandwidth to a new cpu group (%s); %s"
                    % (e, held))
    finally:
        try:
            with open(os.path.join(probe, "cpu.rt_runtime_us"), "w") as f:
                f.write("0")
        except OSError:
            pass
        os.rmdir(probe)


@pytest.fixture
def origin():
    """A cgroup outside the manager's root, in every tree members move in:
    where a member lived before joining.  Yields its path relative to each
    mount; removed (once its tasks are gone) afterwards."""
    rel = "/qosway-origin-%d" % os.getpid()
    if os.path.exists(CG + "/cgroup.controllers"):
        dirs = [CG + rel]
    else:
        dirs = [CG + "/unified" + rel, CG + "/cpu" + rel]
    for d in dirs:
        os.makedirs(d, exist_ok=True)
    yield rel, dirs
    # Runs before `procs` kills the test's processes: whatever sits here is ours.
    for d in dirs:
        if not os.path.isdir(d):
            continue  # the test removed it
        for pid in open(d + "/cgroup.procs").read().split():
            with contextlib.suppress(OSError):
                os.kill(int(pid), signal.SIGKILL)
    for d in dirs:
        for _ in range(100):
            try:
                os.rmdir(d)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.05)
        assert not os.path.exists(d), "test cgroup %s left behind" % d


def wait_for(helper, predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while True:
        helper.ok("sync")
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def poll_until(predicate, what, timeout=5.0, step=0.01):
    """Polls predicate() until it is true (returned) or timeout passes (what fails)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, what
        time.sleep(step)


def manager_stats(helper):
    return dict(kv.split("=", 1) for kv in helper.ok("stats").split()[1:])


def info_fields(helper, name):
    """The reserve's figures from "info"; of two same keys the first (the
    state's "fallback=1" before the parameters' "fallback=pause")."""
    out = {}
    for kv in helper.ok("info " + name).split()[1:]:
        key, value = kv.split("=", 1)
        out.setdefault(key, value)
    return out


def rt_events(helper, kind):
    helper.ok("sync")  # events are collected with replies
    return [e for e in helper.events if e.startswith("event rt-%s " % kind)]


def place(helper, reserve, pid):
    """Define the reserve ("NAME PARAMS...") and join pid to it."""
    helper.ok("reserve " + reserve)
    helper.ok("join %s %d" % (reserve.split()[0], pid))


def busy(spawn, cpu=None):
    args = ["sh", "-c", "while :; do :; done"]
    if cpu is not None:
        args = ["taskset", "-c", str(cpu)] + args
    return spawn(args)


def cpu_ns(pid):
    """Precise CPU time of a single-threaded process (schedstat, not ticks)."""
    with open("/proc/%d/schedstat" % pid) as f:
        return int(f.read().split()[0])


def share(pid, seconds):
    a = cpu_ns(pid)
    t0 = time.monotonic()
    time.sleep(seconds)
    b = cpu_ns(pid)
    return (b - a) / ((time.monotonic() - t0) * 1e9)


def runs(pid, seconds=0.5):
    """Whether the busy process pid gets CPU time at all: a frozen one gets
    none, a thawed one some however loaded the machine (a share test would
    depend on what else runs)."""
    return share(pid, seconds) > 0.02


def settled_share(pid, seconds=3.0):
    """share() after 0.3 s in which the new scheduling settles."""
    time.sleep(0.3)
    return share(pid, seconds)


def policy_of(pid):
    return os.sched_getscheduler(pid) & ~0x40000000  # without SCHED_RESET_ON_FORK


def nice_of(tid):
    return os.getpriority(os.PRIO_PROCESS, tid)


def group_idle_of(helper, name):
    """A function that says whether the reserve's cpu group is idle now."""
    _, cpu = helper.path(name)

    def idle():
        with open(cpu + "/cpu.idle") as f:
            return f.read().strip() == "1"
    return idle


def frozen(v2_group):
    with open(v2_group + "/cgroup.events") as f:
        return dict(l.split() for l in f)["frozen"] == "1"


def wait_frozen(v2_group, want, what, timeout=1.0):
    """Poll cgroup.events until the group's frozen state is `want`."""
    deadline = time.monotonic() + timeout
    while frozen(v2_group) != want:
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def cgroup_lines(pid):
    with open("/proc/%d/cgroup" % pid) as f:
        return sorted(f.read().split())


def cgroup_of(pid):
    """{"v2": path, "cpu": path} from /proc/PID/cgroup (cpu is v2 on pure v2)."""
    out = {}
    with open("/proc/%d/cgroup" % pid) as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            if ctrls == "":
                out["v2"] = path
            elif "cpu" in ctrls.split(","):
                out["cpu"] = path
    out.setdefault("cpu", out.get("v2"))
    return out


def move_to(dirs, pid):
    for d in dirs:
        with open(d + "/cgroup.procs", "w") as f:
            f.write(str(pid))


def kill_grandchild(pid):
    """SIGKILL a process a test child forked (reaped here only if it is ours)."""
    os.kill(pid, signal.SIGKILL)
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


# Starts a thread (which sleeps) per line read, printing its tid.
THREAD_ON_DEMAND = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "thread_on_demand.py")


def thread_owner(procs, n=1):
    """A THREAD_ON_DEMAND process and the tids of n sleeping threads it started."""
    p = procs([sys.executable, THREAD_ON_DEMAND], stdin=subprocess.PIPE,
              stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    tids = []
    for _ in range(n):
        p.stdin.write("go\n")
        p.stdin.flush()
        tids.append(int(p.stdout.readline()))
    return p, tids


def thread_member_forks(helper, procs):
    """A thread (of a THREAD_ON_DEMAND process) joins reserve tf (other,
    nice 5, inherit) and forks a child: (process, tid, the process's
    cgroups before, child pid), the child born in tf's cpu group."""
    p = procs([sys.executable, THREAD_ON_DEMAND], stdin=subprocess.PIPE,
              stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    p.stdin.write("forker\n")
    p.stdin.flush()
    tid = int(p.stdout.readline())
    home = cgroup_of(p.pid)
    helper.ok("reserve tf policy=other nice=5 inherit=yes")
    helper.ok("join tf %d %d" % (p.pid, tid))
    p.stdin.write("fork\n")
    p.stdin.flush()
    child = int(p.stdout.readline())
    assert cgroup_of(child)["cpu"].endswith("/tf"), cgroup_of(child)
    return p, tid, home, child


PERIODIC = r"""
import os, sys, time
period, work, seconds = 0.020, 0.004, float(sys.argv[1])
sys.stdout.write("ready\n"); sys.stdout.flush(); sys.stdin.readline()
missed = 0
n = int(seconds / period)
start = time.monotonic() + period
for i in range(n):
    release = start + i * period
    while time.monotonic() < release:
        time.sleep(max(0.0, release - time.monotonic()))
    t = time.thread_time()
    while time.thread_time() - t < work:
        pass
    if time.monotonic() > release + period:
        missed += 1
print(missed, n)
"""


def start_periodic(helper, procs, reserve, seconds=3):
    """PERIODIC for `seconds`, placed in `reserve` ("NAME PARAMS...") while
    it waits (None: left as it is); returns it running."""
    w = procs([sys.executable, "-c", PERIODIC, str(seconds)], stdin=subprocess.PIPE,
              stdout=subprocess.PIPE, text=True)
    assert w.stdout.readline().strip() == "ready"
    if reserve:
        place(helper, reserve, w.pid)
    w.stdin.write("go\n")
    w.stdin.flush()
    return w


def can_raise_hard_limits():
    """CAP_SYS_RESOURCE (bit 24) in our effective set; the helper inherits it."""
    with open("/proc/self/status") as f:
        caps = dict(line.split(":", 1) for line in f if line.startswith("Cap"))
    return bool(int(caps["CapEff"], 16) & (1 << 24))


def check_rttime_restored(pid, before, bounded, events):
    """RLIMIT_RTTIME is back as it was, or, where raising a hard limit is not
    allowed (no CAP_SYS_RESOURCE, as in some containers), still the bound,
    and an event says so."""
    now = resource.prlimit(pid, resource.RLIMIT_RTTIME)
    if can_raise_hard_limits():
        assert now == before
    else:
        assert now == bounded
        assert any("pid=%d" % pid in e and "RLIMIT_RTTIME of %d stays bounded at %d us"
                   % (pid, bounded[1]) in e for e in events), events


def kill9(h):
    os.kill(h.proc.pid, signal.SIGKILL)
    h.proc.wait()


def kill9_frozen(procs, guardian):
    p = busy(procs, 1)
    h = Helper(guardian=guardian)
    try:
        place(h, "stop policy=pause", p.pid)
        v2, _ = h.path("stop")
        wait_frozen(v2, True, "cgroup.events never said frozen")
        os.kill(h.proc.pid, signal.SIGKILL)
        h.proc.wait()
        return p, v2
    except BaseException:
        h.close()
        raise


def crash_after(setup):
    """A manager without a guardian runs setup(helper) and is killed (-9);
    its groups and members stay as it left them.  Returns setup's value."""
    h = Helper(guardian=False)
    try:
        value = setup(h)
        kill9(h)
    except BaseException:
        h.close()
        raise
    return value


def live_guardians(pid):
    """The qos-guardian children of pid still running (a killed one the
    manager has not reaped yet is a zombie, and not counted)."""
    with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
        kids = f.read().split()
    found = []
    for k in kids:
        try:
            with open("/proc/%s/stat" % k) as f:
                stat = f.read()
        except OSError:
            continue  # reaped meanwhile
        comm, state = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2]
        if comm == "qos-guardian" and state != "Z":
            found.append(int(k))
    return found


def kill_guardian(h, replaced=True, timeout=5.0):
    """SIGKILLs the manager's guardian and waits for the error event naming
    it and, when `replaced`, for its successor.  Returns the event.  (A
    guardian names itself once it has closed what it inherited, which
    under load may come after the manager is ready.)"""
    (old,) = wait_for(h, lambda: live_guardians(h.proc.pid), timeout, "no guardian")
    os.kill(old, signal.SIGKILL)
    give_up = time.monotonic() + timeout
    while True:
        h.ok("sync")
        said = [e for e in h.events
                if e.startswith("event error") and "guardian (pid %d)" % old in e]
        now = live_guardians(h.proc.pid)
        if said and (now or not replaced):
            break
        assert time.monotonic() < give_up, ("no event or no new guardian", now, h.events)
        time.sleep(0.02)
    assert "killed by signal 9" in said[0], said
    assert old not in now and len(now) == (1 if replaced else 0), now
    return said[0]


def assert_no_test_cgroup_left():
    """No group any qos test made is left, in any hierarchy (CG/NAME on pure
    cgroup v2, CG/*/NAME on the hybrid layout)."""
    left = []
    for name in ("qosway-test-*", "qosway-origin-*", "qosway-rtprobe-*"):
        left += glob.glob("%s/%s" % (CG, name)) + glob.glob("%s/*/%s" % (CG, name))
    assert left == [], left
