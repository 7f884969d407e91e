"""qosctl's QoS views: `subscribe` streams class changes and admission
results as JSON lines; `top` prints windows and reserves; `windows` has the
class, reserve and CPU columns."""

import json
import subprocess
import threading

import harness
from harness import wait_for
from test_qos_buttons import Win, qcomp, no_frozen_leftovers  # noqa: F401


def test_subscribe_streams_class_changes_and_admission(qcomp):
    win = Win(qcomp, "Subscribed")
    proc = subprocess.Popen([harness.qosctl_bin(), "-s", qcomp.sock, "subscribe"],
                            stdout=subprocess.PIPE, text=True)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    try:
        def events():
            return [json.loads(line) for line in list(lines)]

        # qosctl prints nothing until the first event: retitle the window
        # until a title event shows the subscription is in place
        n = [0]

        def retitled():
            n[0] += 1
            win.client.send("title Subscribed %d" % n[0])
            try:
                wait_for(lambda: any(e.get("change") == "title" for e in events()), timeout=0.5)
                return True
            except AssertionError:
                return False

        wait_for(retitled, timeout=10, desc="subscription in place")
        assert qcomp.qosctl("set", str(win.id), "idle").returncode == 0
        assert qcomp.qosctl("set", str(win.id), "realtime").returncode == 0

        wait_for(lambda: any(e.get("event") == "window" and e.get("change") == "class" and
                             e["window"]["class"] == "realtime" for e in events()),
                 desc="class event for realtime")
        wait_for(lambda: any(e.get("event") == "qos" and e.get("change") == "granted"
                             for e in events()), desc="admission granted event")
        assert any(e.get("event") == "window" and e["window"]["class"] == "idle"
                   for e in events()), events()
    finally:
        proc.terminate()
        proc.wait(10)
        qcomp.qosctl("set", str(win.id), "normal")


def test_top_and_windows_show_qos_columns(qcomp):
    win = Win(qcomp, "Top Target")
    assert qcomp.qosctl("set", str(win.id), "idle").returncode == 0
    win.wait_class("idle")
    r = qcomp.qosctl("top", "-n", "1")
    assert r.returncode == 0, r.stderr
    row = [line for line in r.stdout.splitlines() if "Top Target" in line]
    assert row and "idle" in row[0], r.stdout
    assert "RESERVE" in r.stdout and "POLICY" in r.stdout, r.stdout
    assert any(line.startswith("auto-%d" % win.pid) for line in r.stdout.splitlines()), r.stdout
    w = json.loads(qcomp.qosctl("--json", "windows").stdout)["windows"][0]
    assert w["reserve"] == "auto-%d" % win.pid and "cpu_percent" in w, w
    header = qcomp.qosctl("windows").stdout.splitlines()[0].split()
    assert header[:4] == ["ID", "CLASS", "RESERVE", "CPU%"], header
    qcomp.qosctl("set", str(win.id), "normal")
