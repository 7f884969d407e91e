#include <stdio.h>
#include <string.h>
#include <wlr/backend/headless.h>
#include <wlr/interfaces/wlr_output.h>
#include <wlr/types/wlr_output.h>

#include "output/output.h"
#include "output/output_apply.h"
#include "config/output_config.h"
#include "output/output_headless.h"

bool output_headless_add(struct qw_server *server, int width, int height, char *name_out,
		size_t name_len, char *err, size_t err_len) {
	if (!server->headless_backend) {
		snprintf(err, err_len, "no headless backend to add an output to");
		return false;
	}
	if (width < 64 || height < 64 || width > 16384 || height > 16384) {
		snprintf(err, err_len, "output size wants 64 to 16384 pixels each way");
		return false;
	}
	struct wlr_output *o = wlr_headless_add_output(server->headless_backend, width, height);
	if (!o) {
		snprintf(err, err_len, "cannot add a headless output");
		return false;
	}
	snprintf(name_out, name_len, "%s", o->name);
	/* New outputs start at the output-mode size; this one was asked for
	 * at its own, unless the config has settings for its name. */
	struct qw_output *output = o->data;
	struct output_state state;
	if (output && !output_config_find(&server->config, o->name)) {
		output_state_current(output, &state);
		state.mode = NULL;
		state.width = width;
		state.height = height;
		if (!output_apply_states(server, &state, 1, false, err, err_len)) {
			return false;
		}
	}
	return true;
}

bool output_headless_remove(struct qw_server *server, const char *name, char *err, size_t err_len) {
	struct qw_output *output;
	wl_list_for_each(output, &server->outputs, link) {
		struct wlr_output *o = output->wlr_output;
		if (strcmp(o->name, name) != 0) {
			continue;
		}
		if (!wlr_output_is_headless(o)) {
			snprintf(err, err_len, "output %s is not a headless output", name);
			return false;
		}
		wlr_output_destroy(o);
		return true;
	}
	snprintf(err, err_len, "no output called '%.64s'", name);
	return false;
}
