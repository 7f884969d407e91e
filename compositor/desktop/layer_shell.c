#include <stdlib.h>
#include <wlr/types/wlr_cursor.h>
#include <wlr/types/wlr_layer_shell_v1.h>
#include <wlr/types/wlr_output.h>
#include <wlr/types/wlr_output_layout.h>
#include <wlr/types/wlr_scene.h>
#include <wlr/types/wlr_seat.h>
#include <wlr/types/wlr_xdg_shell.h>
#include <wlr/util/log.h>

#include "desktop/layer_shell.h"
#include "output/output.h"
#include "desktop/placement.h"
#include "desktop/view.h"

/*
 * A client's namespace as the log may quote it: control bytes become '?',
 * so a client cannot write escape sequences into the compositor's log or
 * terminal.
 */
static const char *log_name(const char *ns, char *buf, size_t len) {
	size_t n = 0;
	for (; ns && *ns && n + 1 < len; ns++) {
		unsigned char c = (unsigned char)*ns;
		buf[n++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	buf[n] = '\0';
	return buf;
}

static enum qw_layer layer_from_protocol(enum zwlr_layer_shell_v1_layer layer) {
	return layer <= ZWLR_LAYER_SHELL_V1_LAYER_OVERLAY ? (enum qw_layer)layer : QW_LAYER_TOP;
}

/* Offset of a box of `size` inside [start, start+length) for the anchors. */
static int place_axis(int start, int length, int size, bool lo, bool hi, int margin_lo,
		int margin_hi) {
	if (lo && !hi) {
		return start + margin_lo;
	}
	if (hi && !lo) {
		return start + length - size - margin_hi;
	}
	return start + margin_lo + (length - margin_lo - margin_hi - size) / 2;
}

static void apply_exclusive(struct wlr_box *usable, uint32_t anchor, int32_t zone,
		const struct wlr_layer_surface_v1_state *state) {
	const uint32_t both_h = ZWLR_LAYER_SURFACE_V1_ANCHOR_LEFT | ZWLR_LAYER_SURFACE_V1_ANCHOR_RIGHT;
	const uint32_t both_v = ZWLR_LAYER_SURFACE_V1_ANCHOR_TOP | ZWLR_LAYER_SURFACE_V1_ANCHOR_BOTTOM;
	/* A zone only applies to a surface anchored to a single edge (with
	 * or without both perpendicular edges), never to a corner. */
	if (anchor == ZWLR_LAYER_SURFACE_V1_ANCHOR_TOP ||
			anchor == (ZWLR_LAYER_SURFACE_V1_ANCHOR_TOP | both_h)) {
		int z = zone + (int)state->margin.top;
		usable->y += z;
		usable->height -= z;
	} else if (anchor == ZWLR_LAYER_SURFACE_V1_ANCHOR_BOTTOM ||
			anchor == (ZWLR_LAYER_SURFACE_V1_ANCHOR_BOTTOM | both_h)) {
		usable->height -= zone + (int)state->margin.bottom;
	} else if (anchor == ZWLR_LAYER_SURFACE_V1_ANCHOR_LEFT ||
			anchor == (ZWLR_LAYER_SURFACE_V1_ANCHOR_LEFT | both_v)) {
		int z = zone + (int)state->margin.left;
		usable->x += z;
		usable->width -= z;
	} else if (anchor == ZWLR_LAYER_SURFACE_V1_ANCHOR_RIGHT ||
			anchor == (ZWLR_LAYER_SURFACE_V1_ANCHOR_RIGHT | both_v)) {
		usable->width -= zone + (int)state->margin.right;
	}
}

static void arrange_one(struct qw_layer_surface *l, const struct wlr_box *full,
		struct wlr_box *usable) {
	struct wlr_layer_surface_v1 *ls = l->layer_surface;
	const struct wlr_layer_surface_v1_state *state = &ls->current;
	const struct wlr_box bounds = state->exclusive_zone == -1 ? *full : *usable;
	uint32_t a = state->anchor;
	bool left = a & ZWLR_LAYER_SURFACE_V1_ANCHOR_LEFT;
	bool right = a & ZWLR_LAYER_SURFACE_V1_ANCHOR_RIGHT;
	bool top = a & ZWLR_LAYER_SURFACE_V1_ANCHOR_TOP;
	bool bottom = a & ZWLR_LAYER_SURFACE_V1_ANCHOR_BOTTOM;
	int w = state->desired_width, h = state->desired_height;
	if (w == 0) {
		w = bounds.width - (int)state->margin.left - (int)state->margin.right;
	}
	if (h == 0) {
		h = bounds.height - (int)state->margin.top - (int)state->margin.bottom;
	}
	if (w <= 0 || h <= 0) {
		/* Not destroyed here: that would re-enter the arrangement
		 * loop. It stays unplaced until the output has room. */
		if (!l->no_room_logged) {
			char name[128];
			wlr_log(WLR_INFO, "layer surface '%s' has no room",
					log_name(ls->namespace, name, sizeof(name)));
			l->no_room_logged = true;
		}
		return;
	}
	l->no_room_logged = false;
	int x = place_axis(bounds.x, bounds.width, w, left, right, state->margin.left,
			state->margin.right);
	int y = place_axis(bounds.y, bounds.height, h, top, bottom, state->margin.top,
			state->margin.bottom);
	wlr_scene_node_set_position(l->node, x, y);
	if (!ls->configured || state->actual_width != (uint32_t)w ||
			state->actual_height != (uint32_t)h) {
		wlr_layer_surface_v1_configure(ls, w, h);
	}
	if (state->exclusive_zone > 0) {
		apply_exclusive(usable, a, state->exclusive_zone, state);
	}
}

static void update_keyboard_focus(struct qw_server *server) {
	struct qw_layer_surface *want = NULL;
	struct qw_output *output;
	wl_list_for_each(output, &server->outputs, link) {
		for (int layer = QW_LAYER_OVERLAY; layer >= QW_LAYER_TOP && !want; layer--) {
			struct qw_layer_surface *l;
			wl_list_for_each(l, &output->layers[layer], link) {
				if (l->mapped &&
						l->layer_surface->current.keyboard_interactive ==
								ZWLR_LAYER_SURFACE_V1_KEYBOARD_INTERACTIVITY_EXCLUSIVE) {
					want = l;
					break;
				}
			}
		}
	}
	if (want == server->focused_layer) {
		return;
	}
	server->focused_layer = want;
	if (want) {
		struct wlr_keyboard *kb = wlr_seat_get_keyboard(server->seat);
		wlr_seat_keyboard_notify_enter(server->seat, want->layer_surface->surface,
				kb ? kb->keycodes : NULL, kb ? kb->num_keycodes : 0, kb ? &kb->modifiers : NULL);
		return;
	}
	/* Give the keyboard back to the most recently focused window. */
	struct qw_view *view;
	wl_list_for_each(view, &server->views, link) {
		if (view->mapped) {
			view->deco.focused = false;
			view_focus(view);
			return;
		}
	}
	wlr_seat_keyboard_notify_clear_focus(server->seat);
}

void layer_shell_arrange(struct qw_output *output) {
	struct wlr_box full = output_layout_box(output);
	struct wlr_box usable = full;
	/* Surfaces with an exclusive zone claim their strips first. */
	for (int pass = 0; pass < 2; pass++) {
		for (int layer = QW_LAYER_OVERLAY; layer >= QW_LAYER_BACKGROUND; layer--) {
			struct qw_layer_surface *l, *tmp;
			wl_list_for_each_safe(l, tmp, &output->layers[layer], link) {
				bool exclusive = l->layer_surface->current.exclusive_zone > 0;
				if (exclusive == (pass == 0)) {
					arrange_one(l, &full, &usable);
				}
			}
		}
	}
	struct wlr_box old = output->usable_area;
	bool changed = old.x != usable.x || old.y != usable.y || old.width != usable.width ||
			old.height != usable.height;
	output->usable_area = usable;
	update_keyboard_focus(output->server);
	if (changed) {
		placement_usable_area_changed(output);
	}
}

void layer_shell_focus_on_click(struct qw_server *server, struct qw_node_desc *desc) {
	struct qw_layer_surface *l = wl_container_of(desc, l, desc);
	if (l->layer_surface->current.keyboard_interactive ==
					ZWLR_LAYER_SURFACE_V1_KEYBOARD_INTERACTIVITY_NONE ||
			server->focused_layer) {
		return;
	}
	struct wlr_keyboard *kb = wlr_seat_get_keyboard(server->seat);
	wlr_seat_keyboard_notify_enter(server->seat, l->layer_surface->surface,
			kb ? kb->keycodes : NULL, kb ? kb->num_keycodes : 0, kb ? &kb->modifiers : NULL);
}

static void handle_map(struct wl_listener *listener, void *data) {
	struct qw_layer_surface *l = wl_container_of(listener, l, map);
	l->mapped = true;
	wlr_scene_node_set_enabled(l->node, true);
	layer_shell_arrange(l->output);
}

static void handle_unmap(struct wl_listener *listener, void *data) {
	struct qw_layer_surface *l = wl_container_of(listener, l, unmap);
	l->mapped = false;
	wlr_scene_node_set_enabled(l->node, false);
	if (l->output) {
		layer_shell_arrange(l->output);
	}
}

static void handle_commit(struct wl_listener *listener, void *data) {
	struct qw_layer_surface *l = wl_container_of(listener, l, commit);
	struct wlr_layer_surface_v1 *ls = l->layer_surface;
	if (!l->output) {
		return;
	}
	enum qw_layer layer = layer_from_protocol(ls->current.layer);
	if (layer != l->layer) {
		l->layer = layer;
		wl_list_remove(&l->link);
		wl_list_insert(&l->output->layers[layer], &l->link);
		wlr_scene_node_reparent(l->node, &l->server->trees.layers[layer]->node);
	}
	/* Only state changes need a new layout; re-arranging on every frame
	 * would answer each buffer commit with another configure. */
	if (ls->current.committed || !ls->configured) {
		layer_shell_arrange(l->output);
	}
}

static void handle_destroy(struct wl_listener *listener, void *data) {
	struct qw_layer_surface *l = wl_container_of(listener, l, destroy);
	struct qw_server *server = l->server;
	wl_list_remove(&l->map.link);
	wl_list_remove(&l->unmap.link);
	wl_list_remove(&l->destroy.link);
	wl_list_remove(&l->commit.link);
	wl_list_remove(&l->new_popup.link);
	wl_list_remove(&l->link);
	struct qw_output *output = l->output;
	wlr_scene_node_destroy(l->node);
	if (server->focused_layer == l) {
		server->focused_layer = NULL;
	}
	free(l);
	if (output) {
		layer_shell_arrange(output);
	}
}

static void handle_new_popup(struct wl_listener *listener, void *data) {
	struct qw_layer_surface *l = wl_container_of(listener, l, new_popup);
	struct wlr_xdg_popup *popup = data;
	struct wlr_scene_node *node = wlr_scene_xdg_surface_create(l->node, popup->base);
	if (!node) {
		wlr_log(WLR_ERROR, "failed to create a layer popup node");
		return;
	}
	popup->base->data = node;
	if (!l->output) {
		return;
	}
	int lx, ly;
	wlr_scene_node_coords(l->node, &lx, &ly);
	struct wlr_box obox = output_layout_box(l->output);
	struct wlr_box box = { obox.x - lx, obox.y - ly, obox.width, obox.height };
	wlr_xdg_popup_unconstrain_from_box(popup, &box);
}

void layer_shell_handle_new_surface(struct wl_listener *listener, void *data) {
	struct qw_server *server = wl_container_of(listener, server, layer_shell.new_surface);
	struct wlr_layer_surface_v1 *ls = data;
	if (!ls->output) {
		struct qw_output *o = output_at(server, server->cursor->x, server->cursor->y);
		if (!o) {
			char name[128];
			wlr_log(WLR_INFO, "no output for layer surface '%s'",
					log_name(ls->namespace, name, sizeof(name)));
			wlr_layer_surface_v1_destroy(ls);
			return;
		}
		ls->output = o->wlr_output;
	}
	struct qw_layer_surface *l = calloc(1, sizeof(*l));
	if (!l) {
		wlr_layer_surface_v1_destroy(ls);
		return;
	}
	l->server = server;
	l->output = ls->output->data;
	l->layer_surface = ls;
	l->layer = layer_from_protocol(ls->pending.layer);
	struct wlr_scene_tree *tree = wlr_scene_tree_create(&server->trees.layers[l->layer]->node);
	if (!tree || !wlr_scene_subsurface_tree_create(&tree->node, ls->surface)) {
		if (tree) {
			wlr_scene_node_destroy(&tree->node);
		}
		free(l);
		wlr_layer_surface_v1_destroy(ls);
		return;
	}
	l->node = &tree->node;
	l->desc = (struct qw_node_desc){
		.magic = QW_NODE_DESC_MAGIC,
		.type = QW_NODE_LAYER_SURFACE,
		.button = -1,
	};
	l->node->data = &l->desc;
	wlr_scene_node_set_enabled(l->node, false);
	ls->data = l;

	l->map.notify = handle_map;
	wl_signal_add(&ls->events.map, &l->map);
	l->unmap.notify = handle_unmap;
	wl_signal_add(&ls->events.unmap, &l->unmap);
	l->destroy.notify = handle_destroy;
	wl_signal_add(&ls->events.destroy, &l->destroy);
	l->commit.notify = handle_commit;
	wl_signal_add(&ls->surface->events.commit, &l->commit);
	l->new_popup.notify = handle_new_popup;
	wl_signal_add(&ls->events.new_popup, &l->new_popup);
	wl_list_insert(&l->output->layers[l->layer], &l->link);
}

void layer_shell_output_destroyed(struct qw_output *output) {
	for (int layer = 0; layer < QW_LAYER_COUNT; layer++) {
		struct qw_layer_surface *l, *tmp;
		wl_list_for_each_safe(l, tmp, &output->layers[layer], link) {
			/* Detach first so the destroy handler does not re-arrange a
			 * dying output. */
			l->output = NULL;
			wl_list_remove(&l->link);
			wl_list_init(&l->link);
			wlr_layer_surface_v1_destroy(l->layer_surface);
		}
	}
}
