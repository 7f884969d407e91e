#ifndef QOSWAY_OUTPUT_H
#define QOSWAY_OUTPUT_H

#include <stdint.h>
#include <time.h>
#include <wayland-server-core.h>
#include <wlr/util/box.h>

#include "output/output_drm.h"
#include "output/render.h"
#include "server.h"

struct qw_output {
	struct wl_list link; /* qw_server.outputs */
	struct qw_server *server;
	struct wlr_output *wlr_output;
	struct wlr_scene_output *scene_output;
	/* Layer surfaces per layer, qw_layer_surface.link */
	struct wl_list layers[QW_LAYER_COUNT];
	/* Output box minus exclusive zones, layout coordinates. */
	struct wlr_box usable_area;
	/* Placed where the config or a client said; else automatically. */
	bool fixed_position;
	/* The backend sends no presentation event itself (headless). */
	bool synthesize_present;
	unsigned int present_seq;
	struct render_list *render_list; /* scratch space reused every frame */
	struct render_report report; /* what the last frame showed, per node */
	struct wl_event_source *draw_idle; /* a frame to draw (scheduler_frame.c) */
	uint64_t hidden_sent_ns; /* last callbacks to its covered surfaces */
	uint64_t drawn_ns; /* when a frame was last committed (scheduler) */
	/* Software cursors: wlroots keeps the DRM cursor plane off. */
	bool cursor_plane_idle;
	struct output_drm_plane drm_plane; /* output_drm.c */
	/* A refused commit is drawn again after retry_ms (output_draw). */
	struct wl_event_source *retry_timer;
	int retry_ms;

	struct wl_listener frame;
	struct wl_listener present;
	struct wl_listener destroy;
};

void output_handle_new(struct wl_listener *listener, void *data);
/*
 * Render and commit the output's damage (render_output), and on a backend
 * that reports no presentation itself, report the frame as presented.
 * *now is the time the frame was committed. False if nothing was committed.
 */
bool output_draw(struct qw_output *output, struct render_report *report, struct timespec *now);
/* Frame callbacks to every surface shown mainly on this output that can
 * take them (not a paused client's), in scene order. */
void output_send_frame_done(struct qw_output *output, struct timespec *now);
struct wlr_box output_layout_box(struct qw_output *output);
/* The output under a layout point, or the first one; NULL without outputs. */
struct qw_output *output_at(struct qw_server *server, double lx, double ly);

#endif
