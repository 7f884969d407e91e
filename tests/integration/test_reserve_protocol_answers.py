"""qosway-reserve-v1: every set_params is answered by granted or
refused, as the protocol's set_params request says, also before the
reserve has members."""

from test_qos_buttons import qcomp, no_frozen_leftovers  # noqa: F401  (fixtures)
from test_reserve_protocol import RClient


def assert_new_reserve_answers_set_params(comp, name):
    """get_reserve(name) then set_params: exactly one answer."""
    rc = RClient(comp)
    idx = rc.get(name)
    m = rc.mark()
    ans = rc.answers(idx, "params %d qos other 20000 5000 0 0" % idx)
    print(rc.events(start=m))
    assert len(ans) == 1, rc.events(start=m)


def test_set_params_on_new_auto_reserve_is_answered(qcomp):
    assert_new_reserve_answers_set_params(qcomp, "")


def test_set_params_on_new_named_reserve_is_answered(qcomp):
    assert_new_reserve_answers_set_params(qcomp, "fresh")
