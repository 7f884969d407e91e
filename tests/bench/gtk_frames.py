#!/usr/bin/python3
"""A GTK 3 animation that reports its own frame timing, for real_programs.py.

A window with a drawing area redraws every frame of its GdkFrameClock: a
full-window gradient and a few hundred moving anti-aliased circles drawn with
cairo, so each frame costs the program real drawing work, as an animated
GTK program's would. It records the frame clock's frame time of every frame
it paints.

The measuring window starts at SIGUSR1 (the window is mapped and the
program set up by then) and ends --seconds later; the program then prints
one JSON line and exits:

    {"frames": N, "seconds": S, "refresh_ms": R, "expected": E, "lost": L,
     "late": K, "worst_gap_ms": G, "draw_ms_mean": D, "cpu_s": C}

`lost` sums, over the intervals between painted frames, how many refresh
periods each skipped (an interval of 2.4 periods lost 1 frame); `late`
counts intervals longer than 1.5 periods; `expected` is seconds / period.
SIGTERM before the end prints what was measured so far.

Runs with the system Python (python3-gi and gir1.2-gtk-3.0).
"""

import argparse
import json
import math
import signal
import sys
import time

import cairo
import gi

gi.require_version("Gtk", "3.0")
from gi.repository import GLib, Gtk  # noqa: E402


class Animation:
    def __init__(self, args):
        self.args = args
        self.times_us = []
        self.draw_s = 0.0
        self.measuring = False
        self.start_us = None
        self.cpu0 = 0.0
        self.refresh_us = 1e6 / 60
        self.done = False

        self.window = Gtk.Window(title=args.title)
        self.window.set_default_size(args.width, args.height)
        self.window.connect("destroy", lambda w: self.finish())
        self.area = Gtk.DrawingArea()
        self.area.connect("draw", self.on_draw)
        self.window.add(self.area)
        self.area.add_tick_callback(self.on_tick)
        self.window.show_all()
        GLib.unix_signal_add(GLib.PRIORITY_HIGH, signal.SIGUSR1, self.begin)
        GLib.unix_signal_add(GLib.PRIORITY_HIGH, signal.SIGTERM, self.finish)
        GLib.unix_signal_add(GLib.PRIORITY_HIGH, signal.SIGINT, self.finish)

    def on_tick(self, widget, clock):
        widget.queue_draw()
        return GLib.SOURCE_CONTINUE

    def begin(self):
        self.measuring = True
        self.times_us = []
        self.draw_s = 0.0
        self.start_us = None
        self.cpu0 = time.process_time()
        GLib.timeout_add(int(self.args.seconds * 1000), self.finish)
        return GLib.SOURCE_REMOVE

    def on_draw(self, widget, cr):
        t0 = time.perf_counter()
        clock = widget.get_frame_clock()
        now_us = clock.get_frame_time() if clock else GLib.get_monotonic_time()
        if clock is not None:
            timings = clock.get_current_timings()
            if timings is not None and timings.get_refresh_interval() > 0:
                self.refresh_us = timings.get_refresh_interval()
        w = widget.get_allocated_width()
        h = widget.get_allocated_height()
        phase = now_us / 1e6
        self.paint(cr, w, h, phase)
        if self.measuring:
            if self.start_us is None:
                self.start_us = now_us
            self.times_us.append(now_us)
            self.draw_s += time.perf_counter() - t0
        return True

    def paint(self, cr, w, h, phase):
        grad = cairo.LinearGradient(0, 0, w, h)
        grad.add_color_stop_rgb(0, 0.1, 0.2 + 0.1 * math.sin(phase), 0.35)
        grad.add_color_stop_rgb(1, 0.5 + 0.3 * math.cos(phase), 0.2, 0.1)
        cr.set_source(grad)
        cr.paint()
        n = self.args.shapes
        for i in range(n):
            a = phase * (0.5 + (i % 7) * 0.15) + i * 2.399
            x = w / 2 + math.cos(a) * (w * 0.45) * ((i % 13) + 1) / 13
            y = h / 2 + math.sin(a * 1.3) * (h * 0.45) * ((i % 11) + 1) / 11
            cr.set_source_rgba((i * 37 % 255) / 255, (i * 91 % 255) / 255,
                               (i * 53 % 255) / 255, 0.6)
            cr.arc(x, y, 12 + (i % 5) * 6, 0, 2 * math.pi)
            cr.fill()

    def report(self):
        t = self.times_us
        period = self.refresh_us
        gaps = [(b - a) for a, b in zip(t, t[1:])]
        lost = sum(max(0, round(g / period) - 1) for g in gaps)
        late = sum(1 for g in gaps if g > 1.5 * period)
        seconds = self.args.seconds
        return {
            "frames": len(t),
            "seconds": seconds,
            "refresh_ms": period / 1000,
            "expected": int(round(seconds * 1e6 / period)),
            "lost": lost,
            "late": late,
            "worst_gap_ms": max(gaps) / 1000 if gaps else None,
            "draw_ms_mean": self.draw_s * 1000 / len(t) if t else None,
            "cpu_s": time.process_time() - self.cpu0,
        }

    def finish(self):
        if not self.done:
            self.done = True
            print(json.dumps(self.report()), flush=True)
            Gtk.main_quit()
        return GLib.SOURCE_REMOVE


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=16.0,
                   help="length of the measuring window after SIGUSR1")
    p.add_argument("--shapes", type=int, default=300, help="circles drawn per frame")
    p.add_argument("--width", type=int, default=1280)
    p.add_argument("--height", type=int, default=720)
    p.add_argument("--title", default="gtk-frames")
    args = p.parse_args()
    if args.seconds <= 0 or args.shapes < 0 or args.width < 1 or args.height < 1:
        p.error("--seconds must be > 0, --shapes >= 0, sizes >= 1")
    Animation(args)
    Gtk.main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
