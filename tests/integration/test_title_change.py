"""A title change (xdg_toplevel.set_title) redraws the server-side titlebar
and is reported by ``qosctl --json windows``."""

import harness
import pixels
from test_titlebar_render import check_titlebar, title_area


def test_title_change_redraws_titlebar(qosway):
    c = qosway.spawn_wlclient(title="Short", color="4080ff")
    c.wait_event("mapped")
    w = qosway.window_by_title("Short")

    def ok(img):
        return check_titlebar(img, qosway.find_window(lambda x: x["pid"] == c.pid))
    before = qosway.wait_screenshot(ok, name="before")
    before_w = qosway.find_window(lambda x: x["pid"] == c.pid)

    new_title = "A much longer title WWWWWWWW MMMMMMMM"
    c.send("title " + new_title)
    c.wait_event("title")
    w = qosway.window_by_title(new_title)
    assert w["id"] == before_w["id"], "title change must not create a new window"
    assert w["pid"] == c.pid

    area = title_area(before_w)

    def redrawn(img):
        msg = check_titlebar(img, qosway.find_window(lambda x: x["pid"] == c.pid))
        if msg:
            return msg
        changed = pixels.diff_count(before, img, area, tol=24)
        if changed < 50:
            return "titlebar not redrawn after title change: %d pixels changed" % changed
        # more text: the longer title covers more pixels in the text colour
        text = harness.THEME["text-focused" if w["focused"] else "text-unfocused"]
        n_before = pixels.count_near(before, area, text, tol=48)
        n_after = pixels.count_near(img, area, text, tol=48)
        if n_after <= n_before:
            return "longer title has no more text pixels (%d -> %d)" % (n_before, n_after)
        return None
    qosway.wait_screenshot(redrawn, name="after")


def test_very_long_title_stays_left_of_buttons(qosway):
    """The title is ellipsized: text never paints over the buttons."""
    long_title = "Ellipsize " + "W" * 300
    c = qosway.spawn_wlclient(title=long_title, color="4080ff", width=300, height=200)
    c.wait_event("mapped")
    qosway.window_by_title(long_title)

    def ok(img):
        ww = qosway.find_window(lambda x: x["pid"] == c.pid)
        msg = check_titlebar(img, ww)
        if msg:
            return msg
        text = harness.THEME["text-focused" if ww["focused"] else "text-unfocused"]
        for name, b in ww["buttons"].items():
            n = pixels.count_near(img, b, text, tol=16)
            if n > 3:
                return "title text drawn over the %s button (%d pixels)" % (name, n)
        return None
    qosway.wait_screenshot(ok, name="long")


def test_title_that_is_not_utf8_is_drawn_and_listed_as_text(qosway):
    """Titles are UTF-8 by the protocol, but libwayland does not check.  A
    broken one (and a long one the titlebar cuts mid-character) is still
    drawn, without pango's warning, and listed as valid JSON, with U+FFFD
    where the bytes were bad."""
    c = qosway.spawn_wlclient(title="Clean", color="4080ff")
    c.wait_event("mapped")
    before = qosway.window_by_title("Clean")
    # A stray byte, a cut sequence, then 300 two-byte characters: past the
    # titlebar's 512-byte buffer, which cuts one of them in half.
    raw = b"Bad \xff title \xc3 " + "\u00e9".encode() * 300
    c.send("title-hex " + raw.hex())
    c.wait_event("title")
    want = raw.decode("utf-8", "replace")
    harness.wait_for(lambda: any(w.get("title") == want for w in qosway.windows()),
                     desc="the title listed with U+FFFD for the bad bytes")
    w = qosway.window_by_title(want)
    assert w["id"] == before["id"]
    area = title_area(w)

    def drawn(img):
        msg = check_titlebar(img, qosway.find_window(lambda x: x["id"] == w["id"]))
        if msg:
            return msg
        text = harness.THEME["text-focused" if w["focused"] else "text-unfocused"]
        n = pixels.count_near(img, area, text, tol=48)
        return None if n > 50 else "no title text drawn (%d pixels)" % n
    qosway.wait_screenshot(drawn, name="not-utf8")
    assert "Invalid UTF-8" not in qosway.log_tail(), qosway.log_tail()
    assert c.alive()
