"""qosway-reserve-v1's numeric arguments, fuzzed: seeded set_params tuples
(edges, their neighbours and random 32-bit values), join/leave with random
thread ids and set_feedback with random intervals, sent by real clients to
the real compositor.

The protocol's error enum is the contract (invalid_params: unknown policy,
slice over period, period outside 100 us to 10 s, nice outside -20..19,
priority outside 1..99 for fifo/rr).  A tuple it allows is answered with
exactly one granted or refused (never a protocol error), and every params
event carries values the contract allows; leave with a thread that is not
in the reserve does nothing; a tuple it forbids ends that
client with invalid_params on the reserve and nothing else.  Throughout,
another window keeps getting frames and the compositor keeps answering.

QOS_FUZZ_SEED picks the seed (printed), QOS_FUZZ_ITERATIONS scales the
number of allowed tuples (default 120)."""

import os
import random
import time

from test_qos_buttons import qcomp, no_frozen_leftovers  # noqa: F401  (fixtures)
from test_reserve_protocol import RClient, bystander, frames_keep_coming, reserves

RESERVE = "qosway_reserve_v1"
INVALID_PARAMS, INVALID_TID = 0, 1
POLICY_NAMES = ["other", "idle", "pause", "qos", "fifo", "rr"]
FIFO, RR = 4, 5
U32 = 2 ** 32 - 1
RATE = 10  # set_params a client may send a second before rate_limited
CLIENTS = 4
SEED = int(os.environ.get("QOS_FUZZ_SEED", "0") or 0) or random.randrange(1, 2 ** 31)
VALID_TUPLES = int(os.environ.get("QOS_FUZZ_ITERATIONS", "0") or 0) or 120


def allowed(policy, fallback, period, slice_us, nice, priority):
    """The contract of the error enum, written out."""
    return (policy <= 5 and fallback <= 5 and slice_us <= period and
            (period == 0 or 100 <= period <= 10_000_000) and -20 <= nice <= 19 and
            (policy not in (FIFO, RR) or 1 <= priority <= 99))


def tuple_of(rng):
    """One set_params argument list, each value an edge, a neighbour of one,
    a typical value or anything a 32-bit field holds."""
    policy = rng.choice([0, 1, 2, 3, 4, 5, 3, 3, 0, 6, 7, 2 ** 31, U32, rng.randrange(U32 + 1)])
    fallback = rng.choice([0, 1, 2, 3, 4, 5, 0, 2, 6, U32, rng.randrange(U32 + 1)])
    period = rng.choice([0, 0, 99, 100, 101, 1000, 10_000, 20_000, 100_000, 9_999_999,
                         10_000_000, 10_000_001, U32, rng.randint(100, 10_000_000),
                         rng.randint(100, 10_000_000), rng.randrange(U32 + 1)])
    slice_us = rng.choice([0, 1, period // 2, period // 10, max(period - 1, 0), period,
                           period + 1, rng.randint(0, period), rng.randint(0, period),
                           rng.randrange(U32 + 1)])
    slice_us = min(slice_us, U32)
    nice = rng.choice([0, 0, -20, 19, -21, 20, rng.randint(-20, 19), -2 ** 31, 2 ** 31 - 1,
                       rng.randint(-2 ** 31, 2 ** 31 - 1)])
    priority = rng.choice([0, 1, 50, 99, 100, rng.randint(1, 99), U32, rng.randrange(U32 + 1)])
    return (policy, fallback, period, slice_us, nice, priority)


def tuples(rng, want_allowed, n):
    out = []
    while len(out) < n:
        t = tuple_of(rng)
        if allowed(*t) == want_allowed:
            out.append(t)
    return out


def check_params_event(d, sent):
    t = (d["policy"], d["fallback"], d["period_us"], d["slice_us"], d["nice"], d["priority"])
    assert allowed(*t), "params event the contract forbids: %r (tuples sent: %r)" % (d, sent)


def test_allowed_tuples_are_answered_once_and_forbidden_ones_are_errors(qcomp):
    print("seed %d (QOS_FUZZ_SEED to repeat)" % SEED)
    rng = random.Random(SEED)
    wl = bystander(qcomp)
    frames_keep_coming(qcomp, wl, 0.5, 5)

    # Allowed tuples: CLIENTS clients, each on a named reserve of its own,
    # RATE requests a round each (then a new rate window) and a random
    # set_feedback between them.
    clients = [RClient(qcomp, name="fuzz-%d" % k) for k in range(CLIENTS)]
    idxs = [c.get("fz%d" % k) for k, c in enumerate(clients)]
    for c, idx in zip(clients, idxs):
        c.wait("params", idx)
    todo = tuples(rng, True, VALID_TUPLES)
    answered = {"granted": 0, "refused": 0}
    while todo:
        rounds = []
        for k, c in enumerate(clients):
            batch, todo = todo[:RATE], todo[RATE:]
            if not batch:
                break
            lines = ["params %d %s" % (idxs[k], " ".join(map(str, t))) for t in batch]
            for _ in range(rng.randint(0, 2)):
                lines.insert(rng.randrange(len(lines) + 1), "feedback %d %d" % (
                    idxs[k], rng.choice([0, 1, 99, 100, 1000, U32, rng.randrange(U32 + 1)])))
            # Leaving with a thread that is not in the reserve does nothing.
            lines.insert(rng.randrange(len(lines) + 1), "leave %d %d" % (
                idxs[k], rng.choice([1, qcomp.proc.pid, rng.randint(2 ** 22, U32)])))
            rounds.append((c, idxs[k], batch, c.ask(idxs[k], *lines)))
        for c, idx, batch, events in rounds:
            c.assert_no_error()
            answers = [(e, d) for e, d in events if e in ("granted", "refused")]
            assert len(answers) == len(batch), (batch, events)
            for (e, d), t in zip(answers, batch):
                answered[e] += 1
                if e == "refused":
                    assert d["reason_name"] in ("capacity", "forbidden"), (t, d)
                    assert d["message"].strip(), (t, d)
            for e, d in events:
                if e == "params":
                    check_params_event(d, batch)
            last = [t for (e, _), t in zip(answers, batch) if e == "granted"]
            if last:
                listed = reserves(qcomp)["fz%d" % clients.index(c)]
                assert listed["policy"] == POLICY_NAMES[last[-1][0]], (last[-1], listed)
        time.sleep(1.05)  # a new rate window for every client
    print("allowed tuples: %r" % answered)
    # Both answers came up: the tuples reached admission and policy, not
    # only the argument checks.
    assert answered["granted"] and answered["refused"], answered

    # Forbidden tuples and joins of foreign threads: a client each, ended with
    # the matching error on the reserve object; its neighbours carry on.
    bad = [("params", t) for t in tuples(rng, False, 16)]
    bad += [("join", rng.choice([1, qcomp.proc.pid, rng.randint(2 ** 22, U32)])) for _ in range(3)]
    for start in range(0, len(bad), 7):
        group = [(RClient(qcomp, name="fuzz-bad-%d" % (start + i)), what, arg)
                 for i, (what, arg) in enumerate(bad[start:start + 7])]
        for rc, what, arg in group:
            idx = rc.get("fzbad")
            rc.wait("params", idx)
            rc.send("%s %d %s" % (what, idx, " ".join(map(str, arg)) if what == "params"
                                  else str(arg)))
        for rc, what, arg in group:
            err = rc.error(timeout=15)
            code = INVALID_PARAMS if what == "params" else INVALID_TID
            assert err["errno"] == 71 and err["interface"] == RESERVE, (what, arg, err)
            assert err["code"] == code, (what, arg, err)
            assert rc.p.wait(10) == 3
    assert qcomp.alive()
    for c in clients:
        c.assert_no_error()
    frames_keep_coming(qcomp, wl)
    assert qcomp.qosctl("--json", "version").returncode == 0
