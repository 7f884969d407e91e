#include <json.h>
#include <stdlib.h>
#include <wlr/types/wlr_cursor.h>
#include <wlr/types/wlr_input_device.h>
#include <wlr/types/wlr_keyboard.h>
#include <wlr/types/wlr_seat.h>
#include <wlr/util/log.h>

#include "input_devices.h"
#include "ipc_commands.h"
#include "pointer_constraints.h"
#include "server.h"

struct qw_input_device {
	struct wl_list link; /* qw_server.input_devices */
	struct wlr_input_device *device;
	bool virtual_device;
	struct wl_listener destroy;
};

static void device_free(struct qw_input_device *dev) {
	wl_list_remove(&dev->destroy.link);
	wl_list_remove(&dev->link);
	free(dev);
}

static void handle_destroy(struct wl_listener *listener, void *data) {
	struct qw_input_device *dev = wl_container_of(listener, dev, destroy);
	device_free(dev);
}

void input_devices_init(struct qw_server *server) {
	wl_list_init(&server->input_devices);
}

void input_devices_finish(struct qw_server *server) {
	if (!server->input_devices.next) {
		return;
	}
	struct qw_input_device *dev, *tmp;
	wl_list_for_each_safe(dev, tmp, &server->input_devices, link) {
		device_free(dev);
	}
}

void input_devices_add(struct qw_server *server, struct wlr_input_device *device,
		bool virtual_device) {
	struct qw_input_device *dev = calloc(1, sizeof(*dev));
	if (!dev) {
		wlr_log(WLR_ERROR, "out of memory tracking input device %s", device->name);
		return;
	}
	dev->device = device;
	dev->virtual_device = virtual_device;
	dev->destroy.notify = handle_destroy;
	wl_signal_add(&device->events.destroy, &dev->destroy);
	wl_list_insert(server->input_devices.prev, &dev->link);
}

size_t input_devices_count(struct qw_server *server, int type) {
	size_t n = 0;
	struct qw_input_device *dev;
	wl_list_for_each(dev, &server->input_devices, link) {
		n += (int)dev->device->type == type;
	}
	return n;
}

static const char *type_name(enum wlr_input_device_type type) {
	switch (type) {
	case WLR_INPUT_DEVICE_KEYBOARD:
		return "keyboard";
	case WLR_INPUT_DEVICE_POINTER:
		return "pointer";
	case WLR_INPUT_DEVICE_TOUCH:
		return "touch";
	case WLR_INPUT_DEVICE_TABLET_TOOL:
		return "tablet-tool";
	case WLR_INPUT_DEVICE_TABLET_PAD:
		return "tablet-pad";
	case WLR_INPUT_DEVICE_SWITCH:
		return "switch";
	}
	return "unknown";
}

static struct json_object *seat_json(struct qw_server *server) {
	struct json_object *seat = json_object_new_object();
	struct json_object *caps = json_object_new_array();
	json_object_object_add(seat, "capabilities", caps);
	if (!server->seat) {
		json_object_object_add(seat, "name", NULL);
		return seat;
	}
	json_object_object_add(seat, "name", ipc_json_text(server->seat->name));
	uint32_t c = server->seat->capabilities;
	if (c & WL_SEAT_CAPABILITY_POINTER) {
		json_object_array_add(caps, json_object_new_string("pointer"));
	}
	if (c & WL_SEAT_CAPABILITY_KEYBOARD) {
		json_object_array_add(caps, json_object_new_string("keyboard"));
	}
	if (c & WL_SEAT_CAPABILITY_TOUCH) {
		json_object_array_add(caps, json_object_new_string("touch"));
	}
	if (server->cursor) {
		struct json_object *cursor = json_object_new_object();
		json_object_object_add(cursor, "x", json_object_new_double(server->cursor->x));
		json_object_object_add(cursor, "y", json_object_new_double(server->cursor->y));
		json_object_object_add(seat, "cursor", cursor);
	}
	const char *constraint = pointer_constraints_active_type(server);
	json_object_object_add(seat, "pointer_constraint",
			constraint ? json_object_new_string(constraint) : NULL);
	return seat;
}

struct json_object *input_devices_json(struct qw_server *server) {
	struct json_object *reply = json_object_new_object();
	struct json_object *list = json_object_new_array();
	if (server->input_devices.next) {
		struct qw_input_device *dev;
		wl_list_for_each(dev, &server->input_devices, link) {
			struct json_object *obj = json_object_new_object();
			json_object_object_add(obj, "name", ipc_json_text(dev->device->name));
			json_object_object_add(obj, "type",
					json_object_new_string(type_name(dev->device->type)));
			json_object_object_add(obj, "virtual", json_object_new_boolean(dev->virtual_device));
			if (dev->device->type == WLR_INPUT_DEVICE_KEYBOARD) {
				json_object_object_add(obj, "keymap",
						json_object_new_boolean(dev->device->keyboard->keymap != NULL));
			}
			json_object_array_add(list, obj);
		}
	}
	json_object_object_add(reply, "devices", list);
	json_object_object_add(reply, "seat", seat_json(server));
	return reply;
}
