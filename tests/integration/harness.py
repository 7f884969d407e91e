"""Run a real qosway (headless, pixman) and real clients for the integration
tests, and clean everything up afterwards.

The compositor binary comes from $QOSWAY_BUILD_DIR (default ``build``,
relative to the repository root), so the same suite runs against a sanitizer
build directory.
"""

import json
import fcntl
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
WLCLIENT = os.path.join(HERE, "wlclient.py")

SANITIZER_PATTERNS = (
    "ERROR: AddressSanitizer",
    "ERROR: LeakSanitizer",
    "runtime error:",            # UBSan
    "ERROR: UndefinedBehaviorSanitizer",
    "WARNING: ThreadSanitizer",
)

# Distinctive colours, so that pixel checks cannot match by accident.
THEME = {
    "titlebar-focused": (0x12, 0x34, 0xC8),
    "titlebar-unfocused": (0x2A, 0x8A, 0x2A),
    "text-focused": (0xFF, 0xF0, 0x00),
    "text-unfocused": (0x00, 0xF0, 0xF0),
    "border-focused": (0xFF, 0x80, 0x00),
    "border-unfocused": (0x80, 0x40, 0x00),
    "button-on": (0xE0, 0x10, 0x10),
}
TITLEBAR_HEIGHT = 28
BORDER_WIDTH = 3
OUTPUT_MODE = (1920, 1080, 60)


def hexcolor(rgb):
    return "#%02X%02X%02X" % rgb


def test_config(extra=""):
    """The config text every test uses unless it brings its own."""
    lines = ["output-mode %dx%d@%d" % OUTPUT_MODE,
             "titlebar-height %d" % TITLEBAR_HEIGHT,
             "border-width %d" % BORDER_WIDTH,
             "font Sans 10",
             "buttons realtime idle pause close"]
    lines += ["color %s %s" % (k, hexcolor(v)) for k, v in THEME.items()]
    return "\n".join(lines) + "\n" + extra


def build_dir():
    d = os.environ.get("QOSWAY_BUILD_DIR", "build")
    return d if os.path.isabs(d) else os.path.join(REPO, d)


def qosway_bin():
    return os.path.join(build_dir(), "compositor", "qosway")


def qosctl_bin():
    return os.path.join(build_dir(), "clients", "qosctl")


def worker_env():
    """The pytest-xdist worker's name, so that tests/conftest.py knows the
    processes it started (a daemon's parent is init) from another worker's."""
    w = os.environ.get("PYTEST_XDIST_WORKER")
    return {"PYTEST_XDIST_WORKER": w} if w else {}


def sanitizer_env():
    """ASan/UBSan options; harmless for an uninstrumented binary."""
    env = {}
    env["ASAN_OPTIONS"] = os.environ.get(
        "ASAN_OPTIONS",
        "halt_on_error=1:abort_on_error=0:detect_leaks=1:"
        "detect_stack_use_after_return=0:strict_string_checks=1:"
        "check_initialization_order=1:suppressions="
        + os.path.join(REPO, "tests", "asan.supp"))
    env["UBSAN_OPTIONS"] = os.environ.get(
        "UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")
    if "LSAN_OPTIONS" in os.environ:
        env["LSAN_OPTIONS"] = os.environ["LSAN_OPTIONS"]
    return env


def wait_for(pred, timeout=10.0, interval=0.05, desc="condition"):
    """Poll pred() until it returns something truthy; return that value."""
    deadline = time.monotonic() + timeout
    last_exc = None
    while True:
        try:
            v = pred()
            if v:
                return v
        except Exception as e:  # keep polling, report the last error
            last_exc = e
        if time.monotonic() >= deadline:
            msg = "timed out after %.1fs waiting for %s" % (timeout, desc)
            if last_exc is not None:
                msg += " (last error: %r)" % (last_exc,)
            raise AssertionError(msg)
        time.sleep(interval)


def pids_with_env(key, value):
    """PIDs of processes whose environment has key=value (our children)."""
    needle = ("%s=%s" % (key, value)).encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % name, "rb") as fh:
                if needle in fh.read().split(b"\0"):
                    found.append(int(name))
        except OSError:
            continue
    return [p for p in found if p != os.getpid()]


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for pid %d" % pid)


class Proc:
    """A child process whose stdout lines are collected by a thread."""

    def __init__(self, argv, env, name, logdir, stdin=True, cwd=None):
        self.name = name
        self.argv = argv
        self.lines = []
        self._cond = threading.Condition()
        self.stderr_path = os.path.join(logdir, "%s.stderr" % name)
        self._stderr = open(self.stderr_path, "wb")
        self.p = subprocess.Popen(
            argv, env=env, cwd=cwd,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=self._stderr,
            start_new_session=True)
        self.pid = self.p.pid
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        try:
            for raw in self.p.stdout:
                line = raw.decode(errors="replace").rstrip("\n")
                with self._cond:
                    self.lines.append(line)
                    self._cond.notify_all()
        except (ValueError, OSError):
            pass  # the pipe was closed under the reader (the client went away)
        with self._cond:
            self._cond.notify_all()

    def send(self, line):
        self.p.stdin.write((line + "\n").encode())
        self.p.stdin.flush()

    def events(self, name=None):
        """Parsed ``event {json}`` lines (wlclient protocol)."""
        out = []
        with self._cond:
            lines = list(self.lines)
        for line in lines:
            ev, _, rest = line.partition(" ")
            if name is not None and ev != name:
                continue
            try:
                data = json.loads(rest) if rest else {}
            except ValueError:
                data = {"raw": rest}
            out.append((ev, data))
        return out

    def wait_event(self, name, pred=lambda d: True, timeout=10.0, start=0):
        """Wait for the first ``name`` event at or after line index start
        whose data satisfies pred; return its data."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for line in self.lines[start:]:
                    ev, _, rest = line.partition(" ")
                    if ev != name:
                        continue
                    data = json.loads(rest) if rest else {}
                    if pred(data):
                        return data
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(
                        "%s: no %r event within %.1fs; output so far:\n%s\nstderr:\n%s"
                        % (self.name, name, timeout, "\n".join(self.lines[-40:]),
                           self.stderr_tail()))
                if self.p.poll() is not None and not self._reader.is_alive():
                    # process gone and all output read: check once more
                    deadline = min(deadline, time.monotonic() + 0.1)
                self._cond.wait(min(remaining, 0.2))

    def wait_line(self, pred, timeout=10.0):
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for line in self.lines:
                    if pred(line):
                        return line
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError("%s: expected line not seen in %.1fs:\n%s"
                                         % (self.name, timeout, "\n".join(self.lines[-40:])))
                self._cond.wait(min(remaining, 0.2))

    def mark(self):
        with self._cond:
            return len(self.lines)

    def stderr_tail(self, n=4000):
        try:
            with open(self.stderr_path, "rb") as fh:
                data = fh.read()
            return data[-n:].decode(errors="replace")
        except OSError:
            return ""

    def alive(self):
        return self.p.poll() is None

    def wait(self, timeout=10.0):
        """Wait for exit and for all of its stdout to be collected."""
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError("%s (pid %d) still running after %.1fs"
                                 % (self.name, self.pid, timeout))
        # a grandchild holding stdout open must not hang us: bounded join
        self._reader.join(5)
        return rc

    def kill(self):
        if self.p.poll() is None:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                self.p.wait(5)
            except subprocess.TimeoutExpired:
                pass
        for f in (self.p.stdin, self.p.stdout):
            try:
                if f:
                    f.close()
            except OSError:
                pass
        self._stderr.close()


class IPCError(Exception):
    pass


class Compositor:
    """One headless qosway process with its own XDG_RUNTIME_DIR."""

    def __init__(self, logdir, config=None, args=(), env_extra=None,
                 use_config_flag=True, prefix=()):
        self.logdir = logdir
        self.binary = qosway_bin()
        if not os.access(self.binary, os.X_OK):
            raise AssertionError(
                "compositor binary %s not found; build it (meson compile -C %s) "
                "or set QOSWAY_BUILD_DIR" % (self.binary, build_dir()))
        # short path: unix socket paths are limited to 108 bytes
        self.runtime_dir = tempfile.mkdtemp(prefix="qw-")
        os.chmod(self.runtime_dir, 0o700)
        # a private HOME: no user config (qosway's, foot's) leaks in
        self.home = os.path.join(self.runtime_dir, "home")
        os.makedirs(os.path.join(self.home, ".config"))
        self.config_path = None
        # prefix: a command that execs the compositor (setpriv, say)
        argv = list(prefix) + [self.binary]
        if config is not None and use_config_flag:
            self.config_path = os.path.join(logdir, "qosway.config")
            with open(self.config_path, "w") as fh:
                fh.write(config)
            argv += ["-c", self.config_path]
        argv += list(args)
        self.argv = argv
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": self.home,
            "XDG_RUNTIME_DIR": self.runtime_dir,
            # never pick up a user's config by accident
            "XDG_CONFIG_HOME": os.path.join(self.home, ".config"),
            "WLR_BACKENDS": "headless",
            "WLR_RENDERER": "pixman",
            "WLR_LIBINPUT_NO_DEVICES": "1",
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "SHELL": "/bin/sh",
        }
        env.update(sanitizer_env())
        env.update(worker_env())
        if env_extra:
            env.update(env_extra)
        self.env = env
        self.log_path = os.path.join(logdir, "qosway.log")
        self._log = open(self.log_path, "wb")
        try:
            self.proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                                         stdout=self._log, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        except OSError as e:
            # e.g. the binary is being relinked: leave nothing behind
            self._log.close()
            shutil.rmtree(self.runtime_dir, ignore_errors=True)
            raise AssertionError("cannot start %s: %s" % (self.binary, e))
        self.pid = self.proc.pid
        self.returncode = None
        self.clients = []
        self.wayland_display = None
        self.sock = None

    # -- lifecycle ---------------------------------------------------------------
    def wait_ready(self, timeout=20.0):
        def ready():
            if self.proc.poll() is not None:
                raise AssertionError("qosway exited with %s during startup:\n%s"
                                     % (self.proc.returncode, self.log_tail()))
            names = os.listdir(self.runtime_dir)
            wl = [n for n in names if re.fullmatch(r"wayland-\d+", n)]
            ipc = [n for n in names if n.startswith("qosway-") and n.endswith(".sock")]
            if wl and ipc:
                return wl[0], ipc[0]
            return None
        try:
            wl, ipc = wait_for(ready, timeout, desc="qosway sockets in " + self.runtime_dir)
        except AssertionError as e:
            raise AssertionError("%s\nqosway log:\n%s" % (e, self.log_tail()))
        self.wayland_display = wl
        self.sock = os.path.join(self.runtime_dir, ipc)
        # the IPC socket may exist a moment before it accepts
        wait_for(lambda: self.ipc({"command": "version"}).get("success"),
                 timeout, desc="IPC version reply")
        return self

    def alive(self):
        return self.proc.poll() is None

    def log_text(self):
        self._log.flush()
        with open(self.log_path, "rb") as fh:
            return fh.read().decode(errors="replace")

    def log_tail(self, n=6000):
        return self.log_text()[-n:]

    def sanitizer_reports(self):
        text = self.log_text()
        return [p for p in SANITIZER_PATTERNS if p in text]

    def where(self):
        """What a compositor that does not exit is doing: each thread's state
        and, as root, its kernel stack (seen once under load, not
        understood: the shutdown had logged its end)."""
        out = []
        task = "/proc/%d/task" % self.proc.pid
        try:
            tids = sorted(os.listdir(task))
        except OSError as e:
            return "no /proc entry: %s" % e
        for tid in tids:
            for name in ("stat", "wchan", "stack"):
                try:
                    with open(os.path.join(task, tid, name)) as f:
                        text = f.read().strip()
                except OSError as e:
                    text = "(%s)" % e.strerror
                out.append("thread %s %s: %s" % (tid, name, text))
        return "\n".join(out)

    def terminate(self, sig=signal.SIGTERM, timeout=20.0):
        """Send sig and wait for exit; return the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                raise AssertionError("qosway did not exit within %.0fs of signal %d:\n%s\n%s"
                                     % (timeout, sig, self.log_tail(), self.where()))
        self.returncode = self.proc.returncode
        return self.returncode

    def cleanup(self):
        """Kill everything we started; never raises."""
        for c in self.clients:
            try:
                c.kill()
            except Exception:
                pass
        if self.proc.poll() is None:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
        # children spawned by the compositor (-s, exec, keybindings) may
        # have left its process group; find them by their environment
        for pid in pids_with_env("XDG_RUNTIME_DIR", self.runtime_dir):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._log.close()
        shutil.rmtree(self.runtime_dir, ignore_errors=True)

    def qos_root(self):
        """The name of the cgroup root this instance holds (qosway-UID, or
        qosway-UID-N beside other instances): the file it keeps locked."""
        for fd in os.listdir("/proc/%d/fd" % self.pid):
            try:
                name = os.path.basename(os.readlink("/proc/%d/fd/%s" % (self.pid, fd)))
            except OSError:
                continue
            if name.startswith(".qosway-") and name.endswith(".lock"):
                return name[1:-len(".lock")]
        raise AssertionError("qosway %d holds no root lock" % self.pid)

    # -- environment for clients ------------------------------------------------
    def client_env(self, extra=None):
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": self.home,
            "XDG_RUNTIME_DIR": self.runtime_dir,
            "WAYLAND_DISPLAY": self.wayland_display,
            "QOSWAY_SOCK": self.sock,
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "SHELL": "/bin/sh",
            "XDG_CONFIG_HOME": os.path.join(self.home, ".config"),
        }
        env.update(worker_env())
        if extra:
            env.update(extra)
        return env

    def spawn(self, argv, name=None, env_extra=None, stdin=True):
        name = name or "%s-%d" % (os.path.basename(argv[0]), len(self.clients))
        p = Proc(argv, self.client_env(env_extra), name, self.logdir, stdin=stdin)
        self.clients.append(p)
        return p

    def spawn_wlclient(self, title="qosway-test", color="ff00ff", width=400,
                       height=300, app_id=None, extra_args=(), name=None):
        argv = [sys.executable, "-u", WLCLIENT, "--title", title,
                "--color", color, "--width", str(width), "--height", str(height),
                "--app-id", app_id or "qosway-test"] + list(extra_args)
        return self.spawn(argv, name=name or "wlclient-%d" % len(self.clients))

    def open_window(self, title, **kw):
        """spawn_wlclient(title, **kw), wait until it has mapped and its
        window is listed; returns (client, window)."""
        c = self.spawn_wlclient(title=title, **kw)
        c.wait_event("mapped")
        return c, self.window_by_title(title)

    # -- IPC ---------------------------------------------------------------------
    def ipc_raw(self, data, timeout=10.0):
        """Send raw bytes on a fresh connection; return the first reply line."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(self.sock)
            try:
                s.sendall(data)
            except (BrokenPipeError, ConnectionResetError):
                # the compositor may reply and hang up before reading all
                # of an over-long request; the reply is still readable
                pass
            buf = b""
            while b"\n" not in buf:
                try:
                    chunk = s.recv(65536)
                except ConnectionResetError:
                    break
                if not chunk:
                    break
                buf += chunk
            return buf.split(b"\n", 1)[0].decode(errors="replace")

    def ipc(self, obj, timeout=10.0):
        line = self.ipc_raw((json.dumps(obj) + "\n").encode(), timeout)
        return json.loads(line)

    def qosctl(self, *args, timeout=15.0, use_env=False):
        argv = [qosctl_bin()]
        env = dict(os.environ)
        env.update(sanitizer_env())
        if use_env:
            env["QOSWAY_SOCK"] = self.sock
        else:
            env.pop("QOSWAY_SOCK", None)
            argv += ["-s", self.sock]
        argv += list(args)
        return subprocess.run(argv, env=env, capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)

    def windows(self):
        """Windows as reported by ``qosctl --json windows``."""
        r = self.qosctl("--json", "windows")
        if r.returncode != 0:
            raise AssertionError("qosctl --json windows failed (%d): %s%s"
                                 % (r.returncode, r.stdout, r.stderr))
        data = json.loads(r.stdout)
        if isinstance(data, dict):
            data = data["windows"]
        return data

    def outputs(self):
        r = self.qosctl("--json", "outputs")
        if r.returncode != 0:
            raise AssertionError("qosctl --json outputs failed: %s%s" % (r.stdout, r.stderr))
        data = json.loads(r.stdout)
        if isinstance(data, dict):
            data = data["outputs"]
        return data

    def find_window(self, pred):
        for w in self.windows():
            if pred(w):
                return w
        return None

    def wait_window(self, pred, timeout=10.0, desc="window"):
        return wait_for(lambda: self.find_window(pred), timeout, desc=desc)

    def window_by_title(self, title, timeout=10.0):
        return self.wait_window(lambda w: w.get("title") == title, timeout,
                                desc="window titled %r" % title)

    def window_by_pid(self, pid, timeout=10.0):
        return self.wait_window(lambda w: w.get("pid") == pid, timeout,
                                desc="window of pid %d" % pid)

    def visible_point(self, wid, keys=("titlebar", "geometry")):
        """A point of window wid not covered by any window stacked above it:
        in its titlebar left of the buttons if possible, else in its content."""
        ws = self.windows()
        idx = [i for i, w in enumerate(ws) if w["id"] == wid][0]
        w = ws[idx]
        above = [x["frame"] for x in ws[idx + 1:]]
        # windows may have invisible resize grips just outside their frame
        m = 12
        above = [{"x": f["x"] - m, "y": f["y"] - m, "width": f["width"] + 2 * m,
                  "height": f["height"] + 2 * m} for f in above]
        for key in keys:
            r = w[key]
            x1 = r["x"] + r["width"]
            if key == "titlebar" and w["buttons"]:
                x1 = min(b["x"] for b in w["buttons"].values())
            for y in range(r["y"] + 2, r["y"] + r["height"] - 1, 4):
                for x in range(r["x"] + 4, x1 - 2, 4):
                    if not any(f["x"] <= x < f["x"] + f["width"] and
                               f["y"] <= y < f["y"] + f["height"] for f in above):
                        return (x, y)
        raise AssertionError("no visible point in %s of window %d" % (keys, wid))

    def wait_no_windows(self, timeout=10.0):
        return wait_for(lambda: self.windows() == [], timeout, desc="no windows")

    # -- screenshots ----------------------------------------------------------------
    def screenshot(self, name="shot"):
        from PIL import Image
        path = os.path.join(self.logdir, "%s.png" % name)
        r = subprocess.run(["grim", "-t", "png", path], env=self.client_env(),
                           capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            raise AssertionError("grim failed (%d): %s" % (r.returncode, r.stderr))
        img = Image.open(path)
        img.load()
        return img.convert("RGB")

    def wait_screenshot(self, check, timeout=10.0, name="shot"):
        """Take screenshots until check(img) returns None (ok), then return
        the image.  check returns a failure message otherwise; the last one
        is raised on timeout.  Screenshots are kept in the test's log dir."""
        deadline = time.monotonic() + timeout
        n = 0
        while True:
            img = self.screenshot("%s-%d" % (name, n))
            msg = check(img)
            if msg is None:
                return img
            if time.monotonic() >= deadline:
                raise AssertionError("%s (screenshot %s)" % (
                    msg, os.path.join(self.logdir, "%s-%d.png" % (name, n))))
            n += 1
            time.sleep(0.1)


# -- kernel QoS state of a process (the per-window QoS tests) -------------------

CGROUP_BASE = "/sys/fs/cgroup"
SCHED_OTHER, SCHED_FIFO, SCHED_RR, SCHED_BATCH, SCHED_IDLE, SCHED_DEADLINE = 0, 1, 2, 3, 5, 6
SCHED_RESET_ON_FORK = 0x40000000
POLICY_NAMES = {0: "other", 1: "fifo", 2: "rr", 3: "batch", 5: "idle", 6: "deadline"}
_SYS_SCHED_GETATTR = {"x86_64": 315, "aarch64": 275, "i686": 352, "armv7l": 381}


def cgroup_hybrid():
    """True on a hybrid (v1 controllers + cgroup2 at unified/) hierarchy."""
    return os.path.exists(os.path.join(CGROUP_BASE, "unified", "cgroup.procs"))


def sched_attr(tid):
    """sched_getattr(2) of a thread as a dict: policy (without flags), flags,
    nice, priority, runtime/deadline/period (ns, for SCHED_DEADLINE)."""
    import ctypes
    import platform

    class Attr(ctypes.Structure):
        _fields_ = [("size", ctypes.c_uint32), ("policy", ctypes.c_uint32),
                    ("flags", ctypes.c_uint64), ("nice", ctypes.c_int32),
                    ("priority", ctypes.c_uint32), ("runtime", ctypes.c_uint64),
                    ("deadline", ctypes.c_uint64), ("period", ctypes.c_uint64),
                    ("util_min", ctypes.c_uint32), ("util_max", ctypes.c_uint32)]
    nr = _SYS_SCHED_GETATTR.get(platform.machine())
    if nr is None:
        pol = os.sched_getscheduler(tid)
        return {"policy": pol & ~SCHED_RESET_ON_FORK,
                "flags": 1 if pol & SCHED_RESET_ON_FORK else 0,
                "nice": os.getpriority(os.PRIO_PROCESS, tid),
                "priority": os.sched_getparam(tid).sched_priority,
                "runtime": 0, "deadline": 0, "period": 0}
    libc = ctypes.CDLL(None, use_errno=True)
    a = Attr()
    if libc.syscall(nr, ctypes.c_int(tid), ctypes.byref(a),
                    ctypes.c_uint(ctypes.sizeof(a)), ctypes.c_uint(0)) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "sched_getattr(%d): %s" % (tid, os.strerror(e)))
    return {"policy": a.policy, "flags": a.flags, "nice": a.nice,
            "priority": a.priority, "runtime": a.runtime, "deadline": a.deadline,
            "period": a.period}


def thread_ids(pid):
    return sorted(int(t) for t in os.listdir("/proc/%d/task" % pid))


def proc_cgroups(pid):
    """{controller: path} from /proc/PID/cgroup; "" is the cgroup2 path."""
    out = {}
    with open("/proc/%d/cgroup" % pid) as fh:
        for line in fh:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            for c in ctrls.split(",") if ctrls else [""]:
                out[c] = path
    return out


def cgroup2_dir(pid):
    """The directory of pid's cgroup2 group."""
    rel = proc_cgroups(pid)[""].lstrip("/")
    base = os.path.join(CGROUP_BASE, "unified") if cgroup_hybrid() else CGROUP_BASE
    return os.path.join(base, rel)


def cpu_cgroup_dir(pid):
    """The directory holding pid's cpu controller files (v1 cpu on a hybrid
    hierarchy, else its cgroup2 group)."""
    cg = proc_cgroups(pid)
    if cgroup_hybrid() and "cpu" in cg:
        return os.path.join(CGROUP_BASE, "cpu", cg["cpu"].lstrip("/"))
    return cgroup2_dir(pid)


def read_cgroup_file(d, name):
    try:
        with open(os.path.join(d, name)) as fh:
            return fh.read().strip()
    except OSError:
        return None


def cgroup2_frozen(pid):
    """1 or 0 from cgroup.events of pid's cgroup2 group; None where the file
    does not exist (the root group cannot be frozen)."""
    ev = read_cgroup_file(cgroup2_dir(pid), "cgroup.events")
    if ev is None:
        return None
    for line in ev.splitlines():
        k, _, v = line.partition(" ")
        if k == "frozen":
            return int(v)
    return None


def qos_state(pid):
    """What the kernel says about pid: its main thread's scheduling attributes,
    every thread's policy, its cgroups and whether its group is frozen."""
    st = sched_attr(pid)
    st["thread_policies"] = {t: sched_attr(t)["policy"] for t in thread_ids(pid)}
    st["policy_name"] = POLICY_NAMES.get(st["policy"], str(st["policy"]))
    st["reset_on_fork"] = bool(st["flags"] & 1)
    st["cgroups"] = proc_cgroups(pid)
    st["cgroup2"] = st["cgroups"].get("")
    st["frozen"] = cgroup2_frozen(pid)
    return st


def write_user_qosrc(comp, text):
    """Write the compositor's user qosrc layer ($XDG_CONFIG_HOME/qosway/qosrc)."""
    conf = comp.env.get("XDG_CONFIG_HOME") or os.path.join(comp.home, ".config")
    d = os.path.join(conf, "qosway")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "qosrc")
    with open(path, "w") as fh:
        fh.write(text)
    return path


def qosway_root_is_live(name):
    """Whether a running qosway holds the root called name: each instance
    keeps an flock on a file named after its root (compositor/qos_bridge/qos_link.c)."""
    for d in ("/run/user", "/tmp"):
        try:
            fd = os.open(os.path.join(d, ".%s.lock" % name), os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        finally:
            os.close(fd)
    return False


def qosway_cgroup_leftovers(skip_live=False, root=None):
    """qosway-* groups in the cgroup2 hierarchy that still hold processes or
    are frozen: [(dir, reason)]. With skip_live, the roots of running
    instances (another test run's, say) are left out; with root, only that
    root (Compositor.qos_root) is looked at."""
    base = os.path.join(CGROUP_BASE, "unified") if cgroup_hybrid() else CGROUP_BASE
    bad = []
    try:
        roots = [n for n in os.listdir(base) if n.startswith("qosway-")
                 and not n.startswith("qosway-bench")
                 and (root is None or n == root)
                 and not (skip_live and qosway_root_is_live(n))]
    except OSError:
        return bad
    for r in roots:
        for d, _, _ in os.walk(os.path.join(base, r)):
            procs = read_cgroup_file(d, "cgroup.procs")
            if procs:
                bad.append((d, "processes " + " ".join(procs.split())))
            ev = read_cgroup_file(d, "cgroup.events") or ""
            if "frozen 1" in ev:
                bad.append((d, "frozen"))
    return bad


# Colours for the QoS feedback, distinct from THEME and from each other.
QOS_THEME = {
    "button-refused": (0xC8, 0x00, 0xB4),
    "text-warning": (0x40, 0xFF, 0x80),
}
PAUSED_DIM_ALPHA = 0x8C   # color paused-dim #0000008C (black)


def qos_test_config(extra=""):
    """test_config() plus distinctive QoS feedback colours."""
    lines = ["color %s %s" % (k, hexcolor(v)) for k, v in QOS_THEME.items()]
    lines.append("color paused-dim #000000%02X" % PAUSED_DIM_ALPHA)
    # Guarantees are SCHED_DEADLINE reservations: keep the manager's capacity
    # (2 x 45% here) well inside what the kernel can still give, so a kernel
    # that leaked deadline bandwidth (seen on 6.18) cannot fail admission
    # tests for the wrong reason.
    lines.append("qos-reserved 55%")
    return test_config("\n".join(lines) + "\n" + extra)
