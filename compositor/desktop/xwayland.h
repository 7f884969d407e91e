/*
 * X11 programs through Xwayland (wlroots' wlr_xwayland), per the config's
 * `xwayland enable|disable|lazy`.
 *
 * Managed X11 windows are qw_views like xdg toplevels: same frame, buttons,
 * IPC and AutoQOS (WM_CLASS's class is their app id). Their process is the
 * one the X server saw connect: our own X connection asks the X-Resource
 * extension for the window's client pid (the X server reads it from the
 * client socket's credentials), and falls back to _NET_WM_PID, which a
 * client may set to anything, only when the server cannot say.
 *
 * Override-redirect windows (menus, tooltips) get no frame and are not
 * views: they sit in server->trees.unmanaged, above all windows, at the
 * position their X client chose, in layout coordinates.
 *
 * Xwayland itself is one Wayland client: the scheduler serves and bills the
 * X11 windows together as that client.
 */
#ifndef QOSWAY_XWAYLAND_H
#define QOSWAY_XWAYLAND_H

#include <stdbool.h>
#include <sys/types.h>

#include "server.h"
#include "desktop/view.h"

/*
 * Start Xwayland per the config and export DISPLAY (unset it when X11 is
 * off). A missing Xwayland binary (WLR_XWAYLAND, else Xwayland in PATH)
 * disables X11 with one log line. Never fatal to the session.
 */
void xwayland_init(struct qw_server *server);
/* Stop Xwayland; its windows go first. NULL-safe on an uninitialised server. */
void xwayland_finish(struct qw_server *server);

/* For view.c: the X11 side of a view whose view->xwayland is set. */
pid_t xwayland_view_pid(const struct qw_view *view);
const char *xwayland_view_title(const struct qw_view *view);
const char *xwayland_view_app_id(const struct qw_view *view);
struct wlr_surface *xwayland_view_surface(const struct qw_view *view);
void xwayland_view_ping(struct qw_view *view);
void xwayland_view_close(struct qw_view *view);
/* Send the X window its position, size, focus and states. */
void xwayland_view_configure(struct qw_view *view);

#endif
