#!/usr/bin/env python3
"""A tiny X11 test client (python-xlib) for the Xwayland tests.

It opens one window filled with a solid colour, with the title, WM_CLASS and
_NET_WM_PID it is told (a wrong pid shows how a client can lie), or an
override-redirect window at a given position. It prints one ``event {json}``
line per event (``mapped`` with its window id), and runs until killed or until stdin
closes.

Commands on stdin, one a line (each answered by ``done {"command": ..}``):

    urgent      set the ICCCM urgency hint (WM_HINTS)
    calm        clear it
    activate    ask for the focus with a _NET_ACTIVE_WINDOW message to the root
"""

import argparse
import json
import os
import select
import sys

from Xlib import X, Xatom, display, protocol


def say(event, **kw):
    print("%s %s" % (event, json.dumps(kw)), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--title", default="xclient")
    ap.add_argument("--class", dest="wm_class", default="QwXTest")
    ap.add_argument("--instance", default="qwxtest")
    ap.add_argument("--color", default="ff00ff")
    ap.add_argument("--width", type=int, default=300)
    ap.add_argument("--height", type=int, default=200)
    ap.add_argument("--x", type=int, default=0)
    ap.add_argument("--y", type=int, default=0)
    ap.add_argument("--net-wm-pid", type=int, default=None,
                    help="the pid to claim (default: our own)")
    ap.add_argument("--override-redirect", action="store_true")
    ap.add_argument("--xdnd-target", action="store_true",
                    help="accept XDND drops of text, printing xdnd_enter, xdnd_drop")
    args = ap.parse_args()

    d = display.Display()
    screen = d.screen()
    cmap = screen.default_colormap
    rgb = int(args.color, 16)
    pixel = cmap.alloc_color(((rgb >> 16) & 0xFF) * 257, ((rgb >> 8) & 0xFF) * 257,
                             (rgb & 0xFF) * 257).pixel
    win = screen.root.create_window(
        args.x, args.y, args.width, args.height, 0, screen.root_depth,
        X.InputOutput, X.CopyFromParent,
        background_pixel=pixel,
        override_redirect=1 if args.override_redirect else 0,
        event_mask=X.ExposureMask | X.StructureNotifyMask)
    if not args.override_redirect:
        win.set_wm_name(args.title)
        net_wm_name = d.intern_atom("_NET_WM_NAME")
        utf8 = d.intern_atom("UTF8_STRING")
        win.change_property(net_wm_name, utf8, 8, args.title.encode())
        win.set_wm_class(args.instance, args.wm_class)
        pid = args.net_wm_pid if args.net_wm_pid is not None else os.getpid()
        win.change_property(d.intern_atom("_NET_WM_PID"), Xatom.CARDINAL, 32, [pid])
    xdnd = XdndTarget(d, win) if args.xdnd_target else None
    win.map()
    d.flush()

    mapped = False
    fd = d.fileno()
    while True:
        while d.pending_events():
            ev = d.next_event()
            if ev.type == X.MapNotify and not mapped:
                mapped = True
                say("mapped", window=win.id)
            elif ev.type == X.ConfigureNotify:
                say("configure", x=ev.x, y=ev.y, width=ev.width, height=ev.height)
            elif ev.type == X.Expose:
                win.clear_area(0, 0, 0, 0)
            elif xdnd:
                xdnd.handle(ev)
        d.flush()
        r, _, _ = select.select([fd, sys.stdin], [], [])
        if sys.stdin in r:
            line = sys.stdin.readline()
            if not line:
                return 0
            command(d, screen, win, line.strip())


URGENCY_HINT = 1 << 8  # ICCCM XUrgencyHint
XDND_VERSION = 5


class XdndTarget:
    """The receiving side of XDND (freedesktop.org's drag and drop for X):
    accept every position, and on drop convert XdndSelection to the first
    type offered and print what arrived."""

    def __init__(self, d, win):
        self.d, self.win = d, win
        a = d.intern_atom
        self.atoms = {n: a(n) for n in ("XdndAware", "XdndEnter", "XdndPosition", "XdndStatus",
                                         "XdndDrop", "XdndFinished", "XdndLeave",
                                         "XdndSelection", "XdndActionCopy", "QW_DROP")}
        win.change_property(self.atoms["XdndAware"], Xatom.ATOM, 32, [XDND_VERSION])
        self.source = None
        self.type = None

    def send(self, name, data):
        ev = protocol.event.ClientMessage(window=self.source, client_type=self.atoms[name],
                                          data=(32, [self.win.id] + data))
        self.d.create_resource_object("window", self.source).send_event(ev)
        self.d.flush()

    def handle(self, ev):
        A = self.atoms
        if ev.type == X.ClientMessage:
            kind = ev.client_type
            data = ev.data[1]
            if kind == A["XdndEnter"]:
                self.source = data[0]
                self.type = data[2]
                say("xdnd_enter", type=self.d.get_atom_name(self.type) if self.type else None)
            elif kind == A["XdndPosition"]:
                self.send("XdndStatus", [1, 0, 0, A["XdndActionCopy"]])
                say("xdnd_position", action=self.d.get_atom_name(data[4]) if data[4] else None)
            elif kind == A["XdndDrop"]:
                self.win.convert_selection(A["XdndSelection"], self.type, A["QW_DROP"], data[2])
            elif kind == A["XdndLeave"]:
                say("xdnd_leave")
        elif ev.type == X.SelectionNotify and ev.property == A["QW_DROP"]:
            prop = self.win.get_full_property(A["QW_DROP"], X.AnyPropertyType)
            text = prop.value.decode() if prop and isinstance(prop.value, bytes) else None
            say("xdnd_drop", text=text)
            self.send("XdndFinished", [1, A["XdndActionCopy"]])


def command(d, screen, win, cmd):
    if cmd in ("urgent", "calm"):
        win.set_wm_hints(flags=URGENCY_HINT if cmd == "urgent" else 0)
    elif cmd == "activate":
        atom = d.intern_atom("_NET_ACTIVE_WINDOW")
        # source 1: a normal application, with no user timestamp
        ev = protocol.event.ClientMessage(window=win, client_type=atom,
                                          data=(32, [1, X.CurrentTime, 0, 0, 0]))
        screen.root.send_event(ev, event_mask=X.SubstructureRedirectMask
                               | X.SubstructureNotifyMask)
    else:
        return
    d.sync()
    say("done", command=cmd)


if __name__ == "__main__":
    sys.exit(main())
