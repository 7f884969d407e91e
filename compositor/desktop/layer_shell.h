#ifndef QOSWAY_LAYER_SHELL_H
#define QOSWAY_LAYER_SHELL_H

#include <wayland-server-core.h>

#include "server.h"

struct qw_output;

struct qw_layer_surface {
	struct wl_list link; /* qw_output.layers[layer] */
	struct qw_server *server;
	struct qw_output *output;
	struct wlr_layer_surface_v1 *layer_surface;
	struct wlr_scene_node *node;
	struct qw_node_desc desc;
	enum qw_layer layer;
	bool mapped;
	bool no_room_logged; /* said once, not at every commit it makes meanwhile */

	struct wl_listener map;
	struct wl_listener unmap;
	struct wl_listener destroy;
	struct wl_listener commit;
	struct wl_listener new_popup;
};

void layer_shell_handle_new_surface(struct wl_listener *listener, void *data);
/* Place every layer surface of `output` and recompute its usable area. */
void layer_shell_arrange(struct qw_output *output);
/* A click on a layer surface that accepts focus on demand gives it the keyboard. */
void layer_shell_focus_on_click(struct qw_server *server, struct qw_node_desc *desc);
/* Called before an output goes away: close its layer surfaces. */
void layer_shell_output_destroyed(struct qw_output *output);

#endif
