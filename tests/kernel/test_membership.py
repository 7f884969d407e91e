"""Kernel tests of members coming and going: joining and leaving (back to the
cgroup a member came from), forked children adopted or sent back, thread
members, automatic reserves passed on, and groups named like control files."""
import os
import resource
import signal
import subprocess
import sys
import time

import pytest

import kernel_helpers
from kernel_helpers import (
    CG, ROOT, THREAD_ON_DEMAND, assert_no_test_cgroup_left, busy, cgroup_lines, cgroup_of,
    check_rttime_restored, kill_grandchild, move_to, place, policy_of, share, thread_member_forks,
    thread_owner, wait_for, wait_frozen)

pytestmark = kernel_helpers.pytestmark  # root, or each test skipped with the reason


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


def test_zz_no_test_cgroup_left():
    assert_no_test_cgroup_left()
