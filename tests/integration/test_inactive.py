"""Inactive windows: a window minimised or entirely covered for longer than
inactive-timeout is reported inactive in IPC window info; with
inactive-class its process moves to that class and back when the window
shows again, unless the user chose its class; bad values of both settings
are reported with file and line."""

import re
import time

import harness
from harness import wait_for
from test_foreign_toplevel import taskbar, entry
from test_qos_buttons import no_frozen_leftovers  # noqa: F401  (fixture)


def start(start_qosway, cls="idle", timeout=1):
    return start_qosway(config=harness.qos_test_config(
        "inactive-timeout %d\ninactive-class %s\n" % (timeout, cls)))


def window(comp, title):
    return comp.window_by_title(title)


def wait_window(comp, title, pred, desc):
    return wait_for(lambda: pred(window(comp, title)) and window(comp, title), timeout=20,
                    desc="%s (now %r)" % (desc, {k: window(comp, title).get(k) for k in (
                        "inactive", "inactive_since", "class", "minimized", "output")}))


def set_rules(comp, text):
    harness.write_user_qosrc(comp, text)
    r = comp.qosctl("--json", "reload")
    assert r.returncode == 0 and "warning" not in r.stdout, r.stdout + r.stderr


def minimise(comp, title):
    tb = taskbar(comp)
    tid = entry(tb, title)["id"]
    tb.send("minimize %d" % tid)
    wait_window(comp, title, lambda w: w["inactive"], "minimised window inactive")
    return tb, tid


def stays(comp, title, cls):
    """A few ticks of the inactive timer later, still at cls."""
    for _ in range(4):
        time.sleep(0.5)
        assert window(comp, title)["class"] == cls


def test_minimised_window_goes_to_inactive_class_and_back(start_qosway):
    comp = start(start_qosway)
    comp.open_window("Other", color="20c020")
    c, w = comp.open_window("Sleeper", color="c02020")
    assert w["inactive"] is False and w["inactive_since"] is None, w
    assert w["class"] == "normal", w
    tb, tid = minimise(comp, "Sleeper")
    w = wait_window(comp, "Sleeper", lambda w: w["class"] == "idle", "inactive window idle")
    assert isinstance(w["inactive_since"], int) and w["inactive_since"] > 0, w
    st = harness.qos_state(c.pid)
    assert st["policy"] == harness.SCHED_IDLE, st
    mark = tb.mark()
    tb.send("activate %d" % tid)
    entry(tb, "Sleeper", lambda d: "minimized" not in d["state"], start=mark)
    w = wait_window(comp, "Sleeper", lambda w: not w["inactive"] and w["class"] == "normal",
                    "restored window active and normal")
    assert w["inactive_since"] is None, w
    st = harness.qos_state(c.pid)
    assert st["policy"] == harness.SCHED_OTHER, st


def test_covered_window_goes_idle_and_comes_back_when_uncovered(start_qosway):
    comp = start(start_qosway)
    under, _ = comp.open_window("Under", color="c02020", width=200, height=150)
    over, w_over = comp.open_window("Over", color="2020c0", width=300, height=200)
    # partly covered: still active
    tb = taskbar(comp)
    over_id = entry(tb, "Over")["id"]
    wait_for(lambda: window(comp, "Under")["inactive"] is False, desc="listed")
    mark = tb.mark()
    tb.send("maximize %d" % over_id)
    entry(tb, "Over", lambda d: "maximized" in d["state"], start=mark)
    wait_window(comp, "Under", lambda w: w["inactive"] and w["class"] == "idle",
                "covered window inactive and idle")
    assert not window(comp, "Over")["inactive"]
    mark = tb.mark()
    tb.send("unmaximize %d" % over_id)
    entry(tb, "Over", lambda d: "maximized" not in d["state"], start=mark)
    wait_window(comp, "Under", lambda w: not w["inactive"] and w["class"] == "normal",
                "uncovered window active and normal")


def test_a_class_the_user_chose_is_left_alone(start_qosway):
    comp = start(start_qosway)
    comp.open_window("Other", color="20c020")
    c, w = comp.open_window("Chosen", color="c02020")
    r = comp.qosctl("set", str(w["id"]), "normal")
    assert r.returncode == 0, r.stdout + r.stderr
    minimise(comp, "Chosen")
    stays(comp, "Chosen", "normal")
    assert harness.qos_state(c.pid)["policy"] == harness.SCHED_OTHER


def test_inactive_class_none_only_reports(start_qosway):
    comp = start(start_qosway, cls="none")
    comp.open_window("Other", color="20c020")
    c, w = comp.open_window("Reported", color="c02020")
    minimise(comp, "Reported")
    stays(comp, "Reported", "normal")
    assert harness.qos_state(c.pid)["policy"] == harness.SCHED_OTHER


def test_bad_inactive_settings_name_file_and_line(start_qosway):
    config = "\n".join([
        "inactive-timeout 0",            # 1 under a second
        "inactive-timeout soon",         # 2 not a number
        "inactive-timeout 1.5",          # 3 not whole seconds
        "inactive-timeout 100000",       # 4 over a day
        "inactive-timeout",              # 5 missing
        "inactive-class sleepy",         # 6 unknown class
        "inactive-class idle normal",    # 7 two values
        "inactive-timeout 2",            # 8 fine
        "inactive-class idle",           # 9 fine
    ]) + "\n"
    comp = start_qosway(config=config)
    log = comp.log_text()
    path = re.escape(comp.config_path)
    for line in (1, 2, 3, 4, 5):
        assert re.search(r"%s:%d: inactive-timeout wants whole seconds" % (path, line), log), (
            line, log[-3000:])
    for line in (6, 7):
        assert re.search(r"%s:%d: inactive-class wants idle, normal or none" % (path, line),
                         log), (line, log[-3000:])
    for line in (8, 9):
        assert not re.search(r"%s:%d:" % (path, line), log), line
    assert comp.alive()


def test_a_move_never_raises_a_class(start_qosway):
    """inactive-class normal leaves a process AutoQOS made idle as it is."""
    comp = start(start_qosway, cls="normal")
    set_rules(comp, 'rule app_id="inactive-idle" policy=idle auto=yes\n')
    comp.open_window("Other", color="20c020")
    c, w = comp.open_window("Idle App", app_id="inactive-idle")
    wait_window(comp, "Idle App", lambda w: w["class"] == "idle", "AutoQOS idle")
    minimise(comp, "Idle App")
    stays(comp, "Idle App", "idle")
    assert harness.qos_state(c.pid)["policy"] == harness.SCHED_IDLE


def test_a_rule_placed_class_comes_back(start_qosway):
    """A process AutoQOS put at nice 10 goes idle while inactive and gets
    its nice class back when it shows again."""
    comp = start(start_qosway)
    set_rules(comp, 'rule app_id="inactive-nice" policy=other nice=10 auto=yes\n')
    comp.open_window("Other", color="20c020")
    c, w = comp.open_window("Nice App", app_id="inactive-nice")
    wait_window(comp, "Nice App", lambda w: w["class"] == "nice", "AutoQOS nice")
    tb, tid = minimise(comp, "Nice App")
    wait_window(comp, "Nice App", lambda w: w["class"] == "idle", "inactive window idle")
    tb.send("activate %d" % tid)
    wait_window(comp, "Nice App", lambda w: not w["inactive"] and w["class"] == "nice",
                "active window nice again")
    st = harness.qos_state(c.pid)
    assert st["policy"] == harness.SCHED_OTHER and st["nice"] == 10, st
