#include <stdlib.h>
#include <wlr/backend.h>
#include <wlr/types/wlr_cursor.h>
#include <wlr/types/wlr_data_device.h>
#include <wlr/types/wlr_input_device.h>
#include <wlr/types/wlr_keyboard.h>
#include <wlr/types/wlr_primary_selection.h>
#include <wlr/types/wlr_seat.h>
#include <wlr/types/wlr_virtual_keyboard_v1.h>
#include <wlr/types/wlr_virtual_pointer_v1.h>
#include <wlr/types/wlr_xdg_shell.h>
#include <wlr/util/log.h>
#include <xkbcommon/xkbcommon.h>

#include "desktop/idle.h"
#include "input/input_devices.h"
#include "decoration/reserve_menu.h"
#include "desktop/screen_lock.h"
#include "scheduler/scheduler.h"
#include "input/seat.h"
#include "input/shortcuts_inhibit.h"
#include "input/tablet.h"
#include "input/text_input.h"
#include "input/touch.h"
#include "desktop/view.h"
#include "desktop/workspace.h"

static bool has_keymap(struct wlr_input_device *device) {
	return device->keyboard->keymap != NULL;
}

/* A keyboard with a keymap other than `except`, or NULL. */
static struct qw_keyboard *usable_keyboard(struct qw_server *server, struct qw_keyboard *except) {
	struct qw_keyboard *keyboard;
	wl_list_for_each(keyboard, &server->input.keyboards, link) {
		if (keyboard != except && has_keymap(keyboard->device)) {
			return keyboard;
		}
	}
	return NULL;
}

/*
 * The keyboard capability follows the keyboards that have a keymap: a
 * client told of a keyboard gets its keymap before any focus (fuzzel
 * aborts on an enter with no keymap). wlroots sends the keymap and the
 * stored focus to each wl_keyboard made after the capability appears, so
 * a keyboard added later needs no leave/enter pair. The pointer is always
 * offered and never withdrawn: the cursor exists without a device, and
 * wlroots 0.15 dereferences a NULL seat client when a relative pointer or
 * pointer constraint is asked for on a wl_pointer made inert by a
 * withdrawn capability. Touch is offered while a touch device exists.
 */
void seat_update_capabilities(struct qw_server *server) {
	uint32_t caps = WL_SEAT_CAPABILITY_POINTER;
	if (wlr_seat_get_keyboard(server->seat)) {
		caps |= WL_SEAT_CAPABILITY_KEYBOARD;
	}
	if (touch_has_devices(server)) {
		caps |= WL_SEAT_CAPABILITY_TOUCH;
	}
	wlr_seat_set_capabilities(server->seat, caps);
}

static struct qw_view *focused_mapped_view(struct qw_server *server) {
	struct qw_view *view;
	wl_list_for_each(view, &server->views, link) {
		return view->mapped && view->deco.focused ? view : NULL;
	}
	return NULL;
}

static void focus_next(struct qw_server *server) {
	/* views is in focus order; cycling brings the least recently focused
	 * mapped view to the front, so repeated presses visit every window. */
	struct qw_view *view, *last = NULL;
	wl_list_for_each(view, &server->views, link) {
		if (view->mapped) {
			last = view;
		}
	}
	if (last) {
		view_focus(last);
	}
}

void seat_run_action(struct qw_server *server, enum qw_action action, const char *arg) {
	struct qw_view *focused = focused_mapped_view(server);
	switch (action) {
	case QW_ACTION_EXEC:
		server_spawn_shell(server, arg);
		break;
	case QW_ACTION_TERMINAL:
		server_spawn_shell(server, server->config.terminal);
		break;
	case QW_ACTION_CLOSE:
		if (focused) {
			view_close(focused);
		}
		break;
	case QW_ACTION_FOCUS_NEXT:
		focus_next(server);
		break;
	case QW_ACTION_MAXIMIZE:
		if (focused) {
			view_set_maximized(focused, !focused->maximized);
		}
		break;
	case QW_ACTION_FULLSCREEN:
		if (focused) {
			view_set_fullscreen(focused, !focused->fullscreen);
		}
		break;
	case QW_ACTION_MINIMIZE:
		if (focused) {
			view_set_minimized(focused, true);
		}
		break;
	case QW_ACTION_SHORTCUTS_INHIBIT_TOGGLE:
		shortcuts_inhibit_toggle(server);
		break;
	case QW_ACTION_EXIT:
		server_terminate(server);
		break;
	case QW_ACTION_WORKSPACE:
		if (arg) {
			workspace_switch(server, workspace_current_output(server), atoi(arg));
		}
		break;
	case QW_ACTION_MOVE_TO_WORKSPACE:
		if (focused && arg) {
			workspace_move_view(focused, atoi(arg));
		}
		break;
	}
}

static bool run_binding(struct qw_server *server, uint32_t modifiers, xkb_keysym_t sym) {
	sym = xkb_keysym_to_lower(sym);
	bool inhibited = shortcuts_inhibit_active(server);
	for (size_t i = 0; i < server->config.binding_count; i++) {
		const struct qw_binding *b = &server->config.bindings[i];
		if (inhibited && b->action != QW_ACTION_SHORTCUTS_INHIBIT_TOGGLE) {
			continue;
		}
		if (b->modifiers == modifiers && b->keysym == sym) {
			seat_run_action(server, b->action, b->arg);
			return true;
		}
	}
	return false;
}

static void handle_key(struct wl_listener *listener, void *data) {
	struct qw_keyboard *keyboard = wl_container_of(listener, keyboard, key);
	scheduler_own(keyboard->server->scheduler);
	struct qw_server *server = keyboard->server;
	struct wlr_event_keyboard_key *event = data;
	struct wlr_keyboard *kb = keyboard->device->keyboard;
	bool handled = false;
	idle_notify_activity(server);
	if (screen_lock_key(server, keyboard, event)) {
		return;
	}
	if (event->state == WL_KEYBOARD_KEY_STATE_RELEASED) {
		for (size_t i = 0; i < keyboard->swallowed_count; i++) {
			if (keyboard->swallowed[i] == event->keycode) {
				keyboard->swallowed[i] = keyboard->swallowed[--keyboard->swallowed_count];
				return;
			}
		}
	}
	if (event->state == WL_KEYBOARD_KEY_STATE_PRESSED && kb->xkb_state &&
			reserve_menu_is_open(server)) {
		uint32_t keycode = event->keycode + 8;
		xkb_keysym_t sym = xkb_state_key_get_one_sym(kb->xkb_state, keycode);
		if (sym == XKB_KEY_Escape) {
			reserve_menu_close(server);
			if (keyboard->swallowed_count <
					sizeof(keyboard->swallowed) / sizeof(keyboard->swallowed[0])) {
				keyboard->swallowed[keyboard->swallowed_count++] = event->keycode;
			}
			return;
		}
	}
	if (event->state == WL_KEYBOARD_KEY_STATE_PRESSED && kb->xkb_state) {
		/* Match bindings on the unshifted keysym so that "Super+Shift+e"
		 * means the e key with Shift, whatever Shift produces. */
		uint32_t keycode = event->keycode + 8;
		xkb_layout_index_t layout = xkb_state_key_get_layout(kb->xkb_state, keycode);
		const xkb_keysym_t *syms;
		int n = xkb_keymap_key_get_syms_by_level(kb->keymap, keycode, layout, 0, &syms);
		uint32_t modifiers = wlr_keyboard_get_modifiers(kb);
		for (int i = 0; i < n && !handled; i++) {
			handled = run_binding(server, modifiers, syms[i]);
		}
	}
	if (!handled &&
			text_input_grab_key(server, keyboard->device, event->time_msec, event->keycode,
					event->state)) {
		return; /* the input method composes from it */
	}
	if (!handled && has_keymap(keyboard->device)) {
		wlr_seat_set_keyboard(server->seat, keyboard->device);
		wlr_seat_keyboard_notify_key(server->seat, event->time_msec, event->keycode, event->state);
	}
}

static void handle_modifiers(struct wl_listener *listener, void *data) {
	struct qw_keyboard *keyboard = wl_container_of(listener, keyboard, modifiers);
	scheduler_own(keyboard->server->scheduler);
	if (!has_keymap(keyboard->device) ||
			text_input_grab_modifiers(keyboard->server, keyboard->device)) {
		return;
	}
	wlr_seat_set_keyboard(keyboard->server->seat, keyboard->device);
	wlr_seat_keyboard_notify_modifiers(keyboard->server->seat,
			&keyboard->device->keyboard->modifiers);
}

/*
 * The seat must never be handed a keyboard without a keymap: wlroots 0.15
 * would send every client a keymap event with fd -1, which libwayland
 * cannot marshal, and that client silently stops receiving events. A
 * virtual keyboard gets its keymap only after creation, so it joins the
 * seat here.
 */
static void handle_keymap(struct wl_listener *listener, void *data) {
	struct qw_keyboard *keyboard = wl_container_of(listener, keyboard, keymap);
	struct qw_server *server = keyboard->server;
	struct wlr_keyboard *current = wlr_seat_get_keyboard(server->seat);
	if (current == keyboard->device->keyboard) {
		return; /* wlroots re-sends a changed keymap itself */
	}
	if (!current) {
		wlr_seat_set_keyboard(server->seat, keyboard->device);
		seat_update_capabilities(server);
	}
}

static void keyboard_destroy(struct qw_keyboard *keyboard) {
	wl_list_remove(&keyboard->keymap.link);
	wl_list_remove(&keyboard->modifiers.link);
	wl_list_remove(&keyboard->key.link);
	wl_list_remove(&keyboard->destroy.link);
	wl_list_remove(&keyboard->link);
	free(keyboard);
}

/*
 * wlroots 0.15's virtual keyboard never frees its wlr_keyboard: the
 * keyboard's destroy hook is a no-op and the resource destructor frees only
 * the wrapper, so every virtual keyboard (on-screen keyboards, input tools,
 * our tests) would leak one. Once wlr_keyboard_destroy() has run nobody
 * references it; we free it from an idle callback, or at shutdown.
 */
static void free_orphaned_keyboards(struct qw_server *server) {
	for (size_t i = 0; i < server->input.orphaned_keyboard_count; i++) {
		free(server->input.orphaned_keyboards[i]);
	}
	free(server->input.orphaned_keyboards);
	server->input.orphaned_keyboards = NULL;
	server->input.orphaned_keyboard_count = 0;
	if (server->input.orphan_idle) {
		wl_event_source_remove(server->input.orphan_idle);
		server->input.orphan_idle = NULL;
	}
}

static void handle_orphan_idle(void *data) {
	struct qw_server *server = data;
	server->input.orphan_idle = NULL; /* idle sources remove themselves */
	free_orphaned_keyboards(server);
}

static void adopt_orphaned_keyboard(struct qw_server *server, struct wlr_keyboard *kb) {
	struct wlr_keyboard **grown = realloc(server->input.orphaned_keyboards,
			(server->input.orphaned_keyboard_count + 1) * sizeof(*grown));
	if (!grown) {
		return; /* leaking one keyboard beats crashing */
	}
	server->input.orphaned_keyboards = grown;
	server->input.orphaned_keyboards[server->input.orphaned_keyboard_count++] = kb;
	if (!server->input.orphan_idle) {
		server->input.orphan_idle =
				wl_event_loop_add_idle(server->event_loop, handle_orphan_idle, server);
	}
}

static void handle_keyboard_destroy(struct wl_listener *listener, void *data) {
	struct qw_keyboard *keyboard = wl_container_of(listener, keyboard, destroy);
	struct qw_server *server = keyboard->server;
	if (wlr_seat_get_keyboard(server->seat) == keyboard->device->keyboard) {
		/* Hand the seat another keyboard before wlroots lets go of this one. */
		struct qw_keyboard *next = usable_keyboard(server, keyboard);
		wlr_seat_set_keyboard(server->seat, next ? next->device : NULL);
	}
	if (keyboard->virtual_device) {
		adopt_orphaned_keyboard(server, keyboard->device->keyboard);
	}
	keyboard_destroy(keyboard);
	seat_update_capabilities(server);
}

static void add_keyboard(struct qw_server *server, struct wlr_input_device *device,
		bool virtual_device) {
	struct qw_keyboard *keyboard = calloc(1, sizeof(*keyboard));
	if (!keyboard) {
		wlr_log(WLR_ERROR, "out of memory for keyboard %s", device->name);
		return;
	}
	keyboard->server = server;
	keyboard->device = device;
	keyboard->virtual_device = virtual_device;
	/* Sets a keyboard's keymap from the config; virtual ones bring theirs. */
	input_devices_add(server, device, virtual_device);
	keyboard->modifiers.notify = handle_modifiers;
	wl_signal_add(&device->keyboard->events.modifiers, &keyboard->modifiers);
	keyboard->keymap.notify = handle_keymap;
	wl_signal_add(&device->keyboard->events.keymap, &keyboard->keymap);
	keyboard->key.notify = handle_key;
	wl_signal_add(&device->keyboard->events.key, &keyboard->key);
	keyboard->destroy.notify = handle_keyboard_destroy;
	wl_signal_add(&device->events.destroy, &keyboard->destroy);
	wl_list_insert(&server->input.keyboards, &keyboard->link);
	if (has_keymap(device) && !wlr_seat_get_keyboard(server->seat)) {
		wlr_seat_set_keyboard(server->seat, device);
		seat_update_capabilities(server);
	}
}

static void handle_new_input(struct wl_listener *listener, void *data) {
	struct qw_server *server = wl_container_of(listener, server, input.new_input);
	struct wlr_input_device *device = data;
	switch (device->type) {
	case WLR_INPUT_DEVICE_KEYBOARD:
		add_keyboard(server, device, false);
		break;
	case WLR_INPUT_DEVICE_POINTER:
		wlr_cursor_attach_input_device(server->cursor, device);
		input_devices_add(server, device, false);
		break;
	case WLR_INPUT_DEVICE_TOUCH:
		input_devices_add(server, device, false);
		touch_add_device(server, device);
		break;
	case WLR_INPUT_DEVICE_TABLET_TOOL:
	case WLR_INPUT_DEVICE_TABLET_PAD:
		input_devices_add(server, device, false);
		tablet_add_device(server, device);
		break;
	default:
		input_devices_add(server, device, false);
		break;
	}
}

static void handle_new_virtual_keyboard(struct wl_listener *listener, void *data) {
	struct qw_server *server = wl_container_of(listener, server, input.new_virtual_keyboard);
	struct wlr_virtual_keyboard_v1 *keyboard = data;
	add_keyboard(server, &keyboard->input_device, true);
}

static void handle_new_virtual_pointer(struct wl_listener *listener, void *data) {
	struct qw_server *server = wl_container_of(listener, server, input.new_virtual_pointer);
	struct wlr_virtual_pointer_v1_new_pointer_event *event = data;
	struct wlr_input_device *device = &event->new_pointer->input_device;
	wlr_cursor_attach_input_device(server->cursor, device);
	input_devices_add(server, device, true);
	if (event->suggested_output) {
		wlr_cursor_map_input_to_output(server->cursor, device, event->suggested_output);
	}
}

static void handle_request_set_cursor(struct wl_listener *listener, void *data) {
	struct qw_server *server = wl_container_of(listener, server, input.request_set_cursor);
	struct wlr_seat_pointer_request_set_cursor_event *event = data;
	/* Only the client with pointer focus may set the image. */
	if (event->seat_client == server->seat->pointer_state.focused_client) {
		wlr_cursor_set_surface(server->cursor, event->surface, event->hotspot_x, event->hotspot_y);
		server->pointer.image = NULL;
	}
}

static void handle_request_set_selection(struct wl_listener *listener, void *data) {
	struct qw_server *server = wl_container_of(listener, server, input.request_set_selection);
	struct wlr_seat_request_set_selection_event *event = data;
	wlr_seat_set_selection(server->seat, event->source, event->serial);
}

static void handle_request_set_primary_selection(struct wl_listener *listener, void *data) {
	struct qw_server *server = wl_container_of(listener, server, input.request_set_primary_selection);
	struct wlr_seat_request_set_primary_selection_event *event = data;
	wlr_seat_set_primary_selection(server->seat, event->source, event->serial);
}

bool seat_init(struct qw_server *server) {
	wl_list_init(&server->input.keyboards);
	input_devices_init(server);
	server->seat = wlr_seat_create(server->wl_display, "seat0");
	server->input.virtual_pointer = wlr_virtual_pointer_manager_v1_create(server->wl_display);
	server->input.virtual_keyboard = wlr_virtual_keyboard_manager_v1_create(server->wl_display);
	if (!server->seat || !server->input.virtual_pointer || !server->input.virtual_keyboard) {
		wlr_log(WLR_ERROR, "failed to create the seat or virtual input managers");
		return false;
	}
	server->input.new_input.notify = handle_new_input;
	wl_signal_add(&server->backend->events.new_input, &server->input.new_input);
	server->input.new_virtual_pointer.notify = handle_new_virtual_pointer;
	wl_signal_add(&server->input.virtual_pointer->events.new_virtual_pointer,
			&server->input.new_virtual_pointer);
	server->input.new_virtual_keyboard.notify = handle_new_virtual_keyboard;
	wl_signal_add(&server->input.virtual_keyboard->events.new_virtual_keyboard,
			&server->input.new_virtual_keyboard);
	server->input.request_set_cursor.notify = handle_request_set_cursor;
	wl_signal_add(&server->seat->events.request_set_cursor, &server->input.request_set_cursor);
	server->input.request_set_selection.notify = handle_request_set_selection;
	wl_signal_add(&server->seat->events.request_set_selection, &server->input.request_set_selection);
	server->input.request_set_primary_selection.notify = handle_request_set_primary_selection;
	wl_signal_add(&server->seat->events.request_set_primary_selection,
			&server->input.request_set_primary_selection);
	seat_update_capabilities(server);
	return true;
}

void seat_finish(struct qw_server *server) {
	if (!server->input.new_input.notify) {
		return;
	}
	struct qw_keyboard *keyboard, *tmp;
	wl_list_for_each_safe(keyboard, tmp, &server->input.keyboards, link) {
		keyboard_destroy(keyboard);
	}
	free_orphaned_keyboards(server);
	input_devices_finish(server);
	wl_list_remove(&server->input.new_input.link);
	wl_list_remove(&server->input.new_virtual_pointer.link);
	wl_list_remove(&server->input.new_virtual_keyboard.link);
	wl_list_remove(&server->input.request_set_cursor.link);
	wl_list_remove(&server->input.request_set_selection.link);
	wl_list_remove(&server->input.request_set_primary_selection.link);
}
