#include <stdlib.h>
#include <string.h>
#include <wlr/types/wlr_cursor.h>
#include <wlr/types/wlr_keyboard.h>
#include <wlr/types/wlr_output_layout.h>
#include <wlr/types/wlr_scene.h>
#include <wlr/types/wlr_seat.h>
#include <wlr/types/wlr_xdg_shell.h>
#include <wlr/util/edges.h>
#include <wlr/util/log.h>

#include "desktop/activation.h"
#include "qos_bridge/client_identity.h"
#include "input/cursor.h"
#include "input/dnd.h"
#include "desktop/foreign_toplevel.h"
#include "desktop/idle.h"
#include "desktop/inactive.h"
#include "ipc/ipc.h"
#include "output/output.h"
#include "desktop/placement.h"
#include "qos_bridge/qos_gate.h"
#include "qos_bridge/qos_link.h"
#include "decoration/reserve_menu.h"
#include "desktop/view.h"
#include "desktop/view_output.h"
#include "desktop/workspace.h"
#include "decoration/xdg_decoration.h"

static int deco_border(const struct qw_view *view) {
	return decoration_border(&view->deco, view->server);
}

static int deco_titlebar(const struct qw_view *view) {
	return decoration_top(&view->deco, view->server);
}

struct wlr_box view_frame_box(const struct qw_view *view) {
	int b = deco_border(view), t = deco_titlebar(view);
	return (struct wlr_box){
		.x = view->x - b,
		.y = view->y - b - t,
		.width = view->width + 2 * b,
		.height = view->height + t + 2 * b,
	};
}

struct wlr_box view_titlebar_box(const struct qw_view *view) {
	int t = deco_titlebar(view);
	return (struct wlr_box){ view->x + view->deco.bar_x, view->y - t, t ? view->deco.bar_width : 0,
		t };
}

bool view_button_box(const struct qw_view *view, enum qw_button_kind kind, struct wlr_box *box) {
	const struct qw_button *button = &view->deco.buttons[kind];
	if (!view->deco.visible || view->deco.mode == QW_DECO_NONE || !button->present) {
		return false;
	}
	struct wlr_box title = view_titlebar_box(view);
	*box = (struct wlr_box){
		.x = title.x + button->x,
		.y = title.y,
		.width = view->server->theme.button_width,
		.height = view->server->theme.button_height,
	};
	return true;
}

struct client_identity *view_identity(const struct qw_view *view) {
	/*
	 * libwayland 1.21 emits a client's destroy signal before it destroys
	 * the client's resources, so this view's unmap and destroy (and the
	 * IPC close event they send) come after the identity was freed; asking
	 * for it then would make a new one, with a pidfd, that nothing frees.
	 */
	if (view->client_gone || !view->impl->get_identity) {
		return NULL;
	}
	return view->impl->get_identity(view);
}

pid_t view_get_pid(const struct qw_view *view) {
	return view->impl->get_pid(view);
}

const char *view_title(const struct qw_view *view) {
	return view->impl->get_title(view);
}

const char *view_app_id(const struct qw_view *view) {
	return view->impl->get_app_id(view);
}

struct wlr_surface *view_surface(const struct qw_view *view) {
	return view->impl->get_surface(view);
}

struct wl_client *view_client(const struct qw_view *view) {
	struct wlr_surface *surface = view->client_gone ? NULL : view_surface(view);
	return surface ? wl_resource_get_client(surface->resource) : NULL;
}

void view_ping(struct qw_view *view) {
	view->impl->ping(view);
}

void view_set_resizing(struct qw_view *view, bool resizing) {
	if (view->impl->set_resizing) {
		view->impl->set_resizing(view, resizing);
	}
}

void view_request_size(struct qw_view *view) {
	view->impl->request_size(view);
}

struct qw_view *view_from_id(struct qw_server *server, uint32_t id) {
	struct qw_view *view;
	wl_list_for_each(view, &server->views, link) {
		if (view->id == id) {
			return view;
		}
	}
	return NULL;
}

struct qw_node_desc *node_desc_find(struct wlr_scene_node *node) {
	for (; node; node = node->parent) {
		struct qw_node_desc *desc = node->data;
		if (desc && desc->magic == QW_NODE_DESC_MAGIC) {
			return desc;
		}
	}
	return NULL;
}

struct qw_view *view_at(struct qw_server *server, double lx, double ly,
		struct wlr_surface **surface, double *sx, double *sy, struct qw_node_desc **desc_out) {
	double nx, ny;
	*surface = NULL;
	*desc_out = NULL;
	struct wlr_scene_node *node = dnd_scene_node_at(server, lx, ly, &nx, &ny);
	if (!node) {
		return NULL;
	}
	if (node->type == WLR_SCENE_NODE_SURFACE) {
		*surface = wlr_scene_surface_from_node(node)->surface;
		*sx = nx;
		*sy = ny;
	}
	struct qw_node_desc *desc = node_desc_find(node);
	*desc_out = desc;
	return desc ? desc->view : NULL;
}

static struct qw_view *focused_view(struct qw_server *server) {
	if (wl_list_empty(&server->views)) {
		return NULL;
	}
	struct qw_view *view = wl_container_of(server->views.next, view, link);
	return view->mapped && view->deco.focused ? view : NULL;
}

void view_focus(struct qw_view *view) {
	if (!view || !view->mapped) {
		return;
	}
	struct qw_server *server = view->server;
	workspace_show_view(view);
	inactive_view_active(view);
	activation_set_urgent(view, false);
	if (view->minimized) {
		view->minimized = false;
		wlr_scene_node_set_enabled(&view->tree->node, true);
		idle_update_inhibit(server);
		ipc_notify_window(server, view, "changed");
	}
	struct qw_view *prev = focused_view(server);
	if (prev && prev != view) {
		decoration_set_focused(&prev->deco, server, false);
		view_send_configure(prev);
	}
	wl_list_remove(&view->link);
	wl_list_insert(&server->views, &view->link);
	if (!view->fullscreen) {
		wlr_scene_node_raise_to_top(&view->tree->node);
	}
	decoration_set_focused(&view->deco, server, true);
	view_send_configure(view);
	if (server->focused_layer || view_is_paused(view)) {
		/* An exclusive layer surface (a lock screen, a launcher) keeps
		 * the keyboard until it goes away. */
		return;
	}
	struct wlr_surface *surface = view_surface(view);
	struct wlr_keyboard *kb = wlr_seat_get_keyboard(server->seat);
	if (surface && kb) {
		wlr_seat_keyboard_notify_enter(server->seat, surface, kb->keycodes, kb->num_keycodes,
				&kb->modifiers);
	} else if (surface) {
		wlr_seat_keyboard_notify_enter(server->seat, surface, NULL, 0, NULL);
	}
	if (prev != view) {
		ipc_notify_focus(server, view);
	}
}

/* Focus the most recently focused other mapped view, if any. */
static void focus_next_after(struct qw_view *gone) {
	struct qw_server *server = gone->server;
	struct qw_view *view;
	wl_list_for_each(view, &server->views, link) {
		if (view != gone && view->mapped && !view->minimized && workspace_view_shown(view)) {
			view_focus(view);
			return;
		}
	}
	if (!server->focused_layer) {
		wlr_seat_keyboard_notify_clear_focus(server->seat);
	}
}

void view_close(struct qw_view *view) {
	view->impl->close(view);
}

void view_move_to(struct qw_view *view, int x, int y) {
	view->x = x;
	view->y = y;
	decoration_update_geometry(&view->deco, view);
	foreign_toplevel_update_state(view);
	if (view->impl->moved && view->mapped) {
		view->impl->moved(view);
	}
	workspace_view_moved(view);
}

void view_set_geometry(struct qw_view *view, int x, int y, int width, int height) {
	view->x = x;
	view->y = y;
	decoration_update_geometry(&view->deco, view);
	view->want_width = width < 1 ? 1 : width;
	view->want_height = height < 1 ? 1 : height;
	view_send_configure(view);
}

bool view_is_paused(const struct qw_view *view) {
	return view->class == QW_CLASS_PAUSED;
}

void view_send_configure(struct qw_view *view) {
	/* Taskbars may hear of the new state before the frozen client does. */
	foreign_toplevel_update_state(view);
	if (view_is_paused(view)) {
		/* A frozen client reads nothing: queued events would fill its
		 * socket buffer and get it disconnected. Sent on thaw. */
		view->configure_held = true;
		return;
	}
	view->configure_held = false;
	view->impl->configure(view);
}

/* Answer a request that changes nothing, so the client is not left waiting. */
static void view_schedule_configure(struct qw_view *view) {
	view->impl->schedule_configure(view);
}

void view_set_maximized(struct qw_view *view, bool maximized) {
	if (view->maximized == maximized || view->fullscreen) {
		view_schedule_configure(view);
		return;
	}
	struct qw_output *output = view_center_output(view);
	if (!output) {
		return;
	}
	view->maximized = maximized;
	if (maximized) {
		view->saved = (struct wlr_box){ view->x, view->y, view->width, view->height };
		struct wlr_box area = output->usable_area;
		int b = deco_border(view), t = deco_titlebar(view);
		view_set_geometry(view, area.x + b, area.y + b + t, area.width - 2 * b,
				area.height - 2 * b - t);
	} else {
		view_set_geometry(view, view->saved.x, view->saved.y, view->saved.width,
				view->saved.height);
	}
}

void view_set_fullscreen(struct qw_view *view, bool fullscreen) {
	if (view->fullscreen == fullscreen) {
		view_schedule_configure(view);
		return;
	}
	struct qw_output *output = view_center_output(view);
	if (!output) {
		return;
	}
	struct qw_server *server = view->server;
	view->fullscreen = fullscreen;
	if (fullscreen) {
		if (!view->maximized) {
			view->saved = (struct wlr_box){ view->x, view->y, view->width, view->height };
		}
		decoration_set_visible(&view->deco, false);
		wlr_scene_node_reparent(&view->tree->node, &server->trees.fullscreen->node);
		struct wlr_box box = output_layout_box(output);
		view_set_geometry(view, box.x, box.y, box.width, box.height);
	} else {
		decoration_set_visible(&view->deco, true);
		wlr_scene_node_reparent(&view->tree->node, &server->trees.views->node);
		if (view->maximized) {
			view->maximized = false;
			view_set_maximized(view, true);
		} else {
			view_set_geometry(view, view->saved.x, view->saved.y, view->saved.width,
					view->saved.height);
		}
	}
	ipc_notify_window(server, view, "changed");
}

void view_set_minimized(struct qw_view *view, bool minimized) {
	if (!view->mapped || view->minimized == minimized) {
		return;
	}
	if (!minimized) {
		view_focus(view);
		return;
	}
	struct qw_server *server = view->server;
	bool was_focused = focused_view(server) == view;
	view->minimized = true;
	wlr_scene_node_set_enabled(&view->tree->node, false);
	if (server->pointer.grabbed_view == view) {
		server->pointer.grabbed_view = NULL;
		server->pointer.mode = QW_CURSOR_PASSTHROUGH;
	}
	if (server->pointer.hovered_view == view) {
		server->pointer.hovered_view = NULL;
	}
	if (was_focused) {
		decoration_set_focused(&view->deco, server, false);
		view_send_configure(view);
		focus_next_after(view);
	}
	foreign_toplevel_update_state(view);
	idle_update_inhibit(server);
	/* The pointer may have been over it: give it to what is below now. */
	cursor_rebase(server, 0);
	ipc_notify_window(server, view, "changed");
}

/* The surface belongs to the view's client; for an X11 window, whose
 * client is all of Xwayland, to the window itself. */
static bool surface_is_view(struct wlr_surface *surface, struct qw_view *view) {
	if (!surface) {
		return false;
	}
	return view->impl->owns_surface(view, surface);
}

/* Take input focus away from a client about to be frozen, and give it back
 * with everything held once it runs again. */
static void update_paused(struct qw_view *view, bool was_paused) {
	struct qw_server *server = view->server;
	bool paused = view_is_paused(view);
	struct client_identity *id = view_identity(view);
	if (id) {
		id->paused = paused;
	}
	struct wlr_seat *seat = server->seat;
	if (paused && !was_paused) {
		if (surface_is_view(seat->keyboard_state.focused_surface, view)) {
			wlr_seat_keyboard_notify_clear_focus(seat);
		}
		if (surface_is_view(seat->pointer_state.focused_surface, view)) {
			wlr_seat_pointer_notify_clear_focus(seat);
		}
		if (server->pointer.grabbed_view == view && server->pointer.mode == QW_CURSOR_RESIZE) {
			server->pointer.mode = QW_CURSOR_PASSTHROUGH;
			server->pointer.grabbed_view = NULL;
		}
	} else if (!paused && was_paused) {
		if (view->configure_held) {
			view_send_configure(view);
		}
		if (view->deco.focused && view->mapped && !server->focused_layer && view_surface(view)) {
			struct wlr_keyboard *kb = wlr_seat_get_keyboard(seat);
			wlr_seat_keyboard_notify_enter(seat, view_surface(view), kb ? kb->keycodes : NULL,
					kb ? kb->num_keycodes : 0, kb ? &kb->modifiers : NULL);
		}
		cursor_rebase(server, 0);
	}
	decoration_update_paused(&view->deco, view);
}

void view_set_class(struct qw_view *view, enum qw_class class) {
	if (view->class == class) {
		return;
	}
	bool was_paused = view_is_paused(view);
	view->class = class;
	if (was_paused != view_is_paused(view)) {
		update_paused(view, was_paused);
	}
	decoration_update_buttons(&view->deco, view);
	foreign_toplevel_update_title(view);
	idle_update_inhibit(view->server);
	ipc_notify_window(view->server, view, "class");
}

void view_set_held_back(struct qw_view *view, bool held_back) {
	if (view->held_back == held_back) {
		return;
	}
	view->held_back = held_back;
	if (held_back) {
		/* Its threads run as normal ones now: the user asked for more. */
		decoration_show_refusal(&view->deco, view, view->class,
				"no capacity to give real-time back; runs as normal until there is");
	}
	decoration_update_buttons(&view->deco, view);
	ipc_notify_window(view->server, view, "class");
}

bool view_request_class(struct qw_view *view, enum qw_class class, char *err, size_t err_len) {
	/* A button or a keybinding: the user, and no process, asks. */
	struct qos_gate_asker asker = { .who = QOS_GATE_USER, .pid = -1 };
	if (qos_gate_set_class(view->server, &asker, view_get_pid(view), class, err, err_len)) {
		return true;
	}
	decoration_show_refusal(&view->deco, view, class, err);
	return false;
}

void view_apply_rules(struct qw_view *view) {
	/* AutoQOS for clients that connected on their own; those we started
	 * were settled before exec and keep what they have. */
	pid_t pid = view_get_pid(view);
	if (pid > 0 && !qos_link_reserve_of(view->server, pid)) {
		qos_link_apply_rules(view->server, pid, view_app_id(view));
	}
	view_set_class(view, qos_link_class_of(view->server, pid, NULL));
	view_set_held_back(view, qos_link_held_back(view->server, pid));
}

void view_map(struct qw_view *view, bool fullscreen, bool maximized) {
	view->mapped = true;
	view->minimized = false;
	placement_place_new(view);
	workspace_view_mapped(view);
	wlr_scene_node_set_enabled(&view->tree->node, true);
	if (fullscreen) {
		view_set_fullscreen(view, true);
	} else if (maximized) {
		view_set_maximized(view, true);
	}
	view_focus(view);
	view_apply_rules(view);
	foreign_toplevel_map(view);
	idle_update_inhibit(view->server);
	ipc_notify_window(view->server, view, "new");
}

void view_unmap(struct qw_view *view) {
	struct qw_server *server = view->server;
	bool was_focused = focused_view(server) == view;
	reserve_menu_view_gone(server, view);
	view->mapped = false;
	view->minimized = false;
	foreign_toplevel_unmap(view);
	wlr_scene_node_set_enabled(&view->tree->node, false);
	if (server->pointer.grabbed_view == view) {
		server->pointer.grabbed_view = NULL;
		server->pointer.mode = QW_CURSOR_PASSTHROUGH;
	}
	if (server->pointer.hovered_view == view) {
		server->pointer.hovered_view = NULL;
	}
	if (server->pointer.last_click_view == view) {
		server->pointer.last_click_view = NULL;
	}
	decoration_set_focused(&view->deco, server, false);
	if (was_focused) {
		focus_next_after(view);
	}
	idle_update_inhibit(server);
	ipc_notify_window(server, view, "close");
}

void view_update_size(struct qw_view *view, int width, int height) {
	if (!view->mapped || (width == view->width && height == view->height)) {
		return;
	}
	struct qw_server *server = view->server;
	if (server->pointer.mode == QW_CURSOR_RESIZE && server->pointer.grabbed_view == view) {
		/* Keep the edge opposite the one being dragged in place. */
		if (server->pointer.resize_edges & WLR_EDGE_LEFT) {
			view->x = server->pointer.grab_geobox.x + server->pointer.grab_geobox.width - width;
		}
		if (server->pointer.resize_edges & WLR_EDGE_TOP) {
			view->y = server->pointer.grab_geobox.y + server->pointer.grab_geobox.height - height;
		}
	}
	view->width = width;
	view->height = height;
	decoration_update_geometry(&view->deco, view);
	if (view->impl->moved) {
		view->impl->moved(view);
	}
}

void view_finish(struct qw_view *view) {
	wl_list_remove(&view->link);
	decoration_finish(&view->deco);
	wlr_scene_node_destroy(&view->tree->node);
}

bool view_init(struct qw_view *view, struct qw_server *server) {
	view->server = server;
	view->id = ++server->next_view_id;
	view->tree = wlr_scene_tree_create(&server->trees.views->node);
	if (!view->tree) {
		return false;
	}
	view->desc = (struct qw_node_desc){
		.magic = QW_NODE_DESC_MAGIC,
		.type = QW_NODE_VIEW,
		.view = view,
		.button = -1,
	};
	view->tree->node.data = &view->desc;
	wl_list_init(&view->link);
	if (!decoration_init(&view->deco, view)) {
		wlr_scene_node_destroy(&view->tree->node);
		return false;
	}
	wlr_scene_node_set_enabled(&view->tree->node, false);
	return true;
}
