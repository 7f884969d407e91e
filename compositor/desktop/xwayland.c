#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <wlr/types/wlr_scene.h>
#include <wlr/types/wlr_seat.h>
#include <wlr/util/log.h>
#include <wlr/xwayland.h>
#include <xcb/res.h>
#include <xcb/xcb.h>
#include <xcb/xcbext.h>

#include "desktop/activation.h"
#include "qos_bridge/client_identity.h"
#include "input/cursor.h"
#include "decoration/decoration.h"
#include "desktop/foreign_toplevel.h"
#include "scheduler/scheduler.h"
#include "ipc/ipc.h"
#include "desktop/xwayland.h"

struct qw_xwayland {
	struct qw_server *server;
	struct wlr_xwayland *wlr;
	/* Our own X connection, for X-Resource queries; NULL without one. */
	xcb_connection_t *xcb;
	struct wl_event_source *xcb_source;
	struct wl_list pending; /* qw_xwayland_view.pending_link, awaiting XRes */
	struct wl_list views; /* qw_xwayland_view.xw_link */
	struct wl_listener ready;
	struct wl_listener new_surface;
};

enum pid_source {
	PID_UNKNOWN, /* no answer yet */
	PID_XRES, /* the X server's view of the client socket */
	PID_NET_WM_PID, /* the client's own claim */
	PID_NONE, /* neither could say */
};

struct qw_xwayland_view {
	struct qw_view view;
	struct qw_xwayland *xw;
	struct wlr_xwayland_surface *xsurface;
	struct wlr_scene_node *content; /* the surface tree, while mapped */
	struct wl_list xw_link;

	enum pid_source pid_source;
	int pidfd; /* the XRes process, held; -1 otherwise */
	unsigned int pid_seq; /* XRes request, while pending */
	struct wl_list pending_link; /* qw_xwayland.pending, or empty */

	struct wl_listener destroy;
	struct wl_listener request_configure;
	struct wl_listener request_move;
	struct wl_listener request_resize;
	struct wl_listener request_minimize;
	struct wl_listener request_maximize;
	struct wl_listener request_fullscreen;
	struct wl_listener request_activate;
	struct wl_listener set_hints;
	struct wl_listener map;
	struct wl_listener unmap;
	struct wl_listener set_title;
	struct wl_listener set_class;
	struct wl_listener set_decorations;
	struct wl_listener set_override_redirect;
	struct wl_listener commit; /* on the wlr_surface, while mapped */
};

/* An override-redirect window: a menu, tooltip or drag icon. */
struct qw_xwayland_unmanaged {
	struct qw_xwayland *xw;
	struct wlr_xwayland_surface *xsurface;
	struct wlr_scene_node *node; /* while mapped */
	struct wl_listener destroy;
	struct wl_listener request_configure;
	struct wl_listener map;
	struct wl_listener unmap;
	struct wl_listener set_geometry;
	struct wl_listener set_override_redirect;
};

static void create_managed(struct qw_xwayland *xw, struct wlr_xwayland_surface *xsurface);
static void create_unmanaged(struct qw_xwayland *xw, struct wlr_xwayland_surface *xsurface);
static void handle_unmanaged_map(struct wl_listener *listener, void *data);

static struct qw_xwayland_view *xw_view(const struct qw_view *view) {
	return view->xwayland;
}

/* --- the process behind a window ---------------------------------------- */

static const char *pid_source_name(enum pid_source source) {
	switch (source) {
	case PID_XRES:
		return "X-Resource";
	case PID_NET_WM_PID:
		return "_NET_WM_PID";
	default:
		return "none";
	}
}

static void pid_settled(struct qw_xwayland_view *xv) {
	struct qw_view *view = &xv->view;
	wlr_log(WLR_INFO, "xwayland: window %u (%s) is pid %d from %s", view->id,
			xv->xsurface->class ? xv->xsurface->class : "?", (int)xwayland_view_pid(view),
			pid_source_name(xv->pid_source));
	if (view->mapped) {
		view_apply_rules(view);
		ipc_notify_window(view->server, view, "changed");
	}
}

/* XRes could not say: the client's own _NET_WM_PID, read when asked. */
static void pid_fall_back(struct qw_xwayland_view *xv) {
	xv->pid_source = PID_NET_WM_PID;
	if (xv->view.mapped) {
		pid_settled(xv);
	}
}

static void pid_from_xres(struct qw_xwayland_view *xv, xcb_res_query_client_ids_reply_t *reply) {
	pid_t pid = -1;
	xcb_res_client_id_value_iterator_t it = xcb_res_query_client_ids_ids_iterator(reply);
	for (; it.rem; xcb_res_client_id_value_next(&it)) {
		if ((it.data->spec.mask & XCB_RES_CLIENT_ID_MASK_LOCAL_CLIENT_PID) &&
				xcb_res_client_id_value_value_length(it.data) == 1) {
			pid = (pid_t)*xcb_res_client_id_value_value(it.data);
		}
	}
	/* The window exists, so its client is still connected: the pid is
	 * that live process, and the pidfd keeps naming it from now on. */
	int fd = pid > 0 ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
	if (fd < 0) {
		pid_fall_back(xv);
		return;
	}
	xv->pidfd = fd;
	xv->pid_source = PID_XRES;
	pid_settled(xv);
}

static void pending_remove(struct qw_xwayland_view *xv) {
	wl_list_remove(&xv->pending_link);
	wl_list_init(&xv->pending_link);
}

static void xcb_close(struct qw_xwayland *xw) {
	if (xw->xcb_source) {
		wl_event_source_remove(xw->xcb_source);
		xw->xcb_source = NULL;
	}
	if (xw->xcb) {
		xcb_disconnect(xw->xcb);
		xw->xcb = NULL;
	}
	struct qw_xwayland_view *xv, *tmp;
	wl_list_for_each_safe(xv, tmp, &xw->pending, pending_link) {
		pending_remove(xv);
		pid_fall_back(xv);
	}
}

static int handle_xcb_readable(int fd, uint32_t mask, void *data) {
	struct qw_xwayland *xw = data;
	xcb_generic_event_t *event;
	while ((event = xcb_poll_for_event(xw->xcb))) {
		free(event); /* we select no events */
	}
	struct qw_xwayland_view *xv, *tmp;
	wl_list_for_each_safe(xv, tmp, &xw->pending, pending_link) {
		void *reply = NULL;
		xcb_generic_error_t *error = NULL;
		if (!xcb_poll_for_reply(xw->xcb, xv->pid_seq, &reply, &error)) {
			continue;
		}
		pending_remove(xv);
		if (reply) {
			pid_from_xres(xv, reply);
		} else {
			pid_fall_back(xv);
		}
		free(reply);
		free(error);
	}
	if ((mask & (WL_EVENT_HANGUP | WL_EVENT_ERROR)) || xcb_connection_has_error(xw->xcb)) {
		wlr_log(WLR_ERROR, "xwayland: lost our X connection; pids from _NET_WM_PID now");
		xcb_close(xw);
	}
	return 0;
}

static void query_pid(struct qw_xwayland_view *xv) {
	struct qw_xwayland *xw = xv->xw;
	if (!xw->xcb) {
		pid_fall_back(xv);
		return;
	}
	xcb_res_client_id_spec_t spec = {
		.client = xv->xsurface->window_id,
		.mask = XCB_RES_CLIENT_ID_MASK_LOCAL_CLIENT_PID,
	};
	xcb_res_query_client_ids_cookie_t cookie = xcb_res_query_client_ids(xw->xcb, 1, &spec);
	xcb_flush(xw->xcb);
	xv->pid_seq = cookie.sequence;
	wl_list_insert(xw->pending.prev, &xv->pending_link);
}

/* Our X connection, made once the X server is up. Asking synchronously here
 * is safe: wlroots' window manager has just done the same. */
static void xcb_open(struct qw_xwayland *xw) {
	xw->xcb = xcb_connect(xw->wlr->display_name, NULL);
	if (xcb_connection_has_error(xw->xcb)) {
		wlr_log(WLR_ERROR, "xwayland: cannot connect to %s; pids from _NET_WM_PID",
				xw->wlr->display_name);
		xcb_disconnect(xw->xcb);
		xw->xcb = NULL;
		return;
	}
	const xcb_query_extension_reply_t *ext = xcb_get_extension_data(xw->xcb, &xcb_res_id);
	xcb_res_query_version_reply_t *version = ext && ext->present
			? xcb_res_query_version_reply(xw->xcb, xcb_res_query_version(xw->xcb, 1, 2), NULL)
			: NULL;
	bool usable = version &&
			(version->server_major > 1 ||
					(version->server_major == 1 && version->server_minor >= 2));
	free(version);
	if (!usable) {
		wlr_log(WLR_ERROR,
				"xwayland: the X server has no X-Resource 1.2; pids from "
				"_NET_WM_PID");
		xcb_disconnect(xw->xcb);
		xw->xcb = NULL;
		return;
	}
	xw->xcb_source = wl_event_loop_add_fd(xw->server->event_loop, xcb_get_file_descriptor(xw->xcb),
			WL_EVENT_READABLE, handle_xcb_readable, xw);
	if (!xw->xcb_source) {
		xcb_close(xw);
	}
}

pid_t xwayland_view_pid(const struct qw_view *view) {
	const struct qw_xwayland_view *xv = xw_view(view);
	switch (xv->pid_source) {
	case PID_XRES:
		return pidfd_get_pid(xv->pidfd);
	case PID_NET_WM_PID:
		return xv->xsurface->pid > 0 ? xv->xsurface->pid : -1;
	default:
		return -1;
	}
}

/* --- managed windows ------------------------------------------------------ */

const char *xwayland_view_title(const struct qw_view *view) {
	return xw_view(view)->xsurface->title;
}

const char *xwayland_view_app_id(const struct qw_view *view) {
	return xw_view(view)->xsurface->class;
}

struct wlr_surface *xwayland_view_surface(const struct qw_view *view) {
	return xw_view(view)->xsurface->surface;
}

void xwayland_view_ping(struct qw_view *view) {
	wlr_xwayland_surface_ping(xw_view(view)->xsurface);
}

void xwayland_view_close(struct qw_view *view) {
	wlr_xwayland_surface_close(xw_view(view)->xsurface);
}

void xwayland_view_configure(struct qw_view *view) {
	struct wlr_xwayland_surface *xsurface = xw_view(view)->xsurface;
	int width = view->want_width > 0 ? view->want_width : view->width;
	int height = view->want_height > 0 ? view->want_height : view->height;
	if (width > 0 && height > 0) {
		wlr_xwayland_surface_configure(xsurface, view->x, view->y, width, height);
	}
	if (!view->mapped) {
		return;
	}
	wlr_xwayland_surface_set_maximized(xsurface, view->maximized);
	wlr_xwayland_surface_set_fullscreen(xsurface, view->fullscreen);
	/* The Wayland keyboard focus is view_focus()'s; X needs its own. */
	bool focused = view->deco.focused && !view->minimized;
	wlr_xwayland_surface_activate(xsurface, focused);
	if (focused) {
		wlr_xwayland_surface_restack(xsurface, NULL, XCB_STACK_MODE_ABOVE);
	}
}

static void update_client_side(struct qw_xwayland_view *xv) {
	/* _MOTIF_WM_HINTS asking for no title is a window that draws its own. */
	bool csd = xv->xsurface->decorations != WLR_XWAYLAND_SURFACE_DECORATIONS_ALL;
	decoration_set_client_side(&xv->view.deco, &xv->view, csd);
}

static void handle_commit(struct wl_listener *listener, void *data) {
	struct qw_xwayland_view *xv = wl_container_of(listener, xv, commit);
	struct wlr_surface *surface = xv->xsurface->surface;
	view_update_size(&xv->view, surface->current.width, surface->current.height);
}

static void handle_map(struct wl_listener *listener, void *data) {
	struct qw_xwayland_view *xv = wl_container_of(listener, xv, map);
	struct qw_view *view = &xv->view;
	struct wlr_xwayland_surface *xsurface = xv->xsurface;
	xv->content = wlr_scene_subsurface_tree_create(view->surface_node, xsurface->surface);
	if (!xv->content) {
		wlr_log(WLR_ERROR, "xwayland: no scene node for window %u", view->id);
		return;
	}
	xv->commit.notify = handle_commit;
	wl_signal_add(&xsurface->surface->events.commit, &xv->commit);
	view->width = xsurface->width;
	view->height = xsurface->height;
	update_client_side(xv);
	view_map(view, xsurface->fullscreen, xsurface->maximized_horz && xsurface->maximized_vert);
	/* view_map placed it; the X window must know where it is. */
	xwayland_view_configure(view);
	if (xv->pid_source == PID_NET_WM_PID) {
		pid_settled(xv);
	}
}

static void handle_unmap(struct wl_listener *listener, void *data) {
	struct qw_xwayland_view *xv = wl_container_of(listener, xv, unmap);
	if (!xv->content) {
		return;
	}
	view_unmap(&xv->view);
	wl_list_remove(&xv->commit.link);
	wlr_scene_node_destroy(xv->content);
	xv->content = NULL;
}

static void handle_request_configure(struct wl_listener *listener, void *data) {
	struct qw_xwayland_view *xv = wl_container_of(listener, xv, request_configure);
	struct wlr_xwayland_surface_configure_event *event = data;
	struct qw_view *view = &xv->view;
	if (!view->mapped) {
		/* Until it maps, it may be where and as big as it likes. */
		wlr_xwayland_surface_configure(xv->xsurface, event->x, event->y, event->width,
				event->height);
		return;
	}
	if (view->maximized || view->fullscreen) {
		xwayland_view_configure(view);
		return;
	}
	/* A new size, granted; the position stays ours. */
	view_set_geometry(view, view->x, view->y, event->width, event->height);
}

static void handle_request_move(struct wl_listener *listener, void *data) {
	struct qw_xwayland_view *xv = wl_container_of(listener, xv, request_move);
	if (xv->view.mapped && xv->view.server->pointer.mode == QW_CURSOR_PASSTHROUGH) {
		view_begin_interactive(&xv->view, QW_CURSOR_MOVE, 0);
	}
}

static void handle_request_resize(struct wl_listener *listener, void *data) {
	struct qw_xwayland_view *xv = wl_container_of(listener, xv, request_resize);
	struct wlr_xwayland_resize_event *event = data;
	if (xv->view.mapped && xv->view.server->pointer.mode == QW_CURSOR_PASSTHROUGH) {
		view_begin_interactive(&xv->view, QW_CURSOR_RESIZE, event->edges);
	}
}

static void handle_request_minimize(struct wl_listener *listener, void *data) {
	struct qw_xwayland_view *xv = wl_container_of(listener, xv, request_minimize);
	struct wlr_xwayland_minimize_event *event = data;
	view_set_minimized(&xv->view, event->minimize);
}

static void handle_request_maximize(struct wl_listener *listener, void *data) {
	struct qw_xwayland_view *xv = wl_container_of(listener, xv, request_maximize);
	struct wlr_xwayland_surface *xsurface = xv->xsurface;
	if (xv->view.mapped) {
		view_set_maximized(&xv->view, xsurface->maximized_horz && xsurface->maximized_vert);
	}
}

static void handle_request_fullscreen(struct wl_listener *listener, void *data) {
	struct qw_xwayland_view *xv = wl_container_of(listener, xv, request_fullscreen);
	if (xv->view.mapped) {
		view_set_fullscreen(&xv->view, xv->xsurface->fullscreen);
	}
}

static void handle_request_activate(struct wl_listener *listener, void *data) {
	struct qw_xwayland_view *xv = wl_container_of(listener, xv, request_activate);
	activation_request_x11(&xv->view);
}

/* The ICCCM urgency hint marks the window; dropping it clears the mark. */
static void handle_set_hints(struct wl_listener *listener, void *data) {
	struct qw_xwayland_view *xv = wl_container_of(listener, xv, set_hints);
	bool urgent = xv->xsurface->hints_urgency != 0;
	if (!urgent || !xv->view.deco.focused) {
		activation_set_urgent(&xv->view, urgent);
	}
}

static void handle_set_title(struct wl_listener *listener, void *data) {
	struct qw_xwayland_view *xv = wl_container_of(listener, xv, set_title);
	struct qw_view *view = &xv->view;
	decoration_update_title(&view->deco, view);
	foreign_toplevel_update_title(view);
	if (view->mapped) {
		ipc_notify_window(view->server, view, "title");
	}
}

static void handle_set_class(struct wl_listener *listener, void *data) {
	struct qw_xwayland_view *xv = wl_container_of(listener, xv, set_class);
	struct qw_view *view = &xv->view;
	if (!view->mapped) {
		return;
	}
	/* app_id= rules match WM_CLASS: they may apply now. */
	view_apply_rules(view);
	foreign_toplevel_update_app_id(view);
	ipc_notify_window(view->server, view, "app_id");
}

static void handle_set_decorations(struct wl_listener *listener, void *data) {
	struct qw_xwayland_view *xv = wl_container_of(listener, xv, set_decorations);
	update_client_side(xv);
}

static void managed_destroy(struct qw_xwayland_view *xv) {
	if (xv->content) {
		handle_unmap(&xv->unmap, NULL);
	}
	wl_list_remove(&xv->destroy.link);
	wl_list_remove(&xv->request_configure.link);
	wl_list_remove(&xv->request_move.link);
	wl_list_remove(&xv->request_resize.link);
	wl_list_remove(&xv->request_minimize.link);
	wl_list_remove(&xv->request_maximize.link);
	wl_list_remove(&xv->request_fullscreen.link);
	wl_list_remove(&xv->request_activate.link);
	wl_list_remove(&xv->set_hints.link);
	wl_list_remove(&xv->map.link);
	wl_list_remove(&xv->unmap.link);
	wl_list_remove(&xv->set_title.link);
	wl_list_remove(&xv->set_class.link);
	wl_list_remove(&xv->set_decorations.link);
	wl_list_remove(&xv->set_override_redirect.link);
	wl_list_remove(&xv->pending_link);
	wl_list_remove(&xv->xw_link);
	if (xv->pidfd >= 0) {
		close(xv->pidfd);
	}
	xv->xsurface->data = NULL;
	view_finish(&xv->view);
	free(xv);
}

static void handle_destroy(struct wl_listener *listener, void *data) {
	struct qw_xwayland_view *xv = wl_container_of(listener, xv, destroy);
	managed_destroy(xv);
}

static void handle_set_override_redirect(struct wl_listener *listener, void *data) {
	struct qw_xwayland_view *xv = wl_container_of(listener, xv, set_override_redirect);
	struct wlr_xwayland_surface *xsurface = xv->xsurface;
	struct qw_xwayland *xw = xv->xw;
	bool mapped = xsurface->mapped;
	if (mapped) {
		handle_unmap(&xv->unmap, NULL);
	}
	managed_destroy(xv);
	create_unmanaged(xw, xsurface);
	struct qw_xwayland_unmanaged *u = xsurface->data;
	if (mapped && u) {
		handle_unmanaged_map(&u->map, NULL);
	}
}

static void create_managed(struct qw_xwayland *xw, struct wlr_xwayland_surface *xsurface) {
	struct qw_xwayland_view *xv = calloc(1, sizeof(*xv));
	if (!xv) {
		wlr_log(WLR_ERROR, "xwayland: out of memory for a window");
		return;
	}
	struct qw_view *view = &xv->view;
	view->xwayland = xv;
	xv->xw = xw;
	xv->xsurface = xsurface;
	xv->pidfd = -1;
	wl_list_init(&xv->pending_link);
	if (!view_init(view, xw->server)) {
		goto err;
	}
	/* The X window's surface exists only while mapped: its tree goes here,
	 * between the frame and the paused overlay. */
	struct wlr_scene_tree *content = wlr_scene_tree_create(&view->tree->node);
	if (!content) {
		view_finish(view);
		goto err;
	}
	view->surface_node = &content->node;
	if (!decoration_init_overlay(&view->deco, view)) {
		view_finish(view);
		goto err;
	}
	xsurface->data = xv;
	wl_list_insert(xw->server->views.prev, &view->link);
	wl_list_insert(&xw->views, &xv->xw_link);

	xv->destroy.notify = handle_destroy;
	wl_signal_add(&xsurface->events.destroy, &xv->destroy);
	xv->request_configure.notify = handle_request_configure;
	wl_signal_add(&xsurface->events.request_configure, &xv->request_configure);
	xv->request_move.notify = handle_request_move;
	wl_signal_add(&xsurface->events.request_move, &xv->request_move);
	xv->request_resize.notify = handle_request_resize;
	wl_signal_add(&xsurface->events.request_resize, &xv->request_resize);
	xv->request_minimize.notify = handle_request_minimize;
	wl_signal_add(&xsurface->events.request_minimize, &xv->request_minimize);
	xv->request_maximize.notify = handle_request_maximize;
	wl_signal_add(&xsurface->events.request_maximize, &xv->request_maximize);
	xv->request_fullscreen.notify = handle_request_fullscreen;
	wl_signal_add(&xsurface->events.request_fullscreen, &xv->request_fullscreen);
	xv->request_activate.notify = handle_request_activate;
	wl_signal_add(&xsurface->events.request_activate, &xv->request_activate);
	xv->set_hints.notify = handle_set_hints;
	wl_signal_add(&xsurface->events.set_hints, &xv->set_hints);
	xv->map.notify = handle_map;
	wl_signal_add(&xsurface->events.map, &xv->map);
	xv->unmap.notify = handle_unmap;
	wl_signal_add(&xsurface->events.unmap, &xv->unmap);
	xv->set_title.notify = handle_set_title;
	wl_signal_add(&xsurface->events.set_title, &xv->set_title);
	xv->set_class.notify = handle_set_class;
	wl_signal_add(&xsurface->events.set_class, &xv->set_class);
	xv->set_decorations.notify = handle_set_decorations;
	wl_signal_add(&xsurface->events.set_decorations, &xv->set_decorations);
	xv->set_override_redirect.notify = handle_set_override_redirect;
	wl_signal_add(&xsurface->events.set_override_redirect, &xv->set_override_redirect);
	query_pid(xv);
	return;

err:
	wlr_log(WLR_ERROR, "xwayland: cannot create the scene nodes of a window");
	free(xv);
}

/* --- override-redirect windows -------------------------------------------- */

static void handle_unmanaged_set_geometry(struct wl_listener *listener, void *data) {
	struct qw_xwayland_unmanaged *u = wl_container_of(listener, u, set_geometry);
	if (u->node) {
		wlr_scene_node_set_position(u->node, u->xsurface->x, u->xsurface->y);
	}
}

static void handle_unmanaged_map(struct wl_listener *listener, void *data) {
	struct qw_xwayland_unmanaged *u = wl_container_of(listener, u, map);
	struct qw_server *server = u->xw->server;
	struct wlr_xwayland_surface *xsurface = u->xsurface;
	u->node = wlr_scene_subsurface_tree_create(&server->trees.unmanaged->node, xsurface->surface);
	if (!u->node) {
		wlr_log(WLR_ERROR, "xwayland: no scene node for an override-redirect window");
		return;
	}
	wlr_scene_node_set_position(u->node, xsurface->x, xsurface->y);
	u->set_geometry.notify = handle_unmanaged_set_geometry;
	wl_signal_add(&xsurface->events.set_geometry, &u->set_geometry);
	if (wlr_xwayland_or_surface_wants_focus(xsurface) && !server->focused_layer) {
		struct wlr_keyboard *kb = wlr_seat_get_keyboard(server->seat);
		wlr_seat_keyboard_notify_enter(server->seat, xsurface->surface, kb ? kb->keycodes : NULL,
				kb ? kb->num_keycodes : 0, kb ? &kb->modifiers : NULL);
	}
	cursor_rebase(server, 0);
}

static void handle_unmanaged_unmap(struct wl_listener *listener, void *data) {
	struct qw_xwayland_unmanaged *u = wl_container_of(listener, u, unmap);
	if (!u->node) {
		return;
	}
	struct qw_server *server = u->xw->server;
	wl_list_remove(&u->set_geometry.link);
	wlr_scene_node_destroy(u->node);
	u->node = NULL;
	if (server->seat->keyboard_state.focused_surface == u->xsurface->surface) {
		/* Back to the window that had it before the menu. */
		wlr_seat_keyboard_notify_clear_focus(server->seat);
		if (!wl_list_empty(&server->views)) {
			struct qw_view *view = wl_container_of(server->views.next, view, link);
			view_focus(view);
		}
	}
	cursor_rebase(server, 0);
}

static void handle_unmanaged_request_configure(struct wl_listener *listener, void *data) {
	struct qw_xwayland_unmanaged *u = wl_container_of(listener, u, request_configure);
	struct wlr_xwayland_surface_configure_event *event = data;
	/* It places itself: that is what override-redirect means. */
	wlr_xwayland_surface_configure(u->xsurface, event->x, event->y, event->width, event->height);
}

static void unmanaged_destroy(struct qw_xwayland_unmanaged *u) {
	if (u->node) {
		handle_unmanaged_unmap(&u->unmap, NULL);
	}
	wl_list_remove(&u->destroy.link);
	wl_list_remove(&u->request_configure.link);
	wl_list_remove(&u->map.link);
	wl_list_remove(&u->unmap.link);
	wl_list_remove(&u->set_override_redirect.link);
	u->xsurface->data = NULL;
	free(u);
}

static void handle_unmanaged_destroy(struct wl_listener *listener, void *data) {
	struct qw_xwayland_unmanaged *u = wl_container_of(listener, u, destroy);
	unmanaged_destroy(u);
}

static void handle_unmanaged_set_override_redirect(struct wl_listener *listener, void *data) {
	struct qw_xwayland_unmanaged *u = wl_container_of(listener, u, set_override_redirect);
	struct wlr_xwayland_surface *xsurface = u->xsurface;
	struct qw_xwayland *xw = u->xw;
	bool mapped = xsurface->mapped;
	unmanaged_destroy(u);
	create_managed(xw, xsurface);
	struct qw_xwayland_view *xv = xsurface->data;
	if (mapped && xv) {
		handle_map(&xv->map, NULL);
	}
}

static void create_unmanaged(struct qw_xwayland *xw, struct wlr_xwayland_surface *xsurface) {
	struct qw_xwayland_unmanaged *u = calloc(1, sizeof(*u));
	if (!u) {
		wlr_log(WLR_ERROR, "xwayland: out of memory for an override-redirect window");
		return;
	}
	u->xw = xw;
	u->xsurface = xsurface;
	xsurface->data = u;
	u->destroy.notify = handle_unmanaged_destroy;
	wl_signal_add(&xsurface->events.destroy, &u->destroy);
	u->request_configure.notify = handle_unmanaged_request_configure;
	wl_signal_add(&xsurface->events.request_configure, &u->request_configure);
	u->map.notify = handle_unmanaged_map;
	wl_signal_add(&xsurface->events.map, &u->map);
	u->unmap.notify = handle_unmanaged_unmap;
	wl_signal_add(&xsurface->events.unmap, &u->unmap);
	u->set_override_redirect.notify = handle_unmanaged_set_override_redirect;
	wl_signal_add(&xsurface->events.set_override_redirect, &u->set_override_redirect);
}

/* --- the X server ---------------------------------------------------------- */

static void handle_new_surface(struct wl_listener *listener, void *data) {
	struct qw_xwayland *xw = wl_container_of(listener, xw, new_surface);
	struct wlr_xwayland_surface *xsurface = data;
	if (xsurface->override_redirect) {
		create_unmanaged(xw, xsurface);
	} else {
		create_managed(xw, xsurface);
	}
}

static void handle_ready(struct wl_listener *listener, void *data) {
	struct qw_xwayland *xw = wl_container_of(listener, xw, ready);
	wlr_log(WLR_INFO, "xwayland: X server ready on %s", xw->wlr->display_name);
	/* wlroots forked it from the compositor: out of the compositor's cgroup. */
	scheduler_children_started(xw->server->scheduler);
	if (!xw->xcb) {
		xcb_open(xw);
	}
}

/* The binary wlroots will run: WLR_XWAYLAND, else Xwayland from PATH (then
 * named to wlroots through WLR_XWAYLAND, so both mean the same file). */
static bool find_binary(char *path, size_t size) {
	const char *env = getenv("WLR_XWAYLAND");
	if (env) {
		snprintf(path, size, "%s", env);
		return access(path, X_OK) == 0;
	}
	const char *search = getenv("PATH");
	char *dirs = strdup(search && *search ? search : "/usr/local/bin:/usr/bin:/bin");
	bool found = false;
	char *save = NULL;
	for (char *dir = dirs ? strtok_r(dirs, ":", &save) : NULL; dir && !found;
			dir = strtok_r(NULL, ":", &save)) {
		snprintf(path, size, "%s/Xwayland", dir);
		found = access(path, X_OK) == 0;
	}
	free(dirs);
	if (!found) {
		snprintf(path, size, "Xwayland (not in PATH)");
		return false;
	}
	setenv("WLR_XWAYLAND", path, true);
	return true;
}

void xwayland_init(struct qw_server *server) {
	enum qw_xwayland_mode mode = server->config.xwayland;
	if (mode == QW_XWAYLAND_DISABLE) {
		/* Children must not reach some other X server by accident. */
		unsetenv("DISPLAY");
		wlr_log(WLR_INFO, "xwayland: disabled by the configuration");
		return;
	}
	char path[4096];
	if (!find_binary(path, sizeof(path))) {
		unsetenv("DISPLAY");
		wlr_log(WLR_ERROR, "xwayland: no Xwayland binary at %s; X11 programs disabled", path);
		return;
	}
	struct qw_xwayland *xw = calloc(1, sizeof(*xw));
	if (!xw) {
		unsetenv("DISPLAY");
		wlr_log(WLR_ERROR, "xwayland: out of memory; X11 programs disabled");
		return;
	}
	xw->server = server;
	wl_list_init(&xw->pending);
	wl_list_init(&xw->views);
	xw->wlr = wlr_xwayland_create(server->wl_display, server->compositor, mode == QW_XWAYLAND_LAZY);
	if (!xw->wlr) {
		free(xw);
		unsetenv("DISPLAY");
		wlr_log(WLR_ERROR, "xwayland: cannot start it; X11 programs disabled");
		return;
	}
	xw->ready.notify = handle_ready;
	wl_signal_add(&xw->wlr->events.ready, &xw->ready);
	xw->new_surface.notify = handle_new_surface;
	wl_signal_add(&xw->wlr->events.new_surface, &xw->new_surface);
	wlr_xwayland_set_seat(xw->wlr, server->seat);
	/* Lazy or not, the X sockets exist now, so children may have DISPLAY. */
	setenv("DISPLAY", xw->wlr->display_name, true);
	server->xwayland = xw;
	wlr_log(WLR_INFO, "xwayland: %s on DISPLAY=%s (%s)", path, xw->wlr->display_name,
			mode == QW_XWAYLAND_LAZY ? "started by the first X client" : "started now");
}

/*
 * wlroots 0.15 frees its X window manager only when the manager's X
 * connection hangs up, never in wlr_xwayland_destroy(): at shutdown the
 * manager, its X surfaces and our views on them would be left behind, and a
 * later hang-up would reach the freed wlr_xwayland. Shutting down the
 * manager's end of that socket (wm_fd[0], which its xcb connection reads)
 * lets its own hang-up handler free it now, with every X surface's destroy
 * signal, while the rest of the server is still whole.
 */
static void destroy_window_manager(struct qw_xwayland *xw) {
	struct wlr_xwayland_server *xserver = xw->wlr->server;
	if (!xw->wlr->xwm || !xserver || xserver->wm_fd[0] < 0) {
		return;
	}
	if (shutdown(xserver->wm_fd[0], SHUT_RDWR) != 0) {
		wlr_log_errno(WLR_ERROR, "xwayland: cannot close the window manager's connection");
		return;
	}
	/* The hang-up is pending at once; a few rounds cover a busy loop. */
	for (int i = 0; i < 100 && xw->wlr->xwm; i++) {
		wl_event_loop_dispatch(xw->server->event_loop, 10);
	}
	if (xw->wlr->xwm) {
		wlr_log(WLR_ERROR, "xwayland: the window manager outlived its connection");
	}
}

void xwayland_finish(struct qw_server *server) {
	struct qw_xwayland *xw = server->xwayland;
	if (!xw) {
		return;
	}
	xcb_close(xw);
	wl_list_remove(&xw->ready.link);
	/* Destroys every X window first, and with them their views. */
	destroy_window_manager(xw);
	wl_list_remove(&xw->new_surface.link);
	wlr_xwayland_destroy(xw->wlr);
	free(xw);
	server->xwayland = NULL;
}
