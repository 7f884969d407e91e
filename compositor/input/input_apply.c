#include <json.h>
#include <libinput.h>
#include <stdlib.h>
#include <wlr/backend/libinput.h>
#include <wlr/types/wlr_input_device.h>
#include <wlr/types/wlr_keyboard.h>
#include <wlr/util/log.h>
#include <xkbcommon/xkbcommon.h>

#include "config/config.h"
#include "input/input_apply.h"
#include "config/input_config.h"

#define DEFAULT_REPEAT_RATE 25
#define DEFAULT_REPEAT_DELAY 600

const char *input_apply_type_name(struct wlr_input_device *device) {
	switch (device->type) {
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

static struct libinput_device *libinput_handle(struct wlr_input_device *device) {
	return wlr_input_device_is_libinput(device) ? wlr_libinput_get_device_handle(device) : NULL;
}

bool input_apply_is_touchpad(struct wlr_input_device *device) {
	struct libinput_device *li = libinput_handle(device);
	return device->type == WLR_INPUT_DEVICE_POINTER && li &&
			libinput_device_config_tap_get_finger_count(li) > 0;
}

static bool apply_keyboard(struct wlr_input_device *device, struct qw_input_config *want) {
	struct xkb_context *context = xkb_context_new(XKB_CONTEXT_NO_FLAGS);
	if (!context) {
		return false;
	}
	struct xkb_rule_names names = {
		.layout = want->xkb_layout,
		.variant = want->xkb_variant,
		.options = want->xkb_options,
		.model = want->xkb_model,
	};
	/* Unset names fall back to XKB_DEFAULT_*, then to xkbcommon's us. */
	struct xkb_keymap *keymap = xkb_keymap_new_from_names(context, &names, 0);
	if (!keymap) {
		wlr_log(WLR_ERROR,
				"input %s: the configured xkb names do not compile together; "
				"keeping the keymap it has",
				device->name);
		xkb_context_unref(context);
		return false;
	}
	wlr_keyboard_set_keymap(device->keyboard, keymap);
	xkb_keymap_unref(keymap);
	xkb_context_unref(context);
	if (want->repeat_rate < 0) {
		want->repeat_rate = DEFAULT_REPEAT_RATE;
	}
	if (want->repeat_delay < 0) {
		want->repeat_delay = DEFAULT_REPEAT_DELAY;
	}
	wlr_keyboard_set_repeat_info(device->keyboard, want->repeat_rate, want->repeat_delay);
	return true;
}

/* Each libinput setting the device supports; what it does not is unset. */
static void apply_libinput(struct libinput_device *li, struct qw_input_config *want) {
	if (want->tap >= 0) {
		if (libinput_device_config_tap_get_finger_count(li) > 0) {
			libinput_device_config_tap_set_enabled(li,
					want->tap ? LIBINPUT_CONFIG_TAP_ENABLED : LIBINPUT_CONFIG_TAP_DISABLED);
		} else {
			want->tap = -1;
		}
	}
	if (want->natural_scroll >= 0) {
		if (libinput_device_config_scroll_has_natural_scroll(li)) {
			libinput_device_config_scroll_set_natural_scroll_enabled(li, want->natural_scroll);
		} else {
			want->natural_scroll = -1;
		}
	}
	if (want->left_handed >= 0) {
		if (libinput_device_config_left_handed_is_available(li)) {
			libinput_device_config_left_handed_set(li, want->left_handed);
		} else {
			want->left_handed = -1;
		}
	}
	if (want->middle_emulation >= 0) {
		if (libinput_device_config_middle_emulation_is_available(li)) {
			libinput_device_config_middle_emulation_set_enabled(li,
					want->middle_emulation ? LIBINPUT_CONFIG_MIDDLE_EMULATION_ENABLED
										   : LIBINPUT_CONFIG_MIDDLE_EMULATION_DISABLED);
		} else {
			want->middle_emulation = -1;
		}
	}
	if (want->dwt >= 0) {
		if (libinput_device_config_dwt_is_available(li)) {
			libinput_device_config_dwt_set_enabled(li,
					want->dwt ? LIBINPUT_CONFIG_DWT_ENABLED : LIBINPUT_CONFIG_DWT_DISABLED);
		} else {
			want->dwt = -1;
		}
	}
	bool accel = libinput_device_config_accel_is_available(li);
	if (want->accel_profile != QW_ACCEL_UNSET) {
		if (accel) {
			libinput_device_config_accel_set_profile(li,
					want->accel_profile == QW_ACCEL_FLAT ? LIBINPUT_CONFIG_ACCEL_PROFILE_FLAT
														 : LIBINPUT_CONFIG_ACCEL_PROFILE_ADAPTIVE);
		} else {
			want->accel_profile = QW_ACCEL_UNSET;
		}
	}
	if (want->has_accel_speed) {
		if (accel) {
			libinput_device_config_accel_set_speed(li, want->accel_speed);
		} else {
			want->has_accel_speed = false;
		}
	}
}

/* Settings the device has no use for are not reported as applied. */
static void drop_keyboard_settings(struct qw_input_config *c) {
	free(c->xkb_layout);
	free(c->xkb_variant);
	free(c->xkb_options);
	free(c->xkb_model);
	c->xkb_layout = c->xkb_variant = c->xkb_options = c->xkb_model = NULL;
	c->repeat_rate = c->repeat_delay = -1;
}

static void drop_pointer_settings(struct qw_input_config *c) {
	c->tap = c->natural_scroll = c->left_handed = c->middle_emulation = c->dwt = -1;
	c->accel_profile = QW_ACCEL_UNSET;
	c->has_accel_speed = false;
}

bool input_apply(const struct qw_config *config, struct wlr_input_device *device,
		bool virtual_device, struct qw_input_config *applied) {
	struct qw_input_config want = { 0 };
	input_config_clear(&want);
	input_config_merge(config, device->name, input_apply_type_name(device),
			input_apply_is_touchpad(device), &want);
	bool ok = true;
	if (device->type == WLR_INPUT_DEVICE_KEYBOARD && !virtual_device) {
		ok = apply_keyboard(device, &want);
		if (!ok) {
			drop_keyboard_settings(&want);
		}
	} else {
		drop_keyboard_settings(&want);
	}
	struct libinput_device *li = libinput_handle(device);
	if (li) {
		apply_libinput(li, &want);
	} else {
		drop_pointer_settings(&want);
	}
	input_config_clear(applied);
	*applied = want;
	return ok;
}

static void add_switch(struct json_object *obj, const char *key, int value) {
	if (value >= 0) {
		json_object_object_add(obj, key, json_object_new_boolean(value));
	}
}

static void add_string(struct json_object *obj, const char *key, const char *value) {
	if (value) {
		json_object_object_add(obj, key, json_object_new_string(value));
	}
}

struct json_object *input_apply_json(const struct qw_input_config *a) {
	struct json_object *obj = json_object_new_object();
	add_string(obj, "xkb_layout", a->xkb_layout);
	add_string(obj, "xkb_variant", a->xkb_variant);
	add_string(obj, "xkb_options", a->xkb_options);
	add_string(obj, "xkb_model", a->xkb_model);
	if (a->repeat_rate >= 0) {
		json_object_object_add(obj, "repeat_rate", json_object_new_int(a->repeat_rate));
	}
	if (a->repeat_delay >= 0) {
		json_object_object_add(obj, "repeat_delay", json_object_new_int(a->repeat_delay));
	}
	add_switch(obj, "tap", a->tap);
	add_switch(obj, "natural_scroll", a->natural_scroll);
	add_switch(obj, "left_handed", a->left_handed);
	add_switch(obj, "middle_emulation", a->middle_emulation);
	add_switch(obj, "dwt", a->dwt);
	if (a->accel_profile != QW_ACCEL_UNSET) {
		add_string(obj, "accel_profile", a->accel_profile == QW_ACCEL_FLAT ? "flat" : "adaptive");
	}
	if (a->has_accel_speed) {
		json_object_object_add(obj, "accel_speed", json_object_new_double(a->accel_speed));
	}
	return obj;
}
