"""What the compositor benchmarks share beyond starting their peers
(peers.py): the loop over repetitions and setups, the median of one number
over runs, and saving a run's JSON and chart under one time stamp."""
import json
import os
import statistics
import time

import peers


def interleaved(comps, runs, tag_of, measure, counts=None):
    """measure(name, n, tag) for every repetition, count n and setup of
    comps, repetition-major with the setups innermost: slow drift on the
    machine then hits every setup alike instead of biasing one of them.
    Yields (name, n, tag, result) for each run that produced numbers; a run
    that failed is said on stdout, and a setup that cannot run any more is
    dropped from comps (peers.attempt).  Without counts, n is None."""
    for rep in range(runs):
        for n in counts if counts is not None else [None]:
            for name in list(comps):
                tag = tag_of(name, n, rep)
                r = peers.attempt(comps, name, tag, lambda: measure(name, n, tag))
                if r is not None:
                    yield name, n, tag, r


def median_of(runs, key):
    """The median of key over the runs that have a number for it, or None."""
    values = [r[key] for r in runs if isinstance(r.get(key), (int, float))]
    return statistics.median(values) if values else None


def save(out, name, data, chart):
    """Writes data to OUT/NAME-STAMP.json, then chart(OUT/NAME-STAMP.png),
    which returns the path it wrote or None; prints both paths."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    data_path = os.path.join(out, f"{name}-{stamp}.json")
    with open(data_path, "w") as f:
        json.dump(data, f, indent=1)
    print(f"results: {data_path}")
    path = chart(os.path.join(out, f"{name}-{stamp}.png"))
    if path:
        print(f"chart: {path}")
