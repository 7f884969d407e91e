#!/usr/bin/env python3
"""Soak: qosway under an hour (or --minutes N) of QoS churn, watching for
what only shows over time: descriptors and memory the compositor keeps,
processes left frozen, cgroups left behind, deadline bandwidth the kernel
keeps booked.

    python3 tests/bench/soak.py [--minutes 60] [--cycle 60] [--restart-every 4]
                                [--seed 1] [--no-deadline] [--out build/bench/soak]

Run as root from the repository root, with the compositor built
($QOSWAY_BUILD_DIR, default build). One headless qosway runs with the
integration tests' QoS config. The run is split into cycles (--cycle
seconds). In each cycle, random actions (seeded) follow each other:

- windows open (tests/integration/wlclient.py) and go, half of them with
  kill -9, the rest closing cleanly;
- windows are set realtime, idle, paused, nice and normal (qosctl set ID);
- reserves are defined over IPC (qosctl reserve, from a pool of four names
  redefined with new parameters each time: IPC reserves are never removed)
  and windows joined to them;
- reserve protocol clients (reserve_client.py) get a reserve, set
  parameters, join and then destroy it, disconnect, or die by kill -9;
- bursts of short-lived clients connect and leave (churn.py).

At the end of each cycle every client is closed, and the compositor's open
descriptors and resident memory are read in this quiet state, so that
cycles compare like with like. Every --restart-every cycles, two windows are
paused and the compositor is killed with kill -9 instead; its guard must
thaw them, and the next instance is started on the same root, which it
reconciles.

At the end the compositor is stopped with SIGTERM and the run checks that
no process is frozen and no cgroup is left under any root the run used, and
how much SCHED_DEADLINE bandwidth the kernel books beyond its live deadline
tasks, against the start. It prints a table of the checkpoints and the
growth of descriptors and memory per instance, and writes soak.json and
soak.png to --out. Exit status 1 when a check failed (a frozen process, a
left cgroup, kept bandwidth, a compositor that crashed or did not exit
cleanly), 0 otherwise; growth is reported, not judged.
"""
import argparse
import datetime
import json
import os
import platform
import random
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
INTEGRATION = os.path.join(REPO, "tests", "integration")
sys.path.insert(0, INTEGRATION)

import protogen  # noqa: E402

protogen.ensure_bindings()

import harness  # noqa: E402

RESERVE_CLIENT = os.path.join(INTEGRATION, "reserve_client.py")
CHURN = os.path.join(INTEGRATION, "churn.py")
CLASSES = ["realtime", "idle", "paused", "nice", "normal"]
IPC_RESERVES = ["soak-a", "soak-b", "soak-c", "soak-d"]
IPC_PARAMS = [
    "policy=qos period=20ms cpu=5% fallback=other",
    "policy=qos period=10ms cpu=3% fallback=idle",
    "policy=other period=100ms cpu=20% fallback=idle",
    "policy=other period=100ms cpu=10% fallback=pause",
    "policy=idle",
    "policy=other nice=5",
]
# Protocol set_params: POLICY FALLBACK PERIOD_US SLICE_US NICE PRIO
PROTO_PARAMS = [
    "qos other 20000 1000 0 0",
    "qos idle 10000 500 0 0",
    "other idle 100000 10000 0 0",
    "idle other 0 0 0 0",
]
MAX_WINDOWS = 6
MAX_RESERVE_CLIENTS = 3


def deadline_tasks_bw():
    """Sum over live SCHED_DEADLINE threads of runtime/period (in the
    kernel's fixed point, << 20)."""
    total = 0
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            tids = os.listdir("/proc/%s/task" % d)
        except OSError:
            continue
        for t in tids:
            try:
                a = harness.sched_attr(int(t))
            except OSError:
                continue
            if a["policy"] == harness.SCHED_DEADLINE and a["period"]:
                total += (a["runtime"] << 20) // a["period"]
    return total


def dl_total_bw():
    """The root domain's booked deadline bandwidth (sched debug), or None."""
    try:
        with open("/sys/kernel/debug/sched/debug") as f:
            for line in f:
                if "dl_bw->total_bw" in line:
                    return int(line.split(":")[1])
    except (OSError, ValueError):
        pass
    return None


def dl_kept():
    """Booked deadline bandwidth no live deadline task accounts for, in CPUs
    (None where sched debug is not readable)."""
    total = dl_total_bw()
    if total is None:
        return None
    return (total - deadline_tasks_bw()) / 2**20


def root_of(pid):
    """The cgroup root a qosway instance holds (its flock'd .NAME.lock)."""
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        base = os.path.basename(target)
        if base.startswith(".qosway-") and base.endswith(".lock"):
            return base[1:-len(".lock")]
    return None


def cgroup_dirs(root):
    """Every directory of the root in every cgroup hierarchy."""
    found = []
    for top in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/cpu",
                "/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup/freezer"):
        d = os.path.join(top, root)
        if os.path.isdir(d):
            found += [w[0] for w in os.walk(d)]
    return found


def frozen_below(root):
    bad = []
    for d in cgroup_dirs(root):
        ev = harness.read_cgroup_file(d, "cgroup.events") or ""
        if "frozen 1" in ev.split("\n"):
            bad.append(d)
        state = harness.read_cgroup_file(d, "freezer.state") or ""
        if state.strip() in ("FROZEN", "FREEZING"):
            bad.append(d)
    return bad


def stopped_processes(pids):
    """Of pids, those in state T or frozen (cgroup2 events) right now."""
    bad = []
    for pid in pids:
        try:
            with open("/proc/%d/stat" % pid) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state == "T" or harness.cgroup2_frozen(pid) == 1:
            bad.append(pid)
    return bad


class Soak:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.logdir = os.path.abspath(args.out)
        os.makedirs(self.logdir, exist_ok=True)
        self.comp = None
        self.instance = 0
        self.roots = set()
        self.windows = []   # (client, window id)
        self.rclients = []  # reserve_client Procs
        self.count = dict(opened=0, closed=0, killed=0, sets=0, refused=0, ipc_reserves=0,
                          joins=0, proto_reserves=0, proto_killed=0, churned=0,
                          compositor_kills=0)
        self.rows = []
        self.failures = []
        self.seen_pids = set()
        self.n = 0
        self.dl_start = self.dl_end = None

    # -- the compositor ------------------------------------------------------------
    def start(self):
        self.instance += 1
        sub = os.path.join(self.logdir, "qosway-%d" % self.instance)
        os.makedirs(sub, exist_ok=True)
        self.comp = harness.Compositor(sub, config=harness.qos_test_config())
        self.comp.wait_ready(60)
        root = root_of(self.comp.pid)
        self.roots.add(root)
        print("instance %d: pid %d, root %s" % (self.instance, self.comp.pid, root), flush=True)

    def check_alive(self, what):
        if not self.comp.alive():
            raise RuntimeError("qosway (instance %d) died during %s:\n%s"
                               % (self.instance, what, self.comp.log_tail(4000)))

    def qosctl(self, *args):
        return self.comp.qosctl(*args, timeout=30)

    # -- actions ---------------------------------------------------------------------
    def open_window(self):
        if len(self.windows) >= MAX_WINDOWS:
            return self.close_window()
        self.n += 1
        title = "soak-%d" % self.n
        c = self.comp.spawn_wlclient(title=title, color="%06x" % self.rng.randrange(1 << 24),
                                     width=200, height=150)
        c.wait_event("mapped", timeout=30)
        self.seen_pids.add(c.pid)
        self.windows.append((c, self.comp.window_by_title(title, timeout=30)["id"]))
        self.count["opened"] += 1

    def close_window(self):
        if not self.windows:
            return self.open_window()
        c, _ = self.windows.pop(self.rng.randrange(len(self.windows)))
        self.end_client(c, self.rng.random() < 0.5)

    def end_client(self, c, kill9):
        if kill9 or not c.alive():
            try:
                os.killpg(c.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.count["killed"] += 1
        else:
            try:
                c.send("quit")
            except OSError:
                pass
            self.count["closed"] += 1
        try:
            c.wait(15)
        except AssertionError:
            os.killpg(c.pid, signal.SIGKILL)
            c.wait(5)
        if c in self.comp.clients:
            self.comp.clients.remove(c)

    def pick(self, choices):
        """A random choice, without SCHED_DEADLINE ones under --no-deadline."""
        if self.args.no_deadline:
            choices = [c for c in choices if "realtime" not in c and "qos" not in c]
        return self.rng.choice(choices)

    def set_class(self):
        if not self.windows:
            return self.open_window()
        _, wid = self.rng.choice(self.windows)
        r = self.qosctl("set", str(wid), self.pick(CLASSES))
        self.count["sets"] += 1
        self.count["refused"] += r.returncode != 0

    def ipc_reserve(self):
        name = self.rng.choice(IPC_RESERVES)
        r = self.qosctl("reserve", name, *self.pick(IPC_PARAMS).split())
        self.count["ipc_reserves"] += 1
        self.count["refused"] += r.returncode != 0
        if r.returncode == 0 and self.windows:
            _, wid = self.rng.choice(self.windows)
            r = self.qosctl("join", str(wid), name)
            self.count["joins"] += 1
            self.count["refused"] += r.returncode != 0

    def protocol_reserve(self):
        if len(self.rclients) >= MAX_RESERVE_CLIENTS:
            p = self.rclients.pop(0)
            how = self.rng.choice(["quit", "disconnect", "kill"])
            if how == "kill":
                self.end_client(p, True)
                self.count["proto_killed"] += 1
            else:
                p.send(how)
                if how == "disconnect":
                    p.wait_event("disconnected", timeout=15)
                    p.send("quit")
                self.end_client(p, False)
            return
        p = self.comp.spawn([sys.executable, "-u", RESERVE_CLIENT], name="reserve-%d" % self.n)
        self.n += 1
        self.seen_pids.add(p.pid)
        p.wait_event("ready", timeout=30)
        self.rclients.append(p)
        for k in range(self.rng.randint(1, 3)):
            m = p.mark()
            p.send("get soak-p%d" % self.rng.randrange(4) if k else "get")
            idx = p.wait_event("object", start=m, timeout=15)["idx"]
            p.send("params %d %s" % (idx, self.pick(PROTO_PARAMS)))
            p.send("join %d 0" % idx)
            if self.rng.random() < 0.5:
                p.send("destroy %d" % idx)
            m = p.mark()
            p.send("sync")
            p.wait_event("synced", start=m, timeout=15)
            self.count["proto_reserves"] += 1

    def churn(self):
        n = self.rng.randint(6, 24)
        p = self.comp.spawn([sys.executable, CHURN, str(n), "4"], name="churn-%d" % self.n,
                            stdin=False)
        self.n += 1
        rc = p.wait(120)
        if rc != 0:
            self.failures.append("churn.py exited %d: %s" % (rc, p.stderr_tail(1000)))
        self.comp.clients.remove(p)
        self.count["churned"] += n

    ACTIONS = [(open_window, 3), (close_window, 2), (set_class, 5), (ipc_reserve, 2),
               (protocol_reserve, 2), (churn, 1)]

    def act(self):
        fns, weights = zip(*self.ACTIONS)
        fn = self.rng.choices(fns, weights)[0]
        fn(self)
        self.check_alive(fn.__name__)

    # -- checkpoints -----------------------------------------------------------------
    def quiesce(self):
        """Close every client: what the compositor holds then is its own."""
        while self.windows:
            c, _ = self.windows.pop()
            self.end_client(c, self.rng.random() < 0.5)
        while self.rclients:
            self.end_client(self.rclients.pop(), self.rng.random() < 0.5)
        # the compositor has seen every disconnect once a fresh request is answered
        harness.wait_for(lambda: not self.comp.windows(), 15, desc="no windows left")

    def sample(self, t0, cycle):
        pid = self.comp.pid
        row = dict(minute=round((time.monotonic() - t0) / 60, 2), cycle=cycle,
                   instance=self.instance, fds=harness.fd_count(pid),
                   rss_kib=harness.rss_kib(pid),
                   reserves=len(json.loads(self.qosctl("--json", "reserves").stdout)["reserves"]),
                   dl_kept=dl_kept(), actions=sum(self.count.values()))
        self.rows.append(row)
        print("checkpoint %(cycle)3d  min %(minute)6.2f  instance %(instance)d  fds %(fds)4d  "
              "rss %(rss_kib)7d KiB  reserves %(reserves)2d  actions %(actions)d" % row,
              flush=True)

    def kill_with_paused_clients(self):
        """kill -9 with two paused windows: the guard thaws them."""
        while len(self.windows) < 2:
            self.open_window()
        paused = self.windows[:2]
        for c, wid in paused:
            r = self.qosctl("set", str(wid), "paused")
            if r.returncode != 0:
                self.failures.append("pausing window %d: %s" % (wid, r.stdout + r.stderr))
        harness.wait_for(lambda: all(harness.cgroup2_frozen(c.pid) == 1 for c, _ in paused),
                         15, desc="paused windows frozen")
        os.kill(self.comp.pid, signal.SIGKILL)
        self.comp.proc.wait(10)
        self.count["compositor_kills"] += 1
        try:
            harness.wait_for(lambda: not stopped_processes([c.pid for c, _ in paused]), 10,
                             desc="paused windows thawed after kill -9")
        except AssertionError as e:
            self.failures.append(str(e))
        for c, _ in self.windows + [(p, None) for p in self.rclients]:
            try:
                os.killpg(c.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            c.wait(10)
        self.windows, self.rclients = [], []
        self.comp.cleanup()
        self.start()

    # -- the run ---------------------------------------------------------------------
    def run(self):
        self.dl_start = dl_kept()
        self.start()
        t0 = time.monotonic()
        end = t0 + self.args.minutes * 60
        cycle = 0
        self.quiesce()
        self.sample(t0, cycle)
        while time.monotonic() < end:
            cycle += 1
            cycle_end = min(end, time.monotonic() + self.args.cycle)
            while time.monotonic() < cycle_end:
                self.act()
            if self.args.restart_every and cycle % self.args.restart_every == 0:
                self.kill_with_paused_clients()
            self.quiesce()
            self.sample(t0, cycle)
        self.finish()

    def finish(self):
        rc = self.comp.terminate()
        if rc != 0:
            self.failures.append("qosway exited %d on SIGTERM" % rc)
        reports = self.comp.sanitizer_reports()
        if reports:
            self.failures.append("sanitizer reports: %s" % reports)
        self.comp.cleanup()
        time.sleep(0.5)
        for root in sorted(r for r in self.roots if r):
            if harness.qosway_root_is_live(root):
                continue  # taken meanwhile by another qosway on this machine
            left = cgroup_dirs(root)
            if left:
                self.failures.append("cgroups left under %s: %s" % (root, left[:5]))
            frozen = frozen_below(root)
            if frozen:
                self.failures.append("frozen groups under %s: %s" % (root, frozen))
        stopped = stopped_processes(self.seen_pids)
        if stopped:
            self.failures.append("processes left stopped or frozen: %s" % stopped)
        self.dl_end = dl_kept()
        if self.dl_start is not None and self.dl_end is not None and \
                self.dl_end - self.dl_start > 0.001:
            self.failures.append("deadline bandwidth kept: %.4f CPUs at the end, %.4f at the "
                                 "start" % (self.dl_end, self.dl_start))

    # -- the report ------------------------------------------------------------------
    def growth(self):
        """Per instance: descriptors and RSS at its start (no reserve yet),
        after its first cycle (warm) and at its last checkpoint; the growth
        is last minus warm."""
        out = []
        for inst in sorted({r["instance"] for r in self.rows}):
            rows = [r for r in self.rows if r["instance"] == inst]
            warm = rows[1] if len(rows) > 1 else rows[0]
            last = rows[-1]
            out.append(dict(instance=inst, checkpoints=len(rows),
                            minutes=round(last["minute"] - warm["minute"], 2),
                            fds_start=rows[0]["fds"], fds_warm=warm["fds"], fds_last=last["fds"],
                            fds_max=max(r["fds"] for r in rows),
                            rss_start_kib=rows[0]["rss_kib"], rss_warm_kib=warm["rss_kib"],
                            rss_last_kib=last["rss_kib"],
                            rss_max_kib=max(r["rss_kib"] for r in rows)))
        return out

    def report(self, started):
        growth = self.growth()
        data = dict(date=started, machine=machine(), minutes=self.args.minutes,
                    cycle_s=self.args.cycle, seed=self.args.seed,
                    build=harness.build_dir(), counts=self.count, checkpoints=self.rows,
                    growth=growth, dl_kept_start=self.dl_start, dl_kept_end=self.dl_end,
                    failures=self.failures)
        with open(os.path.join(self.logdir, "soak.json"), "w") as f:
            json.dump(data, f, indent=1)
        chart(self.rows, os.path.join(self.logdir, "soak.png"))
        print()
        print("soak %s, %s, %s min, build %s, seed %d" % (started, machine(), self.args.minutes,
                                                          harness.build_dir(), self.args.seed))
        print("actions: " + ", ".join("%s %d" % kv for kv in self.count.items()))
        print()
        print("| instance | checkpoints | warm → last (min) | fds start / warm → last (max) "
              "| RSS MiB start / warm → last (max) |")
        print("|---|---|---|---|---|")
        for g in growth:
            print("| %d | %d | %.1f | %d / %d → %d (%d) | %.1f / %.1f → %.1f (%.1f) |" % (
                g["instance"], g["checkpoints"], g["minutes"], g["fds_start"], g["fds_warm"],
                g["fds_last"], g["fds_max"], g["rss_start_kib"] / 1024, g["rss_warm_kib"] / 1024,
                g["rss_last_kib"] / 1024, g["rss_max_kib"] / 1024))
        print()
        fmt = lambda v: "n/a" if v is None else "%.4f" % v  # noqa: E731
        print("deadline bandwidth booked beyond live deadline tasks: %s CPUs at the start, "
              "%s at the end" % (fmt(self.dl_start), fmt(self.dl_end)))
        for f in self.failures:
            print("FAILED: " + f)
        print("soak: %s" % ("FAILED" if self.failures else "ok"))


def machine():
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f
                         if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return "%s, %d CPUs, Linux %s" % (model, os.cpu_count(), platform.release())


def chart(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no chart")
        return
    fig, ax1 = plt.subplots(figsize=(8, 4))
    t = [r["minute"] for r in rows]
    ax1.plot(t, [r["fds"] for r in rows], "o-", color="tab:blue", label="open fds")
    ax1.set_xlabel("minutes")
    ax1.set_ylabel("open descriptors", color="tab:blue")
    ax2 = ax1.twinx()
    ax2.plot(t, [r["rss_kib"] / 1024 for r in rows], "s-", color="tab:red", label="RSS")
    ax2.set_ylabel("RSS (MiB)", color="tab:red")
    for r0, r1 in zip(rows, rows[1:]):
        if r1["instance"] != r0["instance"]:
            ax1.axvline(r1["minute"], color="gray", linestyle=":")
    ax1.set_title("qosway at each quiet checkpoint (dotted: kill -9 and restart)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--cycle", type=float, default=60, help="seconds between checkpoints")
    ap.add_argument("--restart-every", type=int, default=4,
                    help="kill -9 and restart the compositor every N cycles (0: never)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-deadline", action="store_true",
                    help="leave out realtime windows and qos reserves (no SCHED_DEADLINE)")
    ap.add_argument("--out", default=os.path.join(REPO, "build", "bench", "soak"))
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("soak: run as root (cgroups, scheduling classes, freezing)")
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    soak = Soak(args)
    try:
        soak.run()
    except Exception as e:  # report what was measured, then fail
        soak.failures.append("%s: %s" % (type(e).__name__, e))
        if soak.comp and soak.comp.alive():
            try:
                soak.finish()
            except Exception as e2:
                soak.failures.append("finishing: %r" % e2)
    finally:
        if soak.comp:
            soak.comp.cleanup()
    if soak.dl_end is None:
        soak.dl_end = dl_kept()
    soak.report(started)
    return 1 if soak.failures else 0


if __name__ == "__main__":
    sys.exit(main())
