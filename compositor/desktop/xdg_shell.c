/*
 * Wayland toplevels (xdg-shell): the view interface for them, their
 * requests, and popups placed on their output.
 */
#include <stdlib.h>
#include <wlr/types/wlr_scene.h>
#include <wlr/types/wlr_seat.h>
#include <wlr/types/wlr_xdg_shell.h>
#include <wlr/util/log.h>

#include "decoration/decoration.h"
#include "decoration/xdg_decoration.h"
#include "desktop/foreign_toplevel.h"
#include "desktop/view.h"
#include "desktop/view_output.h"
#include "desktop/xdg_shell.h"
#include "input/cursor.h"
#include "ipc/ipc.h"
#include "output/output.h"
#include "qos_bridge/client_identity.h"
#include "qos_bridge/qos_link.h"
#include "server.h"

static struct client_identity *xdg_get_identity(const struct qw_view *view) {
	return client_identity_get(wl_resource_get_client(view->xdg_surface->resource));
}

static pid_t xdg_get_pid(const struct qw_view *view) {
	/* Through the pidfd taken at connection: -1 once that process is gone,
	 * never a recycled pid. */
	return client_identity_pid(view_identity(view));
}

static const char *xdg_get_title(const struct qw_view *view) {
	return view->toplevel->title;
}

static const char *xdg_get_app_id(const struct qw_view *view) {
	return view->toplevel->app_id;
}

static struct wlr_surface *xdg_get_surface(const struct qw_view *view) {
	return view->xdg_surface->surface;
}

/* Any surface of the window's client: its popups and subsurfaces too. */
static bool xdg_owns_surface(const struct qw_view *view, struct wlr_surface *surface) {
	return wl_resource_get_client(surface->resource) == view_client(view);
}

static void xdg_ping(struct qw_view *view) {
	wlr_xdg_surface_ping(view->xdg_surface);
}

static void xdg_set_resizing(struct qw_view *view, bool resizing) {
	wlr_xdg_toplevel_set_resizing(view->xdg_surface, resizing);
}

static void xdg_request_size(struct qw_view *view) {
	wlr_xdg_toplevel_set_size(view->xdg_surface, view->want_width, view->want_height);
}

static void xdg_configure(struct qw_view *view) {
	struct wlr_xdg_surface *xdg = view->xdg_surface;
	if (view->want_width > 0 && view->want_height > 0) {
		wlr_xdg_toplevel_set_size(xdg, view->want_width, view->want_height);
	}
	wlr_xdg_toplevel_set_activated(xdg, view->deco.focused);
	wlr_xdg_toplevel_set_maximized(xdg, view->maximized);
	wlr_xdg_toplevel_set_fullscreen(xdg, view->fullscreen);
}

static void xdg_schedule_configure(struct qw_view *view) {
	wlr_xdg_surface_schedule_configure(view->xdg_surface);
}

static void xdg_close(struct qw_view *view) {
	wlr_xdg_toplevel_send_close(view->xdg_surface);
}

/* A Wayland client is never told where its window is: no moved(). */
static const struct qw_view_impl xdg_view_impl = {
	.get_identity = xdg_get_identity,
	.get_pid = xdg_get_pid,
	.get_title = xdg_get_title,
	.get_app_id = xdg_get_app_id,
	.get_surface = xdg_get_surface,
	.owns_surface = xdg_owns_surface,
	.ping = xdg_ping,
	.set_resizing = xdg_set_resizing,
	.request_size = xdg_request_size,
	.configure = xdg_configure,
	.schedule_configure = xdg_schedule_configure,
	.close = xdg_close,
};

static void handle_map(struct wl_listener *listener, void *data) {
	struct qw_view *view = wl_container_of(listener, view, map);
	struct wlr_box geo;
	wlr_xdg_surface_get_geometry(view->xdg_surface, &geo);
	view->width = geo.width;
	view->height = geo.height;
	xdg_decoration_map_default(view);
	view_map(view, view->toplevel->requested.fullscreen, view->toplevel->requested.maximized);
}

static void handle_unmap(struct wl_listener *listener, void *data) {
	struct qw_view *view = wl_container_of(listener, view, unmap);
	view_unmap(view);
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
	struct qw_output *output = view_center_output(view);
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

void xdg_shell_handle_new_surface(struct wl_listener *listener, void *data) {
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
	view->impl = &xdg_view_impl;
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
