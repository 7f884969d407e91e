#include <linux/input-event-codes.h>
#include <wlr/types/wlr_cursor.h>
#include <wlr/types/wlr_idle.h>
#include <wlr/types/wlr_keyboard.h>
#include <wlr/types/wlr_layer_shell_v1.h>
#include <wlr/types/wlr_output_layout.h>
#include <wlr/types/wlr_pointer.h>
#include <wlr/types/wlr_seat.h>
#include <wlr/types/wlr_xcursor_manager.h>
#include <wlr/types/wlr_xdg_shell.h>
#include <wlr/util/edges.h>
#include <wlr/util/log.h>
#include <wlr/xcursor.h>

#include "input/cursor.h"
#include "desktop/layer_shell.h"
#include "input/pointer_constraints.h"
#include "decoration/reserve_menu.h"
#include "desktop/screen_lock.h"
#include "scheduler/scheduler.h"
#include "desktop/view.h"

/* Corners of the frame count as two edges within this distance. */
#define CORNER_SIZE 16
#define DOUBLE_CLICK_MSEC 400
/* Pointer travel that turns a titlebar press into a drag. */
#define DRAG_THRESHOLD 8

static void set_cursor_image(struct qw_server *server, const char *name) {
	if (server->pointer.image == name) {
		return;
	}
	server->pointer.image = name;
	wlr_xcursor_manager_set_cursor_image(server->xcursor_manager, name, server->cursor);
}

static void notify_activity(struct qw_server *server) {
	if (server->idle.manager) {
		wlr_idle_notify_activity(server->idle.manager, server->seat);
	}
}

static bool super_held(struct qw_server *server) {
	struct wlr_keyboard *kb = wlr_seat_get_keyboard(server->seat);
	return kb && (wlr_keyboard_get_modifiers(kb) & WLR_MODIFIER_LOGO);
}

static uint32_t frame_edges_at(struct qw_view *view, double lx, double ly) {
	struct wlr_box fb = view_frame_box(view);
	int b = view->server->config.border_width;
	uint32_t edges = 0;
	if (ly < fb.y + b) {
		edges |= WLR_EDGE_TOP;
	} else if (ly >= fb.y + fb.height - b) {
		edges |= WLR_EDGE_BOTTOM;
	}
	if (lx < fb.x + b) {
		edges |= WLR_EDGE_LEFT;
	} else if (lx >= fb.x + fb.width - b) {
		edges |= WLR_EDGE_RIGHT;
	}
	if (edges & (WLR_EDGE_TOP | WLR_EDGE_BOTTOM)) {
		if (lx < fb.x + CORNER_SIZE) {
			edges |= WLR_EDGE_LEFT;
		} else if (lx >= fb.x + fb.width - CORNER_SIZE) {
			edges |= WLR_EDGE_RIGHT;
		}
	}
	if (edges & (WLR_EDGE_LEFT | WLR_EDGE_RIGHT)) {
		if (ly < fb.y + CORNER_SIZE) {
			edges |= WLR_EDGE_TOP;
		} else if (ly >= fb.y + fb.height - CORNER_SIZE) {
			edges |= WLR_EDGE_BOTTOM;
		}
	}
	return edges;
}

/* For Super+right-drag: the edges of the quadrant the cursor is in. */
static uint32_t quadrant_edges(struct qw_view *view, double lx, double ly) {
	uint32_t edges = lx < view->x + view->width / 2.0 ? WLR_EDGE_LEFT : WLR_EDGE_RIGHT;
	edges |= ly < view->y + view->height / 2.0 ? WLR_EDGE_TOP : WLR_EDGE_BOTTOM;
	return edges;
}

void view_begin_interactive(struct qw_view *view, enum qw_cursor_mode mode, uint32_t edges) {
	struct qw_server *server = view->server;
	if (!view->mapped || view->fullscreen) {
		return;
	}
	if ((view->maximized || view_is_paused(view)) && mode == QW_CURSOR_RESIZE) {
		/* A paused client could not answer the configures a resize sends. */
		return;
	}
	wlr_seat_pointer_notify_clear_focus(server->seat);
	server->pointer.grab_forward_release = false;
	server->pointer.grab_unmaximize_pending = view->maximized;
	server->pointer.grab_start_x = server->cursor->x;
	server->pointer.grab_start_y = server->cursor->y;
	server->pointer.grabbed_view = view;
	server->pointer.mode = mode;
	if (mode == QW_CURSOR_MOVE) {
		server->pointer.grab_x = server->cursor->x - view->x;
		server->pointer.grab_y = server->cursor->y - view->y;
		set_cursor_image(server, "grabbing");
	} else {
		double edge_x = view->x + ((edges & WLR_EDGE_RIGHT) ? view->width : 0);
		double edge_y = view->y + ((edges & WLR_EDGE_BOTTOM) ? view->height : 0);
		server->pointer.grab_x = server->cursor->x - edge_x;
		server->pointer.grab_y = server->cursor->y - edge_y;
		server->pointer.grab_geobox = (struct wlr_box){ view->x, view->y, view->width, view->height };
		server->pointer.resize_edges = edges;
		view_set_resizing(view, true);
		set_cursor_image(server, wlr_xcursor_get_resize_name(edges));
	}
}

static void end_interactive(struct qw_server *server) {
	struct qw_view *view = server->pointer.grabbed_view;
	if (view && server->pointer.mode == QW_CURSOR_RESIZE) {
		view_set_resizing(view, false);
	}
	server->pointer.mode = QW_CURSOR_PASSTHROUGH;
	server->pointer.grabbed_view = NULL;
}

static void process_resize(struct qw_server *server) {
	struct qw_view *view = server->pointer.grabbed_view;
	struct wlr_box g = server->pointer.grab_geobox;
	double bx = server->cursor->x - server->pointer.grab_x;
	double by = server->cursor->y - server->pointer.grab_y;
	int left = g.x, right = g.x + g.width, top = g.y, bottom = g.y + g.height;
	uint32_t edges = server->pointer.resize_edges;
	if (edges & WLR_EDGE_TOP) {
		top = by < bottom - 1 ? (int)by : bottom - 1;
	} else if (edges & WLR_EDGE_BOTTOM) {
		bottom = by > top + 1 ? (int)by : top + 1;
	}
	if (edges & WLR_EDGE_LEFT) {
		left = bx < right - 1 ? (int)bx : right - 1;
	} else if (edges & WLR_EDGE_RIGHT) {
		right = bx > left + 1 ? (int)bx : left + 1;
	}
	/* The position follows in the commit handler once the client has
	 * picked its size, so the opposite edge never jitters. */
	view->want_width = right - left;
	view->want_height = bottom - top;
	view_request_size(view);
}

static void set_hovered_button(struct qw_server *server, struct qw_view *view, int button) {
	if (server->pointer.hovered_view == view && server->pointer.hovered_button == button) {
		return;
	}
	struct qw_view *old = server->pointer.hovered_view;
	server->pointer.hovered_view = view;
	server->pointer.hovered_button = button;
	if (old && old != view) {
		decoration_update_buttons(&old->deco, old);
	}
	if (view) {
		decoration_update_buttons(&view->deco, view);
	}
}

/*
 * A button pressed on a client's surface and still held: the surface keeps
 * the pointer, as on every desktop, so that a scrollbar or a selection
 * follows the pointer out of the window and a drag the client starts late
 * (its serial is checked against the focused surface) is still its own.
 * A drag under way moves the focus itself.
 */
static bool held_by_client(struct qw_server *server) {
	struct wlr_seat *seat = server->seat;
	return seat->pointer_state.button_count > 0 && seat->pointer_state.focused_surface &&
			!seat->drag;
}

static void process_motion(struct qw_server *server, uint32_t time) {
	if (screen_lock_pointer_motion(server, time)) {
		return;
	}
	if (server->pointer.mode == QW_CURSOR_MOVE) {
		struct qw_view *view = server->pointer.grabbed_view;
		if (server->pointer.grab_unmaximize_pending) {
			double dx = server->cursor->x - server->pointer.grab_start_x;
			double dy = server->cursor->y - server->pointer.grab_start_y;
			if (dx * dx + dy * dy < DRAG_THRESHOLD * DRAG_THRESHOLD) {
				return;
			}
			/* Restore under the cursor, keeping it at the same relative
			 * spot of the titlebar. */
			double rel = view->width > 0 ? (server->pointer.grab_start_x - view->x) / view->width : 0.5;
			double off_y = server->pointer.grab_start_y - view->y;
			int restored_width = view->saved.width;
			server->pointer.grab_unmaximize_pending = false;
			view_set_maximized(view, false);
			server->pointer.grab_x = rel * restored_width;
			server->pointer.grab_y = off_y;
		}
		view_move_to(view, server->cursor->x - server->pointer.grab_x, server->cursor->y - server->pointer.grab_y);
		return;
	}
	if (server->pointer.mode == QW_CURSOR_RESIZE) {
		process_resize(server);
		return;
	}

	if (server->pointer.mode == QW_CURSOR_PASSTHROUGH && held_by_client(server)) {
		wlr_seat_pointer_notify_motion(server->seat, time,
				server->cursor->x - server->pointer.held_origin_x,
				server->cursor->y - server->pointer.held_origin_y);
		return;
	}

	struct wlr_surface *surface;
	struct qw_node_desc *desc;
	double sx = 0, sy = 0;
	struct qw_view *view =
			view_at(server, server->cursor->x, server->cursor->y, &surface, &sx, &sy, &desc);
	if (view && view_is_paused(view)) {
		surface = NULL; /* a frozen client gets no enter or motion */
	}

	if (server->pointer.mode == QW_CURSOR_BUTTON) {
		/* While a button is held only that button may look hovered. */
		bool over = desc && desc->type == QW_NODE_BUTTON && view == server->pointer.grabbed_view &&
				desc->button == server->pointer.pressed_button;
		set_hovered_button(server, over ? view : NULL, over ? desc->button : -1);
		return;
	}

	if (reserve_menu_is_open(server)) {
		reserve_menu_hover(server, desc);
	}
	bool on_button = desc && desc->type == QW_NODE_BUTTON;
	set_hovered_button(server, on_button ? view : NULL, on_button ? desc->button : -1);
	if (surface) {
		/* The client sets its own image on enter. */
		wlr_seat_pointer_notify_enter(server->seat, surface, sx, sy);
		wlr_seat_pointer_notify_motion(server->seat, time, sx, sy);
		return;
	}
	wlr_seat_pointer_notify_clear_focus(server->seat);
	if (desc && desc->type == QW_NODE_GRIP && view) {
		uint32_t edges = frame_edges_at(view, server->cursor->x, server->cursor->y);
		set_cursor_image(server, edges ? wlr_xcursor_get_resize_name(edges) : "left_ptr");
	} else {
		set_cursor_image(server, "left_ptr");
	}
}

void cursor_rebase(struct qw_server *server, uint32_t time_msec) {
	if (server->pointer.mode == QW_CURSOR_PASSTHROUGH) {
		process_motion(server, time_msec);
	}
}

static void handle_cursor_motion(struct wl_listener *listener, void *data) {
	struct qw_server *server = wl_container_of(listener, server, pointer.motion);
	scheduler_own(server->scheduler);
	struct wlr_event_pointer_motion *event = data;
	double dx = event->delta_x, dy = event->delta_y;
	pointer_constraints_motion(server, event->time_msec, &dx, &dy, event->unaccel_dx,
			event->unaccel_dy);
	wlr_cursor_move(server->cursor, event->device, dx, dy);
	if (dx != 0 || dy != 0 || !pointer_constraints_active_type(server)) {
		/* A held cursor did not move: the client sees only relative motion. */
		process_motion(server, event->time_msec);
	}
	notify_activity(server);
}

static void handle_cursor_motion_absolute(struct wl_listener *listener, void *data) {
	struct qw_server *server = wl_container_of(listener, server, pointer.motion_absolute);
	scheduler_own(server->scheduler);
	struct wlr_event_pointer_motion_absolute *event = data;
	/* Absolute devices (tablets in mouse mode, virtual pointers) move by
	 * the difference, so relative motion and constraints apply to them too. */
	double lx, ly;
	wlr_cursor_absolute_to_layout_coords(server->cursor, event->device, event->x, event->y, &lx,
			&ly);
	double dx = lx - server->cursor->x, dy = ly - server->cursor->y;
	pointer_constraints_motion(server, event->time_msec, &dx, &dy, dx, dy);
	wlr_cursor_move(server->cursor, event->device, dx, dy);
	if (dx != 0 || dy != 0 || !pointer_constraints_active_type(server)) {
		/* A held cursor did not move: the client sees only relative motion. */
		process_motion(server, event->time_msec);
	}
	notify_activity(server);
}

static void press_on_titlebar(struct qw_server *server, struct qw_view *view, uint32_t time) {
	if (server->pointer.last_click_view == view &&
			time - server->pointer.last_click_msec < DOUBLE_CLICK_MSEC) {
		server->pointer.last_click_view = NULL;
		view_set_maximized(view, !view->maximized);
		return;
	}
	server->pointer.last_click_view = view;
	server->pointer.last_click_msec = time;
	view_begin_interactive(view, QW_CURSOR_MOVE, 0);
}

static bool shift_held(struct qw_server *server) {
	struct wlr_keyboard *kb = wlr_seat_get_keyboard(server->seat);
	return kb && (wlr_keyboard_get_modifiers(kb) & WLR_MODIFIER_SHIFT);
}

static void click_button(struct qw_view *view, enum qw_button_kind kind, bool shift) {
	enum qw_class want;
	switch (kind) {
	case QW_BUTTON_CLOSE:
		view_close(view);
		return;
	case QW_BUTTON_REALTIME:
		/* Shift: fifo with the safety limit instead of a reserve. */
		want = shift ? QW_CLASS_FIFO : QW_CLASS_REALTIME;
		break;
	case QW_BUTTON_IDLE:
		/* Shift: nice 10 instead of the idle class. */
		want = shift ? QW_CLASS_NICE : QW_CLASS_IDLE;
		break;
	case QW_BUTTON_PAUSE:
		want = QW_CLASS_PAUSED;
		break;
	default:
		return;
	}
	/* Each class button toggles between its class and normal. */
	char err[256];
	view_request_class(view, view->class == want ? QW_CLASS_NORMAL : want, err, sizeof(err));
}

void cursor_click_button(struct qw_view *view, int kind) {
	click_button(view, kind, false);
}

/* The button to the client with the pointer focus; the first press notes
 * where its surface is (held_by_client), the last release lets the focus
 * follow the pointer again. */
static void notify_button(struct qw_server *server, struct wlr_event_pointer_button *event) {
	struct wlr_seat_pointer_state *state = &server->seat->pointer_state;
	bool first = state->button_count == 0;
	wlr_seat_pointer_notify_button(server->seat, event->time_msec, event->button, event->state);
	if (event->state == WLR_BUTTON_PRESSED && first) {
		server->pointer.held_origin_x = server->cursor->x - state->sx;
		server->pointer.held_origin_y = server->cursor->y - state->sy;
	} else if (event->state == WLR_BUTTON_RELEASED && state->button_count == 0) {
		process_motion(server, event->time_msec);
	}
}

static void handle_press(struct qw_server *server, struct wlr_event_pointer_button *event) {
	struct wlr_surface *surface;
	struct qw_node_desc *desc;
	double sx, sy;
	struct qw_view *view =
			view_at(server, server->cursor->x, server->cursor->y, &surface, &sx, &sy, &desc);
	if (reserve_menu_is_open(server)) {
		/* The click picks an item or dismisses the menu; nothing else. */
		reserve_menu_press(server, desc);
		server->pointer.swallowed_button = event->button;
		return;
	}
	if (view) {
		view_focus(view);
	}
	if (view && desc && desc->type == QW_NODE_BUTTON && event->button == BTN_RIGHT &&
			desc->button != QW_BUTTON_CLOSE) {
		reserve_menu_open(server, view, (int)server->cursor->x, (int)server->cursor->y);
		server->pointer.swallowed_button = event->button;
		return;
	}
	if (view && view_is_paused(view) && desc && desc->type == QW_NODE_VIEW) {
		return; /* clicks on a frozen client's content go nowhere */
	}
	if (view && super_held(server) && (event->button == BTN_LEFT || event->button == BTN_RIGHT)) {
		if (event->button == BTN_LEFT) {
			view_begin_interactive(view, QW_CURSOR_MOVE, 0);
		} else {
			view_begin_interactive(view, QW_CURSOR_RESIZE,
					quadrant_edges(view, server->cursor->x, server->cursor->y));
		}
		return;
	}
	if (desc && desc->type == QW_NODE_LAYER_SURFACE) {
		layer_shell_focus_on_click(server, desc);
	}
	if (!view || !desc || event->button != BTN_LEFT) {
		notify_button(server, event);
		return;
	}
	switch (desc->type) {
	case QW_NODE_BUTTON:
		server->pointer.mode = QW_CURSOR_BUTTON;
		server->pointer.grabbed_view = view;
		server->pointer.pressed_button = desc->button;
		server->pointer.pressed_mouse_button = event->button;
		set_hovered_button(server, view, desc->button);
		decoration_update_buttons(&view->deco, view);
		break;
	case QW_NODE_TITLEBAR:
		press_on_titlebar(server, view, event->time_msec);
		break;
	case QW_NODE_GRIP: {
		uint32_t edges = frame_edges_at(view, server->cursor->x, server->cursor->y);
		if (edges) {
			view_begin_interactive(view, QW_CURSOR_RESIZE, edges);
		}
		break;
	}
	default:
		notify_button(server, event);
		break;
	}
}

static void handle_release(struct qw_server *server, struct wlr_event_pointer_button *event) {
	switch (server->pointer.mode) {
	case QW_CURSOR_BUTTON: {
		if (event->button != server->pointer.pressed_mouse_button) {
			return;
		}
		struct qw_view *view = server->pointer.grabbed_view;
		bool over =
				server->pointer.hovered_view == view && server->pointer.hovered_button == server->pointer.pressed_button;
		enum qw_button_kind kind = server->pointer.pressed_button;
		server->pointer.mode = QW_CURSOR_PASSTHROUGH;
		server->pointer.grabbed_view = NULL;
		if (view) {
			decoration_update_buttons(&view->deco, view);
			if (over) {
				click_button(view, kind, shift_held(server));
			}
		}
		return;
	}
	case QW_CURSOR_MOVE:
	case QW_CURSOR_RESIZE:
		if (server->pointer.grab_forward_release) {
			notify_button(server, event);
		}
		end_interactive(server);
		process_motion(server, event->time_msec);
		return;
	case QW_CURSOR_PASSTHROUGH:
		if (server->pointer.swallowed_button == event->button) {
			/* Its press went to the menu, not to the client. */
			server->pointer.swallowed_button = 0;
			return;
		}
		notify_button(server, event);
		return;
	}
}

static void handle_cursor_button(struct wl_listener *listener, void *data) {
	struct qw_server *server = wl_container_of(listener, server, pointer.button);
	scheduler_own(server->scheduler);
	struct wlr_event_pointer_button *event = data;
	notify_activity(server);
	if (screen_lock_pointer_button(server, event)) {
		return;
	}
	if (event->state == WLR_BUTTON_PRESSED) {
		if (server->pointer.mode != QW_CURSOR_PASSTHROUGH) {
			return; /* a second button during a grab */
		}
		handle_press(server, event);
	} else {
		handle_release(server, event);
	}
}

static void handle_cursor_axis(struct wl_listener *listener, void *data) {
	struct qw_server *server = wl_container_of(listener, server, pointer.axis);
	scheduler_own(server->scheduler);
	struct wlr_event_pointer_axis *event = data;
	notify_activity(server);
	wlr_seat_pointer_notify_axis(server->seat, event->time_msec, event->orientation, event->delta,
			event->delta_discrete, event->source);
}

static void handle_cursor_frame(struct wl_listener *listener, void *data) {
	struct qw_server *server = wl_container_of(listener, server, pointer.frame);
	scheduler_own(server->scheduler);
	wlr_seat_pointer_notify_frame(server->seat);
}

bool cursor_init(struct qw_server *server) {
	server->cursor = wlr_cursor_create();
	if (!server->cursor) {
		return false;
	}
	wlr_cursor_attach_output_layout(server->cursor, server->output_layout);
	server->xcursor_manager = wlr_xcursor_manager_create(NULL, 24);
	if (!server->xcursor_manager) {
		return false;
	}
	wlr_xcursor_manager_load(server->xcursor_manager, 1);
	server->pointer.hovered_button = -1;
	server->pointer.motion.notify = handle_cursor_motion;
	wl_signal_add(&server->cursor->events.motion, &server->pointer.motion);
	server->pointer.motion_absolute.notify = handle_cursor_motion_absolute;
	wl_signal_add(&server->cursor->events.motion_absolute, &server->pointer.motion_absolute);
	server->pointer.button.notify = handle_cursor_button;
	wl_signal_add(&server->cursor->events.button, &server->pointer.button);
	server->pointer.axis.notify = handle_cursor_axis;
	wl_signal_add(&server->cursor->events.axis, &server->pointer.axis);
	server->pointer.frame.notify = handle_cursor_frame;
	wl_signal_add(&server->cursor->events.frame, &server->pointer.frame);
	return true;
}

void cursor_finish(struct qw_server *server) {
	if (!server->cursor) {
		return;
	}
	if (server->pointer.motion.notify) {
		wl_list_remove(&server->pointer.motion.link);
		wl_list_remove(&server->pointer.motion_absolute.link);
		wl_list_remove(&server->pointer.button.link);
		wl_list_remove(&server->pointer.axis.link);
		wl_list_remove(&server->pointer.frame.link);
	}
	wlr_xcursor_manager_destroy(server->xcursor_manager);
	wlr_cursor_destroy(server->cursor);
	server->cursor = NULL;
}
