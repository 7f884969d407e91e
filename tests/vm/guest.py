#!/usr/bin/env python3
"""The checks that run inside the virtual machine tests/vm/run.sh boots:
Debian's own kernel with a pure cgroup-v2 tree (cgroup_no_v1=all) and a
virtio-gpu DRM device. It runs as root in the guest, whose root file system
is the host's (read-only, with throw-away overlays on /usr, /etc, /tmp...).

Each check prints one line, "VMCHECK PASS|FAIL|SKIP name[: reason]", also
appended to OUT/results.txt; logs go to OUT. Functional checks only: the
guest runs under TCG, many times slower than the host, so waits are long
and nothing is timed.

    guest.py --out DIR --build BUILD_DIR --stage STAGE_DIR
"""
import argparse
import json
import os
import pwd
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import traceback

CG = "/sys/fs/cgroup"
NOBODY = pwd.getpwnam("nobody")
# Seconds for anything to happen under TCG (25x slower than the host), on
# a host that may be running other work too.
WAIT = 150.0

ARGS = None
RESULTS = None


class Skip(Exception):
    pass


def report(status, name, reason=""):
    line = "VMCHECK %s %s%s" % (status, name, (": " + reason.replace("\n", " ")) if reason else "")
    print(line, flush=True)
    with open(RESULTS, "a") as f:
        f.write(line + "\n")


def check(name, fn, *args):
    t0 = time.monotonic()
    try:
        fn(*args)
    except Skip as e:
        report("SKIP", name, str(e))
    except Exception as e:  # noqa: BLE001 (every failure is a result)
        traceback.print_exc()
        dump_cgroups(name)
        report("FAIL", name, "%s: %s" % (type(e).__name__, e))
    else:
        report("PASS", name)
    print("  (%s took %.1f s)" % (name, time.monotonic() - t0), flush=True)


def dump_cgroups(name):
    """The cgroup tree (type, members, freeze state) beside a failure."""
    path = os.path.join(ARGS.out, "cgroups-%s.txt" % name.replace("/", "-"))
    with open(path, "w") as out:
        for d, _, _ in os.walk(CG):
            info = []
            for f in ("cgroup.type", "cgroup.procs", "cgroup.subtree_control", "cgroup.freeze"):
                try:
                    info.append("%s=%s" % (f[7:], read(d + "/" + f).replace("\n", ",")))
                except OSError:
                    pass
            st = os.stat(d)
            out.write("%s uid=%d %s\n" % (d[len(CG):] or "/", st.st_uid, " ".join(info)))


def wait_for(pred, desc, timeout=WAIT):
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > end:
            raise AssertionError("timed out waiting for " + desc)
        time.sleep(0.2)


def read(path):
    with open(path) as f:
        return f.read().strip()


def v2_cgroup_of(path):
    for line in read(path).splitlines():
        if line.startswith("0::"):
            return line[3:]
    raise AssertionError("%s has no cgroup v2 line" % path)


def v2_cgroup(pid):
    return v2_cgroup_of("/proc/%d/cgroup" % pid)


def frozen(pid):
    group = v2_cgroup(pid)
    if group == "/":
        return False  # the root group cannot be frozen
    events = read(CG + group + "/cgroup.events")
    return "frozen 1" in events.splitlines()


def status_field(pid, key):
    for line in read("/proc/%d/status" % pid).splitlines():
        if line.startswith(key + ":"):
            return line.split(":", 1)[1].strip()
    return None


def as_user(user, cgroup=None):
    """A command prefix: optionally enter cgroup (a path under CG), then
    drop to user (None: stay root)."""
    pre = []
    if cgroup:
        pre = ["sh", "-c", 'echo $$ > %s/cgroup.procs && exec "$@"' % (CG + cgroup), "sh"]
    if user:
        pre += ["setpriv", "--reuid=%d" % user.pw_uid, "--regid=%d" % user.pw_gid,
                "--clear-groups", "--inh-caps=-all"]
    return pre


def kill_tree_of_cgroup(path):
    """SIGKILL everything in the cgroup subtree at CG+path, thawing it,
    then remove its groups."""
    top = CG + path
    if not os.path.isdir(top):
        return
    for d, _, _ in os.walk(top):
        try:
            with open(d + "/cgroup.freeze", "w") as f:
                f.write("0")
        except OSError:
            pass
    for _ in range(50):
        left = False
        for d, _, _ in os.walk(top):
            for p in read(d + "/cgroup.procs").split():
                left = True
                try:
                    os.kill(int(p), signal.SIGKILL)
                except OSError:
                    pass
        if not left:
            break
        time.sleep(0.1)
    for d in sorted((w[0] for w in os.walk(top)), key=lambda d: -d.count("/")):
        try:
            os.rmdir(d)
        except OSError:
            pass


def reachable(binary):
    """A copy of a built binary that every user can run: the build directory
    may sit in a home of mode 0700, which nobody cannot enter."""
    os.makedirs("/tmp/vm-bin", mode=0o755, exist_ok=True)
    copy = os.path.join("/tmp/vm-bin", os.path.basename(binary))
    if not os.path.exists(copy):
        shutil.copy2(binary, copy)
        os.chmod(copy, 0o755)
    return copy


class Qosway:
    """A qosway started as `user` (None: root), optionally placed in a
    cgroup first, headless unless argv/env say otherwise."""

    def __init__(self, name, user=None, cgroup=None, argv=None, env=None, qosctl=None):
        self.name, self.user = name, user
        uid = user.pw_uid if user else 0
        gid = user.pw_gid if user else 0
        self.runtime = "/tmp/vm-%s-run" % name
        self.home = "/tmp/vm-%s-home" % name
        for d in (self.runtime, self.home):
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d, mode=0o700)
            os.chown(d, uid, gid)
        self.env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
            "HOME": self.home,
            "XDG_RUNTIME_DIR": self.runtime,
            "WLR_BACKENDS": "headless",
            "WLR_RENDERER": "pixman",
            "WLR_LIBINPUT_NO_DEVICES": "1",
            "XDG_CONFIG_HOME": self.home + "/.config",
        }
        for k, v in (env or {}).items():
            if v is None:
                self.env.pop(k, None)
            else:
                self.env[k] = v
        self.qosctl_bin = qosctl or reachable(os.path.join(ARGS.build, "clients", "qosctl"))
        self.log_path = os.path.join(ARGS.out, "qosway-%s.log" % name)
        argv = argv or [reachable(os.path.join(ARGS.build, "compositor", "qosway"))]
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(as_user(user, cgroup) + argv, env=self.env,
                                     stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        self.sock = None
        try:
            wait_for(self._ready, "qosway %s to start (see %s)" % (name, self.log_path))
        except Exception:
            self.stop()
            raise

    def _ready(self):
        if self.proc.poll() is not None:
            raise AssertionError("qosway %s exited with %s: %s" % (
                self.name, self.proc.returncode, self.log_text()[-1500:]))
        for line in self.log_text().splitlines():
            if "QOSWAY_SOCK=" in line:
                for word in line.split():
                    if word.startswith("WAYLAND_DISPLAY="):
                        self.env["WAYLAND_DISPLAY"] = word.split("=", 1)[1]
                    if word.startswith("QOSWAY_SOCK="):
                        self.sock = self.env["QOSWAY_SOCK"] = word.split("=", 1)[1]
                return True
        return False

    def log_text(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def qosctl(self, *args, expect_ok=True):
        cmd = as_user(self.user) + [self.qosctl_bin, "--json"] + list(args)
        r = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=WAIT)
        if expect_ok and r.returncode != 0:
            dump_cgroups("qosctl-%s-%s" % (self.name, args[0]))
            raise AssertionError("qosctl %s: exit %d: %s%s" % (
                " ".join(args), r.returncode, r.stdout, r.stderr))
        try:
            return r.returncode, json.loads(r.stdout) if r.stdout.strip() else {}, r.stderr
        except ValueError:
            return r.returncode, {"text": r.stdout}, r.stderr

    def exec(self, *argv, reserve=None):
        args = ["exec"] + (["-r", reserve] if reserve else []) + ["--"] + list(argv)
        _, reply, _ = self.qosctl(*args)
        if reply.get("refused"):
            raise AssertionError("started without its reserve: " + reply["refused"])
        return reply["pid"]

    def guard_pid(self):
        """The QoS guard: qosway's child running qosway's own executable."""
        me = os.readlink("/proc/%d/exe" % self.proc.pid)
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    if int(read("/proc/%s/stat" % d).rsplit(")", 1)[1].split()[1]) == \
                            self.proc.pid and os.readlink("/proc/%s/exe" % d) == me:
                        return int(d)
                except OSError:
                    continue
        return None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(WAIT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


def kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


# --- the checks ---------------------------------------------------------


def check_kernel():
    controllers = read(CG + "/cgroup.controllers").split()
    assert "cpu" in controllers, "no cpu controller: " + " ".join(controllers)
    mounts = read("/proc/mounts")
    assert " cgroup " not in mounts, "a cgroup v1 hierarchy is mounted"
    assert os.path.exists("/dev/dri/card0"), "no /dev/dri/card0 (virtio-gpu)"


def qos_suite(tag, comp, home_cgroup, thread_classes=True, only_threads=False):
    """The QoS checks on one running compositor; home_cgroup is where the
    processes it starts begin (its own cgroup). thread_classes: the
    compositor can give a single thread its class back (root, or
    CAP_SYS_NICE); else joining one to an idle reserve is refused."""
    sleepers = []

    def sleeper():
        pid = comp.exec("sleep", "100000")
        sleepers.append(pid)
        wait_for(lambda: v2_cgroup(pid), "pid %d to exist" % pid)
        return pid

    def join_leave():
        pid = sleeper()
        home = v2_cgroup(pid)
        comp.qosctl("reserve", "vmjoin", "policy=other")
        comp.qosctl("join", "pid:%d" % pid, "vmjoin")
        joined = wait_for(lambda: v2_cgroup(pid) != home and v2_cgroup(pid), "the join")
        assert "qosway" in joined, "joined cgroup %s is not the manager's" % joined
        comp.qosctl("set", "pid:%d" % pid, "normal")
        wait_for(lambda: v2_cgroup(pid) == home, "pid %d to go home to %s" % (pid, home))

    def ceiling():
        comp.qosctl("reserve", "vmcap", "policy=other", "period=50ms", "cpu=20%")
        pid = sleeper()
        comp.qosctl("join", "pid:%d" % pid, "vmcap")
        group = CG + wait_for(lambda: "qosway" in v2_cgroup(pid) and v2_cgroup(pid), "the join")
        value = wait_for(lambda: read(group + "/cpu.max") != "max 100000" and
                         read(group + "/cpu.max"), "cpu.max to be set")
        assert value == "10000 50000", "cpu.max is %r, want '10000 50000'" % value
        comp.qosctl("set", "pid:%d" % pid, "normal")

    def idle():
        pid = sleeper()
        comp.qosctl("set", "pid:%d" % pid, "idle")
        group = CG + v2_cgroup(pid)
        policy = read("/proc/%d/sched" % pid)
        sched_idle = any(line.split(":")[0].strip() == "policy" and
                         line.split(":")[1].strip() == "5" for line in policy.splitlines())
        cg_idle = os.path.exists(group + "/cpu.idle") and read(group + "/cpu.idle") == "1"
        assert sched_idle or cg_idle, "neither SCHED_IDLE nor cpu.idle=1 in %s" % group
        comp.qosctl("set", "pid:%d" % pid, "normal")

    def pause_thaw():
        pid = sleeper()
        home = v2_cgroup(pid)
        comp.qosctl("set", "pid:%d" % pid, "paused")
        wait_for(lambda: frozen(pid), "pid %d to freeze" % pid)
        comp.qosctl("set", "pid:%d" % pid, "normal")
        wait_for(lambda: v2_cgroup(pid) == home and not frozen(pid), "pid %d to thaw" % pid)

    def refuse_init():
        rc, reply, err = comp.qosctl("set", "pid:1", "paused", expect_ok=False)
        assert rc == 1, "pausing pid 1 answered %d %s %s" % (rc, reply, err)
        assert not frozen(1), "pid 1 is frozen"

    def join_leave_thread():
        code = ("import threading, time; "
                "threading.Thread(target=time.sleep, args=(1e6,)).start(); time.sleep(1e6)")
        pid = comp.exec("/usr/bin/python3", "-c", code)
        sleepers.append(pid)
        tasks = wait_for(lambda: len(os.listdir("/proc/%d/task" % pid)) == 2 and
                         os.listdir("/proc/%d/task" % pid), "the second thread")
        tid = int(next(t for t in tasks if int(t) != pid))

        def thread_cgroup(t):
            return v2_cgroup_of("/proc/%d/task/%d/cgroup" % (pid, t))
        def thread_idle(t):
            sched = read("/proc/%d/task/%d/sched" % (pid, t)).splitlines()
            return any(line.split(":")[0].strip() == "policy" and
                       line.split(":")[1].strip() == "5" for line in sched)
        home = thread_cgroup(tid)
        # (a ceiling's default fallback pauses, and pause is for whole
        # processes: the thread joins an idle reserve)
        comp.qosctl("reserve", "vmthread", "policy=idle")
        comp.qosctl("join", "tid:%d" % tid, "vmthread")
        wait_for(lambda: thread_idle(tid) or thread_cgroup(tid) != home, "the thread to join")
        assert not thread_idle(pid) and "vmthread" not in thread_cgroup(pid), \
            "the main thread joined too"
        comp.qosctl("set", "tid:%d" % tid, "normal")
        wait_for(lambda: not thread_idle(tid) and thread_cgroup(tid) == home,
                 "the thread to leave")

    def thread_exit_ends_membership():
        # Linux 6.1 has no pidfd of a single thread: the manager has to
        # notice the thread's own exit another way.
        flag = "/tmp/vm-%s-thread-done" % tag
        if os.path.exists(flag):
            os.unlink(flag)
        code = ("import os, threading, time\n"
                "def run():\n"
                "    while not os.path.exists(%r):\n"
                "        time.sleep(0.1)\n"
                "threading.Thread(target=run).start()\n"
                "time.sleep(1e6)\n" % flag)
        pid = comp.exec("/usr/bin/python3", "-c", code)
        sleepers.append(pid)
        tasks = wait_for(lambda: len(os.listdir("/proc/%d/task" % pid)) == 2 and
                         os.listdir("/proc/%d/task" % pid), "the second thread")
        tid = int(next(t for t in tasks if int(t) != pid))
        comp.qosctl("reserve", "vmthreadexit", "policy=idle")
        comp.qosctl("join", "tid:%d" % tid, "vmthreadexit")

        def member_tids():
            _, reply, _ = comp.qosctl("reserves")
            return [m["tid"] for r in reply.get("reserves", []) if r.get("name") == "vmthreadexit"
                    for m in r.get("members", [])]
        assert tid in member_tids(), "thread %d did not join: %s" % (tid, member_tids())
        open(flag, "w").close()
        wait_for(lambda: not os.path.exists("/proc/%d/task/%d" % (pid, tid)), "the thread to end")
        wait_for(lambda: tid not in member_tids(), "the ended thread to leave its reserve")
        os.unlink(flag)

    def thread_refused_without_cap():
        code = ("import threading, time; "
                "threading.Thread(target=time.sleep, args=(1e6,)).start(); time.sleep(1e6)")
        pid = comp.exec("/usr/bin/python3", "-c", code)
        sleepers.append(pid)
        tasks = wait_for(lambda: len(os.listdir("/proc/%d/task" % pid)) == 2 and
                         os.listdir("/proc/%d/task" % pid), "the second thread")
        tid = int(next(t for t in tasks if int(t) != pid))
        comp.qosctl("reserve", "vmthread", "policy=idle")
        rc, reply, err = comp.qosctl("join", "tid:%d" % tid, "vmthread", expect_ok=False)
        assert rc == 1 and "RLIMIT_NICE" in err and "CAP_SYS_NICE" in err, \
            "answered %d %s %s" % (rc, reply, err)
        sched = read("/proc/%d/task/%d/sched" % (pid, tid)).splitlines()
        assert not any(line.split(":")[0].strip() == "policy" and
                       line.split(":")[1].strip() == "5" for line in sched), "the thread is idle"

    def refuse_kernel_thread():
        rc, reply, err = comp.qosctl("set", "pid:2", "idle", expect_ok=False)
        assert rc == 1 and "kernel thread" in err, "answered %d %s %s" % (rc, reply, err)

    def refuse_other_user():
        other = None if comp.user else NOBODY
        p = subprocess.Popen(as_user(other) + ["sleep", "100000"])
        try:
            uid = other.pw_uid if other else 0
            wait_for(lambda: status_field(p.pid, "Uid").split()[0] == str(uid) and
                     os.readlink("/proc/%d/exe" % p.pid).endswith("sleep"), "the sleep to run")
            rc, reply, err = comp.qosctl("set", "pid:%d" % p.pid, "paused", expect_ok=False)
            assert rc == 1 and "belongs to" in err, "answered %d %s %s" % (rc, reply, err)
            assert not frozen(p.pid)
        finally:
            p.kill()
            p.wait()

    try:
        if thread_classes:
            check("%s/join-leave-thread" % tag, join_leave_thread)
            check("%s/thread-exit-ends-membership" % tag, thread_exit_ends_membership)
        else:
            check("%s/thread-refused-without-cap-sys-nice" % tag, thread_refused_without_cap)
        if only_threads:
            return
        check("%s/refuse-kernel-thread" % tag, refuse_kernel_thread)
        check("%s/refuse-other-user" % tag, refuse_other_user)
        check("%s/join-leave-process" % tag, join_leave)
        check("%s/ceiling-cpu.max" % tag, ceiling)
        check("%s/idle" % tag, idle)
        check("%s/pause-thaw" % tag, pause_thaw)
        check("%s/refuse-pid-1" % tag, refuse_init)
    finally:
        for pid in sleepers:
            kill(pid)


def in_manager_root(path):
    """Whether a cgroup path is inside a manager's root, qosway-UID."""
    return re.search(r"/qosway-\d+(/|$)", path) is not None


def crash_suite(tag, start, cgroup_scope, only=None, restart=None, restart_scope=None):
    """Guardian and reconcile: a paused process is thawed by the guard
    when qosway is killed, and by the next start when the guard dies too.
    start() starts a compositor; cgroup_scope is the subtree (under CG)
    where stale groups could be left. restart() starts the next one
    (default start()), in restart_scope if that is another subtree."""
    scopes = [cgroup_scope] + ([restart_scope] if restart_scope else [])

    def stale_groups():
        return [d for scope in scopes for d, _, _ in os.walk(CG + scope)
                if in_manager_root(d[len(CG + scope):])]

    def guardian():
        comp = start()
        pid = comp.exec("sleep", "100000")
        try:
            comp.qosctl("set", "pid:%d" % pid, "paused")
            wait_for(lambda: frozen(pid), "pid %d to freeze" % pid)
            comp.proc.kill()
            comp.proc.wait()
            wait_for(lambda: not frozen(pid), "the guard to thaw pid %d" % pid)
        finally:
            comp.stop()
            kill(pid)

    def reconcile():
        comp = start()
        pid = comp.exec("sleep", "100000")
        again = None
        try:
            comp.qosctl("set", "pid:%d" % pid, "paused")
            wait_for(lambda: frozen(pid), "pid %d to freeze" % pid)
            guard = comp.guard_pid()
            assert guard, "no QoS guard process found"
            os.kill(guard, signal.SIGSTOP)  # so it cannot clean up
            comp.proc.kill()
            comp.proc.wait()
            kill(guard)
            time.sleep(1)
            assert frozen(pid), "pid %d was thawed with no guard left" % pid
            again = (restart or start)()
            wait_for(lambda: not frozen(pid), "the next start to thaw pid %d" % pid)
            assert not in_manager_root(v2_cgroup(pid)), \
                "pid %d still in a stale group %s" % (pid, v2_cgroup(pid))
        finally:
            comp.stop()
            if again:
                again.stop()
            kill(pid)
        left = stale_groups()
        assert not left, "groups left after a clean exit: %s" % left
        for scope in scopes if scopes[0] else []:
            # Given back as it was: processes may enter it again.
            assert not os.path.exists(CG + scope + "/manager"), \
                "%s/manager left behind" % scope
            assert "cpu" not in read(CG + scope + "/cgroup.subtree_control").split(), \
                "%s still passes cpu on" % scope

    if only in (None, "guardian"):
        check("%s/guardian-after-kill-9" % tag, guardian)
    if only in (None, "reconcile"):
        check("%s/reconcile-at-next-start" % tag, reconcile)


def delegate(path, user):
    """Make CG+path a subtree delegated to user as systemd's Delegate=yes
    does: the directory and its cgroup.procs, cgroup.threads and
    cgroup.subtree_control belong to the user, cpu enabled for it."""
    with open(CG + "/cgroup.subtree_control", "w") as f:
        f.write("+cpu")
    os.makedirs(CG + path, exist_ok=True)
    for f in ("", "/cgroup.procs", "/cgroup.threads", "/cgroup.subtree_control"):
        os.chown(CG + path + f, user.pw_uid, user.pw_gid)
    assert "cpu" in read(CG + path + "/cgroup.controllers").split()


def root_checks():
    comp = Qosway("root")
    try:
        qos_suite("root", comp, None)
    finally:
        comp.stop()
    crash_suite("root", lambda: Qosway("root"), "")


def user_checks():
    scope = "/vm-user.slice/qosway-vm.scope"
    os.makedirs(CG + "/vm-user.slice", exist_ok=True)
    with open(CG + "/cgroup.subtree_control", "w") as f:
        f.write("+cpu")
    with open(CG + "/vm-user.slice/cgroup.subtree_control", "w") as f:
        f.write("+cpu")
    delegate(scope, NOBODY)
    try:
        comp = Qosway("user", user=NOBODY, cgroup=scope)
        try:
            def in_leaf():
                # the "manager" leaf of the delegated scope, or, with the
                # compositor's own CPU weight (the default on pure v2), the
                # ".server" leaf of the manager's root inside the scope
                g = v2_cgroup(comp.proc.pid)
                return g == scope + "/manager" or (g.startswith(scope + "/") and
                                                   g.endswith("/.server"))
            check("user/manager-in-delegated-subtree",
                  lambda: wait_for(in_leaf, "qosway to move into a leaf of %s" % scope))
            qos_suite("user", comp, scope, thread_classes=False)

            def refuse_realtime_without_cap():
                pid = comp.exec("sleep", "100000")
                try:
                    rc, reply, err = comp.qosctl("set", "pid:%d" % pid, "realtime",
                                                 expect_ok=False)
                    assert rc == 1, "answered %d %s" % (rc, reply)
                    assert "CAP_SYS_NICE" in err and "setcap" in err, err
                finally:
                    kill(pid)
            check("user/realtime-refused-names-cap", refuse_realtime_without_cap)

            def fifo_within_rtprio():
                # what pam_limits' rtprio gives an ordinary user's processes;
                # started in a group of the session's subtree, as its apps are
                app = scope + "/rtprio-app"
                delegate(app, NOBODY)
                p = subprocess.Popen(["prlimit", "--rtprio=50"] + as_user(NOBODY, app) +
                                     ["sleep", "100000"])
                try:
                    wait_for(lambda: status_field(p.pid, "Uid").split()[0] ==
                             str(NOBODY.pw_uid), "sleep to run as nobody")
                    comp.qosctl("set", "pid:%d" % p.pid, "fifo")  # priority 10
                    policy = os.sched_getscheduler(p.pid) & ~os.SCHED_RESET_ON_FORK
                    assert policy == os.SCHED_FIFO, "policy %d, not fifo" % policy
                    comp.qosctl("reserve", "vmhigh", "policy=fifo", "priority=60")
                    rc, reply, err = comp.qosctl("join", "pid:%d" % p.pid, "vmhigh",
                                                 expect_ok=False)
                    assert rc == 1, "join above the limit answered %d %s" % (rc, reply)
                    assert "RLIMIT_RTPRIO >= 60 (pid %d has 50)" % p.pid in err, err
                    comp.qosctl("set", "pid:%d" % p.pid, "normal")
                    policy = os.sched_getscheduler(p.pid) & ~os.SCHED_RESET_ON_FORK
                    assert policy == os.SCHED_OTHER, "policy %d after normal" % policy
                    # the manager's RLIMIT_RTTIME bound: an unprivileged
                    # session cannot raise a hard limit back, so it stays
                    rttime = [line for line in read("/proc/%d/limits" % p.pid).splitlines()
                              if line.startswith("Max realtime timeout")]
                    print("  after leaving fifo: %s" % rttime, flush=True)
                finally:
                    p.kill()
                    p.wait()
                    kill_tree_of_cgroup(app)
            check("user/fifo-within-rtprio-without-cap", fifo_within_rtprio)
        finally:
            comp.stop()
        # Each its own scope, as each session start gets one from
        # qosway-session; so does the start after the crash, which has to
        # find what the killed instance left in the scope next to its own.
        fresh = "/vm-user.slice/qosway-guardian.scope"
        delegate(fresh, NOBODY)
        crash_suite("user", lambda: Qosway("user", user=NOBODY, cgroup=fresh), fresh,
                    only="guardian")
        crashed = "/vm-user.slice/qosway-reconcile.scope"
        following = "/vm-user.slice/qosway-reconcile-next.scope"
        delegate(crashed, NOBODY)
        delegate(following, NOBODY)
        crash_suite("user", lambda: Qosway("user", user=NOBODY, cgroup=crashed), crashed,
                    only="reconcile",
                    restart=lambda: Qosway("user-next", user=NOBODY, cgroup=following),
                    restart_scope=following)

        def scope_reusable():
            kind = read(CG + scope + "/cgroup.type")
            assert kind == "domain", \
                "the scope qosway ran in is left '%s' after a clean exit" % kind
            assert not os.path.exists(CG + scope + "/manager"), "its manager leaf is left"
            p = subprocess.Popen(as_user(NOBODY, scope) + ["sleep", "100000"])
            try:
                wait_for(lambda: p.poll() is not None or v2_cgroup(p.pid) == scope,
                         "a process to enter the scope")
                assert p.poll() is None, "a process cannot enter %s again" % scope
            finally:
                p.kill()
                p.wait()
        check("user/scope-reusable-after-exit", scope_reusable)
    finally:
        kill_tree_of_cgroup("/vm-user.slice")


def capability_checks():
    """qosway with CAP_SYS_NICE as a file capability, run by nobody: a qos
    reserve is granted, and what it starts has no capability."""
    binary = "/usr/local/bin/qosway"
    if not os.path.exists(binary):
        raise Skip("no staged qosway in /usr/local/bin")
    subprocess.run(["setcap", "cap_sys_nice=ep", binary], check=True)
    scope = "/vm-cap.slice/qosway-cap.scope"
    os.makedirs(CG + "/vm-cap.slice", exist_ok=True)
    with open(CG + "/vm-cap.slice/cgroup.subtree_control", "w") as f:
        f.write("+cpu")
    delegate(scope, NOBODY)
    comp = None
    pids = []
    try:
        comp = Qosway("cap", user=NOBODY, cgroup=scope, argv=[binary],
                      env={"TMPDIR": "/tmp/vm-cap-tmpdir",
                           "QOSWAY_ENV_TMPDIR": "/tmp/vm-cap-tmpdir"},
                      qosctl="/usr/local/bin/qosctl")
        eff = int(status_field(comp.proc.pid, "CapEff"), 16)
        assert eff & (1 << 23), "qosway runs without CAP_SYS_NICE (CapEff %x)" % eff

        def granted():
            pid = comp.exec("sleep", "100000")
            pids.append(pid)
            comp.qosctl("reserve", "vmrt", "policy=qos", "period=20ms", "cpu=10%")
            comp.qosctl("join", "pid:%d" % pid, "vmrt")
            policy = [line for line in read("/proc/%d/sched" % pid).splitlines()
                      if line.startswith("policy")]
            assert policy and policy[0].split(":")[1].strip() == "6", \
                "not SCHED_DEADLINE: %s" % policy

        def child_has_none():
            pid = comp.exec("sleep", "100000")
            pids.append(pid)
            wait_for(lambda: os.readlink("/proc/%d/exe" % pid).endswith("sleep"), "the exec")
            for key in ("CapInh", "CapPrm", "CapEff", "CapAmb"):
                assert int(status_field(pid, key), 16) == 0, \
                    "%s of a started program is %s" % (key, status_field(pid, key))
            env = open("/proc/%d/environ" % pid, "rb").read().split(b"\0")
            assert b"TMPDIR=/tmp/vm-cap-tmpdir" in env, \
                "TMPDIR (dropped by glibc's secure mode) was not given back"
        check("cap/qos-reserve-granted", granted)
        check("cap/child-has-no-capability", child_has_none)
        # With CAP_SYS_NICE a single thread gets its class back.
        qos_suite("cap", comp, scope, only_threads=True)
    finally:
        for pid in pids:
            kill(pid)
        if comp:
            comp.stop()
        kill_tree_of_cgroup("/vm-cap.slice")


def drm_checks():
    """The installed session on the DRM device through seatd, as nobody,
    started by the .desktop file's Exec line."""
    desktop = "/usr/local/share/wayland-sessions/qosway.desktop"
    exec_line = next(line.split("=", 1)[1] for line in open(desktop).read().splitlines()
                     if line.startswith("Exec="))
    subprocess.run(["modprobe", "virtio-gpu"], check=False)
    wait_for(lambda: os.path.exists("/dev/dri/card0"), "/dev/dri/card0")
    seatd_log = open(os.path.join(ARGS.out, "seatd.log"), "w")
    seatd = subprocess.Popen(["seatd", "-u", "nobody", "-g", "nogroup", "-l", "info"],
                             stdout=seatd_log, stderr=subprocess.STDOUT)
    wait_for(lambda: os.path.exists("/run/seatd.sock"), "seatd's socket")
    scope = "/vm-drm.slice/qosway-drm.scope"
    os.makedirs(CG + "/vm-drm.slice", exist_ok=True)
    with open(CG + "/vm-drm.slice/cgroup.subtree_control", "w") as f:
        f.write("+cpu")
    delegate(scope, NOBODY)
    comp = None
    try:
        comp = Qosway("drm", user=NOBODY, cgroup=scope, argv=shlex.split(exec_line) + ["-d"],
                      env={"WLR_BACKENDS": None, "LIBSEAT_BACKEND": "seatd"},
                      qosctl="/usr/local/bin/qosctl")
        state = {}

        def on_drm():
            log = comp.log_text()
            assert "backend/drm" in log or "DRM" in log or "card0" in log, \
                "no DRM backend in the log"
            _, reply, _ = comp.qosctl("outputs")
            outs = reply.get("outputs", [])
            assert outs and not outs[0]["name"].startswith("HEADLESS"), outs
        check("drm/session-on-drm-through-seatd", on_drm)

        def client_maps():
            pid = comp.exec("weston-simple-shm")
            state["pid"] = pid

            def window():
                _, reply, _ = comp.qosctl("windows")
                wins = [w for w in reply.get("windows", []) if w.get("pid") == pid]
                return wins and wins[0]
            state["win"] = wait_for(window, "the client's window")
        check("drm/client-maps", client_maps)

        def titlebar():
            if "win" not in state:
                raise Skip("no window")
            mine = os.path.join(comp.runtime, "drm.png")  # nobody cannot write OUT
            r = subprocess.run(as_user(NOBODY) + ["grim", mine], env=comp.env,
                               capture_output=True, text=True, timeout=WAIT)
            assert r.returncode == 0, "grim: " + r.stderr
            shot = os.path.join(ARGS.out, "drm.png")
            shutil.copy(mine, shot)
            from PIL import Image
            img = Image.open(shot).convert("RGB")
            win = state["win"]
            assert set(win["buttons"]) >= {"realtime", "idle", "pause", "close"}, win["buttons"]
            for name, b in win["buttons"].items():
                box = (b["x"], b["y"], b["x"] + b["width"], b["y"] + b["height"])
                colors = img.crop(box).getcolors(1 << 16) or []
                assert len(colors) >= 2, "button %s is blank in the screenshot" % name
            t = win["titlebar"]
            bar = img.crop((t["x"], t["y"], t["x"] + t["width"], t["y"] + t["height"]))
            assert len(bar.getcolors(1 << 16) or []) >= 3, "titlebar is blank"
        check("drm/grim-shows-titlebar-buttons", titlebar)

        def pause_click():
            if "win" not in state:
                raise Skip("no window")
            sys.path.insert(0, os.path.join(ARGS.src, "tests", "integration"))
            from vinput import VirtualInput
            pid = state["pid"]
            home = v2_cgroup(pid)
            b = state["win"]["buttons"]["pause"]
            with VirtualInput(comp.env, keyboard=False) as vi:
                vi.click(b["x"] + b["width"] // 2, b["y"] + b["height"] // 2)
                wait_for(lambda: frozen(pid), "the click to freeze the client's group")
                vi.click(b["x"] + b["width"] // 2, b["y"] + b["height"] // 2)
                wait_for(lambda: not frozen(pid) and v2_cgroup(pid) == home,
                         "the second click to thaw it")
                vi.move(10, 10)
        check("drm/pause-button-freezes-and-thaws", pause_click)

        def no_errors():
            time.sleep(3)
            errors = [line for line in comp.log_text().splitlines() if "[ERROR]" in line]
            assert not errors, "%d error lines, first: %s" % (len(errors), errors[0])
        check("drm/no-error-in-log", no_errors)
        if "pid" in state:
            kill(state["pid"])

        def clean_exit():
            rc = comp.stop()
            assert rc == 0, "qosway exited with %s" % rc
        check("drm/clean-exit", clean_exit)
    finally:
        if comp:
            comp.stop()
        seatd.terminate()
        seatd.wait()
        kill_tree_of_cgroup("/vm-drm.slice")


def install_stage():
    """The host's staged install, put where its paths say (/usr/local),
    on the guest's throw-away /usr overlay."""
    for top in os.listdir(ARGS.stage):
        subprocess.run(["cp", "-R", "--preserve=mode", "%s/%s/." % (ARGS.stage, top),
                        "/%s/" % top], check=True)
    assert os.access("/usr/local/bin/qosway-session", os.X_OK)


def main():
    global ARGS, RESULTS
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--build", required=True)
    p.add_argument("--stage", required=True)
    p.add_argument("--src", required=True)
    ARGS = p.parse_args()
    RESULTS = os.path.join(ARGS.out, "results.txt")
    open(RESULTS, "w").close()
    print("guest kernel %s, uptime %s s" % (os.uname().release, read("/proc/uptime").split()[0]),
          flush=True)
    check("kernel/pure-v2-with-cpu-and-drm", check_kernel)
    # As systemd does at boot for the slices it delegates cpu to.
    with open(CG + "/cgroup.subtree_control", "w") as f:
        f.write("+cpu")
    check("install/staged-tree", install_stage)
    for name, suite in (("root", root_checks), ("user", user_checks),
                        ("cap", capability_checks), ("drm", drm_checks)):
        # A suite that cannot even set up is one failure, not a crash.
        check(name + "/setup-and-teardown", suite)
    # The kernel's log beside the others (DRM and cgroup errors land there).
    with open(os.path.join(ARGS.out, "dmesg.txt"), "w") as f:
        subprocess.run(["dmesg"], stdout=f, stderr=subprocess.STDOUT, check=False)
    with open(RESULTS, "a") as f:
        f.write("VMDONE\n")


if __name__ == "__main__":
    main()
