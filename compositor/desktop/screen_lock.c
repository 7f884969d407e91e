#include <stdlib.h>
#include <string.h>
#include <wlr/types/wlr_cursor.h>
#include <wlr/types/wlr_input_device.h>
#include <wlr/types/wlr_input_inhibitor.h>
#include <wlr/types/wlr_keyboard.h>
#include <wlr/types/wlr_output_layout.h>
#include <wlr/types/wlr_pointer.h>
#include <wlr/types/wlr_scene.h>
#include <wlr/types/wlr_seat.h>
#include <wlr/types/wlr_surface.h>
#include <wlr/types/wlr_xcursor_manager.h>
#include <wlr/util/log.h>

#include "input/cursor.h"
#include "decoration/reserve_menu.h"
#include "desktop/screen_lock.h"
#include "input/seat.h"
#include "server.h"
#include "desktop/session_lock.h"
#include "desktop/view.h"

struct qw_screen_lock {
	struct qw_server *server;
	/* ext-session-lock: locked, and by whom (NULL once the locker died). */
	bool session_locked;
	struct wl_client *session_client;
	/* wlr-input-inhibitor: the inhibiting client, NULL if none. */
	struct wlr_input_inhibit_manager *inhibit_manager;
	struct wl_client *inhibit_client;

	bool grabbing;
	struct wlr_seat_keyboard_grab keyboard_grab;
	struct wlr_seat_pointer_grab pointer_grab;
	struct wlr_seat_touch_grab touch_grab;

	/* Above every other tree while locked: a blank, then lock surfaces. */
	struct wlr_scene_tree *tree;
	struct wlr_scene_rect *blank;
	struct wlr_scene_tree *surfaces;

	struct wl_listener inhibit_activate;
	struct wl_listener inhibit_deactivate;
	struct wl_listener keyboard_grab_begin;
	struct wl_listener pointer_grab_begin;
	struct wl_listener touch_grab_begin;
	struct wl_listener layout_change;
};

static const float blank_color[4] = { 0.0f, 0.0f, 0.0f, 1.0f };

bool screen_lock_active(struct qw_server *server) {
	struct qw_screen_lock *lock = server->lock;
	return lock && (lock->session_locked || lock->inhibit_client);
}

static struct wl_client *allowed_client(struct qw_screen_lock *lock) {
	return lock->session_locked ? lock->session_client : lock->inhibit_client;
}

static bool client_allowed(struct qw_screen_lock *lock, struct wl_client *client) {
	if (!lock->session_locked && !lock->inhibit_client) {
		return true;
	}
	return client && client == allowed_client(lock);
}

bool screen_lock_surface_allowed(struct qw_server *server, struct wlr_surface *surface) {
	struct qw_screen_lock *lock = server->lock;
	if (!lock || !screen_lock_active(server)) {
		return true;
	}
	return surface && client_allowed(lock, wl_resource_get_client(surface->resource));
}

/* Grabs: focus only for the locker; events only to what has the focus. */

static bool focus_allowed(struct qw_screen_lock *lock, struct wlr_surface *surface) {
	return surface && client_allowed(lock, wl_resource_get_client(surface->resource));
}

static void keyboard_enter(struct wlr_seat_keyboard_grab *grab, struct wlr_surface *surface,
		uint32_t keycodes[], size_t num_keycodes, struct wlr_keyboard_modifiers *modifiers) {
	struct qw_screen_lock *lock = grab->data;
	if (focus_allowed(lock, surface)) {
		wlr_seat_keyboard_enter(grab->seat, surface, keycodes, num_keycodes, modifiers);
	}
}

static void keyboard_clear_focus(struct wlr_seat_keyboard_grab *grab) {
	wlr_seat_keyboard_clear_focus(grab->seat);
}

static void keyboard_key(struct wlr_seat_keyboard_grab *grab, uint32_t time_msec, uint32_t key,
		uint32_t state) {
	struct qw_screen_lock *lock = grab->data;
	if (focus_allowed(lock, grab->seat->keyboard_state.focused_surface)) {
		wlr_seat_keyboard_send_key(grab->seat, time_msec, key, state);
	}
}

static void keyboard_modifiers(struct wlr_seat_keyboard_grab *grab,
		struct wlr_keyboard_modifiers *modifiers) {
	struct qw_screen_lock *lock = grab->data;
	if (focus_allowed(lock, grab->seat->keyboard_state.focused_surface)) {
		wlr_seat_keyboard_send_modifiers(grab->seat, modifiers);
	}
}

static void keyboard_cancel(struct wlr_seat_keyboard_grab *grab) {
	/* Ended by wlroots (seat teardown): nothing of ours to free. */
}

static const struct wlr_keyboard_grab_interface keyboard_grab_impl = {
	.enter = keyboard_enter,
	.clear_focus = keyboard_clear_focus,
	.key = keyboard_key,
	.modifiers = keyboard_modifiers,
	.cancel = keyboard_cancel,
};

static void pointer_enter(struct wlr_seat_pointer_grab *grab, struct wlr_surface *surface,
		double sx, double sy) {
	struct qw_screen_lock *lock = grab->data;
	if (focus_allowed(lock, surface)) {
		wlr_seat_pointer_enter(grab->seat, surface, sx, sy);
	} else {
		wlr_seat_pointer_clear_focus(grab->seat);
	}
}

static void pointer_clear_focus(struct wlr_seat_pointer_grab *grab) {
	wlr_seat_pointer_clear_focus(grab->seat);
}

static void pointer_motion(struct wlr_seat_pointer_grab *grab, uint32_t time_msec, double sx,
		double sy) {
	struct qw_screen_lock *lock = grab->data;
	if (focus_allowed(lock, grab->seat->pointer_state.focused_surface)) {
		wlr_seat_pointer_send_motion(grab->seat, time_msec, sx, sy);
	}
}

static uint32_t pointer_button(struct wlr_seat_pointer_grab *grab, uint32_t time_msec,
		uint32_t button, enum wlr_button_state state) {
	struct qw_screen_lock *lock = grab->data;
	if (!focus_allowed(lock, grab->seat->pointer_state.focused_surface)) {
		return 0;
	}
	return wlr_seat_pointer_send_button(grab->seat, time_msec, button, state);
}

static void pointer_axis(struct wlr_seat_pointer_grab *grab, uint32_t time_msec,
		enum wlr_axis_orientation orientation, double value, int32_t value_discrete,
		enum wlr_axis_source source) {
	struct qw_screen_lock *lock = grab->data;
	if (focus_allowed(lock, grab->seat->pointer_state.focused_surface)) {
		wlr_seat_pointer_send_axis(grab->seat, time_msec, orientation, value, value_discrete,
				source);
	}
}

static void pointer_frame(struct wlr_seat_pointer_grab *grab) {
	struct qw_screen_lock *lock = grab->data;
	if (focus_allowed(lock, grab->seat->pointer_state.focused_surface)) {
		wlr_seat_pointer_send_frame(grab->seat);
	}
}

static void pointer_cancel(struct wlr_seat_pointer_grab *grab) {
	/* Ended by wlroots (seat teardown): nothing of ours to free. */
}

static const struct wlr_pointer_grab_interface pointer_grab_impl = {
	.enter = pointer_enter,
	.clear_focus = pointer_clear_focus,
	.motion = pointer_motion,
	.button = pointer_button,
	.axis = pointer_axis,
	.frame = pointer_frame,
	.cancel = pointer_cancel,
};

static uint32_t touch_down(struct wlr_seat_touch_grab *grab, uint32_t time_msec,
		struct wlr_touch_point *point) {
	struct qw_screen_lock *lock = grab->data;
	if (!focus_allowed(lock, point->surface)) {
		return 0;
	}
	return wlr_seat_touch_send_down(grab->seat, point->surface, time_msec, point->touch_id,
			point->sx, point->sy);
}

static void touch_up(struct wlr_seat_touch_grab *grab, uint32_t time_msec,
		struct wlr_touch_point *point) {
	struct qw_screen_lock *lock = grab->data;
	if (focus_allowed(lock, point->surface)) {
		wlr_seat_touch_send_up(grab->seat, time_msec, point->touch_id);
	}
}

static void touch_motion(struct wlr_seat_touch_grab *grab, uint32_t time_msec,
		struct wlr_touch_point *point) {
	struct qw_screen_lock *lock = grab->data;
	if (focus_allowed(lock, point->surface)) {
		wlr_seat_touch_send_motion(grab->seat, time_msec, point->touch_id, point->sx, point->sy);
	}
}

static void touch_enter(struct wlr_seat_touch_grab *grab, uint32_t time_msec,
		struct wlr_touch_point *point) {
	/* Touch points stay on the surface they went down on. */
}

static void touch_frame(struct wlr_seat_touch_grab *grab) {
	wlr_seat_touch_send_frame(grab->seat);
}

static void touch_cancel(struct wlr_seat_touch_grab *grab) {
	/* Ended by wlroots (seat teardown): nothing of ours to free. */
}

static void touch_wl_cancel(struct wlr_seat_touch_grab *grab, struct wlr_surface *surface) {
	struct qw_screen_lock *lock = grab->data;
	if (focus_allowed(lock, surface)) {
		wlr_seat_touch_send_cancel(grab->seat, surface);
	}
}

static const struct wlr_touch_grab_interface touch_grab_impl = {
	.down = touch_down,
	.up = touch_up,
	.motion = touch_motion,
	.enter = touch_enter,
	.frame = touch_frame,
	.cancel = touch_cancel,
	.wl_cancel = touch_wl_cancel,
};

/*
 * Another module's grab (an xdg popup's, a drag) would take events past
 * ours: while locked, every grab that begins is replaced by ours.
 */
static void handle_keyboard_grab_begin(struct wl_listener *listener, void *data) {
	struct qw_screen_lock *lock = wl_container_of(listener, lock, keyboard_grab_begin);
	if (lock->grabbing && data != &lock->keyboard_grab) {
		wlr_seat_keyboard_start_grab(lock->server->seat, &lock->keyboard_grab);
	}
}

static void handle_pointer_grab_begin(struct wl_listener *listener, void *data) {
	struct qw_screen_lock *lock = wl_container_of(listener, lock, pointer_grab_begin);
	if (lock->grabbing && data != &lock->pointer_grab) {
		wlr_seat_pointer_start_grab(lock->server->seat, &lock->pointer_grab);
	}
}

static void handle_touch_grab_begin(struct wl_listener *listener, void *data) {
	struct qw_screen_lock *lock = wl_container_of(listener, lock, touch_grab_begin);
	if (lock->grabbing && data != &lock->touch_grab) {
		wlr_seat_touch_start_grab(lock->server->seat, &lock->touch_grab);
	}
}

/* The blank covers the whole layout, whatever outputs come and go. */
static void update_blank(struct qw_screen_lock *lock) {
	struct wlr_box *box = wlr_output_layout_get_box(lock->server->output_layout, NULL);
	if (box) {
		wlr_scene_node_set_position(&lock->blank->node, box->x, box->y);
		wlr_scene_rect_set_size(lock->blank, box->width, box->height);
	}
}

static void handle_layout_change(struct wl_listener *listener, void *data) {
	struct qw_screen_lock *lock = wl_container_of(listener, lock, layout_change);
	update_blank(lock);
}

/* The compositor's own pointer modes end: the locker has the pointer. */
static void reset_cursor_mode(struct qw_server *server) {
	if (server->pointer.mode == QW_CURSOR_RESIZE && server->pointer.grabbed_view) {
		view_set_resizing(server->pointer.grabbed_view, false);
	}
	server->pointer.mode = QW_CURSOR_PASSTHROUGH;
	server->pointer.grabbed_view = NULL;
	server->pointer.swallowed_button = 0;
}

static void start_grabs(struct qw_screen_lock *lock) {
	struct qw_server *server = lock->server;
	struct wlr_seat *seat = server->seat;
	if (!lock->grabbing) {
		reserve_menu_close(server);
		reset_cursor_mode(server);
		/* End a drag or popup grab first, so it is cancelled, not orphaned. */
		wlr_seat_pointer_end_grab(seat);
		wlr_seat_keyboard_end_grab(seat);
		wlr_seat_touch_end_grab(seat);
		lock->grabbing = true;
		wlr_seat_keyboard_start_grab(seat, &lock->keyboard_grab);
		wlr_seat_pointer_start_grab(seat, &lock->pointer_grab);
		wlr_seat_touch_start_grab(seat, &lock->touch_grab);
	}
	/* Whoever had the focus before loses it unless it is the locker. */
	if (!focus_allowed(lock, seat->keyboard_state.focused_surface)) {
		wlr_seat_keyboard_clear_focus(seat);
	}
	if (!focus_allowed(lock, seat->pointer_state.focused_surface)) {
		wlr_seat_pointer_clear_focus(seat);
	}
}

static void stop_grabs(struct qw_screen_lock *lock) {
	struct qw_server *server = lock->server;
	if (!lock->grabbing) {
		return;
	}
	lock->grabbing = false;
	struct wlr_seat *seat = server->seat;
	if (seat->keyboard_state.grab == &lock->keyboard_grab) {
		wlr_seat_keyboard_end_grab(seat);
	}
	if (seat->pointer_state.grab == &lock->pointer_grab) {
		wlr_seat_pointer_end_grab(seat);
	}
	if (seat->touch_state.grab == &lock->touch_grab) {
		wlr_seat_touch_end_grab(seat);
	}
	wlr_seat_keyboard_notify_clear_focus(seat);
	/* The window on top gets the keyboard back, and the pointer its focus. */
	struct qw_view *view;
	wl_list_for_each(view, &server->views, link) {
		if (view->mapped && !view->minimized) {
			view_focus(view);
			break;
		}
	}
	cursor_rebase(server, 0);
}

static void update(struct qw_screen_lock *lock) {
	bool session = lock->session_locked;
	wlr_scene_node_set_enabled(&lock->tree->node, session);
	if (session) {
		update_blank(lock);
		wlr_scene_node_raise_to_top(&lock->tree->node);
	}
	if (screen_lock_active(lock->server)) {
		start_grabs(lock);
	} else {
		stop_grabs(lock);
	}
}

void screen_lock_session_begin(struct qw_server *server, struct wl_client *client) {
	struct qw_screen_lock *lock = server->lock;
	wlr_log(WLR_INFO, "session locked by client %p", (void *)client);
	lock->session_locked = true;
	lock->session_client = client;
	wlr_seat_keyboard_notify_clear_focus(server->seat);
	update(lock);
}

void screen_lock_session_abandon(struct qw_server *server) {
	struct qw_screen_lock *lock = server->lock;
	wlr_log(WLR_ERROR, "session locker gone without unlocking: the session stays locked");
	lock->session_client = NULL;
	wlr_seat_keyboard_notify_clear_focus(server->seat);
	wlr_seat_pointer_notify_clear_focus(server->seat);
	update(lock);
}

void screen_lock_session_end(struct qw_server *server) {
	struct qw_screen_lock *lock = server->lock;
	wlr_log(WLR_INFO, "session unlocked");
	lock->session_locked = false;
	lock->session_client = NULL;
	update(lock);
}

struct wlr_scene_node *screen_lock_tree(struct qw_server *server) {
	return &server->lock->surfaces->node;
}

void screen_lock_focus(struct qw_server *server, struct wlr_surface *surface) {
	struct wlr_seat *seat = server->seat;
	struct wlr_surface *focused = seat->keyboard_state.focused_surface;
	if (focused && focus_allowed(server->lock, focused)) {
		return;
	}
	struct wlr_keyboard *kb = wlr_seat_get_keyboard(seat);
	wlr_seat_keyboard_notify_enter(seat, surface, kb ? kb->keycodes : NULL,
			kb ? kb->num_keycodes : 0, kb ? &kb->modifiers : NULL);
}

static void handle_inhibit_activate(struct wl_listener *listener, void *data) {
	struct qw_screen_lock *lock = wl_container_of(listener, lock, inhibit_activate);
	lock->inhibit_client = lock->inhibit_manager->active_client;
	wlr_log(WLR_INFO, "input inhibited for all clients but %p", (void *)lock->inhibit_client);
	update(lock);
}

static void handle_inhibit_deactivate(struct wl_listener *listener, void *data) {
	struct qw_screen_lock *lock = wl_container_of(listener, lock, inhibit_deactivate);
	wlr_log(WLR_INFO, "input inhibitor released");
	lock->inhibit_client = NULL;
	update(lock);
}

/* Input while locked: the surface under the cursor if the locker's, else nothing. */

bool screen_lock_pointer_motion(struct qw_server *server, uint32_t time_msec) {
	if (!screen_lock_active(server)) {
		return false;
	}
	double sx, sy;
	struct wlr_scene_node *node =
			wlr_scene_node_at(&server->scene->node, server->cursor->x, server->cursor->y, &sx, &sy);
	struct wlr_surface *surface = NULL;
	if (node && node->type == WLR_SCENE_NODE_SURFACE) {
		surface = wlr_scene_surface_from_node(node)->surface;
	}
	if (surface && screen_lock_surface_allowed(server, surface)) {
		wlr_seat_pointer_notify_enter(server->seat, surface, sx, sy);
		wlr_seat_pointer_notify_motion(server->seat, time_msec, sx, sy);
		return true;
	}
	wlr_seat_pointer_notify_clear_focus(server->seat);
	if (!server->pointer.image || strcmp(server->pointer.image, "left_ptr") != 0) {
		wlr_xcursor_manager_set_cursor_image(server->xcursor_manager, "left_ptr", server->cursor);
		server->pointer.image = "left_ptr";
	}
	return true;
}

bool screen_lock_pointer_button(struct qw_server *server, struct wlr_event_pointer_button *event) {
	if (!screen_lock_active(server)) {
		return false;
	}
	struct wlr_surface *focused = server->seat->pointer_state.focused_surface;
	if (focused && event->state == WLR_BUTTON_PRESSED) {
		/* A click moves the keyboard to the lock surface clicked. */
		struct wlr_keyboard *kb = wlr_seat_get_keyboard(server->seat);
		wlr_seat_keyboard_notify_enter(server->seat, focused, kb ? kb->keycodes : NULL,
				kb ? kb->num_keycodes : 0, kb ? &kb->modifiers : NULL);
	}
	wlr_seat_pointer_notify_button(server->seat, event->time_msec, event->button, event->state);
	return true;
}

bool screen_lock_key(struct qw_server *server, struct qw_keyboard *keyboard,
		struct wlr_event_keyboard_key *event) {
	if (!screen_lock_active(server)) {
		return false;
	}
	/* No bindings while locked: the key goes to the locker, if anywhere. */
	if (keyboard->device->keyboard->keymap) {
		wlr_seat_set_keyboard(server->seat, keyboard->device);
		wlr_seat_keyboard_notify_key(server->seat, event->time_msec, event->keycode, event->state);
	}
	return true;
}

bool screen_lock_init(struct qw_server *server) {
	struct qw_screen_lock *lock = calloc(1, sizeof(*lock));
	if (!lock) {
		wlr_log(WLR_ERROR, "screen lock: out of memory");
		return false;
	}
	lock->server = server;
	lock->keyboard_grab = (struct wlr_seat_keyboard_grab){
		.interface = &keyboard_grab_impl,
		.data = lock,
	};
	lock->pointer_grab = (struct wlr_seat_pointer_grab){
		.interface = &pointer_grab_impl,
		.data = lock,
	};
	lock->touch_grab = (struct wlr_seat_touch_grab){
		.interface = &touch_grab_impl,
		.data = lock,
	};
	lock->tree = wlr_scene_tree_create(&server->scene->node);
	lock->blank = lock->tree ? wlr_scene_rect_create(&lock->tree->node, 0, 0, blank_color) : NULL;
	lock->surfaces = lock->tree ? wlr_scene_tree_create(&lock->tree->node) : NULL;
	lock->inhibit_manager = wlr_input_inhibit_manager_create(server->wl_display);
	if (!lock->tree || !lock->blank || !lock->surfaces || !lock->inhibit_manager) {
		wlr_log(WLR_ERROR, "screen lock: cannot create its scene nodes or the input inhibitor");
		if (lock->tree) {
			wlr_scene_node_destroy(&lock->tree->node);
		}
		free(lock);
		return false;
	}
	wlr_scene_node_set_enabled(&lock->tree->node, false);
	lock->inhibit_activate.notify = handle_inhibit_activate;
	wl_signal_add(&lock->inhibit_manager->events.activate, &lock->inhibit_activate);
	lock->inhibit_deactivate.notify = handle_inhibit_deactivate;
	wl_signal_add(&lock->inhibit_manager->events.deactivate, &lock->inhibit_deactivate);
	lock->keyboard_grab_begin.notify = handle_keyboard_grab_begin;
	wl_signal_add(&server->seat->events.keyboard_grab_begin, &lock->keyboard_grab_begin);
	lock->pointer_grab_begin.notify = handle_pointer_grab_begin;
	wl_signal_add(&server->seat->events.pointer_grab_begin, &lock->pointer_grab_begin);
	lock->touch_grab_begin.notify = handle_touch_grab_begin;
	wl_signal_add(&server->seat->events.touch_grab_begin, &lock->touch_grab_begin);
	lock->layout_change.notify = handle_layout_change;
	wl_signal_add(&server->output_layout->events.change, &lock->layout_change);
	server->lock = lock;
	if (!session_lock_init(server)) {
		return false;
	}
	return true;
}

void screen_lock_finish(struct qw_server *server) {
	struct qw_screen_lock *lock = server->lock;
	if (!lock) {
		return;
	}
	session_lock_finish(server);
	lock->grabbing = false;
	wl_list_remove(&lock->inhibit_activate.link);
	wl_list_remove(&lock->inhibit_deactivate.link);
	wl_list_remove(&lock->keyboard_grab_begin.link);
	wl_list_remove(&lock->pointer_grab_begin.link);
	wl_list_remove(&lock->touch_grab_begin.link);
	wl_list_remove(&lock->layout_change.link);
	server->lock = NULL;
	free(lock);
}
