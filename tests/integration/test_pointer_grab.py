"""A button pressed on a window keeps the pointer there until released, as
on every desktop: motion outside the window still reaches it (a scrollbar
or a text selection follows the pointer), the window passed over gets no
enter, and the release hands the pointer to the surface under it."""

from test_pointer_constraints import command, spawn_input_client
from vinput import VirtualInput


def inside(g, x, y):
    return g["x"] <= x < g["x"] + g["width"] and g["y"] <= y < g["y"] + g["height"]


def events_since(client, name, mark):
    return [d for ev, d in client.events()[mark:] if ev == name]


def test_held_button_keeps_the_pointer_on_its_window(qosway):
    a, wa = spawn_input_client(qosway, "Pressed On", width=300, height=200)
    b, wb = spawn_input_client(qosway, "Passed Over", width=300, height=200)
    ga, gb = wa["geometry"], wb["geometry"]
    command(a, "track")
    with VirtualInput(qosway.client_env()) as vi:
        start = (ga["x"] + 10, ga["y"] + 10)
        vi.click(*start)   # focuses and raises a
        ga = qosway.window_by_title("Pressed On")["geometry"]
        over_b = (gb["x"] + gb["width"] - 10, gb["y"] + gb["height"] - 10)
        assert inside(gb, *over_b) and not inside(ga, *over_b), (ga, gb, over_b)
        vi.move(*start)
        vi.button(True)
        ma, mb = a.mark(), b.mark()
        vi.move(*over_b)
        # a follows the pointer beyond its own edges, in its own coordinates
        ev = a.wait_event("motion", lambda d: d["x"] > ga["width"], start=ma)
        assert abs(ev["x"] - (over_b[0] - ga["x"])) <= 1 and \
            abs(ev["y"] - (over_b[1] - ga["y"])) <= 1, (ev, ga, over_b)
        # everything the compositor sent b so far has arrived: no enter
        command(b, "track")
        assert not events_since(b, "ptr_enter", mb), b.events()[mb:]
        assert not events_since(a, "ptr_leave", ma), a.events()[ma:]
        vi.button(False)
        a.wait_event("ptr_leave", start=ma)
        b.wait_event("ptr_enter", start=mb)
        assert a.wait_event("button", lambda d: d["state"] == 0, start=ma)
    assert a.alive() and b.alive()
