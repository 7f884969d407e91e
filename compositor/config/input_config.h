/*
 * Input device settings from the config file, by device name or type:
 *
 *   input type:keyboard {
 *       xkb-layout de,us
 *       xkb-options grp:alt_shift_toggle
 *       repeat-rate 30
 *       repeat-delay 250
 *   }
 *   input type:touchpad tap on       (one setting on one line)
 *   input "SynPS/2 Synaptics TouchPad" natural-scroll on
 *
 * The identifier is `*` (every device), `type:keyboard`, `type:pointer`,
 * `type:touchpad` (a pointer that can tap), `type:touch`, or a device's
 * name as `qosctl inputs` shows it. A device takes the settings of every
 * matching entry, in the order of the file, later keys overriding earlier
 * ones. Applying them is input_apply.h's business.
 */
#ifndef QOSWAY_INPUT_CONFIG_H
#define QOSWAY_INPUT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

struct qw_config;

enum qw_accel_profile {
	QW_ACCEL_UNSET = -1,
	QW_ACCEL_FLAT,
	QW_ACCEL_ADAPTIVE,
};

/* One entry, or the merged settings of a device; -1 / NULL: not set. */
struct qw_input_config {
	char *match; /* NULL in merged settings */
	char *xkb_layout, *xkb_variant, *xkb_options, *xkb_model;
	int repeat_rate; /* keys a second, 0 turns repeat off */
	int repeat_delay; /* ms */
	int tap, natural_scroll, left_handed, middle_emulation, dwt; /* 1 on, 0 off */
	enum qw_accel_profile accel_profile;
	bool has_accel_speed;
	double accel_speed; /* -1 to 1 */
};

/*
 * One setting for `match`: `words` are the key and its value. A value
 * that is wrong (or an xkb combination that does not compile) returns
 * false with the reason in msg, and the config is unchanged.
 */
bool input_config_set(struct qw_config *config, const char *match, char **words, size_t count,
		char *msg, size_t size);
void input_config_finish(struct qw_config *config);
/* Unset every field (match included, freed). */
void input_config_clear(struct qw_input_config *ic);

/* The identifier matches a device of this name and type ("keyboard",
 * "pointer", "touch", ...; touchpad: a pointer that can tap). */
bool input_config_matches(const char *match, const char *name, const char *type, bool touchpad);
/* Merge every matching entry into *out (cleared first; strings copied). */
void input_config_merge(const struct qw_config *config, const char *name, const char *type,
		bool touchpad, struct qw_input_config *out);

#endif
