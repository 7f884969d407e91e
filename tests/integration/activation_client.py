#!/usr/bin/env python3
"""A window that asks for the focus through xdg_activation_v1.

Reports on stdout, one ``<event> <json>`` line each:

    ready {"globals": [...]}
    mapped {}
    kb_enter {} / kb_leave {} / key {"key": K, "state": S}
    token {"token": ".."}          the token a "token" command asked for
    activated {}                   an "activate" request reached the compositor

Commands on stdin, one a line:

    token serial   a token with the serial of the last keyboard or pointer
                   event we got (and our surface), as a launcher makes one
    token bare     a token with neither serial nor surface
    activate TOKEN ask for the focus with TOKEN
    quit
"""

import argparse
import os
import select
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from wlcommon import Buffer, StdinLines, connect, emit, exit_now  # noqa: E402
from _proto.wayland import WlCompositor, WlSeat, WlShm  # noqa: E402
from _proto.xdg_shell import XdgWmBase  # noqa: E402
from _proto.xdg_activation_v1 import XdgActivationV1  # noqa: E402


class Client:
    def __init__(self, title):
        self.display, self.globals, bind = connect()
        self.compositor = bind(WlCompositor, 4)
        self.shm = bind(WlShm, 1)
        self.wm_base = bind(XdgWmBase, 1)
        self.wm_base.dispatcher["ping"] = lambda wm, serial: wm.pong(serial)
        self.activation = bind(XdgActivationV1, 1)
        self.seat = bind(WlSeat, 5)
        self.serial = None
        self.keyboard = None

        def on_capabilities(seat, caps):
            # a keyboard only while the seat has one (wl_seat forbids more)
            if caps & 2 and self.keyboard is None:
                self.keyboard = seat.get_keyboard()
                self.keyboard.dispatcher["enter"] = self._kb_enter
                self.keyboard.dispatcher["leave"] = lambda *a: emit("kb_leave")
                self.keyboard.dispatcher["key"] = self._key
        self.seat.dispatcher["capabilities"] = on_capabilities
        self.display.roundtrip()
        ptr = self.seat.get_pointer()
        ptr.dispatcher["button"] = self._button
        self.keep = [ptr]
        self.surface = self.compositor.create_surface()
        xdg = self.wm_base.get_xdg_surface(self.surface)
        top = xdg.get_toplevel()
        top.set_title(title)
        self.keep += [xdg, top]
        self.mapped = False

        def configure(x, serial):
            x.ack_configure(serial)
            if not self.mapped:
                self.mapped = True
                buf = Buffer(self.shm, 300, 200, 0x408020)
                self.keep.append(buf)
                self.surface.attach(buf.buffer, 0, 0)
                self.surface.commit()
                self.sync(lambda: emit("mapped"))
        xdg.dispatcher["configure"] = configure
        self.surface.commit()
        self.running = True
        emit("ready", globals=sorted(self.globals))

    def _kb_enter(self, _kb, serial, surface, keys):
        self.serial = serial
        emit("kb_enter")

    def _key(self, _kb, serial, time, key, state):
        self.serial = serial
        emit("key", key=key, state=state)

    def _button(self, _p, serial, time, button, state):
        self.serial = serial

    def sync(self, then):
        cb = self.display.sync()
        self.keep.append(cb)
        cb.dispatcher["done"] = lambda _c, _d: then()

    def command(self, line):
        cmd = line.split()
        if not cmd:
            return
        if cmd[0] == "token":
            token = self.activation.get_activation_token()
            if cmd[1] == "serial":
                token.set_serial(self.serial, self.seat)
                token.set_surface(self.surface)
            token.dispatcher["done"] = lambda t, s: emit("token", token=s)
            token.commit()
            self.keep.append(token)
        elif cmd[0] == "activate":
            self.activation.activate(cmd[1], self.surface)
            self.sync(lambda: emit("activated"))
        elif cmd[0] == "quit":
            self.running = False

    def run(self):
        fd = self.display.get_fd()
        stdin = StdinLines()
        while self.running:
            self.display.dispatch(block=False)
            self.display.flush()
            rlist = [fd] + ([0] if stdin.open else [])
            r, _, _ = select.select(rlist, [], [], 0.5)
            if fd in r:
                self.display.read()
                self.display.dispatch(block=False)
            if 0 in r:
                for line in stdin.read():
                    self.command(line)
                self.display.flush()
            if not stdin.open:
                break
        return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--title", default="activation-client")
    exit_now(Client(ap.parse_args().title).run())
