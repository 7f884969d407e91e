"""qosway-reserve-v1: protocol errors, one test per error value
and bad argument.  Each gets exactly the expected error code on the expected
interface; the compositor and the other clients carry on (a bystander
window keeps getting frame callbacks, another reserve client keeps its
granted reserve)."""


import pytest

import harness
from test_qos_buttons import qcomp, no_frozen_leftovers  # noqa: F401  (fixtures)
from test_reserve_protocol import (
    RClient, bystander, frames_keep_coming, grant_auto, assert_released,
    reserves, member_pids)

MANAGER = "qosway_reserve_manager_v1"
RESERVE = "qosway_reserve_v1"
INVALID_NAME = 0
INVALID_PARAMS, INVALID_TID, TOO_MANY_OBJECTS = 0, 1, 2


@pytest.fixture
def others(qcomp):
    """A bystander window and a reserve client holding a granted reserve."""
    wl = bystander(qcomp)
    keeper = RClient(qcomp, name="keeper")
    grant_auto(keeper)
    frames_keep_coming(qcomp, wl, 0.5, 5)
    return wl, keeper


def expect_error(comp, rc, others, code, interface):
    err = rc.error(timeout=15)
    print("protocol error: %r; stderr: %s" % (err, rc.p.stderr_tail(500)))
    assert err["errno"] == 71, err        # EPROTO: a protocol error, not a hang-up
    assert err["interface"] == interface and err["code"] == code, err
    assert rc.p.wait(10) == 3
    assert comp.alive()
    wl, keeper = others
    frames_keep_coming(comp, wl)
    keeper.assert_no_error()
    keeper.assert_deadline()
    assert keeper.pid in member_pids(reserves(comp)["auto-%d" % keeper.pid])
    assert comp.qosctl("--json", "version").returncode == 0
    # the offender's reserves are gone with it
    assert_released(comp, rc.pid, alive=False)


@pytest.mark.parametrize("name", [
    pytest.param("a" * 64, id="64-bytes"),
    pytest.param("x" * 100, id="100-bytes"),
    pytest.param("audio/../x", id="slash"),
    pytest.param("/", id="only-slash"),
    pytest.param("a\x01b", id="ctrl-01"),
    pytest.param("a\tb", id="tab"),
    pytest.param("a\nb", id="newline"),
    pytest.param("a\x1bb", id="escape"),
    pytest.param("a\x7fb", id="del"),
])
def test_invalid_name(qcomp, others, name):
    rc = RClient(qcomp)
    rc.getj(name)
    expect_error(qcomp, rc, others, INVALID_NAME, MANAGER)


@pytest.mark.parametrize("raw", [
    pytest.param(b"a\xffb", id="stray-byte"),
    pytest.param(b"cut\xc3", id="cut-sequence"),
    pytest.param(b"\xc0\xaf", id="overlong"),
    pytest.param(b"\xed\xa0\x80", id="surrogate"),
])
def test_name_that_is_not_utf8(qcomp, others, raw):
    """Names end up in JSON and in events to other clients: text only."""
    rc = RClient(qcomp)
    rc.send("getx " + raw.hex())
    expect_error(qcomp, rc, others, INVALID_NAME, MANAGER)


def test_name_of_63_bytes_is_fine(qcomp):
    rc = RClient(qcomp)
    idx = rc.get("n" * 63)
    rc.wait("params", idx)
    utf8 = "\u00e9" * 31          # 62 bytes of UTF-8
    rc.getj(utf8)
    rc.assert_no_error()


@pytest.mark.parametrize("args", [
    pytest.param("9 other 20000 5000 0 0", id="policy-9"),
    pytest.param("qos 9 20000 5000 0 0", id="fallback-9"),
    pytest.param("4294967295 other 20000 5000 0 0", id="policy-max"),
    pytest.param("qos other 20000 20001 0 0", id="slice-over-period"),
    pytest.param("qos other 50 10 0 0", id="period-50us"),
    pytest.param("qos other 99 10 0 0", id="period-99us"),
    pytest.param("qos other 20000000 1000000 0 0", id="period-20s"),
    pytest.param("qos other 10000001 1000 0 0", id="period-10s+1us"),
    pytest.param("other other 0 0 20 0", id="nice-20"),
    pytest.param("other other 0 0 -21 0", id="nice-minus-21"),
    pytest.param("fifo other 0 0 0 0", id="fifo-priority-0"),
    pytest.param("rr other 0 0 0 100", id="rr-priority-100"),
])
def test_invalid_params(qcomp, others, args):
    rc = RClient(qcomp)
    idx = rc.get("")
    rc.send("params %d %s" % (idx, args))
    expect_error(qcomp, rc, others, INVALID_PARAMS, RESERVE)


@pytest.mark.parametrize("args", [
    pytest.param("qos other 100 50 0 0", id="period-100us"),
    pytest.param("qos other 10000000 1000 0 0", id="period-10s"),
    pytest.param("other other 0 0 19 0", id="nice-19"),
    pytest.param("idle other 0 0 -20 0", id="nice-minus-20"),
    pytest.param("qos other 20000 20000 0 0", id="slice-equals-period"),
])
def test_boundary_params_are_not_errors(qcomp, args):
    """Legal values at the edges: answered (granted or refused), no error."""
    rc = RClient(qcomp)
    idx = rc.get("edge")
    rc.send("params %d %s" % (idx, args))
    rc.assert_no_error()
    assert rc.p.alive()


def test_invalid_tid_other_process(qcomp, others):
    """join with another process's tid (the bystander's)."""
    wl, _ = others
    rc = RClient(qcomp)
    idx = rc.get("")
    rc.send("params %d qos other 20000 2000 0 0" % idx)
    before = harness.qos_state(wl.pid)
    rc.send("join %d %d" % (idx, wl.pid))
    expect_error(qcomp, rc, others, INVALID_TID, RESERVE)
    after = harness.qos_state(wl.pid)
    assert after["policy"] == before["policy"] == harness.SCHED_OTHER, after
    assert after["cgroups"] == before["cgroups"], (before, after)


def test_invalid_tid_compositor_and_init(qcomp, others):
    """The compositor's own pid, then pid 1, on a named reserve."""
    for i, tid in enumerate((qcomp.pid, 1)):
        rc = RClient(qcomp, name="bad-tid-%d" % i)
        idx = rc.get("victim")
        rc.send("join %d %d" % (idx, tid))
        expect_error(qcomp, rc, others, INVALID_TID, RESERVE)
    st = harness.sched_attr(qcomp.pid)
    assert st["policy"] == harness.SCHED_OTHER, st


def test_invalid_tid_nonexistent(qcomp, others):
    rc = RClient(qcomp)
    idx = rc.get("")
    rc.send("join %d %d" % (idx, 4_000_000_000))
    expect_error(qcomp, rc, others, INVALID_TID, RESERVE)


def test_too_many_objects(qcomp, others):
    """64 reserve objects are fine; the 65th is a protocol error."""
    rc = RClient(qcomp)
    for i in range(64):
        rc.send("get r%d" % (i % 8))
    rc.assert_no_error()
    assert len(rc.events("object")) == 64
    rc.send("get r65")
    expect_error(qcomp, rc, others, TOO_MANY_OBJECTS, RESERVE)


def test_destroyed_objects_do_not_count(qcomp):
    """64 live objects, destroy one, get another: no error."""
    rc = RClient(qcomp)
    for i in range(64):
        rc.send("get r%d" % i)
    rc.sync()
    rc.send("destroy 0")
    rc.send("get again")
    rc.assert_no_error()
    assert rc.p.alive()
