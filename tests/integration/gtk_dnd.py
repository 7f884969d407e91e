#!/usr/bin/python3
"""A GTK 3 window for the drag and drop tests: a drag source or a drop target.

Run with the system python (python3-gi). Prints one ``<event> <json>`` line
per event on stdout:

    mapped {}                    the window is shown
    drag_begin {} / drag_end {}  (source) GTK started or ended its drag
    drag_motion {}               (target) the first motion of a drag over it
    drop {"text": ".."}          (target) the dropped text arrived
"""

import argparse
import json
import sys

import gi

gi.require_version("Gtk", "3.0")
gi.require_version("Gdk", "3.0")
from gi.repository import Gdk, GLib, Gtk  # noqa: E402

PAYLOAD = "qosway drag payload"


def say(event, **kw):
    print("%s %s" % (event, json.dumps(kw)), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("role", choices=("source", "target"))
    ap.add_argument("--title", required=True)
    ap.add_argument("--width", type=int, default=300)
    ap.add_argument("--height", type=int, default=200)
    args = ap.parse_args()
    win = Gtk.Window(title=args.title)
    win.set_default_size(args.width, args.height)
    win.connect("destroy", Gtk.main_quit)
    box = Gtk.EventBox()
    box.add(Gtk.Label(label=args.role))
    win.add(box)
    targets = [Gtk.TargetEntry.new("text/plain", 0, 0)]
    if args.role == "source":
        box.drag_source_set(Gdk.ModifierType.BUTTON1_MASK, targets, Gdk.DragAction.COPY)
        box.connect("drag-begin", lambda *a: say("drag_begin"))
        box.connect("drag-end", lambda *a: say("drag_end"))
        box.connect("drag-data-get",
                    lambda w, ctx, data, info, time: data.set_text(PAYLOAD, -1))
    else:
        box.drag_dest_set(Gtk.DestDefaults.ALL, targets, Gdk.DragAction.COPY)
        seen = {"motion": False}

        def motion(*a):
            if not seen["motion"]:
                seen["motion"] = True
                say("drag_motion")
            return False
        box.connect("drag-motion", motion)
        box.connect("drag-data-received",
                    lambda w, ctx, x, y, data, info, time: say("drop", text=data.get_text()))
    win.connect("map-event", lambda *a: say("mapped"))
    win.show_all()
    GLib.io_add_watch(0, GLib.IO_HUP | GLib.IO_IN, lambda *a: Gtk.main_quit()
                      if not sys.stdin.readline() else True)
    Gtk.main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
