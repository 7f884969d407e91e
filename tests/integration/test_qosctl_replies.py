"""qosctl reads what comes back on the socket as input too: another program
may listen there, or a compositor of another version.  Real replies of the
running compositor (windows, reserves, capacity, outputs, version, set,
exec, an error) are damaged in seeded ways (keys dropped, values of the
wrong JSON type, null, text cut short) and served by a fake compositor to
each qosctl command that prints them, `top -n 1` and `subscribe` too.

qosctl must end on its own with its documented status (0, 1 refused, 3 no
usable reply), never from a signal or a sanitizer report, and say something
on stderr whenever it fails.  QOS_FUZZ_SEED / QOS_FUZZ_ITERATIONS as in the
other fuzz tests."""

import copy
import json
import os
import random
import socket
import subprocess
import threading

import harness
from test_qos_buttons import Win, qcomp, no_frozen_leftovers  # noqa: F401  (fixtures)

SEED = int(os.environ.get("QOS_FUZZ_SEED", "0") or 0) or random.randrange(1, 2 ** 31)
ITERATIONS = int(os.environ.get("QOS_FUZZ_ITERATIONS", "0") or 0) or 400
ODD_VALUES = [None, True, False, 0, -1, 2 ** 31, 2 ** 63 - 1, -2 ** 63, 1.5, 1e300, "", "x",
              "\u00e9\u4e2d", [], [1, "a", None], {}, {"a": 1}]
# qosctl commands and the request command they send
COMMANDS = [
    (["windows"], "windows"), (["outputs"], "outputs"), (["version"], "version"),
    (["reserves"], "reserves"), (["capacity"], "capacity"), (["set", "1", "idle"], "set"),
    (["exec", "--", "true"], "exec"), (["focus", "1"], "focus"), (["reload"], "reload"),
    (["top", "-n", "1"], None), (["subscribe"], "subscribe"),
]


class FakeCompositor:
    """Answers each request line with replies[command] (raw bytes), then,
    for subscribe, the events, then hangs up."""

    def __init__(self, path):
        self.path = path
        self.replies = {}
        self.events = []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(8)
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                buf = b""
                try:
                    while True:
                        data = conn.recv(65536)
                        if not data:
                            break
                        buf += data
                        while b"\n" in buf:
                            line, buf = buf.split(b"\n", 1)
                            cmd = json.loads(line).get("command")
                            conn.sendall(self.replies.get(cmd, b'{"success":false}') + b"\n")
                            if cmd == "subscribe":
                                for ev in self.events:
                                    conn.sendall(ev + b"\n")
                                raise ConnectionResetError
                except OSError:
                    pass

    def close(self):
        self.sock.close()


def real_replies(comp):
    """One reply of each kind from the running compositor."""
    out = {}
    for args, cmd in COMMANDS:
        if cmd in (None, "subscribe", "exec", "set", "focus", "reload"):
            continue
        r = comp.qosctl("--json", *args)
        out[cmd] = json.loads(r.stdout)
    out["set"] = {"success": True, "pid": 4242, "class": "idle"}
    out["exec"] = {"success": True, "pid": 4243, "refused": "no capacity left"}
    out["focus"] = {"success": False, "error": "no window with id 1"}
    out["reload"] = {"success": True}
    out["subscribe"] = {"success": True}
    return out


def paths(v, prefix=()):
    """Every (container, key) under v, to damage one of them."""
    if isinstance(v, dict):
        for k, x in v.items():
            yield v, k
            yield from paths(x, prefix + (k,))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield v, i
            yield from paths(x, prefix + (i,))


def damage(rng, reply):
    """reply as bytes, with 1-3 of its values dropped or replaced, or its
    text cut short, or it left whole."""
    v = copy.deepcopy(reply)
    kind = rng.randrange(6)
    if kind == 0:
        return json.dumps(v).encode()
    if kind == 1:
        text = json.dumps(v).encode()
        return text[:rng.randrange(len(text))]
    for _ in range(rng.randint(1, 3)):
        spots = list(paths(v))
        if not spots:
            break
        parent, key = rng.choice(spots)
        if isinstance(parent, dict) and rng.random() < 0.4:
            del parent[key]
        else:
            parent[key] = copy.deepcopy(rng.choice(ODD_VALUES))
    if isinstance(v, dict) and rng.random() < 0.2:
        v["success"] = rng.choice([True, False, None, 1, "yes"])
    return json.dumps(v).encode()


def test_damaged_replies_never_crash_qosctl(qcomp, tmp_path):
    print("seed %d (QOS_FUZZ_SEED to repeat)" % SEED)
    rng = random.Random(SEED)
    win = Win(qcomp, "Replies \u4e2d")
    assert qcomp.qosctl("reserve", "fuzzres", "policy=qos", "period=20ms", "cpu=5%").returncode == 0
    assert qcomp.qosctl("join", str(win.id), "fuzzres").returncode == 0
    corpus = real_replies(qcomp)
    assert corpus["windows"]["windows"] and corpus["reserves"]["reserves"], corpus
    fake = FakeCompositor(str(tmp_path / "fake.sock"))
    env = dict(os.environ, **harness.sanitizer_env())
    env.pop("QOSWAY_SOCK", None)
    statuses = {}
    try:
        for n in range(ITERATIONS):
            args, cmd = rng.choice(COMMANDS)
            fake.replies = {c: damage(rng, r) for c, r in corpus.items()}
            fake.events = [damage(rng, {"event": "class", "id": 1, "class": "idle"})
                           for _ in range(rng.randint(0, 3))]
            r = subprocess.run([harness.qosctl_bin(), "-s", fake.path] + args,
                               capture_output=True, timeout=20, env=env,
                               stdin=subprocess.DEVNULL)
            err = r.stderr.decode(errors="replace")
            what = "run %d: qosctl %s, replies %r" % (
                n, " ".join(args), fake.replies.get(cmd) if cmd else fake.replies)
            assert "Sanitizer" not in err and "runtime error" not in err, (what, err)
            assert r.returncode in (0, 1, 3), (what, r.returncode, err)
            if r.returncode:
                assert err.strip(), (what, r.returncode)
            statuses[r.returncode] = statuses.get(r.returncode, 0) + 1
    finally:
        fake.close()
    print("exit statuses: %r" % statuses)
    assert set(statuses) >= {0, 1, 3}, statuses
