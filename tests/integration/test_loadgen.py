"""qos-loadgen against a real compositor and QoS manager: its JSON summary
says what it was asked to run (tasks, periods, the reserve or class they
joined), the manager saw its tasks where the summary says, and bad
parameters or a refused reserve get a clear error and change nothing.
No check depends on how fast the machine is."""

import json
import os
import subprocess

import pytest

import harness
from harness import wait_for
from test_qos_buttons import no_frozen_leftovers  # noqa: F401  (fixture)

LOADGEN = os.path.join(harness.build_dir(), "clients", "qos-loadgen")


@pytest.fixture
def lcomp(start_qosway):
    return start_qosway(config=harness.qos_test_config())


def reserves(comp):
    r = comp.ipc({"command": "reserves"})
    assert r["success"], r
    return {x["name"]: x for x in r["reserves"]}


def shape(comp):
    """What a refused run must not change: the reserves, their parameters
    and members."""
    return {n: (r["params"], r["granted"], r["members"]) for n, r in reserves(comp).items()}


def children_of(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as fh:
            return [int(p) for p in fh.read().split()]
    except OSError:
        return []


def finish(proc):
    assert proc.wait(30) == 0, proc.stderr_tail()
    return json.loads(proc.lines[-1])


def test_summary_matches_a_reserve_run(lcomp):
    r = lcomp.ipc({"command": "reserve", "name": "load",
                   "params": "policy=qos period=50ms slice=20ms fallback=other"})
    assert r["success"], r
    lg = lcomp.spawn([LOADGEN, "--hogs", "2", "--periodic", "1", "--period", "10ms",
                      "--util", "20%", "--jitter", "1ms", "--duration", "2s",
                      "--reserve", "load"], name="loadgen")
    members = wait_for(lambda: sorted(m["pid"] for m in reserves(lcomp)["load"]["members"])
                       if len(reserves(lcomp)["load"]["members"]) == 3 else None,
                       desc="three tasks in the reserve")
    assert members == sorted(children_of(lg.pid)), (members, children_of(lg.pid))
    out = finish(lg)
    assert (out["hogs"], out["periodic"], out["reserve"], out["class"]) == (2, 1, "load", None)
    tasks = out["tasks"]
    assert [t["kind"] for t in tasks] == ["hog", "hog", "periodic"]
    assert sorted(t["pid"] for t in tasks) == members
    assert all(t["reserve"] == "load" for t in tasks)
    p = tasks[2]
    assert (p["period_us"], p["util"], p["jitter_us"], p["expected_hz"]) == (10000, 0.2, 1000, 100)
    assert p["jobs"] > 0 and p["misses"] == p["late"] + p["skipped"]
    assert all(t["rounds"] > 0 for t in tasks[:2])
    # the tasks are gone, and with them the reserve's members
    wait_for(lambda: reserves(lcomp)["load"]["members"] == [], desc="members gone")
    # stderr had a progress line
    assert "qos-loadgen:" in lg.stderr_tail()


def test_summary_matches_a_class_run(lcomp):
    lg = lcomp.spawn([LOADGEN, "--hogs", "1", "--class", "idle", "--duration", "1s"],
                     name="loadgen")
    pid = wait_for(lambda: children_of(lg.pid), desc="the task")[0]
    # set before it starts; the fork is seen a moment earlier
    wait_for(lambda: harness.sched_attr(pid)["policy"] == harness.SCHED_IDLE,
             desc="the task at SCHED_IDLE")
    out = finish(lg)
    assert (out["class"], out["reserve"]) == ("idle", None)
    assert [(t["kind"], t["pid"], t["class"]) for t in out["tasks"]] == [("hog", pid, "idle")]


def test_bad_parameters_change_nothing(lcomp):
    r = lcomp.ipc({"command": "reserve", "name": "kept",
                   "params": "policy=qos period=20ms slice=4ms fallback=other"})
    assert r["success"], r
    before = shape(lcomp)
    env = dict(lcomp.client_env(), **harness.sanitizer_env())
    cases = [
        ([], 2, "no tasks"),
        (["--hogs", "-1"], 2, "--hogs"),
        (["--hogs", "two"], 2, "--hogs"),
        (["--periodic", "1", "--period", "0"], 2, "--period"),
        (["--periodic", "1", "--util", "120%"], 2, "--util"),
        (["--periodic", "1", "--util", "0"], 2, "--util"),
        (["--periodic", "1", "--jitter", "soon"], 2, "--jitter"),
        (["--periodic", "1", "--util", "10%", "--jitter", "5ms"], 2, "--jitter"),
        (["--hogs", "1", "--duration", "0"], 2, "--duration"),
        (["--hogs", "1", "--class", "turbo"], 2, "turbo"),
        (["--hogs", "1", "--reserve", "a/b"], 2, "a/b"),
        (["--hogs", "1", "--reserve", "kept", "--class", "idle"], 2, "--reserve or --class"),
        (["--hogs", "1", "--bogus"], 2, "--bogus"),
        (["--hogs", "1", "--period"], 2, "--period"),
        (["--hogs", "1", "stray"], 2, "stray"),
        # the compositor refuses: the tasks never run, the reserve is untouched
        (["--hogs", "2", "--reserve", "no such reserve"], 1, "no such reserve"),
        (["--hogs", "1", "--reserve", "kept", "--socket", "/nonexistent"], 3, "/nonexistent"),
    ]
    for args, code, word in cases:
        r = subprocess.run([LOADGEN] + args, env=env, capture_output=True, text=True,
                           timeout=30, stdin=subprocess.DEVNULL)
        assert r.returncode == code, (args, r.returncode, r.stderr)
        assert word in r.stderr, (args, r.stderr)
        assert r.stdout == "", (args, r.stdout)
        assert shape(lcomp) == before, args
