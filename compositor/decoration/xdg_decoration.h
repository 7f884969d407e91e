#ifndef QOSWAY_XDG_DECORATION_H
#define QOSWAY_XDG_DECORATION_H

#include <wayland-server-core.h>

/* new_toplevel_decoration handler of the xdg-decoration manager. */
void xdg_decoration_handle_new(struct wl_listener *listener, void *data);
/* new_decoration handler of KDE's server-decoration manager. */
void xdg_decoration_handle_new_kde(struct wl_listener *listener, void *data);

struct qw_view;

/*
 * An xdg toplevel maps: apply a KDE decoration mode asked for before it
 * was a toplevel; with no decoration object at all, a window geometry
 * inset from the surface says it draws its own frame, so it gets what
 * `csd-buttons` gives those.
 */
void xdg_decoration_map_default(struct qw_view *view);

#endif
