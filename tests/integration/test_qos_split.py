"""`qosctl --json reserves` shows how a qos reserve's slice is divided
among its member's threads: a real 12-thread member (split-workload, one
thread busy 4 ms in every 20 ms, the rest asleep) in a real qos reserve of
the compositor's manager, under SCHED_DEADLINE."""

import json
import os
import subprocess

import harness
from harness import wait_for
from test_qos_buttons import qcomp, no_frozen_leftovers  # noqa: F401

MS = 1_000_000
SLICE = 8 * MS


def reserve(comp, name):
    r = comp.qosctl("--json", "reserves")
    assert r.returncode == 0, r.stdout + r.stderr
    return next(x for x in json.loads(r.stdout)["reserves"] if x["name"] == name)


def test_reserves_list_each_threads_runtime_and_use(qcomp):
    workload = os.path.join(harness.build_dir(), "tests", "kernel", "split-workload")
    w = subprocess.Popen([workload, "12", "20", "4", "1"], stdout=subprocess.PIPE, text=True)
    try:
        tids = {}
        for line in w.stdout:
            word = line.split()
            if word[0] == "ready":
                break
            tids[word[0]] = int(word[1])
        busy = tids["busy"]
        r = qcomp.qosctl("reserve", "split", "policy=qos", "period=20ms", "cpu=40%",
                         "fallback=other")
        assert r.returncode == 0, r.stdout + r.stderr
        r = qcomp.qosctl("join", "pid:%d" % w.pid, "split")
        assert r.returncode == 0, r.stdout + r.stderr

        def divided():
            threads = reserve(qcomp, "split")["threads"]
            by_tid = {t["tid"]: t for t in threads}
            if busy not in by_tid or by_tid[busy]["runtime_ns"] < 4 * MS:
                return None
            return by_tid
        by_tid = wait_for(divided, timeout=20, desc="the busy thread's share in the listing")
        print("threads: %r" % by_tid)
        all_tids = {int(t) for t in os.listdir("/proc/%d/task" % w.pid)}
        assert set(by_tid) == all_tids, (by_tid, all_tids)
        assert all(t["pid"] == w.pid for t in by_tid.values())
        assert sum(t["runtime_ns"] for t in by_tid.values()) <= SLICE
        assert by_tid[busy]["use_ns"] > 0 and not by_tid[busy]["parked"]
        assert all(t["runtime_ns"] < SLICE // 12 for tid, t in by_tid.items() if tid != busy)
        assert all(not t["throttled"] for tid, t in by_tid.items() if tid != busy)
    finally:
        w.kill()
        w.wait()
    # A reserve with nothing to divide lists no threads.
    wait_for(lambda: reserve(qcomp, "split")["threads"] == [], timeout=10,
             desc="an emptied reserve's division forgotten")
