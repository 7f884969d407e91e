"""Drive a compositor's seat through zwlr_virtual_pointer_v1 and
zwp_virtual_keyboard_v1 (our XMLs in protocols/), from inside the test process.

    with VirtualInput(env) as vi:
        vi.click(100, 200)
        vi.drag((10, 10), (300, 200))
        vi.key(KEY_A)
        vi.chord([KEY_LEFTMETA], KEY_Q)

Every request is followed by a roundtrip, so when a method returns the
compositor has processed the input.
"""

import ctypes
import ctypes.util
import os
import time

from pywayland.client import Display

from _proto.wayland import WlSeat, WlOutput
from _proto.wlr_virtual_pointer_unstable_v1 import ZwlrVirtualPointerManagerV1
from _proto.virtual_keyboard_unstable_v1 import ZwpVirtualKeyboardManagerV1

# linux/input-event-codes.h
BTN_LEFT = 0x110
BTN_RIGHT = 0x111
BTN_MIDDLE = 0x112
KEY_ESC = 1
KEY_1 = 2
KEY_TAB = 15
KEY_Q = 16
KEY_W = 17
KEY_E = 18
KEY_ENTER = 28
KEY_A = 30
KEY_LEFTCTRL = 29
KEY_LEFTSHIFT = 42
KEY_SPACE = 57
KEY_LEFTALT = 56
KEY_LEFTMETA = 125

# Real modifier masks of a standard xkb keymap (Shift, Lock, Control, Mod1..5).
# wlroots' virtual keyboard does not update xkb state from key events, so
# modifier state is sent explicitly with zwp_virtual_keyboard_v1.modifiers.
MODIFIER_MASKS = {KEY_LEFTSHIFT: 1 << 0, KEY_LEFTCTRL: 1 << 2,
                  KEY_LEFTALT: 1 << 3, KEY_LEFTMETA: 1 << 6}

# US layout: character -> (evdev code, needs shift)
_ROWS = {
    "1234567890-=": 2, "qwertyuiop[]": 16, "asdfghjkl;'": 30, "zxcvbnm,./": 44,
}
_SHIFTED = {
    "!@#$%^&*()_+": "1234567890-=", "QWERTYUIOP{}": "qwertyuiop[]",
    'ASDFGHJKL:"': "asdfghjkl;'", "ZXCVBNM<>?": "zxcvbnm,./",
}
CHARMAP = {" ": (KEY_SPACE, False), "\n": (KEY_ENTER, False), "`": (41, False),
           "~": (41, True), "\\": (43, False), "|": (43, True)}
for row, start in _ROWS.items():
    for i, ch in enumerate(row):
        CHARMAP[ch] = (start + i, False)
for shifted, plain in _SHIFTED.items():
    for s, p in zip(shifted, plain):
        CHARMAP[s] = (CHARMAP[p][0], True)


class _RuleNames(ctypes.Structure):
    _fields_ = [(n, ctypes.c_char_p) for n in
                ("rules", "model", "layout", "variant", "options")]


def us_keymap():
    """An xkb_v1 text keymap for a US layout, compiled by libxkbcommon."""
    name = ctypes.util.find_library("xkbcommon") or "libxkbcommon.so.0"
    xkb = ctypes.CDLL(name)
    xkb.xkb_context_new.restype = ctypes.c_void_p
    xkb.xkb_context_new.argtypes = [ctypes.c_int]
    xkb.xkb_keymap_new_from_names.restype = ctypes.c_void_p
    xkb.xkb_keymap_new_from_names.argtypes = [
        ctypes.c_void_p, ctypes.POINTER(_RuleNames), ctypes.c_int]
    xkb.xkb_keymap_get_as_string.restype = ctypes.c_void_p
    xkb.xkb_keymap_get_as_string.argtypes = [ctypes.c_void_p, ctypes.c_int]
    xkb.xkb_keymap_unref.argtypes = [ctypes.c_void_p]
    xkb.xkb_context_unref.argtypes = [ctypes.c_void_p]
    libc = ctypes.CDLL(None)
    libc.free.argtypes = [ctypes.c_void_p]
    ctx = xkb.xkb_context_new(0)
    if not ctx:
        raise RuntimeError("xkb_context_new failed")
    names = _RuleNames(b"evdev", b"pc105", b"us", b"", b"")
    keymap = xkb.xkb_keymap_new_from_names(ctx, ctypes.byref(names), 0)
    if not keymap:
        xkb.xkb_context_unref(ctx)
        raise RuntimeError("xkb_keymap_new_from_names failed (xkb-data installed?)")
    ptr = xkb.xkb_keymap_get_as_string(keymap, 1)  # XKB_KEYMAP_FORMAT_TEXT_V1
    text = ctypes.string_at(ptr)
    libc.free(ptr)
    xkb.xkb_keymap_unref(keymap)
    xkb.xkb_context_unref(ctx)
    return text


class VirtualInput:
    def __init__(self, env, layout_size=None, keyboard=True):
        """env: a dict with WAYLAND_DISPLAY and XDG_RUNTIME_DIR.  With
        keyboard=False the virtual keyboard is only created on first use."""
        self._saved = {k: os.environ.get(k) for k in ("WAYLAND_DISPLAY", "XDG_RUNTIME_DIR")}
        os.environ["WAYLAND_DISPLAY"] = env["WAYLAND_DISPLAY"]
        os.environ["XDG_RUNTIME_DIR"] = env["XDG_RUNTIME_DIR"]
        self.display = Display()
        self.display.connect()
        self.globals = {}
        self.output_modes = []
        registry = self.display.get_registry()
        registry.dispatcher["global"] = (
            lambda r, name, iface, ver: self.globals.setdefault(iface, []).append((name, ver)))
        self.display.roundtrip()
        for iface in ("wl_seat", "zwlr_virtual_pointer_manager_v1",
                      "zwp_virtual_keyboard_manager_v1"):
            if iface not in self.globals:
                raise AssertionError("compositor does not advertise " + iface)
        self.seat = registry.bind(self.globals["wl_seat"][0][0], WlSeat, 1)
        self.outputs = []
        for name, ver in self.globals.get("wl_output", []):
            out = registry.bind(name, WlOutput, min(ver, 2))
            out.dispatcher["mode"] = self._on_mode
            self.outputs.append(out)
        self.ptr_manager = registry.bind(
            self.globals["zwlr_virtual_pointer_manager_v1"][0][0],
            ZwlrVirtualPointerManagerV1, 1)
        self.kb_manager = registry.bind(
            self.globals["zwp_virtual_keyboard_manager_v1"][0][0],
            ZwpVirtualKeyboardManagerV1, 1)
        self.pointer = self.ptr_manager.create_virtual_pointer(self.seat)
        # the keyboard is created on first use (see _kbd), so pointer-only
        # tests do not add a keyboard device to the seat
        self._keyboard = None
        self.display.roundtrip()
        if keyboard:
            self.keyboard  # noqa: B018 (create it now)
        if layout_size is None:
            if not self.output_modes:
                raise AssertionError("no current wl_output mode to size the layout")
            layout_size = self.output_modes[0]
        self.width, self.height = layout_size
        self.x = self.y = 0
        self.mods = 0
        self._t0 = time.monotonic()

    @property
    def keyboard(self):
        if self._keyboard is None:
            kb = self.kb_manager.create_virtual_keyboard(self.seat)
            keymap = us_keymap() + b"\0"
            fd = os.memfd_create("vkbd-keymap", os.MFD_CLOEXEC)
            os.write(fd, keymap)
            kb.keymap(1, fd, len(keymap))  # WL_KEYBOARD_KEYMAP_FORMAT_XKB_V1
            os.close(fd)
            self._keyboard = kb
            self.display.roundtrip()
        return self._keyboard

    def _on_mode(self, _out, flags, width, height, refresh):
        if flags & 1:  # current
            self.output_modes.append((width, height))

    def _now(self):
        return int((time.monotonic() - self._t0) * 1000) & 0xFFFFFFFF

    def _sync(self):
        self.display.roundtrip()

    def close(self):
        try:
            self.pointer.destroy()
            if self._keyboard is not None:
                self._keyboard.destroy()
            self.display.roundtrip()
        except Exception:
            pass
        self.display.disconnect()
        for k, v in self._saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- pointer -------------------------------------------------------------
    def move(self, x, y):
        x = max(0, min(int(round(x)), self.width - 1))
        y = max(0, min(int(round(y)), self.height - 1))
        self.pointer.motion_absolute(self._now(), x, y, self.width, self.height)
        self.pointer.frame()
        self.x, self.y = x, y
        self._sync()

    def button(self, pressed, button=BTN_LEFT):
        self.pointer.button(self._now(), button, 1 if pressed else 0)
        self.pointer.frame()
        self._sync()

    def click(self, x, y, button=BTN_LEFT):
        self.move(x, y)
        self.button(True, button)
        self.button(False, button)

    def double_click(self, x, y, button=BTN_LEFT):
        self.move(x, y)
        for _ in range(2):
            self.button(True, button)
            self.button(False, button)

    def drag(self, start, end, button=BTN_LEFT, steps=10, mods=()):
        for m in mods:
            self.key_down(m)
        self.move(*start)
        self.button(True, button)
        for i in range(1, steps + 1):
            self.move(start[0] + (end[0] - start[0]) * i / steps,
                      start[1] + (end[1] - start[1]) * i / steps)
        self.button(False, button)
        for m in reversed(mods):
            self.key_up(m)

    # -- keyboard ------------------------------------------------------------
    def key_down(self, code):
        self.keyboard.key(self._now(), code, 1)
        if code in MODIFIER_MASKS:
            self.mods |= MODIFIER_MASKS[code]
            self.keyboard.modifiers(self.mods, 0, 0, 0)
        self._sync()

    def key_up(self, code):
        self.keyboard.key(self._now(), code, 0)
        if code in MODIFIER_MASKS:
            self.mods &= ~MODIFIER_MASKS[code]
            self.keyboard.modifiers(self.mods, 0, 0, 0)
        self._sync()

    def key(self, code):
        self.key_down(code)
        self.key_up(code)

    def chord(self, mods, code):
        for m in mods:
            self.key_down(m)
        self.key(code)
        for m in reversed(mods):
            self.key_up(m)

    def type_text(self, text):
        for ch in text:
            code, shift = CHARMAP[ch]
            if shift:
                self.chord([KEY_LEFTSHIFT], code)
            else:
                self.key(code)
