"""Shared plumbing for the compositor benchmarks (compositor_frame_cpu.py,
table53.py, billing.py, server_limit.py).

They run qosway, sway 1.7 and weston 10 headless (pixman, 1920x1080@60), each
in a fresh 0700 runtime dir of its own, sway as nobody when run as root, and
drive them with qos-player clients. Everything started here is registered, so
that cleanup() stops it (by process group) and removes its directories and
any other registered resource (cgroups) on every exit path: normal end,
failure, Ctrl-C, SIGTERM and SIGHUP (see main()).
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUTPUT_MODE = (1920, 1080, 60)
NOBODY = 65534
CLK_TCK = os.sysconf("SC_CLK_TCK")
SOCKET_RE = re.compile(r"^wayland-\d+$")
SIGUSR1_BIT = 1 << (signal.SIGUSR1 - 1)
COLORS = {"qosway": "#2a7ab9", "sway": "#e08a1e", "weston": "#5a9e4b"}


class SkipCompositor(Exception):
    """The compositor cannot be benchmarked here; the reason is the message."""


class RunFailed(Exception):
    """One measurement went wrong; the compositor itself may still be fine."""


# Everything the script creates, so that cleanup on any exit path (including
# Ctrl-C and SIGTERM) can find it.
_live_groups = []   # Popen objects started in their own session
_temp_dirs = []
_cleanups = []      # callables undoing other resources (cgroups), newest last


def _on_sigterm(signum, frame):
    raise KeyboardInterrupt


def spawn(argv, **kwargs):
    # A session of its own keeps the terminal's Ctrl-C away from children,
    # so they are stopped in order by cleanup instead of all at once.
    kwargs.setdefault("stdin", subprocess.DEVNULL)
    proc = subprocess.Popen(argv, start_new_session=True, **kwargs)
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


def remove_temp_dir(path):
    shutil.rmtree(path, ignore_errors=True)
    if path in _temp_dirs:
        _temp_dirs.remove(path)


def on_cleanup(undo):
    """Registers undo() to run at cleanup (newest first); returns undo."""
    _cleanups.append(undo)
    return undo


def forget_cleanup(undo):
    if undo in _cleanups:
        _cleanups.remove(undo)


def cleanup():
    for proc in list(reversed(_live_groups)):
        stop_group(proc, timeout=2.0)
    for undo in list(reversed(_cleanups)):
        try:
            undo()
        except Exception as e:  # the others must still run
            print(f"cleanup: {e}", file=sys.stderr)
    _cleanups.clear()
    for path in _temp_dirs:
        shutil.rmtree(path, ignore_errors=True)
    _temp_dirs.clear()


def main(run, args):
    """Runs run(args) with cleanup on every exit path; returns its status."""
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


# -- CPU time -------------------------------------------------------------------

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


def thread_runtime_s(pid, tid=None):
    """CPU time of one thread (schedstat); the main thread by default."""
    with open(f"/proc/{pid}/task/{tid or pid}/schedstat") as f:
        return int(f.read().split()[0]) / 1e9


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


# -- compositors ----------------------------------------------------------------

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


class Compositor:
    name = "?"
    # Whether the compositor must not run as root (it is then run as nobody).
    drops_root = False

    def __init__(self, start_timeout=15.0):
        self.start_timeout = start_timeout
        self.proc = None
        self.rundir = None
        self.log = None
        self.display = None

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

    def ready(self):
        """Extra start-up condition beyond the Wayland socket."""
        return True

    def start(self, logdir, tag):
        """Starts the compositor and returns its WAYLAND_DISPLAY."""
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
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SkipCompositor(f"{self.name} exited with status {self.proc.returncode} "
                                     f"during start-up; log tail:\n{tail(self.log)}")
            sockets = sorted(s for s in os.listdir(self.rundir) if SOCKET_RE.match(s))
            if sockets and self.ready():
                # The socket appears at bind time; outputs and globals may
                # still be coming up, and clients must not race that.
                time.sleep(0.5)
                if self.proc.poll() is not None:
                    continue
                self.display = sockets[0]
                return self.display
            time.sleep(0.05)
        raise SkipCompositor(f"{self.name} created no wayland-* socket in "
                             f"{self.start_timeout:.0f} s; log tail:\n{tail(self.log)}")

    def client_env(self):
        """Environment of a client of the running compositor."""
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "XDG_RUNTIME_DIR": self.rundir,
            "WAYLAND_DISPLAY": self.display,
        }

    def stop(self):
        if self.proc is not None:
            stop_group(self.proc)
            self.proc = None
        if self.rundir is not None:
            remove_temp_dir(self.rundir)
            self.rundir = None
        self.display = None


class Qosway(Compositor):
    """qosway with the shipped config/config plus extra_config lines (later
    lines override earlier ones); qosctl talks to it when one is given."""
    name = "qosway"

    def __init__(self, binary, start_timeout=15.0, extra_config=(), qosctl=None):
        super().__init__(start_timeout)
        self.binary_path = binary
        self.extra_config = list(extra_config)
        self.qosctl_path = qosctl
        self.ipc_sock = None

    def check(self):
        self.binary = require_program(self.binary_path, "qosway")
        if self.qosctl_path is not None:
            self.qosctl_bin = require_program(self.qosctl_path, "qosctl")

    def prepare(self):
        # The shipped default (theme, titlebar, cascade) is what users run;
        # the appended lines pin the mode and the benchmark's settings.
        w, h, hz = OUTPUT_MODE
        self.config = os.path.join(self.rundir, "qosway.conf")
        with open(self.config, "w") as f:
            f.write(shipped_qosway_config())
            f.write(f"output-mode {w}x{h}@{hz}\n")
            for line in self.extra_config:
                f.write(line + "\n")

    def ready(self):
        if self.qosctl_path is None:
            return True
        socks = [s for s in os.listdir(self.rundir)
                 if s.startswith("qosway-") and s.endswith(".sock")]
        if not socks:
            return False
        self.ipc_sock = os.path.join(self.rundir, socks[0])
        return True

    def env(self):
        return wlroots_env(super().env())

    def command(self):
        return [self.binary, "-c", self.config]

    def config_complaints(self, word):
        """Lines of the log that report a config line mentioning word."""
        text = ""
        try:
            with open(self.log, errors="replace") as f:
                text = f.read()
        except OSError:
            pass
        # From the file name on: the temporary directory says nothing.
        return [ln[ln.index("qosway.conf:"):].strip() for ln in text.splitlines()
                if "qosway.conf:" in ln and word in ln]

    def qosctl(self, *args, timeout=15.0):
        """Runs qosctl against this compositor; CompletedProcess."""
        argv = [self.qosctl_bin, "-s", self.ipc_sock] + list(args)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)

    def qosctl_ok(self, *args):
        """qosctl ARGS that must succeed; raises RunFailed with its words."""
        r = self.qosctl(*args)
        if r.returncode != 0:
            raise RunFailed(f"qosctl {' '.join(args)} failed ({r.returncode}): "
                            f"{(r.stderr or r.stdout).strip()}")
        return r

    def query(self, *args):
        """`qosctl --json ARGS` -> (reply dict, None) when it succeeded, else
        (None, why): a qosway or qosctl without the command says so here."""
        r = self.qosctl("--json", *args)
        text = (r.stdout or "").strip()
        reply = None
        if text.startswith("{"):
            try:
                reply = json.loads(text)
            except ValueError:
                reply = None
        if r.returncode == 0 and isinstance(reply, dict) and reply.get("success", True):
            return reply, None
        if isinstance(reply, dict) and reply.get("error"):
            why = reply["error"]
        else:
            why = (r.stderr or r.stdout or f"exit status {r.returncode}").strip()
        return None, why.splitlines()[-1] if why else f"exit status {r.returncode}"


def shipped_qosway_config():
    shipped = os.path.join(REPO, "config", "config")
    if os.path.isfile(shipped):
        with open(shipped) as src:
            return src.read().rstrip("\n") + "\n"
    return ""


def qosway_cascade_origin():
    """Where qosway puts the content of its first window: (border,
    border + titlebar) of the shipped config; later ones cascade from it."""
    values = {"border-width": 2, "titlebar-height": 26, "cascade-step": 32}
    for line in shipped_qosway_config().splitlines():
        words = line.split()
        if len(words) == 2 and words[0] in values and words[1].isdigit():
            values[words[0]] = int(words[1])
    b, t = values["border-width"], values["titlebar-height"]
    return (b, b + t), values["cascade-step"]


class Sway(Compositor):
    """sway 1.7; qos-player windows float. With cascade > 0, the window
    titled "<title_prefix><i>" is moved to origin + i * cascade."""
    name = "sway"
    drops_root = True

    def __init__(self, start_timeout=15.0, cascade=0, cascade_origin=(0, 0),
                 titlebars=False, windows=16, title_prefix="qos-player "):
        super().__init__(start_timeout)
        self.cascade = cascade
        self.cascade_origin = cascade_origin
        self.titlebars = titlebars
        self.windows = windows
        self.title_prefix = title_prefix

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
            # the rule makes sure all compositors stack whole windows
            # instead of sway scaling tiles.
            f.write(f"output HEADLESS-1 resolution {w}x{h}@{hz}Hz position 0 0\n"
                    "for_window [app_id=\"^qos-player$\"] floating enable\n")
            if self.titlebars:
                # qos-player does not ask for server-side decorations, so sway
                # leaves them to the client; qosway always draws titlebars.
                f.write("for_window [app_id=\"^qos-player$\"] border normal 2\n")
            # sway centres every floating window on the same spot; a cascade
            # like qosway's places them as qosway does.
            if self.cascade > 0:
                x0, y0 = self.cascade_origin
                # The prefix goes into sway's regex as it is: no metacharacters.
                prefix = self.title_prefix
                for i in range(self.windows):
                    f.write(f"for_window [title=\"^{prefix}{i}$\"] "
                            f"move position {x0 + i * self.cascade} "
                            f"{y0 + i * self.cascade}\n")
        os.chmod(self.config, 0o644)

    def env(self):
        return wlroots_env(super().env())

    def command(self):
        return [self.binary, "-c", self.config]


class Weston(Compositor):
    name = "weston"

    def __init__(self, start_timeout=15.0, repaint_window=15):
        super().__init__(start_timeout)
        self.repaint_window = repaint_window

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
                    f"repaint-window={self.repaint_window}\n"
                    "[shell]\n"
                    "panel-position=none\n"
                    "background-color=0xff203040\n")

    def command(self):
        w, h, _ = OUTPUT_MODE
        return [self.binary, f"--config={self.config}", "--backend=headless-backend.so",
                "--use-pixman", f"--width={w}", f"--height={h}"]


# -- clients --------------------------------------------------------------------

def find_build_program(path, name, prog, target):
    """An explicit path, else build/clients/NAME, then build-bench/; exits
    with a hint when there is none."""
    if path:
        candidates = [path]
    else:
        candidates = [os.path.join(REPO, d, "clients", name) for d in ("build", "build-bench")]
    for c in candidates:
        if os.access(c, os.X_OK):
            return os.path.abspath(c)
    sys.exit(f"{prog}: {name} not found (tried " + ", ".join(candidates) + "); build it with\n"
             f"  meson setup build && meson compile -C build {target}\n"
             f"or pass --{name.replace('qos-', '')} PATH")


def find_player(path, prog):
    return find_build_program(path, "qos-player", prog, "qos-player")


def find_qosctl(path, prog):
    return find_build_program(path, "qosctl", prog, "qosctl")


class Gate:
    """Holds started clients before their exec until open(): a shared pipe
    every one of them reads first, so they start at the same moment and can
    be put into a reserve or cgroup by pid before they connect."""

    def __init__(self):
        self.read_fd, self.write_fd = os.pipe()
        on_cleanup(self.close)

    def wrap(self, argv):
        # exec keeps the pid, so what is done to it now holds for the client.
        return ["sh", "-c", 'read _ <&3; exec 3<&-; exec "$@"', "sh"] + list(argv)

    def spawn(self, argv, **kwargs):
        return spawn(self.wrap(argv), pass_fds=(self.read_fd,), **kwargs)

    def open(self):
        """Releases every client (read sees end of file)."""
        if self.write_fd is not None:
            os.close(self.write_fd)
            self.write_fd = None

    def close(self):
        self.open()
        if self.read_fd is not None:
            os.close(self.read_fd)
            self.read_fd = None
        forget_cleanup(self.close)


def wait_sigusr1_ready(clients, timeout, describe):
    """Waits until every qos-player blocks SIGUSR1 (signals set up);
    RunFailed naming the first dead client otherwise."""
    deadline = time.monotonic() + timeout
    while not all(blocks_sigusr1(c.pid) for c in clients):
        dead = [i for i, c in enumerate(clients) if c.poll() is not None]
        if time.monotonic() > deadline or dead:
            detail = ""
            if dead:
                detail = "; client stderr:\n" + describe(dead[0])
            raise RunFailed(f"clients {dead or 'not ready'} after warm-up{detail}")
        time.sleep(0.05)


def player_report(proc, index, timeout, describe, after=None):
    """The JSON line a qos-player printed on exit (waits for the exit);
    describe(index) gives its stderr for errors."""
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RunFailed(f"client {index} did not exit " + (after or f"within {timeout:g} s"))
    lines = [ln for ln in (out or "").splitlines() if ln.startswith("{")]
    if not lines:
        raise RunFailed(f"client {index} printed no statistics (status {proc.returncode}); "
                        "stderr:\n" + describe(index))
    return json.loads(lines[-1])


# -- the scripts' common parts ----------------------------------------------------

def add_program_args(p, qosctl=False):
    """--qosway, (--qosctl,) --player and --out, as every script has them."""
    p.add_argument("--qosway", default=os.path.join(REPO, "build", "compositor", "qosway"),
                   help="qosway binary (default: build/compositor/qosway)")
    if qosctl:
        p.add_argument("--qosctl", help="qosctl binary (default: build/ or build-bench/)")
    p.add_argument("--player", help="qos-player binary (default: build/ or build-bench/)")
    p.add_argument("--out", default=os.path.join(REPO, "build", "bench"),
                   help="directory for the PNG, results JSON and logs (default: build/bench)")


def parse_counts(p, text, option="--clients"):
    """"1,8,16" -> [1, 8, 16]; p.error() for anything else."""
    try:
        counts = [int(n) for n in text.split(",")]
    except ValueError:
        p.error(f"{option} wants integers separated by commas")
    if any(n < 1 for n in counts):
        p.error(f"{option}: every count must be at least 1")
    return counts


def parse_subset(p, text, choices, option, allow_empty=False):
    """"a,b" -> ["a", "b"], each one of choices; p.error() names the others."""
    chosen = [c.strip() for c in text.split(",") if c.strip()]
    unknown = [c for c in chosen if c not in choices]
    if unknown or not (chosen or allow_empty):
        p.error(f"{option}: unknown {', '.join(unknown) or '(none given)'} "
                f"(choose from {', '.join(choices)})")
    return chosen


def parse_size(p, text, option):
    """"640x480" -> (640, 480), both 1 to 16384; p.error() otherwise."""
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        p.error(f"{option} wants WIDTHxHEIGHT, e.g. 640x480")
    if not (1 <= w <= 16384 and 1 <= h <= 16384):
        p.error(f"{option}: width and height must be 1 to 16384")
    return w, h


def usable(candidates):
    """The {name: compositor} whose check() passes; the others are named
    with their reason on stdout."""
    comps = {}
    for name, comp in candidates.items():
        try:
            comp.check()
            comps[name] = comp
        except SkipCompositor as e:
            print(f"SKIP {name}: {e}")
    return comps


def attempt(comps, name, tag, measure):
    """measure() for one run; None (said on stdout) when it failed. A setup
    that cannot run any more is dropped from comps."""
    try:
        return measure()
    except SkipCompositor as e:
        print(f"SKIP {name} from now on: {e}")
        del comps[name]
    except RunFailed as e:
        print(f"{tag}: run failed: {e}")
    return None


# -- output ---------------------------------------------------------------------

def pyplot():
    """matplotlib.pyplot on the Agg backend, or None (said on stdout)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("chart: matplotlib is not installed (pip install matplotlib); no PNG written")
        return None
    return plt


def save_figure(plt, fig, path, title, fontsize=9):
    fig.suptitle(title, fontsize=fontsize)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def format_rows(head, rows):
    """Left-aligned columns, a dashed rule under the header."""
    widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*r) for r in rows]
    return "\n".join(lines)


def out_dirs(out):
    os.makedirs(out, exist_ok=True)
    logdir = os.path.join(out, "logs")
    os.makedirs(logdir, exist_ok=True)
    return logdir
