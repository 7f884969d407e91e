#include <json.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <wlr/backend/headless.h>
#include <wlr/backend/libinput.h>
#include <wlr/types/wlr_cursor.h>
#include <wlr/types/wlr_input_device.h>
#include <wlr/types/wlr_keyboard.h>
#include <wlr/types/wlr_seat.h>
#include <wlr/util/log.h>

#include "input/input_apply.h"
#include "config/input_config.h"
#include "input/input_devices.h"
#include "ipc/ipc_commands.h"
#include "input/pointer_constraints.h"
#include "server.h"

struct qw_input_device {
	struct wl_list link; /* qw_server.input.devices */
	struct wlr_input_device *device;
	uint32_t id; /* for the IPC: headless devices all share one name */
	bool virtual_device;
	struct qw_input_config applied; /* what the config set and took effect */
	struct wl_listener destroy;
};

static void device_free(struct qw_input_device *dev) {
	input_config_clear(&dev->applied);
	wl_list_remove(&dev->destroy.link);
	wl_list_remove(&dev->link);
	free(dev);
}

static void handle_destroy(struct wl_listener *listener, void *data) {
	struct qw_input_device *dev = wl_container_of(listener, dev, destroy);
	device_free(dev);
}

void input_devices_init(struct qw_server *server) {
	wl_list_init(&server->input.devices);
}

void input_devices_finish(struct qw_server *server) {
	if (!server->input.devices.next) {
		return;
	}
	struct qw_input_device *dev, *tmp;
	wl_list_for_each_safe(dev, tmp, &server->input.devices, link) {
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
	dev->id = server->input.next_device_id++;
	dev->virtual_device = virtual_device;
	input_config_clear(&dev->applied);
	input_apply(&server->config, device, virtual_device, &dev->applied);
	dev->destroy.notify = handle_destroy;
	wl_signal_add(&device->events.destroy, &dev->destroy);
	wl_list_insert(server->input.devices.prev, &dev->link);
}

struct wlr_input_device *input_devices_find(struct qw_server *server, uint32_t id) {
	struct qw_input_device *dev;
	wl_list_for_each(dev, &server->input.devices, link) {
		if (dev->id == id) {
			return dev->device;
		}
	}
	return NULL;
}

size_t input_devices_count(struct qw_server *server, int type) {
	size_t n = 0;
	struct qw_input_device *dev;
	wl_list_for_each(dev, &server->input.devices, link) {
		n += (int)dev->device->type == type;
	}
	return n;
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
	if (server->input.devices.next) {
		struct qw_input_device *dev;
		wl_list_for_each(dev, &server->input.devices, link) {
			struct json_object *obj = json_object_new_object();
			json_object_object_add(obj, "id", json_object_new_int64(dev->id));
			json_object_object_add(obj, "name", ipc_json_text(dev->device->name));
			json_object_object_add(obj, "type",
					json_object_new_string(input_apply_type_name(dev->device)));
			json_object_object_add(obj, "virtual", json_object_new_boolean(dev->virtual_device));
			json_object_object_add(obj, "libinput",
					json_object_new_boolean(wlr_input_device_is_libinput(dev->device)));
			json_object_object_add(obj, "settings", input_apply_json(&dev->applied));
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

bool input_devices_reload(struct qw_server *server, char *err, size_t err_len) {
	if (!server->config_path) {
		return true; /* started on the built-in defaults */
	}
	struct qw_config fresh;
	config_init_defaults(&fresh);
	char *text = NULL;
	size_t text_len = 0;
	FILE *errors = open_memstream(&text, &text_len);
	bool read = errors && config_load_file(&fresh, server->config_path, errors);
	if (errors) {
		fclose(errors);
	}
	bool ok = read && fresh.error_count == 0;
	if (!ok) {
		const char *first = text && *text ? text : "cannot read the file\n";
		snprintf(err, err_len, "input settings not reloaded: %.*s", (int)strcspn(first, "\n"),
				first);
	} else {
		/* Swap the whole list, so no device sees half of the new settings. */
		struct qw_input_config *old = server->config.inputs;
		size_t old_count = server->config.input_count;
		server->config.inputs = fresh.inputs;
		server->config.input_count = fresh.input_count;
		fresh.inputs = old;
		fresh.input_count = old_count;
		struct qw_input_device *dev;
		wl_list_for_each(dev, &server->input.devices, link) {
			input_apply(&server->config, dev->device, dev->virtual_device, &dev->applied);
		}
	}
	free(text);
	config_finish(&fresh);
	return ok;
}

struct qw_input_device_type_name {
	const char *name;
	enum wlr_input_device_type type;
};

bool input_devices_add_headless(struct qw_server *server, const char *type, uint32_t *id, char *err,
		size_t err_len) {
	static const struct qw_input_device_type_name types[] = {
		{ "keyboard", WLR_INPUT_DEVICE_KEYBOARD },
		{ "pointer", WLR_INPUT_DEVICE_POINTER },
		{ "touch", WLR_INPUT_DEVICE_TOUCH },
		{ "tablet-tool", WLR_INPUT_DEVICE_TABLET_TOOL },
		{ "tablet-pad", WLR_INPUT_DEVICE_TABLET_PAD },
	};
	if (!server->headless_backend) {
		snprintf(err, err_len, "input-add needs a headless backend; this session has none");
		return false;
	}
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		if (strcmp(type, types[i].name) == 0) {
			/* The backend announces the device at once, so it is the
			 * last one tracked. */
			uint32_t next = server->input.next_device_id;
			if (!wlr_headless_add_input_device(server->headless_backend, types[i].type) ||
					server->input.next_device_id == next) {
				snprintf(err, err_len, "the headless backend could not add a %s", type);
				return false;
			}
			*id = server->input.next_device_id - 1;
			return true;
		}
	}
	snprintf(err, err_len,
			"input-add wants type keyboard, pointer, touch, tablet-tool or tablet-pad, "
			"not '%.32s'",
			type);
	return false;
}
