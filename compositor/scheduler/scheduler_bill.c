/*
 * Billing (thesis 5.4.5): what the books say the compositor spent for a
 * client goes to its reserve (qos_manager_bill_pid) once 500 us of it are
 * unbilled, and at every output frame, so it counts against the slice and
 * the limit like the client's own CPU time. A client in no reserve whose
 * own cgroup has a CPU limit has its time counted against that limit
 * instead: the kernel cannot be told to charge it, so the group's own
 * usage (cpu.stat) plus what the compositor spent for it are compared with
 * the quota over windows of the limit's period, and the client is not
 * served for the rest of a window once they pass it; what a window
 * overshot is taken from the next.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qos/qos.h"
#include "qos_bridge/qos_link.h"
#include "scheduler/scheduler_internal.h"
#include "server.h"

void sched_client_account_gone(struct qw_scheduler *sched, struct sched_client *c) {
	sched_forget(sched, c);
	/* The last of it: the reserve outlives the connection. */
	struct qos_manager *qos = qos_link_manager(sched->server);
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
	if (!sched->bill || c->pid <= 0 ||
			(c->limit_looked_ns && now - c->limit_looked_ns < 1000000000ull)) {
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
				(unsigned long long)limit->cg.quota_us, (unsigned long long)limit->cg.period_us);
	}
	sched_settle(sched); /* what came before is not the new limit's */
	c->unbilled_ns = 0;
	sched_limit_unref(sched, c->limit);
	c->limit = limit;
}

/* A new window of the limit's period; what the last one overshot is owed. */
static void limit_new_window(struct sched_limit *limit, uint64_t now, uint64_t usage_us) {
	uint64_t allowance =
			limit->cg.quota_us > limit->debt_us ? limit->cg.quota_us - limit->debt_us : 0;
	if (limit->window_end_ns) {
		uint64_t used = (usage_us > limit->usage_start_us ? usage_us - limit->usage_start_us : 0) +
				limit->server_us;
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
	uint64_t allowance =
			limit->cg.quota_us > limit->debt_us ? limit->cg.quota_us - limit->debt_us : 0;
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
	struct qos_manager *qos = qos_link_manager(sched->server);
	uint64_t now = 0;
	enum sched_owner owner = sched->owner;
	struct sched_client *owner_client = sched->owner_client, *c;
	wl_list_for_each(c, &sched->clients, link) {
		if (c->unbilled_ns < 1000 || (!force && c->unbilled_ns < SCHED_BILL_EVERY_NS)) {
			continue;
		}
		sched_switch(sched, SCHED_OWNER_QOS, NULL);
		uint64_t us = c->unbilled_ns / 1000;
		c->unbilled_ns -= us * 1000;
		if (!sched->bill || (!c->reserve[0] && !c->limit)) {
			continue;
		}
		/* The bill's own cost is the compositor's, not the client's:
		 * charged to it, it would be billed again at every frame. */
		uint64_t bill_start = sched_now_ns();
		if (c->reserve[0] && qos) {
			if (qos_manager_bill_pid(qos, c->pid, us) || qos_manager_bill(qos, c->reserve, us)) {
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
		sched->bills_ns += sched_now_ns() - bill_start;
		sched->bills++;
	}
	sched_switch(sched, owner, owner_client);
}
