#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wayland-server-protocol.h>

#include "config/config.h"
#include "config/output_config.h"
#include "qos/params.h"

static const char *const transform_names[] = {
	[WL_OUTPUT_TRANSFORM_NORMAL] = "normal",
	[WL_OUTPUT_TRANSFORM_90] = "90",
	[WL_OUTPUT_TRANSFORM_180] = "180",
	[WL_OUTPUT_TRANSFORM_270] = "270",
	[WL_OUTPUT_TRANSFORM_FLIPPED] = "flipped",
	[WL_OUTPUT_TRANSFORM_FLIPPED_90] = "flipped-90",
	[WL_OUTPUT_TRANSFORM_FLIPPED_180] = "flipped-180",
	[WL_OUTPUT_TRANSFORM_FLIPPED_270] = "flipped-270",
};

#define TRANSFORM_COUNT (sizeof(transform_names) / sizeof(transform_names[0]))

const char *output_transform_name(int transform) {
	return transform >= 0 && (size_t)transform < TRANSFORM_COUNT ? transform_names[transform] : "?";
}

static bool fail(char *msg, size_t size, const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, size, fmt, ap);
	va_end(ap);
	return false;
}

/* An optionally signed whole number within +-limit; the byte past it, or NULL. */
static const char *parse_coordinate(const char *s, int *out) {
	bool negative = *s == '-';
	uint64_t v;
	const char *end = qos_parse_decimal(s + negative, 0, 1000000, &v);
	if (!end || memchr(s, '.', (size_t)(end - s))) {
		return NULL;
	}
	*out = negative ? -(int)v : (int)v;
	return end;
}

/* "X,Y" in one word, or X and Y as two. */
static bool parse_position(char **words, size_t count, int *x, int *y) {
	if (count == 1) {
		const char *p = parse_coordinate(words[0], x);
		return p && *p == ',' && (p = parse_coordinate(p + 1, y)) && !*p;
	}
	if (count == 2) {
		const char *p = parse_coordinate(words[0], x);
		const char *q = p && !*p ? parse_coordinate(words[1], y) : NULL;
		return q && !*q;
	}
	return false;
}

static struct qw_output_config *find_or_add(struct qw_config *config, const char *name) {
	for (size_t i = 0; i < config->output_count; i++) {
		if (strcmp(config->outputs[i].name, name) == 0) {
			return &config->outputs[i];
		}
	}
	char *copy = strdup(name);
	struct qw_output_config *grown =
			copy ? realloc(config->outputs, (config->output_count + 1) * sizeof(*grown)) : NULL;
	if (!grown) {
		free(copy);
		return NULL;
	}
	config->outputs = grown;
	struct qw_output_config *oc = &config->outputs[config->output_count++];
	*oc = (struct qw_output_config){ .name = copy, .transform = -1, .enabled = -1 };
	return oc;
}

bool output_config_set(struct qw_config *config, const char *name, char **words, size_t count,
		char *msg, size_t size) {
	if (count == 0) {
		return fail(msg, size,
				"output %s wants a setting (mode, position, scale, transform, "
				"enable, disable)",
				name);
	}
	const char *key = words[0];
	char **values = words + 1;
	size_t nvalues = count - 1;
	/* Parse into a copy so a bad value leaves the settings as they were. */
	struct qw_output_config next = { .transform = -1, .enabled = -1 };
	const struct qw_output_config *old = output_config_find(config, name);
	if (old) {
		next = *old;
	}
	if (strcmp(key, "enable") == 0 || strcmp(key, "disable") == 0) {
		if (nvalues) {
			return fail(msg, size, "output %s takes nothing after it", key);
		}
		next.enabled = key[0] == 'e';
	} else if (strcmp(key, "mode") == 0) {
		if (nvalues != 1 ||
				!config_parse_mode(values[0], &next.width, &next.height, &next.refresh_mhz)) {
			return fail(msg, size, "output mode wants WIDTHxHEIGHT[@HZ], e.g. 1920x1080@60");
		}
		next.has_mode = true;
	} else if (strcmp(key, "position") == 0) {
		if (!parse_position(values, nvalues, &next.x, &next.y)) {
			return fail(msg, size, "output position wants X,Y in layout pixels, e.g. 1920,0");
		}
		next.has_position = true;
	} else if (strcmp(key, "scale") == 0) {
		uint64_t milli;
		const char *end = nvalues == 1 ? qos_parse_decimal(values[0], 3, 8000, &milli) : NULL;
		if (!end || *end || milli < 250) {
			return fail(msg, size, "output scale wants a number from 0.25 to 8, e.g. 1.5");
		}
		next.scale = (float)milli / 1000.0f;
	} else if (strcmp(key, "transform") == 0) {
		size_t i = 0;
		while (nvalues == 1 && i < TRANSFORM_COUNT && strcmp(values[0], transform_names[i]) != 0) {
			i++;
		}
		if (nvalues != 1 || i == TRANSFORM_COUNT) {
			return fail(msg, size,
					"output transform wants normal, 90, 180, 270, flipped, "
					"flipped-90, flipped-180 or flipped-270");
		}
		next.transform = (int)i;
	} else {
		return fail(msg, size,
				"unknown output setting '%s' (mode, position, scale, transform, "
				"enable, disable)",
				key);
	}
	struct qw_output_config *oc = find_or_add(config, name);
	if (!oc) {
		return fail(msg, size, "out of memory");
	}
	next.name = oc->name;
	*oc = next;
	return true;
}

const struct qw_output_config *output_config_find(const struct qw_config *config,
		const char *name) {
	for (size_t i = 0; config && name && i < config->output_count; i++) {
		if (strcmp(config->outputs[i].name, name) == 0) {
			return &config->outputs[i];
		}
	}
	return NULL;
}

void output_config_finish(struct qw_config *config) {
	if (!config) {
		return;
	}
	for (size_t i = 0; i < config->output_count; i++) {
		free(config->outputs[i].name);
	}
	free(config->outputs);
	config->outputs = NULL;
	config->output_count = 0;
}
