"""Pixel checks on grim screenshots (Pillow images in RGB mode).

Rectangles are dicts ``{x, y, width, height}`` in layout coordinates, as
``qosctl --json windows`` reports them; with one output at 0,0 and scale 1
those are screenshot pixels.
"""


def box(rect, inset=0):
    """Pillow crop box for a rect dict, shrunk by inset on every side."""
    x, y, w, h = rect["x"], rect["y"], rect["width"], rect["height"]
    return (x + inset, y + inset, x + w - inset, y + h - inset)


def sub_rect(rect, x0=0, y0=0, x1=None, y1=None):
    """A rect dict for the part of rect between absolute x0..x1, y0..y1."""
    rx0 = max(rect["x"], x0 if x0 else rect["x"])
    ry0 = max(rect["y"], y0 if y0 else rect["y"])
    rx1 = min(rect["x"] + rect["width"], x1 if x1 is not None else rect["x"] + rect["width"])
    ry1 = min(rect["y"] + rect["height"], y1 if y1 is not None else rect["y"] + rect["height"])
    return {"x": rx0, "y": ry0, "width": max(0, rx1 - rx0), "height": max(0, ry1 - ry0)}


def colors(img, rect, inset=0):
    """[(count, (r, g, b)), ...] of the region."""
    region = img.crop(box(rect, inset))
    return region.getcolors(maxcolors=region.width * region.height + 1) or []


def near(c1, c2, tol):
    return all(abs(a - b) <= tol for a, b in zip(c1, c2))


def count_near(img, rect, rgb, tol=8, inset=0):
    return sum(n for n, c in colors(img, rect, inset) if near(c, rgb, tol))


def fraction_near(img, rect, rgb, tol=8, inset=0):
    cs = colors(img, rect, inset)
    total = sum(n for n, _ in cs)
    if total == 0:
        return 0.0
    return sum(n for n, c in cs if near(c, rgb, tol)) / total


def dominant(img, rect, inset=0):
    cs = colors(img, rect, inset)
    if not cs:
        return None
    return max(cs)[1]


def _flat(img):
    getter = getattr(img, "get_flattened_data", None) or img.getdata
    return list(getter())


def diff_count(img_a, img_b, rect, tol=0):
    """Number of pixels in rect that differ between two screenshots."""
    a = _flat(img_a.crop(box(rect)))
    b = _flat(img_b.crop(box(rect)))
    return sum(1 for p, q in zip(a, b) if not near(p, q, tol))


def describe(img, rect, n=5, inset=0):
    """The n most common colours of a region, for failure messages."""
    cs = sorted(colors(img, rect, inset), reverse=True)[:n]
    total = sum(c for c, _ in colors(img, rect, inset)) or 1
    return ", ".join("#%02X%02X%02X %.0f%%" % (c[0], c[1], c[2], 100.0 * k / total)
                     for k, c in cs)
