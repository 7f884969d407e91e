"""wayland-info (wayland-utils) lists the input globals qosway offers, and
the seat's touch capability once a touch device exists."""

import re
import shutil
import subprocess

import pytest

# The globals checked here; extend the list as globals are added.
EXPECTED_GLOBALS = [
    "wl_seat",
    "zwp_pointer_constraints_v1",
    "zwp_relative_pointer_manager_v1",
    "zwp_keyboard_shortcuts_inhibit_manager_v1",
    "zwp_text_input_manager_v3",
    "zwp_input_method_manager_v2",
    "zwlr_virtual_pointer_manager_v1",
    "zwp_virtual_keyboard_manager_v1",
    "zwp_pointer_gestures_v1",
    "zwp_tablet_manager_v2",
    "ext_session_lock_manager_v1",
    "zwlr_input_inhibit_manager_v1",
    "zwlr_layer_shell_v1",
    "wl_data_device_manager",
    "xdg_activation_v1",
    "zwlr_data_control_manager_v1",
    "zwlr_gamma_control_manager_v1",
    "zwlr_output_power_manager_v1",
    "zxdg_exporter_v1",
    "zxdg_importer_v1",
    "zxdg_exporter_v2",
    "zxdg_importer_v2",
]

wayland_info_missing = pytest.mark.skipif(shutil.which("wayland-info") is None,
                                          reason="wayland-info not installed (wayland-utils)")


def wayland_info(comp):
    r = subprocess.run(["wayland-info"], env=comp.client_env(), capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return r.stdout


def interfaces(text):
    return set(re.findall(r"interface: '([^']+)'", text))


def seat_capabilities(text):
    m = re.search(r"interface: 'wl_seat'.*?capabilities:([^\n]*)", text, re.S)
    assert m, text
    return m.group(1).split()


@wayland_info_missing
def test_wayland_info_lists_the_input_globals(qosway):
    text = wayland_info(qosway)
    missing = [g for g in EXPECTED_GLOBALS if g not in interfaces(text)]
    assert not missing, text
    assert "touch" not in seat_capabilities(text)


@wayland_info_missing
def test_wayland_info_shows_touch_with_a_touch_device(qosway):
    r = qosway.ipc({"command": "input-add", "type": "touch"})
    assert r["success"], r
    assert "touch" in seat_capabilities(wayland_info(qosway))
