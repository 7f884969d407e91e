#!/usr/bin/env python3
"""wlclient.py's toplevel, plus the input protocols games and remote desktops
use: pointer constraints, relative pointer and keyboard-shortcuts-inhibit.

Events, on top of wlclient's:

    motion {"x":..,"y":..}              wl_pointer.motion (after "track")
    relative {"dx":..,"dy":..,...}      zwp_relative_pointer_v1.relative_motion
    locked / unlocked                   zwp_locked_pointer_v1 events
    confined / unconfined               zwp_confined_pointer_v1 events
    shortcuts_active / shortcuts_inactive
    ti_enter / ti_leave                 zwp_text_input_v3 focus (enter enables it)
    preedit {"text":..} / commit_string {"text":..} / ti_done
    touch_down {"id":..,"x":..,"y":..}  wl_touch.down (surface-local), likewise
    touch_motion, touch_up {"id":..}, touch_cancel, touch_frame
    touch_bound                         the compositor has our wl_touch
    touch_released                      the seat's touch capability went away
    swipe_begin {"fingers":..}, swipe_update {"dx":..,"dy":..}, swipe_end
    {"cancelled":..}, and the same for pinch_* (update adds scale, rotation)
    and hold_*                          zwp_pointer_gesture_*_v1 (after "gestures")
    tablet_added / tool_added / pad_added   zwp_tablet_seat_v2 (after "tablet")
    tool_proximity_in / tool_proximity_out / tool_motion {"x":..,"y":..} /
    tool_down / tool_up / tool_pressure {"pressure":..}   zwp_tablet_tool_v2
    done {"cmd": ".."}                  a command was sent and round-tripped

Unlike wlclient, xdg_toplevel.close is only reported (the client stays).

Commands, on top of wlclient's:

    track                start reporting wl_pointer.motion
    relative             get a zwp_relative_pointer_v1 for our wl_pointer
    lock [HX HY]         lock the pointer (persistent), with a cursor hint
    confine X Y W H      confine the pointer to a rectangle (persistent)
    region X Y W H       change the confine region, then commit
    unconstrain          destroy the lock or confinement
    text-input           get a zwp_text_input_v3; on enter it is enabled with
                         "hello" as surrounding text and the cursor at 40,50
    inhibit-shortcuts    ask for keyboard-shortcuts-inhibit on our surface
    uninhibit-shortcuts  destroy that inhibitor
    gestures             bind zwp_pointer_gestures_v1: swipe, pinch and hold
                         gestures for our wl_pointer
    tablet               bind zwp_tablet_manager_v2 and get the seat's tablets
"""

import os
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import wlclient  # noqa: E402
from wlcommon import emit, exit_now  # noqa: E402
from _proto.pointer_constraints_unstable_v1 import ZwpPointerConstraintsV1  # noqa: E402
from _proto.relative_pointer_unstable_v1 import ZwpRelativePointerManagerV1  # noqa: E402
from _proto.keyboard_shortcuts_inhibit_unstable_v1 import (  # noqa: E402
    ZwpKeyboardShortcutsInhibitManagerV1)
from _proto.text_input_unstable_v3 import ZwpTextInputManagerV3  # noqa: E402
from _proto.pointer_gestures_unstable_v1 import ZwpPointerGesturesV1  # noqa: E402
from _proto.tablet_unstable_v2 import ZwpTabletManagerV2  # noqa: E402

LIFETIME_PERSISTENT = 2


def _decode_null_strings():
    """pywayland (0.4.17) tests a string argument's union, not its pointer,
    for NULL, so a nullable string sent as null (text-input's preedit_string
    when an input method clears its preedit, as fcitx5 does) fails to
    decode. Decode such messages with the nulls swapped for a marker that
    becomes None again."""
    from pywayland import ffi
    from pywayland.protocol_core import message
    from pywayland.protocol_core.argument import ArgumentType
    marker = b"\x01null\x01"
    keep = ffi.new("char[]", marker)
    original = message.Message.c_to_arguments

    def c_to_arguments(self, args_ptr):
        nulls = [i for i, a in enumerate(self.arguments)
                 if a.argument_type == ArgumentType.String and a.nullable
                 and args_ptr[i].s == ffi.NULL]
        if not nulls:
            return original(self, args_ptr)
        copy = ffi.new("union wl_argument[]", len(self.arguments))
        for i in range(len(self.arguments)):
            copy[i] = args_ptr[i]
        for i in nulls:
            copy[i].s = keep
        args = original(self, copy)
        return [None if a == marker.decode() else a for a in args]

    message.Message.c_to_arguments = c_to_arguments


_decode_null_strings()


class InputClient(wlclient.Client):
    def __init__(self, args):
        self.tracking = False
        self.constraint = None
        self.shortcuts = None
        self.relative_pointer = None
        self.touch = None
        self.gestures = []
        self.tablet_seat = None
        self.tablet_objects = []
        super().__init__(args)
        bind = self.bind
        self.constraints = bind(ZwpPointerConstraintsV1, 1)
        self.relative_manager = bind(ZwpRelativePointerManagerV1, 1)
        self.shortcuts_manager = bind(ZwpKeyboardShortcutsInhibitManagerV1, 1)
        self.text_input = None
        self.display.roundtrip()

    def _on_seat_caps(self, seat, caps):
        had = self.pointer
        super()._on_seat_caps(seat, caps)
        if self.pointer is not None and self.pointer is not had:
            self.pointer.dispatcher["motion"] = self._on_motion
        if not caps & 4 and self.touch is not None:
            self.touch.release()
            self.touch = None
            emit("touch_released")
        if caps & 4 and self.touch is None:
            t = seat.get_touch()
            t.dispatcher["down"] = lambda _t, serial, time, surf, tid, x, y: emit(
                "touch_down", id=tid, x=x, y=y)
            t.dispatcher["motion"] = lambda _t, time, tid, x, y: emit(
                "touch_motion", id=tid, x=x, y=y)
            t.dispatcher["up"] = lambda _t, serial, time, tid: emit("touch_up", id=tid)
            t.dispatcher["cancel"] = lambda _t: emit("touch_cancel")
            t.dispatcher["frame"] = lambda _t: emit("touch_frame")
            self.touch = t
            # reported once the compositor has our wl_touch, not before
            cb = self.display.sync()
            cb.dispatcher["done"] = lambda _cb, _data: emit("touch_bound")
            self.keepalive.add(cb)

    def _start_gestures(self):
        g = self.bind(ZwpPointerGesturesV1, 3)
        swipe = g.get_swipe_gesture(self.pointer)
        swipe.dispatcher["begin"] = lambda _g, serial, time, surf, fingers: emit(
            "swipe_begin", fingers=fingers)
        swipe.dispatcher["update"] = lambda _g, time, dx, dy: emit("swipe_update", dx=dx, dy=dy)
        swipe.dispatcher["end"] = lambda _g, serial, time, c: emit("swipe_end", cancelled=c)
        pinch = g.get_pinch_gesture(self.pointer)
        pinch.dispatcher["begin"] = lambda _g, serial, time, surf, fingers: emit(
            "pinch_begin", fingers=fingers)
        pinch.dispatcher["update"] = lambda _g, time, dx, dy, scale, rot: emit(
            "pinch_update", dx=dx, dy=dy, scale=scale, rotation=rot)
        pinch.dispatcher["end"] = lambda _g, serial, time, c: emit("pinch_end", cancelled=c)
        hold = g.get_hold_gesture(self.pointer)
        hold.dispatcher["begin"] = lambda _g, serial, time, surf, fingers: emit(
            "hold_begin", fingers=fingers)
        hold.dispatcher["end"] = lambda _g, serial, time, c: emit("hold_end", cancelled=c)
        self.gestures = [g, swipe, pinch, hold]

    def _on_tool_added(self, _ts, tool):
        tool.dispatcher["proximity_in"] = lambda _t, serial, tablet, surf: emit(
            "tool_proximity_in")
        tool.dispatcher["proximity_out"] = lambda _t: emit("tool_proximity_out")
        tool.dispatcher["motion"] = lambda _t, x, y: emit("tool_motion", x=x, y=y)
        tool.dispatcher["down"] = lambda _t, serial: emit("tool_down")
        tool.dispatcher["up"] = lambda _t: emit("tool_up")
        tool.dispatcher["pressure"] = lambda _t, p: emit("tool_pressure", pressure=p)
        self.tablet_objects.append(tool)
        emit("tool_added")

    def _start_tablet(self):
        manager = self.bind(ZwpTabletManagerV2, 1)
        ts = manager.get_tablet_seat(self.seat)

        def on_tablet(_ts, tablet):
            self.tablet_objects.append(tablet)
            emit("tablet_added")

        def on_pad(_ts, pad):
            self.tablet_objects.append(pad)
            emit("pad_added")
        ts.dispatcher["tablet_added"] = on_tablet
        ts.dispatcher["tool_added"] = self._on_tool_added
        ts.dispatcher["pad_added"] = on_pad
        self.tablet_seat = (manager, ts)

    def _on_close(self, _tl):
        # reported, not obeyed: the tests press Super+Q more than once
        emit("close")

    def _on_motion(self, _p, _time, x, y):
        if self.tracking:
            emit("motion", x=x, y=y)

    def _on_relative(self, _r, hi, lo, dx, dy, dxu, dyu):
        emit("relative", dx=dx, dy=dy, dx_unaccel=dxu, dy_unaccel=dyu)

    def _on_ti_enter(self, ti, _surface):
        # a text field with the cursor after "hello", drawn at (40, 50)
        ti.enable()
        ti.set_surrounding_text("hello", 5, 5)
        ti.set_content_type(0, 0)
        ti.set_cursor_rectangle(40, 50, 2, 20)
        ti.commit()
        emit("ti_enter")

    def _start_text_input(self):
        ti = self.bind(ZwpTextInputManagerV3, 1).get_text_input(self.seat)
        ti.dispatcher["enter"] = self._on_ti_enter
        ti.dispatcher["leave"] = lambda _t, _s: emit("ti_leave")
        ti.dispatcher["preedit_string"] = lambda _t, text, b, e: emit(
            "preedit", text=text, begin=b, end=e)
        ti.dispatcher["commit_string"] = lambda _t, text: emit("commit_string", text=text)
        ti.dispatcher["delete_surrounding_text"] = lambda *a: None
        ti.dispatcher["done"] = lambda _t, serial: emit("ti_done", serial=serial)
        self.text_input = ti

    def _rect_region(self, x, y, w, h):
        region = self.compositor.create_region()
        region.add(x, y, w, h)
        return region

    def command(self, line):
        cmd, _, arg = line.strip().partition(" ")
        nums = [int(v) for v in arg.split()] if cmd in ("lock", "confine", "region") else []
        if cmd == "track":
            self.tracking = True
        elif cmd == "relative":
            self.relative_pointer = self.relative_manager.get_relative_pointer(self.pointer)
            self.relative_pointer.dispatcher["relative_motion"] = self._on_relative
        elif cmd == "lock":
            c = self.constraints.lock_pointer(self.surface, self.pointer, None,
                                              LIFETIME_PERSISTENT)
            c.dispatcher["locked"] = lambda _c: emit("locked")
            c.dispatcher["unlocked"] = lambda _c: emit("unlocked")
            if nums:
                c.set_cursor_position_hint(nums[0], nums[1])
            self.constraint = c
            self.surface.commit()
        elif cmd == "confine":
            region = self._rect_region(*nums)
            c = self.constraints.confine_pointer(self.surface, self.pointer, region,
                                                 LIFETIME_PERSISTENT)
            region.destroy()
            c.dispatcher["confined"] = lambda _c: emit("confined")
            c.dispatcher["unconfined"] = lambda _c: emit("unconfined")
            self.constraint = c
            self.surface.commit()
        elif cmd == "region":
            region = self._rect_region(*nums)
            self.constraint.set_region(region)
            region.destroy()
            self.surface.commit()
        elif cmd == "unconstrain":
            self.constraint.destroy()
            self.constraint = None
        elif cmd == "text-input":
            self._start_text_input()
        elif cmd == "inhibit-shortcuts":
            s = self.shortcuts_manager.inhibit_shortcuts(self.surface, self.seat)
            s.dispatcher["active"] = lambda _s: emit("shortcuts_active")
            s.dispatcher["inactive"] = lambda _s: emit("shortcuts_inactive")
            self.shortcuts = s
        elif cmd == "gestures":
            self._start_gestures()
        elif cmd == "tablet":
            self._start_tablet()
        elif cmd == "uninhibit-shortcuts":
            self.shortcuts.destroy()
            self.shortcuts = None
        else:
            super().command(line)
            return
        self.display.roundtrip()
        emit("done", cmd=cmd)


def main():
    args = wlclient.parse_args()
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        client = InputClient(args)
    except RuntimeError as e:
        emit("disconnected", error=str(e))
        return 3
    try:
        code = client.run()
    except RuntimeError as e:
        emit("disconnected", error=str(e))
        return 3
    emit("exit", code=code)
    return code


if __name__ == "__main__":
    exit_now(main())
