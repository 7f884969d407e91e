"""The globals qosway must advertise, and xdg-decoration negotiating
server-side decorations."""

REQUIRED_GLOBALS = {
    "wl_compositor", "wl_subcompositor", "wl_shm", "wl_seat", "wl_output",
    "wl_data_device_manager",
    "xdg_wm_base",
    "zxdg_decoration_manager_v1",
    "zwlr_layer_shell_v1",
    "zwlr_screencopy_manager_v1",
    "zxdg_output_manager_v1",
    "zwlr_virtual_pointer_manager_v1",
    "zwp_virtual_keyboard_manager_v1",
    "wp_presentation",
    "wp_viewporter",
    "zwp_idle_inhibit_manager_v1",
    "xdg_activation_v1",
}


def test_required_globals_advertised(qosway):
    c = qosway.spawn_wlclient(title="Globals")
    ready = c.wait_event("ready")
    missing = REQUIRED_GLOBALS - set(ready["globals"])
    assert not missing, "not advertised: %s" % sorted(missing)


def test_xdg_decoration_is_server_side(qosway):
    c = qosway.spawn_wlclient(title="Deco")
    d = c.wait_event("decoration")
    assert d["mode"] == "server_side"
    c.wait_event("mapped")
    w = qosway.window_by_title("Deco")
    assert w["buttons"] and w["titlebar"]["height"] > 0
