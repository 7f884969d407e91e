#include <json.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wlr/backend/headless.h>
#include <wlr/types/wlr_input_device.h>
#include <wlr/types/wlr_pointer.h>
#include <wlr/types/wlr_tablet_tool.h>
#include <wlr/types/wlr_touch.h>
#include <wlr/util/log.h>

#include "input/input_devices.h"
#include "input/input_emit.h"
#include "server.h"

/* What a request asks for, all checked before anything is raised. */
struct emit_args {
	struct wlr_input_device *device;
	const char *event;
	double x, y, dx, dy, scale, rotation, pressure;
	int64_t id, fingers;
	bool cancelled;
};

/*
 * The pen of a headless tablet: tablet events name the tool they come
 * from. It lives as long as the device and is announced gone with it.
 */
struct emit_tool {
	struct wlr_tablet_tool tool;
	struct wl_listener device_destroy;
};

static uint32_t now_msec(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint32_t)(ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

static bool get_number(struct json_object *req, const char *key, bool required, double lo,
		double hi, double *out, char *err, size_t err_len) {
	struct json_object *obj;
	if (!json_object_object_get_ex(req, key, &obj)) {
		if (required) {
			snprintf(err, err_len, "missing number '%s'", key);
			return false;
		}
		return true;
	}
	if (!json_object_is_type(obj, json_type_int) && !json_object_is_type(obj, json_type_double)) {
		snprintf(err, err_len, "'%s' must be a number", key);
		return false;
	}
	double v = json_object_get_double(obj);
	if (!isfinite(v) || v < lo || v > hi) {
		snprintf(err, err_len, "'%s' must be between %g and %g", key, lo, hi);
		return false;
	}
	*out = v;
	return true;
}

static bool get_int(struct json_object *req, const char *key, bool required, int64_t lo, int64_t hi,
		int64_t *out, char *err, size_t err_len) {
	struct json_object *obj;
	if (!json_object_object_get_ex(req, key, &obj)) {
		if (required) {
			snprintf(err, err_len, "missing integer '%s'", key);
			return false;
		}
		return true;
	}
	if (!json_object_is_type(obj, json_type_int)) {
		snprintf(err, err_len, "'%s' must be an integer", key);
		return false;
	}
	int64_t v = json_object_get_int64(obj);
	if (v < lo || v > hi) {
		snprintf(err, err_len, "'%s' must be between %lld and %lld", key, (long long)lo,
				(long long)hi);
		return false;
	}
	*out = v;
	return true;
}

static bool in_list(const char *name, const char *const *names) {
	for (size_t i = 0; names[i]; i++) {
		if (strcmp(name, names[i]) == 0) {
			return true;
		}
	}
	return false;
}

static const char *const touch_events[] = { "down", "motion", "up", "cancel", NULL };
static const char *const gesture_events[] = { "swipe-begin", "swipe-update", "swipe-end",
	"pinch-begin", "pinch-update", "pinch-end", "hold-begin", "hold-end", NULL };
static const char *const tablet_events[] = { "proximity-in", "proximity-out", "tip-down", "tip-up",
	"motion", NULL };

static bool parse(struct qw_server *server, const char *kind, struct json_object *req,
		struct emit_args *a, char *err, size_t err_len) {
	int64_t device_id = 0;
	if (!get_int(req, "device", true, 0, UINT32_MAX, &device_id, err, err_len)) {
		return false;
	}
	a->device = input_devices_find(server, (uint32_t)device_id);
	if (!a->device) {
		snprintf(err, err_len, "no input device %lld (see the 'inputs' command)",
				(long long)device_id);
		return false;
	}
	if (!wlr_input_device_is_headless(a->device)) {
		snprintf(err, err_len, "input device %lld is not a headless device", (long long)device_id);
		return false;
	}
	enum wlr_input_device_type want;
	const char *const *events;
	const char *type_name;
	if (strcmp(kind, "touch") == 0) {
		want = WLR_INPUT_DEVICE_TOUCH;
		events = touch_events;
		type_name = "touch";
	} else if (strcmp(kind, "gesture") == 0) {
		want = WLR_INPUT_DEVICE_POINTER;
		events = gesture_events;
		type_name = "pointer";
	} else {
		want = WLR_INPUT_DEVICE_TABLET_TOOL;
		events = tablet_events;
		type_name = "tablet-tool";
	}
	if (a->device->type != want) {
		snprintf(err, err_len, "input device %lld is not a %s device", (long long)device_id,
				type_name);
		return false;
	}
	struct json_object *event;
	if (!json_object_object_get_ex(req, "event", &event) ||
			!json_object_is_type(event, json_type_string)) {
		snprintf(err, err_len, "missing string 'event'");
		return false;
	}
	a->event = json_object_get_string(event);
	if (!in_list(a->event, events)) {
		snprintf(err, err_len, "unknown %s event '%.32s'", kind, a->event);
		return false;
	}
	bool positioned = (events == touch_events &&
							  (strcmp(a->event, "down") == 0 || strcmp(a->event, "motion") == 0)) ||
			(events == tablet_events && strcmp(a->event, "proximity-out") != 0);
	a->fingers = 2;
	a->scale = 1.0;
	struct json_object *cancelled;
	if (json_object_object_get_ex(req, "cancelled", &cancelled)) {
		if (!json_object_is_type(cancelled, json_type_boolean)) {
			snprintf(err, err_len, "'cancelled' must be true or false");
			return false;
		}
		a->cancelled = json_object_get_boolean(cancelled);
	}
	return get_number(req, "x", positioned, 0, 1, &a->x, err, err_len) &&
			get_number(req, "y", positioned, 0, 1, &a->y, err, err_len) &&
			get_int(req, "id", events == touch_events, 0, INT32_MAX, &a->id, err, err_len) &&
			get_int(req, "fingers", false, 1, 10, &a->fingers, err, err_len) &&
			get_number(req, "dx", false, -1e6, 1e6, &a->dx, err, err_len) &&
			get_number(req, "dy", false, -1e6, 1e6, &a->dy, err, err_len) &&
			get_number(req, "scale", false, 0, 1e6, &a->scale, err, err_len) &&
			get_number(req, "rotation", false, -360, 360, &a->rotation, err, err_len) &&
			get_number(req, "pressure", false, 0, 1, &a->pressure, err, err_len);
}

static void emit_touch(struct emit_args *a) {
	struct wlr_touch *touch = a->device->touch;
	uint32_t time = now_msec();
	int32_t id = (int32_t)a->id;
	if (strcmp(a->event, "down") == 0) {
		struct wlr_event_touch_down ev = { .device = a->device,
			.time_msec = time,
			.touch_id = id,
			.x = a->x,
			.y = a->y };
		wl_signal_emit(&touch->events.down, &ev);
	} else if (strcmp(a->event, "motion") == 0) {
		struct wlr_event_touch_motion ev = { .device = a->device,
			.time_msec = time,
			.touch_id = id,
			.x = a->x,
			.y = a->y };
		wl_signal_emit(&touch->events.motion, &ev);
	} else if (strcmp(a->event, "up") == 0) {
		struct wlr_event_touch_up ev = { .device = a->device, .time_msec = time, .touch_id = id };
		wl_signal_emit(&touch->events.up, &ev);
	} else {
		struct wlr_event_touch_cancel ev = { .device = a->device,
			.time_msec = time,
			.touch_id = id };
		wl_signal_emit(&touch->events.cancel, &ev);
	}
	/* Like libinput, every touch event ends its frame at once. */
	wl_signal_emit(&touch->events.frame, NULL);
}

static void emit_gesture(struct emit_args *a) {
	struct wlr_pointer *p = a->device->pointer;
	struct wlr_input_device *d = a->device;
	uint32_t time = now_msec();
	uint32_t fingers = (uint32_t)a->fingers;
	const char *e = a->event;
	if (strcmp(e, "swipe-begin") == 0) {
		struct wlr_event_pointer_swipe_begin ev = { d, time, fingers };
		wl_signal_emit(&p->events.swipe_begin, &ev);
	} else if (strcmp(e, "swipe-update") == 0) {
		struct wlr_event_pointer_swipe_update ev = { d, time, fingers, a->dx, a->dy };
		wl_signal_emit(&p->events.swipe_update, &ev);
	} else if (strcmp(e, "swipe-end") == 0) {
		struct wlr_event_pointer_swipe_end ev = { d, time, a->cancelled };
		wl_signal_emit(&p->events.swipe_end, &ev);
	} else if (strcmp(e, "pinch-begin") == 0) {
		struct wlr_event_pointer_pinch_begin ev = { d, time, fingers };
		wl_signal_emit(&p->events.pinch_begin, &ev);
	} else if (strcmp(e, "pinch-update") == 0) {
		struct wlr_event_pointer_pinch_update ev = { d, time, fingers, a->dx, a->dy, a->scale,
			a->rotation };
		wl_signal_emit(&p->events.pinch_update, &ev);
	} else if (strcmp(e, "pinch-end") == 0) {
		struct wlr_event_pointer_pinch_end ev = { d, time, a->cancelled };
		wl_signal_emit(&p->events.pinch_end, &ev);
	} else if (strcmp(e, "hold-begin") == 0) {
		struct wlr_event_pointer_hold_begin ev = { d, time, fingers };
		wl_signal_emit(&p->events.hold_begin, &ev);
	} else {
		struct wlr_event_pointer_hold_end ev = { d, time, a->cancelled };
		wl_signal_emit(&p->events.hold_end, &ev);
	}
}

static void handle_tool_device_destroy(struct wl_listener *listener, void *data) {
	struct emit_tool *et = wl_container_of(listener, et, device_destroy);
	struct wlr_input_device *device = data;
	wl_signal_emit(&et->tool.events.destroy, &et->tool);
	wl_list_remove(&et->device_destroy.link);
	device->data = NULL;
	free(et);
}

static struct wlr_tablet_tool *device_tool(struct wlr_input_device *device) {
	if (device->data) {
		return &((struct emit_tool *)device->data)->tool;
	}
	struct emit_tool *et = calloc(1, sizeof(*et));
	if (!et) {
		return NULL;
	}
	et->tool.type = WLR_TABLET_TOOL_TYPE_PEN;
	et->tool.pressure = true;
	wl_signal_init(&et->tool.events.destroy);
	et->device_destroy.notify = handle_tool_device_destroy;
	wl_signal_add(&device->events.destroy, &et->device_destroy);
	device->data = et;
	return &et->tool;
}

static bool emit_tablet(struct emit_args *a, char *err, size_t err_len) {
	struct wlr_tablet_tool *tool = device_tool(a->device);
	if (!tool) {
		snprintf(err, err_len, "out of memory for the headless tablet's pen");
		return false;
	}
	struct wlr_tablet *tablet = a->device->tablet;
	uint32_t time = now_msec();
	const char *e = a->event;
	if (strcmp(e, "proximity-in") == 0 || strcmp(e, "proximity-out") == 0) {
		struct wlr_event_tablet_tool_proximity ev = { .device = a->device,
			.tool = tool,
			.time_msec = time,
			.x = a->x,
			.y = a->y,
			.state = e[10] == 'i' ? WLR_TABLET_TOOL_PROXIMITY_IN : WLR_TABLET_TOOL_PROXIMITY_OUT };
		wl_signal_emit(&tablet->events.proximity, &ev);
	} else if (strcmp(e, "tip-down") == 0 || strcmp(e, "tip-up") == 0) {
		struct wlr_event_tablet_tool_tip ev = { .device = a->device,
			.tool = tool,
			.time_msec = time,
			.x = a->x,
			.y = a->y,
			.state = e[4] == 'd' ? WLR_TABLET_TOOL_TIP_DOWN : WLR_TABLET_TOOL_TIP_UP };
		wl_signal_emit(&tablet->events.tip, &ev);
	} else {
		struct wlr_event_tablet_tool_axis ev = { .device = a->device,
			.tool = tool,
			.time_msec = time,
			.updated_axes =
					WLR_TABLET_TOOL_AXIS_X | WLR_TABLET_TOOL_AXIS_Y | WLR_TABLET_TOOL_AXIS_PRESSURE,
			.x = a->x,
			.y = a->y,
			.pressure = a->pressure };
		wl_signal_emit(&tablet->events.axis, &ev);
	}
	return true;
}

bool input_emit(struct qw_server *server, const char *kind, struct json_object *req, char *err,
		size_t err_len) {
	struct emit_args a = { 0 };
	if (!parse(server, kind, req, &a, err, err_len)) {
		return false;
	}
	if (strcmp(kind, "touch") == 0) {
		emit_touch(&a);
	} else if (strcmp(kind, "gesture") == 0) {
		emit_gesture(&a);
	} else {
		return emit_tablet(&a, err, err_len);
	}
	return true;
}
