"""Shared plumbing for the qos benchmarks (tests/bench/qos_*.py).

They drive the QoS manager through tests/kernel/qos-helper (one manager per
run, its own cgroup root "qosway-bench-<pid>") and run their workloads with
tests/bench/qos-bench.  Everything they start is stopped, and the cgroup root
removed, on normal exit, failure, Ctrl-C and SIGTERM.
"""
import glob
import math
import os
import signal
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "kernel"))
from qos_helper_driver import QosHelper, force_cleanup  # noqa: E402

ROOT = "qosway-bench-%d" % os.getpid()
# A scratch group of the benchmarks, next to the manager's root (never below it).
PROBE = ROOT + "-probe"

_started = []


# Where the build directory keeps the manager and the workloads.
HELPER_PATH = os.path.join("tests", "kernel", "qos-helper")
BENCH_PATH = os.path.join("tests", "bench", "qos-bench")


def find_build(explicit=None):
    """The build directory holding tests/kernel/qos-helper and tests/bench/qos-bench."""
    candidates = [explicit] if explicit else [
        os.environ.get("QOSWAY_BUILD_DIR"), "build", "build-qos2", "build-qos", "build-bench"]
    for c in candidates:
        if not c:
            continue
        d = c if os.path.isabs(c) else os.path.join(REPO, c)
        if all(os.path.exists(os.path.join(d, b)) for b in (HELPER_PATH, BENCH_PATH)):
            return d
    if explicit:
        sys.exit("%s has no %s and %s (meson compile -C %s qos-helper qos-bench)"
                 % (explicit, HELPER_PATH, BENCH_PATH, explicit))
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


def cpu_ns_of(pid):
    """CPU time of a process, all its threads (schedstat, ns)."""
    total = 0
    for f in glob.glob("/proc/%d/task/*/schedstat" % pid):
        try:
            with open(f) as fh:
                total += int(fh.read().split()[0])
        except OSError:
            pass
    return total


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
    force_cleanup(ROOT)  # last resort: whatever a crashed manager left
    force_cleanup(PROBE)


def _on_signal(signum, frame):
    cleanup()
    sys.exit(128 + signum)


def install_handlers():
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGHUP, _on_signal)


class Manager(QosHelper):
    """One qos-helper process: a QoS manager taking commands on stdin."""

    def __init__(self, build, extra=()):
        super().__init__(os.path.join(build, HELPER_PATH), ROOT,
                         extra=extra, close_timeout=10)
        _started.append(self)

    def cpu_ns(self):
        """CPU time of the manager process, all its threads (schedstat, ns)."""
        return cpu_ns_of(self.proc.pid)

    def close(self):
        super().close()
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
