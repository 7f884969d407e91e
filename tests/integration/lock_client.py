#!/usr/bin/env python3
"""A screen locker for the tests: ext-session-lock-v1 and wlr-input-inhibitor.

Reports on stdout, one ``<event> <json>`` line each:

    ready {"globals": [...], "outputs": N}
    locked {} / finished {}            the answer to "lock"
    configure {"output": I, "serial": S, "width": W, "height": H}
    shown {"output": I}                a lock surface got its first buffer
    kb_enter {"surface": "lock"|"window"} / kb_leave {}
    key {"key": K, "state": S}         wl_keyboard.key
    ptr_enter {"surface": ..} / button {"button": B, "state": S}
    unlocked {}                        unlock_and_destroy reached the compositor
    inhibited {} / uninhibited {}
    window_mapped {}
    synced {}
    error {"code": C, "interface": "..", "errno": E}   then exit 3

Commands on stdin, one a line:

    lock                 ext_session_lock_manager_v1.lock
    surfaces             a lock surface on every output, drawn at each configure
    unlock               unlock_and_destroy, then a sync
    destroy              ext_session_lock_v1.destroy
    inhibit / uninhibit  get or destroy a zwlr_input_inhibitor_v1
    window               map an xdg toplevel (what the inhibitor's keys reach)
    sync                 wl_display.sync, then "synced"
    Protocol errors, one each:
    dup-output           a second lock surface on output 0
    commit-before-ack    a lock surface committed before its configure is acked
    bad-serial           ack_configure with a serial never sent
    wrong-size           a buffer smaller than the configure
    null-buffer          commit a null buffer on a shown lock surface
    role                 a lock surface for an xdg_toplevel's wl_surface
    has-buffer           a lock surface for a wl_surface that has a buffer
    quit
"""

import os
import select
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from wlcommon import Buffer, StdinLines, connect, emit, exit_now  # noqa: E402
from reserve_client import protocol_error  # noqa: E402
from _proto.wayland import WlCompositor, WlSeat, WlShm, WlOutput  # noqa: E402
from _proto.xdg_shell import XdgWmBase  # noqa: E402
from _proto.ext_session_lock_v1 import ExtSessionLockManagerV1  # noqa: E402
from _proto.wlr_input_inhibit_unstable_v1 import (  # noqa: E402
    ZwlrInputInhibitManagerV1,
)


class Client:
    def __init__(self):
        self.display, self.globals, bind = connect()
        self.compositor = bind(WlCompositor, 4)
        self.shm = bind(WlShm, 1)
        self.wm_base = bind(XdgWmBase, 1)
        self.wm_base.dispatcher["ping"] = lambda wm, serial: wm.pong(serial)
        self.manager = None
        if "ext_session_lock_manager_v1" in self.globals:
            self.manager = bind(ExtSessionLockManagerV1, 1)
        self.inhibit_manager = None
        if "zwlr_input_inhibit_manager_v1" in self.globals:
            self.inhibit_manager = bind(ZwlrInputInhibitManagerV1, 1)
        self.outputs = []
        registry = self.display.get_registry()

        def on_global(reg, name, interface, version):
            if interface == "wl_output":
                self.outputs.append(reg.bind(name, WlOutput, 1))
        registry.dispatcher["global"] = on_global
        self.registry = registry
        self.display.roundtrip()
        self.surface_kind = {}
        seat = bind(WlSeat, 5)
        self.keyboard = None

        def on_capabilities(seat, caps):
            # a keyboard only while the seat has one (wl_seat forbids more)
            if caps & 2 and self.keyboard is None:
                self.keyboard = seat.get_keyboard()
                self.keyboard.dispatcher["enter"] = self._kb_enter
                self.keyboard.dispatcher["leave"] = lambda *a: emit("kb_leave")
                self.keyboard.dispatcher["key"] = (
                    lambda _k, serial, time, key, state: emit("key", key=key, state=state))
        seat.dispatcher["capabilities"] = on_capabilities
        self.display.roundtrip()
        self.pointer = seat.get_pointer()
        self.pointer.dispatcher["enter"] = self._ptr_enter
        self.pointer.dispatcher["button"] = (
            lambda _p, serial, time, button, state: emit("button", button=button, state=state))
        self.lock = None
        self.lock_surfaces = []
        self.inhibitor = None
        self.keep = []
        self.running = True
        self.display.roundtrip()
        emit("ready", globals=sorted(self.globals), outputs=len(self.outputs))

    def _kb_enter(self, _kb, serial, surface, keys):
        emit("kb_enter", surface=self.surface_kind.get(surface, "other"))

    def _ptr_enter(self, _p, serial, surface, sx, sy):
        emit("ptr_enter", surface=self.surface_kind.get(surface, "other"))

    # -- ext-session-lock ---------------------------------------------------------
    def do_lock(self):
        self.lock = self.manager.lock()
        self.lock.dispatcher["locked"] = lambda _l: emit("locked")
        self.lock.dispatcher["finished"] = lambda _l: emit("finished")

    def lock_surface(self, index, on_configure):
        surface = self.compositor.create_surface()
        self.surface_kind[surface] = "lock"
        ls = self.lock.get_lock_surface(surface, self.outputs[index])
        ls.dispatcher["configure"] = (
            lambda _ls, serial, w, h: on_configure(index, surface, ls, serial, w, h))
        self.lock_surfaces.append((surface, ls))
        return surface, ls

    def draw(self, index, surface, ls, serial, width, height, shrink=0):
        emit("configure", output=index, serial=serial, width=width, height=height)
        ls.ack_configure(serial)
        buf = Buffer(self.shm, max(1, width - shrink), max(1, height - shrink), 0x203040)
        self.keep.append(buf)
        surface.attach(buf.buffer, 0, 0)
        surface.damage(0, 0, width, height)
        surface.commit()
        self.sync(lambda: emit("shown", output=index))

    def sync(self, then):
        cb = self.display.sync()
        self.keep.append(cb)
        cb.dispatcher["done"] = lambda _c, _d: then()

    def window(self):
        surface = self.compositor.create_surface()
        self.surface_kind[surface] = "window"
        xdg = self.wm_base.get_xdg_surface(surface)
        top = xdg.get_toplevel()
        top.set_title("locker-window")

        def configure(x, serial):
            x.ack_configure(serial)
            buf = Buffer(self.shm, 200, 150, 0x804020)
            self.keep.append(buf)
            surface.attach(buf.buffer, 0, 0)
            surface.commit()
            self.sync(lambda: emit("window_mapped"))
            xdg.dispatcher["configure"] = lambda x2, s2: x2.ack_configure(s2)
        xdg.dispatcher["configure"] = configure
        surface.commit()
        self.keep += [surface, xdg, top]

    def command(self, line):
        cmd = line.split()
        if not cmd:
            return
        c = cmd[0]
        if c == "lock":
            self.do_lock()
        elif c == "surfaces":
            for i in range(len(self.outputs)):
                self.lock_surface(i, self.draw)
        elif c == "unlock":
            self.lock.unlock_and_destroy()
            self.sync(lambda: emit("unlocked"))
        elif c == "destroy":
            self.lock.destroy()
            self.sync(lambda: emit("destroyed"))
        elif c == "inhibit":
            self.inhibitor = self.inhibit_manager.get_inhibitor()
            self.sync(lambda: emit("inhibited"))
        elif c == "uninhibit":
            self.inhibitor.destroy()
            self.sync(lambda: emit("uninhibited"))
        elif c == "window":
            self.window()
        elif c == "sync":
            self.sync(lambda: emit("synced"))
        elif c == "dup-output":
            self.lock_surface(0, lambda *a: None)
        elif c == "commit-before-ack":
            surface, _ = self.lock_surface(0, lambda *a: None)
            surface.commit()
        elif c == "bad-serial":
            _, ls = self.lock_surface(0, lambda *a: None)
            ls.ack_configure(0xFFFFFFF0)
        elif c == "wrong-size":
            self.lock_surface(0, lambda i, s, ls, serial, w, h:
                              self.draw(i, s, ls, serial, w, h, shrink=10))
        elif c == "null-buffer":
            surface = self.lock_surfaces[-1][0]
            surface.attach(None, 0, 0)
            surface.commit()
        elif c == "role":
            surface = self.compositor.create_surface()
            xdg = self.wm_base.get_xdg_surface(surface)
            top = xdg.get_toplevel()
            self.keep += [surface, xdg, top]
            self.lock.get_lock_surface(surface, self.outputs[0])
        elif c == "has-buffer":
            surface = self.compositor.create_surface()
            buf = Buffer(self.shm, 10, 10, 0x102030)
            self.keep += [surface, buf]
            surface.attach(buf.buffer, 0, 0)
            surface.commit()
            self.lock.get_lock_surface(surface, self.outputs[0])
        elif c == "quit":
            self.running = False
        else:
            emit("bad_command", message="unknown command " + c)

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
        self.display.flush()
        return 0


def main():
    client = None
    try:
        client = Client()
        return client.run()
    except (RuntimeError, OSError) as e:
        code, iface, oid, err = (None, None, None, None)
        if client is not None:
            code, iface, oid, err = protocol_error(client.display)
        emit("error", code=code, interface=iface, object_id=oid, errno=err, message=str(e))
        return 3


if __name__ == "__main__":
    exit_now(main())
