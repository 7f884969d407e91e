#!/usr/bin/env python3
"""Thesis Table 5.3 analogue: does prioritising one client reach through the
compositor?

N qos-player clients (N = 1, 4, 8, 16) each play a 240-frame "clip" (640x480
full-damage shm frames, 8 ms of CPU per frame), all released at the same
moment, in the same cascaded layout on every compositor. Player 0 is
prioritised:

  qosway-on   qosway with `scheduling on`, player 0 joined to a reserve
              `policy=qos period=50ms cpu=60% fallback=other` before it connects
  qosway-off  the same with `scheduling off` (the kernel reserve alone)
  sway        sway 1.7, player 0 at SCHED_FIFO 10 (chrt)
  weston      weston 10, player 0 at SCHED_FIFO 10 (chrt)

For each setup and N the script reports the prioritised player's time to
play its clip and the others' mean time, each as a ratio to the solo time on
the same setup (N = 1), beside the thesis' seconds (Ingram, Table 5.3) and
the compositor's CPU time (schedstat of all its threads) per run.

Goal: on qosway-on at N = 16 the prioritised player within 1.05x of solo,
and the others' ratio no worse than sway's.

A benchmark, not a test: it exits 0 whenever it produced numbers. See
tests/bench/README.md.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
import peers  # noqa: E402
from peers import RunFailed, SkipCompositor, tail  # noqa: E402

GOAL = ("qosway-on at N=16: prioritised <= 1.05x solo, "
        "others' ratio no worse than sway's")
PRIO_LIMIT = 1.05
# Ingram, Table 5.3 (seconds): N -> (all treated equally, prioritised player,
# not prioritised).
THESIS = {1: (12, 12, 12), 4: (12, 12, 12), 8: (24, 12, 29), 12: (37, 12, 46),
          16: (50, 12, 64)}
SETUPS = ("qosway-on", "qosway-off", "sway", "weston")
RESERVE = "player"


def make_setup(name, args):
    if name.startswith("qosway"):
        mode = name.split("-", 1)[1]
        return peers.Qosway(args.qosway, args.start_timeout,
                            extra_config=[f"scheduling {mode}"], qosctl=args.qosctl)
    if name == "sway":
        origin, step = peers.qosway_cascade_origin()
        if args.sway_titlebars:
            # sway then moves the frame, whose corner qosway puts at k * step.
            origin = (0, 0)
        return peers.Sway(args.start_timeout, cascade=step, cascade_origin=origin,
                          titlebars=args.sway_titlebars, windows=max(args.clients))
    return peers.Weston(args.start_timeout, repaint_window=args.weston_repaint_window)


def policy_of(pid):
    try:
        return {0: "other", 1: "fifo", 2: "rr", 3: "batch", 5: "idle", 6: "deadline"}.get(
            os.sched_getscheduler(pid) & ~0x40000000, "?")
    except OSError:
        return None


def qosway_slot(comp, pid, n, step, origin):
    """Which cascade slot (0 = bottom-left, first mapped) qosway gave pid's
    window, once all n windows are mapped; None if that cannot be told."""
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        reply, _ = comp.query("windows")
        wins = reply.get("windows", []) if reply else []
        if len(wins) >= n:
            for w in wins:
                if w.get("pid") == pid:
                    return (w["geometry"]["x"] - origin[0]) // step
            return None
        time.sleep(0.1)
    return None


def measure(comp, setup, player, n, logdir, tag, args):
    """One run: fresh compositor, n players released together, until all
    have played their clip."""
    comp.start(logdir, tag)
    clients = []
    info = {}

    def client_err(i):
        return tail(os.path.join(logdir, f"{tag}.client{i}.err"))
    try:
        is_qosway = setup.startswith("qosway")
        if is_qosway:
            comp.qosctl_ok("reserve", RESERVE, *args.reserve.split())
            sched, why = comp.query("scheduler")
            info["scheduler"] = sched if sched is not None else f"missing: {why}"
        env = comp.client_env()
        gate = peers.Gate()
        for i in range(n):
            argv = [player, "-n", str(args.frames), "-u", str(args.work_us),
                    "-W", str(args.width), "-H", str(args.height), "-t", f"qos-player {i}"]
            if i == 0 and not is_qosway:
                argv = ["chrt", "-f", str(args.fifo_priority)] + argv
            with open(os.path.join(logdir, f"{tag}.client{i}.err"), "w") as err:
                clients.append(gate.spawn(argv, env=env, stdout=subprocess.PIPE,
                                          stderr=err, text=True))
        if is_qosway:
            comp.qosctl_ok("join", f"pid:{clients[0].pid}", RESERVE)

        rt0 = peers.proc_runtime_s(comp.proc.pid)
        busy0, total0 = peers.machine_busy_ticks()
        t0 = time.monotonic()
        gate.open()
        gate.close()
        time.sleep(0.5)
        info["prio_policy"] = policy_of(clients[0].pid)
        if is_qosway:
            origin, step = peers.qosway_cascade_origin()
            info["prio_slot"] = qosway_slot(comp, clients[0].pid, n, step, origin)

        limit = args.start_timeout + 3.0 * n * args.frames * args.work_us / 1e6 + 30.0
        reports = []
        for i, c in enumerate(clients):
            left = max(t0 + limit - time.monotonic(), 1.0)
            try:
                c.wait(timeout=left)
            except subprocess.TimeoutExpired:
                raise RunFailed(f"client {i} had not played {args.frames} frames after "
                                f"{limit:.0f} s")
            reports.append(peers.player_report(c, i, 5, client_err))
        rt1 = peers.proc_runtime_s(comp.proc.pid)
        busy1, total1 = peers.machine_busy_ticks()
        t1 = time.monotonic()
        if comp.proc.poll() is not None:
            raise SkipCompositor(f"{comp.name} died during the run; log tail:\n"
                                 f"{tail(comp.log)}")
    finally:
        for c in clients:
            peers.stop_group(c)
        comp.stop()

    short = [i for i, r in enumerate(reports) if r["frames"] < args.frames]
    if short:
        raise RunFailed(f"clients {short} stopped before {args.frames} frames")
    others = [r["elapsed_s"] for r in reports[1:]]
    return dict(info, **{
        "prio_elapsed_s": reports[0]["elapsed_s"],
        "others_elapsed_s": statistics.mean(others) if others else None,
        "others_elapsed_max_s": max(others) if others else None,
        "elapsed_s": [r["elapsed_s"] for r in reports],
        "fps": [r["fps"] for r in reports],
        "client_cpu_s": [r["cpu_s"] for r in reports],
        "compositor_cpu_s": rt1 - rt0,
        "wall_s": t1 - t0,
        "machine_busy": (busy1 - busy0) / max(total1 - total0, 1),
    })


def scheduling_note(comp, result):
    """What this qosway made of the scheduling switches, for the table."""
    bad = comp.config_complaints("scheduling")
    if bad:
        return ("this qosway refused the scheduling line and ran its old behaviour "
                f"({bad[0]}); scheduler query: {result.get('scheduler')}")
    sched = result.get("scheduler")
    if not isinstance(sched, dict):
        return f"scheduling line accepted; scheduler query: {sched}"
    return "switches: " + ", ".join(f"{k}={sched.get(k)}" for k in (
        "serve_by_reserve", "bill", "boost", "boost_available"))


def summarise(results, setups, counts):
    """summary[setup][n]: medians and ratios to the setup's solo time."""
    summary = {}
    for s in setups:
        summary[s] = {}
        solo_runs = results[s].get(1, [])
        solo = benchlib.median_of(solo_runs, "prio_elapsed_s")
        for n in counts:
            runs = results[s].get(n, [])
            if not runs:
                continue
            prio = benchlib.median_of(runs, "prio_elapsed_s")
            others = benchlib.median_of(runs, "others_elapsed_s")
            summary[s][n] = {
                "runs": len(runs),
                "prio_elapsed_s": prio,
                "others_elapsed_s": others,
                "solo_elapsed_s": solo,
                "prio_ratio": prio / solo if solo and prio else None,
                "others_ratio": others / solo if solo and others else None,
                "compositor_cpu_s": benchlib.median_of(runs, "compositor_cpu_s"),
                "compositor_cpu_util": statistics.median(
                    r["compositor_cpu_s"] / r["wall_s"] for r in runs),
                "machine_busy": benchlib.median_of(runs, "machine_busy"),
            }
    return summary


def ratio_text(v):
    return "-" if v is None else f"{v:.2f}"


def format_tables(summary, setups, counts):
    cols = [s for s in setups if summary.get(s)]
    head = ["N", "thesis s (equal/prio/not)", "thesis prio/not"]
    head += [f"{s} prio/others" for s in cols]
    rows = []
    for n in counts:
        t = THESIS.get(n)
        row = [str(n),
               f"{t[0]}/{t[1]}/{t[2]}" if t else "-",
               f"{t[1] / 12:.2f}/{t[2] / 12:.2f}" if t else "-"]
        for s in cols:
            x = summary[s].get(n)
            row.append("-" if x is None else
                       f"{ratio_text(x['prio_ratio'])}/{ratio_text(x['others_ratio'])}")
        rows.append(row)
    ratios = peers.format_rows(head, rows)

    head = ["N"] + [f"{s} prio s / others s / comp CPU s (%)" for s in cols]
    rows = []
    for n in counts:
        row = [str(n)]
        for s in cols:
            x = summary[s].get(n)
            if x is None:
                row.append("-")
                continue
            others = "-" if x["others_elapsed_s"] is None else f"{x['others_elapsed_s']:.2f}"
            row.append(f"{x['prio_elapsed_s']:.2f} / {others} / "
                       f"{x['compositor_cpu_s']:.2f} ({x['compositor_cpu_util'] * 100:.0f}%)")
        rows.append(row)
    return ratios, peers.format_rows(head, rows)


def verdict(summary, counts):
    n = max(counts)
    q = summary.get("qosway-on", {}).get(n)
    w = summary.get("sway", {}).get(n)
    if q is None or q["prio_ratio"] is None:
        return f"not evaluated (no qosway-on result at N={n})"
    parts = []
    ok = q["prio_ratio"] <= PRIO_LIMIT
    parts.append(f"prioritised {q['prio_ratio']:.2f}x "
                 f"({'ok' if ok else 'ABOVE'} {PRIO_LIMIT:.2f})")
    if n == 1:
        others_ok = True
    elif w is None or w["others_ratio"] is None or q["others_ratio"] is None:
        parts.append("others not compared (no sway result)")
        others_ok = None
    else:
        others_ok = q["others_ratio"] <= w["others_ratio"]
        parts.append(f"others {q['others_ratio']:.2f}x vs sway {w['others_ratio']:.2f}x "
                     f"({'ok' if others_ok else 'WORSE'})")
    if ok and others_ok:
        word = "MET"
    elif ok is False or others_ok is False:
        word = "NOT MET"
    else:
        word = "not evaluated"
    note = "" if n == 16 else f" (judged at N={n}, the largest measured)"
    return f"{word}: " + ", ".join(parts) + note


def write_chart(summary, setups, counts, path, subtitle):
    plt = peers.pyplot()
    if plt is None:
        return None
    cols = [s for s in setups if summary.get(s)]
    colors = {"qosway-on": peers.COLORS["qosway"], "qosway-off": "#8fb8dc",
              "sway": peers.COLORS["sway"], "weston": peers.COLORS["weston"]}
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.5))
    ax_p, ax_o, ax_c = axes
    tn = [n for n in sorted(THESIS) if n <= max(counts)]
    ax_p.plot(tn, [THESIS[n][1] / 12 for n in tn], "k--", linewidth=1,
              label="thesis (X server)")
    ax_o.plot(tn, [THESIS[n][2] / 12 for n in tn], "k--", linewidth=1,
              label="thesis (X server)")
    ax_o.plot(tn, [THESIS[n][0] / 12 for n in tn], "k:", linewidth=1,
              label="thesis, all equal")
    width = 0.8 / max(len(cols), 1)
    for i, s in enumerate(cols):
        ns = [n for n in counts if summary[s].get(n)]
        ax_p.plot(ns, [summary[s][n]["prio_ratio"] for n in ns], "o-", label=s,
                  color=colors.get(s))
        # Alone, a player's time is the solo time: the lines start at 1.
        ax_o.plot(ns, [1.0 if n == 1 else summary[s][n]["others_ratio"] for n in ns],
                  "o-", label=s, color=colors.get(s))
        pos = [k + (i - (len(cols) - 1) / 2) * width for k in range(len(counts))]
        ax_c.bar(pos, [summary[s].get(n, {}).get("compositor_cpu_s") or 0 for n in counts],
                 width, label=s, color=colors.get(s))
    ax_p.axhline(PRIO_LIMIT, color="red", linestyle=":", linewidth=1)
    ax_p.set_title("prioritised player: time / solo time", fontsize=10)
    ax_o.set_title("other players (mean): time / solo time", fontsize=10)
    ax_c.set_title("compositor CPU s per run (schedstat)", fontsize=10)
    for ax in (ax_p, ax_o):
        ax.set_xticks(counts)
        ax.set_xlabel("N players")
        ax.legend(fontsize=7)
    ax_c.set_xticks(list(range(len(counts))))
    ax_c.set_xticklabels([f"N={n}" for n in counts])
    ax_c.legend(fontsize=7)
    return peers.save_figure(plt, fig, path, f"Goal: {GOAL}\n{subtitle}", fontsize=10)


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Thesis Table 5.3 analogue: N qos-player clients play a clip together, "
                    "player 0 prioritised (qosway reserve with scheduling on/off, "
                    "SCHED_FIFO on sway and weston); times as ratios to solo.")
    peers.add_program_args(p, qosctl=True)
    p.add_argument("--setups", default=",".join(SETUPS),
                   help="comma-separated subset of " + ",".join(SETUPS))
    p.add_argument("--clients", default="1,4,8,16",
                   help="comma-separated player counts; 1 (solo) is always run")
    p.add_argument("--runs", type=int, default=3, help="repetitions; medians are reported")
    p.add_argument("--frames", type=int, default=240, help="frames of the clip (-n)")
    p.add_argument("--work-us", type=int, default=8000,
                   help="CPU time per frame in microseconds (-u, default 8000)")
    p.add_argument("--size", default="640x480", help="buffer size WxH (default 640x480)")
    p.add_argument("--reserve", default="policy=qos period=50ms cpu=60% fallback=other",
                   help="parameters of the qosway reserve of player 0")
    p.add_argument("--fifo-priority", type=int, default=10,
                   help="SCHED_FIFO priority of player 0 on sway and weston (default 10)")
    p.add_argument("--start-timeout", type=float, default=15.0,
                   help="seconds to wait for a compositor's socket")
    p.add_argument("--sway-titlebars", action="store_true",
                   help="make sway draw titlebars and 2 px borders like qosway")
    p.add_argument("--weston-repaint-window", type=int, default=15,
                   help="weston.ini repaint-window in ms (see README)")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 1 repetition, N=1,4, 60 frames")
    args = p.parse_args(argv)
    if args.quick:
        args.runs, args.frames, args.clients = 1, 60, "1,4"
    args.clients = sorted({1} | set(peers.parse_counts(p, args.clients)))
    args.width, args.height = peers.parse_size(p, args.size, "--size")
    args.setups = peers.parse_subset(p, args.setups, SETUPS, "--setups")
    if args.runs < 1 or args.frames < 1 or args.work_us < 0:
        p.error("--runs and --frames must be >= 1, --work-us >= 0")
    if not 1 <= args.fifo_priority <= 99:
        p.error("--fifo-priority must be 1 to 99")
    return args


def run(args):
    player = peers.find_player(args.player, "table53")
    args.qosctl = peers.find_qosctl(args.qosctl, "table53")
    logdir = peers.out_dirs(args.out)

    comps = peers.usable({name: make_setup(name, args) for name in args.setups})
    fifo = [name for name in comps if not name.startswith("qosway")]
    if fifo and shutil.which("chrt") is None:
        print(f"SKIP {', '.join(fifo)}: chrt (util-linux) is not installed")
        for name in fifo:
            del comps[name]
    if not comps:
        print("no compositor could be benchmarked")
        return 1

    total = len(comps) * len(args.clients) * args.runs
    print(f"qos-player: {player}")
    print(f"{len(comps)} setups x N={args.clients} x {args.runs} runs = {total} runs; "
          f"each player plays {args.frames} frames of {args.width}x{args.height} "
          f"with {args.work_us} us of CPU per frame")
    results = {name: {n: [] for n in args.clients} for name in comps}
    notes = {}
    runs = benchlib.interleaved(
        comps, args.runs, lambda name, n, rep: f"table53-{name}-n{n}-r{rep}",
        lambda name, n, tag: measure(comps[name], name, player, n, logdir, tag, args),
        args.clients)
    for name, n, tag, r in runs:
        if name.startswith("qosway") and name not in notes:
            notes[name] = scheduling_note(comps[name], r)
        results[name][n].append(r)
        others = ("-" if r["others_elapsed_s"] is None
                  else f"{r['others_elapsed_s']:.2f} s")
        slot = f", slot {r['prio_slot']}" if r.get("prio_slot") is not None else ""
        print(f"{tag}: prioritised {r['prio_elapsed_s']:.2f} s "
              f"({r['prio_policy']}{slot}), others mean {others}, "
              f"compositor CPU {r['compositor_cpu_s']:.2f} s, "
              f"machine busy {r['machine_busy'] * 100:.0f}%", flush=True)

    names = [n for n in args.setups if any(results.get(n, {}).values())]
    if not names:
        print("no setup produced numbers")
        return 1
    summary = summarise(results, names, args.clients)
    ratios, seconds = format_tables(summary, names, args.clients)
    text = verdict(summary, args.clients)
    print()
    print(f"Table 5.3 analogue: N players of {args.frames} frames ({args.width}x{args.height}, "
          f"{args.work_us / 1000:g} ms CPU per frame), player 0 prioritised; median of "
          f"{args.runs} run(s)")
    print("ratio = time to play the clip / the same setup's solo time (N=1); "
          "thesis ratios = seconds / 12")
    print(ratios)
    print()
    print(seconds)
    for name, note in notes.items():
        print(f"note: {name}: {note}")
    if any("refused the scheduling line" in v for v in notes.values()):
        text += " [this qosway has no scheduler: qosway-on ran its old behaviour]"
    print(f"Goal: {GOAL}: {text}")

    benchlib.save(args.out, "table53",
                  {"goal": GOAL, "verdict": text, "thesis_seconds": THESIS,
                   "settings": {k: getattr(args, k) for k in (
                       "runs", "frames", "work_us", "width", "height", "reserve",
                       "fifo_priority", "sway_titlebars", "weston_repaint_window")},
                   "notes": notes, "summary": summary, "results": results},
                  lambda path: write_chart(summary, names, args.clients, path,
                                           f"{args.frames} frames {args.width}x{args.height}, "
                                           f"{args.work_us / 1000:g} ms CPU/frame, "
                                           f"median of {args.runs}"))
    return 0


def main(argv=None):
    return peers.main(run, parse_args(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
