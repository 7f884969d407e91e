/*
 * The scheduler's clients, their classes, and the event loop that serves
 * them in reserve order (scheduler.h draws the data flow).
 *
 * A loop iteration: bookkeeping (classes, bills, cgroup windows, the
 * exhausted clients' gates, the boost), then one poll() over the event
 * loop's epoll fd and every open client fd. When a real-time client is
 * readable, the best-effort clients that are readable too are gated and
 * the loop dispatched once, boosted: only the real-time requests (and the
 * compositor's own sources) run. Then everything else, unboosted.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <wlr/util/log.h>

#include "qos_bridge/client_identity.h"
#include "qos/qos.h"
#include "qos_bridge/qos_link.h"
#include "scheduler/scheduler_internal.h"
#include "server.h"

uint64_t sched_now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void sched_trace(struct qw_scheduler *sched, const char *fmt, ...) {
	if (!sched->trace) {
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	fprintf(sched->trace, "%llu ", (unsigned long long)(sched_now_ns() / 1000));
	vfprintf(sched->trace, fmt, ap);
	fputc('\n', sched->trace);
	va_end(ap);
}

static size_t client_slot(const struct wl_client *client) {
	uintptr_t p = (uintptr_t)client;
	return (size_t)((p >> 4) ^ (p >> 12)) % SCHED_CLIENT_SLOTS;
}

static void handle_client_destroy(struct wl_listener *listener, void *data) {
	struct sched_client *c = wl_container_of(listener, c, destroy);
	struct qw_scheduler *sched = c->sched;
	sched_client_account_gone(sched, c);
	if (c->limit) {
		sched_limit_unref(sched, c->limit);
	}
	if (c->realtime && sched->n_realtime > 0) {
		sched->n_realtime--;
	}
	size_t slot = client_slot(c->client);
	if (sched->by_client[slot] == c) {
		sched->by_client[slot] = NULL;
	}
	sched_trace(sched, "gone pid=%d", (int)c->pid);
	wl_list_remove(&c->destroy.link);
	wl_list_remove(&c->link);
	free(c);
}

/*
 * Every request and event asks this: a direct-mapped table in front of
 * libwayland's walk of the client's destroy listeners.
 */
struct sched_client *sched_client_of(struct qw_scheduler *sched, struct wl_client *client) {
	if (!client) {
		return NULL;
	}
	size_t slot = client_slot(client);
	struct sched_client *c = sched->by_client[slot];
	if (c && c->client == client) {
		return c;
	}
	struct wl_listener *l = wl_client_get_destroy_listener(client, handle_client_destroy);
	if (!l) {
		return NULL;
	}
	c = wl_container_of(l, c, destroy);
	sched->by_client[slot] = c;
	return c;
}

/* Real-time: a class the kernel guarantees or prioritises (thesis 5.4.3). */
static void classify(struct qw_scheduler *sched, struct sched_client *c, uint64_t now) {
	struct qos_manager *qos = qos_link_manager(sched->server);
	bool was_rt = c->realtime;
	const char *name = NULL;
	struct qos_reserve_info info;
	if (qos && c->pid > 0) {
		/* A process member, or else its main thread: Wayland clients
		 * mostly talk to the compositor from there. */
		name = qos_manager_reserve_of(qos, c->pid, 0);
		if (!name) {
			name = qos_manager_reserve_of(qos, c->pid, c->pid);
		}
	}
	if (name && qos_manager_reserve_info(qos, name, &info)) {
		enum qos_policy p = info.params.policy;
		bool rt_policy = p == QOS_POLICY_FIFO || p == QOS_POLICY_RR;
		c->realtime = p == QOS_POLICY_QOS || rt_policy || info.granted;
		c->rt_priority = rt_policy ? info.params.priority : 0;
		c->period_ns = info.params.period_us * 1000;
		if (strcmp(c->reserve, info.name) != 0) {
			/* A new reserve pays from now on, not for the old one's time
			 * (the work of joining it included: settled first), and says
			 * when it is used up even where the kernel holds its limit
			 * (the manager then only keeps the books). */
			sched_settle(sched);
			c->unbilled_ns = 0;
			snprintf(c->reserve, sizeof(c->reserve), "%s", info.name);
			qos_manager_watch_overruns(qos, info.name, true);
			c->exhausted_until_ns = info.in_fallback && c->period_ns ? now + c->period_ns : 0;
		}
		if (c->limit) {
			sched_limit_unref(sched, c->limit);
			c->limit = NULL;
		}
	} else {
		c->realtime = false;
		c->rt_priority = 0;
		c->reserve[0] = '\0';
		c->exhausted_until_ns = 0;
		sched_limit_update(sched, c, now);
	}
	if (c->realtime != was_rt) {
		if (c->realtime) {
			sched->n_realtime++;
		} else {
			sched->n_realtime--;
			c->awaiting = false;
		}
		sched_trace(sched, "class pid=%d %s", (int)c->pid,
				c->realtime ? "realtime" : "best-effort");
	}
}

void sched_classify_all(struct qw_scheduler *sched) {
	uint64_t now = sched_now_ns();
	struct sched_client *c;
	wl_list_for_each(c, &sched->clients, link) {
		classify(sched, c, now);
	}
	sched->classes_dirty = false;
}

void scheduler_refresh_classes(struct qw_scheduler *sched) {
	if (sched) {
		sched->classes_dirty = true;
	}
}

bool sched_client_exhausted(const struct sched_client *c, uint64_t now) {
	return now < c->exhausted_until_ns ||
			(c->limit && c->limit->exhausted && now < c->limit->window_end_ns);
}

/* Membership, overruns and restores change what a client is served as. */
static void handle_qos_event(struct wl_listener *listener, void *data) {
	struct qw_scheduler *sched = wl_container_of(listener, sched, qos_event);
	const struct qos_event *event = data;
	/* Called from inside the manager: record, act at the loop's top. */
	if (event->type != QOS_EVENT_OVERRUN && event->type != QOS_EVENT_RESTORED) {
		sched->classes_dirty = true;
		return;
	}
	if (!event->reserve) {
		return;
	}
	/*
	 * Exhausted until the restore, or the end of the period at the most:
	 * the manager keeps the books of a reserve whose members all sleep
	 * lazily and may only say it is restored once one runs, which a
	 * client waiting for its frame callback never would.
	 */
	bool exhausted = event->type == QOS_EVENT_OVERRUN;
	uint64_t now = sched_now_ns();
	struct sched_client *c;
	wl_list_for_each(c, &sched->clients, link) {
		if (strcmp(c->reserve, event->reserve) != 0 ||
				sched_client_exhausted(c, now) == exhausted) {
			continue;
		}
		c->exhausted_until_ns = exhausted && c->period_ns ? now + c->period_ns : 0;
		sched_trace(sched, "%s pid=%d reserve=%s", exhausted ? "exhausted" : "restored",
				(int)c->pid, c->reserve);
	}
}

static void handle_client_created(struct wl_listener *listener, void *data) {
	struct qw_scheduler *sched = wl_container_of(listener, sched, client_created);
	struct wl_client *client = data;
	struct sched_client *c = calloc(1, sizeof(*c));
	if (!c) {
		wlr_log(WLR_ERROR,
				"scheduler: out of memory for a client; it is served "
				"unaccounted");
		return;
	}
	c->sched = sched;
	c->client = client;
	c->fd = wl_client_get_fd(client);
	struct client_identity *id = client_identity_get(client);
	c->pid = client_identity_pid(id);
	c->destroy.notify = handle_client_destroy;
	wl_client_add_destroy_listener(client, &c->destroy);
	wl_list_insert(sched->clients.prev, &c->link);
	if (sched->serve) {
		sched_gate_find_source(sched, c);
	}
	classify(sched, c, sched_now_ns());
	sched_trace(sched, "client pid=%d %s", (int)c->pid, c->realtime ? "realtime" : "best-effort");
}

void scheduler_own(struct qw_scheduler *sched) {
	if (sched && sched->accounting) {
		sched_switch(sched, SCHED_OWNER_SELF, NULL);
	}
}

void scheduler_own_qos(struct qw_scheduler *sched) {
	if (sched && sched->accounting) {
		sched_switch(sched, SCHED_OWNER_QOS, NULL);
	}
}

void scheduler_stop(struct qw_scheduler *sched) {
	if (sched) {
		sched->stop = true;
	}
}

static bool grow_poll_set(struct qw_scheduler *sched, size_t n) {
	if (n <= sched->pcap) {
		return true;
	}
	size_t cap = sched->pcap ? sched->pcap * 2 : 32;
	while (cap < n) {
		cap *= 2;
	}
	struct pollfd *pfd = realloc(sched->pfd, cap * sizeof(*pfd));
	if (!pfd) {
		return false;
	}
	sched->pfd = pfd;
	struct sched_client **pcl = realloc(sched->pcl, cap * sizeof(*pcl));
	if (!pcl) {
		return false;
	}
	sched->pcl = pcl;
	sched->pcap = cap;
	return true;
}

static int timeout_ms(uint64_t deadline, uint64_t now) {
	if (!deadline) {
		return -1;
	}
	if (deadline <= now) {
		return 0;
	}
	uint64_t ms = (deadline - now + 999999) / 1000000;
	return ms > 60000 ? 60000 : (int)ms;
}

/*
 * One wait and dispatch, serving real-time clients first. Returns false when
 * the order cannot be kept (no memory for the poll set): the caller then
 * dispatches plainly.
 */
static bool serve_in_order(struct qw_scheduler *sched, struct wl_event_loop *loop,
		uint64_t deadline) {
	size_t n = 1;
	struct sched_client *c;
	wl_list_for_each(c, &sched->clients, link) {
		n++;
	}
	if (!grow_poll_set(sched, n)) {
		return false;
	}
	size_t k = 0;
	sched->pfd[k++] = (struct pollfd){ .fd = wl_event_loop_get_fd(loop), .events = POLLIN };
	wl_list_for_each(c, &sched->clients, link) {
		c->revents = 0;
		if (!c->gated && c->fd >= 0) {
			sched->pcl[k] = c;
			sched->pfd[k++] = (struct pollfd){ .fd = c->fd, .events = POLLIN };
		}
	}
	uint64_t now = sched_now_ns();
	bool pending = sched_rt_pending(sched, now, &deadline);
	sched_boost_set(sched, pending);
	sched_pause(sched);
	int ready = poll(sched->pfd, k, timeout_ms(deadline, now));
	sched_resume(sched);
	if (ready < 0 && errno != EINTR) {
		return false;
	}
	bool rt_ready = false, be_ready = false;
	for (size_t i = 1; i < k && ready > 0; i++) {
		struct sched_client *ci = sched->pcl[i];
		ci->revents = sched->pfd[i].revents;
		if (ci->revents & POLLIN) {
			rt_ready = rt_ready || ci->realtime;
			be_ready = be_ready || !ci->realtime;
		}
	}
	if (rt_ready && be_ready) {
		/* Real-time requests first: the others' sources closed for one
		 * dispatch. Hang-ups still come through (epoll always reports
		 * them), so a client that left is destroyed all the same. */
		sched->rt_phases++;
		sched_boost_set(sched, true);
		wl_list_for_each(c, &sched->clients, link) {
			if (!c->realtime && !c->gated && (c->revents & POLLIN)) {
				sched_gate(c, true);
			}
		}
		sched_switch(sched, SCHED_OWNER_NEXT, NULL);
		wl_event_loop_dispatch(loop, 0);
		wl_list_for_each(c, &sched->clients, link) {
			if (!c->realtime && c->gated && (c->revents & POLLIN)) {
				sched_gate(c, false);
			}
		}
	}
	/* Best-effort clients are served at the compositor's own priority;
	 * real-time ones and its own sources (frames, timers) boosted while
	 * real-time work is pending. */
	sched_boost_set(sched, !be_ready && (pending || rt_ready));
	sched_switch(sched, SCHED_OWNER_NEXT, NULL);
	wl_event_loop_dispatch(loop, 0);
	return true;
}

void scheduler_run(struct qw_scheduler *sched) {
	struct qw_server *server = sched->server;
	struct wl_event_loop *loop = server->event_loop;
	while (!sched->stop) {
		uint64_t now = sched_now_ns();
		sched->iterations++;
		sched_switch(sched, SCHED_OWNER_NEXT, NULL);
		/* Once a second even without QoS events: a client may have been
		 * moved into a limited cgroup behind the manager's back. */
		if (now - sched->classified_ns >= 1000000000ull) {
			sched->classes_dirty = true;
		}
		if (sched->classes_dirty) {
			sched->classified_ns = now;
			sched_classify_all(sched);
		}
		sched_boost_poll_revoked(sched);
		sched_limits_tick(sched, now);
		sched_bill(sched, false);
		sched_flush_clients(sched);
		uint64_t deadline = 0;
		if (sched->serve) {
			deadline = sched_gate_exhausted(sched, now);
		}
		if (sched->serve && sched->gating && (sched->n_realtime > 0 || deadline)) {
			if (serve_in_order(sched, loop, deadline)) {
				continue;
			}
		}
		sched_boost_set(sched, sched_rt_pending(sched, now, &deadline));
		if (sched->accounting) {
			/* The books' CPU time is taken while awake: sleep apart. */
			struct pollfd pfd = { .fd = wl_event_loop_get_fd(loop), .events = POLLIN };
			sched_pause(sched);
			poll(&pfd, 1, timeout_ms(deadline, now));
			sched_resume(sched);
			wl_event_loop_dispatch(loop, 0);
		} else {
			wl_event_loop_dispatch(loop, timeout_ms(deadline, now));
		}
	}
	sched_boost_set(sched, false);
	sched_settle(sched);
}

struct qw_scheduler *scheduler_create(struct qw_server *server) {
	struct qw_scheduler *sched = calloc(1, sizeof(*sched));
	if (!sched) {
		return NULL;
	}
	sched->server = server;
	wl_list_init(&sched->clients);
	wl_list_init(&sched->limits);
	wl_list_init(&sched->holds);
	sched->serve = server->config.scheduling.serve_by_reserve;
	sched->bill = server->config.scheduling.bill;
	/* The books are kept whenever something uses them: billing, or the
	 * pacing of best-effort clients by what they cost. */
	sched->accounting = sched->serve || sched->bill;
	sched->divisor = 1;
	sched->gating = sched->serve;
	/* For tests: pace best effort from a smaller per-frame budget. */
	const char *budget = getenv("QOSWAY_SCHED_BE_BUDGET_US");
	if (budget && budget[0]) {
		char *end;
		unsigned long long us = strtoull(budget, &end, 10);
		if (*end || us == 0 || us > 1000000) {
			wlr_log(WLR_ERROR,
					"scheduler: QOSWAY_SCHED_BE_BUDGET_US=%s is not 1 to "
					"1000000 (us); ignored",
					budget);
		} else {
			sched->be_budget_ns = us * 1000;
		}
	}
	const char *trace = getenv("QOSWAY_SCHED_TRACE");
	if (trace && trace[0]) {
		sched->trace = fopen(trace, "we");
		if (sched->trace) {
			setvbuf(sched->trace, NULL, _IOLBF, 0);
		} else {
			wlr_log(WLR_ERROR, "scheduler: cannot open the trace %s: %s", trace, strerror(errno));
		}
	}
	if (!sched_account_init(sched) || !sched_frame_init(sched)) {
		scheduler_destroy(sched);
		return NULL;
	}
	sched_boost_init(sched);
	sched->client_created.notify = handle_client_created;
	wl_display_add_client_created_listener(server->wl_display, &sched->client_created);
	sched->qos_event.notify = handle_qos_event;
	wl_signal_add(&server->events.qos_event, &sched->qos_event);
	wlr_log(WLR_INFO,
			"scheduling: serve-by-reserve %s, bill %s, boost %s%s%s, "
			"hidden-frame-rate %u Hz",
			sched->serve ? "on" : "off", sched->bill ? "on" : "off",
			server->config.scheduling.boost ? (sched->boost.available ? "on" : "off") : "off",
			sched->boost.note[0] ? ": " : "", sched->boost.note,
			server->config.scheduling.hidden_frame_rate);
	return sched;
}

void scheduler_destroy(struct qw_scheduler *sched) {
	if (!sched) {
		return;
	}
	struct sched_client *c, *tmp;
	wl_list_for_each_safe(c, tmp, &sched->clients, link) {
		/* Clients outlive us only on teardown paths: forget them. */
		if (c->gated) {
			sched_gate(c, false);
		}
		if (c->limit) {
			sched_limit_unref(sched, c->limit);
		}
		wl_list_remove(&c->destroy.link);
		wl_list_remove(&c->link);
		free(c);
	}
	if (sched->client_created.notify) {
		wl_list_remove(&sched->client_created.link);
	}
	if (sched->qos_event.notify) {
		wl_list_remove(&sched->qos_event.link);
	}
	sched_frame_finish(sched);
	sched_boost_finish(sched);
	sched_account_finish(sched);
	if (sched->trace) {
		fclose(sched->trace);
	}
	free(sched->pfd);
	free(sched->pcl);
	free(sched);
}
