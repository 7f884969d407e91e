"""An unprivileged manager on pure cgroup v2 works inside the subtree
delegated to it (root sets it up here, as systemd's Delegate=yes does on a
desktop): its root goes there, not at the top it may not write, members
come and go between cgroups of the subtree, and nothing is written outside
it.  (With a cpu controller to enable there, it would first move itself
into a leaf of its group: test_cgroup_files checks the move and the enabling.)

This machine's cgroup2 tree (/sys/fs/cgroup/unified on the hybrid layout)
has no cpu controller, so the manager runs there as on a pure-v2 desktop
whose cpu controller is not delegated: pause still works by freezing."""
import os
import pwd
import shutil
import signal
import subprocess
import time

import pytest

from kernel_helpers import HELPER, live_guardians, poll_until, pytestmark, wait_for
from qos_helper_driver import CG, QosHelper

assert pytestmark

V2 = CG + "/unified" if os.path.isdir(CG + "/unified") else CG
NOBODY = pwd.getpwnam("nobody")


def chown_tree(path):
    for dirpath, _, files in os.walk(path):
        os.chown(dirpath, NOBODY.pw_uid, NOBODY.pw_gid)
        for f in files:
            if f in ("cgroup.procs", "cgroup.threads", "cgroup.subtree_control"):
                os.chown(os.path.join(dirpath, f), NOBODY.pw_uid, NOBODY.pw_gid)


def remove_tree(path):
    for dirpath, dirs, _ in sorted(os.walk(path), key=lambda w: -w[0].count("/")):
        for pid in open(dirpath + "/cgroup.procs").read().split():
            try:
                os.kill(int(pid), 9)
            except OSError:
                pass
    for _ in range(100):
        left = [w[0] for w in os.walk(path)]
        for d in sorted(left, key=lambda d: -d.count("/")):
            try:
                os.rmdir(d)
            except OSError:
                pass
        if not os.path.exists(path):
            return
        time.sleep(0.05)


@pytest.fixture
def delegated():
    if not shutil.which("setpriv"):
        pytest.skip("setpriv (util-linux) is not installed")
    rel = "/qosway-deleg-%d" % os.getpid()
    d = V2 + rel
    os.makedirs(d + "/origin")
    chown_tree(d)
    try:
        yield rel, d
    finally:
        remove_tree(d)


def as_nobody(group):
    """A command prefix: run as nobody, started in the cgroup `group`."""
    cmd = ("echo $$ > %s/cgroup.procs && exec setpriv --reuid=%d --regid=%d "
           "--clear-groups \"$@\"" % (group, NOBODY.pw_uid, NOBODY.pw_gid))
    return ["sh", "-c", cmd, "sh"]


def v2_cgroup(pid):
    with open("/proc/%d/cgroup" % pid) as f:
        return next(line.strip()[3:] for line in f if line.startswith("0::"))


def test_unprivileged_manager_in_its_delegated_subtree(delegated):
    rel, d = delegated
    member = subprocess.Popen(as_nobody(d + "/origin") + ["sleep", "60"])
    try:
        poll_until(lambda: v2_cgroup(member.pid) == rel + "/origin" and started(member),
                   "the member never ran sleep in origin")
        h = QosHelper(HELPER, "qosway-deleg", True, ["--base", V2], prefix=as_nobody(d))
        try:
            assert os.path.isdir(d + "/qosway-deleg"), os.listdir(d)
            assert not os.path.exists(V2 + "/qosway-deleg")
            # no cpu controller to enable: no reason to leave its group
            assert v2_cgroup(h.proc.pid) == rel
            assert any("no cpu controller" in e for e in h.events), h.events
            h.ok("reserve held policy=pause")
            h.ok("join held %d" % member.pid)
            poll_until(lambda: frozen(d + "/qosway-deleg/held"), "never frozen", step=0.02)
            h.ok("leave %d" % member.pid)
            assert v2_cgroup(member.pid) == rel + "/origin"
        finally:
            h.close()
        assert h.quit_cleanly
        assert not os.path.exists(d + "/qosway-deleg/held")
    finally:
        member.kill()
        member.wait()


def started(member):
    """The member process has exec'd sleep (it was set up before that)."""
    return os.readlink("/proc/%d/exe" % member.pid).endswith("sleep")


def frozen(group):
    with open(group + "/cgroup.events") as f:
        return "frozen 1" in f.read().split("\n")


def test_next_session_reconciles_what_a_killed_one_left_next_to_it(delegated):
    """Each session start gets a scope of its own (qosway-session), so the
    manager started after a crash runs next to the scope the killed one
    left its groups in, not in it.  With its guardian gone too, nothing has
    thawed them: the next manager finds that root in the scope beside its
    own (same user, no live manager there), thaws and sends home what it
    holds, and removes it."""
    rel, d = delegated
    for scope in ("a", "b"):
        os.makedirs(d + "/" + scope + "/origin")
    chown_tree(d)
    member = subprocess.Popen(as_nobody(d + "/a/origin") + ["sleep", "60"])
    try:
        poll_until(lambda: v2_cgroup(member.pid) == rel + "/a/origin" and started(member),
                   "the member never ran sleep in a/origin")
        h = QosHelper(HELPER, "qosway-deleg", True, ["--base", V2], prefix=as_nobody(d + "/a"))
        try:
            h.ok("reserve held policy=pause")
            h.ok("join held %d" % member.pid)
            held = d + "/a/qosway-deleg/held"
            poll_until(lambda: frozen(held), "never frozen", step=0.02)
            (guardian,) = wait_for(h, lambda: live_guardians(h.proc.pid), 5, "no guardian")
            os.kill(guardian, signal.SIGSTOP)  # so it cannot thaw anything
            h.proc.kill()
            h.proc.wait()
            os.kill(guardian, signal.SIGKILL)
            poll_until(lambda: not os.path.exists("/proc/%d" % guardian) or
                       open("/proc/%d/stat" % guardian).read().split(")")[1].split()[0] == "Z",
                       "the killed guardian never died", step=0.02)
        finally:
            h.close()
        assert frozen(held), "thawed with no manager and no guardian left"
        nxt = QosHelper(HELPER, "qosway-deleg", True, ["--base", V2], prefix=as_nobody(d + "/b"))
        try:
            assert any("reconciling the groups an earlier instance left in %s/a" % rel in e
                       for e in nxt.events), nxt.events
            assert v2_cgroup(member.pid) == rel + "/a/origin"
            assert not os.path.exists(d + "/a/qosway-deleg")
            assert os.path.isdir(d + "/b/qosway-deleg")
        finally:
            nxt.close()
        assert nxt.quit_cleanly
        assert not os.path.exists(d + "/b/qosway-deleg")
    finally:
        member.kill()
        member.wait()


def test_a_live_manager_next_to_it_is_left_alone(delegated):
    """Another session of the same user still running beside the new one
    (its manager alive in the scope next door) keeps its groups."""
    rel, d = delegated
    for scope in ("a", "b"):
        os.makedirs(d + "/" + scope)
    chown_tree(d)
    first = QosHelper(HELPER, "qosway-deleg", True, ["--base", V2], prefix=as_nobody(d + "/a"))
    try:
        first.ok("reserve kept policy=pause")
        member = subprocess.Popen(as_nobody(d + "/a") + ["sleep", "60"])
        try:
            poll_until(lambda: started(member), "the member never ran sleep")
            first.ok("join kept %d" % member.pid)
            second = QosHelper(HELPER, "qosway-deleg", True, ["--base", V2],
                               prefix=as_nobody(d + "/b"))
            try:
                assert not any("earlier instance" in e for e in second.events), second.events
                assert frozen(d + "/a/qosway-deleg/kept")
            finally:
                second.close()
            first.ok("leave %d" % member.pid)
        finally:
            member.kill()
            member.wait()
    finally:
        first.close()
    assert first.quit_cleanly


def test_real_time_refused_for_want_of_cap_sys_nice_says_so(delegated):
    """A manager without CAP_SYS_NICE (nobody, no file capability) asks
    the kernel for deadline scheduling and is refused with EPERM: the
    refusal names the capability and how to give it, not CPU affinity."""
    rel, d = delegated
    member = subprocess.Popen(as_nobody(d + "/origin") + ["sleep", "60"])
    try:
        poll_until(lambda: started(member), "the member never ran sleep")
        h = QosHelper(HELPER, "qosway-deleg", True, ["--base", V2], prefix=as_nobody(d))
        try:
            h.ok("reserve rt policy=qos period=20ms cpu=10%")
            reply = h.cmd("join rt %d" % member.pid)
            assert reply.startswith("err") and "CAP_SYS_NICE" in reply and \
                "setcap cap_sys_nice=ep" in reply, reply
            assert "every CPU" not in reply, reply
        finally:
            h.close()
        assert h.quit_cleanly
    finally:
        member.kill()
        member.wait()


def test_thread_that_could_not_get_its_class_back_is_refused(delegated):
    """Without CAP_SYS_NICE the kernel lets a thread leave SCHED_IDLE, or
    lower its nice again, only as far as its RLIMIT_NICE allows (0 by
    default): a single thread is refused an idle or nicer reserve up front
    with the reason, rather than left idle after it leaves.  Its process,
    whose class the group carries, may still join."""
    rel, d = delegated
    code = ("import threading, time; "
            "threading.Thread(target=time.sleep, args=(60,)).start(); time.sleep(60)")
    member = subprocess.Popen(as_nobody(d + "/origin") + ["python3", "-c", code])
    try:
        poll_until(lambda: len(os.listdir("/proc/%d/task" % member.pid)) == 2,
                   "the member never started its second thread")
        tid = next(int(t) for t in os.listdir("/proc/%d/task" % member.pid)
                   if int(t) != member.pid)
        h = QosHelper(HELPER, "qosway-deleg", True, ["--base", V2], prefix=as_nobody(d))
        try:
            for params in ("policy=idle", "policy=other nice=5"):
                h.ok("reserve low " + params)
                reply = h.cmd("join low %d %d" % (member.pid, tid))
                assert reply.startswith("err") and "RLIMIT_NICE" in reply and \
                    "CAP_SYS_NICE" in reply, reply
                assert os.sched_getscheduler(tid) == os.SCHED_OTHER
                assert os.getpriority(os.PRIO_PROCESS, tid) == 0
            h.ok("join low %d" % member.pid)
            h.ok("leave %d" % member.pid)
        finally:
            h.close()
        assert h.quit_cleanly
    finally:
        member.kill()
        member.wait()
