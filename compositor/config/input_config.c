#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xkbcommon/xkbcommon.h>

#include "config/config.h"
#include "config/input_config.h"

static bool fail(char *msg, size_t size, const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, size, fmt, ap);
	va_end(ap);
	return false;
}

void input_config_clear(struct qw_input_config *ic) {
	free(ic->match);
	free(ic->xkb_layout);
	free(ic->xkb_variant);
	free(ic->xkb_options);
	free(ic->xkb_model);
	*ic = (struct qw_input_config){
		.repeat_rate = -1,
		.repeat_delay = -1,
		.tap = -1,
		.natural_scroll = -1,
		.left_handed = -1,
		.middle_emulation = -1,
		.dwt = -1,
		.accel_profile = QW_ACCEL_UNSET,
	};
}

void input_config_finish(struct qw_config *config) {
	for (size_t i = 0; i < config->input_count; i++) {
		input_config_clear(&config->inputs[i]);
	}
	free(config->inputs);
	config->inputs = NULL;
	config->input_count = 0;
}

static bool parse_switch(const char *value, int *out) {
	if (strcmp(value, "on") == 0 || strcmp(value, "enabled") == 0) {
		*out = 1;
		return true;
	}
	if (strcmp(value, "off") == 0 || strcmp(value, "disabled") == 0) {
		*out = 0;
		return true;
	}
	return false;
}

static bool parse_int(const char *value, int min, int max, int *out) {
	char *end;
	long v = strtol(value, &end, 10);
	if (end == value || *end || v < min || v > max) {
		return false;
	}
	*out = (int)v;
	return true;
}

/* Whether xkbcommon can build a keymap from these names. */
static bool xkb_compiles(const struct qw_input_config *ic) {
	struct xkb_context *context = xkb_context_new(XKB_CONTEXT_NO_FLAGS);
	if (!context) {
		return false;
	}
	/* Its complaints would go to stderr with no file:line; ours say it. */
	xkb_context_set_log_level(context, XKB_LOG_LEVEL_CRITICAL);
	struct xkb_rule_names names = {
		.layout = ic->xkb_layout,
		.variant = ic->xkb_variant,
		.options = ic->xkb_options,
		.model = ic->xkb_model,
	};
	struct xkb_keymap *keymap = xkb_keymap_new_from_names(context, &names, 0);
	bool ok = keymap != NULL;
	xkb_keymap_unref(keymap);
	xkb_context_unref(context);
	return ok;
}

static char **xkb_field(struct qw_input_config *ic, const char *key) {
	if (strcmp(key, "xkb-layout") == 0) {
		return &ic->xkb_layout;
	} else if (strcmp(key, "xkb-variant") == 0) {
		return &ic->xkb_variant;
	} else if (strcmp(key, "xkb-options") == 0) {
		return &ic->xkb_options;
	} else if (strcmp(key, "xkb-model") == 0) {
		return &ic->xkb_model;
	}
	return NULL;
}

static int *switch_field(struct qw_input_config *ic, const char *key) {
	if (strcmp(key, "tap") == 0) {
		return &ic->tap;
	} else if (strcmp(key, "natural-scroll") == 0) {
		return &ic->natural_scroll;
	} else if (strcmp(key, "left-handed") == 0) {
		return &ic->left_handed;
	} else if (strcmp(key, "middle-emulation") == 0) {
		return &ic->middle_emulation;
	} else if (strcmp(key, "dwt") == 0) {
		return &ic->dwt;
	}
	return NULL;
}

/* Apply one key to `ic`, a copy: the caller keeps it only on success. */
static bool set_key(struct qw_input_config *ic, const char *key, const char *value, char *msg,
		size_t size) {
	char **xkb = xkb_field(ic, key);
	int *sw = switch_field(ic, key);
	if (xkb) {
		char *copy = strdup(value);
		if (!copy) {
			return fail(msg, size, "out of memory");
		}
		free(*xkb);
		*xkb = copy;
		if (!xkb_compiles(ic)) {
			return fail(msg, size,
					"%s %s: no keymap compiles from layout '%s', variant '%s', "
					"options '%s', model '%s'",
					key, value, ic->xkb_layout ? ic->xkb_layout : "",
					ic->xkb_variant ? ic->xkb_variant : "", ic->xkb_options ? ic->xkb_options : "",
					ic->xkb_model ? ic->xkb_model : "");
		}
		return true;
	}
	if (sw) {
		if (!parse_switch(value, sw)) {
			return fail(msg, size, "%s wants on or off, not '%s'", key, value);
		}
		return true;
	}
	if (strcmp(key, "repeat-rate") == 0) {
		if (!parse_int(value, 0, 1000, &ic->repeat_rate)) {
			return fail(msg, size, "repeat-rate wants keys a second from 0 to 1000, not '%s'",
					value);
		}
		return true;
	}
	if (strcmp(key, "repeat-delay") == 0) {
		if (!parse_int(value, 0, 10000, &ic->repeat_delay)) {
			return fail(msg, size, "repeat-delay wants milliseconds from 0 to 10000, not '%s'",
					value);
		}
		return true;
	}
	if (strcmp(key, "accel-profile") == 0) {
		if (strcmp(value, "flat") == 0) {
			ic->accel_profile = QW_ACCEL_FLAT;
		} else if (strcmp(value, "adaptive") == 0) {
			ic->accel_profile = QW_ACCEL_ADAPTIVE;
		} else {
			return fail(msg, size, "accel-profile wants flat or adaptive, not '%s'", value);
		}
		return true;
	}
	if (strcmp(key, "accel-speed") == 0) {
		char *end;
		double v = strtod(value, &end);
		if (end == value || *end || !isfinite(v) || v < -1 || v > 1) {
			return fail(msg, size, "accel-speed wants a number from -1 to 1, not '%s'", value);
		}
		ic->has_accel_speed = true;
		ic->accel_speed = v;
		return true;
	}
	return fail(msg, size,
			"unknown input setting '%s' (xkb-layout, xkb-variant, xkb-options, "
			"xkb-model, repeat-rate, repeat-delay, tap, natural-scroll, accel-profile, "
			"accel-speed, left-handed, middle-emulation, dwt)",
			key);
}

static bool copy_string(char **dst, const char *src) {
	*dst = src ? strdup(src) : NULL;
	return !src || *dst;
}

/* *dst = src, strings duplicated; false (dst cleared) when out of memory. */
static bool copy_config(struct qw_input_config *dst, const struct qw_input_config *src) {
	*dst = *src;
	dst->match = dst->xkb_layout = dst->xkb_variant = dst->xkb_options = dst->xkb_model = NULL;
	bool ok = copy_string(&dst->match, src->match) &&
			copy_string(&dst->xkb_layout, src->xkb_layout) &&
			copy_string(&dst->xkb_variant, src->xkb_variant) &&
			copy_string(&dst->xkb_options, src->xkb_options) &&
			copy_string(&dst->xkb_model, src->xkb_model);
	if (!ok) {
		input_config_clear(dst);
	}
	return ok;
}

bool input_config_set(struct qw_config *config, const char *match, char **words, size_t count,
		char *msg, size_t size) {
	if (count != 2) {
		return fail(msg, size,
				count < 2 ? "input %s: a setting wants a key and a value"
						  : "input %s: one value per setting",
				match);
	}
	struct qw_input_config *entry = NULL;
	for (size_t i = 0; i < config->input_count; i++) {
		if (strcmp(config->inputs[i].match, match) == 0) {
			entry = &config->inputs[i];
		}
	}
	struct qw_input_config work = { 0 };
	input_config_clear(&work);
	bool copied = entry ? copy_config(&work, entry) : (work.match = strdup(match)) != NULL;
	if (!copied) {
		return fail(msg, size, "out of memory");
	}
	if (!set_key(&work, words[0], words[1], msg, size)) {
		input_config_clear(&work);
		return false;
	}
	if (entry) {
		input_config_clear(entry);
		*entry = work;
		return true;
	}
	struct qw_input_config *grown =
			realloc(config->inputs, (config->input_count + 1) * sizeof(*grown));
	if (!grown) {
		input_config_clear(&work);
		return fail(msg, size, "out of memory");
	}
	config->inputs = grown;
	config->inputs[config->input_count++] = work;
	return true;
}

bool input_config_matches(const char *match, const char *name, const char *type, bool touchpad) {
	if (strcmp(match, "*") == 0) {
		return true;
	}
	if (strncmp(match, "type:", 5) == 0) {
		const char *want = match + 5;
		return strcmp(want, type) == 0 || (touchpad && strcmp(want, "touchpad") == 0);
	}
	return name && strcmp(match, name) == 0;
}

static void merge_string(char **dst, const char *src) {
	if (src) {
		char *copy = strdup(src);
		if (copy) {
			free(*dst);
			*dst = copy;
		}
	}
}

void input_config_merge(const struct qw_config *config, const char *name, const char *type,
		bool touchpad, struct qw_input_config *out) {
	input_config_clear(out);
	for (size_t i = 0; i < config->input_count; i++) {
		const struct qw_input_config *ic = &config->inputs[i];
		if (!input_config_matches(ic->match, name, type, touchpad)) {
			continue;
		}
		merge_string(&out->xkb_layout, ic->xkb_layout);
		merge_string(&out->xkb_variant, ic->xkb_variant);
		merge_string(&out->xkb_options, ic->xkb_options);
		merge_string(&out->xkb_model, ic->xkb_model);
		int *fields[] = { &out->repeat_rate, &out->repeat_delay, &out->tap, &out->natural_scroll,
			&out->left_handed, &out->middle_emulation, &out->dwt };
		const int values[] = { ic->repeat_rate, ic->repeat_delay, ic->tap, ic->natural_scroll,
			ic->left_handed, ic->middle_emulation, ic->dwt };
		for (size_t k = 0; k < sizeof(values) / sizeof(values[0]); k++) {
			if (values[k] >= 0) {
				*fields[k] = values[k];
			}
		}
		if (ic->accel_profile != QW_ACCEL_UNSET) {
			out->accel_profile = ic->accel_profile;
		}
		if (ic->has_accel_speed) {
			out->has_accel_speed = true;
			out->accel_speed = ic->accel_speed;
		}
	}
}
