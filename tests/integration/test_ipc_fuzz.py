"""Seeded mutations of valid IPC requests (their bytes damaged, or their
values replaced while the JSON stays valid), sent to the real compositor on
one connection: every line gets exactly one reply, a JSON object in valid UTF-8
with a boolean "success" and, on failure, an error that says something; the
compositor stays up and answers the next good request at once.

Requests that could act on the machine or end the session (exit, exec,
close, set, join, reload, subscribe) are never sent, in any spelling json-c
might decode: lines holding their names or a backslash escape are skipped.
"""

import json
import os
import random
import socket
import time

from test_qos_buttons import Win, qcomp, no_frozen_leftovers  # noqa: F401

CORPUS = [
    {"command": "version"},
    {"command": "windows"},
    {"command": "outputs"},
    {"command": "reserves"},
    {"command": "capacity"},
    {"command": "focus", "id": 1},
    {"command": "ping", "id": 1},
    {"command": "reserve", "name": "fz", "params": "policy=qos period=20ms cpu=10%"},
    {"command": "reserve", "name": "fz2", "params": "policy=other period=50ms slice=5ms "
                                                    "fallback=idle nice=3"},
    {"command": "reserve", "name": "fz3", "params": "policy=fifo priority=10"},
]
WORDS = [b'"', b"{", b"}", b"[", b"]", b":", b",", b"null", b"true", b"1e999", b"-1",
         b"18446744073709551616", b"0.5", b'"id"', b'"name"', b'"params"', b'"command"',
         b"policy=", b"period=", b"cpu=", b"idle", b"pause", b"auto-1", b"/", b"..",
         "\u00e9".encode(), "\u20ac".encode(), b"\xff", b"\xc3", b"\x00", b"\x1b",
         b"x" * 80, "\u00e9".encode() * 40]
UNSAFE = [b"exit", b"exec", b"output-", b"close", b"set", b"join", b"reload", b"subscribe", b"\\"]
ITERATIONS = int(os.environ.get("QOS_FUZZ_ITERATIONS", "0") or 0) or 1500


def mutate(rng, data):
    data = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        at = rng.randint(0, len(data))
        kind = rng.randrange(4)
        if kind == 0 and data:
            data[rng.randrange(len(data))] = rng.randrange(1, 256)
        elif kind == 1:
            data[at:at] = rng.choice(WORDS)
        elif kind == 2:
            del data[at:at + rng.randint(1, 12)]
        elif data:
            start = rng.randrange(len(data))
            data[at:at] = data[start:start + rng.randint(1, 16)]
    # One request per line: a newline would make it two.
    return bytes(data).replace(b"\n", b" ")


VALUES = [None, True, 0, -1, 1, 2 ** 31, 2 ** 63, 2 ** 64, 1.5, -0.0, 1e308, "", "x", "pid:1",
          "pid:-1", "pid:99999999999", "1", "auto-1", "default", "a/b", "..", "\u00e9" * 70,
          "\u20ac" * 30, "policy=idle", [], {}, [1, "a"], {"command": "version"}]


def vary_text(rng, text):
    """A string value mutated at the byte level, kept valid UTF-8 (the
    request itself must parse: its handler is what is under test)."""
    data = mutate(rng, text.encode())
    return data.decode("utf-8", "replace")


def vary(rng, req):
    """A valid JSON request with its values changed: wrong types, out of
    range numbers, damaged names and parameter strings, extra or missing
    keys."""
    req = dict(req)
    kind = rng.randrange(4)
    key = rng.choice(sorted(req))
    if kind == 0:
        req[key] = rng.choice(VALUES)
    elif kind == 1 and isinstance(req[key], str) and key != "command":
        req[key] = vary_text(rng, req[key])
    elif kind == 2 and key != "command":
        del req[key]
    else:
        req[rng.choice(["id", "name", "params", "target", "extra"])] = rng.choice(VALUES)
    return json.dumps(req, ensure_ascii=rng.random() < 0.5).encode()


def test_mutated_requests_each_get_one_well_formed_reply(qcomp):
    win = Win(qcomp, "Fuzz Target")
    corpus = [dict(r, id=win.id) if "id" in r else r for r in CORPUS]
    seed = int(os.environ.get("QOS_FUZZ_SEED", "0") or 0) or 0x5eed
    rng = random.Random(seed)
    sent = skipped = failures = 0
    slowest = 0.0
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(qcomp.sock)
        replies = s.makefile("rb")
        for i in range(ITERATIONS):
            req = rng.choice(corpus)
            # Half well-formed JSON with bad values, half damaged bytes.
            line = vary(rng, req) if rng.random() < 0.5 else mutate(rng, json.dumps(req).encode())
            if any(w in line for w in UNSAFE):
                skipped += 1
                continue
            if not line:
                continue  # an empty line asks nothing and gets no reply
            t0 = time.monotonic()
            s.sendall(line + b"\n")
            raw = replies.readline()
            slowest = max(slowest, time.monotonic() - t0)
            sent += 1
            assert raw.endswith(b"\n"), "seed %#x, request %d %r: no reply" % (seed, i, line)
            try:
                reply = json.loads(raw.decode("utf-8"))
            except ValueError as e:
                raise AssertionError("seed %#x, request %d %r: reply %r is not JSON in "
                                     "UTF-8: %s" % (seed, i, line, raw, e))
            assert isinstance(reply, dict) and isinstance(reply.get("success"), bool), \
                (line, reply)
            if not reply["success"]:
                failures += 1
                err = reply.get("error")
                assert isinstance(err, str) and err.strip() and "\n" not in err, (line, reply)
        # The connection is still in step: a good request gets its own answer.
        s.sendall(b'{"command":"version"}\n')
        assert json.loads(replies.readline())["success"] is True
    print("sent %d mutated requests (%d refused, %d skipped as unsafe); slowest reply %.1f ms"
          % (sent, failures, skipped, slowest * 1000))
    # Both halves reached the handlers: some requests were refused, some done.
    assert sent > ITERATIONS // 2 and sent // 4 < failures < sent
    assert qcomp.alive(), "qosway died:\n" + qcomp.log_tail()
    assert qcomp.ipc({"command": "version"})["success"] is True
    assert win.client.alive() and qcomp.window_by_title("Fuzz Target")["id"] == win.id
