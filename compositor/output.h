#ifndef QOSWAY_OUTPUT_H
#define QOSWAY_OUTPUT_H

#include <wayland-server-core.h>
#include <wlr/util/box.h>

#include "server.h"

struct qw_output {
	struct wl_list link; /* qw_server.outputs */
	struct qw_server *server;
	struct wlr_output *wlr_output;
	struct wlr_scene_output *scene_output;
	/* Layer surfaces per layer, qw_layer_surface.link */
	struct wl_list layers[QW_LAYER_COUNT];
	/* Output box minus exclusive zones, layout coordinates. */
	struct wlr_box usable_area;
	/* The backend sends no presentation event itself (headless). */
	bool synthesize_present;
	unsigned int present_seq;
	struct render_list *render_list; /* scratch space reused every frame */

	struct wl_listener frame;
	struct wl_listener destroy;
};

void output_handle_new(struct wl_listener *listener, void *data);
struct wlr_box output_layout_box(struct qw_output *output);
/* The output under a layout point, or the first one; NULL without outputs. */
struct qw_output *output_at(struct qw_server *server, double lx, double ly);

#endif
