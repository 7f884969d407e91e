"""Bad IPC input (unknown command, malformed JSON, unknown window id, bad
arguments, an over-long line) gets an error reply and a non-zero qosctl exit,
and leaves the compositor unaffected; a client that never reads its replies
is dropped without blocking the compositor."""

import json
import os
import re
import socket
import subprocess
import time

import pytest

import harness
from harness import wait_for

BAD_REQUESTS = [
    pytest.param(b'{"command":"frobnicate"}\n', id="unknown-command"),
    pytest.param(b'{"command":"windows"\n', id="truncated-json"),
    pytest.param(b'this is not json\n', id="not-json"),
    pytest.param(b'[1,2,3]\n', id="array-not-object"),
    pytest.param(b'{}\n', id="no-command"),
    pytest.param(b'{"command":42}\n', id="command-not-string"),
    pytest.param(b'{"command":"focus","id":987654}\n', id="focus-unknown-id"),
    pytest.param(b'{"command":"close","id":987654}\n', id="close-unknown-id"),
    pytest.param(b'{"command":"focus"}\n', id="focus-missing-id"),
    pytest.param(b'{"command":"focus","id":"three"}\n', id="focus-id-string"),
    pytest.param(b'{"command":"exec","argv":[]}\n', id="exec-empty-argv"),
    pytest.param(b'{"command":"exec","argv":"ls"}\n', id="exec-argv-not-array"),
    pytest.param(b'{"command":"exec","argv_base64":["!!!!"]}\n', id="exec-b64-not-base64"),
    pytest.param(b'{"command":"exec","argv_base64":["dHJ1ZQ"]}\n', id="exec-b64-no-padding"),
    pytest.param(b'{"command":"exec","argv_base64":["dH=1ZQ=="]}\n', id="exec-b64-inner-pad"),
    pytest.param(b'{"command":"exec","argv_base64":["dHJ1ZQ==","YQBi"]}\n',
                 id="exec-b64-nul-byte"),
    pytest.param(b'{"command":"exec","argv_base64":[""]}\n', id="exec-b64-empty"),
    pytest.param(b'{"command":"exec","argv_base64":[7]}\n', id="exec-b64-not-string"),
    pytest.param(b'{"command":"exec","argv":["true"],"argv_base64":["dHJ1ZQ=="]}\n',
                 id="exec-argv-and-b64"),
    pytest.param(b'\x00\xff\xfe garbage\n', id="binary-garbage"),
]


def assert_unaffected(comp):
    assert comp.alive(), "qosway died:\n" + comp.log_tail()
    assert comp.ipc({"command": "version"})["success"] is True
    assert isinstance(comp.windows(), list)


@pytest.mark.parametrize("request_bytes", BAD_REQUESTS)
def test_bad_request_gets_error_reply(qosway, request_bytes):
    c = qosway.spawn_wlclient(title="Bystander")
    c.wait_event("mapped")
    before = qosway.window_by_title("Bystander")
    reply = json.loads(qosway.ipc_raw(request_bytes))
    assert reply.get("success") is False, reply
    assert isinstance(reply.get("error"), str) and reply["error"].strip(), reply
    assert "\n" not in reply["error"]
    assert_unaffected(qosway)
    after = qosway.window_by_title("Bystander")
    assert after["id"] == before["id"] and c.alive()


@pytest.mark.parametrize("request_bytes,where", [
    (b'{"command":"exec","argv":["\\u0000"]}\n', "'argv' element 0"),
    (b'{"command":"exec","argv":["true","a\\u0000b"]}\n', "'argv' element 1"),
    (b'{"command":"exec","argv":["true"],"reserve":"r\\u0000x"}\n', "'reserve'"),
    (b'{"command":"set","target":"1\\u0000","class":"idle"}\n', "'target'"),
    (b'{"command":"version\\u0000junk"}\n', "'command'"),
])
def test_nul_in_a_string_is_refused(qosway, request_bytes, where):
    """A JSON string may hold "\\u0000", a C string may not: such a request
    is refused naming the value, rather than run with an empty argv[0] or
    a name cut short at the NUL."""
    reply = json.loads(qosway.ipc_raw(request_bytes))
    assert reply.get("success") is False, reply
    assert "pid" not in reply, reply
    assert where + " holds a NUL byte" in reply["error"], reply
    assert_unaffected(qosway)


def documented_commands():
    """Every command name docs/ipc.md gives a request for."""
    with open(os.path.join(harness.REPO, "docs", "ipc.md")) as f:
        return sorted(set(re.findall(r'\{"command":"([a-z-]+)"', f.read())))


def test_every_documented_command_is_known(qosway):
    """Each command of docs/ipc.md is one the compositor knows: asked with
    no arguments it answers or names what is missing, never "unknown
    command". exit is left out: it would end the compositor."""
    names = documented_commands()
    assert {"version", "subscribe", "input-touch", "workspace", "exit"} <= set(names), names
    for name in names:
        if name == "exit":
            continue
        reply = qosway.ipc({"command": name})
        assert not reply.get("error", "").startswith("unknown command"), (name, reply)
    assert qosway.ipc({"command": "frobnicate"})["error"] == "unknown command 'frobnicate'"
    assert_unaffected(qosway)


def test_error_then_good_request_on_same_connection(qosway):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(qosway.sock)
        s.sendall(b'{"command":"nope"}\nnot json\n{"command":"version"}\n')
        f = s.makefile("rb")
        r1, r2, r3 = (json.loads(f.readline()) for _ in range(3))
    assert r1["success"] is False and r2["success"] is False
    assert r3["success"] is True and r3.get("version")


def test_overlong_line_gets_error(qosway):
    line = b'{"command":"version","pad":"' + b"x" * (70 * 1024) + b'"}\n'
    reply = json.loads(qosway.ipc_raw(line))
    assert reply["success"] is False, reply
    assert_unaffected(qosway)


@pytest.mark.parametrize("args", [
    ["frobnicate"],
    ["focus", "987654"],
    ["close", "987654"],
    ["focus", "abc"],
    ["focus"],
    ["close"],
    ["exec"],
], ids=lambda a: "-".join(a))
def test_qosctl_bad_input_exits_nonzero(qosway, args):
    r = qosway.qosctl(*args)
    assert r.returncode != 0, "qosctl %s exited 0: %s" % (args, r.stdout)
    assert r.stderr.strip(), "qosctl %s printed no error line" % (args,)
    assert_unaffected(qosway)


def test_qosctl_argument_that_is_not_utf8_is_named(qosway):
    """The IPC is JSON, which carries text: qosctl says which argument it
    cannot send instead of passing the compositor bytes it will refuse."""
    argv = [harness.qosctl_bin().encode(), b"-s", qosway.sock.encode(), b"reserve",
            b"caf\xe9", b"policy=idle"]
    r = subprocess.run(argv, capture_output=True, timeout=15, stdin=subprocess.DEVNULL)
    assert r.returncode == 2, r
    assert b"argument 4 is not valid UTF-8" in r.stderr, r.stderr
    assert_unaffected(qosway)


def test_qosctl_without_socket_fails(qosway, tmp_path):
    res = subprocess.run([harness.qosctl_bin(), "-s", str(tmp_path / "nope.sock"), "windows"],
                         capture_output=True, text=True, timeout=15)
    assert res.returncode != 0 and res.stderr.strip()


def test_slow_ipc_client_does_not_block_compositor(qosway):
    """A client that sends requests but never reads its replies must not
    stall the compositor; past the reply bound (4 MiB) it is dropped."""
    for i in range(3):
        c = qosway.spawn_wlclient(title="Padding window %d %s" % (i, "x" * 100))
        c.wait_event("mapped")
    slow = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    slow.connect(qosway.sock)
    slow.setblocking(False)
    req = b'{"command":"windows"}\n' * 200
    sent = 0
    dropped = False
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline and sent < 64 * 1024 * 1024:
            try:
                sent += slow.send(req)
            except BlockingIOError:
                # compositor stopped reading us (or its buffer is full):
                # it must still serve others
                t0 = time.monotonic()
                assert qosway.ipc({"command": "version"}, timeout=5)["success"]
                assert time.monotonic() - t0 < 5
                time.sleep(0.05)
            except (BrokenPipeError, ConnectionResetError):
                dropped = True
                break
            # others are served promptly all along
            if sent % (200 * 22 * 50) < len(req):
                assert qosway.ipc({"command": "version"}, timeout=5)["success"]
        if not dropped:
            # the compositor may have closed the connection without us
            # noticing on send yet: reading must hit EOF/reset, not replies
            # forever
            def eof():
                try:
                    while True:
                        chunk = slow.recv(1 << 20)
                        if not chunk:
                            return True
                except BlockingIOError:
                    return False
                except ConnectionResetError:
                    return True
            dropped = wait_for(eof, timeout=15, desc="slow IPC client to be dropped")
    finally:
        slow.close()
    assert dropped
    assert_unaffected(qosway)


def test_subscriber_dropped_by_its_own_requests_event(qosway):
    """A subscriber that stopped reading asks for a focus change: the
    focus event its own request broadcasts fails to reach it, and it is
    dropped once the request returns, not in the middle of it (which freed
    the client its reply was then queued on)."""
    a = qosway.spawn_wlclient(title="Left behind")
    a.wait_event("mapped")
    b = qosway.spawn_wlclient(title="Focused")
    b.wait_event("mapped")
    wait_for(lambda: qosway.window_by_title("Focused")["focused"], desc="second window focused")
    target = qosway.window_by_title("Left behind")["id"]
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(qosway.sock)
        s.sendall(b'{"command":"subscribe"}\n')
        assert json.loads(s.makefile("rb").readline())["success"] is True
        # The compositor's sends to this socket now fail with EPIPE.
        s.shutdown(socket.SHUT_RD)
        s.sendall(b'{"command":"focus","id":%d}\n' % target)
        wait_for(lambda: qosway.window_by_title("Left behind")["focused"],
                 desc="the focus request done")
    assert_unaffected(qosway)
    assert a.alive() and b.alive()


def test_connections_past_the_limit_are_refused_with_a_reason(qosway):
    """IPC holds at most 64 connections (each may queue up to 4 MB): the
    65th is told why and closed, and once one closes a new one is served."""
    held = []
    try:
        for _ in range(64):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            held.append(s)
            # Blocking: with a timeout, a full listen backlog is EAGAIN.
            s.connect(qosway.sock)
            s.settimeout(10)
        # Every one of them was accepted before the next connects.
        held[-1].sendall(b'{"command":"version"}\n')
        assert json.loads(held[-1].makefile("rb").readline())["success"] is True
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as extra:
            extra.connect(qosway.sock)
            extra.settimeout(10)
            reply = json.loads(extra.makefile("rb").readline())
        assert reply["success"] is False and "too many IPC connections" in reply["error"]
        held.pop().close()
        wait_for(lambda: qosway.ipc({"command": "version"})["success"] is True,
                 desc="a connection served once one closed")
    finally:
        for s in held:
            s.close()
    assert_unaffected(qosway)
