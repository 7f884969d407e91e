"""Kernel tests of pause reserves (the cgroup freezer): members frozen and
thawed, a reserve that was empty still freezing its next member, single threads
refused, and a stranger left in a deleted paused group released."""
import os
import time

import kernel_helpers
from kernel_helpers import (
    ROOT, assert_no_test_cgroup_left, busy, cgroup_lines, place, runs, share, thread_owner,
    wait_frozen)

pytestmark = kernel_helpers.pytestmark  # root, or each test skipped with the reason


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
    assert runs(p.pid)


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
    assert runs(a.pid)


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
    assert runs(stranger.pid), "the stranger should run again"


def test_zz_no_test_cgroup_left():
    assert_no_test_cgroup_left()
