/*
 * Drag and drop (wl_data_device.start_drag). A drag starts only from a
 * button (or touch point) the client's surface holds, and never while the
 * screen is locked; wlroots' drag grab then carries enter, motion, drop
 * and cancel to whatever surface is under the pointer, X11 windows
 * included (wlroots 0.15 translates a Wayland drag into XDND, and a drop
 * focuses the X11 window, which wlroots requires before it hands over the
 * data; X11 drags do not reach Wayland windows). The drag icon is drawn
 * above everything and follows the pointer.
 */
#ifndef QOSWAY_DND_H
#define QOSWAY_DND_H

#include <stdbool.h>

struct qw_server;
struct wlr_scene_node;

bool dnd_init(struct qw_server *server);
void dnd_finish(struct qw_server *server);
/*
 * wlr_scene_node_at() that looks through the drag icon, which sits under
 * the pointer but must not hide the drop target.
 */
struct wlr_scene_node *dnd_scene_node_at(struct qw_server *server, double lx, double ly, double *nx,
		double *ny);

#endif
