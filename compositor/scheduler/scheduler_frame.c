/*
 * Frames: when the output is drawn, who gets a frame callback, and in what
 * order; best-effort commits held under load.
 *
 * A frame is drawn just after the output's frame event rather than inside
 * it, boosted when a real-time client's commit is waiting to be shown. Then
 * frame callbacks: real-time clients first, flushed at once so they start
 * their next frame while the rest is served; best-effort clients on every
 * divisor-th frame, the divisor chosen so that what they cost the
 * compositor per frame stays within half the refresh period (never below
 * 2 Hz: clients stall or break when callbacks stop); surfaces no opaque
 * window leaves a pixel of, and surfaces on no output, at the configured
 * hidden-frame-rate; paused and exhausted clients none.
 *
 * While best effort is paced, its toplevels' commits are held with
 * wlr_surface_lock_pending and applied on the frames where it is served,
 * so a client that commits without waiting for callbacks cannot add
 * damage (and render time) to the frames in between.
 */
#include <stdlib.h>
#include <time.h>
#include <wlr/types/wlr_output.h>
#include <wlr/types/wlr_scene.h>
#include <wlr/types/wlr_surface.h>
#include <wlr/types/wlr_xdg_shell.h>
#include <wlr/util/log.h>

#include "qos_bridge/client_identity.h"
#include "output/output.h"
#include "output/render.h"
#include "scheduler/scheduler_internal.h"
#include "server.h"
#include "desktop/view.h"

/* Frames over which the best-effort cost is averaged before the divisor moves. */
#define PACING_WINDOW_FRAMES 30
/* Best effort is paced only while a real-time client drew this recently. */
#define RT_ACTIVE_NS 1000000000ull

static bool rt_active(struct qw_scheduler *sched, uint64_t now) {
	return sched->rt_drawn_ns && now < sched->rt_drawn_ns + RT_ACTIVE_NS;
}

static bool client_paused(struct wl_client *client) {
	struct client_identity *id = client_identity_find(client);
	return id && id->paused;
}

static uint64_t refresh_ns(struct qw_output *output) {
	int mhz = output->wlr_output->refresh;
	return mhz > 0 ? 1000000000000ull / (uint64_t)mhz : 16666667ull;
}

static bool hidden_due(struct qw_scheduler *sched, uint64_t *last, uint64_t now) {
	unsigned int hz = sched->server->config.scheduling.hidden_frame_rate;
	if (now < *last + 1000000000ull / hz) {
		return false;
	}
	*last = now;
	return true;
}

/* Callbacks in order: real-time first and flushed, then best effort. */
static void send_callbacks(struct qw_scheduler *sched, struct qw_output *output,
		struct timespec *when) {
	struct render_report *report = &output->report;
	uint64_t now = sched_now_ns();
	bool hidden = hidden_due(sched, &output->hidden_sent_ns, now);
	bool be_frame = !rt_active(sched, now) || sched->frames % sched->divisor == 0;
	sched_batch_begin(sched);
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < report->len; i++) {
			struct render_shown *shown = &report->items[i];
			if (!shown->surface || !shown->client) {
				continue;
			}
			struct wlr_scene_surface *ss = wlr_scene_surface_from_node(shown->node);
			struct sched_client *c = sched_client_of(sched, shown->client);
			bool rt = c && c->realtime;
			if ((pass == 0) != rt || ss->primary_output != output->wlr_output ||
					client_paused(shown->client) || (c && sched_client_exhausted(c, now))) {
				continue;
			}
			if (shown->visible_px == 0 ? !hidden : !(rt || be_frame)) {
				continue;
			}
			wlr_surface_send_frame_done(shown->surface, when);
			if (rt) {
				sched->rt_drawn_ns = now;
			}
			if (rt && !c->awaiting) {
				c->awaiting = true;
				c->committed = false;
				c->awaiting_ns = now;
			}
		}
		if (pass == 0) {
			/* The real-time clients start their next frame now. */
			struct sched_client *c;
			wl_list_for_each(c, &sched->clients, link) {
				if (c->realtime && c->flush_events) {
					wl_client_flush(c->client);
					c->flush_events = 0;
				}
			}
		}
	}
	sched_batch_end(sched);
	if (be_frame) {
		sched->be_frames++;
	}
}

/* The divisor for best effort, from what it cost over the last frames. */
static void update_pacing(struct qw_scheduler *sched, struct qw_output *output, uint64_t now) {
	if (++sched->window_frames < PACING_WINDOW_FRAMES) {
		return;
	}
	uint64_t cost = sched->be_cost_ns - sched->be_last_ns;
	unsigned int be_frames = sched->be_frames ? sched->be_frames : 1;
	sched->be_last_ns = sched->be_cost_ns;
	sched->window_frames = 0;
	sched->be_frames = 0;
	unsigned int divisor = 1;
	if (rt_active(sched, now)) {
		uint64_t period = refresh_ns(output);
		double budget = sched->be_budget_ns ? (double)sched->be_budget_ns
											: (double)period * SCHED_BE_BUDGET_SHARE;
		double per_be_frame = (double)cost / be_frames;
		unsigned int max = (unsigned int)(1000000000ull / period / 2);
		divisor = sched->divisor;
		if (per_be_frame > budget * divisor) {
			divisor = (unsigned int)(per_be_frame / budget) + 1;
		} else if (divisor > 1 && per_be_frame < 0.8 * budget * (divisor - 1)) {
			divisor--;
		}
		divisor = divisor > max ? (max ? max : 1) : divisor;
	}
	if (divisor != sched->divisor) {
		sched_trace(sched, "divisor %u", divisor);
		sched->divisor = divisor;
	}
}

static void hold_remove(struct sched_hold *hold, bool unlock) {
	if (unlock && hold->locked) {
		hold->locked = false;
		wlr_surface_unlock_cached(hold->surface, hold->seq);
	}
	wl_list_remove(&hold->destroy.link);
	wl_list_remove(&hold->link);
	free(hold);
}

static void handle_hold_surface_destroy(struct wl_listener *listener, void *data) {
	struct sched_hold *hold = wl_container_of(listener, hold, destroy);
	hold_remove(hold, false);
}

static struct sched_hold *hold_find(struct qw_scheduler *sched, struct wlr_surface *surface) {
	struct sched_hold *hold;
	wl_list_for_each(hold, &sched->holds, link) {
		if (hold->surface == surface) {
			return hold;
		}
	}
	return NULL;
}

static bool view_held(struct qw_scheduler *sched, struct qw_view *view) {
	if (!view->mapped || view->client_gone || !view->xdg_surface) {
		return false;
	}
	struct wl_client *client = wl_resource_get_client(view->xdg_surface->resource);
	struct sched_client *c = sched_client_of(sched, client);
	return c && !c->realtime && !client_paused(client);
}

/*
 * On a frame where best effort is served: what it committed is applied
 * (its damage is in the next frame) and its next commit held again.
 */
static void release_holds(struct qw_scheduler *sched) {
	struct sched_hold *hold, *tmp;
	wl_list_for_each_safe(hold, tmp, &sched->holds, link) {
		if (hold->locked) {
			hold->locked = false;
			wlr_surface_unlock_cached(hold->surface, hold->seq);
		}
	}
	if (!sched->hold) {
		wl_list_for_each_safe(hold, tmp, &sched->holds, link) {
			hold_remove(hold, true);
		}
		return;
	}
	struct qw_view *view;
	wl_list_for_each(view, &sched->server->views, link) {
		struct wlr_surface *surface = view->xdg_surface ? view->xdg_surface->surface : NULL;
		hold = surface ? hold_find(sched, surface) : NULL;
		if (!view_held(sched, view)) {
			if (hold) {
				hold_remove(hold, true);
			}
			continue;
		}
		if (!hold) {
			hold = calloc(1, sizeof(*hold));
			if (!hold) {
				continue; /* not held: served as it comes */
			}
			hold->sched = sched;
			hold->surface = surface;
			hold->destroy.notify = handle_hold_surface_destroy;
			wl_signal_add(&surface->events.destroy, &hold->destroy);
			wl_list_insert(&sched->holds, &hold->link);
		}
		hold->seq = wlr_surface_lock_pending(surface);
		hold->locked = true;
	}
}

/* The real-time clients whose commits this frame put on screen. */
static void mark_shown(struct qw_scheduler *sched, struct qw_output *output) {
	if (!output->report.drawn) {
		return;
	}
	for (size_t i = 0; i < output->report.len; i++) {
		struct render_shown *shown = &output->report.items[i];
		struct sched_client *c = shown->surface ? sched_client_of(sched, shown->client) : NULL;
		if (c && c->awaiting && c->committed) {
			c->awaiting = false;
			c->committed = false;
		}
	}
}

void sched_frame_draw(struct qw_scheduler *sched, struct qw_output *output) {
	struct timespec when;
	uint64_t now = sched_now_ns();
	sched_switch(sched, SCHED_OWNER_SELF, NULL);
	if (sched_rt_pending(sched, now, NULL)) {
		sched_boost_set(sched, true);
	}
	struct render_report *report = sched->accounting ? &output->report : NULL;
	if (output_draw(output, report, &when)) {
		output->drawn_ns = now;
	}
	if (report) {
		sched_account_render(sched, report);
	}
	sched->frames++;
	sched_trace(sched, "frame %llu %s", (unsigned long long)sched->frames,
			output->wlr_output->name);
	if (!sched->serve) {
		sched_batch_begin(sched);
		output_send_frame_done(output, &when);
		sched_batch_end(sched);
		if (report) {
			mark_shown(sched, output);
		}
		if (sched->billable_pending) {
			sched_settle(sched);
		}
		sched_bill(sched, true);
		return;
	}
	mark_shown(sched, output);
	send_callbacks(sched, output, &when);
	update_pacing(sched, output, now);
	bool hold = rt_active(sched, now) && sched->divisor > 1;
	if (hold != sched->hold) {
		sched_trace(sched, "hold %s", hold ? "on" : "off");
		sched->hold = hold;
	}
	if (sched->hold || !wl_list_empty(&sched->holds)) {
		if (!sched->hold || sched->frames % sched->divisor == 0) {
			release_holds(sched);
		}
	}
	/* Bills go out each frame: what the books hold for reserves first. */
	if (sched->billable_pending) {
		sched_settle(sched);
	}
	sched_bill(sched, true);
}

static void handle_draw_idle(void *data) {
	struct qw_output *output = data;
	output->draw_idle = NULL;
	/* The frame asked for is this one (set in scheduler_output_frame). */
	output->wlr_output->frame_pending = false;
	sched_frame_draw(output->server->scheduler, output);
}

void scheduler_output_frame(struct qw_scheduler *sched, struct qw_output *output) {
	if (!sched) {
		struct timespec when;
		output_draw(output, NULL, &when);
		output_send_frame_done(output, &when);
		return;
	}
	scheduler_own(sched);
	sched_trace(sched, "tick");
	if (!sched->serve) {
		sched_frame_draw(sched, output);
		return;
	}
	/*
	 * A display shows a frame a refresh period; wlroots' headless backend
	 * also sends a frame event at once for damage after a tick that drew
	 * nothing. Such an early frame is left to the next tick: drawing
	 * between ticks only adds frames (and their fixed cost) nobody sees.
	 */
	uint64_t now = sched_now_ns();
	if (output->synthesize_present && output->drawn_ns &&
			now < output->drawn_ns + refresh_ns(output) * 3 / 4) {
		return;
	}
	if (!output->draw_idle) {
		output->draw_idle =
				wl_event_loop_add_idle(sched->server->event_loop, handle_draw_idle, output);
	}
	if (!output->draw_idle) {
		sched_frame_draw(sched, output); /* no memory for the idle source */
		return;
	}
	/*
	 * Until it is drawn, the frame counts as pending (as sway does while it
	 * delays drawing): damage, a cursor move or a client asking for a
	 * frame then waits for this draw rather than have wlroots send another
	 * frame event, so the output's one commit per frame event is this one.
	 */
	output->wlr_output->frame_pending = true;
}

void scheduler_output_destroyed(struct qw_scheduler *sched, struct qw_output *output) {
	if (output->draw_idle) {
		wl_event_source_remove(output->draw_idle);
		output->draw_idle = NULL;
	}
}

/* Surfaces on no output at all still get callbacks, at the hidden rate. */
static void send_offscreen(struct wlr_scene_node *node, struct timespec *when) {
	if (!node->state.enabled) {
		return;
	}
	if (node->type == WLR_SCENE_NODE_SURFACE) {
		struct wlr_scene_surface *ss = wlr_scene_surface_from_node(node);
		if (!ss->primary_output && !client_paused(wl_resource_get_client(ss->surface->resource))) {
			wlr_surface_send_frame_done(ss->surface, when);
		}
		return;
	}
	struct wlr_scene_node *child;
	wl_list_for_each(child, &node->state.children, state.link) {
		send_offscreen(child, when);
	}
}

static int handle_hidden_timer(void *data) {
	struct qw_scheduler *sched = data;
	scheduler_own(sched);
	struct timespec when;
	clock_gettime(CLOCK_MONOTONIC, &when);
	sched_batch_begin(sched);
	send_offscreen(&sched->server->scene->node, &when);
	sched_batch_end(sched);
	wl_event_source_timer_update(sched->hidden_timer,
			(int)(1000 / sched->server->config.scheduling.hidden_frame_rate) + 1);
	return 0;
}

bool sched_frame_init(struct qw_scheduler *sched) {
	if (!sched->serve) {
		return true;
	}
	sched->hidden_timer =
			wl_event_loop_add_timer(sched->server->event_loop, handle_hidden_timer, sched);
	if (!sched->hidden_timer) {
		return false;
	}
	wl_event_source_timer_update(sched->hidden_timer,
			(int)(1000 / sched->server->config.scheduling.hidden_frame_rate) + 1);
	return true;
}

void sched_frame_finish(struct qw_scheduler *sched) {
	struct sched_hold *hold, *tmp;
	wl_list_for_each_safe(hold, tmp, &sched->holds, link) {
		hold_remove(hold, true);
	}
	if (sched->hidden_timer) {
		wl_event_source_remove(sched->hidden_timer);
		sched->hidden_timer = NULL;
	}
}
