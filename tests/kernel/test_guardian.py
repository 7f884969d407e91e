"""Kernel tests of the guardian (qos/member/guardian.c), the child that outlives a
killed manager: it thaws paused members and demotes real-time ones, survives
its manager's cgroup being killed, and is replaced when it dies itself."""
import contextlib
import os
import resource
import signal
import time

import pytest

import kernel_helpers
from kernel_helpers import (
    CG, Helper, ROOT, assert_no_test_cgroup_left, busy, force_cleanup, frozen, kill9, kill9_frozen,
    kill_guardian, live_guardians, place, policy_of, running_helper, runs, thread_owner, wait_for,
    wait_frozen)
from qos_helper_driver import rmdir_when_empty

pytestmark = kernel_helpers.pytestmark  # root, or each test skipped with the reason


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
        assert runs(p.pid)
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
        assert runs(p.pid)
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
        assert runs(paused.pid)
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


def test_zz_no_test_cgroup_left():
    assert_no_test_cgroup_left()
