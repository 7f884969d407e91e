#!/usr/bin/env python3
"""A small input method (input-method-unstable-v2), as fcitx5 would be.

Events on stdout, one ``<event> <json>`` line each:

    ready {}                             bound, zwp_input_method_v2 made
    activate / deactivate                the compositor's state changes
    surrounding {"text","cursor","anchor"}
    done {"serial": N}                   after each done (N counts them)
    unavailable {}                       another input method has the seat
    rectangle {"x","y","width","height"} the popup's text_input_rectangle
    grab_key {"key","state"}             a key from the keyboard grab
    sent {"cmd": ..}                     a command was sent and round-tripped

Commands on stdin:

    preedit TEXT     set_preedit_string (cursor at the end) and commit
    commit TEXT      commit_string and commit
    popup W H        a W x H candidate window (input popup surface)
    grab             grab the keyboard
    release          release the grab
    quit
"""

import os
import select
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from wlcommon import Buffer, StdinLines, connect, emit, exit_now  # noqa: E402
from _proto.wayland import WlCompositor, WlSeat, WlShm  # noqa: E402
from _proto.input_method_unstable_v2 import ZwpInputMethodManagerV2  # noqa: E402


class InputMethod:
    def __init__(self):
        self.display, self.globals, bind = connect()
        for need in ("zwp_input_method_manager_v2", "wl_seat", "wl_compositor", "wl_shm"):
            if need not in self.globals:
                raise SystemExit("missing global " + need)
        self.compositor = bind(WlCompositor, 4)
        self.shm = bind(WlShm, 1)
        self.seat = bind(WlSeat, 5)
        self.manager = bind(ZwpInputMethodManagerV2, 1)
        self.im = self.manager.get_input_method(self.seat)
        self.serial = 0
        self.grab = None
        self.keepalive = []
        d = self.im.dispatcher
        d["activate"] = lambda _i: emit("activate")
        d["deactivate"] = lambda _i: emit("deactivate")
        d["surrounding_text"] = lambda _i, text, cursor, anchor: emit(
            "surrounding", text=text, cursor=cursor, anchor=anchor)
        d["text_change_cause"] = lambda _i, cause: None
        d["content_type"] = lambda _i, hint, purpose: None
        d["done"] = self._on_done
        d["unavailable"] = lambda _i: emit("unavailable")
        self.display.roundtrip()
        emit("ready")

    def _on_done(self, _im):
        self.serial += 1
        emit("done", serial=self.serial)

    def popup(self, width, height):
        surface = self.compositor.create_surface()
        popup = self.im.get_input_popup_surface(surface)
        popup.dispatcher["text_input_rectangle"] = lambda _p, x, y, w, h: emit(
            "rectangle", x=x, y=y, width=w, height=h)
        buf = Buffer(self.shm, width, height, 0xE0C020)
        surface.attach(buf.buffer, 0, 0)
        surface.damage_buffer(0, 0, width, height)
        surface.commit()
        self.keepalive += [surface, popup, buf]

    def command(self, line):
        cmd, _, arg = line.partition(" ")
        if cmd == "preedit":
            self.im.set_preedit_string(arg, len(arg.encode()), len(arg.encode()))
            self.im.commit(self.serial)
        elif cmd == "commit":
            self.im.commit_string(arg)
            self.im.commit(self.serial)
        elif cmd == "popup":
            w, h = arg.split()
            self.popup(int(w), int(h))
        elif cmd == "grab":
            self.grab = self.im.grab_keyboard()
            self.grab.dispatcher["keymap"] = lambda _g, fmt, fd, size: os.close(fd)
            self.grab.dispatcher["key"] = lambda _g, serial, t, key, state: emit(
                "grab_key", key=key, state=state)
            self.grab.dispatcher["modifiers"] = lambda *a: None
            self.grab.dispatcher["repeat_info"] = lambda *a: None
        elif cmd == "release":
            self.grab.release()
            self.grab = None
        elif cmd == "quit":
            return False
        else:
            emit("error", message="unknown command " + cmd)
            return True
        self.display.roundtrip()
        emit("sent", cmd=cmd)
        return True

    def run(self):
        fd = self.display.get_fd()
        stdin = StdinLines()
        while True:
            self.display.dispatch(block=False)
            self.display.flush()
            r, _, _ = select.select([fd] + ([0] if stdin.open else []), [], [], 1.0)
            if fd in r:
                self.display.read()
                self.display.dispatch(block=False)
            if 0 in r:
                for line in stdin.read():
                    if not self.command(line):
                        return 0


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        return InputMethod().run()
    except RuntimeError as e:
        emit("disconnected", error=str(e))
        return 3


if __name__ == "__main__":
    exit_now(main())
