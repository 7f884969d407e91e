/*
 * qos-player's state, shared by the files of the program: qos-player.c
 * plays, qos-player-options.c reads the command line, qos-player-reserve.c
 * asks qosway-reserve-v1 for a reserve.
 */
#ifndef QOSWAY_QOS_PLAYER_H
#define QOSWAY_QOS_PLAYER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <wayland-client.h>

#include "qosway-reserve-v1-client-protocol.h"

#define NUM_BUFFERS 3
#define MAX_DIMENSION 16384
/* One second of work per frame is already absurd; the bound catches typos. */
#define MAX_WORK_USEC 1000000L
#define MAX_WORK_STEPS 32

/* One step of --work-steps: work_usec of CPU per frame for seconds. */
struct work_step {
	long work_usec;
	double seconds;
};

/* What the frames of one step saw. */
struct step_stats {
	long frames, missed;
	double worst_gap_s;
};

struct player;

struct buffer {
	struct player *player;
	struct wl_buffer *wl_buffer;
	uint32_t *pixels;
	bool busy;
};

struct feedback {
	struct player *player;
	struct wp_presentation_feedback *wp_feedback;
	struct wl_list link; /* player.feedbacks */
};

struct options {
	long frames; /* 0 = until a signal or close */
	int width, height;
	/* -V: shown at this size through wp_viewporter; 0 = buffer size. */
	int view_width, view_height;
	long work_usec;
	const char *title;
	const char *app_id;
	bool presentation;
	/* qosway-reserve-v1: a reserve by name (-r) and/or qos params (-q). */
	const char *reserve_name;
	bool reserve_qos;
	uint32_t qos_period_us, qos_slice_us, qos_fallback;
	bool frames_given; /* -n was on the command line */
	/* qosway-reserve-v1 version 2: adaptation within [min, max] ppm of a
	 * CPU (0: unbounded), a first slice from measurement, vblank periods,
	 * and a work_duration report after each frame. */
	bool adapt, cpu_auto, period_vblank, report_work;
	uint32_t adapt_min_ppm, adapt_max_ppm;
	/* --work-steps: the per-frame work over time, instead of -u. */
	struct work_step steps[MAX_WORK_STEPS];
	size_t n_steps;
};

/* What became of the reserve request, for stderr and the JSON line. */
enum reserve_state {
	RESERVE_NONE, /* not asked for */
	RESERVE_UNSUPPORTED, /* no qosway_reserve_manager_v1 global */
	RESERVE_PENDING, /* asked, no answer yet */
	RESERVE_GRANTED,
	RESERVE_REFUSED,
};

struct stats {
	/* Where the current statistics window begins; SIGUSR1 moves it. */
	double start_s;
	double cpu_start_s;
	double end_s;
	long frames;
	double last_done_s; /* < 0 until the first frame callback */
	double worst_gap_s;
	long presented;
	long discarded;
	/* Refresh intervals skipped between two frame callbacks. */
	long missed;
	long work_reports; /* work_duration requests sent */
	struct step_stats steps[MAX_WORK_STEPS];
};

struct player {
	struct options opt;

	struct wl_display *display;
	struct wl_registry *registry;
	struct wl_compositor *compositor;
	struct wl_shm *shm;
	struct xdg_wm_base *wm_base;
	/* Asked for server-side decorations: the player draws no titlebar. */
	struct zxdg_decoration_manager_v1 *deco_manager;
	struct zxdg_toplevel_decoration_v1 *decoration;
	struct wp_presentation *presentation;
	struct wp_viewporter *viewporter;
	struct qosway_reserve_manager_v1 *reserve_manager;
	struct qosway_reserve_v1 *reserve;
	uint32_t reserve_version; /* the manager's, as bound */
	uint32_t reserve_period_us; /* from the last params event, 0 before */
	enum reserve_state reserve_state;
	char reserve_refusal[32];

	struct wl_surface *surface;
	struct xdg_surface *xdg_surface;
	struct xdg_toplevel *toplevel;
	struct wp_viewport *viewport;
	struct wl_callback *frame_cb;

	struct buffer buffers[NUM_BUFFERS];
	uint32_t *pattern; /* one row plus a period, scrolled per row */
	size_t pattern_len;

	bool configured;
	bool running;
	bool failed;
	/* Frame callback arrived while every buffer was still held. */
	bool want_frame;
	long committed; /* frames drawn in total, for the animation */
	long frames_total; /* callbacks over the whole run, for -n */
	struct wl_list feedbacks; /* struct feedback, not yet answered */

	struct stats stats;
	uint64_t work_sink;
	double play_start_s; /* first configure: --work-steps counts from here */
	double refresh_s; /* the display's frame interval, as far as known */
};

/*
 * Reads the command line into opt.  False when the program is to exit with
 * *exit_code instead of playing: after -h (0), or after a bad argument (2;
 * the error is printed).
 */
bool player_parse_options(int argc, char *argv[], struct options *opt, int *exit_code);

/* The wire value of a qosway-reserve-v1 policy name; false if there is none. */
bool player_policy_from_name(const char *name, uint32_t *policy);

/*
 * Binds the registry's qosway_reserve_manager_v1 global if the options ask
 * for a reserve (-r or -q).
 */
void player_bind_reserve_manager(struct player *p, struct wl_registry *registry, uint32_t name,
		uint32_t version);

/* --work-steps STEPS (WORK@DURATION,...): false with the error printed. */
bool player_parse_work_steps(const char *arg, struct options *opt);
/*
 * The step of --work-steps at `elapsed` seconds of play, or -1 past the
 * last one (or without steps).
 */
int player_work_step(const struct options *opt, double elapsed);
/*
 * A frame callback came `gap` seconds after the previous one: counts the
 * refresh intervals it skipped, overall and for the step it belongs to
 * (-1: none).
 */
void player_count_frame(struct player *p, double gap, int step);

/* After a frame's work: work_duration for the reserve (--report-work). */
void player_report_work(struct player *p, double actual_s);

/*
 * Asks for the reserve the options name, or marks the request unsupported
 * when the compositor has no reserve manager.  The answer arrives as events.
 */
void player_request_reserve(struct player *p);

/* Destroys the reserve and its manager; either may be NULL. */
void player_reserve_finish(struct player *p);

#endif
