"""Shared plumbing for the qos benchmarks (tests/bench/qos_*.py).

They drive the QoS manager through tests/qos/qos-helper (one manager per
run, its own cgroup root "qosway-bench-<pid>") and run their workloads with
tests/qos/qos-bench.  Everything they start is stopped, and the cgroup root
removed, on normal exit, failure, Ctrl-C and SIGTERM.
"""
import glob
import math
import os
import queue
import signal
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROOT = "qosway-bench-%d" % os.getpid()
CG = "/sys/fs/cgroup"

_started = []


def find_build(explicit=None):
    """The build directory holding tests/qos/qos-helper and qos-bench."""
    candidates = [explicit] if explicit else [
        os.environ.get("QOSWAY_BUILD_DIR"), "build", "build-qos2", "build-qos", "build-bench"]
    for c in candidates:
        if not c:
            continue
        d = c if os.path.isabs(c) else os.path.join(REPO, c)
        if all(os.path.exists(os.path.join(d, "tests", "qos", b))
               for b in ("qos-helper", "qos-bench")):
            return d
    sys.exit("qos-helper/qos-bench not built (meson compile -C build qos-helper qos-bench), "
             "or pass --build DIR")


def spawn(argv, **kw):
    p = subprocess.Popen(argv, start_new_session=True, **kw)
    _started.append(p)
    return p


def stop(p):
    if p.poll() is None:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        p.wait(5)
    except subprocess.TimeoutExpired:
        pass


def spin(bench, cpu=None):
    argv = [bench, "spin"]
    if cpu is not None:
        argv = ["taskset", "-c", str(cpu)] + argv
    return spawn(argv)


def cleanup():
    for p in reversed(_started):
        if isinstance(p, Manager):
            p.close()
        else:
            stop(p)
    del _started[:]
    # Last resort: thaw and remove whatever a crashed manager left.
    for top in glob.glob("%s/*/%s" % (CG, ROOT)):
        for group in sorted(glob.glob(top + "/*/"), reverse=True) + [top + "/"]:
            for _ in range(40):
                try:
                    os.rmdir(group)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)


def _on_signal(signum, frame):
    cleanup()
    sys.exit(128 + signum)


def install_handlers():
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGHUP, _on_signal)


class Manager:
    """One qos-helper process: a QoS manager taking commands on stdin."""

    def __init__(self, build, extra=()):
        argv = [os.path.join(build, "tests", "qos", "qos-helper"), "--root", ROOT] + list(extra)
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, bufsize=1)
        _started.append(self)
        self.events = []
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        line = self._line(10)
        while line.startswith("event "):
            line = self._line(10)
        if not line.startswith("ready"):
            raise RuntimeError("qos-helper: " + line)
        self.ready = line

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def _line(self, timeout):
        line = self.lines.get(timeout=timeout)
        if line is None:
            self.lines.put(None)
            raise RuntimeError("qos-helper exited")
        return line

    def cmd(self, text, timeout=10):
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()
        while True:
            line = self._line(timeout)
            if line.startswith("event "):
                self.events.append(line)
                continue
            return line

    def ok(self, text):
        reply = self.cmd(text)
        if not reply.startswith("ok"):
            raise RuntimeError("%s -> %s" % (text, reply))
        return reply

    def cpu_ns(self):
        """CPU time of the manager process, all its threads (schedstat, ns)."""
        total = 0
        for f in glob.glob("/proc/%d/task/*/schedstat" % self.proc.pid):
            try:
                with open(f) as fh:
                    total += int(fh.read().split()[0])
            except OSError:
                pass
        return total

    def close(self):
        if self.proc.poll() is None:
            try:
                self.cmd("quit", timeout=10)
            except Exception:
                pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self in _started:
            _started.remove(self)


def percentile(sorted_values, q):
    """Nearest-rank percentile of an already sorted list."""
    if not sorted_values:
        return float("nan")
    k = max(0, min(len(sorted_values) - 1, math.ceil(q * len(sorted_values)) - 1))
    return sorted_values[k]


def machine_note():
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    hz = "?"
    for path in ("/boot/config-%s" % os.uname().release,):
        try:
            with open(path) as f:
                for line in f:
                    if line.startswith("CONFIG_HZ="):
                        hz = line.split("=")[1].strip()
        except OSError:
            pass
    return {"kernel": os.uname().release, "cpus": os.cpu_count(), "config_hz": hz,
            "loadavg_at_start": load}


def out_dir(explicit, build):
    d = explicit or os.path.join(build, "bench")
    os.makedirs(d, exist_ok=True)
    return d


def can_chart():
    try:
        import matplotlib  # noqa: F401
        matplotlib.use("Agg")
        return True
    except ImportError:
        print("matplotlib not installed: no chart (pip install matplotlib)", file=sys.stderr)
        return False
