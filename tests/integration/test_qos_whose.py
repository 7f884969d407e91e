"""Whose processes a session may touch: every way of asking (qosctl set and
join here; buttons, the protocol and AutoQOS go through the same gate)
refuses pid 1, kernel threads, other users' processes, the services the
session depends on and the compositor's ancestors (any class), naming
the reason; and
without CAP_SYS_NICE, real-time is refused before the kernel is asked,
with the fixes: fifo and rr beyond the target's RLIMIT_RTPRIO, deadline
scheduling always. (The same refusals for an ordinary user's session on
pure cgroup v2 are checked in the virtual machine, tests/vm.)"""
import os
import pwd
import shutil
import subprocess

import pytest

import harness


def qosctl_refused(comp, *args):
    r = comp.qosctl(*args)
    assert r.returncode == 1, "%s answered %d: %s%s" % (args, r.returncode, r.stdout, r.stderr)
    return r.stdout + r.stderr


def proc_state(pid):
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[0]


@pytest.fixture
def comp(start_qosway):
    return start_qosway(config=harness.qos_test_config())


@pytest.fixture
def as_nobody():
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("starting another user's process needs root and setpriv")
    nobody = pwd.getpwnam("nobody")
    p = subprocess.Popen(["setpriv", "--reuid=%d" % nobody.pw_uid,
                          "--regid=%d" % nobody.pw_gid, "--clear-groups", "sleep", "1000"])

    def switched():  # setpriv has changed user and exec'd sleep
        try:
            with open("/proc/%d/status" % p.pid) as f:
                uid = next(line.split()[1] for line in f if line.startswith("Uid:"))
            return uid == str(nobody.pw_uid) and os.readlink(
                "/proc/%d/exe" % p.pid).endswith("/sleep")
        except OSError:
            return False
    harness.wait_for(switched, desc="sleep running as nobody")
    yield p.pid
    p.kill()
    p.wait()


def test_pid_1_is_refused(comp):
    for args in (("set", "pid:1", "paused"), ("set", "pid:1", "idle"),
                 ("join", "pid:1", "idle")):
        out = qosctl_refused(comp, *args)
        assert "refusing to change pid 1" in out, out
    assert proc_state(1) != "T"


def test_kernel_thread_is_refused(comp):
    # kthreadd is pid 2 on every Linux; in a container it may not be visible
    kthread = 2 if os.path.exists("/proc/2/stat") else None
    if kthread is None or open("/proc/2/cmdline").read():
        pytest.skip("no kernel thread visible here")
    out = qosctl_refused(comp, "set", "pid:2", "idle")
    assert "pid 2: it is a kernel thread" in out, out


def test_other_users_process_is_refused(comp, as_nobody):
    out = qosctl_refused(comp, "set", "pid:%d" % as_nobody, "paused")
    assert "belongs to nobody" in out and "qos-other-users on" in out, out
    out = qosctl_refused(comp, "join", "pid:%d" % as_nobody, "idle")
    assert "belongs to nobody" in out, out
    assert proc_state(as_nobody) != "T"


def test_root_session_may_allow_other_users(start_qosway, as_nobody):
    comp = start_qosway(config=harness.qos_test_config("qos-other-users on\n"))
    r = comp.qosctl("set", "pid:%d" % as_nobody, "idle")
    assert r.returncode == 0, r.stdout + r.stderr
    r = comp.qosctl("set", "pid:%d" % as_nobody, "normal")
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("args", [
    ("set", "paused"), ("set", "idle"), ("set", "nice"), ("set", "fifo"),
    ("set", "realtime"), ("set", "normal"), ("join", "idle")])
def test_ancestor_is_refused_every_class(comp, args):
    # pytest started the compositor: the session runs it under us, and
    # under our parent
    before = harness.sched_attr(os.getpid())
    for pid in (os.getpid(), os.getppid()):
        if pid <= 1:
            continue
        with open("/proc/%d/comm" % pid) as f:
            name = f.read().strip()
        out = qosctl_refused(comp, args[0], "pid:%d" % pid, args[1])
        assert "refusing to change pid %d (%s): it is an ancestor of the compositor" % (
            pid, name) in out, out
        assert "would change the session's own" in out, out
    assert harness.sched_attr(os.getpid()) == before
    assert proc_state(os.getpid()) != "T"


def test_session_service_is_refused(comp, tmp_path):
    seatd = tmp_path / "seatd"
    shutil.copy(shutil.which("sleep"), seatd)
    p = subprocess.Popen([str(seatd), "1000"])
    try:
        out = qosctl_refused(comp, "set", "pid:%d" % p.pid, "paused")
        assert "(seatd): the session depends on it" in out, out
        assert proc_state(p.pid) != "T"
    finally:
        p.kill()
        p.wait()


def test_realtime_without_cap_sys_nice_names_the_fix(start_qosway):
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("dropping CAP_SYS_NICE from a root compositor needs root and setpriv")
    comp = start_qosway(config=harness.qos_test_config(),
                        prefix=["setpriv", "--inh-caps=-all", "--bounding-set=-sys_nice"])
    p = subprocess.Popen(["sleep", "1000"])
    try:
        for cls in ("realtime", "fifo"):
            out = qosctl_refused(comp, "set", "pid:%d" % p.pid, cls)
            assert "needs CAP_SYS_NICE" in out and "setcap cap_sys_nice=ep" in out, out
        # what needs no privilege still works
        r = comp.qosctl("set", "pid:%d" % p.pid, "idle")
        assert r.returncode == 0, r.stdout + r.stderr
        comp.qosctl("set", "pid:%d" % p.pid, "normal")
    finally:
        p.kill()
        p.wait()


CAP_SYS_NICE = 23


@pytest.fixture
def without_cap(start_qosway):
    """A compositor without CAP_SYS_NICE, as an ordinary user's session runs
    without the file capability. It runs as root here (an unprivileged one
    gets no QoS manager on this hybrid tree; the virtual machine, tests/vm,
    runs one as nobody): for a target of its own user, the kernel's rule is
    the same, the target's RLIMIT_RTPRIO."""
    if os.geteuid() != 0 or not shutil.which("setpriv") or not shutil.which("prlimit"):
        pytest.skip("dropping CAP_SYS_NICE from a root compositor needs root, setpriv, prlimit")
    comp = start_qosway(config=harness.qos_test_config(),
                        prefix=["setpriv", "--inh-caps=-all", "--bounding-set=-sys_nice"])
    with open("/proc/%d/status" % comp.pid) as f:
        eff = [int(line.split()[1], 16) for line in f if line.startswith("CapEff:")][0]
    assert not eff & (1 << CAP_SYS_NICE), hex(eff)
    return comp


def sleeper(rtprio):
    p = subprocess.Popen(["prlimit", "--rtprio=%d" % rtprio, "sleep", "1000"])
    harness.wait_for(lambda: os.readlink("/proc/%d/exe" % p.pid).endswith("/sleep"),
                     desc="sleep started under prlimit")
    return p


def test_real_time_without_rtprio_or_cap_sys_nice_refused(without_cap):
    """Without CAP_SYS_NICE and with no RLIMIT_RTPRIO (the default), fifo is
    refused before the kernel, naming the limit and both fixes; deadline
    scheduling needs the capability whatever the limit."""
    comp = without_cap
    p = sleeper(0)
    try:
        out = qosctl_refused(comp, "set", "pid:%d" % p.pid, "fifo")
        assert "fifo priority 10 needs CAP_SYS_NICE or RLIMIT_RTPRIO >= 10 (pid %d has 0)" % (
            p.pid) in out, out
        assert "'setcap cap_sys_nice=ep " in out, out
        assert "'root - rtprio 10' in /etc/security/limits.d/" in out, out
        out = qosctl_refused(comp, "set", "pid:%d" % p.pid, "realtime")
        assert "deadline scheduling (a real-time reserve) needs CAP_SYS_NICE" in out, out
        assert harness.sched_attr(p.pid)["policy"] == os.SCHED_OTHER
    finally:
        p.kill()
        p.wait()


def test_fifo_within_the_targets_rtprio_limit_without_cap_sys_nice(without_cap):
    """What pam_limits' rtprio gives an ordinary user: fifo up to the
    target's RLIMIT_RTPRIO, as the kernel allows without CAP_SYS_NICE; above
    it, a refusal naming the limit."""
    if subprocess.run(["prlimit", "--rtprio=50", "true"], capture_output=True).returncode:
        pytest.skip("raising RLIMIT_RTPRIO needs CAP_SYS_RESOURCE, which this root lacks "
                    "(the virtual machine, tests/vm, checks it)")
    comp = without_cap
    p = sleeper(50)
    try:
        # qosctl's fifo is priority 10: within 50
        r = comp.qosctl("set", "pid:%d" % p.pid, "fifo")
        assert r.returncode == 0, r.stdout + r.stderr
        assert harness.sched_attr(p.pid)["policy"] == os.SCHED_FIFO
        r = comp.qosctl("set", "pid:%d" % p.pid, "normal")
        assert r.returncode == 0, r.stdout + r.stderr
        assert harness.sched_attr(p.pid)["policy"] == os.SCHED_OTHER
        r = comp.qosctl("reserve", "high", "policy=fifo", "priority=60")
        assert r.returncode == 0, r.stdout + r.stderr
        out = qosctl_refused(comp, "join", "pid:%d" % p.pid, "high")
        assert "fifo priority 60 needs CAP_SYS_NICE or RLIMIT_RTPRIO >= 60 (pid %d has 50)" % (
            p.pid) in out, out
        assert harness.sched_attr(p.pid)["policy"] == os.SCHED_OTHER
    finally:
        p.kill()
        p.wait()
