"""Per-window QoS: bad QoS requests.  Every failure is a one-line
reason with a non-zero exit (1 refused by the compositor, 2 bad usage), the
compositor is unaffected, nothing changes in the kernel, and later requests
still work."""

import json
import os
import subprocess
import sys


import harness
from harness import wait_for
from test_qos_buttons import Win, assert_restored, qcomp, no_frozen_leftovers  # noqa: F401


def unused_pid():
    pid = 999999
    while os.path.exists("/proc/%d" % pid):
        pid += 1
    return pid


def still_fine(comp, win):
    """The compositor answers, the window is normal and its process untouched."""
    assert comp.alive(), "qosway died (rc %s)" % comp.proc.poll()
    r = comp.qosctl("version")
    assert r.returncode == 0, r.stdout + r.stderr
    assert win.w()["class"] == "normal"
    assert_restored(win)


def expect_failure(comp, win, args, codes=(1, 2), words=()):
    r = comp.qosctl(*args)
    msg = (r.stderr + r.stdout).strip()
    print("qosctl %s -> %d %r" % (" ".join(args), r.returncode, msg))
    assert r.returncode in codes, "qosctl %r: exit %d (want %s): %r" % (
        args, r.returncode, codes, msg)
    first = msg.splitlines()[0] if msg else ""
    assert first.startswith("qosctl: ") and len(first) > len("qosctl: ") + 5, (
        "no reason given: %r" % msg)
    if r.returncode == 1:
        # refused by the compositor: exactly one line, no usage text
        assert len(msg.splitlines()) == 1, "want a one-line reason: %r" % msg
    for w in words:
        assert w.lower() in first.lower(), "reason %r does not mention %r" % (first, w)
    still_fine(comp, win)
    return first


def test_set_bad_targets(qcomp):
    win = Win(qcomp, "Bad Targets")
    for target in ("0", "-1", "abc", "pid:", "pid:0", "pid:-5", "pid:abc", "1x"):
        expect_failure(qcomp, win, ["set", target, "idle"])
    pid = unused_pid()
    expect_failure(qcomp, win, ["set", "pid:%d" % pid, "idle"], codes=(1,),
                   words=[str(pid)])
    expect_failure(qcomp, win, ["set", "4242", "idle"], codes=(1,), words=["4242"])
    expect_failure(qcomp, win, ["join", "4242", "default"], codes=(1,), words=["4242"])
    # the same through the socket, so the compositor's checks are exercised
    # even where qosctl rejects the target itself
    for target in ("0", "-1", "abc", "pid:0", "pid:-1", "pid:%d" % pid, "4242", "",
                   "%d " % win.id, "pid:%d0000000000" % win.pid):
        rep = qcomp.ipc({"command": "set", "target": target, "class": "idle"})
        assert rep.get("success") is False and rep.get("error"), (target, rep)
        still_fine(qcomp, win)
    for bad in ({"command": "set", "class": "idle"},
                {"command": "set", "target": win.id, "class": "idle"},
                {"command": "set", "target": str(win.id)},
                {"command": "set", "target": str(win.id), "class": 5},
                {"command": "join", "target": str(win.id)},
                {"command": "join", "target": str(win.id), "reserve": ["x"]}):
        rep = qcomp.ipc(bad)
        print("%s -> %s" % (json.dumps(bad), rep))
        assert rep.get("success") is False and rep.get("error"), (bad, rep)
        still_fine(qcomp, win)
    # and a good request still works
    r = qcomp.qosctl("set", str(win.id), "idle")
    assert r.returncode == 0, r.stdout + r.stderr
    win.wait_class("idle")
    assert harness.qos_state(win.pid)["policy"] == harness.SCHED_IDLE
    assert qcomp.qosctl("set", str(win.id), "normal").returncode == 0
    wait_for(lambda: harness.proc_cgroups(win.pid) == win.orig_cgroups, desc="cgroups back")


def test_unknown_class_and_reserve(qcomp):
    win = Win(qcomp, "Bad Class")
    for cls in ("bogus", "", "REALTIME", "realtime2", "pause"):
        expect_failure(qcomp, win, ["set", str(win.id), cls], codes=(1, 2))
    expect_failure(qcomp, win, ["join", str(win.id), "no-such-reserve"], codes=(1,),
                   words=["no-such-reserve"])
    expect_failure(qcomp, win, ["join", "pid:%d" % win.pid, "no-such-reserve"], codes=(1,))
    for name in ("", "a/b", "../x", "x" * 300, "auto-1"):
        expect_failure(qcomp, win, ["join", str(win.id), name], codes=(1, 2))
    # nothing was created by the failed joins
    names = [x["name"] for x in json.loads(qcomp.qosctl("--json", "reserves").stdout)["reserves"]]
    assert "no-such-reserve" not in names, names


def test_reserve_malformed_params(qcomp):
    win = Win(qcomp, "Bad Params")
    before = qcomp.qosctl("--json", "capacity").stdout
    cases = [
        ["policy=bogus"],
        ["policy=qos", "period=abc", "cpu=10%"],
        ["policy=qos", "period=10ms", "cpu=-5%"],
        ["policy=qos", "period=0", "cpu=10%"],
        ["policy=fifo", "priority=500"],
        ["nice=99"],
        ["frobnicate=1"],
    ]
    for params in cases:
        expect_failure(qcomp, win, ["reserve", "badres"] + params, codes=(1,))
    expect_failure(qcomp, win, ["reserve", "badres", "novalue"], codes=(2,))
    expect_failure(qcomp, win, ["reserve", "auto-77", "policy=idle"], codes=(1,))
    names = [x["name"] for x in json.loads(qcomp.qosctl("--json", "reserves").stdout)["reserves"]]
    assert "badres" not in names, "a malformed reserve was created: %r" % names
    assert qcomp.qosctl("--json", "capacity").stdout == before
    # a well-formed one still works, and can be joined
    r = qcomp.qosctl("reserve", "goodres", "policy=idle")
    assert r.returncode == 0, r.stdout + r.stderr
    r = qcomp.qosctl("join", str(win.id), "goodres")
    assert r.returncode == 0, r.stdout + r.stderr
    win.wait_class("idle")
    assert harness.qos_state(win.pid)["policy"] == harness.SCHED_IDLE
    assert qcomp.qosctl("set", str(win.id), "normal").returncode == 0
    wait_for(lambda: harness.proc_cgroups(win.pid) == win.orig_cgroups, desc="cgroups back")
    assert_restored(win)


def test_malformed_json_on_the_socket(qcomp):
    win = Win(qcomp, "Bad JSON")
    for raw in (b"{\n", b"not json\n", b'{"command":"set","target":"1","class":\n',
                b"[1,2,3]\n", b'{"command":42}\n', b'"set"\n', b"\x00\xff\xfe\n"):
        line = qcomp.ipc_raw(raw)
        print("%r -> %s" % (raw, line))
        rep = json.loads(line)
        assert rep.get("success") is False and rep.get("error"), (raw, rep)
        assert "\n" not in rep["error"]
        still_fine(qcomp, win)
    # a request longer than the limit
    rep = json.loads(qcomp.ipc_raw(b'{"command":"set","target":"' + b"9" * 70000 + b'"}\n'))
    assert rep.get("success") is False, rep
    still_fine(qcomp, win)
    # many bad lines on one connection, then a good one: answered in order
    with __import__("socket").socket(__import__("socket").AF_UNIX) as s:
        s.settimeout(10)
        s.connect(qcomp.sock)
        s.sendall(b"garbage\n" * 50 + b'{"command":"set","target":"%d","class":"nice"}\n' % win.id)
        buf = b""
        while buf.count(b"\n") < 51:
            chunk = s.recv(65536)
            assert chunk, "connection closed after %d replies" % buf.count(b"\n")
            buf += chunk
    replies = [json.loads(x) for x in buf.split(b"\n")[:51]]
    assert all(r["success"] is False for r in replies[:50])
    assert replies[50].get("success") is True and replies[50].get("class") == "nice", replies[50]
    assert os.getpriority(os.PRIO_PROCESS, win.pid) == 10
    assert qcomp.qosctl("set", str(win.id), "normal").returncode == 0
    wait_for(lambda: harness.proc_cgroups(win.pid) == win.orig_cgroups, desc="cgroups back")
    assert_restored(win)


RESCUER = r"""
import os, sys, time
pid, dl = int(sys.argv[1]), time.monotonic() + float(sys.argv[2])
orig = open("/proc/%d/cgroup" % pid).read()
rel = [l.split(":", 2)[2] for l in orig.splitlines() if l.startswith("0::")][0]
base = "/sys/fs/cgroup/unified" if os.path.exists("/sys/fs/cgroup/unified/cgroup.procs") else "/sys/fs/cgroup"
while time.monotonic() < dl:
    cur = [l.split(":", 2)[2] for l in open("/proc/%d/cgroup" % pid).read().splitlines()
           if l.startswith("0::")][0]
    if cur != rel:
        try:
            open(base + cur + "/cgroup.freeze", "w").write("0")
        except OSError:
            pass
        open(base + rel + "/cgroup.procs", "w").write(str(pid))
        print("RESCUED", cur, flush=True)
    time.sleep(0.2)
"""


def test_pause_forbidden_targets(qcomp):
    """Pausing the compositor, the process asking or an ancestor of the
    compositor is refused (here the test process is both the compositor's
    parent and, on the raw socket, the asker).  A rescuer process thaws us
    should the compositor get this wrong."""
    win = Win(qcomp, "Pause Guard")
    rescuer = subprocess.Popen([sys.executable, "-c", RESCUER, str(os.getpid()), "30"],
                               stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        first = expect_failure(qcomp, win, ["set", "pid:%d" % qcomp.pid, "paused"],
                               codes=(1,), words=["compositor"])
        print(first)
        # the test process: the compositor's parent
        expect_failure(qcomp, win, ["set", "pid:%d" % os.getpid(), "paused"], codes=(1,))
        # the asker itself, on the raw socket
        rep = qcomp.ipc({"command": "set", "target": "pid:%d" % os.getpid(),
                         "class": "paused"})
        assert rep.get("success") is False and "refus" in rep.get("error", ""), rep
        # where it started, or its own leaf (scheduling server-weight, pure v2)
        own = harness.proc_cgroups(qcomp.pid)[""]
        assert own == harness.proc_cgroups(os.getpid())[""] or own.endswith("/.server"), own
        assert not harness.cgroup2_frozen(qcomp.pid)
        still_fine(qcomp, win)
    finally:
        rescuer.kill()
        out = rescuer.communicate(timeout=10)[0]
    assert "RESCUED" not in out, "the test process had to be thawed: %s" % out


def test_join_pause_reserve_forbidden_targets(qcomp):
    """Joining a pause reserve is a pause: refused for the compositor and the
    asker/its parent (once froze the compositor itself: the qosrc reserve
    `pause` was not instantiated before the first join, so the check was
    skipped)."""
    win = Win(qcomp, "Join Guard")
    rescuer = subprocess.Popen([sys.executable, "-c", RESCUER, str(os.getpid()), "30"],
                               stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        for target in (qcomp.pid, os.getpid()):
            try:
                rep = qcomp.ipc({"command": "join", "target": "pid:%d" % target,
                                 "reserve": "pause"}, timeout=5)
            except OSError as e:
                rep = {"exception": repr(e), "compositor_frozen": harness.cgroup2_frozen(qcomp.pid)}
            assert rep.get("success") is False, "join pid:%d pause: %r" % (target, rep)
        assert not harness.cgroup2_frozen(qcomp.pid)
        still_fine(qcomp, win)
    finally:
        rescuer.kill()
        out = rescuer.communicate(timeout=10)[0]
        if harness.cgroup2_frozen(qcomp.pid):
            # let teardown's SIGTERM work
            with open(os.path.join(harness.cgroup2_dir(qcomp.pid), "cgroup.freeze"), "w") as fh:
                fh.write("0")
    assert "RESCUED" not in out, "the test process had to be thawed: %s" % out


THAWER = r"""
import os, sys, time
pid, dl = int(sys.argv[1]), time.monotonic() + float(sys.argv[2])
base = "/sys/fs/cgroup/unified" if os.path.exists("/sys/fs/cgroup/unified/cgroup.procs") else "/sys/fs/cgroup"
while time.monotonic() < dl:
    cur = [l.split(":", 2)[2] for l in open("/proc/%d/cgroup" % pid).read().splitlines()
           if l.startswith("0::")][0]
    try:
        if open(base + cur + "/cgroup.freeze").read().strip() == "1":
            open(base + cur + "/cgroup.freeze", "w").write("0")
            print("THAWED", cur, flush=True)
    except OSError:
        pass
    time.sleep(0.1)
"""


ASKER = r"""
import json, os, socket, sys
def ask(obj):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(20)
        s.connect(sys.argv[1])
        s.sendall((json.dumps(obj) + "\n").encode())
        buf = b""
        while b"\n" not in buf:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
        return json.loads(buf.split(b"\n", 1)[0])
sys.stdin.readline()
print(json.dumps(ask({"command": "join", "target": "pid:%d" % os.getpid(),
                      "reserve": "many"})), flush=True)
sys.stdin.readline()
print(json.dumps(ask({"command": "reserve", "name": "many", "params": "policy=pause"})),
      flush=True)
sys.stdin.readline()
"""


def test_pause_reserve_with_a_protected_member_past_the_64th_refused(qcomp):
    """Turning a reserve into a pause reserve asks about every member, not
    only the first 64 the QoS gate reads at once: with 70 sleepers joined
    before it, the process asking (which may never be paused) joins last
    and asks for the change, and it is still found and the change refused.
    A thawer thaws the asker's group should the compositor get this wrong."""
    win = Win(qcomp, "Many Members")
    r = qcomp.qosctl("reserve", "many", "policy=other")
    assert r.returncode == 0, r.stdout + r.stderr
    sleepers = [subprocess.Popen(["sleep", "60"]) for _ in range(70)]
    asker = subprocess.Popen([sys.executable, "-c", ASKER, qcomp.sock], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    thawer = subprocess.Popen([sys.executable, "-c", THAWER, str(asker.pid), "30"],
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        for pid in [p.pid for p in sleepers]:
            rep = qcomp.ipc({"command": "join", "target": "pid:%d" % pid, "reserve": "many"})
            assert rep.get("success") is True, (pid, rep)
        asker.stdin.write("\n")  # now join, after the sleepers
        asker.stdin.flush()
        rep = json.loads(asker.stdout.readline())
        assert rep.get("success") is True, ("the asker's join", rep)
        # the listing shows the first 64 members, in the order the gate reads them
        reserves = json.loads(qcomp.qosctl("--json", "reserves").stdout)["reserves"]
        listed = [m["pid"] for x in reserves if x["name"] == "many" for m in x["members"]]
        assert len(listed) == 64 and asker.pid not in listed, listed
        asker.stdin.write("\n")  # now ask for the pause
        asker.stdin.flush()
        rep = json.loads(asker.stdout.readline())
        assert rep.get("success") is False, rep
        assert "refusing to pause the process asking (pid %d)" % asker.pid in rep["error"], rep
        reserves = json.loads(qcomp.qosctl("--json", "reserves").stdout)["reserves"]
        many = [x for x in reserves if x["name"] == "many"][0]
        assert many["policy"] == "other", many
        still_fine(qcomp, win)
    finally:
        for p in sleepers + [asker]:
            p.kill()
            p.wait()
        thawer.kill()
        out = thawer.communicate(timeout=10)[0]
    assert "THAWED" not in out, "the asker had to be thawed: %s" % out


def _beyond_capacity_percent(qcomp):
    total = json.loads(qcomp.qosctl("--json", "capacity").stdout)["total_ppm"]
    return total // 10000 + 20


def test_reserve_slice_beyond_capacity_refused(qcomp):
    """A slice longer than the whole reservable capacity allows per period
    can never be granted: refused when the reserve is defined."""
    win = Win(qcomp, "Bad Slice")
    slice_ms = _beyond_capacity_percent(qcomp) * 10 // 100
    expect_failure(qcomp, win, ["reserve", "badres", "policy=qos", "period=10ms",
                                "slice=%dms" % slice_ms], codes=(1,))
    names = [x["name"] for x in json.loads(qcomp.qosctl("--json", "reserves").stdout)["reserves"]]
    assert "badres" not in names, names


def test_reserve_cpu_beyond_capacity_refused(qcomp):
    """The same through cpu=: refused with a reason, nothing created."""
    win = Win(qcomp, "Bad CPU")
    expect_failure(qcomp, win, ["reserve", "badres", "policy=qos", "period=10ms",
                                "cpu=%d%%" % _beyond_capacity_percent(qcomp)], codes=(1,))
    names = [x["name"] for x in json.loads(qcomp.qosctl("--json", "reserves").stdout)["reserves"]]
    assert "badres" not in names, names


def test_trailing_garbage_after_json_refused(qcomp):
    """A line must be exactly one JSON object: trailing text is refused and
    nothing of the request is carried out."""
    win = Win(qcomp, "Trailing")
    line = qcomp.ipc_raw(b'{"command":"set","target":"%d","class":"idle"}}}\n' % win.id)
    rep = json.loads(line)
    assert rep.get("success") is False and rep.get("error"), rep
    still_fine(qcomp, win)


def test_kernel_refusals_are_logged_without_flooding(qcomp):
    """A reserve the kernel refuses (deadline threads must be allowed on every
    CPU: these are pinned to one) is a one-line refusal for the asker and an
    error line in the compositor's log naming the reserve, the process and
    the kernel's reason; the process runs on as other.  Twelve refusals at
    once: at most five lines a second, and the rest are counted in a line
    of their own rather than lost."""
    assert qcomp.qosctl("reserve", "pinned", "policy=qos", "period=20ms",
                        "cpu=5%").returncode == 0
    pinned = [subprocess.Popen(["taskset", "-c", "0", "sleep", "60"]) for _ in range(12)]
    try:
        for p in pinned:
            r = qcomp.qosctl("join", "pid:%d" % p.pid, "pinned")
            assert r.returncode == 1 and "every CPU" in r.stderr, (r.stdout, r.stderr)
            assert harness.sched_attr(p.pid)["policy"] == os.SCHED_OTHER
        line = "QoS: reserve pinned, pid %d: cannot make thread %d qos: deadline tasks " \
               "must be allowed to run on every CPU" % (pinned[0].pid, pinned[0].pid)
        wait_for(lambda: line in qcomp.log_text(), timeout=2, desc="the first refusal logged")

        def counted():
            log = qcomp.log_text()
            lines = sum("QoS: reserve pinned, pid %d:" % p.pid in log for p in pinned)
            dropped = sum(int(l.split("QoS: ")[1].split()[0]) for l in log.splitlines()
                          if "more messages in the last second not logged" in l)
            return lines, dropped
        wait_for(lambda: sum(counted()) == len(pinned), timeout=3,
                 desc="every refusal logged or counted")
        lines, dropped = counted()
        print("logged %d, counted %d" % (lines, dropped))
        assert dropped > 0 and lines <= 10
        assert all(p.poll() is None for p in pinned)
    finally:
        for p in pinned:
            p.kill()
            p.wait()
