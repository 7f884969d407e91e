#include <pixman.h>
#include <stdint.h>
#include <wlr/types/wlr_output_layout.h>
#include <wlr/types/wlr_scene.h>
#include <wlr/types/wlr_surface.h>
#include <wlr/types/wlr_xdg_shell.h>

#include "output/output.h"
#include "desktop/view.h"
#include "desktop/view_output.h"

struct qw_output *view_main_output(struct qw_view *view) {
	if (!view->mapped || view->minimized) {
		return NULL;
	}
	struct qw_server *server = view->server;
	struct wlr_box frame = view_frame_box(view);
	struct qw_output *best = NULL;
	int64_t best_area = 0;
	struct qw_output *output;
	wl_list_for_each(output, &server->outputs, link) {
		/* Disabled outputs are in no layout and show nothing. */
		if (!output->wlr_output->enabled ||
				!wlr_output_layout_get(server->output_layout, output->wlr_output)) {
			continue;
		}
		struct wlr_box box = output_layout_box(output), common;
		if (!wlr_box_intersection(&common, &frame, &box)) {
			continue;
		}
		int64_t area = (int64_t)common.width * common.height;
		if (area > best_area) {
			best = output;
			best_area = area;
		}
	}
	return best;
}

/* Take away from region what the window at node hides (if it is one). */
static void subtract_window(struct wlr_scene_node *node, pixman_region32_t *region) {
	struct qw_node_desc *desc = node->data;
	if (!node->state.enabled || !desc || desc->magic != QW_NODE_DESC_MAGIC ||
			desc->type != QW_NODE_VIEW) {
		return;
	}
	struct qw_view *above = desc->view;
	if (!above->mapped || above->minimized) {
		return;
	}
	if (above->deco.visible && above->deco.mode == QW_DECO_FULL) {
		/* Titlebar and border are filled rectangles. */
		struct wlr_box frame = view_frame_box(above);
		pixman_region32_t ring;
		pixman_region32_init_rect(&ring, frame.x, frame.y, frame.width, frame.height);
		pixman_region32_t content;
		pixman_region32_init_rect(&content, above->x, above->y, above->width, above->height);
		pixman_region32_subtract(&ring, &ring, &content);
		pixman_region32_subtract(region, region, &ring);
		pixman_region32_fini(&content);
		pixman_region32_fini(&ring);
	}
	struct wlr_surface *surface = view_surface(above);
	if (!surface) {
		return;
	}
	/* The content position is the xdg geometry's corner, not the surface's. */
	int sx = above->x, sy = above->y;
	if (above->xdg_surface) {
		struct wlr_box geo;
		wlr_xdg_surface_get_geometry(above->xdg_surface, &geo);
		sx -= geo.x;
		sy -= geo.y;
	}
	pixman_region32_t opaque;
	pixman_region32_init(&opaque);
	pixman_region32_copy(&opaque, &surface->opaque_region);
	pixman_region32_translate(&opaque, sx, sy);
	pixman_region32_subtract(region, region, &opaque);
	pixman_region32_fini(&opaque);
}

static void subtract_siblings_above(struct wlr_scene_node *node, pixman_region32_t *region) {
	struct wlr_scene_node *parent = node->parent;
	for (struct wl_list *l = node->state.link.next; l != &parent->state.children; l = l->next) {
		struct wlr_scene_node *above = wl_container_of(l, above, state.link);
		subtract_window(above, region);
	}
}

bool view_fully_covered(struct qw_view *view) {
	struct qw_server *server = view->server;
	if (!view->mapped || view->minimized) {
		return false;
	}
	struct wlr_box frame = view_frame_box(view);
	pixman_region32_t shown, outputs;
	pixman_region32_init(&outputs);
	struct qw_output *output;
	wl_list_for_each(output, &server->outputs, link) {
		if (output->wlr_output->enabled &&
				wlr_output_layout_get(server->output_layout, output->wlr_output)) {
			struct wlr_box box = output_layout_box(output);
			pixman_region32_union_rect(&outputs, &outputs, box.x, box.y, box.width, box.height);
		}
	}
	pixman_region32_init_rect(&shown, frame.x, frame.y, frame.width, frame.height);
	pixman_region32_intersect(&shown, &shown, &outputs);
	bool on_output = pixman_region32_not_empty(&shown);
	struct wlr_scene_node *node = &view->tree->node;
	subtract_siblings_above(node, &shown);
	if (node->parent == &server->trees.views->node) {
		/* Fullscreen windows are stacked above every other. */
		struct wlr_scene_node *child;
		wl_list_for_each(child, &server->trees.fullscreen->node.state.children, state.link) {
			subtract_window(child, &shown);
		}
	}
	bool covered = on_output && !pixman_region32_not_empty(&shown);
	pixman_region32_fini(&shown);
	pixman_region32_fini(&outputs);
	return covered;
}
