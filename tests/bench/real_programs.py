#!/usr/bin/env python3
"""Real programs under load: does the real-time button help the programs
users click it on?

On a machine kept busy by CPU-bound loops (4 by default, each in a session
of its own), three real programs play for --seconds:

  mpv      mpv with software decoding on Wayland (`--vo=wlshm --hwdec=no`)
           playing a 1280x720 30 fps H.264 clip (ffmpeg testsrc2 + noise)
  mpv-x11  the same clip through Xwayland (`--vo=x11`)
  gtk      gtk_frames.py: a GTK 3 animation redrawing a 1280x720 window every
           frame with cairo, recording its GdkFrameClock's frame times

each in five setups measured in the same run:

  qosway       qosway, nothing clicked
  qosway-rt    qosway, the real-time button (`qosctl set ID realtime`)
  qosway-fifo  qosway, Shift+real-time (`qosctl set ID fifo`)
  qosway-cgroup  qosway, the program by hand in a cgroup of CPU weight
               10000 and a limit of --cgroup-cpu of each 16.7 ms (cpu.weight
               and cpu.max on cgroup v2, cpu.shares and the CFS quota on
               v1): one budget all its threads share, the mechanism
               weighed against the button's divided deadline slice
  sway         sway 1.7, nothing done
  sway-chrt    sway 1.7, `chrt -a -f -p 10 PID` on the program

The count is of frames lost: for mpv the frames it dropped (at the video
output and in the decoder, its own `frame-drop-count` and
`decoder-frame-drop-count`, read over its JSON IPC at the end of the clip);
for gtk the refresh periods its frame clock skipped. The table shows them
beside the anchor numbers for mpv. Goal: after the real-time button a
program loses at most 1% of its frames and never more than with no button
or on sway with `chrt -f`.

A benchmark, not a test: it exits 0 whenever it produced numbers. See
tests/bench/README.md.
"""

import argparse
import fcntl
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
import peers  # noqa: E402
from peers import RunFailed, SkipCompositor, tail  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
GTK_SCRIPT = os.path.join(HERE, "gtk_frames.py")
SYSTEM_PYTHON = "/usr/bin/python3"
X11_SOCKET_DIR = "/tmp/.X11-unix"

PROGRAMS = {
    "mpv": "mpv --vo=wlshm --hwdec=no (Wayland)",
    "mpv-x11": "mpv --vo=x11 --hwdec=no (Xwayland)",
    "gtk": "GTK 3 cairo animation (gtk_frames.py)",
}
SETUPS = {
    "qosway": "qosway, no button",
    "qosway-rt": "qosway, real-time button",
    "qosway-fifo": "qosway, Shift+real-time (fifo)",
    "qosway-cgroup": "qosway, cgroup weight + limit",
    "sway": "sway 1.7, nothing",
    "sway-chrt": "sway 1.7, chrt -a -f -p 10",
}
# Frames mpv dropped of 480 (16 s at 30 fps) on this machine with 4 busy
# loops, before any per-thread split of a reserve existed.
ANCHOR = {"mpv": {"qosway": 0, "qosway-rt": 285, "qosway-fifo": 0, "sway": 24,
                  "sway-chrt": 0}}
ANCHOR_TOTAL = {"mpv": 480}
GOAL = ("after the real-time button: <= 1% of frames lost, and never more than "
        "with no button or on sway + chrt -f")
GOAL_SHARE = 0.01
CLIP_FPS = 30
CLIP_SIZE = (1280, 720)
# Noise makes each frame costly to decode: about 6 ms a frame on this
# machine, 10 Mbit/s.
CLIP_FILTER = "testsrc2=size={w}x{h}:rate={fps},noise=alls=16:allf=t+u"
POLICIES = {0: "other", 1: "fifo", 2: "rr", 3: "batch", 5: "idle", 6: "deadline"}


# -- the clip -------------------------------------------------------------------

def prepare_clip(cache_dir, seconds):
    """The H.264 clip, made once with ffmpeg and kept in cache_dir (readable
    by nobody, who plays it under sway); (path, None) or (None, why)."""
    w, h = CLIP_SIZE
    name = f"clip-{w}x{h}-{CLIP_FPS}fps-{seconds:g}s-noise16.mp4"
    path = os.path.join(cache_dir, name)
    if os.path.isfile(path):
        return path, None
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        return None, f"ffmpeg is not installed and {path} is not cached"
    os.makedirs(cache_dir, exist_ok=True)
    os.chmod(cache_dir, 0o755)
    fd, part = tempfile.mkstemp(prefix=name + ".", suffix=".part.mp4", dir=cache_dir)
    os.close(fd)
    peers.on_cleanup(lambda: os.path.exists(part) and os.unlink(part))
    print(f"making the clip {path} with ffmpeg (once; about a minute)", flush=True)
    argv = [ffmpeg, "-nostdin", "-hide_banner", "-loglevel", "error", "-y",
            "-f", "lavfi", "-i", CLIP_FILTER.format(w=w, h=h, fps=CLIP_FPS),
            "-t", f"{seconds:g}", "-c:v", "libx264", "-preset", "fast",
            "-pix_fmt", "yuv420p", "-g", "60", "-f", "mp4", part]
    r = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        return None, f"ffmpeg failed ({r.returncode}): {r.stderr.strip()[-400:]}"
    os.chmod(part, 0o644)
    os.rename(part, path)
    return path, None


# -- compositors ----------------------------------------------------------------

class Sway(peers.Sway):
    """sway 1.7 floating every window at its own size (tiling would make
    the programs scale their frames to the whole output) with Xwayland."""

    def __init__(self, start_timeout):
        super().__init__(start_timeout)
        self.ipc_sock = None

    def prepare(self):
        super().prepare()
        with open(self.config, "a") as f:
            f.write("for_window [all] floating enable\nxwayland enable\n")

    def ready(self):
        socks = [s for s in os.listdir(self.rundir) if s.startswith("sway-ipc.")]
        if not socks:
            return False
        self.ipc_sock = os.path.join(self.rundir, socks[0])
        return True

    def swaymsg(self, *args):
        return subprocess.run(["swaymsg", "-s", self.ipc_sock] + list(args),
                              capture_output=True, text=True, timeout=15,
                              stdin=subprocess.DEVNULL)

    def run_detached(self, script):
        r = self.swaymsg("exec", script)
        if r.returncode != 0:
            raise RunFailed(f"swaymsg exec failed: {(r.stderr or r.stdout).strip()}")

    def window_of(self, pid):
        r = self.swaymsg("-t", "get_tree", "--raw")
        if r.returncode != 0:
            return None
        stack = [json.loads(r.stdout)]
        while stack:
            node = stack.pop()
            if node.get("pid") == pid and node.get("type") in ("con", "floating_con"):
                return node
            stack.extend(node.get("nodes", []) + node.get("floating_nodes", []))
        return None


class Qosway(peers.Qosway):
    def run_detached(self, script):
        self.qosctl_ok("exec", "--", script)

    def window_of(self, pid):
        reply, _ = self.query("windows")
        for w in (reply or {}).get("windows", []):
            if w.get("pid") == pid:
                return w
        return None


def make_compositor(setup, args):
    if setup.startswith("qosway"):
        return Qosway(args.qosway, args.start_timeout, qosctl=args.qosctl)
    return Sway(args.start_timeout)


def x_display(comp):
    """DISPLAY as the compositor's children see it (its Xwayland); a
    compositor without one leaves it unset."""
    out = os.path.join(comp.rundir, "display")
    script = os.path.join(comp.rundir, "print-display")
    with open(script, "w") as f:
        f.write(f'#!/bin/sh\nprintf %s "${{DISPLAY-}}" > {out}.tmp && mv {out}.tmp {out}\n')
    os.chmod(script, 0o755)
    comp.run_detached(script)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if os.path.exists(out):
            with open(out) as f:
                display = f.read()
            if not display:
                raise RunFailed(f"{comp.name} gives its children no DISPLAY (no Xwayland); "
                                f"log tail:\n{tail(comp.log)}")
            return display
        time.sleep(0.1)
    raise RunFailed(f"{comp.name} did not run the program printing DISPLAY")


def xwayland_pids(display):
    """Xwayland processes serving display (wlroots double-forks them)."""
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if os.path.basename(argv[0]) == b"Xwayland" and argv[1:2] == [display.encode()]:
            pids.append(int(pid))
    return pids


def kill_xwayland(display):
    for pid in xwayland_pids(display):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def check_x11_socket_dir():
    """wlroots refuses /tmp/.X11-unix unless root or the compositor's user
    owns it; tmpfiles makes it root's, mode 1777, on a system with X. None
    when Xwayland can use it, else why not."""
    try:
        st = os.stat(X11_SOCKET_DIR)
    except FileNotFoundError:
        if os.geteuid() == 0:
            os.mkdir(X11_SOCKET_DIR)
            os.chmod(X11_SOCKET_DIR, 0o1777)
        return None
    if st.st_uid not in (0, os.geteuid()):
        return (f"{X11_SOCKET_DIR} belongs to uid {st.st_uid}, so wlroots refuses it for "
                f"qosway; as root: chown root:root {X11_SOCKET_DIR} && "
                f"chmod 1777 {X11_SOCKET_DIR}")
    return None


# -- mpv's JSON IPC --------------------------------------------------------------

class MpvIpc:
    def __init__(self, path, timeout=10.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.buf = b""
        self.next_id = 1

    def command(self, *cmd):
        """(data, error) of one command; events in between are skipped."""
        rid = self.next_id
        self.next_id += 1
        self.sock.sendall(json.dumps({"command": list(cmd), "request_id": rid}).encode() + b"\n")
        while True:
            while b"\n" not in self.buf:
                try:
                    data = self.sock.recv(65536)
                except socket.timeout:
                    raise RunFailed(f"mpv did not answer {cmd[0]} over its IPC")
                if not data:
                    raise RunFailed("mpv closed its IPC socket")
                self.buf += data
            line, self.buf = self.buf.split(b"\n", 1)
            msg = json.loads(line)
            if msg.get("request_id") == rid:
                return msg.get("data"), (None if msg.get("error") == "success"
                                         else msg.get("error"))

    def get(self, name):
        data, err = self.command("get_property", name)
        return None if err else data

    def close(self):
        self.sock.close()


# -- one measurement -------------------------------------------------------------

CGROUP_PERIOD_US = 16667


class CpuGroup:
    """A cgroup of high CPU weight with a CPU limit, holding a process and
    its threads; moved back out and removed at cleanup."""

    def __init__(self, weight, period_us, quota_us):
        v1 = "/sys/fs/cgroup/cpu"
        self.v2 = not os.path.exists(os.path.join(v1, "cpu.shares"))
        self.base = "/sys/fs/cgroup" if self.v2 else v1
        self.dir = os.path.join(self.base, "qosbench-cpu-%d" % os.getpid())
        self.settings = {}
        try:
            os.mkdir(self.dir)
        except OSError as e:
            raise RunFailed(f"cannot create {self.dir}: {e}")
        self.undo = peers.on_cleanup(self.remove)
        if self.v2:
            self.put("cpu.weight", weight)
            self.put("cpu.max", f"{quota_us} {period_us}")
        else:
            self.put("cpu.shares", weight * 1024 // 100)
            self.put("cpu.cfs_period_us", period_us)
            self.put("cpu.cfs_quota_us", quota_us)

    def put(self, name, value):
        try:
            with open(os.path.join(self.dir, name), "w") as f:
                f.write(str(value))
        except OSError as e:
            raise RunFailed(f"cannot set {name} of {self.dir} to {value}: {e}")
        self.settings[name] = value

    def add(self, pid):
        self.put("cgroup.procs", pid)

    def describe(self):
        return " ".join(f"{k}={v}" for k, v in self.settings.items() if k != "cgroup.procs")

    def remove(self):
        try:
            with open(os.path.join(self.dir, "cgroup.procs")) as f:
                pids = f.read().split()
        except OSError:
            pids = []
        for pid in pids:
            try:
                with open(os.path.join(self.base, "cgroup.procs"), "w") as f:
                    f.write(pid)
            except OSError:
                pass
        for _ in range(50):
            try:
                os.rmdir(self.dir)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.05)
        peers.forget_cleanup(self.undo)


def thread_policies(pid):
    """{policy: number of threads} of pid right now."""
    counts = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return counts
    for tid in tids:
        try:
            pol = POLICIES.get(os.sched_getscheduler(int(tid)) & ~0x40000000, "?")
        except OSError:
            continue
        counts[pol] = counts.get(pol, 0) + 1
    return counts


def start_hogs(n):
    return [peers.spawn(["sh", "-c", "while :; do :; done"], stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL) for _ in range(n)]


def program_command(program, args, ctx):
    if program == "gtk":
        return [SYSTEM_PYTHON, GTK_SCRIPT, "--seconds", f"{args.seconds:g}",
                "--shapes", str(args.gtk_shapes), "--width", str(args.gtk_width),
                "--height", str(args.gtk_height), "--title", "gtk-frames"]
    vo = "x11" if program == "mpv-x11" else "wlshm"
    return [args.mpv, "--no-config", f"--vo={vo}", "--hwdec=no", "--no-audio", "--pause",
            "--keep-open=yes", "--osc=no", "--really-quiet", "--title=mpv-bench",
            f"--input-ipc-server={ctx['ipc']}", ctx["clip"]]


def program_env(program, comp, ctx):
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": ctx["home"],
        "XDG_RUNTIME_DIR": comp.rundir,
        "LANG": "C.UTF-8",
    }
    if program == "mpv-x11":
        env["DISPLAY"] = ctx["display"]
    else:
        env["WAYLAND_DISPLAY"] = comp.display
    if program == "gtk":
        env.update({"GDK_BACKEND": "wayland", "NO_AT_BRIDGE": "1", "GTK_A11Y": "none"})
    return env


def wait_until(what, check, timeout, proc, describe):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if proc.poll() is not None:
            raise RunFailed(f"the program exited ({proc.returncode}) before {what}; "
                            f"stderr:\n{describe()}")
        if time.monotonic() > deadline:
            raise RunFailed(f"no {what} after {timeout:g} s; stderr:\n{describe()}")
        time.sleep(0.1)


def apply_setup(setup, comp, proc, window, args, groups):
    """Clicks the button (qosctl), runs chrt or puts the program in a
    cgroup (appended to groups); what became of it."""
    info = {}
    if setup in ("qosway-rt", "qosway-fifo"):
        cls = "realtime" if setup == "qosway-rt" else "fifo"
        r = comp.qosctl("set", str(window["id"]), cls)
        time.sleep(0.3)
        w = comp.window_of(proc.pid) or {}
        info.update({"class": w.get("class"), "reserve": w.get("reserve"),
                     "title": w.get("title")})
        # A refusal is what the user gets after the click: the program plays
        # on as the compositor left it, and the run says so.
        if r.returncode != 0:
            info["refused"] = (r.stderr or r.stdout).strip()
        elif w.get("class") != cls:
            info["refused"] = f"asked {cls}, window class is {w.get('class')}"
    elif setup == "qosway-cgroup":
        group = CpuGroup(args.cgroup_weight, CGROUP_PERIOD_US,
                         CGROUP_PERIOD_US * args.cgroup_cpu // 100)
        groups.append(group)
        group.add(proc.pid)
        info["cgroup"] = group.describe()
    elif setup == "sway-chrt":
        r = subprocess.run(["chrt", "-a", "-f", "-p", str(args.fifo_priority), str(proc.pid)],
                           capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            raise SkipCompositor(f"chrt failed ({r.returncode}): {r.stderr.strip()}")
    info["policies_before"] = thread_policies(proc.pid)
    w = comp.window_of(proc.pid) or window
    geom = w.get("geometry") or w.get("window_rect") or {}
    info["window_size"] = f"{geom.get('width')}x{geom.get('height')}"
    return info


class Subscription:
    """`qosctl subscribe` in the background: its JSON lines with the time
    (seconds on the monotonic clock) each arrived."""

    def __init__(self, comp):
        self.lines = []
        argv = [comp.qosctl_bin, "-s", comp.ipc_sock, "subscribe"]
        self.proc = peers.spawn(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                stdin=subprocess.DEVNULL, text=True)
        self.thread = threading.Thread(target=self.read, daemon=True)
        self.thread.start()

    def read(self):
        for line in self.proc.stdout:
            line = line.strip()
            if line.startswith("{"):
                try:
                    self.lines.append((time.monotonic(), json.loads(line)))
                except ValueError:
                    pass

    def close(self):
        if self.proc is not None:
            peers.stop_group(self.proc)
            self.proc = None
            self.thread.join(timeout=2)


def trace_until_eof(ipc, comp, sub, limit, proc, describe, t0):
    """Waits for the end of the clip like wait_until, recording every 100 ms
    mpv's drop counts and, on qosway, the program's reserve and the QoS
    events (sub, from before the click): where in the run the frames are
    lost, and what the reserve did."""
    samples, reserves = [], []
    deadline = time.monotonic() + limit
    n = 0
    while True:
        if proc.poll() is not None:
            raise RunFailed(f"the program exited ({proc.returncode}) before the end of "
                            f"the clip; stderr:\n{describe()}")
        if ipc.get("eof-reached"):
            break
        if time.monotonic() > deadline:
            raise RunFailed(f"no end of the clip within {limit:g} s")
        now = time.monotonic() - t0
        samples.append([round(now, 3), ipc.get("frame-drop-count") or 0,
                        ipc.get("decoder-frame-drop-count") or 0,
                        ipc.get("vo-delayed-frame-count") or 0])
        if sub is not None and n % 5 == 0:
            reply, _ = comp.query("reserves")
            for r in (reply or {}).get("reserves", []):
                if str(r.get("name", "")).startswith("auto-"):
                    reserves.append([round(now, 3), r])
        n += 1
        time.sleep(0.1)
    events = [[round(t - t0, 3), e] for t, e in (list(sub.lines) if sub else [])]
    return {"samples": samples, "reserves": reserves, "events": events}


def measure(program, setup, args, ctx, logdir, tag):
    comp = make_compositor(setup, args)
    comp.check()
    comp.start(logdir, tag)
    hogs, proc, display, ipc, undo_x, sub = [], None, None, None, None, None
    groups = []
    err_path = os.path.join(logdir, f"{tag}.program.err")

    def describe():
        return tail(err_path)
    try:
        home = peers.make_temp_dir("qosbench-home-")
        os.chmod(home, 0o755)
        as_nobody = comp.drops_root and os.geteuid() == 0
        if as_nobody:
            os.chown(home, peers.NOBODY, peers.NOBODY)
        pctx = dict(ctx, home=home, ipc=os.path.join(home, "mpv.sock"))
        if program == "mpv-x11":
            display = x_display(comp)
            pctx["display"] = display
            # Xwayland is double-forked; this finds it even after a Ctrl-C.
            undo_x = peers.on_cleanup(lambda: kill_xwayland(display))
        argv = program_command(program, args, pctx)
        if as_nobody:
            # The program runs as the compositor's user, as on a desktop.
            argv = ["setpriv", f"--reuid={peers.NOBODY}", f"--regid={peers.NOBODY}",
                    "--clear-groups"] + argv
        hogs = start_hogs(args.hogs)
        with open(err_path, "w") as err:
            proc = peers.spawn(argv, env=program_env(program, comp, pctx), cwd=home,
                               stdout=subprocess.PIPE, stderr=err, text=True)
        window = wait_until("window", lambda: comp.window_of(proc.pid), args.start_timeout * 2,
                            proc, describe)
        if program.startswith("mpv"):
            wait_until("IPC socket", lambda: os.path.exists(pctx["ipc"]), args.start_timeout,
                       proc, describe)
            ipc = MpvIpc(pctx["ipc"])
            wait_until("video output", lambda: ipc.get("vo-configured"), args.start_timeout,
                       proc, describe)
        else:
            # Its first frames are drawn and its signal handlers set up.
            time.sleep(1.0)
        if args.trace and isinstance(comp, Qosway):
            sub = Subscription(comp)
        info = apply_setup(setup, comp, proc, window, args, groups)

        prog0 = peers.proc_runtime_s(proc.pid)
        comp0 = peers.proc_runtime_s(comp.proc.pid)
        busy0, total0 = peers.machine_busy_ticks()
        t0 = time.monotonic()
        if ipc:
            _, why = ipc.command("set_property", "pause", False)
            if why:
                raise RunFailed(f"mpv refused to unpause: {why}")
        else:
            proc.send_signal(signal.SIGUSR1)
        time.sleep(1.0)
        info["policies_playing"] = thread_policies(proc.pid)
        limit = 4 * args.seconds + 30
        if ipc:
            if args.trace:
                result_trace = trace_until_eof(ipc, comp, sub, limit, proc, describe, t0)
            else:
                wait_until("end of the clip", lambda: ipc.get("eof-reached"), limit, proc,
                           describe)
            t1 = time.monotonic()
            counts = {k: ipc.get(k) for k in (
                "frame-drop-count", "decoder-frame-drop-count", "vo-delayed-frame-count",
                "estimated-frame-count", "estimated-frame-number")}
            prog1 = peers.proc_runtime_s(proc.pid)
            vo_drops = counts["frame-drop-count"] or 0
            dec_drops = counts["decoder-frame-drop-count"] or 0
            result = {"lost": vo_drops + dec_drops, "vo_dropped": vo_drops,
                      "decoder_dropped": dec_drops,
                      "late": counts["vo-delayed-frame-count"],
                      "total": counts["estimated-frame-count"]
                      or int(round(args.seconds * CLIP_FPS)),
                      "elapsed_s": t1 - t0, "worst_gap_ms": None}
            if args.trace:
                result["trace"] = result_trace
        else:
            try:
                out, _ = proc.communicate(timeout=limit)
            except subprocess.TimeoutExpired:
                raise RunFailed(f"the GTK program did not end within {limit:g} s")
            t1 = time.monotonic()
            prog1 = None
            lines = [ln for ln in (out or "").splitlines() if ln.startswith("{")]
            if not lines:
                raise RunFailed(f"the GTK program printed no statistics "
                                f"(status {proc.returncode}); stderr:\n{describe()}")
            rep = json.loads(lines[-1])
            result = {"lost": rep["lost"], "late": rep["late"], "total": rep["expected"],
                      "frames": rep["frames"], "elapsed_s": t1 - t0,
                      "worst_gap_ms": rep["worst_gap_ms"], "draw_ms_mean": rep["draw_ms_mean"],
                      "program_cpu_s": rep["cpu_s"]}
        comp1 = peers.proc_runtime_s(comp.proc.pid)
        busy1, total1 = peers.machine_busy_ticks()
        if comp.proc.poll() is not None:
            raise SkipCompositor(f"{comp.name} died during the run; log tail:\n{tail(comp.log)}")
        if prog1 is not None:
            result["program_cpu_s"] = prog1 - prog0
        result.update(info)
        result.update({"compositor_cpu_s": comp1 - comp0,
                       "machine_busy": (busy1 - busy0) / max(total1 - total0, 1)})
        return result
    finally:
        if sub is not None:
            sub.close()
        if ipc:
            ipc.close()
        if proc is not None:
            peers.stop_group(proc)
        for g in groups:
            g.remove()
        for h in hogs:
            peers.stop_group(h)
        comp.stop()
        if display:
            kill_xwayland(display)
            peers.forget_cleanup(undo_x)


# -- summary and output ----------------------------------------------------------

def summarise(results, programs, setups):
    summary = {}
    for prog in programs:
        summary[prog] = {}
        for s in setups:
            runs = results[prog][s]
            if not runs:
                continue
            summary[prog][s] = {
                "runs": len(runs),
                "lost": [r["lost"] for r in runs],
                "lost_median": statistics.median(r["lost"] for r in runs),
                "total": runs[0]["total"],
                "late_median": statistics.median(r["late"] or 0 for r in runs),
                "elapsed_s": statistics.median(r["elapsed_s"] for r in runs),
                "program_cpu_s": statistics.median(r.get("program_cpu_s") or 0 for r in runs),
                "compositor_cpu_s": statistics.median(r["compositor_cpu_s"] for r in runs),
                "machine_busy": statistics.median(r["machine_busy"] for r in runs),
                "refused": sum(1 for r in runs if r.get("refused")),
            }
    return summary


def cell(x):
    if x is None:
        return "-"
    lost = ", ".join(str(v) for v in x["lost"])
    med = x["lost_median"]
    med = f"{med:g}"
    refused = f", {x['refused']} refused" if x.get("refused") else ""
    return f"{med} of {x['total']}" + (f" ({lost}{refused})" if x["runs"] > 1 or refused
                                       else "")


def format_table(summary, programs, setups):
    head = ["setup"]
    for prog in programs:
        head.append(f"{prog}: lost")
        if prog in ANCHOR:
            head.append(f"{prog} anchor")
    rows = []
    for s in setups:
        row = [SETUPS[s]]
        for prog in programs:
            row.append(cell(summary[prog].get(s)))
            if prog in ANCHOR:
                a = ANCHOR[prog].get(s)
                row.append("-" if a is None else f"{a} of {ANCHOR_TOTAL[prog]}")
        rows.append(row)
    lost = peers.format_rows(head, rows)

    head = ["setup"] + [f"{p}: late / wall s / own CPU s / comp CPU s" for p in programs]
    rows = []
    for s in setups:
        row = [s]
        for prog in programs:
            x = summary[prog].get(s)
            row.append("-" if x is None else
                       f"{x['late_median']:g} / {x['elapsed_s']:.1f} / "
                       f"{x['program_cpu_s']:.1f} / {x['compositor_cpu_s']:.1f}")
        rows.append(row)
    return lost, peers.format_rows(head, rows)


def verdict(summary, programs):
    parts = []
    for prog in programs:
        s = summary[prog]
        rt = s.get("qosway-rt")
        if rt is None:
            parts.append(f"{prog}: not evaluated (no qosway-rt result)")
            continue
        worst = max(rt["lost"])
        ok = worst <= GOAL_SHARE * rt["total"]
        why = [f"worst {worst} of {rt['total']} ({'ok' if ok else 'ABOVE'} 1%)"]
        for other in ("qosway", "sway-chrt"):
            if other in s:
                better = max(rt["lost"]) <= min(s[other]["lost"])
                ok = ok and better
                why.append(f"vs {other} best {min(s[other]['lost'])} "
                           f"({'ok' if better else 'WORSE'})")
        parts.append(f"{prog}: {'MET' if ok else 'NOT MET'}: " + ", ".join(why))
    return parts


def write_chart(summary, programs, setups, path, subtitle):
    plt = peers.pyplot()
    if plt is None:
        return None
    colors = {"qosway": "#8fb8dc", "qosway-rt": peers.COLORS["qosway"],
              "qosway-fifo": "#1b4f7a", "qosway-cgroup": "#5d8aa8", "sway": "#f3c27f", "sway-chrt": peers.COLORS["sway"]}
    fig, axes = plt.subplots(1, len(programs), figsize=(5 * len(programs), 4.6), squeeze=False)
    for ax, prog in zip(axes[0], programs):
        xs = list(range(len(setups)))
        data = [summary[prog].get(s) for s in setups]
        total = next((x["total"] for x in data if x), 1)
        meds = [100 * x["lost_median"] / x["total"] if x else 0 for x in data]
        bars = ax.bar(xs, meds, 0.6, color=[colors[s] for s in setups], label="median")
        ax.bar_label(bars, labels=[("-" if not x else f"{x['lost_median']:g}"
                                    + (f"\n{x['refused']} refused" if x.get("refused") else ""))
                                   for x in data], fontsize=8)
        for bar, x in zip(bars, data):
            if x and x.get("refused"):
                bar.set_hatch("//")
        for x, d in zip(xs, data):
            if d and d["runs"] > 1:
                ax.plot([x] * d["runs"], [100 * v / d["total"] for v in d["lost"]], "k.",
                        markersize=4)
        if prog in ANCHOR:
            anchor = [100 * ANCHOR[prog].get(s, 0) / ANCHOR_TOTAL[prog] for s in setups]
            ax.plot(xs, anchor, "rx", markersize=8, label="anchor")
        ax.axhline(100 * GOAL_SHARE, color="green", linestyle=":", linewidth=1,
                   label="goal for the button: 1%")
        ax.set_xticks(xs)
        ax.set_xticklabels(setups, rotation=30, ha="right", fontsize=8)
        ax.set_ylabel(f"% of the {total} frames lost")
        ax.set_title(PROGRAMS[prog], fontsize=9)
        ax.legend(fontsize=7)
    return peers.save_figure(plt, fig, path, f"Goal: {GOAL}\n{subtitle}")


# -- main -------------------------------------------------------------------------

def check_programs(programs, args, clip_why):
    """The programs that can run here; the others are named with why."""
    usable = []
    for prog in programs:
        why = None
        if prog.startswith("mpv"):
            found = shutil.which(args.mpv)
            if found is None:
                why = f"mpv ({args.mpv}) is not installed"
            else:
                args.mpv = found
                why = clip_why
        if prog == "mpv-x11" and why is None:
            if not os.access("/usr/bin/Xwayland", os.X_OK):
                why = "Xwayland is not installed"
            else:
                why = check_x11_socket_dir()
        if prog == "gtk":
            r = subprocess.run([SYSTEM_PYTHON, "-c",
                                "import gi, cairo; gi.require_version('Gtk', '3.0'); "
                                "gi.require_foreign('cairo'); from gi.repository import Gtk"],
                               capture_output=True, text=True) if os.access(
                                   SYSTEM_PYTHON, os.X_OK) else None
            if r is None or r.returncode != 0:
                why = ("GTK 3 for Python is missing (Debian: python3-gi, python3-gi-cairo, "
                       "gir1.2-gtk-3.0): " + (r.stderr.strip().splitlines()[-1]
                                              if r is not None and r.stderr.strip()
                                              else f"no {SYSTEM_PYTHON}"))
        if why:
            print(f"SKIP {prog}: {why}")
        else:
            usable.append(prog)
    return usable


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Real programs (mpv on Wayland, mpv through Xwayland, a GTK animation) "
                    "under CPU load on qosway with no button, the real-time button and "
                    "Shift+real-time, and on sway 1.7 with and without chrt -f: frames lost.")
    p.add_argument("--qosway", default=os.path.join(peers.REPO, "build", "compositor", "qosway"),
                   help="qosway binary (default: build/compositor/qosway)")
    p.add_argument("--qosctl", help="qosctl binary (default: build/ or build-bench/)")
    p.add_argument("--mpv", default="mpv", help="mpv binary (default: mpv from PATH)")
    p.add_argument("--out", default=os.path.join(peers.REPO, "build", "bench"),
                   help="directory for the PNG, results JSON and logs (default: build/bench)")
    p.add_argument("--programs", default=",".join(PROGRAMS),
                   help="comma-separated subset of " + ",".join(PROGRAMS))
    p.add_argument("--setups", default=",".join(SETUPS),
                   help="comma-separated subset of " + ",".join(SETUPS))
    p.add_argument("--repeat", type=int, default=1,
                   help="repetitions, interleaved; medians are reported (default 1)")
    p.add_argument("--seconds", type=float, default=16.0,
                   help="length of the clip and of the GTK run (default 16)")
    p.add_argument("--hogs", type=int, default=4,
                   help="CPU-bound loops, each in its own session (default 4)")
    p.add_argument("--gtk-shapes", type=int, default=20,
                   help="circles gtk_frames.py draws per frame (default 20)")
    p.add_argument("--gtk-size", default="800x450",
                   help="window size of gtk_frames.py, WxH (default 800x450)")
    p.add_argument("--cgroup-cpu", type=int, default=100,
                   help="qosway-cgroup: the limit, %% of one CPU (default 100)")
    p.add_argument("--cgroup-weight", type=int, default=10000,
                   help="qosway-cgroup: the weight, 1-10000 (default 10000)")
    p.add_argument("--fifo-priority", type=int, default=10,
                   help="SCHED_FIFO priority of sway-chrt (default 10)")
    p.add_argument("--cache-dir", default="/var/tmp/qosway-bench",
                   help="where the clip is kept (readable by nobody; default "
                        "/var/tmp/qosway-bench)")
    p.add_argument("--lock", help="hold an exclusive flock on this file while measuring "
                                  "(not while making the clip)")
    p.add_argument("--trace", action="store_true",
                   help="record mpv's drops every 100 ms and, on qosway, its reserve and "
                        "the QoS events, in the results JSON (costs some CPU)")
    p.add_argument("--start-timeout", type=float, default=15.0,
                   help="seconds to wait for a compositor's sockets and a program's window")
    args = p.parse_args(argv)
    args.programs = peers.parse_subset(p, args.programs, list(PROGRAMS), "--programs")
    args.setups = peers.parse_subset(p, args.setups, list(SETUPS), "--setups")
    args.gtk_width, args.gtk_height = peers.parse_size(p, args.gtk_size, "--gtk-size")
    if args.repeat < 1 or args.seconds <= 0 or args.hogs < 0 or args.gtk_shapes < 0:
        p.error("--repeat must be >= 1, --seconds > 0, --hogs and --gtk-shapes >= 0")
    if not 1 <= args.cgroup_cpu <= 200 or not 1 <= args.cgroup_weight <= 10000:
        p.error("--cgroup-cpu must be 1 to 200, --cgroup-weight 1 to 10000")
    if not 1 <= args.fifo_priority <= 99:
        p.error("--fifo-priority must be 1 to 99")
    return args


def run(args):
    args.qosctl = peers.find_qosctl(args.qosctl, "real_programs")
    logdir = peers.out_dirs(args.out)

    clip, clip_why = None, None
    if any(p.startswith("mpv") for p in args.programs):
        clip, clip_why = prepare_clip(args.cache_dir, args.seconds)
    programs = check_programs(args.programs, args, clip_why)
    setups = []
    for s in args.setups:
        try:
            make_compositor(s, args).check()
        except SkipCompositor as e:
            print(f"SKIP {s}: {e}")
            continue
        if s == "sway-chrt" and shutil.which("chrt") is None:
            print(f"SKIP {s}: chrt (util-linux) is not installed")
            continue
        setups.append(s)
    if not programs or not setups:
        print("nothing to measure")
        return 1

    lock = None
    if args.lock:
        lock = open(args.lock, "a")
        print(f"waiting for {args.lock}", flush=True)
        fcntl.flock(lock, fcntl.LOCK_EX)
    ctx = {"clip": clip}
    print(f"{len(programs)} programs x {len(setups)} setups x {args.repeat} = "
          f"{len(programs) * len(setups) * args.repeat} runs of {args.seconds:g} s, "
          f"{args.hogs} busy loops on {os.cpu_count()} CPUs", flush=True)
    results = {p: {s: [] for s in setups} for p in programs}
    failures = []
    try:
        # Repetition-major, then program, setups innermost: slow drift on
        # the machine hits every setup of a program alike.
        for rep in range(args.repeat):
            for prog in programs:
                for s in list(setups):
                    tag = f"real_programs-{prog}-{s}-r{rep}"
                    try:
                        r = measure(prog, s, args, ctx, logdir, tag)
                    except SkipCompositor as e:
                        print(f"{tag}: SKIP {s} from now on: {e}")
                        setups.remove(s)
                        failures.append(f"{tag}: {e}")
                        continue
                    except RunFailed as e:
                        print(f"{tag}: run failed: {e}")
                        failures.append(f"{tag}: {e}")
                        continue
                    results[prog][s].append(r)
                    extra = ""
                    if r.get("class"):
                        extra = f", class {r['class']} reserve {r.get('reserve')}"
                    if r.get("refused"):
                        extra += f" ({r['refused']})"
                    print(f"{tag}: lost {r['lost']} of {r['total']}, late {r['late']}, "
                          f"wall {r['elapsed_s']:.1f} s, window {r['window_size']}, "
                          f"threads {r['policies_playing']}"
                          f"{extra}, machine busy {r['machine_busy'] * 100:.0f}%", flush=True)
    finally:
        if lock is not None:
            lock.close()

    programs = [p for p in programs if any(results[p].values())]
    setups = [s for s in args.setups if any(results[p].get(s) for p in programs)]
    if not programs:
        print("no program produced numbers")
        return 1
    summary = summarise(results, programs, setups)
    lost, detail = format_table(summary, programs, setups)
    verdicts = verdict(summary, programs)
    machine = (f"{os.cpu_count()} CPUs, {os.uname().release}, {args.hogs} busy loops "
               f"in their own sessions")
    print()
    print(f"Frames lost in {args.seconds:g} s under load ({machine}); median of "
          f"{args.repeat} run(s), each run in brackets")
    print(lost)
    print()
    print(detail)
    print(f"Goal: {GOAL}:")
    for v in verdicts:
        print(f"  {v}")

    benchlib.save(args.out, "real_programs",
                  {"goal": GOAL, "verdicts": verdicts, "anchor": ANCHOR,
                   "anchor_total": ANCHOR_TOTAL, "machine": machine,
                   "date": time.strftime("%Y-%m-%d %H:%M %Z"),
                   "settings": {k: getattr(args, k) for k in (
                       "repeat", "seconds", "hogs", "gtk_shapes", "fifo_priority")},
                   "clip": clip, "failures": failures, "summary": summary,
                   "results": results},
                  lambda path: write_chart(summary, programs, setups, path,
                                           f"{args.seconds:g} s, {machine}, "
                                           f"median of {args.repeat}"))
    return 0


def main(argv=None):
    return peers.main(run, parse_args(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
