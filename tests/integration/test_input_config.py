"""Input settings from the config file: a keyboard of the backend gets the
configured xkb layout and key repeat (clients receive that keymap and
repeat info), `qosctl inputs` shows what took effect per device, bad
values are named with file:line, and a reload applies the new settings to
devices already there, or changes nothing when any line is bad."""

import re

from harness import test_config as config_text, wait_for

GOOD = """input type:keyboard {
    xkb-layout de
    xkb-variant nodeadkeys
    repeat-rate 40
    repeat-delay 300
}
input type:pointer accel-speed 0.5
input "headless" natural-scroll on
"""


def devices(comp):
    r = comp.ipc({"command": "inputs"})
    assert r["success"], r
    return r["devices"]


def headless(comp, type_):
    found = [d for d in devices(comp) if d["name"] == "headless" and d["type"] == type_]
    return found[0] if found else None


def add_input(comp, type_):
    r = comp.ipc({"command": "input-add", "type": type_})
    assert r["success"], r
    return wait_for(lambda: headless(comp, type_), desc="headless " + type_)


def test_keyboard_layout_and_repeat_reach_clients(start_qosway):
    comp = start_qosway(config=config_text(GOOD))
    c, w = comp.open_window("Layout")
    kb = add_input(comp, "keyboard")
    assert kb["settings"] == {"xkb_layout": "de", "xkb_variant": "nodeadkeys",
                              "repeat_rate": 40, "repeat_delay": 300}, kb
    assert kb["libinput"] is False and kb["virtual"] is False
    keymap = c.wait_event("keymap")
    assert keymap["layout"] == "German (no dead keys)", keymap
    assert c.wait_event("repeat_info") == {"rate": 40, "delay": 300}
    # a pointer that is not libinput's has none of libinput's settings
    ptr = add_input(comp, "pointer")
    assert ptr["settings"] == {}, ptr
    assert comp.qosctl("inputs").stdout.splitlines()[-1] == \
        "seat capabilities: pointer keyboard"


def test_bad_input_values_are_named_with_file_and_line(start_qosway):
    bad = """input type:keyboard xkb-layout nosuchlayout
input * tap maybe
input * accel-speed 3
input * repeat-rate -1
input * accel-profile bumpy
input type:keyboard {
    frobnicate 1
    repeat-delay 250
}
input
input type:keyboard {
"""
    comp = start_qosway(config=config_text(bad))
    log = comp.log_text()
    base = len(config_text("").splitlines())

    def at(n, text):
        pattern = r"qosway\.config:%d: .*%s" % (base + n, re.escape(text))
        assert re.search(pattern, log), "line %d: %r not in log:\n%s" % (base + n, text, log)
    at(1, "xkb-layout nosuchlayout: no keymap compiles from layout 'nosuchlayout'")
    at(2, "tap wants on or off, not 'maybe'")
    at(3, "accel-speed wants a number from -1 to 1, not '3'")
    at(4, "repeat-rate wants keys a second from 0 to 1000, not '-1'")
    at(5, "accel-profile wants flat or adaptive, not 'bumpy'")
    at(7, "unknown input setting 'frobnicate'")
    at(10, "input wants *, type:TYPE or a device name in quotes")
    at(11, "this input block is not closed with '}'")
    # the good line of the block applies; the bad ones left nothing behind
    kb = add_input(comp, "keyboard")
    assert kb["settings"] == {"repeat_rate": 25, "repeat_delay": 250}, kb


def test_reload_applies_to_present_devices_or_changes_nothing(start_qosway):
    comp = start_qosway(config=config_text(GOOD))
    c, w = comp.open_window("Reload")
    add_input(comp, "keyboard")
    c.wait_event("repeat_info", lambda d: d["rate"] == 40)
    m = c.mark()
    with open(comp.config_path, "w") as fh:
        fh.write(config_text("input type:keyboard {\n xkb-layout fr\n repeat-rate 20\n}\n"))
    r = comp.ipc({"command": "reload"})
    assert r["success"], r
    keymap = c.wait_event("keymap", start=m)
    assert keymap["layout"] == "French", keymap
    assert c.wait_event("repeat_info", start=m) == {"rate": 20, "delay": 600}
    assert headless(comp, "keyboard")["settings"] == {
        "xkb_layout": "fr", "repeat_rate": 20, "repeat_delay": 600}
    # one bad line: nothing of the file applies, the error names the line
    m = c.mark()
    good_then_bad = "input type:keyboard xkb-layout us\ninput * dwt sometimes\n"
    with open(comp.config_path, "w") as fh:
        fh.write(config_text(good_then_bad))
    r = comp.ipc({"command": "reload"})
    assert not r["success"]
    line = len(config_text("").splitlines()) + 2
    assert re.search(r"qosway\.config:%d: dwt wants on or off, not 'sometimes'" % line,
                     r["error"]), r
    assert headless(comp, "keyboard")["settings"]["xkb_layout"] == "fr"
    c.send("commit")
    c.wait_event("committed", start=m)
    assert c.events("keymap")[-1][1]["layout"] == "French"


def test_input_add_refusals_are_named(qosway):
    r = qosway.ipc({"command": "input-add", "type": "switch"})
    assert not r["success"]
    assert r["error"] == ("input-add wants type keyboard, pointer, touch, tablet-tool or "
                          "tablet-pad, not 'switch'")
    r = qosway.ipc({"command": "input-add"})
    assert r["error"] == "input-add wants a string 'type'"
