"""The manager's cgroup file writing, against fake cgroup trees in a temp dir.

qos-helper --fake --base DIR points the manager at a directory laid out like
/sys/fs/cgroup (hybrid: cpu/ + unified/, or pure cgroup2) and lets it create
the control files it writes, so every value can be read back.  Members are
real child processes (only the scheduler calls reach the kernel), so this
runs unprivileged too.
"""
import os
import resource
import signal
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qos_helper_driver import QosHelper  # noqa: E402
from kernel_helpers import (  # noqa: E402
    HELPER, Helper, check_rttime_restored, kill_guardian, live_guardians, policy_of,
    thread_owner)

pytestmark = pytest.mark.skipif(not os.path.exists(HELPER),
                                reason="qos-helper not built at %s (set QOSWAY_BUILD_DIR)"
                                % HELPER)

ROOT = "qosway-fake"


def touch(path, text=""):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def read(path):
    with open(path) as f:
        return f.read().strip()


def wait_other(tid, timeout=5):
    """Waits for the thread to be SCHED_OTHER again (the guardian demotes)."""
    give_up = time.monotonic() + timeout
    while policy_of(tid) != os.SCHED_OTHER:
        assert time.monotonic() < give_up, "thread %d is still real-time" % tid
        time.sleep(0.02)


@pytest.fixture
def child():
    p = subprocess.Popen(["sleep", "60"])
    yield p
    p.kill()
    p.wait()


def tree(tmp_path, layout):
    base = str(tmp_path / "cg")
    if layout == "hybrid":
        touch(base + "/unified/cgroup.procs")
        touch(base + "/cpu/cpu.shares", "1024")
        touch(base + "/cpu/cpu.rt_runtime_us", "950000")
        touch(base + "/cpu/cgroup.procs")
        return base, base + "/unified/" + ROOT, base + "/cpu/" + ROOT
    touch(base + "/cgroup.controllers", "cpuset cpu io memory pids")
    touch(base + "/cgroup.subtree_control", "cpu memory pids")
    touch(base + "/cgroup.procs")
    return base, base + "/" + ROOT, base + "/" + ROOT


def start(base):
    return Helper(root=ROOT, guardian=False, extra=["--base", base, "--fake"])


def test_hybrid_files(tmp_path, child):
    base, v2, cpu = tree(tmp_path, "hybrid")
    h = start(base)
    try:
        assert "layout=hybrid rt_group=1" in h.ready
        # Our root holds no RT bandwidth until a group is given some.
        assert read(cpu + "/cpu.rt_period_us") == "1000000"
        assert read(cpu + "/cpu.rt_runtime_us") == "0"
        h.ok("reserve ceil policy=other nice=5 period=100ms cpu=20% fallback=pause")
        assert not os.path.exists(v2 + "/ceil"), "groups are made at the first join"
        h.ok("join ceil %d" % child.pid)
        g = cpu + "/ceil/"
        assert read(v2 + "/ceil/cgroup.procs") == str(child.pid)
        assert read(g + "cgroup.procs") == str(child.pid)
        # Ceiling: CFS bandwidth = slice per period; weight of one nice-5 task.
        assert read(g + "cpu.cfs_period_us") == "100000"
        assert read(g + "cpu.cfs_quota_us") == "20000"
        assert read(g + "cpu.shares") == "335"
        assert read(g + "cpu.idle") == "0"
        # Not real-time: no RT runtime in the group.
        assert read(g + "cpu.rt_runtime_us") == "0"
        assert read(v2 + "/ceil/cgroup.freeze") == "0"
        # The root stands for its populated reserves against the rest.
        assert read(cpu + "/cpu.shares") == "335"
        assert read(cpu + "/cpu.idle") == "0"
        assert os.getpriority(os.PRIO_PROCESS, child.pid) == 5

        # idle: group and root become idle, the quota goes.
        h.ok("reserve ceil policy=idle")
        assert read(g + "cpu.idle") == "1"
        assert read(g + "cpu.cfs_quota_us") == "-1"
        assert read(cpu + "/cpu.idle") == "1"
        assert os.sched_getscheduler(child.pid) == os.SCHED_IDLE
        # pause: frozen through cgroup.freeze (the v2 core file), never SIGSTOP.
        h.ok("reserve ceil policy=pause")
        assert read(v2 + "/ceil/cgroup.freeze") == "1"
        h.ok("reserve ceil policy=other")
        assert read(v2 + "/ceil/cgroup.freeze") == "0"
        assert read(g + "cpu.idle") == "0"
        assert read(g + "cpu.shares") == "1024"
        assert read(cpu + "/cpu.idle") == "0"
        assert read(cpu + "/cpu.shares") == "1024"

        h.ok("leave %d" % child.pid)
        if os.geteuid() == 0:  # lowering nice again needs CAP_SYS_NICE
            assert os.getpriority(os.PRIO_PROCESS, child.pid) == 0
        h.ok("delete ceil")
        assert not os.path.exists(v2 + "/ceil") and not os.path.exists(g)
    finally:
        h.close()
    # On shutdown the manager removes its root (RT runtime given back first).
    assert not os.path.exists(v2) and not os.path.exists(cpu)


def test_hybrid_root_takes_rt_bandwidth_as_its_groups_do(tmp_path, child):
    """The root holds what its groups may run in one of its one-second
    windows (their shares plus one period's runtime each) and no more, so
    another manager on the machine can take its own from the same global
    limit; beyond the manager's share (90% of a CPU) a group is refused. The
    root does not shrink while a group holds runtime (time already run in
    the window would throttle the rest) and gives it all back after."""
    if os.geteuid() != 0:
        pytest.skip("needs root (SCHED_FIFO)")
    base, _, cpu = tree(tmp_path, "hybrid")
    h = start(base)
    try:
        h.ok("reserve a policy=fifo priority=10 period=100ms cpu=20% fallback=other")
        h.ok("join a %d" % child.pid)
        assert read(cpu + "/a/cpu.rt_runtime_us") == "20000"
        # 200000 us per second for the group, and one period's 20000 of burst
        assert read(cpu + "/cpu.rt_runtime_us") == "220000"
        h.ok("reserve b policy=fifo priority=10 period=50ms cpu=10% fallback=other")
        other = subprocess.Popen(["sleep", "60"])
        try:
            h.ok("join b %d" % other.pid)
            assert read(cpu + "/cpu.rt_runtime_us") == "325000"
            reply = h.cmd("reserve a policy=fifo priority=10 period=100ms cpu=85% fallback=other")
            assert reply.startswith("err "), reply
            assert read(cpu + "/a/cpu.rt_runtime_us") == "20000"
            assert read(cpu + "/cpu.rt_runtime_us") == "325000"
            h.ok("leave %d" % other.pid)
            h.ok("delete b")
        finally:
            other.kill()
            other.wait()
        assert read(cpu + "/cpu.rt_runtime_us") == "325000"
        h.ok("reserve a policy=other")
        assert read(cpu + "/a/cpu.rt_runtime_us") == "0"
        assert read(cpu + "/cpu.rt_runtime_us") == "0"
    finally:
        h.close()


def test_cgroup2_files(tmp_path, child):
    base, root, _ = tree(tmp_path, "cgroup2")
    h = start(base)
    try:
        assert "layout=cgroup2 rt_group=0" in h.ready
        assert read(root + "/cgroup.subtree_control") == "+cpu"
        h.ok("reserve ceil policy=other nice=5 period=100ms cpu=20% fallback=pause")
        h.ok("join ceil %d" % child.pid)
        g = root + "/ceil/"
        assert read(g + "cgroup.procs") == str(child.pid)
        assert read(g + "cpu.max") == "20000 100000"
        # cpu.weight is 100 for nice 0, scaled from the kernel's load weights.
        assert read(g + "cpu.weight") == "33"
        assert read(root + "/cpu.weight") == "33"
        assert not os.path.exists(g + "cpu.rt_runtime_us")
        h.ok("reserve ceil policy=other")
        assert read(g + "cpu.max") == "max"
        assert read(g + "cpu.weight") == "100"
        h.ok("reserve ceil policy=idle")
        assert read(g + "cpu.idle") == "1"
        assert read(root + "/cpu.idle") == "1"
    finally:
        h.close()
    assert not os.path.exists(root)


def test_pause_the_freezer_refuses_is_refused(tmp_path, child):
    """A change to pause whose freeze write fails is refused and reverted,
    not reported as a pause that did not happen."""
    base, root, _ = tree(tmp_path, "cgroup2")
    h = start(base)
    try:
        h.ok("reserve stop policy=other nice=2")
        h.ok("join stop %d" % child.pid)
        freeze = root + "/stop/cgroup.freeze"
        if os.path.exists(freeze):
            os.unlink(freeze)
        os.mkdir(freeze)  # writing it now fails (EISDIR)
        reply = h.cmd("reserve stop policy=pause")
        assert reply.startswith("err") and "frozen" in reply, reply
        assert "policy=other" in h.ok("info stop")
        os.rmdir(freeze)
    finally:
        h.close()


def test_cgroup2_thread_member_is_demoted_by_the_guardian(tmp_path, procs):
    """On cgroup v2 a thread member stays in its process's group, where no
    scan of the manager's root finds it: the manager names it to the
    guardian, which takes it back to time-sharing once the manager is
    killed (it stayed fifo, to be ended by RLIMIT_RTTIME if it ran on).
    A thread member that left is not touched."""
    if os.geteuid() != 0:
        pytest.skip("needs root (SCHED_FIFO)")
    base, root, _ = tree(tmp_path, "cgroup2")
    owner, (tid, gone, other) = thread_owner(procs, 3)
    h = Helper(root=ROOT, guardian=True, extra=["--base", base, "--fake"])
    try:
        h.ok("reserve rt policy=fifo priority=10 period=100ms cpu=10% fallback=other")
        for t in (tid, gone):
            h.ok("join rt %d %d" % (owner.pid, t))
        h.ok("leave %d %d" % (owner.pid, gone))
        assert policy_of(tid) == os.SCHED_FIFO and policy_of(gone) == os.SCHED_OTHER
        # set by hand, after it left: not the guardian's to undo
        os.sched_setscheduler(gone, os.SCHED_RR, os.sched_param(3))
        os.kill(h.proc.pid, signal.SIGKILL)
        h.proc.wait()
        wait_other(tid)
        assert policy_of(gone) == os.SCHED_RR and policy_of(other) == os.SCHED_OTHER
        assert owner.poll() is None
    finally:
        h.close()


def test_cgroup2_thread_member_named_to_a_guardian_that_has_not_run(tmp_path, procs):
    """A busy machine may not run the guardian between a join and the
    manager's death: the record naming the thread is still queued on its
    socket when it sees the manager gone, and counts all the same (the
    guardian is held stopped here to make that certain)."""
    if os.geteuid() != 0:
        pytest.skip("needs root (SCHED_FIFO)")
    base, root, _ = tree(tmp_path, "cgroup2")
    owner, (tid,) = thread_owner(procs)
    h = Helper(root=ROOT, guardian=True, extra=["--base", base, "--fake"])
    guardian = None
    try:
        give_up = time.monotonic() + 5
        while not live_guardians(h.proc.pid):
            assert time.monotonic() < give_up, "no guardian"
            time.sleep(0.02)
        (guardian,) = live_guardians(h.proc.pid)
        # named once it closed what it inherited: from then on it only waits
        h.ok("reserve rt policy=fifo priority=10 period=100ms cpu=10% fallback=other")
        os.kill(guardian, signal.SIGSTOP)
        h.ok("join rt %d %d" % (owner.pid, tid))
        assert policy_of(tid) == os.SCHED_FIFO
        os.kill(h.proc.pid, signal.SIGKILL)
        h.proc.wait()
        os.kill(guardian, signal.SIGCONT)
        wait_other(tid)
        assert owner.poll() is None
    finally:
        if guardian:
            try:
                os.kill(guardian, signal.SIGCONT)
            except ProcessLookupError:
                pass
        h.close()


def test_cgroup2_thread_member_is_known_to_a_replaced_guardian(tmp_path, procs):
    """A guardian killed (-9) is replaced, and the new one knows the thread
    members named to the old (it reads them from the manager's memory it
    was forked with): a later kill -9 of the manager still takes a fifo
    thread member, which no scan of the root finds on cgroup v2, back to
    time-sharing."""
    if os.geteuid() != 0:
        pytest.skip("needs root (SCHED_FIFO)")
    base, root, _ = tree(tmp_path, "cgroup2")
    owner, (tid,) = thread_owner(procs)
    h = Helper(root=ROOT, guardian=True, extra=["--base", base, "--fake"])
    try:
        h.ok("reserve rt policy=fifo priority=10 period=100ms cpu=10% fallback=other")
        h.ok("join rt %d %d" % (owner.pid, tid))
        assert policy_of(tid) == os.SCHED_FIFO
        kill_guardian(h)
        os.kill(h.proc.pid, signal.SIGKILL)
        h.proc.wait()
        wait_other(tid)
        assert owner.poll() is None
    finally:
        h.close()


def test_cgroup2_thread_member_left_by_a_crash_is_released_by_the_next_instance(
        tmp_path, procs):
    """With no guardian to see the manager die, a real-time thread member on
    cgroup v2 is found by the next instance through its origin record alone
    (the thread never left its process's group): back to other at its old
    nice, with its process's RLIMIT_RTTIME as it was."""
    if os.geteuid() != 0:
        pytest.skip("needs root (SCHED_FIFO)")
    base, root, _ = tree(tmp_path, "cgroup2")
    owner, (tid,) = thread_owner(procs)
    os.setpriority(os.PRIO_PROCESS, tid, 3)
    before = resource.prlimit(owner.pid, resource.RLIMIT_RTTIME)
    h = Helper(root=ROOT, guardian=False, extra=["--base", base, "--fake"])
    try:
        h.ok("reserve rt policy=fifo priority=10 period=100ms cpu=10% fallback=other")
        h.ok("join rt %d %d" % (owner.pid, tid))
        assert policy_of(tid) == os.SCHED_FIFO
        bounded = resource.prlimit(owner.pid, resource.RLIMIT_RTTIME)
        assert bounded != before
        os.kill(h.proc.pid, signal.SIGKILL)
        h.proc.wait()
    finally:
        h.close()
    assert policy_of(tid) == os.SCHED_FIFO  # nobody undid it
    h = start(base)
    try:
        assert policy_of(tid) == os.SCHED_OTHER
        assert os.getpriority(os.PRIO_PROCESS, tid) == 3
        check_rttime_restored(owner.pid, before, bounded, h.events)
        assert not os.path.exists(root + "/rt")
    finally:
        h.close()


def test_cgroup2_without_cpu_delegation(tmp_path, child):
    """A parent with no cpu controller to pass on: no cpu files are
    written, pause still works through cgroup.freeze, and an error event at
    start says what reserves lack."""
    base, root, _ = tree(tmp_path, "cgroup2")
    touch(base + "/cgroup.controllers", "memory pids")
    touch(base + "/cgroup.subtree_control", "memory pids")
    h = start(base)
    try:
        assert any("no cpu controller" in e for e in h.events), h.events
        h.ok("reserve stop policy=pause")
        h.ok("join stop %d" % child.pid)
        assert read(root + "/stop/cgroup.freeze") == "1"
        assert sorted(f for f in os.listdir(root + "/stop") if f.startswith("cpu.")) == []
    finally:
        h.close()


def test_cgroup2_delegated_parent_enables_cpu_for_the_root(tmp_path, child):
    """A root placed in a delegated subtree (--parent, as an unprivileged
    manager's own cgroup) goes there, and the subtree, which may use cpu but
    does not yet pass it on, is told to (+cpu), so reserves get cpu files."""
    base, _, _ = tree(tmp_path, "cgroup2")
    touch(base + "/deleg/cgroup.controllers", "cpu memory")
    touch(base + "/deleg/cgroup.subtree_control", "")
    touch(base + "/deleg/cgroup.procs")
    h = Helper(root=ROOT, guardian=False, extra=["--base", base, "--fake", "--parent",
                                                 "/deleg"])
    try:
        assert read(base + "/deleg/cgroup.subtree_control") == "+cpu"
        assert not os.path.exists(base + "/" + ROOT)
        h.ok("reserve w policy=other nice=5")
        h.ok("join w %d" % child.pid)
        assert read(base + "/deleg/" + ROOT + "/w/cpu.weight") == "33"
    finally:
        h.close()
    assert not os.path.exists(base + "/deleg/" + ROOT)


def test_move_between_reserves_that_fails_gives_the_class_back(tmp_path):
    """A member moving to another reserve leaves the old one first, as
    time-sharing, on its way home; when the move into the new group then
    fails, it is not left at the old reserve's nice: it gets its own class
    back (SCHED_BATCH at nice 3).  The fake tree makes the new group's
    cgroup.procs a directory, so that the write fails."""
    base, v2, cpu = tree(tmp_path, "hybrid")
    p = subprocess.Popen(["chrt", "-b", "0", "nice", "-n", "3", "sleep", "60"])
    h = start(base)
    try:
        deadline = time.monotonic() + 5
        while os.readlink("/proc/%d/exe" % p.pid).split("/")[-1] != "sleep":
            assert time.monotonic() < deadline, "chrt never ran sleep"
            time.sleep(0.005)
        h.ok("reserve a policy=other nice=5")
        h.ok("reserve b policy=other nice=-3")
        h.ok("join a %d" % p.pid)
        assert policy_of(p.pid) == os.SCHED_OTHER and os.getpriority(os.PRIO_PROCESS, p.pid) == 5
        os.makedirs(v2 + "/b/cgroup.procs")
        reply = h.cmd("join b %d" % p.pid)
        assert reply.startswith("err ") and "cannot move" in reply, reply
        assert policy_of(p.pid) == os.SCHED_BATCH
        assert os.getpriority(os.PRIO_PROCESS, p.pid) == 3
        assert "members=0" in h.ok("info a") and "members=0" in h.ok("info b")
    finally:
        h.close()
        p.kill()
        p.wait()


def real_cgroup2():
    for d in ("/sys/fs/cgroup/unified", "/sys/fs/cgroup"):
        if os.path.exists(d + "/cgroup.procs") and not os.path.exists(d + "/cpu/cpu.shares"):
            return d
    return None


def test_cgroup2_manager_in_its_delegated_group_moves_into_a_leaf(tmp_path):
    """cgroup v2 lets a group with processes of its own enable no controller
    for its children, so a manager running in the group it is given (an
    unprivileged manager's own cgroup) first moves itself into a leaf of it,
    "manager", and then enables cpu there.  At exit it gives the group back
    as it was (cpu off again, itself back in it, the leaf gone): else no
    process could enter the group again.  The helper runs in a real
    cgroup2 group whose path the fake tree repeats, so that its own cgroup
    is the parent it is given."""
    real_v2 = real_cgroup2()
    if os.geteuid() != 0 or not real_v2:
        pytest.skip("needs root and a cgroup2 tree to start the manager in its own group")
    name = "%s-leaf-%d" % (ROOT, os.getpid())
    real = real_v2 + "/" + name
    os.mkdir(real)
    base, _, _ = tree(tmp_path, "cgroup2")
    deleg = base + "/" + name
    touch(deleg + "/cgroup.controllers", "cpu memory")
    touch(deleg + "/cgroup.subtree_control", "")
    touch(deleg + "/cgroup.procs")
    prefix = ["sh", "-c", 'echo $$ > %s/cgroup.procs && exec "$0" "$@"' % real]
    try:
        h = QosHelper(HELPER, ROOT, False, ["--base", base, "--fake", "--parent", "/" + name],
                      prefix=prefix)
        try:
            assert read(deleg + "/manager/cgroup.procs") == str(h.proc.pid)
            assert read(deleg + "/cgroup.subtree_control") == "+cpu"
            assert os.path.isdir(deleg + "/" + ROOT)
        finally:
            h.close()
        assert h.quit_cleanly
        assert read(deleg + "/cgroup.subtree_control") == "-cpu"
        assert read(deleg + "/cgroup.procs") == str(h.proc.pid)
        assert not os.path.exists(deleg + "/manager")
        assert not os.path.exists(deleg + "/" + ROOT)
    finally:
        os.rmdir(real)


def test_cgroup2_root_at_the_top_enables_cpu_there(tmp_path, child):
    """Root's manager on pure v2 (no parent) where nothing enabled the cpu
    controller at the top (no systemd): it enables it there, so that a
    ceiling is a cpu.max, not nothing."""
    base, v2, _ = tree(tmp_path, "cgroup2")
    touch(base + "/cgroup.subtree_control", "memory pids")
    h = start(base)
    try:
        assert read(base + "/cgroup.subtree_control") == "+cpu"
        assert not any("no cpu controller" in e for e in h.events), h.events
        h.ok("reserve cap policy=other period=50ms cpu=20%")
        h.ok("join cap %d" % child.pid)
        assert read(v2 + "/cap/cpu.max") == "10000 50000"
    finally:
        h.close()



@pytest.mark.parametrize("root,parent,reason", [
    (".", None, "bad cgroup root name"),
    ("..", None, "bad cgroup root name"),
    ("." + ROOT, None, "bad cgroup root name"),
    ("r" * 64, None, "longer than 63 bytes"),
    (ROOT, "/../up", "bad cgroup parent"),
    (ROOT, "deleg", "bad cgroup parent"),
    (ROOT, "/deleg/./x", "bad cgroup parent"),
    (ROOT, "/deleg//x", "bad cgroup parent"),
])
def test_bad_root_name_or_parent_is_refused_before_anything_is_touched(tmp_path, root, parent,
                                                                       reason):
    """The root is where the manager empties and removes every group it
    finds at start: "." or ".." made that the tree's own top (or the
    directory above it, where a sentinel file was deleted), and a name
    over 63 bytes was cut short.  Each is refused with a reason, and
    nothing in or above the tree is touched."""
    base, _, _ = tree(tmp_path, "cgroup2")
    touch(base + "/deleg/cgroup.controllers", "cpu")
    touch(base + "/other/cgroup.procs", "")
    touch(str(tmp_path) + "/sentinel", "keep")
    before = sorted(os.walk(str(tmp_path)))
    extra = ["--base", base, "--fake"] + (["--parent", parent] if parent else [])
    with pytest.raises(AssertionError) as e:
        QosHelper(HELPER, root, False, extra)
    assert reason in str(e.value), str(e.value)
    assert sorted(os.walk(str(tmp_path))) == before


def test_reconcile_removes_leftover_groups(tmp_path):
    """Groups left by a dead instance are thawed and removed at start."""
    base, v2, cpu = tree(tmp_path, "hybrid")
    touch(v2 + "/old/cgroup.freeze", "1")
    touch(v2 + "/old/cgroup.procs")
    os.makedirs(cpu + "/old")
    h = start(base)
    try:
        assert any("reserve=old" in e and "reconciling group left by an earlier instance" in e
                   for e in h.events), h.events
        assert not os.path.exists(v2 + "/old") and not os.path.exists(cpu + "/old")
    finally:
        h.close()


def test_group_that_refuses_removal_is_retried(tmp_path):
    """A leftover group that cannot be removed yet is reported with the reason
    and removed at a later pass, without a restart."""
    base, v2, cpu = tree(tmp_path, "hybrid")
    touch(v2 + "/old/cgroup.freeze", "1")
    os.makedirs(cpu + "/old/held")  # a fake tree's stand-in for EBUSY: ENOTEMPTY
    h = start(base)
    try:
        assert any("reserve=old" in e and "cannot remove group old: Directory not empty" in e
                   for e in h.events), h.events
        os.rmdir(cpu + "/old/held")
        deadline = time.monotonic() + 5
        while os.path.exists(cpu + "/old") or os.path.exists(v2 + "/old"):
            assert time.monotonic() < deadline, "the housekeeping pass did not remove it"
            h.ok("sync")
            time.sleep(0.1)
    finally:
        h.close()


def test_leftover_group_that_refuses_removal_is_thawed(tmp_path):
    """A leftover frozen group that cannot be removed yet is thawed at once:
    what is left in it must not stay frozen until the group can go."""
    base, v2, cpu = tree(tmp_path, "hybrid")
    touch(v2 + "/old/cgroup.freeze", "1")
    os.makedirs(v2 + "/old/held")  # neither directory can be removed
    os.makedirs(cpu + "/old/held")
    h = start(base)
    try:
        assert any("reserve=old" in e and "cannot remove group old" in e
                   for e in h.events), h.events
        assert read(v2 + "/old/cgroup.freeze") == "0"
    finally:
        h.close()


def test_reserve_named_like_a_group_waiting_for_removal(tmp_path, child):
    """A new reserve does not take over a group of its name that still waits
    to be removed: it gets its own (name~1), and when that one refuses
    removal too the error names the reserve and the group."""
    base, v2, cpu = tree(tmp_path, "hybrid")
    touch(v2 + "/old/cgroup.freeze", "1")
    os.makedirs(cpu + "/old/held")
    h = start(base)
    try:
        h.ok("reserve old policy=idle")
        h.ok("join old %d" % child.pid)
        assert read(cpu + "/old~1/cgroup.procs") == str(child.pid)
        h.ok("leave %d" % child.pid)
        os.makedirs(cpu + "/old~1/held")
        h.ok("delete old")
        assert any(e.startswith("event error reserve=old pid=") and
                   "cannot remove group old~1: Directory not empty" in e
                   for e in h.events), h.events
        os.rmdir(cpu + "/old/held")
        os.rmdir(cpu + "/old~1/held")
        deadline = time.monotonic() + 5
        while any(os.path.exists(d) for d in (cpu + "/old", cpu + "/old~1", v2 + "/old~1")):
            assert time.monotonic() < deadline, "the housekeeping pass did not remove them"
            h.ok("sync")
            time.sleep(0.1)
    finally:
        h.close()
