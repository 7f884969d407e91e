"""Workspaces: Super+N shows workspace N of the focused window's output,
Super+Shift+N moves the focused window there; IPC lists them (`qosctl
--json workspaces`), switches and moves; focusing a window on a hidden
workspace shows it. Windows on hidden workspaces are out of sight for the
inactive-window rules (inactive, then moved to inactive-class) and get
frame callbacks at the hidden rate. Bad numbers are named errors."""

import json

import pytest

import harness
from harness import wait_for
from test_qos_buttons import no_frozen_leftovers  # noqa: F401 (fixture)
from vinput import VirtualInput, KEY_1, KEY_LEFTMETA, KEY_LEFTSHIFT

pytestmark = pytest.mark.keyboard

KEY_2, KEY_3 = KEY_1 + 1, KEY_1 + 2


def workspaces(comp):
    r = comp.qosctl("--json", "workspaces")
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)["outputs"]


def shown(comp):
    return workspaces(comp)[0]["shown"]


def win(comp, wid):
    return comp.find_window(lambda w: w["id"] == wid)


def open_window(comp, title, **kw):
    c = comp.spawn_wlclient(title=title, **kw)
    c.wait_event("mapped")
    c.wait_event("kb_enter")
    return c, comp.window_by_title(title)


def test_bindings_switch_and_move(qosway):
    a, aw = open_window(qosway, "On One")
    assert aw["workspace"] == 1 and shown(qosway) == 1
    with VirtualInput(qosway.client_env()) as vi:
        m = a.mark()
        vi.chord([KEY_LEFTMETA], KEY_2)
        wait_for(lambda: shown(qosway) == 2, desc="workspace 2 shown")
        a.wait_event("kb_leave", start=m)
        assert not win(qosway, aw["id"])["focused"]
        b, bw = open_window(qosway, "On Two")
        assert bw["workspace"] == 2
        # Super+Shift+3 sends the focused window to workspace 3
        m = b.mark()
        vi.chord([KEY_LEFTMETA, KEY_LEFTSHIFT], KEY_3)
        wait_for(lambda: win(qosway, bw["id"])["workspace"] == 3, desc="moved to 3")
        b.wait_event("kb_leave", start=m)
        assert shown(qosway) == 2
        m = a.mark()
        vi.chord([KEY_LEFTMETA], KEY_1)
        a.wait_event("kb_enter", start=m)
        assert shown(qosway) == 1 and win(qosway, aw["id"])["focused"]
    ws = {w["number"]: w for w in workspaces(qosway)[0]["workspaces"]}
    assert ws[1]["windows"] == [aw["id"]] and ws[1]["shown"]
    assert ws[3]["windows"] == [bw["id"]] and not ws[3]["shown"]
    assert 2 not in ws  # empty and not shown


def test_ipc_switch_move_and_focus_of_a_hidden_window(qosway):
    a, aw = open_window(qosway, "First")
    b, bw = open_window(qosway, "Second")
    r = qosway.ipc({"command": "move-to-workspace", "id": bw["id"], "number": 5})
    assert r["success"], r
    wait_for(lambda: win(qosway, aw["id"])["focused"], desc="First focused again")
    # focusing the hidden window shows its workspace
    m = b.mark()
    r = qosway.qosctl("focus", str(bw["id"]))
    assert r.returncode == 0, r.stderr
    b.wait_event("kb_enter", start=m)
    assert shown(qosway) == 5
    r = qosway.ipc({"command": "workspace", "number": 1,
                    "output": qosway.outputs()[0]["name"]})
    assert r["success"], r
    wait_for(lambda: win(qosway, aw["id"])["focused"], desc="First focused on 1")


@pytest.mark.parametrize("req,error", [
    ({"command": "workspace", "number": 0}, "workspace 0 out of range: 1 to 10"),
    ({"command": "workspace", "number": 11}, "workspace 11 out of range: 1 to 10"),
    ({"command": "workspace", "number": "2"}, "missing or non-integer 'number'"),
    ({"command": "workspace", "number": 2, "output": "NOPE-1"}, "no enabled output named 'NOPE-1'"),
    ({"command": "move-to-workspace", "id": 999, "number": 2}, "unknown window id 999"),
    ({"command": "move-to-workspace", "number": 2}, "missing or non-integer 'id'"),
])
def test_ipc_errors_are_named(qosway, req, error):
    a, aw = open_window(qosway, "Stays")
    r = qosway.ipc(req)
    assert r == {"success": False, "error": error}, r
    assert shown(qosway) == 1 and win(qosway, aw["id"])["workspace"] == 1


def test_bad_workspace_binding_is_a_config_error(start_qosway):
    comp = start_qosway(config=harness.test_config(
        "bind Super+F1 workspace 11\nbind Super+F2 move-to-workspace x\n"
        "bind Super+F3 workspace 4\n"))
    log = comp.log_text()
    assert "action 'workspace' wants a workspace number from 1 to 10" in log, log
    assert "action 'move-to-workspace' wants a workspace number from 1 to 10" in log, log
    assert "(2 bad lines)" in log, log


def test_hidden_workspace_windows_turn_inactive_and_idle(start_qosway):
    comp = start_qosway(config=harness.qos_test_config(
        "inactive-timeout 1\ninactive-class idle\n"))
    a, aw = open_window(comp, "Goes Away")
    b, bw = open_window(comp, "Stays Shown")
    r = comp.ipc({"command": "move-to-workspace", "id": aw["id"], "number": 2})
    assert r["success"], r
    wait_for(lambda: win(comp, aw["id"])["inactive"], timeout=15, desc="inactive")
    wait_for(lambda: win(comp, aw["id"])["class"] == "idle", timeout=15, desc="moved to idle")
    assert not win(comp, bw["id"])["inactive"]
    # shown again, it is active and back to its class
    r = comp.ipc({"command": "workspace", "number": 2})
    assert r["success"], r
    wait_for(lambda: not win(comp, aw["id"])["inactive"], desc="active again")
    wait_for(lambda: win(comp, aw["id"])["class"] == "normal", desc="class restored")


def test_hidden_workspace_windows_get_callbacks_at_the_hidden_rate(start_qosway):
    comp = start_qosway(config=harness.test_config("scheduling hidden-frame-rate 5\n"))
    hidden_c, hw = open_window(comp, "Hidden", width=300, height=200)
    shown_c, sw = open_window(comp, "Shown", width=300, height=200)
    r = comp.ipc({"command": "move-to-workspace", "id": hw["id"], "number": 2})
    assert r["success"], r
    m1, m2 = hidden_c.mark(), shown_c.mark()
    hidden_c.send("present 2")
    shown_c.send("present 2")
    hidden = hidden_c.wait_event("presentation", start=m1, timeout=40)["frames_done"]
    seen = shown_c.wait_event("presentation", start=m2, timeout=40)["frames_done"]
    print("hidden workspace: %d callbacks, shown: %d" % (hidden, seen))
    # 5 Hz against the refresh (60 Hz): far fewer, but never none
    assert 2 <= hidden and hidden * 4 < seen, (hidden, seen)
