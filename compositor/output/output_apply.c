#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wlr/backend/headless.h>
#include <wlr/types/wlr_output.h>
#include <wlr/types/wlr_output_layout.h>
#include <wlr/types/wlr_scene.h>
#include <wlr/types/wlr_xcursor_manager.h>
#include <wlr/util/log.h>

#include "desktop/layer_shell.h"
#include "output/output.h"
#include "output/output_apply.h"
#include "config/output_config.h"
#include "output/output_management.h"
#include "desktop/view.h"

/* Where an output was before a change, so its windows can follow it. */
struct output_before {
	struct qw_output *output;
	bool in_layout;
	struct wlr_box box, area;
};

void output_state_current(struct qw_output *output, struct output_state *state) {
	struct wlr_output *o = output->wlr_output;
	struct wlr_box box = output_layout_box(output);
	*state = (struct output_state){
		.output = output,
		.enabled = o->enabled,
		.mode = o->current_mode,
		.width = o->width,
		.height = o->height,
		.refresh_mhz = o->refresh,
		.has_position = output->fixed_position,
		.x = box.x,
		.y = box.y,
		.scale = o->scale,
		.transform = o->transform,
	};
}

/* The output's mode of that size with the nearest refresh rate. */
static struct wlr_output_mode *find_mode(struct wlr_output *o, int w, int h, int mhz) {
	struct wlr_output_mode *best = NULL, *m;
	wl_list_for_each(m, &o->modes, link) {
		if (m->width == w && m->height == h &&
				(!best || abs(m->refresh - mhz) < abs(best->refresh - mhz))) {
			best = m;
		}
	}
	return best;
}

bool output_state_apply_config(struct output_state *state, const struct qw_output_config *oc,
		char *err, size_t err_len) {
	if (!oc) {
		return true;
	}
	struct wlr_output *o = state->output->wlr_output;
	if (oc->has_mode) {
		/* Outputs without a mode list (headless, nested) take any size. */
		state->mode = NULL;
		if (!wl_list_empty(&o->modes)) {
			state->mode = find_mode(o, oc->width, oc->height, oc->refresh_mhz);
			if (!state->mode) {
				snprintf(err, err_len, "output %s has no mode %dx%d", o->name, oc->width,
						oc->height);
				return false;
			}
		}
		state->width = oc->width;
		state->height = oc->height;
		state->refresh_mhz = oc->refresh_mhz;
	}
	if (oc->has_position) {
		state->has_position = true;
		state->x = oc->x;
		state->y = oc->y;
	}
	if (oc->scale > 0) {
		state->scale = oc->scale;
	}
	if (oc->transform >= 0) {
		state->transform = (enum wl_output_transform)oc->transform;
	}
	if (oc->enabled >= 0) {
		state->enabled = oc->enabled;
	}
	return true;
}

static void stage(const struct output_state *state) {
	struct wlr_output *o = state->output->wlr_output;
	wlr_output_enable(o, state->enabled);
	if (!state->enabled) {
		return;
	}
	if (state->mode) {
		wlr_output_set_mode(o, state->mode);
	} else if (state->width > 0 && state->height > 0) {
		wlr_output_set_custom_mode(o, state->width, state->height, state->refresh_mhz);
	}
	wlr_output_set_scale(o, state->scale);
	wlr_output_set_transform(o, state->transform);
}

static void place(struct qw_server *server, const struct output_state *state) {
	struct qw_output *output = state->output;
	struct wlr_output *o = output->wlr_output;
	if (!state->enabled) {
		if (wlr_output_layout_get(server->output_layout, o)) {
			/* Panels and backgrounds were made for this output. */
			layer_shell_output_destroyed(output);
			wlr_output_layout_remove(server->output_layout, o);
		}
		output->usable_area = (struct wlr_box){ 0 };
		return;
	}
	output->fixed_position = state->has_position;
	if (state->has_position) {
		wlr_output_layout_add(server->output_layout, o, state->x, state->y);
	} else {
		wlr_output_layout_add_auto(server->output_layout, o);
	}
}

static struct output_before *snapshot(struct qw_server *server, size_t *count) {
	size_t n = (size_t)wl_list_length(&server->outputs);
	struct output_before *before = calloc(n ? n : 1, sizeof(*before));
	if (!before) {
		*count = 0;
		return NULL;
	}
	struct qw_output *output;
	size_t i = 0;
	wl_list_for_each(output, &server->outputs, link) {
		before[i++] = (struct output_before){
			.output = output,
			.in_layout = wlr_output_layout_get(server->output_layout, output->wlr_output),
			.box = output_layout_box(output),
			.area = output->usable_area,
		};
	}
	*count = n;
	return before;
}

static struct qw_output *first_in_layout(struct qw_server *server, struct qw_output *except) {
	struct qw_output *output;
	wl_list_for_each(output, &server->outputs, link) {
		if (output != except && wlr_output_layout_get(server->output_layout, output->wlr_output)) {
			return output;
		}
	}
	return NULL;
}

static bool box_equal(const struct wlr_box *a, const struct wlr_box *b) {
	return a->x == b->x && a->y == b->y && a->width == b->width && a->height == b->height;
}

static int clamp(int v, int lo, int hi) {
	return v < lo ? lo : v > hi ? hi : v;
}

/*
 * Keep a window where it was on its output: it moves with the output, and
 * when the output is gone it goes to the first one left, at the same offset
 * as far as that fits. Maximized and fullscreen windows fill their new
 * output as they filled the old one.
 */
static void relocate_view(struct qw_view *view, const struct output_before *from,
		struct qw_output *to) {
	struct wlr_box ob = from->box, oa = from->area;
	struct wlr_box nb = output_layout_box(to), na = to->usable_area;
	if (to == from->output && box_equal(&ob, &nb) && box_equal(&oa, &na)) {
		return;
	}
	view->saved.x += nb.x - ob.x;
	view->saved.y += nb.y - ob.y;
	if (view->fullscreen) {
		view_set_geometry(view, nb.x, nb.y, nb.width, nb.height);
		return;
	}
	if (view->maximized) {
		/* The insets are the window's border and titlebar. */
		view_set_geometry(view, na.x + view->x - oa.x, na.y + view->y - oa.y,
				na.width - (oa.width - view->width), na.height - (oa.height - view->height));
		return;
	}
	struct wlr_box frame = view_frame_box(view);
	int fx = nb.x + clamp(frame.x - ob.x, 0, nb.width > frame.width ? nb.width - frame.width : 0);
	int fy = nb.y +
			clamp(frame.y - ob.y, 0, nb.height > frame.height ? nb.height - frame.height : 0);
	view_move_to(view, view->x + fx - frame.x, view->y + fy - frame.y);
}

static void relocate_views(struct qw_server *server, const struct output_before *before,
		size_t count, struct qw_output *gone) {
	struct qw_view *view;
	wl_list_for_each(view, &server->views, link) {
		if (!view->mapped) {
			continue;
		}
		int cx = view->x + view->width / 2, cy = view->y + view->height / 2;
		const struct output_before *from = NULL;
		for (size_t i = 0; i < count && !from; i++) {
			if (before[i].in_layout && wlr_box_contains_point(&before[i].box, cx, cy)) {
				from = &before[i];
			}
		}
		if (!from) {
			continue; /* it was on no output: leave it where it is */
		}
		struct qw_output *to = from->output;
		if (to == gone || !wlr_output_layout_get(server->output_layout, to->wlr_output)) {
			to = first_in_layout(server, gone);
		}
		if (to) {
			relocate_view(view, from, to);
		}
	}
}

/* After outputs changed: scene outputs, panels, windows, clients' view. */
static void layout_changed(struct qw_server *server, const struct output_before *before,
		size_t count, struct qw_output *gone) {
	struct qw_output *output;
	wl_list_for_each(output, &server->outputs, link) {
		struct wlr_output *o = output->wlr_output;
		output->scene_output = output == gone ? NULL : wlr_scene_get_scene_output(server->scene, o);
		if (output->scene_output) {
			layer_shell_arrange(output);
			wlr_xcursor_manager_load(server->xcursor_manager, o->scale);
			wlr_output_schedule_frame(o);
		}
	}
	relocate_views(server, before, count, gone);
	output_management_update(server);
}

bool output_apply_states(struct qw_server *server, struct output_state *states, size_t count,
		bool test_only, char *err, size_t err_len) {
	struct output_state *old = calloc(count ? count : 1, sizeof(*old));
	if (!old) {
		snprintf(err, err_len, "out of memory");
		return false;
	}
	for (size_t i = 0; i < count; i++) {
		output_state_current(states[i].output, &old[i]);
	}
	size_t staged = 0;
	bool ok = true;
	for (; staged < count && ok; staged++) {
		struct wlr_output *o = states[staged].output->wlr_output;
		stage(&states[staged]);
		/* wlroots 0.15's headless outputs pass the test but fail the
		 * commit of a disable; say so before anything changes. */
		if (!states[staged].enabled && o->enabled && wlr_output_is_headless(o)) {
			snprintf(err, err_len, "output %s: headless outputs cannot be disabled (remove it)",
					o->name);
			ok = false;
			staged++;
			break;
		}
		ok = wlr_output_test(o);
		if (!ok) {
			snprintf(err, err_len, "output %s cannot take these settings",
					states[staged].output->wlr_output->name);
		}
	}
	if (!ok || test_only) {
		for (size_t i = 0; i < staged; i++) {
			wlr_output_rollback(states[i].output->wlr_output);
		}
		free(old);
		return ok;
	}
	size_t before_count;
	struct output_before *before = snapshot(server, &before_count);
	size_t committed = 0;
	for (; committed < count && ok; committed++) {
		ok = wlr_output_commit(states[committed].output->wlr_output);
		if (!ok) {
			snprintf(err, err_len, "output %s refused these settings",
					states[committed].output->wlr_output->name);
		}
	}
	if (!ok) {
		/* Committed is the failed one plus those before it; those before
		 * go back to what they were. */
		for (size_t i = committed; i < count; i++) {
			wlr_output_rollback(states[i].output->wlr_output);
		}
		for (size_t i = 0; i + 1 < committed; i++) {
			stage(&old[i]);
			if (!wlr_output_commit(old[i].output->wlr_output)) {
				wlr_log(WLR_ERROR, "output %s: cannot restore its settings",
						old[i].output->wlr_output->name);
			}
		}
		free(before);
		free(old);
		return false;
	}
	for (size_t i = 0; i < count; i++) {
		place(server, &states[i]);
	}
	layout_changed(server, before, before_count, NULL);
	free(before);
	free(old);
	return true;
}

void output_apply_config(struct qw_output *output) {
	struct qw_server *server = output->server;
	const char *name = output->wlr_output->name;
	const struct qw_output_config *oc = output_config_find(&server->config, name);
	char err[256];
	struct output_state state;
	output_state_current(output, &state);
	if (oc &&
			(!output_state_apply_config(&state, oc, err, sizeof(err)) ||
					!output_apply_states(server, &state, 1, false, err, sizeof(err)))) {
		wlr_log(WLR_ERROR, "output %s: configuration not applied: %s", name, err);
	}
	if (!oc) {
		output_management_update(server);
	}
}

bool output_config_reload(struct qw_server *server, char *err, size_t err_len) {
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
		snprintf(err, err_len, "configuration not reloaded: %.*s", (int)strcspn(first, "\n"),
				first);
	}
	size_t count = 0;
	struct output_state *states =
			ok ? calloc((size_t)wl_list_length(&server->outputs) + 1, sizeof(*states)) : NULL;
	if (ok && !states) {
		snprintf(err, err_len, "out of memory");
		ok = false;
	}
	struct qw_output *output;
	wl_list_for_each(output, &server->outputs, link) {
		const struct qw_output_config *oc =
				ok ? output_config_find(&fresh, output->wlr_output->name) : NULL;
		if (oc) {
			output_state_current(output, &states[count]);
			ok = output_state_apply_config(&states[count++], oc, err, err_len);
		}
	}
	ok = ok && output_apply_states(server, states, count, false, err, err_len);
	if (ok) {
		/* Outputs that appear later take the new settings too. */
		output_config_finish(&server->config);
		server->config.outputs = fresh.outputs;
		server->config.output_count = fresh.output_count;
		fresh.outputs = NULL;
		fresh.output_count = 0;
	}
	free(states);
	free(text);
	config_finish(&fresh);
	return ok;
}

void output_apply_removed(struct qw_output *output) {
	struct qw_server *server = output->server;
	size_t count;
	struct output_before *before = snapshot(server, &count);
	layer_shell_output_destroyed(output);
	wlr_output_layout_remove(server->output_layout, output->wlr_output);
	layout_changed(server, before, count, output);
	free(before);
}
