#!/usr/bin/env python3
"""A client under a CPU limit whose compositing is costly: does the limit
cover what the compositor spends for it?

One qos-player draws a small buffer (320x240, 3 ms of its own CPU a frame)
that qosway scales to nearly full screen (-V 1800x1000): its own work stays
under its limit, the compositor's work for it does not. For 10 s it plays

  (a) reserve   in a reserve `policy=other period=50ms cpu=20% fallback=pause`,
                qosway with `scheduling on` (billing on)
  (b) bill-off  the same with `scheduling bill off`
  (c) cgroup    in no reserve but in a cpu cgroup of its own limited by hand
                to 20% (v1 cfs_quota_us=10000 / cfs_period_us=50000, or
                cpu.max "10000 50000" on a pure v2 hierarchy), billing on

and the script reports the client's own CPU time (schedstat) and the
compositor time billed to it (server_cpu_us, `qosctl --json clients`), each
as % of one CPU over the window. Goal: own + server within 20% +- 2 in (a)
and (c). Anchor (without billing): about 18% own + 7.5% compositor = 25%.

A qosway without the scheduler has no server_cpu_us: the script says so and
reports the rest. A benchmark, not a test: it exits 0 whenever it produced
numbers. See tests/bench/README.md.
"""

import argparse
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
import peers  # noqa: E402
from peers import RunFailed, SkipCompositor, tail  # noqa: E402

LIMIT_PCT = 20.0
TOLERANCE_PCT = 2.0
GOAL = (f"own + server CPU within {LIMIT_PCT:g}% +- {TOLERANCE_PCT:g} of one CPU "
        "in (a) reserve and (c) cgroup")
# The anchor, without billing: 18% own + 7.5% compositor, "about 25%".
ANCHOR = {"own_pct": 18.0, "compositor_pct": 7.5, "total_pct": 25.0}
RESERVE = "limited"
CASES = {
    "reserve": {"label": "(a) reserve, billing on", "config": ["scheduling on"],
                "judged": True},
    "bill-off": {"label": "(b) reserve, bill off",
                 "config": ["scheduling on", "scheduling bill off"], "judged": False},
    "cgroup": {"label": "(c) own cgroup, billing on", "config": ["scheduling on"],
               "judged": True},
}
CGROUP_ROOT = "/sys/fs/cgroup"


class CaseSkipped(SkipCompositor):
    """This case cannot run here; the message says why."""


class CpuLimitGroup:
    """A cpu cgroup of its own, limited to quota_us every period_us: v1 cpu
    controller where it is mounted (hybrid hierarchy), else cgroup2. It is
    removed by remove() and, whatever happens, by peers.cleanup()."""

    def __init__(self, name, quota_us, period_us):
        self.path = None
        self.version, self.base = self.layout()
        path = os.path.join(self.base, name)
        try:
            os.mkdir(path)
        except OSError as e:
            raise CaseSkipped(f"cannot create cgroup {path}: {e.strerror}")
        self.path = path
        peers.on_cleanup(self.remove)
        try:
            if self.version == 1:
                self.write("cpu.cfs_period_us", str(period_us))
                self.write("cpu.cfs_quota_us", str(quota_us))
            else:
                self.write("cpu.max", f"{quota_us} {period_us}")
        except OSError as e:
            self.remove()
            raise CaseSkipped(f"cannot limit cgroup {path}: {e.strerror}")

    @staticmethod
    def layout():
        v2_root = os.path.join(CGROUP_ROOT, "cgroup.controllers")
        v1_cpu = os.path.join(CGROUP_ROOT, "cpu")
        if os.path.exists(os.path.join(v1_cpu, "cpu.cfs_quota_us")):
            return 1, v1_cpu
        if os.path.exists(v2_root):
            with open(v2_root) as f:
                if "cpu" not in f.read().split():
                    raise CaseSkipped("the cgroup2 root has no cpu controller")
            control = os.path.join(CGROUP_ROOT, "cgroup.subtree_control")
            with open(control) as f:
                enabled = "cpu" in f.read().split()
            if not enabled:
                # systemd enables it for its slices; without systemd it may
                # be off, and a child group has no cpu.max until it is on.
                try:
                    with open(control, "w") as f:
                        f.write("+cpu")
                except OSError as e:
                    raise CaseSkipped(f"cannot enable the cpu controller: {e.strerror}")
            return 2, CGROUP_ROOT
        raise CaseSkipped("no cpu cgroup controller (v1 cpu or cgroup2 with cpu)")

    def write(self, name, value):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(value)

    def add(self, pid):
        self.write("cgroup.procs", str(pid))

    def holds(self, pid):
        with open(f"/proc/{pid}/cgroup") as f:
            for line in f:
                _, ctrls, path = line.rstrip("\n").split(":", 2)
                mine = "cpu" in ctrls.split(",") if self.version == 1 else ctrls == ""
                if mine:
                    return os.path.join(self.base, path.lstrip("/")) == self.path
        return False

    def stat(self):
        """cpu.stat as a dict of integers (throttling counters)."""
        out = {}
        try:
            with open(os.path.join(self.path, "cpu.stat")) as f:
                for line in f:
                    k, _, v = line.partition(" ")
                    if v.strip().isdigit():
                        out[k] = int(v)
        except OSError:
            pass
        return out

    def remove(self):
        if self.path is None:
            return
        path, self.path = self.path, None
        peers.forget_cleanup(self.remove)
        # Anything still inside (a player that would not die) goes back to
        # the root group, so the directory can go.
        deadline = time.monotonic() + 5.0
        while True:
            try:
                os.rmdir(path)
                return
            except FileNotFoundError:
                return
            except OSError as e:
                try:
                    with open(os.path.join(path, "cgroup.procs")) as f:
                        pids = f.read().split()
                    for pid in pids:
                        with open(os.path.join(self.base, "cgroup.procs"), "w") as f:
                            f.write(pid)
                except OSError:
                    pass
                if time.monotonic() > deadline:
                    print(f"cleanup: cannot remove cgroup {path}: {e.strerror}",
                          file=sys.stderr)
                    return
                time.sleep(0.1)


def reserve_entry(comp):
    reply, _ = comp.query("reserves")
    for r in (reply or {}).get("reserves") or []:
        if isinstance(r, dict) and r.get("name") == RESERVE:
            return r
    return None


def client_entry(comp, pid):
    """(entry, None) for pid from `qosctl --json clients`, or (None, why)."""
    reply, why = comp.query("clients")
    if reply is None:
        return None, f"`qosctl --json clients` failed: {why}"
    for c in reply.get("clients") or []:
        if isinstance(c, dict) and c.get("pid") == pid:
            if not isinstance(c.get("server_cpu_us"), (int, float)):
                return None, "the client entry lacks server_cpu_us"
            return c, None
    return None, f"`qosctl --json clients` lists no entry for pid {pid}"


def snapshot(comp, pid, group):
    entry, why = client_entry(comp, pid)
    return {
        "client": entry, "client_why": why,
        "reserve": reserve_entry(comp) if group is None else None,
        "cgroup": group.stat() if group is not None else None,
        "own_s": peers.proc_runtime_s(pid),
        "compositor_s": peers.proc_runtime_s(comp.proc.pid),
        "t": time.monotonic(),
    }


def delta(before, after, keys):
    if not isinstance(before, dict) or not isinstance(after, dict):
        return None
    return {k: after[k] - before[k] for k in keys
            if isinstance(before.get(k), (int, float)) and isinstance(after.get(k), (int, float))}


def measure(comp, case, player, logdir, tag, args):
    """One case: fresh qosway, the player limited before it connects,
    warm-up, window."""
    comp.start(logdir, tag)
    proc = None
    group = None
    err_path = os.path.join(logdir, f"{tag}.client.err")
    try:
        if case != "cgroup":
            comp.qosctl_ok("reserve", RESERVE, *args.reserve.split())
        gate = peers.Gate()
        argv = [player, "-n", "0", "-u", str(args.work_us), "-W", str(args.width),
                "-H", str(args.height), "-V", args.view, "-t", "limited"]
        with open(err_path, "w") as err:
            proc = gate.spawn(argv, env=comp.client_env(), stdout=subprocess.PIPE,
                              stderr=err, text=True)
        if case == "cgroup":
            group = CpuLimitGroup(f"qosway-bench-limit-{os.getpid()}", args.quota_us,
                                  args.period_us)
            group.add(proc.pid)
        else:
            comp.qosctl_ok("join", f"pid:{proc.pid}", RESERVE)
        gate.open()
        gate.close()
        time.sleep(args.warmup)
        peers.wait_sigusr1_ready([proc], 10.0, lambda i: tail(err_path))
        if comp.proc.poll() is not None:
            raise SkipCompositor(f"qosway died during warm-up; log tail:\n{tail(comp.log)}")
        if group is not None:
            placed = group.holds(proc.pid)
        else:
            entry = reserve_entry(comp)
            placed = bool(entry) and any(m.get("pid") == proc.pid
                                         for m in entry.get("members") or [])
        if not placed:
            raise RunFailed(f"the player is not in its {case} after the warm-up")

        busy0, total0 = peers.machine_busy_ticks()
        before = snapshot(comp, proc.pid, group)
        proc.send_signal(signal.SIGUSR1)
        time.sleep(args.measure)
        after = snapshot(comp, proc.pid, group)
        busy1, total1 = peers.machine_busy_ticks()
        proc.send_signal(signal.SIGTERM)
        report = peers.player_report(proc, 0, 10, lambda i: tail(err_path), after="on SIGTERM")
        complaints = comp.config_complaints("scheduling")
        viewport = "lacks wp_viewporter" not in tail(err_path, 50)
    finally:
        if proc is not None:
            peers.stop_group(proc)
        comp.stop()
        if group is not None:
            group.remove()

    wall = after["t"] - before["t"]
    r = {
        "wall_s": wall,
        "own_pct": (after["own_s"] - before["own_s"]) / wall * 100,
        "compositor_pct": (after["compositor_s"] - before["compositor_s"]) / wall * 100,
        "frames": report["frames"],
        "fps": report["fps"],
        "worst_gap_ms": report["worst_gap_ms"],
        "scaled": viewport,
        "machine_busy": (busy1 - busy0) / max(total1 - total0, 1),
        "config_complaints": complaints,
        "client_missing": before["client_why"] or after["client_why"],
        # used_us and billed_us are per period: only the overrun count
        # grows over the window; the last period's use is kept as a sample.
        "reserve_delta": delta(before["reserve"], after["reserve"], ("overruns",)),
        "reserve_sample": {k: after["reserve"].get(k) for k in (
            "used_us", "billed_us", "last_used_us", "in_fallback")}
        if isinstance(after["reserve"], dict) else None,
        "cgroup_delta": delta(before["cgroup"], after["cgroup"],
                              ("nr_periods", "nr_throttled", "throttled_time",
                               "throttled_usec")),
    }
    if r["client_missing"] is None:
        b, a = before["client"], after["client"]
        r["server_pct"] = (a["server_cpu_us"] - b["server_cpu_us"]) / 1e6 / wall * 100
        r["total_pct"] = r["own_pct"] + r["server_pct"]
        if isinstance(a.get("billed_us"), (int, float)) and isinstance(
                b.get("billed_us"), (int, float)):
            r["billed_pct"] = (a["billed_us"] - b["billed_us"]) / 1e6 / wall * 100
    return r


def summarise(results):
    summary = {}
    for case, runs in results.items():
        if runs:
            summary[case] = {k: benchlib.median_of(runs, k) for k in (
                "own_pct", "server_pct", "total_pct", "billed_pct", "compositor_pct", "fps",
                "machine_busy")}
            summary[case]["runs"] = len(runs)
    return summary


def pct(v):
    return "-" if v is None else f"{v:.1f}"


def judge(case, s):
    if not CASES[case]["judged"]:
        return "(not judged)"
    if s.get("total_pct") is None:
        return "not evaluated"
    ok = abs(s["total_pct"] - LIMIT_PCT) <= TOLERANCE_PCT
    return "ok" if ok else ("ABOVE" if s["total_pct"] > LIMIT_PCT else "BELOW")


def format_table(summary):
    head = ["case", "own %", "server %", "own+server %", "billed %", "compositor %", "fps",
            "goal"]
    rows = []
    for case, spec in CASES.items():
        s = summary.get(case)
        if s is None:
            continue
        rows.append([spec["label"], pct(s["own_pct"]), pct(s["server_pct"]),
                     pct(s["total_pct"]), pct(s["billed_pct"]), pct(s["compositor_pct"]),
                     pct(s["fps"]),
                     judge(case, s)])
    rows.append(["anchor: no billing", pct(ANCHOR["own_pct"]), "-",
                 f"about {ANCHOR['total_pct']:.0f} (own + compositor)", "-",
                 pct(ANCHOR["compositor_pct"]), "-", "-"])
    return peers.format_rows(head, rows)


def verdict(summary):
    words = [judge(c, summary[c]) for c in CASES if CASES[c]["judged"] and c in summary]
    if not words or any(w == "not evaluated" for w in words):
        return "not evaluated (no server_cpu_us: see the notes above)"
    if len(words) < sum(1 for c in CASES.values() if c["judged"]):
        return "not evaluated (a judged case produced no numbers)"
    return "MET" if all(w == "ok" for w in words) else "NOT MET"


def write_chart(summary, path, subtitle, missing):
    plt = peers.pyplot()
    if plt is None:
        return None
    cases = [c for c in CASES if c in summary]
    fig, ax = plt.subplots(figsize=(9, 4.8))
    xs = list(range(len(cases) + 1))
    own = [summary[c]["own_pct"] or 0 for c in cases] + [ANCHOR["own_pct"]]
    server = [summary[c]["server_pct"] or 0 for c in cases] + [0]
    comp = [summary[c]["compositor_pct"] or 0 for c in cases] + [ANCHOR["compositor_pct"]]
    ax.bar([x - 0.2 for x in xs], own, 0.4, label="own CPU (schedstat)", color="#2a7ab9")
    bars = ax.bar([x - 0.2 for x in xs], server, 0.4, bottom=own,
                  label="compositor time for it (server_cpu_us)", color="#e08a1e")
    ax.bar_label(bars, labels=[pct(o + s) for o, s in zip(own, server)], fontsize=8)
    bars = ax.bar([x + 0.2 for x in xs], comp, 0.4, label="compositor CPU, all of it",
                  color="#bbbbbb")
    ax.bar_label(bars, fmt="%.1f", fontsize=8)
    ax.axhspan(LIMIT_PCT - TOLERANCE_PCT, LIMIT_PCT + TOLERANCE_PCT, color="green",
               alpha=0.15, label=f"goal {LIMIT_PCT:g} +- {TOLERANCE_PCT:g}%")
    ax.set_xticks(xs)
    ax.set_xticklabels([CASES[c]["label"] for c in cases] + ["anchor: no billing"],
                       fontsize=8)
    ax.set_ylabel("% of one CPU over the window")
    if missing:
        subtitle += "\nserver_cpu_us not measured: " + missing
    ax.legend(fontsize=7, loc="upper left")
    ax.set_ylim(0, max(own[i] + server[i] for i in range(len(xs))) * 1.4 + 5)
    return peers.save_figure(plt, fig, path, f"Goal: {GOAL}\n{subtitle}")


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="A client limited to 20% of a CPU whose compositing is costly (small "
                    "buffer scaled to nearly full screen): its own CPU plus the compositor "
                    "time billed to it, in a reserve with billing on and off and in a "
                    "hand-limited cgroup.")
    peers.add_program_args(p, qosctl=True)
    p.add_argument("--cases", default=",".join(CASES),
                   help="comma-separated subset of " + ",".join(CASES))
    p.add_argument("--runs", type=int, default=3, help="repetitions; medians are reported")
    p.add_argument("--warmup", type=float, default=2.0, help="seconds before measuring")
    p.add_argument("--measure", type=float, default=10.0, help="measuring window in seconds")
    p.add_argument("--work-us", type=int, default=3000,
                   help="the player's own CPU per frame in microseconds (default 3000)")
    p.add_argument("--size", default="320x240", help="buffer size WxH (default 320x240)")
    p.add_argument("--view", default="1800x1000",
                   help="size the compositor scales the buffer to (-V, default 1800x1000)")
    p.add_argument("--reserve", default="policy=other period=50ms cpu=20% fallback=pause",
                   help="parameters of the reserve in cases (a) and (b)")
    p.add_argument("--start-timeout", type=float, default=15.0,
                   help="seconds to wait for qosway's sockets")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 1 repetition, 1 s warm-up, 3 s window")
    args = p.parse_args(argv)
    if args.quick:
        args.runs, args.warmup, args.measure = 1, 1.0, 3.0
    args.width, args.height = peers.parse_size(p, args.size, "--size")
    peers.parse_size(p, args.view, "--view")
    args.cases = peers.parse_subset(p, args.cases, list(CASES), "--cases")
    if args.runs < 1 or args.warmup < 0 or args.measure <= 0 or args.work_us < 0:
        p.error("--runs must be >= 1, --warmup >= 0, --measure > 0 and --work-us >= 0")
    # The hand-made limit matches the reserve's 20% of a 50 ms period.
    args.period_us, args.quota_us = 50000, 10000
    return args


def run(args):
    player = peers.find_player(args.player, "server_limit")
    qosctl = peers.find_qosctl(args.qosctl, "server_limit")
    logdir = peers.out_dirs(args.out)
    comps = peers.usable({case: peers.Qosway(args.qosway, args.start_timeout,
                                             extra_config=CASES[case]["config"], qosctl=qosctl)
                          for case in args.cases})
    if not comps:
        return 1
    print(f"qos-player: {player}")
    print(f"{len(comps)} cases x {args.runs} runs of {args.warmup:g} s warm-up + "
          f"{args.measure:g} s window; the player draws {args.width}x{args.height} with "
          f"{args.work_us} us of CPU a frame, shown at {args.view}")
    results = {case: [] for case in comps}
    notes = {}
    runs = benchlib.interleaved(
        comps, args.runs, lambda case, _, rep: f"server_limit-{case}-r{rep}",
        lambda case, _, tag: measure(comps[case], case, player, logdir, tag, args))
    for case, _, tag, r in runs:
        results[case].append(r)
        for key in ("config_complaints", "client_missing"):
            v = r.get(key)
            if v:
                notes.setdefault(v[0] if isinstance(v, list) else v, []).append(case)
        if not r["scaled"]:
            notes.setdefault("qosway lacks wp_viewporter: the player was not scaled",
                             []).append(case)
        extra = ""
        if r["reserve_delta"] is not None:
            extra = f", reserve overruns {r['reserve_delta'].get('overruns', '-')}"
        if r["cgroup_delta"] is not None:
            extra = (f", throttled {r['cgroup_delta'].get('nr_throttled', 0)} of "
                     f"{r['cgroup_delta'].get('nr_periods', 0)} periods")
        print(f"{tag}: own {r['own_pct']:.1f}%, server {pct(r.get('server_pct'))}%, "
              f"total {pct(r.get('total_pct'))}%, compositor {r['compositor_pct']:.1f}%, "
              f"{r['fps']:.1f} fps{extra}, machine busy {r['machine_busy'] * 100:.0f}%",
              flush=True)

    summary = summarise({c: results[c] for c in results if results[c]})
    if not summary:
        print("no case produced numbers")
        return 1
    text = verdict(summary)
    print()
    print(f"One player limited to {LIMIT_PCT:g}% of a CPU: {args.width}x{args.height} buffer "
          f"shown at {args.view}, {args.work_us / 1000:g} ms own CPU a frame; median of "
          f"{args.runs} run(s), {args.measure:g} s window; % of one CPU")
    print("own = the player's schedstat; server = growth of its server_cpu_us; billed = "
          "growth of its billed_us; compositor = all of qosway's CPU (schedstat)")
    print(format_table(summary))
    for why, cases in notes.items():
        print(f"note: {', '.join(dict.fromkeys(cases))}: {why}")
    print(f"Goal: {GOAL}: {text}")

    missing = next((w for w in notes if "clients" in w or "server_cpu_us" in w), None)
    benchlib.save(args.out, "server_limit",
                  {"goal": GOAL, "verdict": text, "anchor": ANCHOR,
                   "settings": {k: getattr(args, k) for k in (
                       "runs", "warmup", "measure", "work_us", "width", "height", "view",
                       "reserve", "quota_us", "period_us")},
                   "notes": notes, "summary": summary, "results": results},
                  lambda path: write_chart(summary, path,
                                           f"{args.width}x{args.height} shown at {args.view}, "
                                           f"{args.work_us / 1000:g} ms own CPU/frame, "
                                           f"median of {args.runs}", missing))
    return 0


def main(argv=None):
    return peers.main(run, parse_args(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
