/* Wayland toplevels and popups (xdg-shell): the shell's side of a view. */
#ifndef QOSWAY_DESKTOP_XDG_SHELL_H
#define QOSWAY_DESKTOP_XDG_SHELL_H

#include <wayland-server-core.h>

/* server->xdg.new_surface: a toplevel becomes a view, a popup joins its
 * parent's scene tree, kept on the parent's output. */
void xdg_shell_handle_new_surface(struct wl_listener *listener, void *data);

#endif
