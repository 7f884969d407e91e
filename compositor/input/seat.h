/* Seat, keyboards and input devices (real and virtual). */
#ifndef QOSWAY_SEAT_H
#define QOSWAY_SEAT_H

#include <stdbool.h>
#include <wayland-server-core.h>

#include "server.h"

struct qw_keyboard {
	struct wl_list link; /* qw_server.input.keyboards */
	struct qw_server *server;
	struct wlr_input_device *device;
	bool virtual_device;
	/* Keys whose press we kept from the client: their release stays too. */
	uint32_t swallowed[8];
	size_t swallowed_count;

	struct wl_listener modifiers;
	struct wl_listener key;
	struct wl_listener keymap;
	struct wl_listener destroy;
};

bool seat_init(struct qw_server *server);
void seat_finish(struct qw_server *server);
/* Offer what the devices present allow (after one came or went). */
void seat_update_capabilities(struct qw_server *server);
/* Run a bound action (also used by the IPC). */
void seat_run_action(struct qw_server *server, enum qw_action action, const char *arg);

#endif
