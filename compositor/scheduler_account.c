/*
 * Whose time the compositor's main thread spends, and billing it.
 *
 * The main thread's CPU clock is read only where the client being served
 * changes: the protocol logger sees every request, with its client, just
 * before it runs, and the compositor's own handlers (input, IPC, timers,
 * output frames) say when they start. What lies between two such points
 * belongs to the earlier one, so a request handler's work, the events it
 * sends included, is its client's. The loop's own bookkeeping (poll,
 * reading sockets) goes to the next client served, as the thesis's X
 * server did. Where many clients share one stretch of work, the stretch is
 * split: a frame's rendering by each client's damaged visible area (its
 * decorations included), a batch of frame callbacks or a flush by the
 * events each client got.
 *
 * Billing (thesis 5.4.5): a client's time goes to its reserve
 * (qos_manager_bill_pid) once 500 us of it are unbilled, and at every output
 * frame. A client in no reserve whose own cgroup has a CPU limit has its
 * time counted against that limit instead: the kernel cannot be told to
 * charge it, so the group's own usage (cpu.stat) plus what the compositor
 * spent for it are compared with the quota over windows of the limit's
 * period, and the client is not served for the rest of a window once they
 * pass it; what a window overshot is taken from the next.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <wayland-server-protocol.h>
#include <wlr/types/wlr_compositor.h>
#include <wlr/types/wlr_surface.h>
#include <wlr/util/log.h>

#include "qos/qos.h"
#include "render.h"
#include "scheduler_internal.h"
#include "server.h"

uint64_t sched_thread_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void charge(struct qw_scheduler *sched, enum sched_owner owner,
		struct sched_client *c, uint64_t ns) {
	switch (owner) {
	case SCHED_OWNER_SELF:
		sched->own_ns += ns;
		break;
	case SCHED_OWNER_NEXT:
		sched->next_ns += ns;
		break;
	case SCHED_OWNER_CLIENT:
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

void sched_switch(struct qw_scheduler *sched, enum sched_owner owner, struct sched_client *c) {
	if (!sched->accounting || (owner == sched->owner && c == sched->owner_client)) {
		return;
	}
	uint64_t now = sched_thread_ns();
	charge(sched, sched->owner, sched->owner_client, now - sched->mark_ns);
	if (owner == SCHED_OWNER_CLIENT && sched->next_ns) {
		/* Bookkeeping waits for a client: the compositor's own handlers
		 * in between do not take it. */
		charge(sched, owner, c, sched->next_ns);
		sched->next_ns = 0;
	}
	sched->mark_ns = now;
	sched->owner = owner;
	sched->owner_client = c;
}

static void handle_log(void *data, enum wl_protocol_logger_type type,
		const struct wl_protocol_logger_message *message) {
	struct qw_scheduler *sched = data;
	struct sched_client *c = sched_client_of(sched, wl_resource_get_client(message->resource));
	if (!c) {
		return;
	}
	if (sched->trace && type == WL_PROTOCOL_LOGGER_REQUEST &&
			sched_client_exhausted(c, sched_now_ns())) {
		sched_trace(sched, "request pid=%d %s.%s exhausted", (int)c->pid,
			wl_resource_get_class(message->resource), message->message->name);
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
		return;
	}
	sched_switch(sched, SCHED_OWNER_CLIENT, c);
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
	struct sched_client *c = sched_client_of(ss->sched,
		wl_resource_get_client(ss->surface->resource));
	if (!c) {
		return;
	}
	c->damage_px += region_px(&ss->surface->buffer_damage);
	if (c->awaiting) {
		c->committed = true; /* its next frame, on screen at the next draw */
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
	sched->mark_ns = sched_thread_ns();
	if (!sched->accounting && !sched->trace) {
		return true;
	}
	sched->logger = wl_display_add_protocol_logger(sched->server->wl_display, handle_log,
		sched);
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
	struct sched_limit *limit, *tmp;
	wl_list_for_each_safe(limit, tmp, &sched->limits, link) {
		wl_list_remove(&limit->link);
		free(limit);
	}
}

void sched_batch_begin(struct qw_scheduler *sched) {
	if (sched->accounting && sched->batch_depth++ == 0) {
		sched->batch_owner = sched->owner;
		sched->batch_owner_client = sched->owner_client;
		sched_switch(sched, SCHED_OWNER_SELF, NULL);
	}
}

/* The time since the batch began goes to the clients by their events. */
void sched_batch_end(struct qw_scheduler *sched) {
	if (!sched->accounting || --sched->batch_depth > 0) {
		return;
	}
	uint64_t now = sched_thread_ns();
	uint64_t elapsed = now - sched->mark_ns;
	uint64_t events = 0;
	struct sched_client *c;
	wl_list_for_each(c, &sched->clients, link) {
		events += c->batch_events;
	}
	uint64_t given = 0;
	if (events) {
		wl_list_for_each(c, &sched->clients, link) {
			if (c->batch_events) {
				uint64_t share = elapsed * c->batch_events / events;
				charge(sched, SCHED_OWNER_CLIENT, c, share);
				given += share;
				c->batch_events = 0;
			}
		}
	}
	sched->own_ns += elapsed - given;
	sched->mark_ns = now;
	/* What follows the batch is whoever's it was before. */
	sched->owner = sched->batch_owner;
	sched->owner_client = sched->batch_owner_client;
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
	uint64_t now = sched_thread_ns();
	uint64_t elapsed = now - sched->mark_ns;
	/*
	 * A frame draws what the clients damaged since the last one, and
	 * whatever lies in that damage: a window on top of a redrawn one is
	 * painted again because of the one below. So the frame is split by the
	 * damage each client's commits produced, not by whose pixels were
	 * drawn. A frame without client damage (a cursor, a titlebar button,
	 * the output's tick) is the compositor's own.
	 */
	uint64_t total = 0;
	struct sched_client *c;
	if (report->drawn) {
		wl_list_for_each(c, &sched->clients, link) {
			total += c->damage_px;
		}
	}
	uint64_t given = 0;
	if (sched->trace && report->drawn) {
		uint64_t drawn = 0;
		for (size_t i = 0; i < report->len; i++) {
			drawn += report->items[i].damaged_px;
		}
		sched_trace(sched, "render us=%llu damage=%llu drawn=%llu",
			(unsigned long long)(elapsed / 1000), (unsigned long long)total,
			(unsigned long long)drawn);
	}
	wl_list_for_each(c, &sched->clients, link) {
		if (total && c->damage_px) {
			uint64_t share = (uint64_t)((double)elapsed * (double)c->damage_px /
				(double)total);
			charge(sched, SCHED_OWNER_CLIENT, c, share);
			given += share;
		}
		if (report->drawn) {
			c->damage_px = 0;
		}
	}
	charge(sched, sched->owner, sched->owner_client, elapsed - given);
	sched->mark_ns = now;
}

void sched_client_account_gone(struct qw_scheduler *sched, struct sched_client *c) {
	if (sched->owner_client == c) {
		sched_switch(sched, SCHED_OWNER_SELF, NULL);
	}
	/* The last of it: the reserve outlives the connection. */
	struct qos_manager *qos = sched->server->qos;
	uint64_t us = c->unbilled_ns / 1000;
	if (sched->bill && us && c->reserve[0] && qos && qos_manager_bill(qos, c->reserve, us)) {
		c->billed_ns += us * 1000;
	}
	sched->gone_ns += c->server_ns;
	sched->gone_billed_ns += c->billed_ns;
}

static struct sched_limit *limit_find(struct qw_scheduler *sched, const struct qos_cglimit *cg) {
	struct sched_limit *limit;
	wl_list_for_each(limit, &sched->limits, link) {
		if (strcmp(limit->cg.dir, cg->dir) == 0) {
			limit->cg = *cg; /* its quota may have changed */
			return limit;
		}
	}
	limit = calloc(1, sizeof(*limit));
	if (!limit) {
		return NULL;
	}
	limit->cg = *cg;
	wl_list_insert(&sched->limits, &limit->link);
	return limit;
}

void sched_limit_unref(struct qw_scheduler *sched, struct sched_limit *limit) {
	if (limit && --limit->refs <= 0) {
		wl_list_remove(&limit->link);
		free(limit);
	}
}

void sched_limit_update(struct qw_scheduler *sched, struct sched_client *c, uint64_t now) {
	if (!sched->bill || c->pid <= 0 || (c->limit_looked_ns &&
			now - c->limit_looked_ns < 1000000000ull)) {
		return;
	}
	c->limit_looked_ns = now;
	struct qos_cglimit cg;
	struct sched_limit *limit = NULL;
	if (qos_cglimit_of(NULL, c->pid, getpid(), &cg)) {
		limit = limit_find(sched, &cg);
	}
	if (limit == c->limit) {
		return;
	}
	if (limit) {
		limit->refs++;
		sched_trace(sched, "limit pid=%d %s %llu/%llu", (int)c->pid, limit->cg.dir,
			(unsigned long long)limit->cg.quota_us,
			(unsigned long long)limit->cg.period_us);
	}
	sched_limit_unref(sched, c->limit);
	c->limit = limit;
	c->unbilled_ns = 0;
}

/* A new window of the limit's period; what the last one overshot is owed. */
static void limit_new_window(struct sched_limit *limit, uint64_t now, uint64_t usage_us) {
	uint64_t allowance = limit->cg.quota_us > limit->debt_us ?
		limit->cg.quota_us - limit->debt_us : 0;
	if (limit->window_end_ns) {
		uint64_t used = (usage_us > limit->usage_start_us ?
			usage_us - limit->usage_start_us : 0) + limit->server_us;
		/* What the window went over is taken from the next: a client
		 * stopped at its allowance still finishes the frame it was
		 * drawing. At most a quota, so one bad window cannot starve
		 * the group for long. */
		uint64_t over = used > allowance ? used - allowance : 0;
		limit->debt_us = over < limit->cg.quota_us ? over : limit->cg.quota_us;
	}
	uint64_t period_ns = limit->cg.period_us * 1000;
	limit->window_end_ns = now + period_ns;
	limit->usage_start_us = usage_us;
	limit->server_us = 0;
	limit->exhausted = false;
}

static void limit_check(struct sched_limit *limit, uint64_t now) {
	uint64_t usage;
	if (!qos_cglimit_usage_us(&limit->cg, &usage)) {
		return;
	}
	if (usage < limit->usage_start_us) {
		limit->usage_start_us = usage; /* a thread that ran here has exited */
	}
	if (!limit->window_end_ns || now >= limit->window_end_ns) {
		limit_new_window(limit, now, usage);
	}
	uint64_t allowance = limit->cg.quota_us > limit->debt_us ?
		limit->cg.quota_us - limit->debt_us : 0;
	uint64_t used = usage - limit->usage_start_us + limit->server_us;
	limit->exhausted = used >= allowance;
}

void sched_limits_tick(struct qw_scheduler *sched, uint64_t now) {
	struct sched_limit *limit;
	wl_list_for_each(limit, &sched->limits, link) {
		if (limit->window_end_ns && now >= limit->window_end_ns) {
			limit_check(limit, now);
		}
	}
}

void sched_bill(struct qw_scheduler *sched, bool force) {
	if (!sched->accounting) {
		return;
	}
	struct qos_manager *qos = sched->server->qos;
	uint64_t now = 0;
	enum sched_owner owner = sched->owner;
	struct sched_client *owner_client = sched->owner_client, *c;
	wl_list_for_each(c, &sched->clients, link) {
		if (c->unbilled_ns < 1000 || (!force && c->unbilled_ns < SCHED_BILL_EVERY_NS)) {
			continue;
		}
		sched_switch(sched, SCHED_OWNER_SELF, NULL);
		uint64_t us = c->unbilled_ns / 1000;
		c->unbilled_ns -= us * 1000;
		if (!sched->bill || (!c->reserve[0] && !c->limit)) {
			continue;
		}
		/* The bill's own cost is the books', not the client's: charged to
		 * it, it would be billed again at every frame, for ever. */
		if (c->reserve[0] && qos) {
			if (qos_manager_bill_pid(qos, c->pid, us) ||
					qos_manager_bill(qos, c->reserve, us)) {
				c->billed_ns += us * 1000;
			}
		} else if (c->limit) {
			if (!now) {
				now = sched_now_ns();
			}
			c->limit->server_us += us;
			c->billed_ns += us * 1000;
			limit_check(c->limit, now);
			if (c->limit->exhausted) {
				sched_trace(sched, "exhausted pid=%d cgroup", (int)c->pid);
			}
		}
	}
	sched_switch(sched, owner, owner_client);
}
