"""The compositor's own CPU weight (scheduling server-weight): its process
in a leaf of the QoS manager's cgroup root with the configured weight, which
the root's weight includes; what it starts (spawned programs, Xwayland) back
where it came from; the leaf gone at exit; a renice of the compositor kept
across its boosts; bad values named. Needs root for the cgroup tree."""

import json
import os

import pytest

import harness
from harness import wait_for
from test_reserve_protocol import RClient, grant_auto
from test_qos_buttons import no_frozen_leftovers  # noqa: F401  (fixture)

LEAF = ".server"


def need_root():
    if os.geteuid() != 0:
        pytest.skip("moving the compositor between cgroups needs root")


def cpu_cgroup(pid):
    """pid's group in the tree with the cpu controller, relative to it."""
    cg = harness.proc_cgroups(pid)
    return cg["cpu"] if harness.cgroup_hybrid() else cg[""]


def cpu_dir(rel):
    base = os.path.join(harness.CGROUP_BASE, "cpu") if harness.cgroup_hybrid() \
        else harness.CGROUP_BASE
    return os.path.join(base, rel.lstrip("/"))


def weight_of(rel):
    """The group's weight on the v2 scale (v1 cpu.shares * 100 / 1024)."""
    if harness.cgroup_hybrid():
        with open(os.path.join(cpu_dir(rel), "cpu.shares")) as fh:
            return int(fh.read()) * 100 // 1024
    with open(os.path.join(cpu_dir(rel), "cpu.weight")) as fh:
        return int(fh.read())


def rt_groups():
    """Whether the cpu tree has real-time group scheduling (v1 rt_runtime)."""
    return harness.cgroup_hybrid() and os.path.exists(
        os.path.join(harness.CGROUP_BASE, "cpu", "cpu.rt_runtime_us"))


def check_default(s):
    """What the default (no server-weight line) gives, as root: the weight,
    which where real-time groups exist costs the boost."""
    assert s["server_weight"] == 10000 and s["server_weight_note"] is None, s
    if rt_groups():
        assert not s["boost_available"] and "server-weight" in s["boost_note"], s


def scheduler(comp):
    r = comp.qosctl("--json", "scheduler")
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


def exec_child(comp, *argv):
    r = comp.qosctl("--json", "exec", "--", *argv)
    assert r.returncode == 0, r.stdout + r.stderr
    pid = json.loads(r.stdout)["pid"]
    wait_for(lambda: open("/proc/%d/comm" % pid).read().strip() == os.path.basename(argv[0]),
             10, desc="the child's exec")
    return pid


def test_compositor_cgroup_gets_the_configured_weight(start_qosway):
    need_root()
    home = cpu_cgroup(os.getpid())
    comp = start_qosway(config=harness.qos_test_config("scheduling server-weight 5000\n"))
    s = scheduler(comp)
    assert s["server_weight"] == 5000 and s["server_weight_note"] is None, s
    if rt_groups():
        # a leaf without real-time runtime takes no SCHED_FIFO thread
        assert not s["boost_available"] and "server-weight" in s["boost_note"], s
    leaf = cpu_cgroup(comp.pid)
    print("compositor in %s (came from %s)" % (leaf, home))
    assert os.path.basename(leaf) == LEAF, leaf
    root = os.path.dirname(leaf)
    assert os.path.basename(root).startswith("qosway-"), leaf
    assert weight_of(leaf) == 5000
    # the root competes with the rest of the system with the leaf's weight in it
    assert weight_of(root) >= 5000
    # every thread of the compositor is in it (the manager's included)
    for tid in os.listdir("/proc/%d/task" % comp.pid):
        with open("/proc/%d/task/%s/cgroup" % (comp.pid, tid)) as fh:
            assert leaf in fh.read(), tid
    # a program it starts is not
    child = exec_child(comp, "sleep", "30")
    assert cpu_cgroup(child) == home, (cpu_cgroup(child), home)
    os.kill(child, 9)
    # at exit: the leaf and the root are gone.  Another compositor starting
    # meanwhile (tests run side by side) may claim the root's name and make
    # its own: a group's inode is its id, never reused.
    ours = {d: os.stat(cpu_dir(d)).st_ino for d in (leaf, root)}
    assert comp.terminate() == 0
    for d, ino in ours.items():
        try:
            now = os.stat(cpu_dir(d)).st_ino
        except FileNotFoundError:
            continue
        assert now != ino, "%s is still there" % d


def test_server_weight_off_leaves_the_compositor_where_it_started(start_qosway):
    need_root()
    comp = start_qosway(config=harness.qos_test_config("scheduling server-weight off\n"))
    s = scheduler(comp)
    assert s["server_weight"] == 0 and "configuration" in s["server_weight_note"], s
    assert cpu_cgroup(comp.pid) == cpu_cgroup(os.getpid())


@pytest.mark.skipif(not os.access("/usr/bin/Xwayland", os.X_OK),
                    reason="Xwayland is not installed (scripts/install-deps.sh installs it)")
def test_xwayland_runs_outside_the_compositors_cgroup(start_qosway, tmp_path):
    need_root()
    from test_xwayland import XWin, child_display, xwayland_pid
    home = cpu_cgroup(os.getpid())
    comp = start_qosway(config=harness.qos_test_config("scheduling server-weight 10000\n"))
    assert os.path.basename(cpu_cgroup(comp.pid)) == LEAF
    display = child_display(comp, tmp_path)
    assert display.startswith(":"), display
    XWin(comp, display, "X Weight")
    xw = xwayland_pid(display)
    assert xw, "no Xwayland serving %s" % display
    # wlroots forked it from the compositor; it left the leaf once ready
    wait_for(lambda: cpu_cgroup(xw) == home, 10,
             desc="Xwayland %d in %s (now %s)" % (xw, home, cpu_cgroup(xw)))
    assert "cannot move process" not in comp.log_text()


def test_a_renice_of_the_compositor_survives_its_boost(start_qosway):
    need_root()
    # without the weight: where real-time groups exist the leaf costs the boost
    comp = start_qosway(config=harness.qos_test_config("scheduling server-weight off\n"))
    if not scheduler(comp)["boost_available"]:
        pytest.skip("no boost here")
    os.setpriority(os.PRIO_PROCESS, comp.pid, -4)
    rc = RClient(comp, window="Player")
    grant_auto(rc, period=20000, slice_=8000)
    m = rc.mark()
    rc.send("animate 2")
    rc.p.wait_event("animated", start=m, timeout=40)
    assert scheduler(comp)["boosts"] > 0
    wait_for(lambda: harness.sched_attr(comp.pid)["policy"] == harness.SCHED_OTHER, 5,
             desc="the compositor back to time-sharing")
    assert os.getpriority(os.PRIO_PROCESS, comp.pid) == -4


def test_bad_server_weights_are_named(start_qosway):
    lines = ["scheduling server-weight 0",        # 1
             "scheduling server-weight 10001",    # 2
             "scheduling server-weight heavy",    # 3
             "scheduling server-weight",          # 4
             "scheduling server-weight 300 400"]  # 5
    comp = start_qosway(config=harness.qos_test_config("\n".join(lines) + "\n"))
    log = comp.log_text()
    base = len(harness.qos_test_config().splitlines())
    for n, what in ((1, "server-weight wants 1 to 10000 or off"),
                    (2, "server-weight wants 1 to 10000 or off"),
                    (3, "server-weight wants 1 to 10000 or off"),
                    (4, "server-weight wants 1 to 10000 or off"),
                    (5, "scheduling server-weight takes one value")):
        assert "qosway.config:%d: %s" % (base + n, "") in log and what in log, (n, what, log)
    # none of them applied: the default stands
    if os.geteuid() == 0:
        check_default(scheduler(comp))


def test_the_weight_is_the_default(start_qosway):
    need_root()
    comp = start_qosway(config=harness.qos_test_config())
    s = scheduler(comp)
    print(s)
    check_default(s)
    assert os.path.basename(cpu_cgroup(comp.pid)) == LEAF
