"""The desktop globals with little policy of ours, tried with real
programs where Debian has them: wayland-info lists them; wl-paste --watch
(wlr-data-control) follows the clipboard and wl-copy / wl-paste work with
no keyboard at all; gamma control answers `failed` on an output without
gamma tables (headless); output power refuses to power a headless output
off with a named reason and reports it still on, and an unknown mode is a
protocol error; xdg-foreign v2 hands out a handle another client can
import and parent a window to, and a bogus handle is `destroyed`."""

import os
import shutil
import subprocess
import time

import pytest

from pywayland.client import Display

from harness import wait_for
from reserve_client import protocol_error
from _proto.wayland import WlCompositor, WlOutput, WlShm
from _proto.xdg_shell import XdgWmBase
from _proto.wlr_gamma_control_unstable_v1 import ZwlrGammaControlManagerV1
from _proto.wlr_output_power_management_unstable_v1 import ZwlrOutputPowerManagerV1
from _proto.xdg_foreign_unstable_v2 import ZxdgExporterV2, ZxdgImporterV2
from wlcommon import Buffer

DESKTOP_GLOBALS = [
    "ext_session_lock_manager_v1", "zwlr_input_inhibit_manager_v1",
    "zwlr_data_control_manager_v1", "zwlr_gamma_control_manager_v1",
    "zwlr_output_power_manager_v1", "zxdg_exporter_v1", "zxdg_importer_v1",
    "zxdg_exporter_v2", "zxdg_importer_v2", "xdg_activation_v1", "wl_data_device_manager",
]


class Conn:
    """A pywayland connection in the test process, with its globals."""

    def __init__(self, comp):
        keys = ("WAYLAND_DISPLAY", "XDG_RUNTIME_DIR")
        saved = {k: os.environ.get(k) for k in keys}
        os.environ["WAYLAND_DISPLAY"] = comp.wayland_display
        os.environ["XDG_RUNTIME_DIR"] = comp.runtime_dir
        try:
            self.display = Display()
            self.display.connect()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        self.registry = self.display.get_registry()
        self.globals = {}
        self.registry.dispatcher["global"] = (
            lambda r, name, iface, ver: self.globals.setdefault(iface, (name, ver)) and None)
        self.display.roundtrip()

    def bind(self, iface, ver=1):
        name, have = self.globals[iface.name]
        return self.registry.bind(name, iface, min(ver, have))

    def roundtrip(self):
        self.display.roundtrip()

    def close(self):
        self.display.disconnect()


@pytest.fixture
def conn(qosway):
    c = Conn(qosway)
    yield c
    c.close()


@pytest.mark.skipif(shutil.which("wayland-info") is None, reason="wayland-info is not installed")
def test_wayland_info_lists_the_desktop_globals(qosway):
    r = subprocess.run(["wayland-info"], env=qosway.client_env(), capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    missing = [g for g in DESKTOP_GLOBALS if "'%s'" % g not in r.stdout]
    assert not missing, "wayland-info does not list %s:\n%s" % (missing, r.stdout)


@pytest.mark.skipif(shutil.which("wl-paste") is None, reason="wl-clipboard is not installed")
def test_wl_paste_watch_follows_the_clipboard_without_a_keyboard(qosway):
    # no virtual keyboard exists in this test: data-control needs no focus
    env = qosway.client_env()
    watch = qosway.spawn(["wl-paste", "--no-newline", "--watch", "sh", "-c",
                          "printf 'clip %s\\n' \"$(cat)\""], name="watch", stdin=False)
    time.sleep(0.3)
    for text in ("first-copy", "second-copy"):
        # in the foreground it serves the selection until replaced
        qosway.spawn(["wl-copy", "--foreground", text], name="copy-" + text, stdin=False)
        watch.wait_line(lambda ln: ln == "clip " + text, timeout=15)
        r = subprocess.run(["wl-paste", "--no-newline"], env=env, capture_output=True,
                           text=True, timeout=15)
        assert r.returncode == 0 and r.stdout == text, (r.returncode, r.stdout, r.stderr)
    # the primary selection too
    qosway.spawn(["wl-copy", "--foreground", "--primary", "primary-copy"], name="copy-primary",
                 stdin=False)

    def primary():
        r = subprocess.run(["wl-paste", "--primary", "--no-newline"], env=env,
                           capture_output=True, text=True, timeout=15)
        return r.stdout == "primary-copy"
    wait_for(primary, desc="wl-paste --primary to read what wl-copy --primary set")
    watch.kill()


def test_gamma_control_fails_on_an_output_without_gamma(qosway, conn):
    manager = conn.bind(ZwlrGammaControlManagerV1)
    output = conn.bind(WlOutput)
    got = []
    gc = manager.get_gamma_control(output)
    gc.dispatcher["gamma_size"] = lambda g, size: got.append(("size", size))
    gc.dispatcher["failed"] = lambda g: got.append(("failed",))
    conn.roundtrip()
    assert got == [("failed",)], got
    assert qosway.alive()


def power(conn):
    manager = conn.bind(ZwlrOutputPowerManagerV1)
    output = conn.bind(WlOutput)
    modes = []
    p = manager.get_output_power(output)
    p.dispatcher["mode"] = lambda o, mode: modes.append(mode)
    p.dispatcher["failed"] = lambda o: modes.append("failed")
    conn.roundtrip()
    return p, modes


def test_output_power_off_is_refused_on_headless(qosway, conn):
    p, modes = power(conn)
    assert modes == [1], modes  # on
    p.set_mode(0)
    conn.roundtrip()
    assert modes == [1], modes
    assert "output power: HEADLESS-1 stays on: headless outputs cannot be powered off" \
        in qosway.log_text()
    assert qosway.outputs()[0]["enabled"] is True
    p.set_mode(1)  # already on: nothing to do, no error
    conn.roundtrip()
    assert modes == [1], modes


def test_output_power_unknown_mode_is_a_protocol_error(qosway, conn):
    p, modes = power(conn)
    p.set_mode(7)
    try:
        conn.roundtrip()
    except RuntimeError:
        pass
    code, iface, _, err = protocol_error(conn.display)
    assert (code, iface, err) == (1, "zwlr_output_power_v1", 71)
    assert qosway.alive()


def window(conn, title):
    compositor = conn.bind(WlCompositor, 4)
    shm = conn.bind(WlShm)
    wm = conn.bind(XdgWmBase)
    wm.dispatcher["ping"] = lambda w, serial: w.pong(serial)
    surface = compositor.create_surface()
    xdg = wm.get_xdg_surface(surface)
    top = xdg.get_toplevel()
    top.set_title(title)
    keep = [wm, xdg, top]

    def configure(x, serial):
        x.ack_configure(serial)
        if len(keep) == 3:
            buf = Buffer(shm, 200, 100, 0x305070)
            keep.append(buf)
            surface.attach(buf.buffer, 0, 0)
            surface.commit()
    xdg.dispatcher["configure"] = configure
    surface.commit()
    conn.roundtrip()
    conn.roundtrip()
    return surface, keep


def test_xdg_foreign_v2_export_and_import(qosway, conn):
    parent, keep1 = window(conn, "Foreign Parent")
    exporter = conn.bind(ZxdgExporterV2)
    handles = []
    exported = exporter.export_toplevel(parent)
    exported.dispatcher["handle"] = lambda e, h: handles.append(h)
    conn.roundtrip()
    assert len(handles) == 1 and handles[0], handles
    # another client imports it and makes its dialog a child
    other = Conn(qosway)
    try:
        child, keep2 = window(other, "Foreign Child")
        importer = other.bind(ZxdgImporterV2)
        gone = []
        imported = importer.import_toplevel(handles[0])
        imported.dispatcher["destroyed"] = lambda i: gone.append(True)
        imported.set_parent_of(child)
        other.roundtrip()
        assert not gone
        bogus = importer.import_toplevel("no-such-handle")
        bogus.dispatcher["destroyed"] = lambda i: gone.append("bogus")
        other.roundtrip()
        assert gone == ["bogus"], gone
        # the export going away destroys the import
        exported.destroy()
        conn.roundtrip()
        other.roundtrip()
        assert gone == ["bogus", True], gone
    finally:
        other.close()
    assert qosway.alive()
