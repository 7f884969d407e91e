/*
 * Changing outputs: mode, position, scale, transform, on or off, from the
 * config file (output_config.h) and from clients (output_management.h).
 * A change to several outputs is tested on every one of them before any is
 * committed, and either all of it happens or none. Windows follow their
 * output when it moves, and leave it when it is disabled or unplugged.
 */
#ifndef QOSWAY_OUTPUT_APPLY_H
#define QOSWAY_OUTPUT_APPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <wayland-server-protocol.h>

struct qw_output;
struct qw_server;
struct qw_output_config;
struct wlr_output_mode;

/* What one output is to become. */
struct output_state {
	struct qw_output *output;
	bool enabled;
	struct wlr_output_mode *mode; /* one of the output's modes, or NULL */
	int width, height, refresh_mhz; /* a custom mode when mode is NULL */
	bool has_position; /* else placed automatically, right of the others */
	int x, y;
	float scale;
	enum wl_output_transform transform;
};

/* The output as it is now. */
void output_state_current(struct qw_output *output, struct output_state *state);
/*
 * The config's settings over `state`. False, with the reason in err, if
 * the configured mode is not one the output can show.
 */
bool output_state_apply_config(struct output_state *state, const struct qw_output_config *oc,
		char *err, size_t err_len);
/*
 * Make `states` so, or with test_only see whether they could be and change
 * nothing. False, with the reason in err, changes nothing.
 */
bool output_apply_states(struct qw_server *server, struct output_state *states, size_t count,
		bool test_only, char *err, size_t err_len);
/* A new output takes its configured settings (logged if it cannot). */
void output_apply_config(struct qw_output *output);
/*
 * Read the config file again and apply its output settings to every
 * output. If the file has any error, nothing changes and err says why.
 */
bool output_config_reload(struct qw_server *server, char *err, size_t err_len);
/* An output is going away: take it out of the layout, move its windows. */
void output_apply_removed(struct qw_output *output);

#endif
