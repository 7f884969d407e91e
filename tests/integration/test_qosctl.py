"""qosctl against a live compositor: windows (table and JSON), outputs,
focus, close and exec."""

import json
import os
import subprocess

import harness
from harness import wait_for

WINDOW_KEYS = {"id", "app_id", "title", "pid", "class", "focused", "geometry",
               "frame", "titlebar", "buttons"}
RECT_KEYS = {"x", "y", "width", "height"}


def test_windows_json_fields(qosway):
    assert qosway.windows() == []
    c, w = qosway.open_window("Fields", app_id="org.qosway.fields", width=320, height=240)
    assert WINDOW_KEYS <= set(w), "missing keys: %s" % (WINDOW_KEYS - set(w))
    assert isinstance(w["id"], int)
    assert w["app_id"] == "org.qosway.fields"
    assert w["pid"] == c.pid
    assert w["class"] == "normal"
    for key in ("geometry", "frame", "titlebar"):
        assert set(w[key]) >= RECT_KEYS, key
    for b in ("realtime", "idle", "pause", "close"):
        assert set(w["buttons"][b]) >= RECT_KEYS, b
        assert w["buttons"][b]["width"] > 0 and w["buttons"][b]["height"] > 0
    g, f, tb = w["geometry"], w["frame"], w["titlebar"]
    assert (g["width"], g["height"]) == (320, 240)
    # the frame contains the content and the titlebar
    for r in (g, tb):
        assert f["x"] <= r["x"] and r["x"] + r["width"] <= f["x"] + f["width"]
        assert f["y"] <= r["y"] and r["y"] + r["height"] <= f["y"] + f["height"]
    # the window is on the output
    o = qosway.outputs()[0]
    assert 0 <= g["x"] and g["x"] + g["width"] <= o["x"] + o["width"]
    assert 0 <= g["y"] and g["y"] + g["height"] <= o["y"] + o["height"]


def test_windows_table_lists_titles(qosway):
    _, w = qosway.open_window("Table Row")
    r = qosway.qosctl("windows")
    assert r.returncode == 0, r.stderr
    assert "Table Row" in r.stdout and str(w["id"]) in r.stdout
    # without -s it uses QOSWAY_SOCK
    r2 = qosway.qosctl("--json", "windows", use_env=True)
    assert r2.returncode == 0, r2.stderr
    data = json.loads(r2.stdout)
    assert "Table Row" in json.dumps(data)


def test_windows_table_never_prints_a_clients_escape_sequences(qosway):
    """A client picks its own title: `qosctl windows` shows control
    characters (C0, DEL and C1, such as CSI) as '?', so a title cannot
    retitle the terminal or write its clipboard.  --json keeps the title."""
    c = qosway.spawn_wlclient(title="Plain")
    c.wait_event("mapped")
    evil = "Evil\x1b]52;c;cHduZWQ=\x07 \x1b[2J \u009b31m\x7f end"
    c.send("title-hex " + evil.encode().hex())
    c.wait_event("title")
    wait_for(lambda: any(w.get("title") == evil for w in qosway.windows()),
             desc="the escape-laden title listed in JSON as it is")
    r = subprocess.run([harness.qosctl_bin(), "-s", qosway.sock, "windows"],
                       capture_output=True, timeout=15, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert b"Evil?]52;c;cHduZWQ=? ?[2J ?31m? end" in out, out
    assert not any(b < 0x20 and b != 0x0a for b in out), out
    assert b"\x7f" not in out and b"\xc2\x9b" not in out, out


def test_outputs(qosway):
    r = qosway.qosctl("outputs")
    assert r.returncode == 0 and "HEADLESS-1" in r.stdout, r.stdout + r.stderr
    outs = qosway.outputs()
    assert [o["name"] for o in outs] == ["HEADLESS-1"]
    o = outs[0]
    assert (o["width"], o["height"]) == harness.OUTPUT_MODE[:2]
    assert (o["x"], o["y"]) == (0, 0) and o["scale"] == 1


def test_focus_by_id(qosway):
    a, wa = qosway.open_window("Focus Me A")
    b, wb = qosway.open_window("Focus Me B")
    # the newest window (B) has focus; focus A, B, A
    for target, client in ((wa, a), (wb, b), (wa, a)):
        mark = client.mark()
        r = qosway.qosctl("focus", str(target["id"]))
        assert r.returncode == 0, r.stderr
        wait_for(lambda: qosway.find_window(lambda x: x["id"] == target["id"])["focused"],
                 desc="%s focused" % target["title"])
        others = [w for w in qosway.windows() if w["id"] != target["id"]]
        assert not any(w["focused"] for w in others)
        # the client is told it is activated (xdg_toplevel state 4)
        client.wait_event("configure", lambda d: 4 in d["states"], start=mark)


def test_focus_raises_window(qosway):
    _, wa = qosway.open_window("Raise A")
    qosway.open_window("Raise B")
    assert qosway.qosctl("focus", str(wa["id"])).returncode == 0
    # windows are listed bottom first: the focused one is on top
    wait_for(lambda: qosway.windows()[-1]["id"] == wa["id"], desc="A on top after focus")


def test_close_by_id(qosway):
    c, w = qosway.open_window("Close By Id")
    keep, _ = qosway.open_window("Keep Me")
    r = qosway.qosctl("close", str(w["id"]))
    assert r.returncode == 0, r.stderr
    c.wait_event("close")
    assert c.wait(10) == 0
    wait_for(lambda: [x["title"] for x in qosway.windows()] == ["Keep Me"],
             desc="only 'Keep Me' left")
    assert keep.alive()


def test_exec_runs_command_with_environment(qosway, tmp_path):
    out = tmp_path / "exec-env"
    r = qosway.qosctl("exec", "--", "sh", "-c", "env > %s" % out)
    assert r.returncode == 0, r.stderr
    text = wait_for(lambda: out.exists() and "QOSWAY_SOCK=" in out.read_text()
                    and out.read_text(), desc="exec'd command output")
    env = dict(l.split("=", 1) for l in text.splitlines() if "=" in l)
    assert env["WAYLAND_DISPLAY"] == qosway.wayland_display
    assert env["QOSWAY_SOCK"] == qosway.sock
    # exec of a real client maps a window
    r = qosway.qosctl("exec", "--", "weston-simple-shm")
    assert r.returncode == 0, r.stderr
    qosway.wait_window(lambda w: w["title"] == "simple-shm", timeout=15,
                       desc="exec'd weston-simple-shm window")


def test_exec_passes_names_and_arguments_that_are_not_utf8(qosway, tmp_path):
    """A program or argument in another encoding (a Latin-1 file name, say)
    cannot travel in a JSON string: qosctl sends exec's command words in
    base64 and the compositor starts the program with exactly those bytes."""
    prog = os.path.join(os.fsencode(tmp_path), b"caf\xe9.sh")
    out = os.path.join(os.fsencode(tmp_path), b"out")
    with open(prog, "wb") as fh:
        fh.write(b'#!/bin/sh\nprintf "%s|%s" "$0" "$1" > "$2.tmp" && mv "$2.tmp" "$2"\n')
    os.chmod(prog, 0o755)
    arg = b"\xff\xfe-x \xc3"  # no UTF-8 at all, a space, a cut sequence
    r = subprocess.run([os.fsencode(harness.qosctl_bin()), b"-s", os.fsencode(qosway.sock),
                        b"exec", b"--", prog, arg, out],
                       capture_output=True, timeout=15, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r
    assert int(r.stdout) > 0, r.stdout
    wait_for(lambda: os.path.exists(out), desc="the program's output")
    with open(out, "rb") as fh:
        assert fh.read() == prog + b"|" + arg
    # text arguments still travel as text
    r = qosway.qosctl("exec", "--", "sh", "-c", "printf x > %s" % (tmp_path / "plain"))
    assert r.returncode == 0, r.stderr
    wait_for(lambda: (tmp_path / "plain").exists(), desc="plain exec")


def test_ipc_socket_is_private(qosway):
    st = os.stat(qosway.sock)
    assert st.st_mode & 0o777 == 0o600, oct(st.st_mode)
    assert os.path.dirname(qosway.sock) == qosway.runtime_dir
