"""Kernel tests for overrun events of reserves whose limit the kernel holds by
itself (qos with fallback pause: the deadline runtime; other with a CFS
ceiling and fallback pause), which the manager only watches
(qos_manager_watch_overruns), and of time billed to them
(qos_manager_bill): the compositor stops serving a client whose reserve is
exhausted until the next period, so it needs OVERRUN once per period in
which the slice was used, and RESTORED when the next one starts.
"""
import os
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_helpers import (  # noqa: E402
    assert_no_test_cgroup_left, busy, frozen, info_fields, place, pytestmark, wait_for,
    wait_frozen)

assert pytestmark  # skipped with kernel_helpers' printed reason when not root


def _events_of(helper, name, since):
    """The overrun and restored events of reserve `name` after index `since`,
    as (kind, used_us, message)."""
    out = []
    for e in helper.events[since:]:
        parts = e.split(" ", 6)
        if parts[1] in ("overrun", "restored") and parts[2] == "reserve=" + name:
            out.append((parts[1], int(parts[5].split("=")[1]), parts[6]))
    return out


def _watch_busy(helper, procs, name, params, slice_us, seconds=2.0):
    """A busy member of a watched reserve: the events and the counts over
    `seconds`, both read up to the same reply."""
    p = busy(procs)
    place(helper, "%s %s" % (name, params), p.pid)
    helper.ok("watch %s on" % name)
    time.sleep(0.3)
    f0 = info_fields(helper, name)
    mark = len(helper.events)
    time.sleep(seconds)
    f1 = info_fields(helper, name)
    events = _events_of(helper, name, mark)
    periods = int(f1["periods"]) - int(f0["periods"])
    overruns = int(f1["overruns"]) - int(f0["overruns"])
    seen = [e for e in events if e[0] == "overrun"]
    diag = "%d periods, %d overruns, events %s; %s" % (periods, overruns, events, f1)
    # Fired, with the period's use, for each overrun the books count...
    assert seen, diag
    assert len(seen) == overruns, diag
    assert all(used >= slice_us for _, used, _ in seen), diag
    # ...at most once per period (the one running at the second read may
    # have had its own already): each restored before the next.
    assert overruns <= periods + 1, diag
    kinds = [e[0] for e in events]
    assert all(a != b for a, b in zip(kinds, kinds[1:])), diag
    # The kernel holds the limit: the manager froze nothing.
    v2, _ = helper.path(name)
    assert not frozen(v2), diag
    return events


def test_watched_qos_reserve_raises_overrun_once_per_period(helper, procs):
    """qos 30% with fallback pause: the deadline runtime is the cap, and the
    kernel throttles the member at the very tick its CPU timer would tell
    the manager, which holds the notice back until the member runs again."""
    _watch_busy(helper, procs, "wq", "policy=qos period=100ms slice=30ms fallback=pause",
                30000)


def test_watched_ceiling_raises_overrun_once_per_period(helper, procs):
    """other with a 20% CFS ceiling and fallback pause."""
    _watch_busy(helper, procs, "wc", "policy=other period=100ms cpu=20% fallback=pause",
                20000)


def test_unwatched_kernel_capped_reserve_is_looked_at_lazily(helper, procs):
    """Nobody watching: the busy member's reserve costs no wake-up a period
    (the books are kept at the 1 s pass), and so raises far fewer events
    than periods pass; watched, the same reserve is looked at as they do."""
    p = busy(procs)
    place(helper, "lazy policy=other period=10ms cpu=20% fallback=pause", p.pid)
    time.sleep(0.3)
    a = int(helper.ok("stats").split("dispatches=")[1].split()[0])
    time.sleep(1.0)
    b = int(helper.ok("stats").split("dispatches=")[1].split()[0])
    helper.ok("watch lazy on")
    time.sleep(1.0)
    c = int(helper.ok("stats").split("dispatches=")[1].split()[0])
    # 100 periods a second: about 3 wake-ups (the pass, the canary) against 100+.
    assert b - a < 20 <= c - b, (b - a, c - b)


@pytest.mark.parametrize("params", [
    "policy=qos period=200ms slice=60ms fallback=pause",
    "policy=other period=200ms cpu=20% fallback=pause",
], ids=["qos", "ceiling"])
@pytest.mark.parametrize("watched", [True, False], ids=["watched", "unwatched"])
def test_billed_overrun_of_a_sleeping_member(helper, procs, params, watched):
    """A member asleep, its reserve billed two slices and 10 ms (the
    compositor's work for it), watched or not: OVERRUN at once with the
    billed use, the group frozen (the kernel knows nothing of the bill),
    the slice and 10 ms carried into the next period, which so stays
    exhausted without events, and RESTORED at the one after, reporting
    what was carried; then thawed."""
    p = procs(["sleep", "60"])
    place(helper, "b " + params, p.pid)
    if watched:
        helper.ok("watch b on")
    slice_us = 60000 if "qos" in params else 40000
    bill = 2 * slice_us + 10000
    v2, _ = helper.path("b")
    for _ in range(3):
        before = info_fields(helper, "b")
        mark = len(helper.events)
        helper.ok("bill b %d" % bill)
        after = info_fields(helper, "b")
        if after["periods"] == before["periods"]:  # no boundary in between
            break
        wait_for(helper, lambda: info_fields(helper, "b")["fallback"] == "0", 2,
                  "never restored")
    else:
        pytest.fail("three boundaries in a row fell between two reads")
    seen = _events_of(helper, "b", mark)
    assert [e[0] for e in seen] == ["overrun"], seen
    assert seen[0][1] >= bill, seen
    assert after["fallback"] == "1" and after["billed"] == str(bill), after
    wait_frozen(v2, True, "the bill past the slice froze nothing")
    f = info_fields(helper, "b")
    if f["periods"] == str(int(after["periods"]) + 1):
        # the period after the bill's: its own figures, and the bill's period beside them
        assert f["fallback"] == "1" and int(f["used"]) >= slice_us + 10000, f
        assert f["last_billed"] == str(bill) and int(f["last"]) >= bill, f
    wait_for(helper, lambda: [e for e in _events_of(helper, "b", mark)
                               if e[0] == "restored"], 2, "never restored")
    seen = _events_of(helper, "b", mark)
    assert [e[0] for e in seen] == ["overrun", "restored"], seen
    assert seen[1][1] >= slice_us + 10000, seen
    wait_frozen(v2, False, "never thawed once the debt was paid")


def test_zz_no_test_cgroup_left():
    """Run last in this file."""
    assert_no_test_cgroup_left()
