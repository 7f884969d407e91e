#!/usr/bin/env python3
"""One real-time player among 99 busy ones: does it keep every frame?

100 qos-player windows on a 1920x1080@60 headless output (pixman): 99 small
players (80x48, no extra work) redraw on every frame callback, and one
320x240 player spends 2 ms of CPU a frame (-u 2000). The real-time player
is started last, so its window is on top and fully visible; the small ones
cascade 10 px apart, so each keeps a strip on screen and is served at the
full rate. After a warm-up every player's statistics restart (SIGUSR1) and,
over the measuring window, the script reads the real-time player's frame
rate, worst gap between two frame callbacks and missed refreshes, the
others' mean frame rate, and the compositor's CPU time (schedstat of all
its threads) as a share of one CPU.

Setups, each with a fresh compositor:

  qosway-rt     qosway, the player given the real-time button
                (`qosctl set pid:P realtime`) once its window is up
  qosway-rt-boost  the same with `scheduling server-weight off`: the
                compositor keeps no cgroup of its own (where the cpu tree
                has real-time group scheduling the default weight's leaf
                costs the boost; this keeps the boost instead)
  qosway-plain  qosway, no button
  sway          sway 1.7, nothing
  sway-fifo     sway 1.7, the player started under `chrt -f 10`

Goal: qosway-rt >= 59 fps with no gap over 20 ms.

With --lock FILE each run holds flock(FILE), so that other timing work on
the machine waits for it. A benchmark, not a test: it exits 0 whenever it
produced numbers. See tests/bench/README.md.
"""

import argparse
import fcntl
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
import peers  # noqa: E402
from peers import RunFailed, SkipCompositor, tail  # noqa: E402

FPS_GOAL = 59.0
GAP_GOAL_MS = 20.0
GOAL = f"the real-time player on qosway: >= {FPS_GOAL:g} fps, worst gap <= {GAP_GOAL_MS:g} ms"
SETUPS = ("qosway-rt", "qosway-rt-boost", "qosway-plain", "sway", "sway-fifo")
CASCADE = 10
COLORS = {"qosway-rt": peers.COLORS["qosway"], "qosway-rt-boost": "#1b4f7a",
          "qosway-plain": "#8fb8dc",
          "sway": "#f3c27f", "sway-fifo": peers.COLORS["sway"]}


def make_setup(name, args):
    if name.startswith("qosway"):
        weight = ["scheduling server-weight off"] if name.endswith("-boost") else []
        return peers.Qosway(args.qosway, args.start_timeout, qosctl=args.qosctl,
                            extra_config=[f"cascade-step {CASCADE}"] + weight
                            + args.qosway_config)
    origin, _ = peers.qosway_cascade_origin()
    return peers.Sway(args.start_timeout, cascade=CASCADE, cascade_origin=origin,
                      windows=args.others + 1)


def player_argv(player, args, index, size, work_us):
    return [player, "-u", str(work_us), "-W", str(size[0]), "-H", str(size[1]),
            "-t", f"qos-player {index}"]


def wait_windows(comp, n, timeout):
    """qosway: until n windows are mapped."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        reply, _ = comp.query("windows")
        if reply and len(reply.get("windows", [])) >= n:
            return
        time.sleep(0.2)
    raise RunFailed(f"fewer than {n} windows mapped after {timeout:g} s")


def class_of(comp, pid):
    reply, why = comp.query("clients")
    if not reply:
        return f"? ({why})"
    for c in reply.get("clients", []):
        if c.get("pid") == pid:
            return "realtime" if c.get("realtime") else "best-effort"
    return "?"


def measure(comp, setup, player, logdir, tag, args):
    comp.start(logdir, tag)
    env = comp.client_env()
    others = []
    rt = None
    info = {}

    def err_path(i):
        return os.path.join(logdir, f"{tag}.client{i}.err")
    try:
        is_qosway = setup.startswith("qosway")
        for i in range(1, args.others + 1):
            with open(err_path(i), "w") as err:
                others.append(peers.spawn(player_argv(player, args, i, (args.small_width, args.small_height),
                                                      args.small_work_us), env=env,
                                          stdout=subprocess.PIPE, stderr=err, text=True))
        peers.wait_sigusr1_ready(others, args.start_timeout + 30,
                                 lambda i: tail(err_path(i + 1)))
        if is_qosway:
            wait_windows(comp, args.others, args.start_timeout + 30)
        else:
            time.sleep(3.0)
        argv = player_argv(player, args, 0, (args.width, args.height), args.work_us)
        if setup == "sway-fifo":
            argv = ["chrt", "-f", str(args.fifo_priority)] + argv
        with open(err_path(0), "w") as err:
            rt = peers.spawn(argv, env=env, stdout=subprocess.PIPE, stderr=err, text=True)
        peers.wait_sigusr1_ready([rt], args.start_timeout, lambda i: tail(err_path(0)))
        if is_qosway:
            wait_windows(comp, args.others + 1, args.start_timeout)
            if setup.startswith("qosway-rt"):
                comp.qosctl_ok("set", f"pid:{rt.pid}", "realtime")
        time.sleep(args.warmup)
        if is_qosway:
            info["rt_class"] = class_of(comp, rt.pid)
        everyone = [rt] + others
        for p in everyone:
            p.send_signal(signal.SIGUSR1)
        cpu0 = peers.proc_runtime_s(comp.proc.pid)
        busy0, total0 = peers.machine_busy_ticks()
        t0 = time.monotonic()
        time.sleep(args.seconds)
        cpu1 = peers.proc_runtime_s(comp.proc.pid)
        busy1, total1 = peers.machine_busy_ticks()
        t1 = time.monotonic()
        if is_qosway:
            sched, why = comp.query("scheduler")
            info["scheduler"] = sched if sched is not None else f"missing: {why}"
        for p in everyone:
            p.send_signal(signal.SIGTERM)
        reports = [peers.player_report(p, i, 10, lambda k: tail(err_path(k)))
                   for i, p in enumerate(everyone)]
        if comp.proc.poll() is not None:
            raise SkipCompositor(f"{comp.name} died during the run; log tail:\n"
                                 f"{tail(comp.log)}")
    finally:
        for p in others + ([rt] if rt else []):
            peers.stop_group(p)
        comp.stop()
    wall = t1 - t0
    r0 = reports[0]
    return dict(info, **{
        "rt_fps": r0["fps"],
        "rt_worst_gap_ms": r0["worst_gap_ms"],
        "rt_missed": r0["missed"],
        "rt_frames": r0["frames"],
        "others_fps": statistics.mean(r["fps"] for r in reports[1:]),
        "others_fps_min": min(r["fps"] for r in reports[1:]),
        "compositor_cpu": (cpu1 - cpu0) / wall,
        "machine_busy": (busy1 - busy0) / max(total1 - total0, 1),
        "wall_s": wall,
    })


def summarise(results):
    out = {}
    for s, runs in results.items():
        if not runs:
            continue
        out[s] = {
            "runs": len(runs),
            "rt_fps": statistics.median(r["rt_fps"] for r in runs),
            "rt_fps_min": min(r["rt_fps"] for r in runs),
            "rt_worst_gap_ms": statistics.median(r["rt_worst_gap_ms"] for r in runs),
            "rt_worst_gap_max_ms": max(r["rt_worst_gap_ms"] for r in runs),
            "rt_missed": statistics.median(r["rt_missed"] for r in runs),
            "others_fps": statistics.median(r["others_fps"] for r in runs),
            "compositor_cpu": statistics.median(r["compositor_cpu"] for r in runs),
            "machine_busy": statistics.median(r["machine_busy"] for r in runs),
        }
    return out


def format_table(summary):
    head = ["setup", "runs", "rt fps (min)", "rt worst gap ms (max)", "rt missed",
            "others fps", "compositor CPU", "machine busy"]
    rows = []
    for s, x in summary.items():
        rows.append([s, str(x["runs"]), f"{x['rt_fps']:.1f} ({x['rt_fps_min']:.1f})",
                     f"{x['rt_worst_gap_ms']:.1f} ({x['rt_worst_gap_max_ms']:.1f})",
                     f"{x['rt_missed']:g}", f"{x['others_fps']:.1f}",
                     f"{x['compositor_cpu'] * 100:.0f}%", f"{x['machine_busy'] * 100:.0f}%"])
    return peers.format_rows(head, rows)


def verdict(summary):
    parts = []
    for name in ("qosway-rt", "qosway-rt-boost"):
        q = summary.get(name)
        if q is None:
            continue
        ok = q["rt_fps_min"] >= FPS_GOAL and q["rt_worst_gap_max_ms"] <= GAP_GOAL_MS
        parts.append(f"{name} {'MET' if ok else 'NOT MET'}: lowest {q['rt_fps_min']:.1f} fps, "
                     f"worst gap {q['rt_worst_gap_max_ms']:.1f} ms over {q['runs']} run(s)")
    return "; ".join(parts) or "not evaluated (no qosway-rt result)"


def write_chart(summary, results, path, subtitle):
    plt = peers.pyplot()
    if plt is None:
        return None
    names = list(summary)
    fig, (ax_f, ax_g, ax_c) = plt.subplots(1, 3, figsize=(14, 4.5))
    for i, s in enumerate(names):
        runs = results[s]
        color = COLORS.get(s)
        ax_f.bar(i, summary[s]["rt_fps"], color=color)
        ax_f.plot([i] * len(runs), [r["rt_fps"] for r in runs], "k.", markersize=4)
        ax_g.bar(i, summary[s]["rt_worst_gap_ms"], color=color)
        ax_g.plot([i] * len(runs), [r["rt_worst_gap_ms"] for r in runs], "k.", markersize=4)
        ax_c.bar(i, summary[s]["compositor_cpu"] * 100, color=color)
    ax_f.axhline(FPS_GOAL, color="red", linestyle=":", linewidth=1)
    ax_g.axhline(GAP_GOAL_MS, color="red", linestyle=":", linewidth=1)
    ax_f.set_title("real-time player: frames per second", fontsize=10)
    ax_g.set_title("real-time player: worst gap between frames (ms)", fontsize=10)
    ax_c.set_title("compositor CPU (% of one CPU)", fontsize=10)
    ax_f.set_ylim(0, 65)
    for ax in (ax_f, ax_g, ax_c):
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, fontsize=8)
    return peers.save_figure(plt, fig, path, f"Goal: {GOAL}\n{subtitle}", fontsize=10)


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="100 windows: one real-time qos-player among 99 busy ones on qosway "
                    "(real-time button, none) and sway 1.7 (chrt -f, none).")
    peers.add_program_args(p, qosctl=True)
    p.add_argument("--setups", default=",".join(SETUPS),
                   help="comma-separated subset of " + ",".join(SETUPS))
    p.add_argument("--runs", type=int, default=3, help="repetitions; medians are reported")
    p.add_argument("--others", type=int, default=99, help="busy small players (default 99)")
    p.add_argument("--work-us", type=int, default=2000,
                   help="CPU time per frame of the real-time player (default 2000)")
    p.add_argument("--size", default="320x240", help="the real-time player's size")
    p.add_argument("--small-size", default="80x48", help="the busy players' size")
    p.add_argument("--small-work-us", type=int, default=0,
                   help="CPU time per frame of each busy player (default 0)")
    p.add_argument("--seconds", type=float, default=10.0, help="measuring window")
    p.add_argument("--warmup", type=float, default=3.0, help="seconds before the window")
    p.add_argument("--fifo-priority", type=int, default=10,
                   help="SCHED_FIFO priority of the player on sway-fifo (default 10)")
    p.add_argument("--qosway-config", action="append", default=[],
                   help="an extra qosway config line (repeatable)")
    p.add_argument("--lock", help="hold flock on this file during each run")
    p.add_argument("--start-timeout", type=float, default=15.0,
                   help="seconds to wait for a compositor's socket")
    p.add_argument("--quick", action="store_true", help="smoke run: 1 repetition, 4 s window")
    args = p.parse_args(argv)
    if args.quick:
        args.runs, args.seconds, args.warmup = 1, 4.0, 2.0
    args.width, args.height = peers.parse_size(p, args.size, "--size")
    args.small_width, args.small_height = peers.parse_size(p, args.small_size, "--small-size")
    args.setups = peers.parse_subset(p, args.setups, SETUPS, "--setups")
    if args.runs < 1 or args.others < 1 or args.work_us < 0 or args.seconds <= 0:
        p.error("--runs and --others must be >= 1, --work-us >= 0, --seconds > 0")
    return args


def locked(path, fn):
    if not path:
        return fn()
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            return fn()
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def run(args):
    player = peers.find_player(args.player, "hundred_windows")
    args.qosctl = peers.find_qosctl(args.qosctl, "hundred_windows")
    logdir = peers.out_dirs(args.out)
    comps = peers.usable({name: make_setup(name, args) for name in args.setups})
    if "sway-fifo" in comps and shutil.which("chrt") is None:
        print("SKIP sway-fifo: chrt (util-linux) is not installed")
        del comps["sway-fifo"]
    if not comps:
        print("no compositor could be benchmarked")
        return 1
    print(f"{args.others} players {args.small_width}x{args.small_height} "
          f"(-u {args.small_work_us}) + 1 real-time "
          f"{args.width}x{args.height} (-u {args.work_us}); {args.seconds:g} s window, "
          f"{args.runs} run(s)")
    results = {name: [] for name in comps}
    runs = benchlib.interleaved(
        comps, args.runs, lambda name, _, rep: f"hundred-{name}-r{rep}",
        lambda name, _, tag: locked(args.lock, lambda: measure(
            comps[name], name, player, logdir, tag, args)))
    for name, _, tag, r in runs:
        results[name].append(r)
        cls = f" ({r['rt_class']})" if "rt_class" in r else ""
        print(f"{tag}: real-time player{cls} {r['rt_fps']:.1f} fps, worst gap "
              f"{r['rt_worst_gap_ms']:.1f} ms, missed {r['rt_missed']}; others "
              f"{r['others_fps']:.1f} fps (min {r['others_fps_min']:.1f}); compositor "
              f"{r['compositor_cpu'] * 100:.0f}% CPU; machine busy "
              f"{r['machine_busy'] * 100:.0f}%", flush=True)
    summary = summarise(results)
    if not summary:
        print("no setup produced numbers")
        return 1
    table = format_table(summary)
    text = verdict(summary)
    print()
    print(f"100 windows: the real-time player's frames (median of {args.runs} run(s); "
          "min/max in brackets)")
    print(table)
    print(f"Goal: {GOAL}: {text}")
    benchlib.save(args.out, "hundred_windows",
                  {"goal": GOAL, "verdict": text,
                   "settings": {k: getattr(args, k) for k in (
                       "runs", "others", "small_width", "small_height",
                       "small_work_us", "work_us", "width", "height", "seconds", "warmup",
                       "fifo_priority", "qosway_config")},
                   "summary": summary, "results": results},
                  lambda path: write_chart(summary, results, path,
                                           f"{args.others} players "
                                           f"{args.small_width}x{args.small_height} "
                                           f"(-u {args.small_work_us}) + one "
                                           f"{args.width}x{args.height} at "
                                           f"{args.work_us / 1000:g} ms a frame, "
                                           f"median of {args.runs}"))
    return 0


def main(argv=None):
    return peers.main(run, parse_args(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
