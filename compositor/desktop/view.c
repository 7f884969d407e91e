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
#include "desktop/workspace.h"
#include "decoration/xdg_decoration.h"
#include "desktop/xwayland.h"

static const char *const class_names[QW_CLASS_COUNT] = {
	[QW_CLASS_NORMAL] = "normal",
	[QW_CLASS_REALTIME] = "realtime",
	[QW_CLASS_IDLE] = "idle",
	[QW_CLASS_PAUSED] = "paused",
	[QW_CLASS_FIFO] = "fifo",
	[QW_CLASS_NICE] = "nice",
};

const char *qos_class_name(enum qw_class class) {
	return class < QW_CLASS_COUNT ? class_names[class] : "?";
}

bool qos_class_from_name(const char *name, enum qw_class *class) {
	for (int i = 0; i < QW_CLASS_COUNT; i++) {
		if (strcmp(name, class_names[i]) == 0) {
			*class = i;
			return true;
		}
	}
	return false;
}

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
	if (view->client_gone || view->xwayland) {
		return NULL;
	}
	return client_identity_get(wl_resource_get_client(view->xdg_surface->resource));
}

pid_t view_get_pid(const struct qw_view *view) {
	if (view->xwayland) {
		return xwayland_view_pid(view);
	}
	/* Through the pidfd taken at connection: -1 once that process is gone,
	 * never a recycled pid. */
	return client_identity_pid(view_identity(view));
}

const char *view_title(const struct qw_view *view) {
	if (view->xwayland) {
		return xwayland_view_title(view);
	}
	return view->toplevel->title;
}

const char *view_app_id(const struct qw_view *view) {
	if (view->xwayland) {
		return xwayland_view_app_id(view);
	}
	return view->toplevel->app_id;
}

struct wlr_surface *view_surface(const struct qw_view *view) {
	if (view->xwayland) {
		return xwayland_view_surface(view);
	}
	return view->xdg_surface->surface;
}

struct wl_client *view_client(const struct qw_view *view) {
	struct wlr_surface *surface = view->client_gone ? NULL : view_surface(view);
	return surface ? wl_resource_get_client(surface->resource) : NULL;
}

void view_ping(struct qw_view *view) {
	if (view->xwayland) {
		xwayland_view_ping(view);
	} else {
		wlr_xdg_surface_ping(view->xdg_surface);
	}
}

void view_set_resizing(struct qw_view *view, bool resizing) {
	if (!view->xwayland) {
		wlr_xdg_toplevel_set_resizing(view->xdg_surface, resizing);
	}
}

void view_request_size(struct qw_view *view) {
	if (view->xwayland) {
		xwayland_view_configure(view);
	} else {
		wlr_xdg_toplevel_set_size(view->xdg_surface, view->want_width, view->want_height);
	}
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
	if (view->xwayland) {
		xwayland_view_close(view);
	} else {
		wlr_xdg_toplevel_send_close(view->xdg_surface);
	}
}

void view_move_to(struct qw_view *view, int x, int y) {
	view->x = x;
	view->y = y;
	decoration_update_geometry(&view->deco, view);
	foreign_toplevel_update_state(view);
	if (view->xwayland && view->mapped) {
		/* X clients place their menus from where they think they are. */
		xwayland_view_configure(view);
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
	if (view->xwayland) {
		xwayland_view_configure(view);
		return;
	}
	struct wlr_xdg_surface *xdg = view->xdg_surface;
	if (view->want_width > 0 && view->want_height > 0) {
		wlr_xdg_toplevel_set_size(xdg, view->want_width, view->want_height);
	}
	wlr_xdg_toplevel_set_activated(xdg, view->deco.focused);
	wlr_xdg_toplevel_set_maximized(xdg, view->maximized);
	wlr_xdg_toplevel_set_fullscreen(xdg, view->fullscreen);
}

/* Answer a request that changes nothing, so the client is not left waiting. */
static void view_schedule_configure(struct qw_view *view) {
	if (view->xwayland) {
		view_send_configure(view);
	} else {
		wlr_xdg_surface_schedule_configure(view->xdg_surface);
	}
}

static struct qw_output *view_output(struct qw_view *view) {
	return output_at(view->server, view->x + view->width / 2.0, view->y + view->height / 2.0);
}

void view_set_maximized(struct qw_view *view, bool maximized) {
	if (view->maximized == maximized || view->fullscreen) {
		view_schedule_configure(view);
		return;
	}
	struct qw_output *output = view_output(view);
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
	struct qw_output *output = view_output(view);
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
	if (view->xwayland) {
		return wlr_surface_get_root_surface(surface) == view_surface(view);
	}
	return wl_resource_get_client(surface->resource) == view_client(view);
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

static void handle_map(struct wl_listener *listener, void *data) {
	struct qw_view *view = wl_container_of(listener, view, map);
	struct wlr_box geo;
	wlr_xdg_surface_get_geometry(view->xdg_surface, &geo);
	view->width = geo.width;
	view->height = geo.height;
	xdg_decoration_map_default(view);
	view_map(view, view->toplevel->requested.fullscreen, view->toplevel->requested.maximized);
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

static void handle_unmap(struct wl_listener *listener, void *data) {
	struct qw_view *view = wl_container_of(listener, view, unmap);
	view_unmap(view);
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
	if (view->xwayland) {
		/* An X window's position is ours to keep in step. */
		xwayland_view_configure(view);
	}
}

static void handle_commit(struct wl_listener *listener, void *data) {
	struct qw_view *view = wl_container_of(listener, view, commit);
	struct wlr_box geo;
	wlr_xdg_surface_get_geometry(view->xdg_surface, &geo);
	view_update_size(view, geo.width, geo.height);
}

static void handle_client_destroy(struct wl_listener *listener, void *data) {
	struct qw_view *view = wl_container_of(listener, view, client_destroy);
	/* The signal's final emit has unlinked the listener already. */
	wl_list_remove(&view->client_destroy.link);
	wl_list_init(&view->client_destroy.link);
	view->client_gone = true;
}

static void handle_destroy(struct wl_listener *listener, void *data) {
	struct qw_view *view = wl_container_of(listener, view, destroy);
	wl_list_remove(&view->map.link);
	wl_list_remove(&view->unmap.link);
	wl_list_remove(&view->destroy.link);
	wl_list_remove(&view->commit.link);
	wl_list_remove(&view->request_move.link);
	wl_list_remove(&view->request_resize.link);
	wl_list_remove(&view->request_maximize.link);
	wl_list_remove(&view->request_fullscreen.link);
	wl_list_remove(&view->set_title.link);
	wl_list_remove(&view->set_app_id.link);
	wl_list_remove(&view->client_destroy.link);
	view->xdg_surface->data = NULL;
	view_finish(view);
	free(view);
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

/* Clients may start a move or resize only in answer to a press they got. */
static bool client_grab_allowed(struct qw_view *view, uint32_t serial) {
	return view->server->pointer.mode == QW_CURSOR_PASSTHROUGH &&
			wlr_seat_validate_pointer_grab_serial(view->server->seat, view->xdg_surface->surface,
					serial);
}

static void handle_request_move(struct wl_listener *listener, void *data) {
	struct qw_view *view = wl_container_of(listener, view, request_move);
	struct wlr_xdg_toplevel_move_event *event = data;
	if (client_grab_allowed(view, event->serial)) {
		view_begin_interactive(view, QW_CURSOR_MOVE, 0);
		view->server->pointer.grab_forward_release = true;
	}
}

static void handle_request_resize(struct wl_listener *listener, void *data) {
	struct qw_view *view = wl_container_of(listener, view, request_resize);
	struct wlr_xdg_toplevel_resize_event *event = data;
	if (client_grab_allowed(view, event->serial)) {
		view_begin_interactive(view, QW_CURSOR_RESIZE, event->edges);
		view->server->pointer.grab_forward_release = true;
	}
}

static void handle_request_maximize(struct wl_listener *listener, void *data) {
	struct qw_view *view = wl_container_of(listener, view, request_maximize);
	if (!view->mapped) {
		/* Applied at map time from toplevel->requested. */
		wlr_xdg_surface_schedule_configure(view->xdg_surface);
		return;
	}
	view_set_maximized(view, view->toplevel->requested.maximized);
}

static void handle_request_fullscreen(struct wl_listener *listener, void *data) {
	struct qw_view *view = wl_container_of(listener, view, request_fullscreen);
	if (!view->mapped) {
		wlr_xdg_surface_schedule_configure(view->xdg_surface);
		return;
	}
	view_set_fullscreen(view, view->toplevel->requested.fullscreen);
}

static void handle_set_title(struct wl_listener *listener, void *data) {
	struct qw_view *view = wl_container_of(listener, view, set_title);
	decoration_update_title(&view->deco, view);
	foreign_toplevel_update_title(view);
	if (view->mapped) {
		ipc_notify_window(view->server, view, "title");
	}
}

static void handle_set_app_id(struct wl_listener *listener, void *data) {
	struct qw_view *view = wl_container_of(listener, view, set_app_id);
	pid_t pid = view_get_pid(view);
	if (view->mapped && !qos_link_reserve_of(view->server, pid)) {
		/* app_id= rules can only match once the toplevel names itself. */
		qos_link_apply_rules(view->server, pid, view_app_id(view));
	}
	foreign_toplevel_update_app_id(view);
	if (view->mapped) {
		ipc_notify_window(view->server, view, "app_id");
	}
}

static void unconstrain_popup(struct wlr_xdg_popup *popup, struct qw_view *view) {
	struct qw_output *output = view_output(view);
	if (!output) {
		return;
	}
	struct wlr_box obox = output_layout_box(output);
	struct wlr_box geo;
	wlr_xdg_surface_get_geometry(view->xdg_surface, &geo);
	/* The box is in the toplevel's surface coordinates. */
	struct wlr_box box = {
		.x = obox.x - view->x + geo.x,
		.y = obox.y - view->y + geo.y,
		.width = obox.width,
		.height = obox.height,
	};
	wlr_xdg_popup_unconstrain_from_box(popup, &box);
}

static void add_popup(struct wlr_xdg_surface *xdg_surface) {
	struct wlr_surface *parent_surface = xdg_surface->popup->parent;
	if (!parent_surface || !wlr_surface_is_xdg_surface(parent_surface)) {
		/* Layer-shell parents attach their popups themselves. */
		return;
	}
	struct wlr_xdg_surface *parent = wlr_xdg_surface_from_wlr_surface(parent_surface);
	struct wlr_scene_node *parent_node = parent ? parent->data : NULL;
	if (!parent_node) {
		return;
	}
	struct wlr_scene_node *node = wlr_scene_xdg_surface_create(parent_node, xdg_surface);
	if (!node) {
		wlr_log(WLR_ERROR, "failed to create popup scene node");
		return;
	}
	xdg_surface->data = node;
	struct qw_node_desc *desc = node_desc_find(parent_node);
	if (desc && desc->view) {
		unconstrain_popup(xdg_surface->popup, desc->view);
	}
}

void view_handle_new_xdg_surface(struct wl_listener *listener, void *data) {
	struct qw_server *server = wl_container_of(listener, server, xdg.new_surface);
	struct wlr_xdg_surface *xdg_surface = data;
	if (xdg_surface->role == WLR_XDG_SURFACE_ROLE_POPUP) {
		add_popup(xdg_surface);
		return;
	}
	if (xdg_surface->role != WLR_XDG_SURFACE_ROLE_TOPLEVEL) {
		return;
	}
	struct qw_view *view = calloc(1, sizeof(*view));
	if (!view) {
		wlr_log(WLR_ERROR, "out of memory for a new view");
		wl_resource_post_no_memory(xdg_surface->resource);
		return;
	}
	view->xdg_surface = xdg_surface;
	view->toplevel = xdg_surface->toplevel;
	if (!view_init(view, server)) {
		goto err_tree;
	}
	view->surface_node = wlr_scene_xdg_surface_create(&view->tree->node, xdg_surface);
	if (!view->surface_node) {
		goto err_scene;
	}
	xdg_surface->data = view->surface_node;
	if (!decoration_init_overlay(&view->deco, view)) {
		goto err_scene;
	}

	view->map.notify = handle_map;
	wl_signal_add(&xdg_surface->events.map, &view->map);
	view->unmap.notify = handle_unmap;
	wl_signal_add(&xdg_surface->events.unmap, &view->unmap);
	view->destroy.notify = handle_destroy;
	wl_signal_add(&xdg_surface->events.destroy, &view->destroy);
	view->commit.notify = handle_commit;
	wl_signal_add(&xdg_surface->surface->events.commit, &view->commit);
	struct wlr_xdg_toplevel *toplevel = xdg_surface->toplevel;
	view->request_move.notify = handle_request_move;
	wl_signal_add(&toplevel->events.request_move, &view->request_move);
	view->request_resize.notify = handle_request_resize;
	wl_signal_add(&toplevel->events.request_resize, &view->request_resize);
	view->request_maximize.notify = handle_request_maximize;
	wl_signal_add(&toplevel->events.request_maximize, &view->request_maximize);
	view->request_fullscreen.notify = handle_request_fullscreen;
	wl_signal_add(&toplevel->events.request_fullscreen, &view->request_fullscreen);
	view->set_title.notify = handle_set_title;
	wl_signal_add(&toplevel->events.set_title, &view->set_title);
	view->set_app_id.notify = handle_set_app_id;
	wl_signal_add(&toplevel->events.set_app_id, &view->set_app_id);
	view->client_destroy.notify = handle_client_destroy;
	wl_client_add_destroy_listener(wl_resource_get_client(xdg_surface->resource),
			&view->client_destroy);
	wl_list_insert(server->views.prev, &view->link);
	return;

err_scene:
	view_finish(view);
err_tree:
	wlr_log(WLR_ERROR, "failed to create the scene nodes of a view");
	free(view);
	wl_resource_post_no_memory(xdg_surface->resource);
}
