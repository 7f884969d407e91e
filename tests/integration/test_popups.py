"""xdg popups: placed by their positioner and kept on the output by the
positioner's constraint adjustments."""


def test_popup_inside_output_is_placed_as_asked(qosway):
    c = qosway.spawn_wlclient(title="Popup Parent", width=400, height=300)
    c.wait_event("mapped")
    c.send("popup 50 60 120 80")
    cfg = c.wait_event("popup_configure")
    # anchored at the bottom-right corner of the 1x1 rect at (50, 60),
    # growing down and right: nothing needs adjusting
    assert (cfg["x"], cfg["y"], cfg["width"], cfg["height"]) == (51, 61, 120, 80)
    c.wait_event("popup_mapped")


def test_popup_past_the_output_edge_is_kept_on_it(qosway):
    out = qosway.outputs()[0]
    c = qosway.spawn_wlclient(title="Edge Parent", width=out["width"] - 120, height=300)
    c.wait_event("mapped")
    g = qosway.window_by_title("Edge Parent")["geometry"]
    anchor_x, width = g["width"] - 20, 300
    # unconstrained, the popup would end this far past the output's right edge
    overflow = g["x"] + anchor_x + 1 + width - (out["x"] + out["width"])
    assert overflow > 0
    c.send("popup %d 20 %d 100" % (anchor_x, width))
    cfg = c.wait_event("popup_configure")
    c.wait_event("popup_mapped")
    left = g["x"] + cfg["x"]
    assert out["x"] <= left and left + cfg["width"] <= out["x"] + out["width"], (cfg, g, out)
    assert cfg["y"] == 21 and cfg["height"] == 100  # vertically it fitted as asked
