/*
 * What the pointer is doing, owned by cursor.c: the titlebar button held, a
 * move or resize under way, the surface a held button keeps the pointer on,
 * and the titlebar double-click.
 */
#ifndef QOSWAY_INPUT_CURSOR_STATE_H
#define QOSWAY_INPUT_CURSOR_STATE_H

#include <stdbool.h>
#include <stdint.h>
#include <wayland-server-core.h>
#include <wlr/util/box.h>

struct qw_view;

enum qw_cursor_mode {
	QW_CURSOR_PASSTHROUGH,
	QW_CURSOR_MOVE,
	QW_CURSOR_RESIZE,
	QW_CURSOR_BUTTON, /* a titlebar button is held down */
};

struct qw_cursor_state {
	const char *image; /* last image set by us, NULL if the client's */
	struct wl_listener motion;
	struct wl_listener motion_absolute;
	struct wl_listener button;
	struct wl_listener axis;
	struct wl_listener frame;

	enum qw_cursor_mode mode;
	struct qw_view *grabbed_view;
	double grab_x, grab_y;
	struct wlr_box grab_geobox;
	uint32_t resize_edges;
	/* The press that started the grab reached the client (xdg move/resize
	 * requests), so the client must see the matching release too. */
	bool grab_forward_release;
	/* A maximized window restores only once a titlebar drag really moves,
	 * so a click (or the first half of a double-click) leaves it alone. */
	bool grab_unmaximize_pending;
	double grab_start_x, grab_start_y;
	/* Layout position of the surface a held button was pressed on: it
	 * keeps the pointer (motion relative to it) until the last release. */
	double held_origin_x, held_origin_y;
	int pressed_button; /* enum qw_button_kind while QW_CURSOR_BUTTON */
	uint32_t pressed_mouse_button;
	struct qw_view *hovered_view; /* view whose button is hovered */
	int hovered_button;
	uint32_t last_click_msec; /* the last titlebar click, for double-clicks */
	struct qw_view *last_click_view;
	uint32_t swallowed_button; /* its press opened or used the menu; 0 if none */
};

#endif
