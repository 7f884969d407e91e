#!/usr/bin/env python3
"""Compositor CPU time per client frame: qosway vs sway 1.7 vs weston 10.

Every compositor runs headless with its pixman renderer on a 1920x1080@60
output. N qos-player clients (N = 1, 8, 16 by default) each redraw a full
640x480 shm buffer on every frame callback. After a warm-up the script samples
the compositor's CPU time (schedstat runtime of its threads, nanoseconds),
tells every client to
restart its statistics (SIGUSR1), waits for the measuring window, samples
again and stops the clients (SIGTERM), which print their frame counts.

Metric ("CPU ms per client frame"):
    compositor CPU seconds in the window * 1000
    / sum over clients of frame callbacks completed in the window

Each completed frame callback stands for one full-damage 640x480 frame the
compositor took in, composited and acknowledged, so the number is what the
compositor pays for one client frame. It is applied identically to all
compositors; a compositor that drops frames does not look cheaper for it.

This is a benchmark, not a test: it exits 0 whenever it produced numbers, and
prints the goal "qosway CPU per frame no higher than sway at every N" with a
verdict beside the table. See tests/bench/README.md.
"""

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GOAL = "qosway CPU per frame no higher than sway at every N"
OUTPUT_MODE = (1920, 1080, 60)
CLIENT_SIZE = (640, 480)
NOBODY = 65534
CLK_TCK = os.sysconf("SC_CLK_TCK")
SOCKET_RE = re.compile(r"^wayland-\d+$")
SIGUSR1_BIT = 1 << (signal.SIGUSR1 - 1)


class SkipCompositor(Exception):
    """The compositor cannot be benchmarked here; the reason is the message."""


class RunFailed(Exception):
    """One measurement went wrong; the compositor itself may still be fine."""


# Every process and directory the script creates, so that cleanup on any exit
# path (including Ctrl-C and SIGTERM) can find them.
_live_groups = []   # Popen objects started in their own session
_temp_dirs = []


def _on_sigterm(signum, frame):
    raise KeyboardInterrupt


def spawn(argv, **kwargs):
    # A session of its own keeps the terminal's Ctrl-C away from children,
    # so they are stopped in order by cleanup instead of all at once.
    proc = subprocess.Popen(argv, start_new_session=True, stdin=subprocess.DEVNULL,
                            **kwargs)
    _live_groups.append(proc)
    return proc


def stop_group(proc, timeout=5.0):
    """Stops the process group led by proc (compositors spawn helpers)."""
    if proc in _live_groups:
        _live_groups.remove(proc)
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, timeout)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait)
            # The leader is gone; helpers in its group may linger briefly.
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            break
        except subprocess.TimeoutExpired:
            continue


def make_temp_dir(prefix):
    path = tempfile.mkdtemp(prefix=prefix)
    _temp_dirs.append(path)
    return path


def cleanup():
    for proc in list(reversed(_live_groups)):
        stop_group(proc, timeout=2.0)
    for path in _temp_dirs:
        shutil.rmtree(path, ignore_errors=True)
    _temp_dirs.clear()


def proc_cpu_s(pid):
    """utime+stime in 10 ms ticks, kept in the results as a cross-check."""
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    # comm may contain spaces and parentheses; fields resume after the last ')'.
    fields = stat[stat.rindex(")") + 2:].split()
    utime, stime = int(fields[11]), int(fields[12])
    return (utime + stime) / CLK_TCK


def machine_busy_ticks():
    """(busy, total) jiffies over all CPUs, to show how loaded the machine
    was during a window: other work on a 2-core box skews a run."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    total = sum(values[:8])       # guest time is already in user
    return total - idle, total


def proc_runtime_s(pid):
    """Nanosecond-precise CPU time of all live threads (schedstat): the
    metric. Compositor threads live as long as the process."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total / 1e9


def blocks_sigusr1(pid):
    """True once qos-player has set up its signals (it blocks them for a
    signalfd); SIGUSR1 sent earlier would kill it with the default action."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("SigBlk:"):
                    return int(line.split()[1], 16) & SIGUSR1_BIT != 0
    except FileNotFoundError:
        pass
    return False


def tail(path, lines=15):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:]).rstrip() or "(empty log)"
    except OSError:
        return "(no log)"


class Compositor:
    name = "?"
    # Whether the compositor must not run as root (it is then run as nobody).
    drops_root = False

    def __init__(self, args):
        self.args = args
        self.proc = None
        self.rundir = None
        self.log = None

    def check(self):
        """Raises SkipCompositor if the compositor cannot run here at all."""
        raise NotImplementedError

    def command(self):
        raise NotImplementedError

    def env(self):
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "XDG_RUNTIME_DIR": self.rundir,
            "HOME": self.rundir,
            "XDG_CONFIG_HOME": os.path.join(self.rundir, "config"),
            "LANG": "C.UTF-8",
        }

    def prepare(self):
        """Writes config files into self.rundir."""

    def start(self, logdir, tag):
        self.rundir = make_temp_dir(f"qosbench-{self.name}-")
        os.chmod(self.rundir, 0o700)
        self.prepare()
        as_nobody = self.drops_root and os.geteuid() == 0
        if as_nobody:
            os.chown(self.rundir, NOBODY, NOBODY)
        argv = self.command()
        if as_nobody:
            argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}",
                    "--clear-groups"] + argv
        self.log = os.path.join(logdir, f"{tag}.log")
        with open(self.log, "w") as log:
            self.proc = spawn(argv, env=self.env(), stdout=log, stderr=subprocess.STDOUT,
                              cwd=self.rundir)
        deadline = time.monotonic() + self.args.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SkipCompositor(f"{self.name} exited with status {self.proc.returncode} "
                                     f"during start-up; log tail:\n{tail(self.log)}")
            sockets = sorted(s for s in os.listdir(self.rundir) if SOCKET_RE.match(s))
            if sockets:
                # The socket appears at bind time; outputs and globals may
                # still be coming up, and clients must not race that.
                time.sleep(0.5)
                if self.proc.poll() is not None:
                    continue
                return sockets[0]
            time.sleep(0.05)
        raise SkipCompositor(f"{self.name} created no wayland-* socket in "
                             f"{self.args.start_timeout:.0f} s; log tail:\n{tail(self.log)}")

    def stop(self):
        if self.proc is not None:
            stop_group(self.proc)
            self.proc = None
        if self.rundir is not None:
            shutil.rmtree(self.rundir, ignore_errors=True)
            _temp_dirs.remove(self.rundir)
            self.rundir = None


def require_program(path, what):
    if os.path.sep in path:
        if not os.access(path, os.X_OK):
            raise SkipCompositor(f"{what} not found at {path}")
        # Compositors start inside their runtime dir.
        return os.path.abspath(path)
    found = shutil.which(path)
    if found is None:
        raise SkipCompositor(f"{what} ({path}) is not installed")
    return found


def wlroots_env(base):
    base.update({
        "WLR_BACKENDS": "headless",
        "WLR_RENDERER": "pixman",
        "WLR_LIBINPUT_NO_DEVICES": "1",
    })
    return base


class Qosway(Compositor):
    name = "qosway"

    def check(self):
        self.binary = require_program(self.args.qosway, "qosway")

    def prepare(self):
        # The shipped default (theme, titlebar, cascade) is what users run;
        # the appended line pins the mode, as later lines override earlier.
        w, h, hz = OUTPUT_MODE
        self.config = os.path.join(self.rundir, "qosway.conf")
        shipped = os.path.join(REPO, "config", "config")
        with open(self.config, "w") as f:
            if os.path.isfile(shipped):
                with open(shipped) as src:
                    f.write(src.read().rstrip("\n") + "\n")
            f.write(f"output-mode {w}x{h}@{hz}\n")

    def env(self):
        return wlroots_env(super().env())

    def command(self):
        return [self.binary, "-c", self.config]


class Sway(Compositor):
    name = "sway"
    drops_root = True

    def check(self):
        self.binary = require_program("sway", "sway")
        if os.geteuid() == 0:
            require_program("setpriv", "setpriv (util-linux), to run sway as nobody")
            # nobody must be able to reach its runtime dir under the temp dir.
            parent = tempfile.gettempdir()
            while True:
                if os.stat(parent).st_mode & 0o001 == 0:
                    raise SkipCompositor(f"sway runs as nobody, which cannot enter {parent}; "
                                         "point TMPDIR at a world-searchable directory")
                if parent == os.path.dirname(parent):
                    break
                parent = os.path.dirname(parent)

    def prepare(self):
        w, h, hz = OUTPUT_MODE
        self.config = os.path.join(self.rundir, "sway.conf")
        with open(self.config, "w") as f:
            # qos-player asks for min == max size, which sway floats anyway;
            # the rule makes sure all compositors stack whole 640x480 windows
            # instead of sway scaling tiles.
            f.write(f"output HEADLESS-1 resolution {w}x{h}@{hz}Hz position 0 0\n"
                    "for_window [app_id=\"^qos-player$\"] floating enable\n")
            # sway centres every floating window on the same spot, which
            # keeps its damage to one window's area; cascading like qosway
            # tells placement apart from per-frame overhead.
            if self.args.sway_titlebars:
                # qos-player does not ask for server-side decorations, so sway
                # leaves them to the client; qosway always draws titlebars.
                f.write("for_window [app_id=\"^qos-player$\"] border normal 2\n")
            step = self.args.sway_cascade
            if step > 0:
                for i in range(max(self.args.clients)):
                    f.write(f"for_window [title=\"^qos-player {i}$\"] "
                            f"move position {i * step} {i * step}\n")
        os.chmod(self.config, 0o644)

    def env(self):
        return wlroots_env(super().env())

    def command(self):
        return [self.binary, "-c", self.config]


class Weston(Compositor):
    name = "weston"

    def check(self):
        self.binary = require_program("weston", "weston")
        out = subprocess.run([self.binary, "--help"], capture_output=True, text=True)
        if "headless-backend.so" not in out.stdout + out.stderr:
            raise SkipCompositor("weston has no headless backend")

    def prepare(self):
        self.config = os.path.join(self.rundir, "weston.ini")
        with open(self.config, "w") as f:
            # The headless backend starts the next repaint one repaint window
            # before a "vblank" it only computes after its 16 ms frame timer;
            # with the default 7 ms window it cycles at ~39 Hz. A window just
            # under the refresh period makes it ~58 Hz like a 60 Hz output.
            # idle-time=0 stops the output from blanking mid-benchmark.
            f.write("[core]\n"
                    "idle-time=0\n"
                    f"repaint-window={self.args.weston_repaint_window}\n"
                    "[shell]\n"
                    "panel-position=none\n"
                    "background-color=0xff203040\n")

    def command(self):
        w, h, _ = OUTPUT_MODE
        return [self.binary, f"--config={self.config}", "--backend=headless-backend.so",
                "--use-pixman", f"--width={w}", f"--height={h}"]


COMPOSITORS = {"qosway": Qosway, "sway": Sway, "weston": Weston}


def measure(comp, player, n_clients, logdir, tag, args):
    """One measurement: fresh compositor, n clients, warm-up, window."""
    display = comp.start(logdir, tag)
    clients = []
    try:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "XDG_RUNTIME_DIR": comp.rundir,
            "WAYLAND_DISPLAY": display,
        }
        w, h = CLIENT_SIZE
        for i in range(n_clients):
            err = open(os.path.join(logdir, f"{tag}.client{i}.err"), "w")
            proc = spawn([player, "-n", "0", "-W", str(w), "-H", str(h),
                          "-t", f"qos-player {i}"],
                         env=env, stdout=subprocess.PIPE, stderr=err, text=True)
            err.close()
            clients.append(proc)

        time.sleep(args.warmup)
        deadline = time.monotonic() + 5.0
        while not all(blocks_sigusr1(c.pid) for c in clients):
            if time.monotonic() > deadline or any(c.poll() is not None for c in clients):
                dead = [i for i, c in enumerate(clients) if c.poll() is not None]
                detail = ""
                if dead:
                    detail = "; client stderr:\n" + tail(
                        os.path.join(logdir, f"{tag}.client{dead[0]}.err"))
                raise RunFailed(f"clients {dead or 'not ready'} after warm-up{detail}")
            time.sleep(0.05)
        if comp.proc.poll() is not None:
            raise SkipCompositor(f"{comp.name} died during warm-up; log tail:\n"
                                 f"{tail(comp.log)}")

        cpu0 = proc_cpu_s(comp.proc.pid)
        rt0 = proc_runtime_s(comp.proc.pid)
        busy0, total0 = machine_busy_ticks()
        t0 = time.monotonic()
        for c in clients:
            c.send_signal(signal.SIGUSR1)
        time.sleep(args.measure)
        cpu1 = proc_cpu_s(comp.proc.pid)
        rt1 = proc_runtime_s(comp.proc.pid)
        busy1, total1 = machine_busy_ticks()
        t1 = time.monotonic()
        for c in clients:
            c.send_signal(signal.SIGTERM)

        reports = []
        for i, c in enumerate(clients):
            try:
                out, _ = c.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                raise RunFailed(f"client {i} did not exit on SIGTERM")
            lines = [ln for ln in out.splitlines() if ln.startswith("{")]
            if not lines:
                raise RunFailed(f"client {i} printed no statistics (status {c.returncode}); "
                                "stderr:\n" + tail(os.path.join(logdir, f"{tag}.client{i}.err")))
            reports.append(json.loads(lines[-1]))
    finally:
        for c in clients:
            stop_group(c)
        comp.stop()

    frames = sum(r["frames"] for r in reports)
    # Nanosecond schedstat runtime is the metric; utime+stime moves in 10 ms
    # ticks, too coarse for ~0.1 s of CPU at N=1, and stays as a cross-check.
    cpu = rt1 - rt0
    wall = t1 - t0
    if frames == 0:
        raise RunFailed("no client completed a frame in the window")
    return {
        "cpu_s": cpu,
        "wall_s": wall,
        "frames": frames,
        "cpu_ms_per_frame": cpu * 1000.0 / frames,
        "ticks_ms_per_frame": (cpu1 - cpu0) * 1000.0 / frames,
        "cpu_util": cpu / wall,
        "client_fps_mean": statistics.mean(r["fps"] for r in reports),
        "client_fps_min": min(r["fps"] for r in reports),
        "worst_gap_ms": max(r["worst_gap_ms"] for r in reports),
        "client_cpu_s": sum(r["cpu_s"] for r in reports),
        "machine_busy": (busy1 - busy0) / max(total1 - total0, 1),
    }


def find_player(path):
    if path:
        candidates = [path]
    else:
        candidates = [os.path.join(REPO, d, "clients", "qos-player")
                      for d in ("build", "build-bench")]
    for c in candidates:
        if os.access(c, os.X_OK):
            return os.path.abspath(c)
    sys.exit("compositor_frame_cpu: qos-player not found (tried "
             + ", ".join(candidates) + "); build it with\n"
             "  meson setup build && meson compile -C build qos-player\n"
             "or pass --player PATH")


def median_of(runs, key):
    return statistics.median(r[key] for r in runs) if runs else None


def summarise(results, names, counts):
    """results[name][n] -> list of runs; returns summary[name][n] -> medians."""
    summary = {}
    for name in names:
        summary[name] = {}
        for n in counts:
            runs = results.get(name, {}).get(n, [])
            if runs:
                summary[name][n] = {
                    key: median_of(runs, key)
                    for key in ("cpu_ms_per_frame", "ticks_ms_per_frame", "client_fps_mean", "client_fps_min",
                                "cpu_util", "worst_gap_ms")
                }
                summary[name][n]["runs"] = len(runs)
    return summary


def format_table(summary, names, counts):
    cols = [n for n in names if summary.get(n)]
    head = ["N"] + [f"{n} ms/frame (fps, cpu%)" for n in cols]
    has_ratio = "qosway" in cols and "sway" in cols
    if has_ratio:
        head.append("qosway/sway")
    rows = []
    verdicts = []
    for n in counts:
        row = [str(n)]
        for name in cols:
            s = summary[name].get(n)
            if s is None:
                row.append("-")
            else:
                row.append(f"{s['cpu_ms_per_frame']:.3f} ({s['client_fps_mean']:.1f}, "
                           f"{s['cpu_util'] * 100:.0f}%)")
        if has_ratio:
            q, w = summary["qosway"].get(n), summary["sway"].get(n)
            if q and w:
                ratio = q["cpu_ms_per_frame"] / w["cpu_ms_per_frame"]
                verdicts.append(ratio <= 1.0)
                row.append(f"{ratio:.2f} {'ok' if ratio <= 1.0 else 'ABOVE'}")
            else:
                verdicts.append(None)
                row.append("-")
        rows.append(row)
    widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*r) for r in rows]
    if not has_ratio:
        verdict = "not evaluated (needs both qosway and sway results)"
    elif all(v is True for v in verdicts):
        verdict = "MET"
    elif any(v is False for v in verdicts):
        verdict = "NOT MET"
    else:
        verdict = "not evaluated (missing runs)"
    return "\n".join(lines), verdict


def write_chart(summary, names, counts, path, subtitle):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("chart: matplotlib is not installed (pip install matplotlib); no PNG written")
        return None
    cols = [n for n in names if summary.get(n)]
    colors = {"qosway": "#2a7ab9", "sway": "#e08a1e", "weston": "#5a9e4b"}
    fig, (ax_cpu, ax_fps) = plt.subplots(1, 2, figsize=(11, 4.5))
    width = 0.8 / max(len(cols), 1)
    xs = range(len(counts))
    for i, name in enumerate(cols):
        cpu = [summary[name].get(n, {}).get("cpu_ms_per_frame", 0) or 0 for n in counts]
        fps = [summary[name].get(n, {}).get("client_fps_mean", 0) or 0 for n in counts]
        pos = [x + (i - (len(cols) - 1) / 2) * width for x in xs]
        bars = ax_cpu.bar(pos, cpu, width, label=name, color=colors.get(name))
        ax_cpu.bar_label(bars, fmt="%.2f", fontsize=7)
        ax_fps.bar(pos, fps, width, label=name, color=colors.get(name))
    for ax, title in ((ax_cpu, "compositor CPU ms per client frame (lower is better)"),
                      (ax_fps, "mean client fps")):
        ax.set_xticks(list(xs))
        ax.set_xticklabels([f"N={n}" for n in counts])
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8)
    ax_fps.axhline(OUTPUT_MODE[2], color="grey", linestyle=":", linewidth=1)
    fig.suptitle(f"Goal: {GOAL}\n{subtitle}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Compositor CPU time per client frame for qosway, sway and weston "
                    "(headless, pixman, 1920x1080@60, N full-damage 640x480 clients).")
    p.add_argument("--qosway", default=os.path.join(REPO, "build", "compositor", "qosway"),
                   help="qosway binary (default: build/compositor/qosway)")
    p.add_argument("--player", help="qos-player binary (default: build/ or build-bench/)")
    p.add_argument("--out", default=os.path.join(REPO, "build", "bench"),
                   help="directory for the PNG, results JSON and logs (default: build/bench)")
    p.add_argument("--compositors", default="qosway,sway,weston",
                   help="comma-separated subset of qosway,sway,weston")
    p.add_argument("--clients", default="1,8,16", help="comma-separated client counts")
    p.add_argument("--runs", type=int, default=3, help="repetitions; the median is reported")
    p.add_argument("--warmup", type=float, default=3.0, help="seconds before measuring")
    p.add_argument("--measure", type=float, default=10.0,
                   help="measuring window in seconds")
    p.add_argument("--start-timeout", type=float, default=15.0,
                   help="seconds to wait for a compositor's socket")
    p.add_argument("--sway-cascade", type=int, default=0, metavar="PX",
                   help="place sway's windows in a cascade with this step, like "
                        "qosway's (32), instead of sway's centred stack (default 0: off)")
    p.add_argument("--sway-titlebars", action="store_true",
                   help="make sway draw titlebars and 2 px borders like qosway "
                        "(default: none, as sway does for clients without xdg-decoration)")
    p.add_argument("--weston-repaint-window", type=int, default=15,
                   help="weston.ini repaint-window in ms (see README)")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 1 repetition, 1 s warm-up, 2 s window")
    args = p.parse_args(argv)
    if args.quick:
        args.runs, args.warmup, args.measure = 1, 1.0, 2.0
    try:
        args.clients = [int(n) for n in args.clients.split(",")]
    except ValueError:
        p.error("--clients wants integers separated by commas")
    if any(n < 1 for n in args.clients):
        p.error("--clients: every count must be at least 1")
    args.compositors = [c.strip() for c in args.compositors.split(",") if c.strip()]
    unknown = [c for c in args.compositors if c not in COMPOSITORS]
    if unknown:
        p.error(f"--compositors: unknown {', '.join(unknown)} "
                f"(choose from {', '.join(COMPOSITORS)})")
    if args.runs < 1 or args.warmup < 0 or args.measure <= 0:
        p.error("--runs must be >= 1, --warmup >= 0 and --measure > 0")
    return args


def run(args):
    player = find_player(args.player)
    os.makedirs(args.out, exist_ok=True)
    logdir = os.path.join(args.out, "logs")
    os.makedirs(logdir, exist_ok=True)

    comps = {}
    for name in args.compositors:
        comp = COMPOSITORS[name](args)
        try:
            comp.check()
            comps[name] = comp
        except SkipCompositor as e:
            print(f"SKIP {name}: {e}")
    if not comps:
        print("no compositor could be benchmarked")
        return 1

    total = len(comps) * len(args.clients) * args.runs
    print(f"qos-player: {player}")
    print(f"{len(comps)} compositors x N={args.clients} x {args.runs} runs = {total} "
          f"measurements of {args.warmup:g} s warm-up + {args.measure:g} s window")
    results = {name: {n: [] for n in args.clients} for name in comps}
    # Repetition-major, compositors interleaved: slow drift on the machine
    # then hits every compositor alike instead of biasing one of them.
    for rep in range(args.runs):
        for n in args.clients:
            for name in list(comps):
                tag = f"{name}-n{n}-r{rep}"
                try:
                    r = measure(comps[name], player, n, logdir, tag, args)
                except SkipCompositor as e:
                    print(f"SKIP {name} from now on: {e}")
                    del comps[name]
                    continue
                except RunFailed as e:
                    print(f"{tag}: run failed: {e}")
                    continue
                results[name][n].append(r)
                print(f"{tag}: {r['cpu_ms_per_frame']:.3f} ms/frame, "
                      f"{r['frames']} frames, cpu {r['cpu_s']:.2f} s "
                      f"({r['cpu_util'] * 100:.0f}%), fps mean {r['client_fps_mean']:.1f} "
                      f"min {r['client_fps_min']:.1f}, machine busy "
                      f"{r['machine_busy'] * 100:.0f}%", flush=True)

    names = [n for n in args.compositors if any(results.get(n, {}).values())]
    if not names:
        print("no compositor produced numbers")
        return 1
    summary = summarise(results, names, args.clients)
    table, verdict = format_table(summary, names, args.clients)
    w, h, hz = OUTPUT_MODE
    cw, ch = CLIENT_SIZE
    print()
    print(f"Compositor CPU per client frame, headless pixman {w}x{h}@{hz}, "
          f"N clients redrawing {cw}x{ch} every frame; median of {args.runs} run(s), "
          f"{args.measure:g} s window")
    print("ms/frame = compositor CPU (schedstat, ns) in the window / frame callbacks completed "
          "by all clients in the window")
    print(table)
    print(f"Goal: {GOAL}: {verdict}")

    stamp = time.strftime("%Y%m%d-%H%M%S")
    data_path = os.path.join(args.out, f"compositor_frame_cpu-{stamp}.json")
    with open(data_path, "w") as f:
        json.dump({"goal": GOAL, "verdict": verdict, "runs": args.runs,
                   "warmup_s": args.warmup, "measure_s": args.measure,
                   "summary": summary, "results": results}, f, indent=1)
    print(f"results: {data_path}")
    chart = write_chart(summary, names, args.clients,
                        os.path.join(args.out, f"compositor_frame_cpu-{stamp}.png"),
                        f"headless pixman {w}x{h}@{hz}, {cw}x{ch} full-damage clients, "
                        f"median of {args.runs}")
    if chart:
        print(f"chart: {chart}")
    return 0


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    # Explicit because a shell starting us in the background ignores SIGINT.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _on_sigterm)
    signal.signal(signal.SIGHUP, _on_sigterm)
    try:
        return run(args)
    except KeyboardInterrupt:
        print("\ninterrupted; stopping everything started", file=sys.stderr)
        return 130
    finally:
        cleanup()


if __name__ == "__main__":
    sys.exit(main())
