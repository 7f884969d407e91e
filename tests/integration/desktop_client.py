#!/usr/bin/env python3
"""A test client that watches the desktop the way swayidle and a taskbar do.

It binds org_kde_kwin_idle (the idle protocol of wlroots 0.15) and
zwlr_foreign_toplevel_manager_v1 and reports on stdout, one
``<event> <json>`` line each:

    ready {"globals": [...]}
    idle {"timer": N}                 timer N saw no activity for its timeout
    resumed {"timer": N}              activity after idle
    toplevel {"id": N, "title": .., "app_id": .., "state": [..],
              "outputs": N}           a window's state, after each done
    toplevel_closed {"id": N}

Commands on stdin, one a line:

    idle MSEC                         start an idle timer; prints "timer {"timer": N}"
    activate ID | minimize ID | unminimize ID | maximize ID | unmaximize ID
    fullscreen ID | unfullscreen ID | close ID
                                      send that request for window ID
    quit
"""

import os
import select
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from wlcommon import StdinLines, connect, emit  # noqa: E402
from _proto.wayland import WlSeat, WlOutput  # noqa: E402
from _proto.idle import OrgKdeKwinIdle  # noqa: E402
from _proto.wlr_foreign_toplevel_management_unstable_v1 import (  # noqa: E402
    ZwlrForeignToplevelManagerV1,
)

STATES = {0: "maximized", 1: "minimized", 2: "activated", 3: "fullscreen"}


def _u32_list(arr):
    if isinstance(arr, (bytes, bytearray)):
        import struct
        return list(struct.unpack("%dI" % (len(arr) // 4), arr))
    return [int(x) for x in arr]


class Toplevel:
    def __init__(self, client, handle, ident):
        self.client = client
        self.handle = handle
        self.id = ident
        self.title = None
        self.app_id = None
        self.state = []
        self.outputs = set()
        handle.dispatcher["title"] = lambda _h, t: setattr(self, "title", t)
        handle.dispatcher["app_id"] = lambda _h, a: setattr(self, "app_id", a)
        handle.dispatcher["state"] = self._on_state
        handle.dispatcher["output_enter"] = lambda _h, o: self.outputs.add(o)
        handle.dispatcher["output_leave"] = lambda _h, o: self.outputs.discard(o)
        handle.dispatcher["done"] = self._on_done
        handle.dispatcher["closed"] = self._on_closed

    def _on_state(self, _h, arr):
        self.state = sorted(STATES.get(s, s) for s in _u32_list(arr))

    def _on_done(self, _h):
        emit("toplevel", id=self.id, title=self.title, app_id=self.app_id,
             state=self.state, outputs=len(self.outputs))

    def _on_closed(self, _h):
        emit("toplevel_closed", id=self.id)
        self.handle.destroy()
        self.client.toplevels.pop(self.id, None)


class Client:
    def __init__(self):
        self.display, self.globals, bind = connect()
        self.seat = bind(WlSeat, 1)
        self.outputs = [bind(WlOutput, 2)] if "wl_output" in self.globals else []
        self.idle = None
        if "org_kde_kwin_idle" in self.globals:
            self.idle = bind(OrgKdeKwinIdle, 1)
        self.timers = []
        self.toplevels = {}
        self.next_id = 1
        self.manager = None
        if "zwlr_foreign_toplevel_manager_v1" in self.globals:
            self.manager = bind(ZwlrForeignToplevelManagerV1, 3)
            self.manager.dispatcher["toplevel"] = self._on_toplevel
        self.display.roundtrip()
        emit("ready", globals=sorted(self.globals))
        self.running = True

    def _on_toplevel(self, _m, handle):
        t = Toplevel(self, handle, self.next_id)
        self.toplevels[t.id] = t
        self.next_id += 1

    def add_timer(self, msec):
        n = len(self.timers) + 1
        timer = self.idle.get_idle_timeout(self.seat, msec)
        timer.dispatcher["idle"] = lambda _t: emit("idle", timer=n)
        timer.dispatcher["resumed"] = lambda _t: emit("resumed", timer=n)
        self.timers.append(timer)
        emit("timer", timer=n)

    def command(self, line):
        cmd, _, arg = line.strip().partition(" ")
        if cmd == "idle":
            self.add_timer(int(arg))
            return
        if cmd == "quit":
            self.running = False
            return
        t = self.toplevels.get(int(arg)) if arg.isdigit() else None
        if t is None:
            emit("error", message="no toplevel %r" % arg)
            return
        h = t.handle
        if cmd == "activate":
            h.activate(self.seat)
        elif cmd == "minimize":
            h.set_minimized()
        elif cmd == "unminimize":
            h.unset_minimized()
        elif cmd == "maximize":
            h.set_maximized()
        elif cmd == "unmaximize":
            h.unset_maximized()
        elif cmd == "fullscreen":
            h.set_fullscreen(None)
        elif cmd == "unfullscreen":
            h.unset_fullscreen()
        elif cmd == "close":
            h.close()
        else:
            emit("error", message="unknown command " + cmd)
            return
        emit("sent", command=cmd, id=t.id)

    def run(self):
        fd = self.display.get_fd()
        stdin = StdinLines()
        while self.running:
            self.display.dispatch(block=False)
            self.display.flush()
            rlist = [fd] + ([0] if stdin.open else [])
            r, _, _ = select.select(rlist, [], [], 1.0)
            if fd in r:
                self.display.read()
                self.display.dispatch(block=False)
            if 0 in r:
                for line in stdin.read():
                    self.command(line)
            if not stdin.open:
                break
        self.display.flush()
        return 0


if __name__ == "__main__":
    sys.exit(Client().run())
