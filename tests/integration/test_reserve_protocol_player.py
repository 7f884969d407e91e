"""qosway-reserve-v1: clients/qos-player asks for a reserve
through the protocol (-q on its automatic reserve, -r by name), prints the
result on stderr and in its JSON line, and its process is in the reserve
while it plays."""

import json
import os

import pytest

import harness
from harness import wait_for
from test_qos_buttons import qcomp, no_frozen_leftovers  # noqa: F401  (fixtures)
from test_reserve_protocol import reserves, reserves_holding, reload_user_qosrc


def player_bin():
    return os.path.join(harness.build_dir(), "clients", "qos-player")


@pytest.fixture
def player():
    if not os.access(player_bin(), os.X_OK):
        pytest.skip("qos-player not built (meson compile -C build qos-player)")
    return player_bin()


def run_player(comp, argv, check_running=None, name=None):
    p = comp.spawn(argv, name=name, stdin=False)
    if check_running is not None:
        wait_for(lambda: "granted" in p.stderr_tail() or "refused" in p.stderr_tail()
                 or not p.alive(), 20, desc="qos-player's answer")
        check_running(p)
    assert p.wait(60) == 0, p.stderr_tail()
    stats = json.loads(p.lines[-1])
    print("stderr: %s\nstats: %r" % (p.stderr_tail(), stats))
    return p, stats


def test_player_auto_reserve_granted(qcomp, player):
    seen = {}

    def check(p):
        # The compositor bills the player's window to the reserve: a period
        # whose slice that used up runs in the fallback (other) until its end.
        def deadline():
            st = harness.qos_state(p.pid)
            return st if st["policy"] == harness.SCHED_DEADLINE else None
        seen["state"] = wait_for(deadline, 5, interval=0.002, desc="the player in its reserve")
        seen["holding"] = reserves_holding(qcomp, p.pid)
    p, stats = run_player(qcomp, [player, "-n", "120", "-W", "320", "-H", "240",
                                  "-u", "1000", "-q", "20000:5000:other"], check)
    err = p.stderr_tail()
    assert "reserve (automatic): granted" in err, err
    assert stats["reserve"] == "granted" and stats["frames"] >= 120, stats
    st = seen["state"]
    print("kernel while playing: %r; reserves %r" % (st, seen["holding"]))
    assert st["policy"] == harness.SCHED_DEADLINE and st["period"] == 20_000_000, st
    assert seen["holding"] == ["auto-%d" % p.pid], seen
    assert "auto-%d" % p.pid not in reserves(qcomp)


def test_player_named_reserve_granted(qcomp, player):
    reload_user_qosrc(qcomp, "reserve audio policy=qos period=10ms cpu=20% fallback=other\n")
    seen = {}

    def check(p):
        seen["holding"] = reserves_holding(qcomp, p.pid)
        # outside the periods its billed window used up (see above)
        seen["policy"] = wait_for(
            lambda: harness.sched_attr(p.pid)["policy"] == harness.SCHED_DEADLINE and
            harness.SCHED_DEADLINE, 5, interval=0.002, desc="the player in its reserve")
    p, stats = run_player(qcomp, [player, "-n", "60", "-W", "160", "-H", "120",
                                  "-r", "audio"], check)
    assert "reserve audio: granted" in p.stderr_tail(), p.stderr_tail()
    assert stats["reserve"] == "granted", stats
    assert seen == {"holding": ["audio"], "policy": harness.SCHED_DEADLINE}, seen
    assert p.pid not in [m["pid"] for m in reserves(qcomp)["audio"]["members"]]


def test_player_refused_still_plays(qcomp, player):
    """75% of a CPU is over the per-app limit: refused (forbidden), printed,
    and it plays all the same."""
    p, stats = run_player(qcomp, [player, "-n", "30", "-W", "160", "-H", "120",
                                  "-q", "20000:15000"])
    err = p.stderr_tail()
    assert "refused (forbidden)" in err, err
    assert stats["reserve"] == "refused:forbidden" and stats["frames"] >= 30, stats


def test_player_without_the_global(start_qosway, player):
    """On a compositor without the global (stand-in: weston) it just plays."""
    import shutil
    import subprocess
    import tempfile
    import time
    if not shutil.which("weston"):
        pytest.skip("weston not installed")
    rt = tempfile.mkdtemp(prefix="qw-w-")
    os.chmod(rt, 0o700)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "XDG_RUNTIME_DIR": rt,
           "HOME": rt}
    w = subprocess.Popen(["weston", "--backend=headless-backend.so", "--socket=wl-test",
                          "--idle-time=0"], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for(lambda: os.path.exists(os.path.join(rt, "wl-test")), 20,
                 desc="weston's socket")
        time.sleep(0.5)
        r = subprocess.run([player, "-n", "30", "-W", "160", "-H", "120", "-q", "20000:5000"],
                           env=dict(env, WAYLAND_DISPLAY="wl-test"), capture_output=True,
                           text=True, timeout=60)
        print(r.stdout, r.stderr)
        assert r.returncode == 0, r.stderr
        stats = json.loads(r.stdout.strip().splitlines()[-1])
        assert stats["reserve"] == "unsupported" and stats["frames"] >= 30, stats
        assert "no qosway_reserve_manager_v1" in r.stderr, r.stderr
    finally:
        os.killpg(w.pid, 9)
        w.wait(10)
        shutil.rmtree(rt, ignore_errors=True)
