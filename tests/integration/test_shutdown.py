"""SIGTERM, SIGINT, ``qosctl exit`` and Super+Shift+E end qosway with exit
code 0 while clients are connected; the clients see the disconnection."""

import signal

import pytest

from vinput import VirtualInput, KEY_LEFTMETA, KEY_LEFTSHIFT, KEY_E


def connect_clients(comp):
    c = comp.spawn_wlclient(title="Connected")
    c.wait_event("mapped")
    shm = comp.spawn(["weston-simple-shm"], name="simple-shm", stdin=False)
    foot = comp.spawn(["foot", "--title", "Foot Connected", "sh"], name="foot")
    comp.window_by_title("Connected")
    comp.window_by_pid(shm.pid, timeout=15)
    comp.window_by_title("Foot Connected", timeout=20)
    return c, shm, foot


def assert_clients_disconnected(c, shm, foot):
    c.wait_event("disconnected", timeout=10)
    assert c.wait(10) != 0
    # real clients exit on their own when the display goes away
    shm.wait(10)
    foot.wait(10)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_exits_zero_with_clients(qosway, sig):
    clients = connect_clients(qosway)
    rc = qosway.terminate(sig)
    assert rc == 0, "qosway exited %d on %s:\n%s" % (rc, sig.name, qosway.log_tail())
    assert_clients_disconnected(*clients)
    assert not qosway.sanitizer_reports(), qosway.log_tail()


def test_qosctl_exit_exits_zero(qosway):
    clients = connect_clients(qosway)
    r = qosway.qosctl("exit")
    assert r.returncode == 0, r.stderr
    qosway.proc.wait(20)
    assert qosway.proc.returncode == 0, qosway.log_tail()
    assert_clients_disconnected(*clients)


def test_super_shift_e_exits_zero(qosway):
    c = qosway.spawn_wlclient(title="Exit Binding")
    c.wait_event("mapped")
    with VirtualInput(qosway.client_env()) as vi:
        vi.chord([KEY_LEFTMETA, KEY_LEFTSHIFT], KEY_E)
        qosway.proc.wait(20)
    assert qosway.proc.returncode == 0, qosway.log_tail()
    c.wait_event("disconnected")
