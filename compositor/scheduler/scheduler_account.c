/*
 * The books: whose time the compositor's main thread spends.
 *
 * The owner changes where the client being served changes: the protocol
 * logger sees every request, with its client, just before it runs, and the
 * compositor's own handlers (input, IPC, timers, output frames) say when
 * they start. What lies between two such points belongs to the earlier
 * one, so a request handler's work, the events it sends included, is its
 * client's. The loop's own bookkeeping (poll, reading sockets) goes to the
 * next client served, as the thesis's X server did. Where many clients
 * share one stretch of work, the stretch is split: a frame's rendering by
 * the damage each client's commits brought, a batch of frame callbacks or a
 * flush by the events each client got.
 *
 * Reading the thread's CPU clock is a system call (1-5 us here, under
 * load), too dear at every owner change. The stretches are timed on the
 * monotonic clock (vDSO, some 25 ns) as segments, with the clock stopped
 * while the thread sleeps in poll, and every few milliseconds of them (and
 * at each frame, before bills) the CPU time the thread really used since
 * the last time is shared out over the segments by their length: the total
 * is exact, only a preemption can tilt the split between the segments of
 * those few milliseconds.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wayland-server-protocol.h>
#include <wlr/types/wlr_compositor.h>
#include <wlr/types/wlr_surface.h>
#include <wlr/util/log.h>

#include "output/render.h"
#include "scheduler/scheduler_internal.h"
#include "server.h"

/* One in this many of the books' operations is timed to report their cost. */
#define BOOKS_SAMPLE 16
/* Segments are settled once they cover this much awake time. */
#define SETTLE_EVERY_NS 4000000ull

uint64_t sched_thread_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The books' own cost, sampled: timing every operation would double it. */
static uint64_t books_enter(struct qw_scheduler *sched) {
	return ++sched->books_ops % BOOKS_SAMPLE == 0 ? sched_now_ns() : 0;
}

static void books_leave(struct qw_scheduler *sched, uint64_t start) {
	if (start) {
		/* Less what the two clock reads of the sample cost themselves. */
		uint64_t spent = sched_now_ns() - start;
		spent = spent > sched->clock_read_ns ? spent - sched->clock_read_ns : 0;
		sched->books_ns += spent * BOOKS_SAMPLE;
	}
}

/* The cost of a monotonic clock read, the least of a few tries. */
static uint64_t calibrate_clock(void) {
	uint64_t least = UINT64_MAX;
	for (int i = 0; i < 64; i++) {
		uint64_t a = sched_now_ns(), b = sched_now_ns();
		least = b - a < least ? b - a : least;
	}
	return least;
}

static void charge(struct qw_scheduler *sched, enum sched_owner owner, struct sched_client *c,
		uint64_t ns) {
	switch (owner) {
	case SCHED_OWNER_SELF:
		sched->own_ns += ns;
		break;
	case SCHED_OWNER_QOS:
		sched->own_ns += ns;
		sched->qos_ns += ns;
		break;
	case SCHED_OWNER_NEXT:
		sched->next_ns += ns;
		break;
	case SCHED_OWNER_CLIENT:
		if (sched->next_ns) {
			/* Bookkeeping waits for a client: the compositor's own
			 * handlers in between do not take it. */
			ns += sched->next_ns;
			sched->next_ns = 0;
		}
		c->server_ns += ns;
		if (c->reserve[0] || c->limit) {
			c->unbilled_ns += ns; /* what it spent in none is nobody's bill */
		}
		if (!c->realtime) {
			sched->be_cost_ns += ns;
		}
		break;
	}
}

/* A stretch of wall time for one owner, to be charged at the next settle. */
static void push(struct qw_scheduler *sched, enum sched_owner owner, struct sched_client *c,
		uint64_t wall_ns) {
	if (!wall_ns) {
		return;
	}
	sched->segments_wall_ns += wall_ns;
	if (sched->n_segments == sched->cap_segments) {
		size_t cap = sched->cap_segments ? sched->cap_segments * 2 : 256;
		struct sched_segment *grown = realloc(sched->segments, cap * sizeof(*grown));
		if (!grown) {
			/* No room: it merges into the last one, whoever's, or is
			 * lost and its time goes to the others at the settle. */
			if (sched->n_segments) {
				sched->segments[sched->n_segments - 1].wall_ns += wall_ns;
			}
			return;
		}
		sched->segments = grown;
		sched->cap_segments = cap;
	}
	sched->segments[sched->n_segments++] = (struct sched_segment){
		.owner = owner,
		.client = c,
		.wall_ns = wall_ns,
	};
	if (c && (c->reserve[0] || c->limit)) {
		sched->billable_pending = true;
	}
}

void sched_settle(struct qw_scheduler *sched) {
	if (!sched->accounting) {
		return;
	}
	uint64_t start = books_enter(sched);
	if (sched->segment_ns) {
		uint64_t now = sched_now_ns();
		push(sched, sched->owner, sched->owner_client, now - sched->segment_ns);
		sched->segment_ns = now;
	}
	uint64_t cpu = sched_thread_ns();
	uint64_t used = cpu - sched->cpu_ns;
	sched->cpu_ns = cpu;
	uint64_t wall = 0;
	for (size_t i = 0; i < sched->n_segments; i++) {
		wall += sched->segments[i].wall_ns;
	}
	if (!wall) {
		charge(sched, sched->owner, sched->owner_client, used);
	}
	uint64_t given = 0;
	for (size_t i = 0; wall && i < sched->n_segments; i++) {
		struct sched_segment *seg = &sched->segments[i];
		uint64_t share = i + 1 == sched->n_segments
				? used - given
				: (uint64_t)((double)used * (double)seg->wall_ns / (double)wall);
		charge(sched, seg->owner, seg->client, share);
		given += share;
	}
	sched->n_segments = 0;
	sched->segments_wall_ns = 0;
	sched->billable_pending = false;
	books_leave(sched, start);
}

void sched_pause(struct qw_scheduler *sched) {
	if (!sched->accounting) {
		return;
	}
	uint64_t now = sched_now_ns();
	push(sched, sched->owner, sched->owner_client, now - sched->segment_ns);
	sched->segment_ns = 0;
	if (sched->segments_wall_ns >= SETTLE_EVERY_NS) {
		sched_settle(sched);
	}
}

void sched_resume(struct qw_scheduler *sched) {
	sched->segment_ns = sched_now_ns();
}

void sched_switch(struct qw_scheduler *sched, enum sched_owner owner, struct sched_client *c) {
	if (!sched->accounting || (owner == sched->owner && c == sched->owner_client)) {
		return;
	}
	uint64_t now = sched_now_ns();
	push(sched, sched->owner, sched->owner_client, now - sched->segment_ns);
	sched->segment_ns = now;
	sched->owner = owner;
	sched->owner_client = c;
}

static void handle_log(void *data, enum wl_protocol_logger_type type,
		const struct wl_protocol_logger_message *message) {
	struct qw_scheduler *sched = data;
	uint64_t start = books_enter(sched);
	struct sched_client *c = sched_client_of(sched, wl_resource_get_client(message->resource));
	if (!c) {
		books_leave(sched, start);
		return;
	}
	if (sched->trace && type == WL_PROTOCOL_LOGGER_REQUEST &&
			sched_client_exhausted(c, sched_now_ns())) {
		sched_trace(sched, "request pid=%d %s.%s exhausted", (int)c->pid,
				wl_resource_get_class(message->resource), message->message->name);
	}
	if (sched->trace && type == WL_PROTOCOL_LOGGER_REQUEST && c->realtime &&
			strcmp(message->message->name, "commit") == 0) {
		sched_trace(sched, "commit pid=%d", (int)c->pid);
	}
	if (type == WL_PROTOCOL_LOGGER_EVENT) {
		/* An event is queued by whoever is served: the sender's work.
		 * It is written to the socket at the flush, split by events. */
		c->flush_events++;
		sched->flush_pending = true;
		if (sched->trace && strcmp(message->message->name, "done") == 0) {
			sched_trace(sched, "done pid=%d %s", (int)c->pid,
					c->realtime ? "realtime" : "best-effort");
		}
		if (sched->batch_depth) {
			c->batch_events++;
		}
	} else {
		sched_switch(sched, SCHED_OWNER_CLIENT, c);
	}
	books_leave(sched, start);
}

/*
 * Before a client goes: what it is owed is charged now, since the segments
 * that name it would outlive it.
 */
void sched_forget(struct qw_scheduler *sched, struct sched_client *c) {
	if (!sched->accounting) {
		return;
	}
	if (sched->batch_owner_client == c) {
		/* A flush that found it gone: what follows is the loop's. */
		sched->batch_owner = SCHED_OWNER_NEXT;
		sched->batch_owner_client = NULL;
	}
	bool named = sched->owner_client == c;
	for (size_t i = 0; i < sched->n_segments && !named; i++) {
		named = sched->segments[i].client == c;
	}
	if (named) {
		sched_switch(sched, SCHED_OWNER_SELF, NULL);
		sched_settle(sched);
	}
}

struct sched_surface {
	struct qw_scheduler *sched;
	struct wlr_surface *surface;
	struct wl_listener commit;
	struct wl_listener destroy;
};

static uint64_t region_px(const pixman_region32_t *region) {
	int n;
	pixman_box32_t *rects = pixman_region32_rectangles((pixman_region32_t *)region, &n);
	uint64_t px = 0;
	for (int i = 0; i < n; i++) {
		px += (uint64_t)(rects[i].x2 - rects[i].x1) * (uint64_t)(rects[i].y2 - rects[i].y1);
	}
	return px;
}

/* A commit applied (held ones when released): the damage it brings. */
static void handle_surface_commit(struct wl_listener *listener, void *data) {
	struct sched_surface *ss = wl_container_of(listener, ss, commit);
	struct sched_client *c =
			sched_client_of(ss->sched, wl_resource_get_client(ss->surface->resource));
	if (c) {
		c->damage_px += region_px(&ss->surface->buffer_damage);
		if (c->awaiting) {
			c->committed = true; /* its next frame, on screen at the next draw */
		}
	}
}

static void handle_surface_destroy(struct wl_listener *listener, void *data) {
	struct sched_surface *ss = wl_container_of(listener, ss, destroy);
	wl_list_remove(&ss->commit.link);
	wl_list_remove(&ss->destroy.link);
	free(ss);
}

static void handle_new_surface(struct wl_listener *listener, void *data) {
	struct qw_scheduler *sched = wl_container_of(listener, sched, new_surface);
	struct wlr_surface *surface = data;
	struct sched_surface *ss = calloc(1, sizeof(*ss));
	if (!ss) {
		return; /* its damage is not counted: the frame goes to the others */
	}
	ss->sched = sched;
	ss->surface = surface;
	ss->commit.notify = handle_surface_commit;
	wl_signal_add(&surface->events.commit, &ss->commit);
	ss->destroy.notify = handle_surface_destroy;
	wl_signal_add(&surface->events.destroy, &ss->destroy);
}

bool sched_account_init(struct qw_scheduler *sched) {
	sched->owner = SCHED_OWNER_SELF;
	sched->clock_read_ns = calibrate_clock();
	sched->cpu_ns = sched_thread_ns();
	sched->segment_ns = sched_now_ns();
	if (!sched->accounting && !sched->trace) {
		return true;
	}
	sched->logger = wl_display_add_protocol_logger(sched->server->wl_display, handle_log, sched);
	if (!sched->logger) {
		wlr_log(WLR_ERROR, "scheduler: cannot add a protocol logger");
		return false;
	}
	sched->new_surface.notify = handle_new_surface;
	wl_signal_add(&sched->server->compositor->events.new_surface, &sched->new_surface);
	return true;
}

void sched_account_finish(struct qw_scheduler *sched) {
	if (sched->logger) {
		wl_protocol_logger_destroy(sched->logger);
		sched->logger = NULL;
	}
	if (sched->new_surface.notify) {
		wl_list_remove(&sched->new_surface.link);
		sched->new_surface.notify = NULL;
	}
	free(sched->segments);
	sched->segments = NULL;
	sched->n_segments = sched->cap_segments = 0;
}

void sched_batch_begin(struct qw_scheduler *sched) {
	if (sched->accounting && sched->batch_depth++ == 0) {
		sched->batch_owner = sched->owner;
		sched->batch_owner_client = sched->owner_client;
		sched_switch(sched, SCHED_OWNER_SELF, NULL);
	}
}

/*
 * The wall time since the current segment began, shared over the clients
 * by their weights (taken and zeroed here); what no client weighs goes to
 * owner. The segment starts afresh.
 */
static void push_split(struct qw_scheduler *sched, uint64_t now,
		uint64_t *(*weight)(struct sched_client *c), enum sched_owner owner,
		struct sched_client *owner_client) {
	uint64_t elapsed = now - sched->segment_ns, total = 0, given = 0;
	struct sched_client *c;
	wl_list_for_each(c, &sched->clients, link) {
		total += *weight(c);
	}
	wl_list_for_each(c, &sched->clients, link) {
		uint64_t *w = weight(c);
		if (*w) {
			uint64_t share = (uint64_t)((double)elapsed * (double)*w / (double)total);
			push(sched, SCHED_OWNER_CLIENT, c, share);
			given += share;
			*w = 0;
		}
	}
	push(sched, owner, owner_client, elapsed - given);
	sched->segment_ns = now;
}

static uint64_t *batch_weight(struct sched_client *c) {
	return &c->batch_events;
}

static uint64_t *damage_weight(struct sched_client *c) {
	return &c->damage_px;
}

/* The time since the batch began goes to the clients by their events. */
void sched_batch_end(struct qw_scheduler *sched) {
	if (!sched->accounting || --sched->batch_depth > 0) {
		return;
	}
	uint64_t start = books_enter(sched);
	push_split(sched, sched_now_ns(), batch_weight, SCHED_OWNER_SELF, NULL);
	/* What follows the batch is whoever's it was before. */
	sched->owner = sched->batch_owner;
	sched->owner_client = sched->batch_owner_client;
	books_leave(sched, start);
}

void sched_flush_clients(struct qw_scheduler *sched) {
	struct wl_display *display = sched->server->wl_display;
	if (!sched->accounting || !sched->flush_pending) {
		wl_display_flush_clients(display);
		return;
	}
	/* Each client's events are written to its socket here: a batch split
	 * by the events queued for each since the last flush. */
	struct sched_client *c;
	wl_list_for_each(c, &sched->clients, link) {
		c->batch_events += c->flush_events;
		c->flush_events = 0;
	}
	sched->flush_pending = false;
	sched_batch_begin(sched);
	wl_display_flush_clients(display);
	sched_batch_end(sched);
}

void sched_account_render(struct qw_scheduler *sched, const struct render_report *report) {
	if (!sched->accounting) {
		return;
	}
	uint64_t start = books_enter(sched);
	uint64_t now = sched_now_ns();
	/*
	 * A frame draws what the clients damaged since the last one, and
	 * whatever lies in that damage: a window on top of a redrawn one is
	 * painted again because of the one below. So the frame is split by the
	 * damage each client's commits produced, not by whose pixels were
	 * drawn. A frame without client damage (a cursor, a titlebar button,
	 * the output's tick) is the compositor's own.
	 */
	if (sched->trace && report->drawn) {
		uint64_t damage = 0, drawn = 0;
		struct sched_client *c;
		wl_list_for_each(c, &sched->clients, link) {
			damage += c->damage_px;
		}
		for (size_t i = 0; i < report->len; i++) {
			drawn += report->items[i].damaged_px;
		}
		sched_trace(sched, "render us=%llu damage=%llu drawn=%llu",
				(unsigned long long)((now - sched->segment_ns) / 1000), (unsigned long long)damage,
				(unsigned long long)drawn);
	}
	if (report->drawn) {
		push_split(sched, now, damage_weight, sched->owner, sched->owner_client);
	} else {
		/* Its damage waits for the frame that draws it. */
		push(sched, sched->owner, sched->owner_client, now - sched->segment_ns);
		sched->segment_ns = now;
	}
	books_leave(sched, start);
}
