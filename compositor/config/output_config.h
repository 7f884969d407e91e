/*
 * Per-output settings from the config file, by connector name:
 *
 *   output HEADLESS-1 {
 *       mode 1280x720@60
 *       position 1920,0
 *       scale 2
 *       transform 90
 *       enable
 *   }
 *   output HDMI-A-1 disable          (one setting on one line)
 *
 * A name no output has yet is not an error: the settings apply when an
 * output of that name appears. Later settings for a name override earlier
 * ones, key by key. Applying them is output_apply.h's business.
 */
#ifndef QOSWAY_OUTPUT_CONFIG_H
#define QOSWAY_OUTPUT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

struct qw_config;

struct qw_output_config {
	char *name; /* connector name, e.g. HDMI-A-1 */
	bool has_mode;
	int width, height, refresh_mhz;
	bool has_position;
	int x, y; /* layout coordinates of the top-left corner */
	float scale; /* 0: not set */
	int transform; /* enum wl_output_transform; -1: not set */
	int enabled; /* 1 or 0; -1: not set */
};

/*
 * One setting for output `name`: `words` are the key and its values
 * (e.g. {"position", "10,0"}). On error returns false with the reason in
 * msg, and the config is unchanged.
 */
bool output_config_set(struct qw_config *config, const char *name, char **words, size_t count,
		char *msg, size_t size);
/* The settings for `name`, or NULL if the config has none. */
const struct qw_output_config *output_config_find(const struct qw_config *config, const char *name);
void output_config_finish(struct qw_config *config);

/* "normal", "90", ..., "flipped-270" for an enum wl_output_transform. */
const char *output_transform_name(int transform);

#endif
