"""clients/qos-player -V WxH shows its buffer through wp_viewporter at that
destination size: on a real qosway the window is the destination size, not
the buffer's, in either direction of scaling; bad sizes are refused with a
message naming -V and exit status 2, before anything connects."""

import json

import pytest

from test_reserve_protocol_player import player  # noqa: F401  (fixture)


FRAMES = 120


def play_scaled(comp, player, buffer_size, view_size):
    """Plays FRAMES frames; returns (its window while playing, its JSON line)."""
    argv = [player, "-n", str(FRAMES), "-W", str(buffer_size[0]), "-H", str(buffer_size[1]),
            "-V", "%dx%d" % view_size, "-t", "scaled"]
    p = comp.spawn(argv, stdin=False)
    win = comp.window_by_pid(p.pid, timeout=20)
    assert p.wait(60) == 0, p.stderr_tail()
    stats = json.loads(p.lines[-1])
    print("window: %r\nstats: %r\nstderr: %s" % (win, stats, p.stderr_tail()))
    assert "lacks wp_viewporter" not in p.stderr_tail(), p.stderr_tail()
    return win, stats


@pytest.mark.parametrize("buffer_size,view_size", [
    ((320, 240), (1000, 700)),   # scaled up, aspect changed
    ((640, 480), (150, 400)),    # scaled down, aspect changed
])
def test_player_window_is_the_destination_size(qosway, player, buffer_size, view_size):
    win, stats = play_scaled(qosway, player, buffer_size, view_size)
    geo = win["geometry"]
    assert (geo["width"], geo["height"]) == view_size, win
    assert stats["frames"] == FRAMES, stats


@pytest.mark.parametrize("value,words", [
    ("0x10", "width and height must be 1 to 16384"),
    ("10x0", "width and height must be 1 to 16384"),
    ("16385x10", "width and height must be 1 to 16384"),
    ("99999999999999999999x1", "width and height must be 1 to 16384"),
    ("10", "is not WIDTHxHEIGHT"),
    ("10x", "is not WIDTHxHEIGHT"),
    ("x10", "is not WIDTHxHEIGHT"),
    ("-5x5", "is not WIDTHxHEIGHT"),
    ("5x+5", "is not WIDTHxHEIGHT"),
    ("10x10x", "is not WIDTHxHEIGHT"),
    ("10 x10", "is not WIDTHxHEIGHT"),
    ("", "is not WIDTHxHEIGHT"),
])
def test_player_bad_view_size_refused(qosway, player, value, words):
    p = qosway.spawn([player, "-n", "1", "-V", value], stdin=False)
    assert p.wait(20) == 2, p.stderr_tail()
    err = p.stderr_tail()
    assert "qos-player: -V: '%s'" % value in err and words in err, err
    assert "Try 'qos-player -h'" in err, err
    assert p.lines == [], p.lines  # refused before playing: no JSON line
    assert qosway.find_window(lambda w: w["pid"] == p.pid) is None


def test_player_view_size_needs_an_argument(qosway, player):
    p = qosway.spawn([player, "-V"], stdin=False)
    assert p.wait(20) == 2, p.stderr_tail()
    assert "-V needs an argument" in p.stderr_tail(), p.stderr_tail()
