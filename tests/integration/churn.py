#!/usr/bin/env python3
"""Connect and disconnect many xdg-shell clients quickly, in one process.

    churn.py COUNT [CONCURRENCY]

Each client connects, creates a titled toplevel, maps it with a shm buffer
and then goes away in one of three ways, in turn: a clean teardown (destroy
objects, then disconnect), an abrupt disconnect with everything still alive,
or an abrupt disconnect before the first configure (mid-setup).  Up to
CONCURRENCY clients are connected at once.  Prints ``done N`` at the end.
"""

import mmap
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from pywayland.client import Display  # noqa: E402
from _proto.wayland import WlCompositor, WlShm  # noqa: E402
from _proto.xdg_shell import XdgWmBase  # noqa: E402


class Churner:
    def __init__(self, index):
        self.index = index
        self.mode = index % 3  # 0 clean, 1 abrupt, 2 before configure
        self.d = Display()
        self.d.connect()
        reg = self.d.get_registry()
        self.globals = {}
        reg.dispatcher["global"] = self._global
        self.d.roundtrip()
        self.comp = reg.bind(self.globals["wl_compositor"][0], WlCompositor, 4)
        self.shm = reg.bind(self.globals["wl_shm"][0], WlShm, 1)
        self.wm = reg.bind(self.globals["xdg_wm_base"][0], XdgWmBase, 1)
        self.wm.dispatcher["ping"] = lambda wm, s: wm.pong(s)
        self.surface = self.comp.create_surface()
        self.xdg = self.wm.get_xdg_surface(self.surface)
        self.configured = False
        self.xdg.dispatcher["configure"] = self._configure
        self.top = self.xdg.get_toplevel()
        self.top.set_title("churn-%d" % index)
        self.top.set_app_id("churn")
        self.surface.commit()
        self.d.flush()
        self.buffer = None

    def _global(self, _reg, name, iface, version):
        # handlers must return None: cffi converts the result back to C
        self.globals.setdefault(iface, (name, version))

    def _configure(self, xdg, serial):
        xdg.ack_configure(serial)
        self.configured = True

    def map(self):
        if self.mode == 2:
            return
        while not self.configured:
            self.d.roundtrip()
        w, h = 400, 300
        size = w * h * 4
        fd = os.memfd_create("churn", os.MFD_CLOEXEC)
        os.ftruncate(fd, size)
        self.mm = mmap.mmap(fd, size)
        self.mm[:] = b"\x40\x80\xc0\xff" * (w * h)
        pool = self.shm.create_pool(fd, size)
        self.buffer = pool.create_buffer(0, w, h, w * 4, 1)
        pool.destroy()
        os.close(fd)
        self.surface.attach(self.buffer, 0, 0)
        self.surface.damage_buffer(0, 0, w, h)
        self.surface.commit()
        self.d.roundtrip()

    def close(self):
        if self.mode == 0:
            self.top.destroy()
            self.xdg.destroy()
            self.surface.destroy()
            if self.buffer is not None:
                self.buffer.destroy()
            self.d.roundtrip()
        self.d.disconnect()


def main():
    count = int(sys.argv[1])
    conc = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    live = []
    for i in range(count):
        c = Churner(i)
        c.map()
        live.append(c)
        if len(live) >= conc:
            live.pop(0).close()
    while live:
        live.pop(0).close()
    print("done %d" % count, flush=True)


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    os._exit(0)
