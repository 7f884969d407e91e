#include <stdlib.h>
#include <time.h>
#include <wlr/types/wlr_cursor.h>
#include <wlr/types/wlr_data_device.h>
#include <wlr/types/wlr_scene.h>
#include <wlr/types/wlr_seat.h>
#include <wlr/types/wlr_surface.h>
#include <wlr/util/log.h>
#include <wlr/xwayland.h>

#include "input/cursor.h"
#include "input/dnd.h"
#include "desktop/screen_lock.h"
#include "server.h"
#include "desktop/view.h"

struct qw_drag_icon {
	struct qw_dnd *dnd;
	struct wlr_drag_icon *wlr_icon;
	struct wlr_scene_node *node;
	struct wl_listener map;
	struct wl_listener unmap;
	struct wl_listener destroy;
	struct wl_listener surface_commit;
};

struct qw_dnd {
	struct qw_server *server;
	struct wlr_scene_tree *tree; /* drag icons, above the windows */
	struct qw_drag_icon *icon; /* the icon of the drag under way, if any */
	struct wl_event_source *rebase_idle;
	struct wl_listener request_start_drag;
	struct wl_listener start_drag;
	struct wl_listener drag_destroy;
	struct wl_listener drag_drop;
	struct wl_listener cursor_motion;
	struct wl_listener cursor_motion_absolute;
};

static void icon_update_position(struct qw_drag_icon *icon) {
	struct wlr_cursor *cursor = icon->dnd->server->cursor;
	struct wlr_surface *surface = icon->wlr_icon->surface;
	wlr_scene_node_set_position(icon->node, (int)cursor->x + surface->sx,
			(int)cursor->y + surface->sy);
}

static void icon_destroy(struct qw_drag_icon *icon) {
	if (!icon) {
		return;
	}
	wl_list_remove(&icon->map.link);
	wl_list_remove(&icon->unmap.link);
	wl_list_remove(&icon->destroy.link);
	wl_list_remove(&icon->surface_commit.link);
	wlr_scene_node_destroy(icon->node);
	icon->dnd->icon = NULL;
	free(icon);
}

static void handle_icon_map(struct wl_listener *listener, void *data) {
	struct qw_drag_icon *icon = wl_container_of(listener, icon, map);
	icon_update_position(icon);
	wlr_scene_node_set_enabled(icon->node, true);
}

static void handle_icon_unmap(struct wl_listener *listener, void *data) {
	struct qw_drag_icon *icon = wl_container_of(listener, icon, unmap);
	wlr_scene_node_set_enabled(icon->node, false);
}

static void handle_icon_destroy(struct wl_listener *listener, void *data) {
	struct qw_drag_icon *icon = wl_container_of(listener, icon, destroy);
	icon_destroy(icon);
}

/* The client may move the icon's hotspot with an attach offset. */
static void handle_icon_surface_commit(struct wl_listener *listener, void *data) {
	struct qw_drag_icon *icon = wl_container_of(listener, icon, surface_commit);
	icon_update_position(icon);
}

static void icon_create(struct qw_dnd *dnd, struct wlr_drag_icon *wlr_icon) {
	struct qw_drag_icon *icon = calloc(1, sizeof(*icon));
	if (!icon) {
		wlr_log(WLR_ERROR, "drag: out of memory for the drag icon; dragging without it");
		return;
	}
	icon->node = wlr_scene_subsurface_tree_create(&dnd->tree->node, wlr_icon->surface);
	if (!icon->node) {
		wlr_log(WLR_ERROR, "drag: out of memory for the drag icon; dragging without it");
		free(icon);
		return;
	}
	icon->dnd = dnd;
	icon->wlr_icon = wlr_icon;
	icon->map.notify = handle_icon_map;
	wl_signal_add(&wlr_icon->events.map, &icon->map);
	icon->unmap.notify = handle_icon_unmap;
	wl_signal_add(&wlr_icon->events.unmap, &icon->unmap);
	icon->destroy.notify = handle_icon_destroy;
	wl_signal_add(&wlr_icon->events.destroy, &icon->destroy);
	icon->surface_commit.notify = handle_icon_surface_commit;
	wl_signal_add(&wlr_icon->surface->events.commit, &icon->surface_commit);
	wlr_scene_node_set_enabled(icon->node, wlr_icon->mapped);
	icon_update_position(icon);
	icon_destroy(dnd->icon);
	dnd->icon = icon;
	wlr_scene_node_raise_to_top(&dnd->tree->node);
}

static void handle_request_start_drag(struct wl_listener *listener, void *data) {
	struct qw_dnd *dnd = wl_container_of(listener, dnd, request_start_drag);
	struct wlr_seat_request_start_drag_event *event = data;
	struct wlr_seat *seat = dnd->server->seat;
	if (screen_lock_active(dnd->server)) {
		wlr_log(WLR_INFO, "drag refused: the screen is locked");
	} else if (wlr_seat_validate_pointer_grab_serial(seat, event->origin, event->serial)) {
		wlr_seat_start_pointer_drag(seat, event->drag, event->serial);
		return;
	} else {
		struct wlr_touch_point *point;
		if (wlr_seat_validate_touch_grab_serial(seat, event->origin, event->serial, &point)) {
			wlr_seat_start_touch_drag(seat, event->drag, event->serial, point);
			return;
		}
		wlr_log(WLR_INFO,
				"drag refused: serial %u is not a button or touch point the surface holds",
				event->serial);
	}
	/* Destroying the source cancels the drag for its client. */
	wlr_data_source_destroy(event->drag->source);
}

static void handle_rebase_idle(void *data) {
	struct qw_dnd *dnd = data;
	struct qw_server *server = dnd->server;
	dnd->rebase_idle = NULL;
	/* The drag held the keyboard: the window focused meanwhile gets it now. */
	struct qw_view *view;
	wl_list_for_each(view, &server->views, link) {
		if (view->mapped && view->deco.focused) {
			view_focus(view);
		}
		break;
	}
	cursor_rebase(server, 0);
}

/*
 * wlroots 0.15 lets an X11 window read a drop (XdndSelection) only while an
 * X11 window has the focus, so a drop on one focuses it, before the X11
 * window manager (a later listener) sends XdndDrop.
 */
static void handle_drag_drop(struct wl_listener *listener, void *data) {
	struct qw_dnd *dnd = wl_container_of(listener, dnd, drag_drop);
	struct wlr_drag_drop_event *event = data;
	struct wlr_surface *focus = event->drag->focus;
	if (!focus || !wlr_surface_is_xwayland_surface(focus)) {
		return;
	}
	struct qw_server *server = dnd->server;
	struct wlr_surface *surface;
	struct qw_node_desc *desc;
	double sx, sy;
	struct qw_view *view =
			view_at(server, server->cursor->x, server->cursor->y, &surface, &sx, &sy, &desc);
	if (view && view->xwayland && surface == focus) {
		view_focus(view);
	}
}

/* Once the drag is over, the surface under the pointer gets it back. */
static void handle_drag_destroy(struct wl_listener *listener, void *data) {
	struct qw_dnd *dnd = wl_container_of(listener, dnd, drag_destroy);
	wl_list_remove(&dnd->drag_destroy.link);
	wl_list_init(&dnd->drag_destroy.link);
	wl_list_remove(&dnd->drag_drop.link);
	wl_list_init(&dnd->drag_drop.link);
	if (!dnd->rebase_idle) {
		dnd->rebase_idle = wl_event_loop_add_idle(dnd->server->event_loop, handle_rebase_idle, dnd);
	}
}

static void handle_start_drag(struct wl_listener *listener, void *data) {
	struct qw_dnd *dnd = wl_container_of(listener, dnd, start_drag);
	struct wlr_drag *drag = data;
	wlr_log(WLR_DEBUG, "drag started");
	if (drag->icon) {
		icon_create(dnd, drag->icon);
	}
	wl_list_remove(&dnd->drag_destroy.link);
	dnd->drag_destroy.notify = handle_drag_destroy;
	wl_signal_add(&drag->events.destroy, &dnd->drag_destroy);
	wl_list_remove(&dnd->drag_drop.link);
	dnd->drag_drop.notify = handle_drag_drop;
	wl_signal_add(&drag->events.drop, &dnd->drag_drop);
	if (drag->grab_type == WLR_DRAG_GRAB_KEYBOARD_POINTER) {
		/*
		 * Starting the drag cleared the pointer focus, and the drag only
		 * enters a surface on the next motion. A client slow to ask for
		 * the drag (a busy machine) may ask once the pointer already
		 * rests over the target: enter it now, as if the pointer moved.
		 */
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		cursor_rebase(dnd->server, (uint32_t)(now.tv_sec * 1000 + now.tv_nsec / 1000000));
	}
}

static void handle_cursor_motion(struct wl_listener *listener, void *data) {
	struct qw_dnd *dnd = wl_container_of(listener, dnd, cursor_motion);
	if (dnd->icon) {
		icon_update_position(dnd->icon);
	}
}

static void handle_cursor_motion_absolute(struct wl_listener *listener, void *data) {
	struct qw_dnd *dnd = wl_container_of(listener, dnd, cursor_motion_absolute);
	if (dnd->icon) {
		icon_update_position(dnd->icon);
	}
}

struct wlr_scene_node *dnd_scene_node_at(struct qw_server *server, double lx, double ly, double *nx,
		double *ny) {
	struct qw_dnd *dnd = server->dnd;
	bool hide = dnd && dnd->icon && dnd->icon->node->state.enabled;
	if (hide) {
		wlr_scene_node_set_enabled(dnd->icon->node, false);
	}
	struct wlr_scene_node *node = wlr_scene_node_at(&server->scene->node, lx, ly, nx, ny);
	if (hide) {
		wlr_scene_node_set_enabled(dnd->icon->node, true);
	}
	return node;
}

bool dnd_init(struct qw_server *server) {
	struct qw_dnd *dnd = calloc(1, sizeof(*dnd));
	if (!dnd) {
		wlr_log(WLR_ERROR, "drag and drop: out of memory");
		return false;
	}
	dnd->server = server;
	dnd->tree = wlr_scene_tree_create(&server->scene->node);
	if (!dnd->tree) {
		wlr_log(WLR_ERROR, "drag and drop: out of memory for the icon tree");
		free(dnd);
		return false;
	}
	dnd->request_start_drag.notify = handle_request_start_drag;
	wl_signal_add(&server->seat->events.request_start_drag, &dnd->request_start_drag);
	dnd->start_drag.notify = handle_start_drag;
	wl_signal_add(&server->seat->events.start_drag, &dnd->start_drag);
	wl_list_init(&dnd->drag_destroy.link);
	wl_list_init(&dnd->drag_drop.link);
	dnd->cursor_motion.notify = handle_cursor_motion;
	wl_signal_add(&server->cursor->events.motion, &dnd->cursor_motion);
	dnd->cursor_motion_absolute.notify = handle_cursor_motion_absolute;
	wl_signal_add(&server->cursor->events.motion_absolute, &dnd->cursor_motion_absolute);
	server->dnd = dnd;
	return true;
}

void dnd_finish(struct qw_server *server) {
	struct qw_dnd *dnd = server->dnd;
	if (!dnd) {
		return;
	}
	icon_destroy(dnd->icon);
	if (dnd->rebase_idle) {
		wl_event_source_remove(dnd->rebase_idle);
	}
	wl_list_remove(&dnd->request_start_drag.link);
	wl_list_remove(&dnd->start_drag.link);
	wl_list_remove(&dnd->drag_destroy.link);
	wl_list_remove(&dnd->drag_drop.link);
	wl_list_remove(&dnd->cursor_motion.link);
	wl_list_remove(&dnd->cursor_motion_absolute.link);
	server->dnd = NULL;
	free(dnd);
}
