#!/usr/bin/env python3
"""A wl_data_device drag source or drop target for the drag and drop tests.

Both map one toplevel of a solid colour and report on stdout, one
``<event> <json>`` line each:

    ready {} / mapped {}
    (source) started {"serial": S}    start_drag sent with our icon
             target {"mime": ..}      wl_data_source.target
             send {"mime": ..}        the payload was written for the target
             performed {} / finished {} / cancelled {}
    (target) enter {"x": X, "y": Y, "mimes": [..]} / motion {} (first of a drag)
             leave {} / drop {"text": ..} (after the data was read; then finish)

Commands (source), one a line:
    drag       start_drag with the serial of the last button press
    drag-bad   start_drag with a serial never sent
    quit
"""

import argparse
import os
import select
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from wlcommon import Buffer, StdinLines, connect, emit, exit_now  # noqa: E402
from _proto.wayland import WlCompositor, WlDataDeviceManager, WlSeat, WlShm  # noqa: E402
from _proto.xdg_shell import XdgWmBase  # noqa: E402

PAYLOAD = b"qosway protocol drag"
COPY = 1
ICON_SIZE = 24


class Client:
    def __init__(self, args):
        self.args = args
        self.display, self.globals, bind = connect()
        self.compositor = bind(WlCompositor, 4)
        self.shm = bind(WlShm, 1)
        self.wm_base = bind(XdgWmBase, 1)
        self.wm_base.dispatcher["ping"] = lambda wm, serial: wm.pong(serial)
        self.seat = bind(WlSeat, 5)
        self.ddm = bind(WlDataDeviceManager, 3)
        self.device = self.ddm.get_data_device(self.seat)
        self.keep = []
        self.press_serial = None
        self.offer = None
        self.offer_mimes = []
        self.moved = False
        ptr = self.seat.get_pointer()
        ptr.dispatcher["button"] = self._button
        self.keep.append(ptr)
        self.device.dispatcher["data_offer"] = self._data_offer
        self.device.dispatcher["enter"] = self._enter
        self.device.dispatcher["leave"] = lambda *a: emit("leave")
        self.device.dispatcher["motion"] = self._motion
        self.device.dispatcher["drop"] = self._drop
        self.surface = self.compositor.create_surface()
        xdg = self.wm_base.get_xdg_surface(self.surface)
        top = xdg.get_toplevel()
        top.set_title(args.title)
        self.keep += [xdg, top]
        self.mapped = False

        def configure(x, serial):
            x.ack_configure(serial)
            if not self.mapped:
                self.mapped = True
                self.draw(self.surface, args.width, args.height, int(args.color, 16))
                self.sync(lambda: emit("mapped"))
        xdg.dispatcher["configure"] = configure
        self.surface.commit()
        self.running = True
        emit("ready")

    def draw(self, surface, w, h, rgb):
        buf = Buffer(self.shm, w, h, rgb)
        self.keep.append(buf)
        surface.attach(buf.buffer, 0, 0)
        surface.damage(0, 0, w, h)
        surface.commit()

    def sync(self, then):
        cb = self.display.sync()
        self.keep.append(cb)
        cb.dispatcher["done"] = lambda _c, _d: then()

    def _button(self, _p, serial, time, button, state):
        if state == 1:
            self.press_serial = serial

    # -- source ---------------------------------------------------------------
    def start_drag(self, serial):
        source = self.ddm.create_data_source()
        source.offer("text/plain")
        source.set_actions(COPY)
        source.dispatcher["target"] = lambda s, mime: emit("target", mime=mime)
        source.dispatcher["send"] = self._send
        source.dispatcher["dnd_drop_performed"] = lambda s: emit("performed")
        source.dispatcher["dnd_finished"] = lambda s: emit("finished")
        source.dispatcher["cancelled"] = lambda s: emit("cancelled")
        icon = self.compositor.create_surface()
        self.keep += [source, icon]
        # the icon's top-left 4 px right and below the hotspot
        self.device.start_drag(source, self.surface, icon, serial)
        buf = Buffer(self.shm, ICON_SIZE, ICON_SIZE, int(self.args.icon_color, 16))
        self.keep.append(buf)
        icon.attach(buf.buffer, 4, 4)
        icon.damage(0, 0, ICON_SIZE, ICON_SIZE)
        icon.commit()
        self.sync(lambda: emit("started", serial=serial))

    def _send(self, _s, mime, fd):
        os.write(fd, PAYLOAD)
        os.close(fd)
        emit("send", mime=mime)

    # -- target ---------------------------------------------------------------
    def _data_offer(self, _d, offer):
        self.offer_mimes = []
        offer.dispatcher["offer"] = lambda o, mime: self.offer_mimes.append(mime)
        self.keep.append(offer)

    def _enter(self, _d, serial, surface, x, y, offer):
        self.offer = offer
        self.moved = False
        if offer is not None:
            offer.accept(serial, "text/plain")
            offer.set_actions(COPY, COPY)
        emit("enter", x=x, y=y, mimes=self.offer_mimes)

    def _motion(self, _d, time, x, y):
        if not self.moved:
            self.moved = True
            emit("motion", x=x, y=y)

    def _drop(self, _d):
        r, w = os.pipe()
        self.offer.receive("text/plain", w)
        os.close(w)
        self.display.flush()
        data = b""
        while True:
            chunk = os.read(r, 4096)
            if not chunk:
                break
            data += chunk
        os.close(r)
        self.offer.finish()
        emit("drop", text=data.decode())

    def command(self, line):
        cmd = line.split()
        if not cmd:
            return
        if cmd[0] == "drag":
            self.start_drag(self.press_serial)
        elif cmd[0] == "drag-bad":
            self.start_drag(0x7FFFFFF0)
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
    ap.add_argument("--title", required=True)
    ap.add_argument("--color", default="406080")
    ap.add_argument("--icon-color", default="f01090")
    ap.add_argument("--width", type=int, default=300)
    ap.add_argument("--height", type=int, default=200)
    exit_now(Client(ap.parse_args()).run())
