#!/usr/bin/env python3
"""Manager overhead: CPU time per second with 50 reserves at 10 ms periods.

The manager (tests/kernel/qos-helper, events counted, not printed) holds N
reserves (default 50), each with a 10 ms period and one member process; its
own CPU time (every thread, from schedstat) is measured over a window and
given as a share of one CPU.  Scenarios, measured one after another in one
run:

  sleeping   qos 10 ms / 0.2 ms reserves (hard: the kernel caps them);
             members sleep
  busy       same reserves; members are busy loops, so every reserve
             exhausts its slice every period
  ceiling    other, 10% ceiling, fallback pause (cpu quota: the kernel caps
             them; 1 ms is the smallest quota it takes); busy members
  cut-idle   other, 10% limit, fallback idle: the manager itself makes the
             group idle at each overrun (the kernel reports it through
             CPU-clock timers) and normal again at the boundary; busy members
  optimistic qos 1%, fallback other: the manager moves the deadline threads
             to other at each overrun (the kernel reports, through CPU-clock
             timers, the tick from which less than a tick of slice is left)
             and back at a safe time; busy members
  opt-sleep  same reserves; members sleep (a polled manager would check
             each every 0.5 ms, since a 100 us slice is always near its end)

Beside each scenario, the floor: qos-bench's waker, a process that only
wakes as often as the manager did (poll, epoll_wait, a timerfd read), under
the same members.  On a virtual machine a wake-up alone costs 15-55 us of
CPU time, so what the manager's own work costs per switch is the rest.

Beside the scenarios the manager switches itself, the kernel's share: the
operations a switch consists of (a cpu.idle write for cut to idle, one
sched_setattr for optimistic), timed by qos-bench switchcost under the same
members and multiplied by the switch rate.  Like the manager's, each
operation acts on a busy task and comes after a sleep; timed back to back on
an empty group they seemed a quarter to a half as dear.  The floor plus that
share is what any manager outside the kernel would pay at that rate.

With --against OLD_BUILD it compares two builds instead: each scenario
runs --rounds times per build, the builds alternating, so both see the same
machine (a change of 20% is within what this VM drifts in half an hour).
The table gives each build's mean CPU share and manager CPU time per
overrun (robust to the overrun rate, which the workload, not the manager,
sets), and new / old.

After the table: what the switches' kernel operations alone would cost at
the most switching the configuration allows (every reserve overrunning
every period), and what the kernel's one way to run a deadline thread past
its runtime, SCHED_FLAG_RECLAIM, does beside busy loops (qos-bench
reclaim): it takes their CPU time instead of sharing it as other would.

Goal: <= 0.5% of one CPU.  A benchmark, not a test: it always exits 0 once
it has numbers.  See docs/qos-benchmarks.md.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qos_common as qc  # noqa: E402

SCENARIOS = [
    ("sleeping", "policy=qos period=10ms slice=200us fallback=pause", False),
    ("busy", "policy=qos period=10ms slice=200us fallback=pause", True),
    ("ceiling", "policy=other period=10ms slice=1ms fallback=pause", True),
    ("cut-idle", "policy=other period=10ms slice=1ms fallback=idle", True),
    # 1% each keeps 50 reservations inside the kernel's deadline bandwidth
    ("optimistic", "policy=qos period=10ms slice=100us fallback=other", True),
    ("opt-sleep", "policy=qos period=10ms slice=100us fallback=other", False),
]


def wakes(pid):
    """Times the process's threads went to sleep (voluntary switches)."""
    total = 0
    for f in glob.glob("/proc/%d/task/*/status" % pid):
        try:
            with open(f) as fh:
                for line in fh:
                    if line.startswith("voluntary_ctxt_switches:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


# The kernel operation each switch of a scenario is made of (qos-bench switchcost).
SWITCH_OPS = {"cut-idle": "idle", "optimistic": "setattr"}


def switch_op_us(bench, mgr, name):
    """CPU time of the kernel operation one switch of the scenario makes,
    timed beside the members; None where the scenario has none or it
    could not be timed.  cpu.idle is written in a scratch group of its own
    next to the manager's root, removed afterwards."""
    op = SWITCH_OPS.get(name)
    if not op:
        return None
    cpu_dir = mgr.path("r0")[1]
    probe = os.path.join(os.path.dirname(os.path.dirname(cpu_dir)), qc.PROBE)
    idle_file = "-"
    if op == "idle":
        try:
            os.mkdir(probe)
            idle_file = os.path.join(probe, "cpu.idle")
        except OSError as e:
            print("  no scratch group for cpu.idle: %s" % e)
    try:
        out = subprocess.run([bench, "switchcost", "500", idle_file], capture_output=True,
                             text=True, timeout=60).stdout.split()
    finally:
        if idle_file != "-":
            # Kills switchcost's busy child too, should switchcost have died first.
            qc.force_cleanup(qc.PROBE)
    if len(out) != 3 or out[0] != "switchcost":
        return None
    pair = out[1] if op == "idle" else out[2]
    return None if pair == "-" else float(pair) / 2


def run(args, build, name, params, busy, with_floor=True):
    bench = os.path.join(build, qc.BENCH_PATH)
    mgr = qc.Manager(build, ["--quiet"])
    members = []
    try:
        for i in range(args.reserves):
            mgr.ok("reserve r%d %s" % (i, params))
            p = qc.spawn([bench, "spin"] if busy else ["sleep", "3600"])
            members.append(p)
            mgr.ok("join r%d %d" % (i, p.pid))
        time.sleep(max(args.warmup - 1.0, 0))
        w0 = wakes(mgr.proc.pid)
        time.sleep(1.0)
        rate = wakes(mgr.proc.pid) - w0
        waker = None
        if with_floor:
            # The floor: a process that only wakes as often, under the same load.
            waker = qc.spawn([bench, "waker", str(max(rate, 1))], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
            members.append(waker)
            waker.stdout.readline()
            time.sleep(0.2)
        c0, t0 = mgr.cpu_ns(), time.monotonic()
        k0, w0 = qc.cpu_ns_of(waker.pid) if waker else 0, wakes(mgr.proc.pid)
        before = mgr.ok("stats")
        time.sleep(args.window)
        c1, t1 = mgr.cpu_ns(), time.monotonic()
        k1, w1 = qc.cpu_ns_of(waker.pid) if waker else 0, wakes(mgr.proc.pid)
        after = mgr.ok("stats")
        op_us = switch_op_us(bench, mgr, name) if with_floor else None
        share = (c1 - c0) / ((t1 - t0) * 1e9)
        floor = (k1 - k0) / ((t1 - t0) * 1e9) if waker else None
        counts = {}
        for key in ("overrun", "restored"):
            a = int(dict(kv.split("=") for kv in before.split()[1:])[key])
            b = int(dict(kv.split("=") for kv in after.split()[1:])[key])
            counts[key + "_per_s"] = (b - a) / (t1 - t0)
        switches = counts["overrun_per_s"] + counts["restored_per_s"]
        infos = [mgr.ok("info r%d" % i) for i in range(min(3, args.reserves))]
        return {"scenario": name, "params": params, "busy_members": busy,
                "cpu_share": share, "cpu_ms_per_s": share * 1000, **counts,
                "wakes_per_s": (w1 - w0) / (t1 - t0), "waker_hz": rate,
                "floor_share": floor,
                "work_us_per_switch": (share - floor) * 1e6 / switches
                if switches and floor is not None else None,
                "switch_op_us": op_us,
                "switch_ops_share": op_us * switches / 1e6 if op_us is not None else None,
                "sample_info": infos}
    finally:
        mgr.close()
        for p in members:
            qc.stop(p)


def period_us(params):
    """The period of a reserve definition ("period=10ms ..."), in us; None without one."""
    units = (("us", 1), ("ms", 1000), ("s", 1000000))
    for kv in params.split():
        if kv.startswith("period="):
            value = kv[len("period="):]
            for suffix, scale in units:
                if value.endswith(suffix) and value[:-len(suffix)].isdigit():
                    return int(value[:-len(suffix)]) * scale
    return None


def at_most_switching(results, reserves):
    """What the switches' kernel operations alone would cost at the most
    switches the configuration allows: every reserve overrunning every
    period, two switches each.  The manager's rate is set by the workload,
    not by it; this bounds from below what any manager outside the kernel
    pays for those fallbacks, with no wake-up and no work of its own."""
    rows = []
    for r in results:
        period = period_us(r["params"])
        if r["switch_op_us"] is None or not period:
            continue
        most = 2.0 * reserves * 1e6 / period
        rows.append({"scenario": r["scenario"], "switches_per_s": most,
                     "op_us": r["switch_op_us"], "share": r["switch_op_us"] * most / 1e6})
    if rows:
        print("At the most switching these reserves allow (each overrunning every period):")
        for row in rows:
            print("  %-10s %6.0f switches/s x %.2f us of kernel operations = %.2f%% of a CPU,"
                  " before any wake-up" % (row["scenario"], row["switches_per_s"], row["op_us"],
                                           row["share"] * 100))
    return rows


def reclaim_probe(bench, secs=2.0):
    """The kernel's own way to run a deadline thread past its runtime
    (SCHED_FLAG_RECLAIM) against a busy loop on each CPU (qos-bench
    reclaim): why optimistic is switched by the manager."""
    try:
        out = subprocess.run([bench, "reclaim", str(secs)], capture_output=True, text=True,
                             timeout=4 * secs + 30).stdout.split()
    except (OSError, subprocess.SubprocessError) as e:
        print("reclaim probe: %s" % e)
        return None
    if len(out) != 5 or out[0] != "reclaim" or "-" in out:
        print("reclaim probe: no result (%s)" % " ".join(out))
        return None
    hard, rec, loops_hard, loops_rec = (float(v) for v in out[1:])
    print("SCHED_DEADLINE 100 us / 10 ms, busy, beside a busy loop on each CPU: %.1f%% of a CPU"
          " plain (the loops %.1f%% of theirs), %.1f%% with SCHED_FLAG_RECLAIM (the loops"
          " %.1f%%); optimistic's fallback other would share a CPU with its loop" % (
              hard, loops_hard, rec, loops_rec))
    return {"hard_pct": hard, "reclaim_pct": rec, "loops_hard_pct": loops_hard,
            "loops_reclaim_pct": loops_rec}


def save(out, base, data, labels, left, right, title):
    """Writes BASE.json and, with matplotlib, BASE.png: two bars a scenario
    (left and right are (legend, CPU shares)) against the goal."""
    jpath = os.path.join(out, base + ".json")
    with open(jpath, "w") as f:
        json.dump(data, f, indent=1)
    print("json: " + jpath)
    if not labels or not qc.can_chart():
        return
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    xs = range(len(labels))
    for shift, (legend, shares) in ((-0.2, left), (0.2, right)):
        ax.bar([x + shift for x in xs], [v * 100 for v in shares], width=0.4, label=legend)
    ax.set_xticks(list(xs))
    ax.set_xticklabels(labels)
    ax.axhline(0.5, color="red", lw=0.8, ls="--", label="goal 0.5%")
    ax.set_ylabel("manager CPU (% of one CPU)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    ppath = os.path.join(out, base + ".png")
    fig.savefig(ppath, dpi=110)
    print("chart: " + ppath)


def mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def per_overrun_us(r):
    rate = r["overrun_per_s"]
    return r["cpu_share"] * 1e6 / rate if rate else None


def compare(args, build, old, wanted, out, stamp):
    """Alternates the two builds per scenario; prints and charts the means."""
    rows = []
    for name, params, busy in SCENARIOS:
        if name not in wanted:
            continue
        runs = {"old": [], "new": []}
        for i in range(args.rounds):
            for key, b in (("old", old), ("new", build)):
                # No floor here: builds older than the waker can be compared.
                r = run(args, b, name, params, busy, with_floor=False)
                runs[key].append(r)
                print("  %-10s %-3s round %d: %.3f%% of a CPU, %.0f overruns/s" % (
                    name, key, i + 1, r["cpu_share"] * 100, r["overrun_per_s"]), flush=True)
        row = {"scenario": name, "params": params, "runs": runs}
        for key in ("old", "new"):
            row[key + "_share"] = mean([r["cpu_share"] for r in runs[key]])
            row[key + "_us_per_overrun"] = mean([per_overrun_us(r) for r in runs[key]])
        rows.append(row)
    print()
    print("old: %s\nnew: %s\n%d rounds of a %.0f s window per build and scenario, "
          "alternating" % (old, build, args.rounds, args.window))
    print("%-10s %8s %8s %6s %12s %12s %6s" % ("scenario", "old CPU", "new CPU", "new/old",
                                              "old us/ovr", "new us/ovr", "new/old"))
    for row in rows:
        a, b = row["old_us_per_overrun"], row["new_us_per_overrun"]
        print("%-10s %7.3f%% %7.3f%% %6.2f %12s %12s %6s" % (
            row["scenario"], row["old_share"] * 100, row["new_share"] * 100,
            row["new_share"] / row["old_share"] if row["old_share"] else float("nan"),
            "-" if a is None else "%.1f" % a, "-" if b is None else "%.1f" % b,
            "-" if a is None or b is None else "%.2f" % (b / a)))
    data = {"machine": qc.machine_note(), "old_build": old, "new_build": build,
            "rounds": args.rounds, "window_s": args.window, "rows": rows}
    save(out, "qos_overhead-compare-%s" % stamp, data, [r["scenario"] for r in rows],
         ("old build", [r["old_share"] for r in rows]),
         ("new build", [r["new_share"] for r in rows]),
         "%d reserves, 10 ms periods, builds alternating" % args.reserves)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", help="build dir with qos-helper and qos-bench built")
    ap.add_argument("--out", help="output dir (default BUILD/bench)")
    ap.add_argument("--reserves", type=int, default=50)
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--window", type=float, default=10.0)
    ap.add_argument("--scenarios", default=",".join(s[0] for s in SCENARIOS))
    ap.add_argument("--quick", action="store_true", help="1 s warm-up, 3 s window")
    ap.add_argument("--against", metavar="OLD_BUILD",
                    help="compare with this build dir (absolute, or relative to the"
                    " repository), alternating runs")
    ap.add_argument("--rounds", type=int, default=3, help="runs per build with --against")
    args = ap.parse_args()
    if args.rounds < 1:
        sys.exit("--rounds must be at least 1")
    if args.quick:
        args.warmup, args.window = 1.0, 3.0
    if os.geteuid() != 0:
        sys.exit("needs root (cgroups, SCHED_DEADLINE)")
    build = qc.find_build(args.build)
    out = qc.out_dir(args.out, build)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    qc.install_handlers()
    wanted = args.scenarios.split(",")
    unknown = [w for w in wanted if w not in [s[0] for s in SCENARIOS]]
    if unknown:
        sys.exit("unknown scenario %s (known: %s)" % (
            ", ".join(unknown), ", ".join(s[0] for s in SCENARIOS)))
    if args.against:
        old = qc.find_build(args.against)
        t0 = time.monotonic()
        try:
            compare(args, build, old, wanted, out, stamp)
        finally:
            qc.cleanup()
        print("elapsed %.0f s" % (time.monotonic() - t0))
        return 0
    results = []
    t0 = time.monotonic()
    try:
        for name, params, busy in SCENARIOS:
            if name not in wanted:
                continue
            r = run(args, build, name, params, busy)
            results.append(r)
            print("  %-9s %.3f%% of a CPU" % (name, r["cpu_share"] * 100), flush=True)
    finally:
        qc.cleanup()
    elapsed = time.monotonic() - t0

    print()
    print("Manager CPU time with %d reserves at 10 ms periods (%.0f s window)" %
          (args.reserves, args.window))
    print("%-10s %8s %9s %9s %8s %8s %10s %8s %14s" % (
        "scenario", "CPU %", "overrun/s", "restore/s", "wakes/s", "floor %", "us/switch",
        "kernel %", "floor+kernel %"))
    for r in results:
        per, ops = r["work_us_per_switch"], r["switch_ops_share"]
        print("%-10s %7.3f%% %9.0f %9.0f %8.0f %7.3f%% %10s %8s %14s" % (
            r["scenario"], r["cpu_share"] * 100, r["overrun_per_s"], r["restored_per_s"],
            r["wakes_per_s"], r["floor_share"] * 100, "-" if per is None else "%.1f" % per,
            "-" if ops is None else "%.3f%%" % (ops * 100),
            "-" if ops is None else "%.3f%%" % ((ops + r["floor_share"]) * 100)))
    print()
    for r in results:
        print("  %-10s %s%s" % (r["scenario"], r["params"],
                               ", busy members" if r["busy_members"] else ", members sleep"))
    print("floor: a process that does nothing but wake as often as the manager did (its rate"
          " in the second before the window), measured beside it; us/switch: the manager's"
          " CPU time above that floor per overrun or restore; kernel: the switches' own"
          " kernel operations (a cpu.idle write, a sched_setattr) timed by qos-bench"
          " switchcost beside the members, at the manager's switch rate: floor+kernel is"
          " what a manager outside the kernel pays at least")
    print()
    print("Goal (<= 0.5% of one CPU):")
    for label, rows in (("no switch by the manager",
                         [r for r in results if r["scenario"] not in SWITCH_OPS]),
                        ("fallbacks the manager switches",
                         [r for r in results if r["scenario"] in SWITCH_OPS])):
        if rows:
            worst = max(rows, key=lambda r: r["cpu_share"])
            print("  %-31s %s (worst: %s %.3f%%)" % (
                label + ":", "met" if worst["cpu_share"] <= 0.005 else "NOT met",
                worst["scenario"], worst["cpu_share"] * 100))
    ceiling = at_most_switching(results, args.reserves)
    reclaim = reclaim_probe(os.path.join(build, qc.BENCH_PATH))
    print("elapsed %.0f s" % elapsed)
    data = {"machine": qc.machine_note(), "reserves": args.reserves, "window_s": args.window,
            "elapsed_s": elapsed, "results": results, "most_switching": ceiling,
            "reclaim": reclaim}
    save(out, "qos_overhead-%s" % stamp, data, [r["scenario"] for r in results],
         ("manager", [r["cpu_share"] for r in results]),
         ("waking as often, nothing else", [r["floor_share"] for r in results]),
         "%d reserves, 10 ms periods (%s)" % (args.reserves, os.uname().release))
    return 0


if __name__ == "__main__":
    sys.exit(main())
