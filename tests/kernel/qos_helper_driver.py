"""Driver for tests/kernel/qos-helper: one QoS manager taking commands on stdin.

Shared by the kernel tests (tests/kernel/kernel_helpers.py, test_cgroup_files.py)
and the qos benchmarks (tests/bench/qos_common.py).  The helper answers each
command with one line ("ok ..." or "err ..."); lines starting with "event "
may come at any time and are collected in `events`.
"""
import glob
import os
import queue
import signal
import subprocess
import threading
import time

CG = "/sys/fs/cgroup"


class HelperError(AssertionError):
    """qos-helper did not start or refused a command (an AssertionError, so
    that pytest reports it as a failed check)."""


class QosHelper:
    def __init__(self, binary, root, guardian=True, extra=(), close_timeout=5, pass_fds=(),
                 prefix=()):
        """prefix: a command that runs the helper (its arguments appended)."""
        args = list(prefix) + [binary, "--root", root] + list(extra)
        if not guardian:
            args.append("--no-guardian")
        self.close_timeout = close_timeout
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, bufsize=1, pass_fds=pass_fds)
        self.events = []
        self.lines = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        try:
            line = self._line(10)
            while line.startswith("event "):  # reconciliation reports come first
                self.events.append(line)
                line = self._line(10)
            if not line.startswith("ready"):
                raise HelperError("qos-helper: " + line)
        except BaseException:
            self.close()
            raise
        self.ready = line

    def _read(self):
        # A thread, because select() cannot see lines already in the pipe's buffer.
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def _line(self, timeout):
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError("qos-helper did not answer")
        if line is None:
            self.lines.put(None)
            raise EOFError("qos-helper exited")
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
            raise HelperError("%s -> %s" % (text, reply))
        return reply

    def path(self, name):
        """The reserve's cgroup2 and cpu group directories."""
        parts = dict(p.split("=", 1) for p in self.ok("path " + name).split()[1:])
        return parts["v2"], parts["cpu"]

    def open_files(self):
        """What the manager process has open (descriptor link targets)."""
        out = []
        for fd in os.listdir("/proc/%d/fd" % self.proc.pid):
            try:
                out.append(os.readlink("/proc/%d/fd/%s" % (self.proc.pid, fd)))
            except OSError:
                pass  # closed meanwhile
        return out

    def close(self):
        """Ends the manager with "quit"; quit_cleanly says whether it was
        still running and exited with 0 (a clean shutdown, which must leave
        no group of its own behind)."""
        self.quit_cleanly = False
        if self.proc.poll() is None:
            try:
                self.cmd("quit", timeout=self.close_timeout)
            except (TimeoutError, EOFError, BrokenPipeError):
                pass
            try:
                self.proc.wait(self.close_timeout)
                self.quit_cleanly = self.proc.returncode == 0
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def groups_below(root):
    """The groups below the cgroup root `root` (not root itself), in every
    hierarchy: CG/ROOT on pure cgroup v2, CG/*/ROOT on the hybrid layout."""
    out = []
    for top in glob.glob("%s/%s" % (CG, root)) + glob.glob("%s/*/%s" % (CG, root)):
        for dirpath, dirnames, _ in os.walk(top):
            out += [os.path.join(dirpath, d) for d in dirnames]
    return sorted(out)


def rmdir_when_empty(group, tries):
    """Removes a cgroup directory, waiting up to `tries` times 50 ms for the
    tasks in it to finish exiting."""
    for _ in range(tries):
        try:
            os.rmdir(group)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.05)


def force_cleanup(root):
    """Last resort: thaw, kill and remove whatever is left below the cgroup
    root `root` (in every hierarchy), innermost groups first, giving back
    each group's real-time runtime (a dying group keeps holding it)."""
    for top in glob.glob("%s/%s" % (CG, root)) + glob.glob("%s/*/%s" % (CG, root)):
        # Hidden groups too: the guardian's leaf is ".guardian".
        for group in sorted(glob.glob(top + "/**/", recursive=True, include_hidden=True),
                            reverse=True):
            for name, value in (("cgroup.freeze", "0"), ("cpu.rt_runtime_us", "0")):
                try:
                    with open(group + name, "w") as f:
                        f.write(value)
                except OSError:
                    pass
            for procs in ("cgroup.procs", "tasks"):
                try:
                    with open(group + procs) as f:
                        for pid in f.read().split():
                            try:
                                os.kill(int(pid), signal.SIGKILL)
                            except OSError:
                                pass
                except OSError:
                    pass
            rmdir_when_empty(group, 50)
