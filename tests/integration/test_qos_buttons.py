"""Per-window QoS: each titlebar class button, clicked with the
virtual pointer (plain and Shift), changes the kernel state of the window's
process, and the button image and ``class`` show what the manager confirmed.
A second click restores SCHED_OTHER, nice 0 and the original cgroup.

Kernel state is read back directly: sched_getattr(2) of every thread,
/proc/PID/cgroup, the cpu controller files of its group and ``frozen`` in its
cgroup2 ``cgroup.events``."""

import os

import pytest

import harness
from harness import THEME, QOS_THEME, wait_for
import pixels
from vinput import VirtualInput, KEY_LEFTSHIFT


def center(r):
    return (r["x"] + r["width"] // 2, r["y"] + r["height"] // 2)


@pytest.fixture
def qcomp(start_qosway):
    return start_qosway(config=harness.qos_test_config())


@pytest.fixture(autouse=True)
def no_frozen_leftovers():
    yield
    # the test's compositors have stopped; a live one is another run's
    bad = harness.qosway_cgroup_leftovers(skip_live=True)
    frozen = [d for d, why in bad if why == "frozen"]
    for d in frozen:  # never leave anything frozen behind, even on failure
        try:
            with open(os.path.join(d, "cgroup.freeze"), "w") as fh:
                fh.write("0")
        except OSError:
            pass
    if bad:
        print("qosway cgroup leftovers after the test: %r" % (bad,))


class Win:
    """A wlclient window and its process, with kernel-state helpers."""

    def __init__(self, comp, title, color="3366cc", extra_args=()):
        self.comp = comp
        self.title = title
        self.color = int(color, 16)
        self.client = comp.spawn_wlclient(title=title, color=color, extra_args=extra_args)
        self.client.wait_event("mapped")
        w = comp.window_by_title(title)
        self.id = w["id"]
        self.pid = self.client.pid
        assert w["pid"] == self.pid, "window pid %r is not the client's %d" % (w["pid"], self.pid)
        self.orig_cgroups = harness.proc_cgroups(self.pid)

    def w(self):
        w = self.comp.find_window(lambda x: x["id"] == self.id)
        assert w is not None, "window %d is gone" % self.id
        return w

    def wait_class(self, cls, timeout=10.0):
        return wait_for(lambda: (lambda w: w if w["class"] == cls else None)(self.w()),
                        timeout, desc="class %r of window %d (now %r)"
                        % (cls, self.id, self.w()["class"]))

    def state(self):
        return harness.qos_state(self.pid)

    def rgb(self):
        return ((self.color >> 16) & 0xFF, (self.color >> 8) & 0xFF, self.color & 0xFF)


def park(vi, win):
    """Pointer onto the content, away from the buttons (no hover image)."""
    g = win.w()["geometry"]
    vi.move(g["x"] + g["width"] // 2, g["y"] + g["height"] // 2)


def park_outside(vi, win):
    """Pointer on the empty desktop right of the window: no cursor image
    over the content in screenshots."""
    f = win.w()["frame"]
    vi.move(f["x"] + f["width"] + 60, f["y"] + f["height"] // 2)


def click_button(vi, win, button, shift=False, outside=False):
    b = win.w()["buttons"][button]
    if shift:
        vi.key_down(KEY_LEFTSHIFT)
    try:
        vi.click(*center(b))
    finally:
        if shift:
            vi.key_up(KEY_LEFTSHIFT)
    (park_outside if outside else park)(vi, win)


def on_px(img, rect):
    return pixels.count_near(img, rect, THEME["button-on"], tol=12)


def refused_px(img, rect):
    return pixels.count_near(img, rect, QOS_THEME["button-refused"], tol=12)


def expect_buttons(win, on=None):
    """A screenshot check: button `on` drawn 'on' (filled with the on
    colour), the other class buttons neither on nor refused."""
    def check(img):
        w = win.w()
        for b in ("realtime", "idle", "pause"):
            r = w["buttons"][b]
            n, m = on_px(img, r), refused_px(img, r)
            if b == on and n < r["width"] * r["height"] // 8:
                return "%s button not drawn 'on': %d px of %s; %s" % (
                    b, n, harness.hexcolor(THEME["button-on"]), pixels.describe(img, r))
            if b != on and n > 2:
                return "%s button shows the on colour (%d px), expected off" % (b, n)
            if m > 2:
                return "%s button shows the refused colour (%d px)" % (b, m)
        return None
    return check


def assert_restored(win, st=None):
    st = st or win.state()
    assert st["policy"] == harness.SCHED_OTHER, st
    assert set(st["thread_policies"].values()) == {harness.SCHED_OTHER}, st
    assert st["nice"] == 0 and os.getpriority(os.PRIO_PROCESS, win.pid) == 0, st
    assert st["cgroups"] == win.orig_cgroups, (
        "cgroups not restored: %r, originally %r" % (st["cgroups"], win.orig_cgroups))
    assert not st["frozen"], st


def reserve_info(comp, name):
    r = comp.qosctl("--json", "reserves")
    assert r.returncode == 0, r.stderr
    import json
    for res in json.loads(r.stdout)["reserves"]:
        if res["name"] == name:
            return res
    return None


def click_into(vi, win, button, cls, shift=False):
    """Click the button and wait until the window's class is cls; returns
    (the window as qosctl lists it, the kernel state of its process)."""
    click_button(vi, win, button, shift=shift)
    return win.wait_class(cls), win.state()


def in_deadline(win):
    """The kernel state of the window's process once every thread of it is
    SCHED_DEADLINE: a qos reserve's member past its slice runs at the
    fallback until the period ends, so one read may catch it there."""
    def check():
        st = win.state()
        pols = set(st["thread_policies"].values())
        return st if st["policy"] == harness.SCHED_DEADLINE and pols == {
            harness.SCHED_DEADLINE} else None
    return wait_for(check, desc="%s in SCHED_DEADLINE" % win.title)


def toggle_back(vi, win, button, shift=False):
    click_button(vi, win, button, shift=shift)
    win.wait_class("normal")
    wait_for(lambda: win.state()["cgroups"] == win.orig_cgroups,
             desc="original cgroups back")
    assert_restored(win)
    win.comp.wait_screenshot(expect_buttons(win, None), name="off-again")


# -- plain clicks ---------------------------------------------------------------

def test_realtime_button_rule_reserve(qcomp):
    """A qosrc rule naming a real-time reserve (`default`: qos 50% of 50 ms)
    decides what the realtime button gives: the process in it as
    SCHED_DEADLINE."""
    harness.write_user_qosrc(qcomp, 'rule cmdline="*" reserve=default auto=no inherit=yes\n')
    r = qcomp.qosctl("--json", "reload")
    assert r.returncode == 0 and "warning" not in r.stdout, r.stdout + r.stderr
    win = Win(qcomp, "RT Rule")
    assert_restored(win)
    with VirtualInput(qcomp.client_env()) as vi:
        park(vi, win)
        qcomp.wait_screenshot(expect_buttons(win, None), name="off")
        w, st = click_into(vi, win, "realtime", "realtime")
        print("realtime via rule: class %s reserve %s kernel %r" % (w["class"], w["reserve"], st))
        assert w["reserve"] == "default", w
        st = in_deadline(win)
        assert st["period"] == 50_000_000, st
        assert st["cgroup2"].rstrip("/").endswith("/default"), st["cgroups"]
        assert st["cgroups"]["cpu"] == st["cgroup2"], st["cgroups"]
        assert not st["frozen"]
        res = reserve_info(qcomp, "default")
        assert res and res["granted"] and win.pid in [m["pid"] for m in res["members"]], res
        qcomp.wait_screenshot(expect_buttons(win, "realtime"), name="on-realtime")
        toggle_back(vi, win, "realtime")
    assert win.client.alive()


def test_realtime_button_standard_reserve(qcomp):
    """No shipped rule names a reserve for an ordinary program: the button
    gives the standard automatic reserve auto-PID, sized to the program
    (cpu=auto adapt=yes), its period its window's refresh (period=vblank,
    60 Hz on the headless output) and idle release after 120 periods."""
    win = Win(qcomp, "RT Auto")
    with VirtualInput(qcomp.client_env()) as vi:
        park(vi, win)
        w, st = click_into(vi, win, "realtime", "realtime")
        print("realtime standard: reserve %s kernel %r" % (w["reserve"], st))
        assert w["reserve"] == "auto-%d" % win.pid, w
        st = in_deadline(win)
        assert st["cgroup2"].rstrip("/").endswith("/auto-%d" % win.pid), st["cgroups"]
        # A 60 Hz frame (the provisional one, or the output's refresh).
        assert 16_000_000 <= st["period"] <= 17_000_000, st
        res = reserve_info(qcomp, "auto-%d" % win.pid)
        print("reserve: %r" % res)
        assert res["policy"] == "qos" and 16_000 <= res["period_us"] <= 17_000, res
        # Granted, or already given back: the window idles, and after 120
        # periods (2 s) the reserve releases its capacity.
        assert res["granted"] or res["released"], res
        assert res["period_vblank"] and res["adapt"]["auto"] and res["adapt"]["continuous"], res
        assert res["idle_periods"] == 120 and res["fallback"] == "other", res
        qcomp.wait_screenshot(expect_buttons(win, "realtime"), name="on-realtime")
        toggle_back(vi, win, "realtime")


def test_idle_button(qcomp):
    win = Win(qcomp, "Idle Btn")
    with VirtualInput(qcomp.client_env()) as vi:
        park(vi, win)
        w, st = click_into(vi, win, "idle", "idle")
        print("idle: reserve %s kernel %r" % (w["reserve"], st))
        assert st["policy"] == harness.SCHED_IDLE, st
        assert set(st["thread_policies"].values()) == {harness.SCHED_IDLE}, st
        assert st["cgroups"] != win.orig_cgroups, "idle did not move the process: %r" % st
        cpu = harness.cpu_cgroup_dir(win.pid)
        idle = harness.read_cgroup_file(cpu, "cpu.idle")
        print("cpu dir %s cpu.idle=%s" % (cpu, idle))
        if idle is not None:
            assert idle == "1", "cpu.idle of %s is %s" % (cpu, idle)
        assert not st["frozen"]
        qcomp.wait_screenshot(expect_buttons(win, "idle"), name="on-idle")
        toggle_back(vi, win, "idle")


def test_pause_button(qcomp):
    win = Win(qcomp, "Pause Btn", color="3366cc")
    with VirtualInput(qcomp.client_env()) as vi:
        park_outside(vi, win)
        before = qcomp.wait_screenshot(expect_buttons(win, None), name="before")
        click_button(vi, win, "pause", outside=True)
        w = win.wait_class("paused")
        wait_for(lambda: win.state()["frozen"] == 1, desc="cgroup.events frozen 1")
        st = win.state()
        print("paused: reserve %s kernel %r dir %s" % (w["reserve"], st,
                                                       harness.cgroup2_dir(win.pid)))
        assert st["cgroups"] != win.orig_cgroups
        a = 1 - harness.PAUSED_DIM_ALPHA / 255.0
        dimmed = tuple(int(round(c * a)) for c in win.rgb())

        def dimmed_and_on(img):
            msg = expect_buttons(win, "pause")(img)
            if msg:
                return msg
            g = win.w()["geometry"]
            f = pixels.fraction_near(img, g, dimmed, tol=6, inset=4)
            if f < 0.95:
                return "paused content not dimmed to %s: %s" % (
                    harness.hexcolor(dimmed), pixels.describe(img, g))
            return None
        qcomp.wait_screenshot(dimmed_and_on, name="paused")
        click_button(vi, win, "pause", outside=True)
        win.wait_class("normal")
        wait_for(lambda: not win.state()["frozen"], desc="thawed")
        assert_restored(win)

        def undimmed(img):
            msg = expect_buttons(win, None)(img)
            if msg:
                return msg
            g = win.w()["geometry"]
            n = pixels.diff_count(before, img, g, tol=4)
            return "content differs from before pausing in %d px" % n if n else None
        qcomp.wait_screenshot(undimmed, name="unpaused")
    # it is alive and answers
    mark = win.client.mark()
    r = qcomp.qosctl("raw", '{"command":"ping","id":%d}' % win.id)
    assert r.returncode == 0, r.stdout + r.stderr
    win.client.wait_event("ping", start=mark)


# -- Shift-click variants ----------------------------------------------------------

def test_shift_idle_is_nice_10(qcomp):
    win = Win(qcomp, "Nice Btn")
    with VirtualInput(qcomp.client_env()) as vi:
        park(vi, win)
        w, st = click_into(vi, win, "idle", "nice", shift=True)
        print("nice: reserve %s kernel %r" % (w["reserve"], st))
        assert st["policy"] == harness.SCHED_OTHER, st
        assert os.getpriority(os.PRIO_PROCESS, win.pid) == 10, st
        assert st["nice"] == 10, st
        for t in harness.thread_ids(win.pid):
            assert harness.sched_attr(t)["nice"] == 10, "thread %d" % t
        assert st["cgroups"] != win.orig_cgroups
        cpu = harness.cpu_cgroup_dir(win.pid)
        shares = harness.read_cgroup_file(cpu, "cpu.shares")
        weight = harness.read_cgroup_file(cpu, "cpu.weight")
        print("cpu dir %s shares=%s weight=%s" % (cpu, shares, weight))
        if shares is not None:
            assert int(shares) < 1024, "cpu.shares %s of a nice-10 group" % shares
        elif weight is not None:
            assert int(weight) < 100, "cpu.weight %s of a nice-10 group" % weight
        qcomp.wait_screenshot(expect_buttons(win, "idle"), name="on-nice")
        toggle_back(vi, win, "idle", shift=True)


def test_shift_realtime_is_fifo_or_refused(qcomp):
    """Shift+realtime asks for fifo with the safety limit. The kernel may
    refuse a new group RT bandwidth (dying cgroups hold it); then the
    manager must refuse with a reason on the titlebar. Either way the state
    shown must be the state in the kernel."""
    win = Win(qcomp, "FIFO Btn")
    with VirtualInput(qcomp.client_env()) as vi:
        park(vi, win)
        click_button(vi, win, "realtime", shift=True)

        assert qcomp.alive(), "qosway died on a Shift+realtime click (rc %s)" % qcomp.proc.poll()
        try:
            # the decision is synchronous; class is re-read on the next idle
            win.wait_class("fifo", timeout=1.0)
        except AssertionError:
            pass
        assert qcomp.alive(), "qosway died on a Shift+realtime click (rc %s)" % qcomp.proc.poll()
        w = win.w()
        st = win.state()
        if w["class"] == "fifo":
            print("fifo GRANTED: reserve %s kernel %r" % (w["reserve"], st))
            assert st["policy"] == harness.SCHED_FIFO, st
            assert set(st["thread_policies"].values()) == {harness.SCHED_FIFO}, st
            assert st["priority"] == 10, st
            assert st["reset_on_fork"], "fifo without SCHED_RESET_ON_FORK: %r" % st
            cpu = harness.cpu_cgroup_dir(win.pid)
            rt = harness.read_cgroup_file(cpu, "cpu.rt_runtime_us")
            print("cpu dir %s rt_runtime_us=%s rt_period_us=%s" % (
                cpu, rt, harness.read_cgroup_file(cpu, "cpu.rt_period_us")))
            if rt is not None:
                assert int(rt) > 0
            qcomp.wait_screenshot(expect_buttons(win, "realtime"), name="on-fifo")
            toggle_back(vi, win, "realtime", shift=True)
        else:
            print("fifo REFUSED: class %s title %r kernel %r" % (w["class"], w["title"], st))
            assert w["class"] == "normal", w
            assert_restored(win, st)
            check_refusal_shown(qcomp, win)


def check_refusal_shown(comp, win, button="realtime"):
    """The refused image in the button and warning-coloured titlebar text
    (shown for 2 s), then back to the off image."""
    def refused(img):
        w = win.w()
        b = w["buttons"][button]
        n = refused_px(img, b)
        if n < b["width"] * b["height"] // 8:
            return "%s button not drawn 'refused': %d px of %s; %s" % (
                button, n, harness.hexcolor(QOS_THEME["button-refused"]),
                pixels.describe(img, b))
        tb = w["titlebar"]
        text = pixels.sub_rect(tb, x1=min(x["x"] for x in w["buttons"].values()))
        t = pixels.count_near(img, text, QOS_THEME["text-warning"], tol=40)
        if t < 20:
            return "no warning-coloured text on the titlebar (%d px); %s" % (
                t, pixels.describe(img, text))
        return None
    comp.wait_screenshot(refused, timeout=1.8, name="refused")
    comp.wait_screenshot(expect_buttons(win, None), timeout=6, name="refusal-gone")


# -- confirmed state, whoever changed it --------------------------------------------

def test_buttons_follow_qosctl_changes(qcomp):
    """The image shows the manager's state, also when qosctl changed it."""
    win = Win(qcomp, "Follow")
    with VirtualInput(qcomp.client_env(), keyboard=False) as vi:
        park(vi, win)
    for cls, button in (("idle", "idle"), ("nice", "idle"), ("paused", "pause"),
                        ("normal", None)):
        r = qcomp.qosctl("set", str(win.id), cls)
        assert r.returncode == 0, "set %s: %s%s" % (cls, r.stdout, r.stderr)
        win.wait_class(cls)
        qcomp.wait_screenshot(expect_buttons(win, button), name="follow-" + cls)
    assert_restored(win)
