#include <stdlib.h>
#include <time.h>
#include <wlr/backend/drm.h>
#include <wlr/backend/headless.h>
#include <wlr/interfaces/wlr_output.h>
#include <wlr/render/pixman.h>
#include <wlr/types/wlr_output.h>
#include <wlr/types/wlr_output_layout.h>
#include <wlr/types/wlr_scene.h>
#include <wlr/types/wlr_surface.h>
#include <wlr/types/wlr_xcursor_manager.h>
#include <wlr/util/log.h>

#include "qos_bridge/client_identity.h"
#include "desktop/layer_shell.h"
#include "output/output.h"
#include "output/output_apply.h"
#include "output/render.h"
#include "scheduler/scheduler.h"
#include "output/vblank.h"

struct wlr_box output_layout_box(struct qw_output *output) {
	struct wlr_box *box =
			wlr_output_layout_get_box(output->server->output_layout, output->wlr_output);
	return box ? *box : (struct wlr_box){ 0 };
}

struct qw_output *output_at(struct qw_server *server, double lx, double ly) {
	struct wlr_output *wlr_output = wlr_output_layout_output_at(server->output_layout, lx, ly);
	if (wlr_output && wlr_output->data) {
		return wlr_output->data;
	}
	/* Disabled outputs are in no layout and show nothing. */
	struct qw_output *output;
	wl_list_for_each(output, &server->outputs, link) {
		if (wlr_output_layout_get(server->output_layout, output->wlr_output)) {
			return output;
		}
	}
	return NULL;
}

/*
 * Frame callbacks for every surface shown mainly on this output, except those
 * of paused (frozen) clients: they cannot read them, and each would add to a
 * socket buffer that disconnects the client when it overflows. A thawed
 * client gets the next one.
 */
static void send_frame_done(struct wlr_scene_node *node, struct wlr_output *output,
		struct timespec *now) {
	if (!node->state.enabled) {
		return;
	}
	if (node->type == WLR_SCENE_NODE_SURFACE) {
		struct wlr_scene_surface *scene_surface = wlr_scene_surface_from_node(node);
		struct wlr_surface *surface = scene_surface->surface;
		struct client_identity *id = client_identity_get(wl_resource_get_client(surface->resource));
		if (scene_surface->primary_output == output && !(id && id->paused)) {
			wlr_surface_send_frame_done(surface, now);
		}
		return;
	}
	struct wlr_scene_node *child;
	wl_list_for_each(child, &node->state.children, state.link) {
		send_frame_done(child, output, now);
	}
}

void output_send_frame_done(struct qw_output *output, struct timespec *now) {
	send_frame_done(&output->server->scene->node, output->wlr_output, now);
}

static int handle_retry(void *data) {
	struct qw_output *output = data;
	wlr_output_schedule_frame(output->wlr_output);
	return 0;
}

/*
 * A commit the backend refused leaves its damage undrawn, and nothing else
 * may ask for a frame: another is asked for a moment later, backing off to
 * one a second while refusals go on (a session switched away).
 */
static void retry_later(struct qw_output *output) {
	if (!output->retry_timer) {
		output->retry_timer =
				wl_event_loop_add_timer(output->server->event_loop, handle_retry, output);
		if (!output->retry_timer) {
			return;
		}
	}
	output->retry_ms = output->retry_ms ? output->retry_ms * 2 : 1;
	if (output->retry_ms > 1000) {
		output->retry_ms = 1000;
	}
	wl_event_source_timer_update(output->retry_timer, output->retry_ms);
}

bool output_draw(struct qw_output *output, struct render_report *report, struct timespec *now) {
	struct wlr_output *wlr_output = output->wlr_output;
	if (!output->scene_output || !wlr_output->enabled) {
		clock_gettime(CLOCK_MONOTONIC, now);
		return false; /* disabled since the frame was asked for */
	}
	uint32_t seq_before = wlr_output->commit_seq;
	bool committed = render_output(output, report);
	clock_gettime(CLOCK_MONOTONIC, now);
	if (!committed) {
		retry_later(output);
	} else {
		output->retry_ms = 0;
	}
	if (committed && output->synthesize_present && wlr_output->commit_seq != seq_before) {
		/* wlroots 0.15's headless backend never reports presentation, so
		 * clients would only ever see "discarded". The commit just
		 * completed is what the (virtual) display shows from now on. */
		int refresh_ns = wlr_output->refresh > 0 ? (int)(1000000000000LL / wlr_output->refresh) : 0;
		struct wlr_output_event_present event = {
			.output = wlr_output,
			.commit_seq = wlr_output->commit_seq,
			.presented = true,
			.when = now,
			.seq = ++output->present_seq,
			.refresh = refresh_ns,
			.flags = 0,
		};
		wlr_output_send_present(wlr_output, &event);
	}
	return committed && wlr_output->commit_seq != seq_before;
}

static void handle_frame(struct wl_listener *listener, void *data) {
	struct qw_output *output = wl_container_of(listener, output, frame);
	if (!output->scene_output) {
		return;
	}
	scheduler_output_frame(output->server->scheduler, output);
}

static void handle_present(struct wl_listener *listener, void *data) {
	struct qw_output *output = wl_container_of(listener, output, present);
	vblank_output_presented(output, data);
}

static void handle_destroy(struct wl_listener *listener, void *data) {
	struct qw_output *output = wl_container_of(listener, output, destroy);
	output_apply_removed(output);
	scheduler_output_destroyed(output->server->scheduler, output);
	if (output->retry_timer) {
		wl_event_source_remove(output->retry_timer);
	}
	wl_list_remove(&output->frame.link);
	wl_list_remove(&output->present.link);
	wl_list_remove(&output->destroy.link);
	wl_list_remove(&output->link);
	render_list_destroy(output->render_list);
	render_report_finish(&output->report);
	output->wlr_output->data = NULL;
	free(output);
}

static bool configure_mode(struct qw_server *server, struct wlr_output *wlr_output) {
	struct wlr_output_mode *mode = wlr_output_preferred_mode(wlr_output);
	if (mode) {
		wlr_output_set_mode(wlr_output, mode);
	} else {
		/* Headless and nested outputs take any size: use the config. */
		wlr_output_set_custom_mode(wlr_output, server->config.output_width,
				server->config.output_height, server->config.output_refresh_mhz);
	}
	wlr_output_enable(wlr_output, true);
	if (wlr_output_commit(wlr_output)) {
		return true;
	}
	if (mode) {
		/* The preferred mode can fail on odd hardware; try the others. */
		struct wlr_output_mode *m;
		wl_list_for_each(m, &wlr_output->modes, link) {
			if (m == mode) {
				continue;
			}
			wlr_output_set_mode(wlr_output, m);
			if (wlr_output_commit(wlr_output)) {
				return true;
			}
		}
	}
	return false;
}

void output_handle_new(struct wl_listener *listener, void *data) {
	struct qw_server *server = wl_container_of(listener, server, new_output);
	struct wlr_output *wlr_output = data;
	if (!wlr_output_init_render(wlr_output, server->allocator, server->renderer)) {
		wlr_log(WLR_ERROR, "cannot render to output %s", wlr_output->name);
		return;
	}
	if (!configure_mode(server, wlr_output)) {
		wlr_log(WLR_ERROR, "cannot enable output %s", wlr_output->name);
		return;
	}
	struct qw_output *output = calloc(1, sizeof(*output));
	if (!output) {
		wlr_log(WLR_ERROR, "out of memory for output %s", wlr_output->name);
		return;
	}
	output->server = server;
	output->wlr_output = wlr_output;
	output->synthesize_present = wlr_output_is_headless(wlr_output);
	for (int i = 0; i < QW_LAYER_COUNT; i++) {
		wl_list_init(&output->layers[i]);
	}
	wlr_output->data = output;
	/*
	 * The pixman renderer cannot fill a buffer the DRM cursor plane takes
	 * (wlroots 0.15 logs an error at every cursor image and then draws
	 * it itself): draw the cursor into each frame from the start.
	 */
	if (wlr_output_is_drm(wlr_output) && wlr_renderer_is_pixman(server->renderer)) {
		wlr_output_lock_software_cursors(wlr_output, true);
		output->cursor_plane_idle = true;
	}
	output->frame.notify = handle_frame;
	wl_signal_add(&wlr_output->events.frame, &output->frame);
	output->present.notify = handle_present;
	wl_signal_add(&wlr_output->events.present, &output->present);
	output->destroy.notify = handle_destroy;
	wl_signal_add(&wlr_output->events.destroy, &output->destroy);
	wl_list_insert(server->outputs.prev, &output->link);

	/* The scene creates its scene output when the layout gains one. */
	wlr_output_layout_add_auto(server->output_layout, wlr_output);
	output->scene_output = wlr_scene_get_scene_output(server->scene, wlr_output);
	output->usable_area = output_layout_box(output);
	wlr_xcursor_manager_load(server->xcursor_manager, wlr_output->scale);
	output_apply_config(output);
	wlr_log(WLR_INFO, "output %s: %dx%d@%.3fHz", wlr_output->name, wlr_output->width,
			wlr_output->height, wlr_output->refresh / 1000.0);
}
