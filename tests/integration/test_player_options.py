"""clients/qos-player reads its numbers as plain decimal digits: a blank, a
sign, hex or an exponent before or inside one is refused with a message
naming the option and exit status 2, before anything connects (so no
compositor is needed here).  strtol and strtoul take " -5" as a number,
and an unsigned one wraps it to a huge value."""

import os
import subprocess

import pytest

from test_reserve_protocol_player import player  # noqa: F401  (fixture)


def run(player, *args):
    env = dict(os.environ)
    # Nothing to connect to: a refused option must be refused before that.
    env.pop("WAYLAND_DISPLAY", None)
    return subprocess.run([player, *args], env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=20)


@pytest.mark.parametrize("args,words", [
    (["-q", "20000:5000", "--adapt= -5:10"], "--adapt: ' -5:10' is not MIN:MAX"),
    (["-q", "20000:5000", "--adapt=5: -10"], "--adapt: '5: -10' is not MIN:MAX"),
    (["-q", "20000:5000", "--adapt=-5:10"], "--adapt: '-5:10' is not MIN:MAX"),
    (["-q", "20000:5000", "--adapt=+5:10"], "--adapt: '+5:10' is not MIN:MAX"),
    (["-q", "20000:5000", "--adapt=5:"], "--adapt: '5:' is not MIN:MAX"),
    (["-q", "20000:5000", "--adapt=101:0"], "--adapt: MIN and MAX are 0 to 100 percent"),
    (["-q", " 20000:5000"], "-q: ' 20000:5000' is not PERIOD_US:SLICE_US"),
    (["-q", "20000: -5"], "-q: '20000: -5' is not PERIOD_US:SLICE_US"),
    (["-q", "+20000:5000"], "-q: '+20000:5000' is not PERIOD_US:SLICE_US"),
    (["-q", "99999999999999999999:5000"], "-q: the period must be 100 to 10000000 us"),
    (["-n", " -5"], "-n: ' -5' is not a whole number"),
    (["-n", "+5"], "-n: '+5' is not a whole number"),
    (["-W", " 640"], "-W: ' 640' is not a whole number"),
    (["-H", "0x10"], "-H: '0x10' is not a whole number"),
    (["-u", "-1"], "-u: '-1' is not a whole number"),
    (["-V", " 10x10"], "-V: ' 10x10' is not WIDTHxHEIGHT"),
    (["--work-steps", " 2ms@5s"], "--work-steps: ' 2ms@5s' is not WORK@DURATION"),
    (["--work-steps", "2ms@ -5s"], "--work-steps: '2ms@ -5s' is not WORK@DURATION"),
    (["--work-steps", "0x10ms@5s"], "--work-steps: '0x10ms@5s' is not WORK@DURATION"),
    (["--work-steps", "1e3us@5s"], "--work-steps: '1e3us@5s' is not WORK@DURATION"),
    (["--work-steps", "2.ms@5s"], "--work-steps: '2.ms@5s' is not WORK@DURATION"),
])
def test_player_refuses_numbers_that_are_not_digits(player, args, words):
    r = run(player, *args)
    print(r.stderr)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert ("qos-player: " + words) in r.stderr, r.stderr
    assert "Try 'qos-player -h'" in r.stderr, r.stderr
    assert r.stdout == "", r.stdout


@pytest.mark.parametrize("args", [
    ["-q", "20000:5000", "--adapt=5:40"],
    ["-q", "20000:5000:idle", "--adapt=0:0"],
    ["-n", "0", "-W", "64", "-H", "48", "-u", "1000", "-V", "100x100"],
    ["--work-steps", "2ms@5s,1.5ms@1s,500us@10ms"],
])
def test_player_takes_plain_numbers(player, args):
    """Good options get past parsing: the player then fails only for want
    of a display (exit status 1, not 2)."""
    r = run(player, *args)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "cannot connect to the Wayland display" in r.stderr, r.stderr
