"""Per-window QoS: a paused client survives 60 s paused while the
virtual pointer moves over it continuously (20 Hz) and a border resize is
attempted: it stays connected (the compositor sends it nothing that could
fill its socket buffer), and after unpausing it answers a ping and its
content is unchanged in a screenshot."""

import os
import subprocess
import time

import harness
from harness import wait_for
import pixels
from test_qos_buttons import (  # noqa: F401  (fixtures)
    Win, click_button, park_outside, qcomp, no_frozen_leftovers)
from vinput import VirtualInput

PAUSE_SECONDS = 60
MOTION_HZ = 20


def socket_recv_q(pid):
    """Bytes queued for reading on pid's unix sockets (its Wayland
    connection), from `ss -x`; None if ss cannot tell."""
    inodes = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            t = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if t.startswith("socket:["):
            inodes.add(t[8:-1])
    try:
        out = subprocess.run(["ss", "-x", "-n", "-a"], capture_output=True, text=True,
                             timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    total = None
    for line in out.splitlines()[1:]:
        f = line.split()
        if len(f) >= 6 and f[5] in inodes:
            total = (total or 0) + int(f[2])
    return total


def test_paused_client_survives_pointer_motion_and_resize(qcomp):
    win = Win(qcomp, "Long Pause", color="3366cc")
    w0 = win.w()
    g0 = w0["geometry"]
    f0 = w0["frame"]
    with VirtualInput(qcomp.client_env(), keyboard=False) as vi:
        park_outside(vi, win)

        def content_solid(img):
            n = pixels.count_near(img, g0, win.rgb(), tol=2)
            want = g0["width"] * g0["height"]
            return None if n == want else "content not yet solid: %s" % pixels.describe(img, g0)
        before = qcomp.wait_screenshot(content_solid, name="before")

        click_button(vi, win, "pause", outside=True)
        win.wait_class("paused")
        wait_for(lambda: harness.cgroup2_frozen(win.pid) == 1, desc="frozen")
        mark = win.client.mark()
        recvq = [socket_recv_q(win.pid)]
        t0 = time.monotonic()
        step = 1.0 / MOTION_HZ
        resized = False
        moves = 0
        next_check = t0 + 5
        # a path over the content (and the borders) of the window
        pts = []
        for i in range(40):
            pts.append((g0["x"] + 5 + (g0["width"] - 10) * i / 39,
                        g0["y"] + 5 + (g0["height"] - 10) * ((i * 7) % 40) / 39))
        while time.monotonic() - t0 < PAUSE_SECONDS:
            now = time.monotonic()
            if not resized and now - t0 > 5:
                # the right border, dragged outwards
                bx = (g0["x"] + g0["width"] + f0["x"] + f0["width"]) // 2
                by = g0["y"] + g0["height"] // 2
                vi.drag((bx, by), (bx + 120, by + 40), steps=12)
                resized = True
                print("resize attempted at %.1f s; window now %r" % (
                    now - t0, win.w()["geometry"]))
            vi.move(*pts[moves % len(pts)])
            moves += 1
            if now >= next_check:
                next_check = now + 5
                assert qcomp.alive(), "qosway died while a client was paused"
                assert win.client.alive(), "the paused client died: %s" % (
                    win.client.lines[-5:],)
                assert harness.cgroup2_frozen(win.pid) == 1, "client thawed while paused"
                assert win.w()["class"] == "paused"
                recvq.append(socket_recv_q(win.pid))
            time.sleep(max(0.0, step - (time.monotonic() - now)))
        elapsed = time.monotonic() - t0
        print("%d pointer motions over %.1f s while paused" % (moves, elapsed))
        assert moves >= PAUSE_SECONDS * MOTION_HZ * 0.5, "too few motions: %d" % moves
        recvq.append(socket_recv_q(win.pid))
        print("bytes queued on the paused client's socket, every 5 s: %r" % recvq)
        if None not in recvq:
            # nothing that could fill its 4 KiB buffer: no motion, enter,
            # frame callbacks, configures or pings piled up
            assert max(recvq) < 4096, "events pile up for the paused client: %r" % recvq
        assert resized
        assert win.client.alive()
        w_paused = win.w()
        print("geometry after the resize attempt while paused: %r" % w_paused["geometry"])

        click_button(vi, win, "pause", outside=True)
        win.wait_class("normal")
        wait_for(lambda: harness.cgroup2_frozen(win.pid) in (0, None), desc="thawed")

        # it is still connected and answers a ping
        pmark = win.client.mark()
        r = qcomp.qosctl("raw", '{"command":"ping","id":%d}' % win.id)
        assert r.returncode == 0, r.stdout + r.stderr
        win.client.wait_event("ping", start=pmark, timeout=10)
        got = [line.split(" ", 1)[0] for line in win.client.lines[mark:]]
        print("client events after the pause: %r" % got)
        assert "disconnected" not in got, win.client.lines[mark:]
        assert win.client.alive()

        # content unchanged: the content rect it had before pausing shows the
        # same pixels (a held resize may have made the window bigger)
        def unchanged(img):
            n = pixels.diff_count(before, img, g0, tol=2)
            return None if n == 0 else "%d px of the content differ from before pausing; %s" % (
                n, pixels.describe(img, g0))
        qcomp.wait_screenshot(unchanged, name="after")
    assert win.client.alive()


def test_a_second_compositor_leaves_the_firsts_paused_client_frozen(start_qosway):
    """Two sessions of one user: the second one's start-up reconcile looks
    for groups a dead instance left, and its clean exit gives its own back;
    neither may take a live session's groups for its own."""
    first = start_qosway(config=harness.qos_test_config())
    c, win = first.open_window("Paused First")
    r = first.qosctl("set", str(win["id"]), "paused")
    assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: harness.cgroup2_frozen(c.pid) == 1, desc="frozen")
    second = start_qosway(config=harness.qos_test_config())
    c2, _ = second.open_window("Second Session")
    time.sleep(1.5)  # past the second manager's first housekeeping pass
    assert harness.cgroup2_frozen(c.pid) == 1, "the second compositor thawed the first's client"
    print(sorted(os.listdir("/sys/fs/cgroup/unified")))
    second.terminate()  # its clean exit gives back only what it placed
    assert harness.cgroup2_frozen(c.pid) == 1, "the second compositor's exit thawed the first's client"
    assert first.window_by_title("Paused First")["class"] == "paused"
    r = first.qosctl("set", str(win["id"]), "normal")
    assert r.returncode == 0, r.stdout + r.stderr
    # sent home (the top here, which cannot be frozen) by its own session
    wait_for(lambda: harness.cgroup2_frozen(c.pid) in (0, None), desc="thawed")
