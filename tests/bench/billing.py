#!/usr/bin/env python3
"""Billing ratio of qosway's slave scheduler, and what its accounting costs.

N qos-player clients (N = 1, 8, 16) draw full-damage 640x480 frames with
2 ms of CPU work each (-u 2000) until stopped, on qosway with `scheduling on`.
After a warm-up, over a measuring window:

    billing ratio = sum over the clients of the growth of their
                    server_cpu_us (`qosctl --json clients`)
                    / the compositor's CPU time in the window
                      (schedstat of all its threads)

also against its main thread alone and against the scheduler's own
`cpu_us` (`qosctl --json scheduler`). Goal: >= 0.90 at every N (the thesis'
X server billed 0.93; aim 0.98-1.02).

The same compositor thread runs the QoS manager, whose policing of
reserves is not work for any client (Linux-SRT's kernel did it): its share
(`qos_us`: the manager's own events and timers, and the bills) and the
ratio over the rest of the compositor's CPU are shown beside.

What the accounting costs is measured by the compositor itself: the books'
own time (`books_us` of `qosctl --json scheduler`, sampled one operation
in 16 on the monotonic clock) over the compositor's CPU time in the window.
Goal: <= 1% of the compositor's CPU. Billing's own time (`bills_us`) is
reported beside it; with --reserved every player asks for an automatic qos
reserve, so that there are bills. As a cross-check, the same load on qosway
with `scheduling bill off` and with `scheduling off` in the same run gives

    cost vs X = (CPU ms per client frame with scheduling on - with X)
                / the former

which includes the serving order and the boost, and whose run-to-run noise
here (5-25% per 2 s window) is far above 1%.

A qosway without the scheduler refuses the config lines and has no such
IPC commands: the script then says which fields are missing and still
reports CPU per frame. A benchmark, not a test: it exits 0 whenever it
produced numbers. See tests/bench/README.md.
"""

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
import peers  # noqa: E402
from peers import RunFailed, SkipCompositor, tail  # noqa: E402

RATIO_GOAL = 0.90
AIM = (0.98, 1.02)
COST_GOAL = 0.01
GOAL = (f"billing ratio >= {RATIO_GOAL:.2f} at every N (aim {AIM[0]:.2f}-{AIM[1]:.2f}); "
        f"accounting <= {COST_GOAL:.0%} of the compositor's CPU")
THESIS_RATIO = 0.93
SETUPS = {
    "on": ["scheduling on"],
    "bill-off": ["scheduling on", "scheduling bill off"],
    "off": ["scheduling off"],
}
CLIENT_FIELDS = ("server_cpu_us", "billed_us")
SCHED_FIELDS = ("cpu_us", "clients_us", "own_us")
COST_FIELDS = ("books_us", "bills_us", "bills", "qos_us")


def snapshot(comp):
    """The scheduler's counters and the compositor's CPU time, read in that
    order at both ends of the window so that each window spans the same
    requests."""
    clients, clients_why = comp.query("clients")
    sched, sched_why = comp.query("scheduler")
    return {
        "clients": clients, "clients_why": clients_why,
        "sched": sched, "sched_why": sched_why,
        "all_s": peers.proc_runtime_s(comp.proc.pid),
        "main_s": peers.thread_runtime_s(comp.proc.pid),
        "t": time.monotonic(),
    }


def client_entries(reply, pids):
    """pid -> the client entry of `qosctl --json clients`, for our pids."""
    found = {}
    for c in (reply or {}).get("clients") or []:
        if isinstance(c, dict) and c.get("pid") in pids:
            found[c["pid"]] = c
    return found


def missing_fields(before, after, pids):
    """What of the interface this qosway lacks, in words; None if nothing."""
    if before["clients"] is None:
        return f"`qosctl --json clients` failed: {before['clients_why']}"
    a, b = client_entries(before["clients"], pids), client_entries(after["clients"], pids)
    absent = [p for p in pids if p not in a or p not in b]
    if absent:
        return f"`qosctl --json clients` lists no entry for player pid(s) {absent}"
    lacking = sorted({f for e in list(a.values()) + list(b.values())
                      for f in CLIENT_FIELDS if not isinstance(e.get(f), (int, float))})
    if lacking:
        return f"client entries lack {', '.join(lacking)}"
    return None


def billing_numbers(before, after, pids):
    """The ratios from two snapshots; only what the replies allow."""
    out = {}
    d_all = (after["all_s"] - before["all_s"]) * 1e6
    d_main = (after["main_s"] - before["main_s"]) * 1e6
    out["compositor_us"] = d_all
    out["main_thread_us"] = d_main
    why = missing_fields(before, after, pids)
    out["clients_missing"] = why
    if why is None:
        a, b = client_entries(before["clients"], pids), client_entries(after["clients"], pids)
        served = sum(b[p]["server_cpu_us"] - a[p]["server_cpu_us"] for p in pids)
        billed = sum(b[p]["billed_us"] - a[p]["billed_us"] for p in pids)
        out.update({
            "server_cpu_us": served,
            "billed_us": billed,
            "ratio_all": served / d_all if d_all > 0 else None,
            "ratio_main": served / d_main if d_main > 0 else None,
            "exhausted": [b[p].get("exhausted") for p in pids],
        })
    sa, sb = before["sched"], after["sched"]
    if sa is None or sb is None:
        out["scheduler_missing"] = ("`qosctl --json scheduler` failed: "
                                    f"{before['sched_why'] or after['sched_why']}")
        return out
    lacking = [f for f in SCHED_FIELDS
               if not isinstance(sa.get(f), (int, float)) or not isinstance(sb.get(f), (int, float))]
    if lacking:
        out["scheduler_missing"] = f"scheduler reply lacks {', '.join(lacking)}"
        return out
    out["scheduler_missing"] = None
    delta = {f: sb[f] - sa[f] for f in SCHED_FIELDS}
    out["scheduler"] = delta
    out["switches"] = {k: sb.get(k) for k in ("serve_by_reserve", "bill", "boost",
                                               "boost_available")}
    if all(isinstance(sa.get(f), (int, float)) and isinstance(sb.get(f), (int, float))
           for f in COST_FIELDS):
        costs = {f: sb[f] - sa[f] for f in COST_FIELDS}
        delta.update(costs)
        if d_all > 0:
            out["books_share"] = costs["books_us"] / d_all
            out["bills_share"] = costs["bills_us"] / d_all
            out["qos_share"] = costs["qos_us"] / d_all
            if "server_cpu_us" in out and d_all > costs["qos_us"]:
                out["ratio_serving"] = out["server_cpu_us"] / (d_all - costs["qos_us"])
    if delta["cpu_us"] > 0:
        out["clients_share"] = delta["clients_us"] / delta["cpu_us"]
        out["sched_vs_main"] = delta["cpu_us"] / d_main if d_main > 0 else None
        if "server_cpu_us" in out:
            out["ratio_sched"] = out["server_cpu_us"] / delta["cpu_us"]
    return out


def measure(comp, player, n, logdir, tag, args):
    """One measurement: fresh qosway, n clients, warm-up, window."""
    comp.start(logdir, tag)
    clients = []

    def client_err(i):
        return tail(os.path.join(logdir, f"{tag}.client{i}.err"))
    try:
        env = comp.client_env()
        for i in range(n):
            with open(os.path.join(logdir, f"{tag}.client{i}.err"), "w") as err:
                clients.append(peers.spawn(
                    [player, "-n", "0", "-u", str(args.work_us), "-W", str(args.width),
                     "-H", str(args.height), "-t", f"qos-player {i}"] +
                    (["-q", args.reserved] if args.reserved else []),
                    env=env, stdout=subprocess.PIPE, stderr=err, text=True))
        time.sleep(args.warmup)
        peers.wait_sigusr1_ready(clients, 5.0, client_err)
        if comp.proc.poll() is not None:
            raise SkipCompositor(f"qosway died during warm-up; log tail:\n{tail(comp.log)}")

        busy0, total0 = peers.machine_busy_ticks()
        before = snapshot(comp)
        for c in clients:
            c.send_signal(signal.SIGUSR1)
        time.sleep(args.measure)
        after = snapshot(comp)
        busy1, total1 = peers.machine_busy_ticks()
        for c in clients:
            c.send_signal(signal.SIGTERM)
        reports = [peers.player_report(c, i, 10, client_err, after="on SIGTERM")
                   for i, c in enumerate(clients)]
        complaints = comp.config_complaints("scheduling")
    finally:
        for c in clients:
            peers.stop_group(c)
        comp.stop()

    frames = sum(r["frames"] for r in reports)
    if frames == 0:
        raise RunFailed("no client completed a frame in the window")
    r = billing_numbers(before, after, [c.pid for c in clients])
    wall = after["t"] - before["t"]
    r.update({
        "wall_s": wall,
        "frames": frames,
        "cpu_ms_per_frame": r["compositor_us"] / 1000.0 / frames,
        "cpu_util": r["compositor_us"] / 1e6 / wall,
        "client_fps_mean": statistics.mean(x["fps"] for x in reports),
        "client_cpu_s": sum(x["cpu_s"] for x in reports),
        "machine_busy": (busy1 - busy0) / max(total1 - total0, 1),
        "config_complaints": complaints,
    })
    return r


def summarise(results, setups, counts):
    summary = {}
    for s in setups:
        summary[s] = {}
        for n in counts:
            runs = results[s].get(n, [])
            if runs:
                summary[s][n] = {k: benchlib.median_of(runs, k) for k in (
                    "ratio_all", "ratio_main", "ratio_sched", "clients_share",
                    "sched_vs_main", "cpu_ms_per_frame", "cpu_util", "client_fps_mean",
                    "machine_busy", "books_share", "bills_share", "qos_share",
                    "ratio_serving")}
                summary[s][n]["runs"] = len(runs)
    for n in counts:
        on = summary.get("on", {}).get(n)
        if not on or not on["cpu_ms_per_frame"]:
            continue
        for other in ("bill-off", "off"):
            x = summary.get(other, {}).get(n)
            if x and x["cpu_ms_per_frame"]:
                on[f"cost_vs_{other}"] = ((on["cpu_ms_per_frame"] - x["cpu_ms_per_frame"])
                                          / on["cpu_ms_per_frame"])
    return summary


def fmt(v, spec=".3f"):
    return "-" if v is None else format(v, spec)


def format_table(summary, setups, counts):
    head = ["N", "ratio all/main/sched (thesis 0.93)", "books %", "bills %", "QoS mgr %",
            "ratio w/o QoS mgr"]
    head += [f"{s} ms/frame (fps, cpu%)" for s in setups if summary.get(s)]
    head += ["cost vs bill-off", "cost vs off"]
    rows = []
    for n in counts:
        on = summary.get("on", {}).get(n) or {}
        row = [str(n), f"{fmt(on.get('ratio_all'))}/{fmt(on.get('ratio_main'))}/"
                       f"{fmt(on.get('ratio_sched'))}"]
        for key in ("books_share", "bills_share", "qos_share"):
            v = on.get(key)
            row.append("-" if v is None else f"{v * 100:.2f}")
        row.append(fmt(on.get("ratio_serving")))
        for s in setups:
            if not summary.get(s):
                continue
            x = summary[s].get(n)
            row.append("-" if x is None else
                       f"{x['cpu_ms_per_frame']:.3f} ({x['client_fps_mean']:.1f}, "
                       f"{x['cpu_util'] * 100:.0f}%)")
        for other in ("bill-off", "off"):
            c = on.get(f"cost_vs_{other}")
            row.append("-" if c is None else f"{c * 100:+.1f}%")
        rows.append(row)
    return peers.format_rows(head, rows)


def verdicts(summary, counts, refused):
    on = summary.get("on", {})
    ratios = [on.get(n, {}).get("ratio_all") for n in counts]
    if not on or any(r is None for r in ratios):
        ratio = "not evaluated (no billing ratio: see the missing fields above)"
    else:
        ok = all(r >= RATIO_GOAL for r in ratios)
        aim = all(AIM[0] <= r <= AIM[1] for r in ratios)
        ratio = (f"{'MET' if ok else 'NOT MET'} (lowest {min(ratios):.3f}"
                 f"{', within the aim' if aim else ''})")
    books = [on.get(n, {}).get("books_share") for n in counts]
    if refused:
        cost = "not evaluated (qosway refused the scheduling lines)"
    elif not on or any(b is None for b in books):
        cost = "not evaluated (the scheduler reports no books_us)"
    else:
        worst = max(books)
        cost = (f"{'MET' if worst <= COST_GOAL else 'NOT MET'} (the books' own time, "
                f"highest {worst * 100:.2f}% of the compositor's CPU)")
    return ratio, cost


def write_chart(summary, setups, counts, path, subtitle, missing):
    plt = peers.pyplot()
    if plt is None:
        return None
    fig, (ax_r, ax_c) = plt.subplots(1, 2, figsize=(12, 4.5))
    xs = list(range(len(counts)))
    keys = (("ratio_all", "all threads", "#2a7ab9"), ("ratio_main", "main thread", "#8fb8dc"),
            ("ratio_sched", "scheduler cpu_us", "#5a5a9e"))
    width = 0.8 / len(keys)
    on = summary.get("on", {})
    any_ratio = False
    for i, (key, label, color) in enumerate(keys):
        vals = [on.get(n, {}).get(key) for n in counts]
        any_ratio = any_ratio or any(v is not None for v in vals)
        pos = [x + (i - 1) * width for x in xs]
        bars = ax_r.bar(pos, [v or 0 for v in vals], width, label=label, color=color)
        ax_r.bar_label(bars, labels=[fmt(v) for v in vals], fontsize=7)
    ax_r.axhline(RATIO_GOAL, color="red", linestyle=":", linewidth=1, label="goal 0.90")
    ax_r.axhspan(AIM[0], AIM[1], color="green", alpha=0.15, label="aim 0.98-1.02")
    ax_r.axhline(THESIS_RATIO, color="black", linestyle="--", linewidth=1, label="thesis 0.93")
    if not any_ratio:
        ax_r.text(0.5, 0.5, "not measured:\n" + (missing or "no data"), ha="center",
                  va="center", transform=ax_r.transAxes, fontsize=8, wrap=True)
    ax_r.set_ylim(0, 1.25)
    ax_r.set_title("billed (server_cpu_us) / compositor CPU, scheduling on", fontsize=10)
    cols = [s for s in setups if summary.get(s)]
    colors = {"on": "#2a7ab9", "bill-off": "#e08a1e", "off": "#8a8a8a"}
    width = 0.8 / max(len(cols), 1)
    for i, s in enumerate(cols):
        vals = [summary[s].get(n, {}).get("cpu_ms_per_frame") or 0 for n in counts]
        pos = [x + (i - (len(cols) - 1) / 2) * width for x in xs]
        bars = ax_c.bar(pos, vals, width, label=f"scheduling {s}", color=colors.get(s))
        ax_c.bar_label(bars, fmt="%.3f", fontsize=7)
    ax_c.set_title("compositor CPU ms per client frame", fontsize=10)
    for ax in (ax_r, ax_c):
        ax.set_xticks(xs)
        ax.set_xticklabels([f"N={n}" for n in counts])
        ax.legend(fontsize=7, loc="lower right")
    return peers.save_figure(plt, fig, path, f"Goal: {GOAL}\n{subtitle}")


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Billing ratio of qosway's slave scheduler (clients' server_cpu_us / "
                    "compositor CPU) and the CPU its accounting costs (scheduling on vs "
                    "bill off vs off), N drawing qos-player clients.")
    peers.add_program_args(p, qosctl=True)
    p.add_argument("--setups", default=",".join(SETUPS),
                   help="comma-separated subset of " + ",".join(SETUPS))
    p.add_argument("--clients", default="1,8,16", help="comma-separated client counts")
    p.add_argument("--runs", type=int, default=3, help="repetitions; medians are reported")
    p.add_argument("--warmup", type=float, default=3.0, help="seconds before measuring")
    p.add_argument("--measure", type=float, default=10.0, help="measuring window in seconds")
    p.add_argument("--work-us", type=int, default=2000,
                   help="CPU time per frame of each client in microseconds (default 2000)")
    p.add_argument("--size", default="640x480", help="buffer size WxH (default 640x480)")
    p.add_argument("--reserved", nargs="?", const="50000:9000:other", default=None,
                   metavar="PERIOD_US:SLICE_US[:FALLBACK]",
                   help="every player asks for an automatic qos reserve (default "
                        "50000:9000:other, 18%% of a CPU; past the capacity players are refused "
                        "and play unreserved), so the compositor bills it")
    p.add_argument("--start-timeout", type=float, default=15.0,
                   help="seconds to wait for qosway's sockets")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 1 repetition, N=1,8, 1 s warm-up, 2 s window")
    args = p.parse_args(argv)
    if args.quick:
        args.runs, args.warmup, args.measure, args.clients = 1, 1.0, 2.0, "1,8"
    args.clients = peers.parse_counts(p, args.clients)
    args.width, args.height = peers.parse_size(p, args.size, "--size")
    args.setups = peers.parse_subset(p, args.setups, list(SETUPS), "--setups")
    if args.runs < 1 or args.warmup < 0 or args.measure <= 0 or args.work_us < 0:
        p.error("--runs must be >= 1, --warmup >= 0, --measure > 0 and --work-us >= 0")
    return args


def run(args):
    player = peers.find_player(args.player, "billing")
    qosctl = peers.find_qosctl(args.qosctl, "billing")
    logdir = peers.out_dirs(args.out)
    comps = peers.usable({s: peers.Qosway(args.qosway, args.start_timeout,
                                          extra_config=SETUPS[s], qosctl=qosctl)
                          for s in args.setups})
    if not comps:
        return 1

    total = len(comps) * len(args.clients) * args.runs
    print(f"qos-player: {player}")
    print(f"{len(comps)} setups x N={args.clients} x {args.runs} runs = {total} measurements "
          f"of {args.warmup:g} s warm-up + {args.measure:g} s window; clients draw "
          f"{args.width}x{args.height} with {args.work_us} us of CPU per frame")
    results = {s: {n: [] for n in args.clients} for s in comps}
    notes = {}
    runs = benchlib.interleaved(
        comps, args.runs, lambda s, n, rep: f"billing-{s}-n{n}-r{rep}",
        lambda s, n, tag: measure(comps[s], player, n, logdir, tag, args), args.clients)
    for s, n, tag, r in runs:
        results[s][n].append(r)
        for key in ("config_complaints", "clients_missing", "scheduler_missing"):
            v = r.get(key)
            if v and (s, key) not in notes:
                notes[(s, key)] = v[0] if isinstance(v, list) else v
        ratio = ("ratio -" if r.get("ratio_all") is None else
                 f"ratio {r['ratio_all']:.3f} (main {fmt(r.get('ratio_main'))}, "
                 f"sched {fmt(r.get('ratio_sched'))})")
        print(f"{tag}: {ratio}, {r['cpu_ms_per_frame']:.3f} ms/frame, "
              f"{r['frames']} frames, compositor {r['cpu_util'] * 100:.0f}% "
              f"(main thread {r['main_thread_us'] / 1e4 / r['wall_s']:.0f}%), "
              f"machine busy {r['machine_busy'] * 100:.0f}%", flush=True)

    setups = [s for s in args.setups if any(results.get(s, {}).values())]
    if not setups:
        print("no setup produced numbers")
        return 1
    summary = summarise(results, setups, args.clients)
    table = format_table(summary, setups, args.clients)
    refused = any(key == "config_complaints" for _, key in notes)
    ratio_verdict, cost_verdict = verdicts(summary, args.clients, refused)
    print()
    print(f"Billing on qosway, N clients drawing {args.width}x{args.height} with "
          f"{args.work_us / 1000:g} ms CPU per frame; median of {args.runs} run(s), "
          f"{args.measure:g} s window")
    print("ratio = sum of the clients' server_cpu_us growth / compositor CPU "
          "(all threads / main thread / scheduler cpu_us), scheduling on")
    print("cost = (ms/frame on - ms/frame other) / ms/frame on")
    print(table)
    # One line per distinct complaint, naming the setups that had it.
    grouped = {}
    for (s, key), v in notes.items():
        grouped.setdefault((key, v), []).append(s)
    for (key, v), names in sorted(grouped.items()):
        what = "refused config line" if key == "config_complaints" else "missing"
        print(f"note: scheduling {', '.join(names)}: {what}: {v}")
    if refused:
        print("note: this qosway has no scheduler: every setup ran the same compositor, so "
              "the cost columns show only the noise of this machine")
    print(f"Goal: billing ratio >= {RATIO_GOAL:.2f} at every N: {ratio_verdict}")
    print(f"Goal: accounting <= {COST_GOAL:.0%} of the compositor's CPU: {cost_verdict}")

    missing = notes.get(("on", "clients_missing"))
    benchlib.save(args.out, "billing",
                  {"goal": GOAL, "verdict": {"ratio": ratio_verdict, "cost": cost_verdict},
                   "settings": {k: getattr(args, k) for k in (
                       "runs", "warmup", "measure", "work_us", "width", "height")},
                   "notes": {f"{s} {k}": v for (s, k), v in notes.items()},
                   "summary": summary, "results": results},
                  lambda path: write_chart(summary, setups, args.clients, path,
                                           f"{args.width}x{args.height} clients, "
                                           f"{args.work_us / 1000:g} ms CPU/frame, "
                                           f"median of {args.runs}", missing))
    return 0


def main(argv=None):
    return peers.main(run, parse_args(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
