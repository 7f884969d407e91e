"""Per-window QoS: AutoQOS.  A rule in the user's qosrc layer
applies to a program started by `qosctl exec` from its first instruction
(the child joins before it execs), and to a Wayland client that connects on
its own, by app_id, and to a program the same user starts anywhere else,
matched at exec through the kernel's process-event connector."""

import json
import os
import signal
import subprocess
import sys
import time

import harness
from harness import wait_for
from test_qos_buttons import Win, qcomp, no_frozen_leftovers  # noqa: F401

# The first thing the probe does, in the shell itself (builtins only): record
# its own policy from /proc/self/sched, then exec a sleeper under the same pid.
PROBE = ('while read -r k c v; do case "$k" in policy) echo "$v" > "$1";; esac; '
         'done < /proc/self/sched; exec sleep 60')


def set_rules(comp, text):
    harness.write_user_qosrc(comp, text)
    r = comp.qosctl("--json", "reload")
    assert r.returncode == 0 and "warning" not in r.stdout, (
        "qosrc rejected: %s%s" % (r.stdout, r.stderr))


def exec_json(comp, *argv, reserve=None):
    req = {"command": "exec", "argv": list(argv)}
    if reserve:
        req["reserve"] = reserve
    rep = comp.ipc(req)
    assert rep.get("success") and rep.get("pid"), rep
    return rep


def qosctl_exec(comp, *args):
    """qosctl --json exec ARGS: its reply (pid; refused if a reserve was)."""
    r = comp.qosctl("--json", "exec", *args)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


def kill_pid(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_exec_rule_applies_from_first_instruction(qcomp, tmp_path):
    set_rules(qcomp, 'rule cmdline="*autoqos-probe*" policy=idle auto=yes\n')
    out = str(tmp_path / "policy")
    # qosctl's own exec: the reply names the pid
    rep = qosctl_exec(qcomp, "--", "sh", "-c", PROBE, "autoqos-probe", out)
    pid = rep["pid"]
    try:
        assert "refused" not in rep, rep
        st = harness.qos_state(pid)
        print("exec'd pid %d: %r" % (pid, st))
        assert st["policy"] == harness.SCHED_IDLE, st
        assert st["cgroup2"] != harness.proc_cgroups(os.getpid())[""], st
        assert "/qosway-" in st["cgroup2"], st
        first = wait_for(lambda: open(out).read().strip() if os.path.exists(out) else None,
                         desc="the probe's first record")
        print("policy seen by the probe's first instruction: %s" % first)
        assert first == str(harness.SCHED_IDLE), (
            "the probe ran as policy %s before AutoQOS applied" % first)
        # after the exec into sleep: same pid, still managed
        wait_for(lambda: open("/proc/%d/comm" % pid).read().strip() == "sleep",
                 desc="probe exec'd sleep")
        assert harness.qos_state(pid)["policy"] == harness.SCHED_IDLE
    finally:
        kill_pid(pid)


def test_exec_without_matching_rule_stays_normal(qcomp, tmp_path):
    """The control: the same probe under another name is left alone (no
    rule matches it)."""
    set_rules(qcomp, 'rule cmdline="*autoqos-probe*" policy=idle auto=yes\n')
    out = str(tmp_path / "policy")
    pid = exec_json(qcomp, "sh", "-c", PROBE, "other-probe", out)["pid"]
    try:
        first = wait_for(lambda: open(out).read().strip() if os.path.exists(out) else None,
                         desc="the probe's first record")
        assert first == str(harness.SCHED_OTHER), first
        st = harness.qos_state(pid)
        assert st["policy"] == harness.SCHED_OTHER, st
        assert "/qosway-" not in st["cgroup2"], st
    finally:
        kill_pid(pid)


def test_exec_into_named_reserve(qcomp, tmp_path):
    """`qosctl exec -r RESERVE`: the child is in the reserve before exec."""
    r = qcomp.qosctl("reserve", "probes", "policy=other", "nice=7")
    assert r.returncode == 0, r.stdout + r.stderr
    out = str(tmp_path / "policy")
    rep = qosctl_exec(qcomp, "-r", "probes", "--", "sh", "-c", PROBE, "p", out)
    pid = rep["pid"]
    try:
        assert "refused" not in rep, rep
        st = harness.qos_state(pid)
        print("exec -r probes: %r" % st)
        assert st["nice"] == 7 and st["cgroup2"].rstrip("/").endswith("/probes"), st
        res = {x["name"]: x for x in json.loads(
            qcomp.qosctl("--json", "reserves").stdout)["reserves"]}["probes"]
        assert pid in [m["pid"] for m in res["members"]], res
        wait_for(lambda: os.path.exists(out), desc="probe ran")
    finally:
        kill_pid(pid)


def test_client_connecting_on_its_own_matched_by_app_id(qcomp):
    set_rules(qcomp, 'rule app_id="autoqos-app" policy=idle auto=yes\n')
    c, w = qcomp.open_window("Auto App", app_id="autoqos-app")
    wait_for(lambda: qcomp.find_window(lambda x: x["id"] == w["id"])["class"] == "idle",
             desc="AutoQOS class idle by app_id")
    st = harness.qos_state(c.pid)
    print("client by app_id: %r" % st)
    assert st["policy"] == harness.SCHED_IDLE, st
    assert set(st["thread_policies"].values()) == {harness.SCHED_IDLE}, st
    # a client with another app_id is left alone
    other = Win(qcomp, "Other App")
    time.sleep(0.5)
    assert other.w()["class"] == "normal"
    assert harness.qos_state(other.pid)["policy"] == harness.SCHED_OTHER


def test_rule_applies_at_exec_outside_the_compositor(qcomp, tmp_path):
    """Started by the test process itself, not by qosway: the exec event
    from the kernel's connector is what places it."""
    tag = "outside-probe-%d" % os.getpid()
    set_rules(qcomp, 'rule cmdline="*%s*" policy=idle auto=yes\n' % tag)
    probe = subprocess.Popen(["bash", "-c", "exec -a %s sleep 60" % tag])
    control = subprocess.Popen(["bash", "-c", "exec -a unmatched-%s sleep 60" % os.getpid()])
    try:
        st = wait_for(lambda: (lambda s: s if s["policy"] == harness.SCHED_IDLE else None)(
            harness.qos_state(probe.pid)), timeout=5, desc="outside program placed at exec")
        print("outside pid %d: %r" % (probe.pid, st))
        w = json.loads(qcomp.qosctl("--json", "reserves").stdout)["reserves"]
        assert any(m["pid"] == probe.pid for r in w for m in r["members"]), w
        # a program no rule names is left alone
        time.sleep(0.5)
        assert harness.qos_state(control.pid)["policy"] == harness.SCHED_OTHER
    finally:
        for p in (probe, control):
            p.kill()
            p.wait()


def test_sighup_reloads_the_rules(qcomp, tmp_path):
    """SIGHUP is `qosctl reload` for session scripts: a rule written after
    start applies to the next program once the compositor got the signal."""
    tag = "hup-probe-%d" % os.getpid()
    harness.write_user_qosrc(qcomp, 'rule cmdline="*%s*" policy=idle auto=yes\n' % tag)
    os.kill(qcomp.pid, signal.SIGHUP)
    out = str(tmp_path / "policy")

    def placed():
        rep = exec_json(qcomp, "sh", "-c", PROBE, tag, out)
        try:
            return harness.qos_state(rep["pid"])["policy"] == harness.SCHED_IDLE
        finally:
            kill_pid(rep["pid"])

    # the signal is handled asynchronously: retry until the new rule is live
    wait_for(placed, timeout=10, desc="rule loaded by SIGHUP")
    assert qcomp.alive()


def members_of(comp, pid):
    """The members of the reserve pid is in, from `qosctl --json reserves`."""
    for r in json.loads(comp.qosctl("--json", "reserves").stdout)["reserves"]:
        pids = [m["pid"] for m in r["members"]]
        if pid in pids:
            return pids
    return []


def test_member_fork_adopted_through_the_connector(qcomp, tmp_path):
    """inherit=yes: the kernel's fork event, not the manager's 1 s pass,
    makes a member's child a member, so it is one within a quarter second of
    the fork (by the pass alone that happens in a quarter of the runs)."""
    tag = "fork-probe-%d" % os.getpid()
    go, child_file = tmp_path / "go", tmp_path / "child"
    # Time-sharing, not idle: the probe polls and forks, and an idle-class
    # process beside other CPU-bound work gets a few ms a second.
    set_rules(qcomp, 'rule cmdline="*%s*" policy=other nice=5 inherit=yes auto=yes\n' % tag)
    script = ('while [ ! -e %s ]; do sleep 0.02; done; sleep 60 & echo $! > %s; wait'
              % (go, child_file))
    probe = subprocess.Popen(["bash", "-c", 'exec -a %s bash -c "$0"' % tag, script])
    child = None
    try:
        wait_for(lambda: probe.pid in members_of(qcomp, probe.pid), timeout=5,
                 desc="probe placed at exec")
        go.touch()
        wait_for(lambda: child_file.exists() and child_file.read_text().strip(), timeout=5,
                 desc="probe forked")
        forked_at = time.monotonic()
        child = int(child_file.read_text())
        wait_for(lambda: child in members_of(qcomp, probe.pid), timeout=5,
                 desc="child adopted")
        took = time.monotonic() - forked_at
        print("child %d a member %.3f s after its pid was read" % (child, took))
        assert took < 0.25, "adopted after %.3f s: by the pass, not at the fork" % took
    finally:
        if child:
            kill_pid(child)
        probe.kill()
        probe.wait()


# Starts a sleeping thread per line read and prints its tid.
THREADER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kernel",
                        "thread_on_demand.py")


def test_member_thread_gets_policy_through_the_connector(qcomp):
    """A thread a qos member starts begins as SCHED_OTHER (reset on fork);
    the kernel's event for it, not the manager's 1 s pass, makes it
    SCHED_DEADLINE within a quarter second."""
    tag = "thread-probe-%d" % os.getpid()
    set_rules(qcomp, 'rule cmdline="*%s*" policy=qos period=20ms cpu=5%% auto=yes\n' % tag)
    probe = subprocess.Popen(["bash", "-c", 'exec -a %s "$0" "$1"' % tag, sys.executable,
                              THREADER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    try:
        assert probe.stdout.readline().strip() == "ready"
        wait_for(lambda: harness.sched_attr(probe.pid)["policy"] == harness.SCHED_DEADLINE,
                 timeout=5, desc="probe placed at exec")
        probe.stdin.write("go\n")
        probe.stdin.flush()
        tid = int(probe.stdout.readline())
        started = time.monotonic()
        # Every change of both threads' policies, so that a late placement
        # shows whether the thread was never placed or placed and moved out.
        timeline, last, took = [], None, None
        while took is None and time.monotonic() - started < 5:
            now = (harness.sched_attr(probe.pid)["policy"], harness.sched_attr(tid)["policy"])
            if now != last:
                timeline.append("%.3f s main %d thread %d" % ((time.monotonic() - started,) + now))
                last = now
            if now[1] == harness.SCHED_DEADLINE:
                took = time.monotonic() - started
            time.sleep(0.002)
        print("thread %d: %s" % (tid, "; ".join(timeline)))
        print(qcomp.qosctl("reserves").stdout)
        assert took is not None, "the new thread never entered the reservation"
        assert took < 0.25, "deadline after %.3f s: by the pass, not at the event" % took
    finally:
        probe.kill()
        probe.wait()
