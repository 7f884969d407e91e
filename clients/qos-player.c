/*
 * qos-player: a demo and benchmark client that behaves like a video player.
 *
 * Every frame it spends a configurable amount of CPU time "decoding", draws a
 * full new W x H picture into a free shm buffer, damages the whole buffer and
 * commits, paced by wl_surface frame callbacks. It speaks core and stable
 * protocols, so it plays on any compositor (qosway, sway, weston); with -V
 * the compositor scales the buffer (wp_viewporter), which costs it more
 * compositing per frame than the client's own drawing. On qosway
 * it can also ask for a CPU reserve through qosway-reserve-v1 (-r, -q); where
 * that global is missing it just plays.
 *
 * At exit it prints one JSON line with its statistics on stdout; everything
 * else goes to stderr so benchmark scripts can parse stdout blindly.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <wayland-client.h>

#include "presentation-time-client-protocol.h"
#include "viewporter-client-protocol.h"
#include "xdg-decoration-unstable-v1-client-protocol.h"
#include "xdg-shell-client-protocol.h"

#include "qos-player.h"

/* Long enough for a compositor at 30 Hz to deliver the last feedback. */
#define FEEDBACK_DRAIN_MS 100
/* Period of the diagonal stripe pattern, in pixels. */
#define PATTERN_PERIOD 256

static double clock_s(clockid_t id) {
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now_s(void) {
	return clock_s(CLOCK_MONOTONIC);
}

static void stats_reset(struct player *p) {
	p->stats.start_s = now_s();
	p->stats.cpu_start_s = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	p->stats.end_s = -1.0;
	p->stats.frames = 0;
	/* last_done_s survives: a gap spanning the reset still counts. */
	p->stats.worst_gap_s = 0.0;
	p->stats.presented = 0;
	p->stats.discarded = 0;
	p->stats.missed = 0;
	p->stats.work_reports = 0;
	memset(p->stats.steps, 0, sizeof(p->stats.steps));
}

/* The current step of --work-steps, -1 past the last or without them. */
static int current_step(struct player *p) {
	return p->opt.n_steps ? player_work_step(&p->opt, now_s() - p->play_start_s) : -1;
}

/*
 * Stands in for a decoder: it must burn real CPU time on this thread, not
 * sleep, so that it competes with the compositor the way real clients do.
 */
static void decode_work(struct player *p) {
	long usec = p->opt.work_usec;
	if (p->opt.n_steps) {
		int step = current_step(p);
		usec = p->opt.steps[step >= 0 ? (size_t)step : p->opt.n_steps - 1].work_usec;
	}
	if (usec <= 0) {
		return;
	}
	double deadline = clock_s(CLOCK_THREAD_CPUTIME_ID) + (double)usec / 1e6;
	uint64_t x = p->work_sink | 1;
	do {
		for (int i = 0; i < 4096; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
		}
	} while (clock_s(CLOCK_THREAD_CPUTIME_ID) < deadline);
	/* Stored so the compiler cannot drop the loop. */
	p->work_sink = x;
}

static uint32_t hue_to_xrgb(unsigned int h) {
	/* Piecewise linear hue wheel over 0..767: cheap and visibly smooth. */
	unsigned int r, g, b;
	h %= 768;
	if (h < 256) {
		r = 255 - h;
		g = h;
		b = 0;
	} else if (h < 512) {
		r = 0;
		g = 511 - h;
		b = h - 256;
	} else {
		r = h - 512;
		g = 0;
		b = 767 - h;
	}
	return 0xff000000u | (r << 16) | (g << 8) | b;
}

static bool pattern_init(struct player *p) {
	p->pattern_len = (size_t)p->opt.width + PATTERN_PERIOD;
	p->pattern = calloc(p->pattern_len, sizeof(*p->pattern));
	if (p->pattern == NULL) {
		return false;
	}
	for (size_t x = 0; x < p->pattern_len; x++) {
		p->pattern[x] = hue_to_xrgb((unsigned int)(x % PATTERN_PERIOD) * 3);
	}
	return true;
}

/*
 * Every pixel changes every frame (scrolling diagonal stripes plus a bar
 * sweeping down), so full damage is honest. Rows are copied from a
 * precomputed pattern so that drawing stays cheap even in unoptimised
 * builds and the per-frame cost is dominated by -u, not by the painter.
 */
static void paint(struct player *p, uint32_t *pixels) {
	int w = p->opt.width, h = p->opt.height;
	long f = p->committed;
	int bar_h = h / 12 > 4 ? h / 12 : 4;
	int bar_y = (int)((f * 4) % (h + bar_h)) - bar_h;
	for (int y = 0; y < h; y++) {
		uint32_t *row = pixels + (size_t)y * (size_t)w;
		if (y >= bar_y && y < bar_y + bar_h) {
			memset(row, 0xff, (size_t)w * sizeof(*row));
			continue;
		}
		size_t shift = (size_t)((f * 6 + y) % PATTERN_PERIOD);
		memcpy(row, p->pattern + shift, (size_t)w * sizeof(*row));
	}
}

static void buffer_release(void *data, struct wl_buffer *wl_buffer);
static void frame_done(void *data, struct wl_callback *cb, uint32_t time);

static const struct wl_buffer_listener buffer_listener = {
	.release = buffer_release,
};

static const struct wl_callback_listener frame_listener = {
	.done = frame_done,
};

static void feedback_finish(struct feedback *fb) {
	wl_list_remove(&fb->link);
	wp_presentation_feedback_destroy(fb->wp_feedback);
	free(fb);
}

static void feedback_sync_output(void *data, struct wp_presentation_feedback *wp_feedback,
		struct wl_output *output) {
	(void)data;
	(void)wp_feedback;
	(void)output;
	/* Which output showed the frame does not matter for the counts. */
}

static void feedback_presented(void *data, struct wp_presentation_feedback *wp_feedback,
		uint32_t tv_sec_hi, uint32_t tv_sec_lo, uint32_t tv_nsec, uint32_t refresh, uint32_t seq_hi,
		uint32_t seq_lo, uint32_t flags) {
	(void)wp_feedback;
	(void)tv_sec_hi;
	(void)tv_sec_lo;
	(void)tv_nsec;
	(void)seq_hi;
	(void)seq_lo;
	(void)flags;
	struct feedback *fb = data;
	fb->player->stats.presented++;
	if (refresh > 0) {
		fb->player->refresh_s = refresh / 1e9;
	}
	feedback_finish(fb);
}

static void feedback_discarded(void *data, struct wp_presentation_feedback *wp_feedback) {
	(void)wp_feedback;
	struct feedback *fb = data;
	fb->player->stats.discarded++;
	feedback_finish(fb);
}

static const struct wp_presentation_feedback_listener feedback_listener = {
	.sync_output = feedback_sync_output,
	.presented = feedback_presented,
	.discarded = feedback_discarded,
};

static struct buffer *free_buffer(struct player *p) {
	for (int i = 0; i < NUM_BUFFERS; i++) {
		if (!p->buffers[i].busy) {
			return &p->buffers[i];
		}
	}
	return NULL;
}

static void draw_frame(struct player *p) {
	struct buffer *buf = free_buffer(p);
	if (buf == NULL) {
		/* Drawing into a buffer the compositor still reads would tear. */
		p->want_frame = true;
		return;
	}
	p->want_frame = false;

	double work_start = now_s();
	decode_work(p);
	paint(p, buf->pixels);
	player_report_work(p, now_s() - work_start);

	wl_surface_attach(p->surface, buf->wl_buffer, 0, 0);
	wl_surface_damage_buffer(p->surface, 0, 0, INT32_MAX, INT32_MAX);
	p->frame_cb = wl_surface_frame(p->surface);
	wl_callback_add_listener(p->frame_cb, &frame_listener, p);
	if (p->presentation != NULL) {
		struct feedback *fb = calloc(1, sizeof(*fb));
		if (fb != NULL) {
			fb->player = p;
			fb->wp_feedback = wp_presentation_feedback(p->presentation, p->surface);
			wp_presentation_feedback_add_listener(fb->wp_feedback, &feedback_listener, fb);
			wl_list_insert(&p->feedbacks, &fb->link);
		} else {
			fprintf(stderr, "qos-player: out of memory for presentation feedback\n");
		}
	}
	wl_surface_commit(p->surface);
	buf->busy = true;
	p->committed++;
}

static void buffer_release(void *data, struct wl_buffer *wl_buffer) {
	(void)wl_buffer;
	struct buffer *buf = data;
	struct player *p = buf->player;
	buf->busy = false;
	if (p->want_frame && p->running) {
		draw_frame(p);
	}
}

static void frame_done(void *data, struct wl_callback *cb, uint32_t time) {
	(void)time;
	struct player *p = data;
	double t = now_s();

	wl_callback_destroy(cb);
	p->frame_cb = NULL;

	int step = current_step(p);
	if (p->stats.last_done_s >= 0.0) {
		double gap = t - p->stats.last_done_s;
		if (gap > p->stats.worst_gap_s) {
			p->stats.worst_gap_s = gap;
		}
		player_count_frame(p, gap, step);
	}
	p->stats.last_done_s = t;
	p->stats.frames++;
	p->frames_total++;

	/* A schedule ends the run with its last step, unless -n ends it first. */
	bool schedule_over = p->opt.n_steps && step < 0;
	if ((p->opt.frames > 0 && p->frames_total >= p->opt.frames) || schedule_over) {
		p->stats.end_s = t;
		p->running = false;
		return;
	}
	if (p->running) {
		draw_frame(p);
	}
}

static void xdg_surface_configure(void *data, struct xdg_surface *xdg_surface, uint32_t serial) {
	struct player *p = data;
	xdg_surface_ack_configure(xdg_surface, serial);
	if (!p->configured) {
		p->configured = true;
		p->play_start_s = now_s();
		stats_reset(p);
		draw_frame(p);
	}
	/*
	 * Later configures are applied by the next frame's commit; the frame
	 * loop never stops while running, so nothing else is needed here.
	 */
}

static const struct xdg_surface_listener xdg_surface_listener = {
	.configure = xdg_surface_configure,
};

static void toplevel_configure(void *data, struct xdg_toplevel *toplevel, int32_t width,
		int32_t height, struct wl_array *states) {
	(void)data;
	(void)toplevel;
	(void)width;
	(void)height;
	(void)states;
	/*
	 * The suggested size is ignored on purpose: a benchmark needs a fixed
	 * buffer size on every compositor, and min == max size already tells
	 * the compositor the window cannot be resized.
	 */
}

static void toplevel_close(void *data, struct xdg_toplevel *toplevel) {
	(void)toplevel;
	struct player *p = data;
	p->running = false;
}

static const struct xdg_toplevel_listener toplevel_listener = {
	.configure = toplevel_configure,
	.close = toplevel_close,
};

static void wm_base_ping(void *data, struct xdg_wm_base *wm_base, uint32_t serial) {
	(void)data;
	xdg_wm_base_pong(wm_base, serial);
}

static const struct xdg_wm_base_listener wm_base_listener = {
	.ping = wm_base_ping,
};

static void registry_global(void *data, struct wl_registry *registry, uint32_t name,
		const char *interface, uint32_t version) {
	struct player *p = data;
	if (strcmp(interface, wl_compositor_interface.name) == 0 && version >= 4) {
		/* v4 is the first with wl_surface.damage_buffer. */
		p->compositor = wl_registry_bind(registry, name, &wl_compositor_interface, 4);
	} else if (strcmp(interface, wl_shm_interface.name) == 0) {
		p->shm = wl_registry_bind(registry, name, &wl_shm_interface, 1);
	} else if (strcmp(interface, xdg_wm_base_interface.name) == 0) {
		p->wm_base = wl_registry_bind(registry, name, &xdg_wm_base_interface, 1);
		xdg_wm_base_add_listener(p->wm_base, &wm_base_listener, p);
	} else if (strcmp(interface, zxdg_decoration_manager_v1_interface.name) == 0) {
		p->deco_manager =
				wl_registry_bind(registry, name, &zxdg_decoration_manager_v1_interface, 1);
	} else if (strcmp(interface, wp_presentation_interface.name) == 0 && p->opt.presentation) {
		p->presentation = wl_registry_bind(registry, name, &wp_presentation_interface, 1);
	} else if (strcmp(interface, wp_viewporter_interface.name) == 0 && p->opt.view_width > 0) {
		p->viewporter = wl_registry_bind(registry, name, &wp_viewporter_interface, 1);
	} else if (strcmp(interface, qosway_reserve_manager_v1_interface.name) == 0) {
		player_bind_reserve_manager(p, registry, name, version);
	}
}

static void registry_global_remove(void *data, struct wl_registry *registry, uint32_t name) {
	(void)data;
	(void)registry;
	(void)name;
	/* None of the globals we use can go away on a running compositor. */
}

static const struct wl_registry_listener registry_listener = {
	.global = registry_global,
	.global_remove = registry_global_remove,
};

static bool create_buffers(struct player *p) {
	size_t stride = (size_t)p->opt.width * 4;
	size_t size = stride * (size_t)p->opt.height;
	size_t pool_size = size * NUM_BUFFERS;
	if (pool_size > INT32_MAX) {
		fprintf(stderr, "qos-player: %dx%d is too large for a shm pool\n", p->opt.width,
				p->opt.height);
		return false;
	}

	int fd = memfd_create("qos-player", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		perror("qos-player: memfd_create");
		return false;
	}
	if (ftruncate(fd, (off_t)pool_size) < 0) {
		perror("qos-player: ftruncate");
		close(fd);
		return false;
	}
	/* The compositor maps the pool; it must not be able to shrink under it. */
	fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_SEAL);
	void *mem = mmap(NULL, pool_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (mem == MAP_FAILED) {
		perror("qos-player: mmap");
		close(fd);
		return false;
	}
	struct wl_shm_pool *pool = wl_shm_create_pool(p->shm, fd, (int32_t)pool_size);
	for (int i = 0; i < NUM_BUFFERS; i++) {
		struct buffer *buf = &p->buffers[i];
		buf->player = p;
		buf->pixels = (uint32_t *)((char *)mem + size * (size_t)i);
		buf->wl_buffer = wl_shm_pool_create_buffer(pool, (int32_t)(size * (size_t)i), p->opt.width,
				p->opt.height, (int32_t)stride, WL_SHM_FORMAT_XRGB8888);
		wl_buffer_add_listener(buf->wl_buffer, &buffer_listener, buf);
	}
	/* Buffers keep the pool's memory alive; the pool object is not needed. */
	wl_shm_pool_destroy(pool);
	close(fd);
	return true;
}

static void destroy_buffers(struct player *p) {
	size_t size = (size_t)p->opt.width * 4 * (size_t)p->opt.height;
	for (int i = 0; i < NUM_BUFFERS; i++) {
		if (p->buffers[i].wl_buffer != NULL) {
			wl_buffer_destroy(p->buffers[i].wl_buffer);
		}
	}
	if (p->buffers[0].pixels != NULL) {
		munmap(p->buffers[0].pixels, size * NUM_BUFFERS);
	}
}

static int setup_signals(void) {
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGUSR1);
	/* Blocked and read from a signalfd so handlers never race Wayland code. */
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0) {
		perror("qos-player: sigprocmask");
		return -1;
	}
	int fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (fd < 0) {
		perror("qos-player: signalfd");
	}
	return fd;
}

static void handle_signals(struct player *p, int sfd) {
	struct signalfd_siginfo si;
	while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGUSR1) {
			/* Lets a benchmark align our window with its own measurement. */
			stats_reset(p);
		} else {
			p->running = false;
		}
	}
}

/*
 * One iteration of the event loop. Returns false when the connection broke.
 * timeout_ms < 0 waits indefinitely.
 */
static bool dispatch_once(struct player *p, int sfd, int timeout_ms) {
	struct wl_display *d = p->display;
	while (wl_display_prepare_read(d) != 0) {
		if (wl_display_dispatch_pending(d) < 0) {
			return false;
		}
	}
	short display_events = POLLIN;
	if (wl_display_flush(d) < 0) {
		if (errno != EAGAIN) {
			wl_display_cancel_read(d);
			return false;
		}
		/* The socket is full: wait until the compositor drains it. */
		display_events |= POLLOUT;
	}

	struct pollfd fds[2] = {
		{ .fd = wl_display_get_fd(d), .events = display_events },
		{ .fd = sfd, .events = POLLIN },
	};
	int n = poll(fds, 2, timeout_ms);
	if (n < 0) {
		wl_display_cancel_read(d);
		return errno == EINTR;
	}
	if (fds[0].revents & POLLIN) {
		if (wl_display_read_events(d) < 0) {
			return false;
		}
	} else {
		wl_display_cancel_read(d);
	}
	if (fds[0].revents & (POLLERR | POLLHUP)) {
		return false;
	}
	if (fds[1].revents & POLLIN) {
		handle_signals(p, sfd);
	}
	return wl_display_dispatch_pending(d) >= 0;
}

static void print_stats(const struct player *p) {
	const struct stats *s = &p->stats;
	double end = s->end_s >= 0.0 ? s->end_s : now_s();
	double elapsed = p->configured ? end - s->start_s : 0.0;
	double cpu = p->configured ? clock_s(CLOCK_PROCESS_CPUTIME_ID) - s->cpu_start_s : 0.0;
	double fps = elapsed > 0.0 ? (double)s->frames / elapsed : 0.0;
	char presented[32] = "null", discarded[32] = "null";
	/* null, not 0, when nothing was counted: 0 would claim a measurement. */
	if (p->presentation != NULL) {
		snprintf(presented, sizeof(presented), "%ld", s->presented);
		snprintf(discarded, sizeof(discarded), "%ld", s->discarded);
	}
	char reserve[48] = "null";
	switch (p->reserve_state) {
	case RESERVE_NONE:
		break;
	case RESERVE_UNSUPPORTED:
		snprintf(reserve, sizeof(reserve), "\"unsupported\"");
		break;
	case RESERVE_PENDING:
		snprintf(reserve, sizeof(reserve), "\"pending\"");
		break;
	case RESERVE_GRANTED:
		snprintf(reserve, sizeof(reserve), "\"granted\"");
		break;
	case RESERVE_REFUSED:
		snprintf(reserve, sizeof(reserve), "\"refused:%s\"", p->reserve_refusal);
		break;
	}
	char reports[32] = "null";
	if (p->opt.report_work) {
		snprintf(reports, sizeof(reports), "%ld", s->work_reports);
	}
	printf("{\"frames\":%ld,\"elapsed_s\":%.3f,\"fps\":%.2f,\"worst_gap_ms\":%.2f,"
		   "\"presented\":%s,\"discarded\":%s,\"cpu_s\":%.3f,\"reserve\":%s,"
		   "\"missed\":%ld,\"work_reports\":%s",
			s->frames, elapsed, fps, s->worst_gap_s * 1e3, presented, discarded, cpu, reserve,
			s->missed, reports);
	if (p->opt.n_steps) {
		printf(",\"steps\":[");
		for (size_t i = 0; i < p->opt.n_steps; i++) {
			const struct step_stats *st = &s->steps[i];
			printf("%s{\"work_us\":%ld,\"seconds\":%.3f,\"frames\":%ld,\"missed\":%ld,"
				   "\"worst_gap_ms\":%.2f}",
					i ? "," : "", p->opt.steps[i].work_usec, p->opt.steps[i].seconds, st->frames,
					st->missed, st->worst_gap_s * 1e3);
		}
		printf("]");
	}
	printf("}\n");
	fflush(stdout);
}

static bool connect_and_bind(struct player *p) {
	p->display = wl_display_connect(NULL);
	if (p->display == NULL) {
		fprintf(stderr,
				"qos-player: cannot connect to the Wayland display "
				"(WAYLAND_DISPLAY=%s)\n",
				getenv("WAYLAND_DISPLAY") ? getenv("WAYLAND_DISPLAY") : "unset");
		return false;
	}
	p->registry = wl_display_get_registry(p->display);
	wl_registry_add_listener(p->registry, &registry_listener, p);
	if (wl_display_roundtrip(p->display) < 0) {
		fprintf(stderr, "qos-player: lost the connection while binding globals\n");
		return false;
	}
	const char *missing = p->compositor == NULL ? "wl_compositor v4"
			: p->shm == NULL                    ? "wl_shm"
			: p->wm_base == NULL                ? "xdg_wm_base"
												: NULL;
	if (missing != NULL) {
		fprintf(stderr, "qos-player: compositor lacks %s\n", missing);
		return false;
	}
	if (p->opt.presentation && p->presentation == NULL) {
		fprintf(stderr,
				"qos-player: -p: compositor lacks wp_presentation, "
				"presented/discarded will be null\n");
	}
	if (p->opt.view_width > 0 && p->viewporter == NULL) {
		fprintf(stderr,
				"qos-player: -V: compositor lacks wp_viewporter, "
				"playing unscaled at %dx%d\n",
				p->opt.width, p->opt.height);
	}
	player_request_reserve(p);
	/* The answer before the first frame: the reserve holds from the start. */
	if (p->reserve_state == RESERVE_PENDING && wl_display_roundtrip(p->display) < 0) {
		fprintf(stderr, "qos-player: lost the connection while asking for the reserve\n");
		return false;
	}
	return true;
}

static void create_window(struct player *p) {
	p->surface = wl_compositor_create_surface(p->compositor);
	p->xdg_surface = xdg_wm_base_get_xdg_surface(p->wm_base, p->surface);
	xdg_surface_add_listener(p->xdg_surface, &xdg_surface_listener, p);
	p->toplevel = xdg_surface_get_toplevel(p->xdg_surface);
	xdg_toplevel_add_listener(p->toplevel, &toplevel_listener, p);
	xdg_toplevel_set_title(p->toplevel, p->opt.title);
	xdg_toplevel_set_app_id(p->toplevel, p->opt.app_id);
	if (p->deco_manager != NULL) {
		p->decoration =
				zxdg_decoration_manager_v1_get_toplevel_decoration(p->deco_manager, p->toplevel);
		zxdg_toplevel_decoration_v1_set_mode(p->decoration,
				ZXDG_TOPLEVEL_DECORATION_V1_MODE_SERVER_SIDE);
	}
	int width = p->opt.width, height = p->opt.height;
	if (p->viewporter != NULL) {
		/* The window is the destination size; every buffer is scaled to it. */
		p->viewport = wp_viewporter_get_viewport(p->viewporter, p->surface);
		width = p->opt.view_width;
		height = p->opt.view_height;
		wp_viewport_set_destination(p->viewport, width, height);
	}
	/* Fixed-size windows float in tiling compositors, like video players. */
	xdg_toplevel_set_min_size(p->toplevel, width, height);
	xdg_toplevel_set_max_size(p->toplevel, width, height);
	wl_surface_commit(p->surface);
}

static void destroy_window(struct player *p) {
	struct feedback *fb, *tmp;
	wl_list_for_each_safe(fb, tmp, &p->feedbacks, link) {
		feedback_finish(fb);
	}
	if (p->frame_cb != NULL) {
		wl_callback_destroy(p->frame_cb);
	}
	if (p->viewport != NULL) {
		wp_viewport_destroy(p->viewport);
	}
	if (p->decoration != NULL) {
		zxdg_toplevel_decoration_v1_destroy(p->decoration);
	}
	if (p->toplevel != NULL) {
		xdg_toplevel_destroy(p->toplevel);
	}
	if (p->xdg_surface != NULL) {
		xdg_surface_destroy(p->xdg_surface);
	}
	if (p->surface != NULL) {
		wl_surface_destroy(p->surface);
	}
}

static void destroy_globals(struct player *p) {
	player_reserve_finish(p);
	if (p->presentation != NULL) {
		wp_presentation_destroy(p->presentation);
	}
	if (p->viewporter != NULL) {
		wp_viewporter_destroy(p->viewporter);
	}
	if (p->deco_manager != NULL) {
		zxdg_decoration_manager_v1_destroy(p->deco_manager);
	}
	if (p->wm_base != NULL) {
		xdg_wm_base_destroy(p->wm_base);
	}
	if (p->shm != NULL) {
		wl_shm_destroy(p->shm);
	}
	if (p->compositor != NULL) {
		wl_compositor_destroy(p->compositor);
	}
	if (p->registry != NULL) {
		wl_registry_destroy(p->registry);
	}
}

/*
 * Feedback for the last frames arrives shortly after their frame callbacks;
 * waiting briefly keeps -p counts from being short by a frame or two.
 */
static void drain_feedback(struct player *p, int sfd) {
	double deadline = now_s() + FEEDBACK_DRAIN_MS / 1e3;
	while (!wl_list_empty(&p->feedbacks) && !p->failed) {
		int left = (int)((deadline - now_s()) * 1e3);
		if (left <= 0) {
			break;
		}
		if (!dispatch_once(p, sfd, left)) {
			p->failed = true;
		}
	}
}

int main(int argc, char *argv[]) {
	/* 60 Hz until the display says otherwise (presentation, vblank period). */
	struct player p = { .stats = { .last_done_s = -1.0 }, .refresh_s = 1.0 / 60.0 };
	int exit_code = EXIT_FAILURE;
	wl_list_init(&p.feedbacks);

	if (!player_parse_options(argc, argv, &p.opt, &exit_code)) {
		return exit_code;
	}
	int sfd = setup_signals();
	if (sfd < 0) {
		return EXIT_FAILURE;
	}
	if (!pattern_init(&p)) {
		fprintf(stderr, "qos-player: out of memory\n");
		goto out;
	}
	if (!connect_and_bind(&p) || !create_buffers(&p)) {
		goto out;
	}
	create_window(&p);

	p.running = true;
	while (p.running) {
		if (!dispatch_once(&p, sfd, -1)) {
			fprintf(stderr, "qos-player: lost the connection to the compositor\n");
			p.failed = true;
			p.running = false;
		}
	}
	if (p.stats.end_s < 0.0) {
		p.stats.end_s = now_s();
	}
	drain_feedback(&p, sfd);
	print_stats(&p);
	exit_code = p.failed ? EXIT_FAILURE : EXIT_SUCCESS;

out:
	if (p.display != NULL) {
		if (!p.failed) {
			destroy_window(&p);
			destroy_buffers(&p);
		}
		destroy_globals(&p);
		wl_display_flush(p.display);
		wl_display_disconnect(p.display);
	}
	free(p.pattern);
	close(sfd);
	return exit_code;
}
