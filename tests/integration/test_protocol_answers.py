"""qosway-reserve-v1 (issue 5): every set_params is answered by granted or
refused (the issue: "a request to define or modify the reserve. It is
answered by granted or refused"), also before the reserve has members."""

from test_qos_buttons import qcomp, no_frozen_leftovers  # noqa: F401  (fixtures)
from test_protocol_reserve import RClient


def answers(rc, m, idx):
    return [e for e, d in rc.events(start=m, idx=idx) if e in ("granted", "refused")]


def test_set_params_on_new_auto_reserve_is_answered(qcomp):
    rc = RClient(qcomp)
    idx = rc.get("")
    m = rc.mark()
    rc.send("params %d qos other 20000 5000 0 0" % idx)
    rc.sync()
    print(rc.events(start=m))
    assert len(answers(rc, m, idx)) == 1, rc.events(start=m)


def test_set_params_on_new_named_reserve_is_answered(qcomp):
    rc = RClient(qcomp)
    idx = rc.get("fresh")
    m = rc.mark()
    rc.send("params %d qos other 20000 5000 0 0" % idx)
    rc.sync()
    print(rc.events(start=m))
    assert len(answers(rc, m, idx)) == 1, rc.events(start=m)
