/*
 * The seat's devices, owned by seat.c and input_devices.c: keyboards,
 * every input device with its id, the virtual keyboard and pointer
 * managers, and the seat's requests.
 */
#ifndef QOSWAY_INPUT_INPUT_STATE_H
#define QOSWAY_INPUT_INPUT_STATE_H

#include <stddef.h>
#include <stdint.h>
#include <wayland-server-core.h>

struct wlr_keyboard;
struct wlr_virtual_keyboard_manager_v1;
struct wlr_virtual_pointer_manager_v1;

struct qw_input_state {
	struct wl_listener new_input;
	struct wl_listener request_set_cursor;
	struct wl_listener request_set_selection;
	struct wl_listener request_set_primary_selection;
	struct wl_list keyboards; /* qw_keyboard.link */
	struct wl_list devices; /* qw_input_device.link (input_devices.h) */
	uint32_t next_device_id;
	struct wlr_virtual_pointer_manager_v1 *virtual_pointer;
	struct wl_listener new_virtual_pointer;
	struct wlr_virtual_keyboard_manager_v1 *virtual_keyboard;
	struct wl_listener new_virtual_keyboard;
	/* See seat.c: virtual keyboards' wlr_keyboard that wlroots 0.15 orphans. */
	struct wlr_keyboard **orphaned_keyboards;
	size_t orphaned_keyboard_count;
	struct wl_event_source *orphan_idle;
};

#endif
