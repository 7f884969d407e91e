#include <stdlib.h>
#include <wlr/types/wlr_cursor.h>
#include <wlr/types/wlr_pointer.h>
#include <wlr/types/wlr_pointer_gestures_v1.h>
#include <wlr/util/log.h>

#include "input/gestures.h"
#include "desktop/idle.h"
#include "scheduler/scheduler.h"
#include "server.h"

/* The cursor relays every attached pointer's gestures; wlroots sends
 * each to the client that has pointer focus. */
struct qw_gestures {
	struct qw_server *server;
	struct wlr_pointer_gestures_v1 *manager;
	struct wl_listener swipe_begin;
	struct wl_listener swipe_update;
	struct wl_listener swipe_end;
	struct wl_listener pinch_begin;
	struct wl_listener pinch_update;
	struct wl_listener pinch_end;
	struct wl_listener hold_begin;
	struct wl_listener hold_end;
};

static void activity(struct qw_gestures *g) {
	scheduler_own(g->server->scheduler);
	idle_notify_activity(g->server);
}

static void handle_swipe_begin(struct wl_listener *listener, void *data) {
	struct qw_gestures *g = wl_container_of(listener, g, swipe_begin);
	struct wlr_event_pointer_swipe_begin *event = data;
	activity(g);
	wlr_pointer_gestures_v1_send_swipe_begin(g->manager, g->server->seat, event->time_msec,
			event->fingers);
}

static void handle_swipe_update(struct wl_listener *listener, void *data) {
	struct qw_gestures *g = wl_container_of(listener, g, swipe_update);
	struct wlr_event_pointer_swipe_update *event = data;
	activity(g);
	wlr_pointer_gestures_v1_send_swipe_update(g->manager, g->server->seat, event->time_msec,
			event->dx, event->dy);
}

static void handle_swipe_end(struct wl_listener *listener, void *data) {
	struct qw_gestures *g = wl_container_of(listener, g, swipe_end);
	struct wlr_event_pointer_swipe_end *event = data;
	activity(g);
	wlr_pointer_gestures_v1_send_swipe_end(g->manager, g->server->seat, event->time_msec,
			event->cancelled);
}

static void handle_pinch_begin(struct wl_listener *listener, void *data) {
	struct qw_gestures *g = wl_container_of(listener, g, pinch_begin);
	struct wlr_event_pointer_pinch_begin *event = data;
	activity(g);
	wlr_pointer_gestures_v1_send_pinch_begin(g->manager, g->server->seat, event->time_msec,
			event->fingers);
}

static void handle_pinch_update(struct wl_listener *listener, void *data) {
	struct qw_gestures *g = wl_container_of(listener, g, pinch_update);
	struct wlr_event_pointer_pinch_update *event = data;
	activity(g);
	wlr_pointer_gestures_v1_send_pinch_update(g->manager, g->server->seat, event->time_msec,
			event->dx, event->dy, event->scale, event->rotation);
}

static void handle_pinch_end(struct wl_listener *listener, void *data) {
	struct qw_gestures *g = wl_container_of(listener, g, pinch_end);
	struct wlr_event_pointer_pinch_end *event = data;
	activity(g);
	wlr_pointer_gestures_v1_send_pinch_end(g->manager, g->server->seat, event->time_msec,
			event->cancelled);
}

static void handle_hold_begin(struct wl_listener *listener, void *data) {
	struct qw_gestures *g = wl_container_of(listener, g, hold_begin);
	struct wlr_event_pointer_hold_begin *event = data;
	activity(g);
	wlr_pointer_gestures_v1_send_hold_begin(g->manager, g->server->seat, event->time_msec,
			event->fingers);
}

static void handle_hold_end(struct wl_listener *listener, void *data) {
	struct qw_gestures *g = wl_container_of(listener, g, hold_end);
	struct wlr_event_pointer_hold_end *event = data;
	activity(g);
	wlr_pointer_gestures_v1_send_hold_end(g->manager, g->server->seat, event->time_msec,
			event->cancelled);
}

bool gestures_init(struct qw_server *server) {
	struct qw_gestures *g = calloc(1, sizeof(*g));
	if (!g) {
		wlr_log(WLR_ERROR, "out of memory for pointer gestures");
		return false;
	}
	g->server = server;
	g->manager = wlr_pointer_gestures_v1_create(server->wl_display);
	if (!g->manager) {
		wlr_log(WLR_ERROR, "failed to create the zwp_pointer_gestures_v1 global");
		free(g);
		return false;
	}
	struct wlr_cursor *cursor = server->cursor;
	g->swipe_begin.notify = handle_swipe_begin;
	wl_signal_add(&cursor->events.swipe_begin, &g->swipe_begin);
	g->swipe_update.notify = handle_swipe_update;
	wl_signal_add(&cursor->events.swipe_update, &g->swipe_update);
	g->swipe_end.notify = handle_swipe_end;
	wl_signal_add(&cursor->events.swipe_end, &g->swipe_end);
	g->pinch_begin.notify = handle_pinch_begin;
	wl_signal_add(&cursor->events.pinch_begin, &g->pinch_begin);
	g->pinch_update.notify = handle_pinch_update;
	wl_signal_add(&cursor->events.pinch_update, &g->pinch_update);
	g->pinch_end.notify = handle_pinch_end;
	wl_signal_add(&cursor->events.pinch_end, &g->pinch_end);
	g->hold_begin.notify = handle_hold_begin;
	wl_signal_add(&cursor->events.hold_begin, &g->hold_begin);
	g->hold_end.notify = handle_hold_end;
	wl_signal_add(&cursor->events.hold_end, &g->hold_end);
	server->gestures = g;
	return true;
}

void gestures_finish(struct qw_server *server) {
	struct qw_gestures *g = server->gestures;
	if (!g) {
		return;
	}
	wl_list_remove(&g->swipe_begin.link);
	wl_list_remove(&g->swipe_update.link);
	wl_list_remove(&g->swipe_end.link);
	wl_list_remove(&g->pinch_begin.link);
	wl_list_remove(&g->pinch_update.link);
	wl_list_remove(&g->pinch_end.link);
	wl_list_remove(&g->hold_begin.link);
	wl_list_remove(&g->hold_end.link);
	free(g);
	server->gestures = NULL;
}
