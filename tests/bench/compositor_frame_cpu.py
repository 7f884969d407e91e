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
import os
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
import peers  # noqa: E402
from peers import OUTPUT_MODE, RunFailed, SkipCompositor, tail  # noqa: E402

GOAL = "qosway CPU per frame no higher than sway at every N"
CLIENT_SIZE = (640, 480)


def make_compositor(name, args):
    if name == "qosway":
        return peers.Qosway(args.qosway, args.start_timeout)
    if name == "sway":
        return peers.Sway(args.start_timeout, cascade=args.sway_cascade,
                          titlebars=args.sway_titlebars, windows=max(args.clients))
    return peers.Weston(args.start_timeout, repaint_window=args.weston_repaint_window)


COMPOSITORS = ("qosway", "sway", "weston")


def measure(comp, player, n_clients, logdir, tag, args):
    """One measurement: fresh compositor, n clients, warm-up, window."""
    comp.start(logdir, tag)
    clients = []

    def client_err(i):
        return tail(os.path.join(logdir, f"{tag}.client{i}.err"))
    try:
        env = comp.client_env()
        w, h = CLIENT_SIZE
        for i in range(n_clients):
            with open(os.path.join(logdir, f"{tag}.client{i}.err"), "w") as err:
                clients.append(peers.spawn([player, "-n", "0", "-W", str(w), "-H", str(h),
                                            "-t", f"qos-player {i}"],
                                           env=env, stdout=subprocess.PIPE, stderr=err,
                                           text=True))

        time.sleep(args.warmup)
        peers.wait_sigusr1_ready(clients, 5.0, client_err)
        if comp.proc.poll() is not None:
            raise SkipCompositor(f"{comp.name} died during warm-up; log tail:\n"
                                 f"{tail(comp.log)}")

        cpu0 = peers.proc_cpu_s(comp.proc.pid)
        rt0 = peers.proc_runtime_s(comp.proc.pid)
        busy0, total0 = peers.machine_busy_ticks()
        t0 = time.monotonic()
        for c in clients:
            c.send_signal(signal.SIGUSR1)
        time.sleep(args.measure)
        cpu1 = peers.proc_cpu_s(comp.proc.pid)
        rt1 = peers.proc_runtime_s(comp.proc.pid)
        busy1, total1 = peers.machine_busy_ticks()
        t1 = time.monotonic()
        for c in clients:
            c.send_signal(signal.SIGTERM)

        reports = [peers.player_report(c, i, 10, client_err, after="on SIGTERM")
                   for i, c in enumerate(clients)]
    finally:
        for c in clients:
            peers.stop_group(c)
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


def summarise(results, names, counts):
    """results[name][n] -> list of runs; returns summary[name][n] -> medians."""
    summary = {}
    for name in names:
        summary[name] = {}
        for n in counts:
            runs = results.get(name, {}).get(n, [])
            if runs:
                summary[name][n] = {
                    key: benchlib.median_of(runs, key)
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
    plt = peers.pyplot()
    if plt is None:
        return None
    cols = [n for n in names if summary.get(n)]
    colors = peers.COLORS
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
    return peers.save_figure(plt, fig, path, f"Goal: {GOAL}\n{subtitle}", fontsize=10)


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Compositor CPU time per client frame for qosway, sway and weston "
                    "(headless, pixman, 1920x1080@60, N full-damage 640x480 clients).")
    peers.add_program_args(p)
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
    args.clients = peers.parse_counts(p, args.clients)
    args.compositors = peers.parse_subset(p, args.compositors, COMPOSITORS, "--compositors",
                                          allow_empty=True)
    if args.runs < 1 or args.warmup < 0 or args.measure <= 0:
        p.error("--runs must be >= 1, --warmup >= 0 and --measure > 0")
    return args


def run(args):
    player = peers.find_player(args.player, "compositor_frame_cpu")
    logdir = peers.out_dirs(args.out)

    comps = peers.usable({name: make_compositor(name, args) for name in args.compositors})
    if not comps:
        print("no compositor could be benchmarked")
        return 1

    total = len(comps) * len(args.clients) * args.runs
    print(f"qos-player: {player}")
    print(f"{len(comps)} compositors x N={args.clients} x {args.runs} runs = {total} "
          f"measurements of {args.warmup:g} s warm-up + {args.measure:g} s window")
    results = {name: {n: [] for n in args.clients} for name in comps}
    runs = benchlib.interleaved(
        comps, args.runs, lambda name, n, rep: f"{name}-n{n}-r{rep}",
        lambda name, n, tag: measure(comps[name], player, n, logdir, tag, args), args.clients)
    for name, n, tag, r in runs:
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

    benchlib.save(args.out, "compositor_frame_cpu",
                  {"goal": GOAL, "verdict": verdict, "runs": args.runs,
                   "warmup_s": args.warmup, "measure_s": args.measure,
                   "summary": summary, "results": results},
                  lambda path: write_chart(summary, names, args.clients, path,
                                           f"headless pixman {w}x{h}@{hz}, {cw}x{ch} "
                                           f"full-damage clients, median of {args.runs}"))
    return 0


def main(argv=None):
    return peers.main(run, parse_args(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
