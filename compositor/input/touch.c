#include <stdlib.h>
#include <wlr/types/wlr_cursor.h>
#include <wlr/types/wlr_input_device.h>
#include <wlr/types/wlr_seat.h>
#include <wlr/types/wlr_touch.h>
#include <wlr/util/log.h>

#include "input/cursor.h"
#include "scheduler/scheduler.h"
#include "input/seat.h"
#include "server.h"
#include "input/touch.h"
#include "desktop/view.h"

#define MAX_POINTS 16

/*
 * A point that went down on a surface keeps sending to it, with
 * coordinates relative to where the surface was at the touch, so a finger
 * dragged off a window still moves inside that window's space.
 */
struct touch_point {
	int32_t id;
	bool used;
	bool on_surface;
	double origin_x, origin_y; /* the surface's layout position */
	/* Or a titlebar button: it is clicked if the point lifts on it. */
	uint32_t view_id;
	int button;
};

struct qw_touch {
	struct qw_server *server;
	struct wl_list devices; /* touch_device.link */
	struct touch_point points[MAX_POINTS];
};

struct touch_device {
	struct wl_list link;
	struct qw_touch *touch;
	struct wlr_input_device *device;
	struct wl_listener down;
	struct wl_listener up;
	struct wl_listener motion;
	struct wl_listener cancel;
	struct wl_listener frame;
	struct wl_listener destroy;
};

static struct touch_point *find_point(struct qw_touch *touch, int32_t id) {
	for (int i = 0; i < MAX_POINTS; i++) {
		if (touch->points[i].used && touch->points[i].id == id) {
			return &touch->points[i];
		}
	}
	return NULL;
}

static struct touch_point *new_point(struct qw_touch *touch, int32_t id) {
	struct touch_point *point = find_point(touch, id);
	for (int i = 0; !point && i < MAX_POINTS; i++) {
		if (!touch->points[i].used) {
			point = &touch->points[i];
		}
	}
	if (point) {
		*point = (struct touch_point){ .id = id, .used = true, .button = -1 };
	}
	return point;
}

static void to_layout(struct touch_device *td, double x, double y, double *lx, double *ly) {
	wlr_cursor_absolute_to_layout_coords(td->touch->server->cursor, td->device, x, y, lx, ly);
}

static void handle_down(struct wl_listener *listener, void *data) {
	struct touch_device *td = wl_container_of(listener, td, down);
	struct qw_server *server = td->touch->server;
	struct wlr_event_touch_down *event = data;
	scheduler_own(server->scheduler);
	double lx, ly, sx = 0, sy = 0;
	to_layout(td, event->x, event->y, &lx, &ly);
	struct wlr_surface *surface = NULL;
	struct qw_node_desc *desc = NULL;
	struct qw_view *view = view_at(server, lx, ly, &surface, &sx, &sy, &desc);
	struct touch_point *point = new_point(td->touch, event->touch_id);
	if (!point) {
		return; /* more fingers than any screen reports */
	}
	if (view) {
		view_focus(view);
	}
	if (view && view_is_paused(view)) {
		return; /* a frozen client gets no touch, like no click */
	}
	if (surface && wlr_surface_accepts_touch(server->seat, surface)) {
		point->on_surface = true;
		point->origin_x = lx - sx;
		point->origin_y = ly - sy;
		wlr_seat_touch_notify_down(server->seat, surface, event->time_msec, event->touch_id, sx,
				sy);
	} else if (view && desc && desc->type == QW_NODE_BUTTON) {
		point->view_id = view->id;
		point->button = desc->button;
	}
}

static void handle_motion(struct wl_listener *listener, void *data) {
	struct touch_device *td = wl_container_of(listener, td, motion);
	struct qw_server *server = td->touch->server;
	struct wlr_event_touch_motion *event = data;
	scheduler_own(server->scheduler);
	struct touch_point *point = find_point(td->touch, event->touch_id);
	if (!point || !point->on_surface || !wlr_seat_touch_get_point(server->seat, event->touch_id)) {
		return;
	}
	double lx, ly;
	to_layout(td, event->x, event->y, &lx, &ly);
	wlr_seat_touch_notify_motion(server->seat, event->time_msec, event->touch_id,
			lx - point->origin_x, ly - point->origin_y);
}

static void handle_up(struct wl_listener *listener, void *data) {
	struct touch_device *td = wl_container_of(listener, td, up);
	struct qw_server *server = td->touch->server;
	struct wlr_event_touch_up *event = data;
	scheduler_own(server->scheduler);
	struct touch_point *point = find_point(td->touch, event->touch_id);
	if (!point) {
		return;
	}
	point->used = false;
	if (point->on_surface) {
		if (wlr_seat_touch_get_point(server->seat, event->touch_id)) {
			wlr_seat_touch_notify_up(server->seat, event->time_msec, event->touch_id);
		}
		return;
	}
	/* An up event has no position: the tap is where it went down. The
	 * window may have gone meanwhile, so it is looked up again. */
	struct qw_view *view = point->button >= 0 ? view_from_id(server, point->view_id) : NULL;
	if (view) {
		cursor_click_button(view, point->button);
	}
}

static void handle_cancel(struct wl_listener *listener, void *data) {
	struct touch_device *td = wl_container_of(listener, td, cancel);
	struct qw_server *server = td->touch->server;
	struct wlr_event_touch_cancel *event = data;
	scheduler_own(server->scheduler);
	struct touch_point *point = find_point(td->touch, event->touch_id);
	if (!point) {
		return;
	}
	point->used = false;
	struct wlr_touch_point *seat_point = wlr_seat_touch_get_point(server->seat, event->touch_id);
	if (point->on_surface && seat_point && seat_point->surface) {
		wlr_seat_touch_notify_cancel(server->seat, seat_point->surface);
	}
}

static void handle_frame(struct wl_listener *listener, void *data) {
	struct touch_device *td = wl_container_of(listener, td, frame);
	scheduler_own(td->touch->server->scheduler);
	wlr_seat_touch_notify_frame(td->touch->server->seat);
}

static void device_destroy(struct touch_device *td) {
	wl_list_remove(&td->down.link);
	wl_list_remove(&td->up.link);
	wl_list_remove(&td->motion.link);
	wl_list_remove(&td->cancel.link);
	wl_list_remove(&td->frame.link);
	wl_list_remove(&td->destroy.link);
	wl_list_remove(&td->link);
	free(td);
}

static void handle_destroy(struct wl_listener *listener, void *data) {
	struct touch_device *td = wl_container_of(listener, td, destroy);
	struct qw_server *server = td->touch->server;
	device_destroy(td);
	seat_update_capabilities(server);
}

void touch_add_device(struct qw_server *server, struct wlr_input_device *device) {
	struct touch_device *td = calloc(1, sizeof(*td));
	if (!td) {
		wlr_log(WLR_ERROR, "out of memory for touch device %s", device->name);
		return;
	}
	td->touch = server->touch;
	td->device = device;
	td->down.notify = handle_down;
	wl_signal_add(&device->touch->events.down, &td->down);
	td->up.notify = handle_up;
	wl_signal_add(&device->touch->events.up, &td->up);
	td->motion.notify = handle_motion;
	wl_signal_add(&device->touch->events.motion, &td->motion);
	td->cancel.notify = handle_cancel;
	wl_signal_add(&device->touch->events.cancel, &td->cancel);
	td->frame.notify = handle_frame;
	wl_signal_add(&device->touch->events.frame, &td->frame);
	td->destroy.notify = handle_destroy;
	wl_signal_add(&device->events.destroy, &td->destroy);
	wl_list_insert(server->touch->devices.prev, &td->link);
	seat_update_capabilities(server);
}

bool touch_has_devices(struct qw_server *server) {
	return server->touch && !wl_list_empty(&server->touch->devices);
}

bool touch_init(struct qw_server *server) {
	server->touch = calloc(1, sizeof(*server->touch));
	if (!server->touch) {
		wlr_log(WLR_ERROR, "out of memory for touch state");
		return false;
	}
	server->touch->server = server;
	wl_list_init(&server->touch->devices);
	return true;
}

void touch_finish(struct qw_server *server) {
	if (!server->touch) {
		return;
	}
	struct touch_device *td, *tmp;
	wl_list_for_each_safe(td, tmp, &server->touch->devices, link) {
		device_destroy(td);
	}
	free(server->touch);
	server->touch = NULL;
}
