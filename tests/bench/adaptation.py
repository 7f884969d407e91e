#!/usr/bin/env python3
"""A player whose work per frame steps up and down: does an adaptive
reserve follow it, and what does that save in missed frames?

One qos-player plays at the output's 60 Hz with a per-frame work schedule
(default 2 ms for 6 s, then 6 ms for 6 s, then 3 ms for 6 s) while
8 qos-loadgen hogs, each a program (session) of its own, keep both CPUs busy. Cases, each on a
fresh qosway, interleaved over the repetitions:

  adaptive   a qos reserve of one 60 Hz frame (16667 us) that adapts
             (qosway-reserve-v1 version 2: -q 16667:4167 --adapt=5:60),
             fallback idle; the slice follows the measured use
  reports    the same, and the player reports each frame's work time
             (work_duration), which adaptation prefers to measured use
  fixed      a fixed 25% qos reserve (4167 us every 16667 us), fallback idle
  none       no reserve: the player time-shares with the hogs

The script samples `qosctl --json reserves` every 50 ms (slice, last
period's use) and reads the player's missed frames per step (refresh
intervals between two frame callbacks beyond the first). How many periods
adaptation takes to follow a step: from the step's start to the first
sample whose slice covers the step's use or reached the largest slice the
reserve got in the run (a step up), or is at most 1.5
times it (a step down: the shrink rule keeps p95 + 15 % and a 25 % band).

Anchor (thesis ch. 6.4): continuous adaptation grows a slice within a few
periods of a rise in demand and gives it back after sustained under-use.
A benchmark, not a test: it exits 0 whenever it produced numbers. See
tests/bench/README.md.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
import peers  # noqa: E402
from peers import RunFailed, SkipCompositor, tail  # noqa: E402

PERIOD_US = 16667
FIXED_SLICE_US = 4167
RESERVE = "bench-adapt"
GOAL = ("an adaptive reserve misses fewer frames than a fixed 25% one and than none, "
        "and follows each step within 30 periods (0.5 s)")
FOLLOW_GOAL_PERIODS = 30
CASES = {
    "adaptive": {"label": "adaptive", "player": ["-q", f"{PERIOD_US}:{FIXED_SLICE_US}:idle",
                                                 "--adapt=5:60", "--period", "vblank"]},
    "reports": {"label": "adaptive + work reports",
                "player": ["-q", f"{PERIOD_US}:{FIXED_SLICE_US}:idle", "--adapt=5:60",
                           "--period", "vblank", "--report-work"]},
    "fixed": {"label": "fixed 25%", "player": ["-q", f"{PERIOD_US}:{FIXED_SLICE_US}:idle"]},
    "none": {"label": "no reserve", "player": []},
}
SHRINK_BAND = 1.5


def parse_steps(p, text):
    """"2ms@6s,6ms@6s" -> [(2000, 6.0), (6000, 6.0)]; p.error() otherwise."""
    steps = []
    for part in text.split(","):
        work, _, dur = part.partition("@")
        try:
            work_us = float(work.removesuffix("ms")) * 1000
            secs = float(dur.removesuffix("s"))
        except ValueError:
            p.error(f"--steps: '{part}' is not WORKms@SECONDSs")
        if not (work.endswith("ms") and dur.endswith("s")) or work_us < 0 or secs <= 0:
            p.error(f"--steps: '{part}' is not WORKms@SECONDSs with positive numbers")
        steps.append((int(work_us), secs))
    return steps


def steps_arg(steps):
    return ",".join(f"{w / 1000:g}ms@{s:g}s" for w, s in steps)


def raise_sampler(on):
    """nice -10 for this process while it samples (root only), 0 after."""
    try:
        os.setpriority(os.PRIO_PROCESS, 0, -10 if on else 0)
    except OSError:
        pass


def reserve_sample(comp):
    reply, _ = comp.query("reserves")
    for r in (reply or {}).get("reserves") or []:
        if isinstance(r, dict) and r.get("name") == RESERVE:
            return r
    return None


def measure(comp, case, player, loadgen, logdir, tag, args):
    """One case: fresh qosway, hogs, the player through its schedule."""
    comp.start(logdir, tag)
    hogs = []
    proc = None
    err_path = os.path.join(logdir, f"{tag}.client.err")
    samples = []
    try:
        # Each hog its own session, as separate programs are: with autogroup
        # on, one session's hogs together would weigh no more than the player.
        hogs = [peers.spawn([loadgen, "--hogs", "1", "--quiet"], env=comp.client_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                for _ in range(args.hogs)]
        argv = [player, "-t", "adapting", "-p", "--work-steps",
                steps_arg(args.steps)] + CASES[case]["player"]
        if CASES[case]["player"]:
            argv += ["-r", RESERVE]
        with open(err_path, "w") as err:
            proc = peers.spawn(argv, env=comp.client_env(), stdout=subprocess.PIPE,
                               stderr=err, text=True)
        total = sum(s for _, s in args.steps)
        deadline = time.monotonic() + total + 15
        # The sampler (and the qosctl it runs) must not starve among the hogs.
        raise_sampler(True)
        while proc.poll() is None and time.monotonic() < deadline:
            t = time.monotonic()
            r = reserve_sample(comp) if CASES[case]["player"] else None
            if r is not None:
                samples.append({"t": t, "slice_us": r.get("slice_us"),
                                "adapt_slice_us": r.get("adapt_slice_us"),
                                "last_used_us": r.get("last_used_us"),
                                "granted": r.get("granted"),
                                "in_fallback": r.get("in_fallback"),
                                "overruns": r.get("overruns")})
            time.sleep(max(0.0, args.sample - (time.monotonic() - t)))
        end = time.monotonic()
        if proc.poll() is None:
            raise RunFailed(f"the player did not end its schedule; stderr:\n{tail(err_path)}")
        report = peers.player_report(proc, 0, 10, lambda i: tail(err_path))
        if comp.proc.poll() is not None:
            raise SkipCompositor(f"qosway died; log tail:\n{tail(comp.log)}")
    finally:
        raise_sampler(False)
        for p in [proc] + hogs:
            if p is not None:
                peers.stop_group(p)
        comp.stop()
    if CASES[case]["player"] and not str(report.get("reserve")).startswith("granted"):
        raise RunFailed(f"the reserve was not granted: {report.get('reserve')}")
    start = end - report.get("elapsed_s", total)
    for s in samples:
        s["t"] -= start
    return {"report": report, "samples": samples, "steps": report.get("steps") or [],
            "follow": follow_periods(samples, report.get("steps") or [], args.steps)}


def step_use(samples, t0, t1):
    """Median per-period use over the second half of a step: what it needs."""
    mid = (t0 + t1) / 2
    used = [s["last_used_us"] for s in samples
            if mid <= s["t"] < t1 and isinstance(s.get("last_used_us"), int)]
    return statistics.median(used) if used else None


def follow_periods(samples, reported, steps):
    """Periods from each step's start until the slice fits its use; None for
    the first step, and where it never fits within the step."""
    out = []
    t = 0.0
    prev_need = None
    # A step up is followed once the slice covers the use, or reached the
    # most the reserve ever got (its bound, or what the app may hold).
    top = max((s["slice_us"] for s in samples if isinstance(s.get("slice_us"), int)), default=0)
    for i, (_, secs) in enumerate(steps):
        need = step_use(samples, t, t + secs)
        if i == 0 or need is None or prev_need is None:
            out.append(None)
        else:
            up = need > prev_need
            hit = None
            for s in samples:
                if s["t"] < t or s["t"] >= t + secs or not isinstance(s.get("slice_us"), int):
                    continue
                fits = (s["slice_us"] >= min(need, top) if up
                        else s["slice_us"] <= need * SHRINK_BAND)
                if fits:
                    hit = s["t"]
                    break
            out.append(None if hit is None else round((hit - t) * 1e6 / PERIOD_US))
        prev_need = need
        t += secs
    return out


def summarise(results, steps):
    summary = {}
    for case, runs in results.items():
        per_step = []
        for i in range(len(steps)):
            missed = [r["steps"][i]["missed"] for r in runs
                      if i < len(r["steps"]) and isinstance(r["steps"][i].get("missed"), int)]
            follow = [r["follow"][i] for r in runs if isinstance(r["follow"][i], int)]
            never = sum(1 for r in runs if i > 0 and r["follow"][i] is None)
            per_step.append({"missed": statistics.median(missed) if missed else None,
                             "follow": statistics.median(follow) if follow else None,
                             "never": never})
        total = [r["report"].get("missed") for r in runs
                 if isinstance(r["report"].get("missed"), int)]
        frames = [r["report"].get("frames") for r in runs]
        summary[case] = {"steps": per_step, "missed": statistics.median(total) if total else None,
                         "frames": statistics.median(frames) if frames else None}
    return summary


def fmt(v):
    return "-" if v is None else f"{v:g}"


def format_table(summary, steps):
    head = ["case", "frames", "missed"] + [f"missed @{w / 1000:g}ms" for w, _ in steps] + [
        f"periods to follow {steps[i - 1][0] / 1000:g}->{w / 1000:g}ms"
        for i, (w, _) in enumerate(steps) if i > 0]
    rows = []
    for case, s in summary.items():
        follows = []
        for st in s["steps"][1:]:
            f = fmt(st["follow"])
            if st["never"]:
                f += f" ({st['never']} never)"
            follows.append(f if case in ("adaptive", "reports") else "-")
        rows.append([CASES[case]["label"], fmt(s["frames"]), fmt(s["missed"])] +
                    [fmt(st["missed"]) for st in s["steps"]] + follows)
    return peers.format_rows(head, rows)


def verdict(summary):
    a = summary.get("adaptive") or summary.get("reports")
    if a is None or a["missed"] is None:
        return "not measured (no adaptive case)"
    others = [summary[c]["missed"] for c in ("fixed", "none")
              if c in summary and summary[c]["missed"] is not None]
    fewer = all(a["missed"] < m for m in others)
    follows = [st["follow"] for st in a["steps"][1:]]
    fast = all(f is not None and f <= FOLLOW_GOAL_PERIODS for f in follows)
    if fewer and fast:
        return "met"
    why = []
    if not fewer:
        why.append("adaptive misses no fewer frames")
    if not fast:
        why.append(f"a step took longer than {FOLLOW_GOAL_PERIODS} periods or was never followed")
    return "not met: " + "; ".join(why)


def write_chart(results, summary, steps, path, subtitle):
    plt = peers.pyplot()
    if plt is None:
        return None
    fig, (ax, bx) = plt.subplots(2, 1, figsize=(9, 7), gridspec_kw={"height_ratios": [3, 2]})
    colours = {"adaptive": "#2a7ab9", "reports": "#7a3fb0", "fixed": "#e08a1e"}
    for case in ("adaptive", "reports", "fixed"):
        runs = results.get(case) or []
        if not runs:
            continue
        s = runs[0]["samples"]
        ax.plot([x["t"] for x in s], [x["slice_us"] / 1000 for x in s], color=colours[case],
                label=f"{CASES[case]['label']}: slice")
        if case != "fixed":
            ax.plot([x["t"] for x in s], [x["last_used_us"] / 1000 for x in s], color=colours[case],
                    alpha=0.45, linestyle=":", label=f"{CASES[case]['label']}: use per period")
    t = 0.0
    for w, secs in steps:
        ax.hlines(w / 1000, t, t + secs, color="black", linewidth=1)
        t += secs
        ax.axvline(t, color="#999999", linewidth=0.5)
    ax.plot([], [], color="black", linewidth=1, label="player's work per frame")
    ax.set_xlabel("seconds since the player's first frame (first run)")
    ax.set_ylabel("ms per 16.7 ms period")
    ax.legend(fontsize=7, loc="upper left")
    cases = list(summary)
    width = 0.8 / max(len(cases), 1)
    for k, case in enumerate(cases):
        xs = [i + k * width for i in range(len(steps))]
        vals = [st["missed"] or 0 for st in summary[case]["steps"]]
        bars = bx.bar(xs, vals, width, label=CASES[case]["label"],
                      color=colours.get(case, "#bbbbbb"))
        bx.bar_label(bars, fmt="%g", fontsize=7)
    bx.set_xticks([i + 0.4 - width / 2 for i in range(len(steps))])
    bx.set_xticklabels([f"{w / 1000:g} ms for {s:g} s" for w, s in steps], fontsize=8)
    bx.set_ylabel("missed frames (median)")
    bx.legend(fontsize=7)
    return peers.save_figure(plt, fig, path, f"Goal: {GOAL}\n{subtitle}")


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="A player whose per-frame work steps 2 -> 6 -> 3 ms under CPU load: "
                    "slice and use over time, and missed frames with an adaptive reserve, "
                    "a fixed 25% reserve and none.")
    peers.add_program_args(p, qosctl=True)
    p.add_argument("--loadgen", help="qos-loadgen binary (default: build/ or build-bench/)")
    p.add_argument("--cases", default=",".join(CASES),
                   help="comma-separated subset of " + ",".join(CASES))
    p.add_argument("--runs", type=int, default=3, help="repetitions; medians are reported")
    p.add_argument("--steps", default="2ms@6s,6ms@6s,3ms@6s",
                   help="the player's work schedule (default 2ms@6s,6ms@6s,3ms@6s)")
    p.add_argument("--hogs", type=int, default=8, help="best-effort CPU hogs (default 8)")
    p.add_argument("--sample", type=float, default=0.05,
                   help="seconds between reserve samples (default 0.05)")
    p.add_argument("--start-timeout", type=float, default=15.0,
                   help="seconds to wait for qosway's sockets")
    p.add_argument("--from", dest="from_json", metavar="JSON",
                   help="summarise and chart a results file of an earlier run instead of running")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 1 repetition of 2ms@2s,6ms@2s,3ms@2s")
    args = p.parse_args(argv)
    if args.quick:
        args.runs, args.steps = 1, "2ms@2s,6ms@2s,3ms@2s"
    args.steps = parse_steps(p, args.steps)
    args.cases = peers.parse_subset(p, args.cases, list(CASES), "--cases")
    if args.runs < 1 or args.hogs < 0 or args.sample <= 0:
        p.error("--runs must be >= 1, --hogs >= 0 and --sample > 0")
    return args


def report(results, args):
    """Table, verdict, results JSON and chart of {case: [run, ...]}."""
    summary = summarise(results, args.steps)
    text = verdict(summary)
    print()
    print(f"One player at 60 Hz, work per frame {steps_arg(args.steps)}, {args.hogs} best-effort "
          f"hogs; median of {args.runs} run(s)")
    print(format_table(summary, args.steps))
    print(f"Goal: {GOAL}: {text}")
    os.makedirs(args.out, exist_ok=True)
    benchlib.save(args.out, "adaptation",
                  {"goal": GOAL, "verdict": text,
                   "settings": {"runs": args.runs, "steps": args.steps, "hogs": args.hogs,
                                "period_us": PERIOD_US, "fixed_slice_us": FIXED_SLICE_US},
                   "summary": summary, "results": results},
                  lambda path: write_chart(results, summary, args.steps, path,
                                           f"60 Hz player, {args.hogs} hogs, "
                                           f"median of {args.runs}"))
    return 0


def from_file(args):
    """Recomputes what a saved run shows (its samples and player reports)."""
    with open(args.from_json) as f:
        data = json.load(f)
    settings = data["settings"]
    args.steps = [tuple(s) for s in settings["steps"]]
    args.runs, args.hogs = settings["runs"], settings["hogs"]
    results = data["results"]
    for runs in results.values():
        for r in runs:
            r["follow"] = follow_periods(r["samples"], r["steps"], args.steps)
    return report(results, args)


def run(args):
    if args.from_json:
        return from_file(args)
    player = peers.find_player(args.player, "adaptation")
    qosctl = peers.find_qosctl(args.qosctl, "adaptation")
    loadgen = peers.find_build_program(args.loadgen, "qos-loadgen", "adaptation",
                                       "qos-loadgen")
    logdir = peers.out_dirs(args.out)
    comps = peers.usable({case: peers.Qosway(args.qosway, args.start_timeout, qosctl=qosctl)
                          for case in args.cases})
    if not comps:
        return 1
    total = sum(s for _, s in args.steps)
    print(f"qos-player: {player}; {args.hogs} hogs; schedule {steps_arg(args.steps)}; "
          f"{len(comps)} cases x {args.runs} runs of {total:g} s")
    results = {case: [] for case in comps}
    runs = benchlib.interleaved(
        comps, args.runs, lambda case, _, rep: f"adaptation-{case}-r{rep}",
        lambda case, _, tag: measure(comps[case], case, player, loadgen, logdir, tag, args))
    for case, _, tag, r in runs:
        results[case].append(r)
        steps = ", ".join(f"{s.get('missed')}" for s in r["steps"])
        print(f"{tag}: {r['report'].get('frames')} frames, missed {r['report'].get('missed')}"
              f" (per step {steps}), periods to follow {r['follow'][1:]}", flush=True)
    results = {c: v for c, v in results.items() if v}
    if not results:
        print("no case produced numbers")
        return 1
    return report(results, args)


def main(argv=None):
    return peers.main(run, parse_args(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
