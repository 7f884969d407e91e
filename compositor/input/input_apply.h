/*
 * Applying the config's input settings (input_config.h) to a device: an
 * xkb keymap and key repeat for a keyboard of the backend (a virtual
 * keyboard brings its own keymap), libinput's settings for a libinput
 * pointer or touchpad. Settings a device cannot take are left out of what
 * is reported as applied.
 */
#ifndef QOSWAY_INPUT_APPLY_H
#define QOSWAY_INPUT_APPLY_H

#include <stdbool.h>

struct json_object;
struct qw_input_config;
struct qw_config;
struct wlr_input_device;

/* "keyboard", "pointer", "touch", ... */
const char *input_apply_type_name(struct wlr_input_device *device);
/* A pointer that can tap: what `type:touchpad` matches. */
bool input_apply_is_touchpad(struct wlr_input_device *device);

/*
 * Apply what `config` says for the device; *applied gets what took effect.
 * Returns false (settings left as they were) only if a keyboard's keymap
 * cannot be compiled at all.
 */
bool input_apply(const struct qw_config *config, struct wlr_input_device *device,
		bool virtual_device, struct qw_input_config *applied);

/* The applied settings as JSON (only those set). */
struct json_object *input_apply_json(const struct qw_input_config *applied);

#endif
