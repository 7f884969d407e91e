/* Draws one output frame from the scene graph, skipping occluded areas. */
#ifndef QOSWAY_RENDER_H
#define QOSWAY_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct qw_output;
struct render_list;
struct wl_client;
struct wlr_scene_node;
struct wlr_surface;

/* One drawable scene node of a frame, as the scheduler sees it. */
struct render_shown {
	struct wlr_scene_node *node;
	struct wlr_surface *surface; /* for surface nodes, else NULL */
	/* The surface's client, or for a window's decoration the window's;
	 * NULL for what is the compositor's own (menus, background). */
	struct wl_client *client;
	uint64_t damaged_px; /* drawn in this frame */
	uint64_t visible_px; /* not covered by anything opaque above it */
};

/* What a frame showed, bottom to top; reused from frame to frame. */
struct render_report {
	struct render_shown *items;
	size_t len, cap;
	bool drawn; /* a frame was rendered and committed */
};

/*
 * Render and commit the output's pending damage, like
 * wlr_scene_output_commit(). Returns false if nothing could be committed.
 * With a report, also says what each node on the output showed, even when
 * there was no damage to draw.
 */
bool render_output(struct qw_output *output, struct render_report *report);
void render_list_destroy(struct render_list *list);
void render_report_finish(struct render_report *report);

#endif
