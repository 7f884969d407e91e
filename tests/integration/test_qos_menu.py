"""The reserve menu: right-click on a QoS titlebar button lists the named
reserves (the shipped qosrc's, in file order); picking one moves the
window's process into it; Escape or a click elsewhere closes the menu."""

import os

import harness
import pixels
from harness import wait_for
from test_qos_buttons import Win, qcomp, no_frozen_leftovers  # noqa: F401  (fixtures)
from vinput import VirtualInput, BTN_RIGHT, KEY_ESC

# config/qosrc defines these, in this order; none exists before first use
QOSRC_RESERVES = ["default", "ui", "idle", "pause", "fifo", "safe", "ceiling"]
MENU_BG = harness.THEME["titlebar-unfocused"]
MENU_HOVER = (0x5A, 0x7F, 0xA8)  # default button-hover, not themed by the tests
ITEM_H = harness.TITLEBAR_HEIGHT


def open_menu(vi, win):
    b = win.w()["buttons"]["realtime"]
    x, y = b["x"] + b["width"] // 2, b["y"] + b["height"] // 2
    vi.click(x, y, button=BTN_RIGHT)
    return x, y


def item_rect(x, y, index, width=120):
    return {"x": x + 4, "y": y + index * ITEM_H + 4, "width": width, "height": ITEM_H - 8}


def menu_shown(comp, x, y):
    img = comp.screenshot("menu")
    return pixels.fraction_near(img, item_rect(x, y, 0), MENU_BG, tol=10) > 0.5


def test_pick_a_reserve_from_the_menu(qcomp):
    win = Win(qcomp, "Menu Pick")
    with VirtualInput(qcomp.client_env()) as vi:
        x, y = open_menu(vi, win)
        wait_for(lambda: menu_shown(qcomp, x, y), desc="menu drawn at the pointer")
        idle = QOSRC_RESERVES.index("idle")
        vi.move(x + 30, y + idle * ITEM_H + ITEM_H // 2)
        img = qcomp.screenshot("menu-hover")
        assert pixels.fraction_near(img, item_rect(x, y, idle, 60), MENU_HOVER, tol=10) > 0.5, \
            pixels.describe(img, item_rect(x, y, idle, 60))
        assert pixels.fraction_near(img, item_rect(x, y, 0), MENU_BG, tol=10) > 0.5
        vi.click(x + 30, y + idle * ITEM_H + ITEM_H // 2)
    w = win.wait_class("idle")
    assert w["reserve"] == "idle"
    st = win.state()
    assert st["policy"] == os.SCHED_IDLE, st
    # the menu is gone once an item is picked
    img = qcomp.screenshot("menu-after")
    assert pixels.fraction_near(img, item_rect(x, y, 3), MENU_BG, tol=10) < 0.2


def test_escape_and_outside_click_close_the_menu(qcomp):
    win = Win(qcomp, "Menu Close")
    with VirtualInput(qcomp.client_env()) as vi:
        x, y = open_menu(vi, win)
        wait_for(lambda: menu_shown(qcomp, x, y), desc="menu drawn")
        vi.key(KEY_ESC)
        wait_for(lambda: not menu_shown(qcomp, x, y), desc="menu closed by Escape")
        assert not [d for ev, d in win.client.events("key")], "Escape reached the client"

        x, y = open_menu(vi, win)
        wait_for(lambda: menu_shown(qcomp, x, y), desc="menu drawn again")
        g = win.w()["geometry"]
        buttons_before = len(win.client.events("button"))
        # a click on the window's content, away from the menu, only closes it
        vi.click(g["x"] + 20, g["y"] + g["height"] - 20)
        wait_for(lambda: not menu_shown(qcomp, x, y), desc="menu closed by a click outside")
        assert len(win.client.events("button")) == buttons_before, \
            "the click that closed the menu reached the client"
    assert win.w()["class"] == "normal"
    assert win.state()["policy"] == os.SCHED_OTHER
