"""qosctl's QoS views: `subscribe` streams class changes and admission
results as JSON lines; `top` prints windows and reserves; `windows` has the
class, reserve and CPU columns."""

import json
import os
import subprocess
import threading
import unicodedata

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


def test_reserves_params_read_back_as_reserve_arguments(qcomp):
    """What `qosctl reserves` shows as a reserve's parameters is accepted by
    `qosctl reserve` and gives the same reserve (a reserve without a limit
    shows no period=0s, which no parser takes)."""
    given = {
        "rt-idle": ["policy=idle", "nice=5"],
        "rt-fifo": ["policy=fifo", "priority=20"],
        "rt-qos": ["policy=qos", "period=20ms", "slice=1.5ms", "fallback=other"],
        "rt-ceil": ["policy=other", "period=100ms", "cpu=12.5%", "fallback=pause",
                    "inherit=yes"],
        "rt-adapt": ["policy=qos", "period=vblank", "cpu=auto", "adapt=yes", "cpu-min=5%",
                     "cpu-max=40%", "idle-release=30"],
    }
    for name, params in given.items():
        r = qcomp.qosctl("reserve", name, *params)
        assert r.returncode == 0, r.stderr

    def shown():
        listing = json.loads(qcomp.qosctl("--json", "reserves").stdout)["reserves"]
        return {r["name"]: r["params"] for r in listing}

    first = shown()
    for name in given:
        r = qcomp.qosctl("reserve", name + "-copy", *first[name].split())
        assert r.returncode == 0, (first[name], r.stderr)
    again = shown()
    for name in given:
        assert again[name + "-copy"] == first[name], (name, first[name])
    assert "period" not in first["rt-idle"] and "priority" not in first["rt-idle"]
    assert "period=20ms slice=1500us fallback=other" in first["rt-qos"], first["rt-qos"]
    assert "slice=12500us" in first["rt-ceil"] and "inherit=yes" in first["rt-ceil"]
    assert "priority=20" in first["rt-fifo"] and "slice=45ms" in first["rt-fifo"]
    assert ("period=vblank slice=6667us" in first["rt-adapt"] and "cpu=auto adapt=yes cpu-min=5% "
            "cpu-max=40% idle-release=30" in first["rt-adapt"]), first["rt-adapt"]
    # Refused with the key named, and nothing made.
    r = qcomp.qosctl("reserve", "rt-bad", "policy=idle", "period=20ms", "cpu=auto")
    assert r.returncode != 0 and "cpu=auto does not apply to policy idle" in r.stderr, r.stderr
    assert "rt-bad" not in shown()


def test_reserve_name_with_spaces(qcomp):
    """Names may hold spaces (and quotes): qosctl defines such a reserve
    with its parameters, as a qosrc line `reserve "video player" ...` does."""
    name = 'video player "hd"'
    r = qcomp.qosctl("reserve", name, "policy=other", "nice=4")
    assert r.returncode == 0, r.stdout + r.stderr
    listing = json.loads(qcomp.qosctl("--json", "reserves").stdout)["reserves"]
    mine = [x for x in listing if x["name"] == name]
    assert mine and "nice=4" in mine[0]["params"], listing


def test_reload_redefines_reserves_still_as_qosrc_made_them(qcomp):
    """Editing a qosrc reserve and reloading changes the live reserve (its
    member's nice follows); a reserve changed at run time (qosctl reserve)
    keeps that change over a reload."""
    def reload(text):
        harness.write_user_qosrc(qcomp, text)
        r = qcomp.qosctl("--json", "reload")
        assert r.returncode == 0, r.stdout + r.stderr

    def params(name):
        listing = json.loads(qcomp.qosctl("--json", "reserves").stdout)["reserves"]
        return next(x["params"] for x in listing if x["name"] == name)

    reload("reserve bg policy=other nice=3\n")
    p = subprocess.Popen(["sleep", "30"])
    try:
        r = qcomp.qosctl("join", "pid:%d" % p.pid, "bg")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "nice=3" in params("bg") and os.getpriority(os.PRIO_PROCESS, p.pid) == 3
        reload("reserve bg policy=other nice=8\n")
        assert "nice=8" in params("bg") and os.getpriority(os.PRIO_PROCESS, p.pid) == 8
        r = qcomp.qosctl("reserve", "bg", "policy=other", "nice=1")
        assert r.returncode == 0, r.stdout + r.stderr
        reload("reserve bg policy=other nice=10\n")
        assert "nice=1" in params("bg") and os.getpriority(os.PRIO_PROCESS, p.pid) == 1
    finally:
        p.kill()
        p.wait()


def test_reserves_table_cuts_long_names_at_a_character(qcomp):
    """The name column is 20 characters, not bytes: a long name of
    two-byte characters is cut between characters and the columns after it
    stay where the header puts them."""
    name = "vid\u00e9o-" + "\u00e9" * 25  # 57 bytes, 31 characters
    r = qcomp.qosctl("reserve", name, "policy=idle")
    assert r.returncode == 0, r.stderr
    r = subprocess.run([harness.qosctl_bin(), "-s", qcomp.sock, "reserves"],
                       capture_output=True, timeout=15, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.decode("utf-8").splitlines()  # cut mid-character, this would raise
    header = lines[0]
    row = next(line for line in lines if line.startswith("vid\u00e9o-"))
    assert row[:20] == name[:20] and row[20] == " ", row
    assert header[21:29].strip() == "POLICY" and row[21:29].strip() == "idle", (header, row)


def columns(text):
    """Terminal columns of text: East Asian wide and fullwidth characters
    take two, combining marks none."""
    return sum(0 if unicodedata.combining(c) else
               2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def test_reserves_table_counts_wide_characters_as_two_columns(qcomp):
    """A terminal shows a CJK character in two columns and a combining
    accent in none: the name column is cut and padded by those widths, so
    the POLICY column of such a row stays under its header."""
    name = "e\u0301\u89c6\u9891-" + "\u4e2d" * 15  # 55 bytes, 36 columns
    r = qcomp.qosctl("reserve", name, "policy=idle")
    assert r.returncode == 0, r.stderr
    r = subprocess.run([harness.qosctl_bin(), "-s", qcomp.sock, "reserves"],
                       capture_output=True, timeout=15, stdin=subprocess.DEVNULL,
                       env=dict(os.environ, LC_ALL="C"))  # the widths need no user locale
    assert r.returncode == 0, r.stderr
    lines = r.stdout.decode("utf-8").splitlines()
    header = lines[0]
    row = next(line for line in lines if line.startswith("e\u0301\u89c6"))
    shown_name = row.split(" ")[0]
    # a 20-column cell: 6 columns, 7 wide characters, and one space for the
    # eighth, which would cross the edge
    assert shown_name == "e\u0301\u89c6\u9891-" + "\u4e2d" * 7, row
    policy_at = columns(row[:row.index(" idle ") + 1])
    assert policy_at == header.index("POLICY") == 21, (header, row)
