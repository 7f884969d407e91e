/*
 * wlr-foreign-toplevel-management: every mapped window is announced to
 * taskbars (waybar's wlr/taskbar, wlrctl) with its title, app id, output
 * and state, and their activate, (un)maximize, (un)minimize,
 * (un)fullscreen and close requests act on it like our own controls do.
 */
#ifndef QOSWAY_FOREIGN_TOPLEVEL_H
#define QOSWAY_FOREIGN_TOPLEVEL_H

#include <stdbool.h>

struct qw_server;
struct qw_view;

/* Create the global; false if it could not be made. */
bool foreign_toplevel_init(struct qw_server *server);
/* Announce a view that mapped; its handle goes away at unmap. */
void foreign_toplevel_map(struct qw_view *view);
void foreign_toplevel_unmap(struct qw_view *view);
/* The title (with the QoS class, if the config asks for it) changed. */
void foreign_toplevel_update_title(struct qw_view *view);
void foreign_toplevel_update_app_id(struct qw_view *view);
/* Activated, maximized, minimized, fullscreen and the output it is on. */
void foreign_toplevel_update_state(struct qw_view *view);

#endif
