"""An application that is an ancestor of the compositor (it started qosway,
then became a Wayland client of it) is refused any class for itself through
qosway-reserve-v1, with the reason: its class is the session's own. The
client is made the compositor's parent by a shell that starts qosway in the
background and then execs the client, which keeps the shell's pid."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

import pytest

import harness

HERE = os.path.dirname(os.path.abspath(__file__))

START = r"""
qosway "$@" > "$QW_LOG" 2>&1 &
i=0
while [ ! -S "$XDG_RUNTIME_DIR/wayland-0" ] && [ ! -S "$XDG_RUNTIME_DIR/wayland-1" ]; do
    i=$((i + 1))
    [ "$i" -lt 300 ] || exit 9
    sleep 0.1
done
for s in "$XDG_RUNTIME_DIR"/wayland-?; do
    [ -S "$s" ] && WAYLAND_DISPLAY=${s##*/}
done
export WAYLAND_DISPLAY
exec "$PYTHON" "$CLIENT"
"""


def children(pid):
    with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
        return [int(c) for c in f.read().split()]


@pytest.fixture
def parent_client(tmp_path):
    runtime = tempfile.mkdtemp(prefix="qw-")
    os.chmod(runtime, 0o700)
    binary = harness.qosway_bin()
    env = {"PATH": "%s:%s" % (os.path.dirname(binary), os.environ.get("PATH", "/usr/bin")),
           "HOME": runtime, "XDG_RUNTIME_DIR": runtime,
           "XDG_CONFIG_HOME": os.path.join(runtime, "config"),
           "WLR_BACKENDS": "headless", "WLR_RENDERER": "pixman",
           "WLR_LIBINPUT_NO_DEVICES": "1", "LANG": os.environ.get("LANG", "C.UTF-8"),
           "QW_LOG": str(tmp_path / "qosway.log"), "PYTHON": sys.executable,
           "CLIENT": os.path.join(HERE, "reserve_client.py")}
    env.update(harness.sanitizer_env())
    config = tmp_path / "qosway.config"
    config.write_text(harness.qos_test_config())
    client = subprocess.Popen(["sh", "-c", START, "sh", "-c", str(config)], env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              start_new_session=True)
    try:
        yield client, tmp_path / "qosway.log"
    finally:
        comps = children(client.pid) if client.poll() is None else []
        client.kill()
        client.wait()
        for pid in comps:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        harness.wait_for(lambda: not any(os.path.exists("/proc/%d" % p) for p in comps),
                         desc="the compositor to exit")
        shutil.rmtree(runtime, ignore_errors=True)


def event(client):
    line = client.stdout.readline()
    assert line, "the client ended"
    name, _, data = line.partition(" ")
    return name, json.loads(data) if data.strip() else {}


def test_ancestor_application_is_refused_for_itself(parent_client):
    client, log = parent_client
    name, ready = event(client)
    assert name == "ready" and ready["manager"], (name, ready, log.read_text()[-2000:])
    comps = children(client.pid)
    assert any(os.readlink("/proc/%d/exe" % p) == harness.qosway_bin() for p in comps), comps
    before = harness.sched_attr(client.pid)
    client.stdin.write("get\n")
    client.stdin.flush()
    name, obj = event(client)
    assert name == "object", (name, obj)
    for i, cmd in enumerate(("params %d idle idle 0 0 0 0" % obj["idx"],
                             "join %d 0" % obj["idx"]), 1):
        # what the compositor answered before the i-th sync
        client.stdin.write(cmd + "\nsync\n")
        client.stdin.flush()
        answers = []
        while True:
            name, data = event(client)
            if name == "synced" and data["n"] == i:
                break
            answers.append((name, data))
        refused = [d for n, d in answers if n == "refused"]
        assert refused and not any(n == "granted" for n, _ in answers), (cmd, answers)
        message = refused[0]["message"]
        assert "refusing to change pid %d" % client.pid in message, message
        assert "ancestor of the compositor" in message, message
    assert harness.sched_attr(client.pid) == before
