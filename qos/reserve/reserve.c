/*
 * Reserves: lookup, creation, parameter changes and deletion, the policy each
 * member thread is given (set_one), the groups' cgroup controls and the root's
 * weight, and the housekeeping pass.  Members come and go in member.c; the
 * periods are policed in fallback.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "qos/policy/core.h"
#include "qos/reserve/fallback.h"
#include "qos/reserve/optimistic.h"
#include "qos/reserve/reserve.h"
#include "qos/reserve/rtguard.h"
#include "qos/reserve/server.h"
#include "qos/reserve/split.h"
#include "qos/reserve/threads.h"
#include "qos/kernel/sys.h"

struct qos_reserve *qos_reserve_find(struct qos_manager *mgr, const char *name) {
	for (struct qos_reserve *r = mgr->reserves; r; r = r->next) {
		if (strcmp(r->name, name) == 0) {
			return r;
		}
	}
	return NULL;
}

struct qos_reserve *qos_reserve_find_by_group(struct qos_manager *mgr, const char *group) {
	for (struct qos_reserve *r = mgr->reserves; r; r = r->next) {
		if (r->cgroup.exists && strcmp(r->group, group) == 0) {
			return r;
		}
	}
	return NULL;
}

struct qos_reserve *qos_reserve_find_by_cookie(struct qos_manager *mgr, uint32_t cookie) {
	for (struct qos_reserve *r = mgr->cookies.by[cookie % QOS_COOKIE_BUCKETS]; r;
			r = r->cookie_next) {
		if (r->cookie == cookie) {
			return r;
		}
	}
	return NULL;
}

struct qos_member *qos_reserve_find_member(struct qos_manager *mgr, pid_t pid, pid_t tid) {
	for (struct qos_reserve *r = mgr->reserves; r; r = r->next) {
		for (size_t i = 0; i < r->n_members; i++) {
			struct qos_member *m = r->members[i];
			if (m->pid == pid && m->tid == tid) {
				return m;
			}
		}
	}
	return NULL;
}

/* The manager's timer, at the earliest time a reserve needs a look. */
void qos_reserve_rearm(struct qos_manager *mgr) {
	uint64_t next = mgr->housekeeping_us;
	for (struct qos_reserve *r = mgr->reserves; r; r = r->next) {
		if (r->fb.next_check_us < next) {
			next = r->fb.next_check_us;
		}
		if (r->forks.pending && r->forks.pass_us + QOS_FORK_PASS_US < next) {
			next = r->forks.pass_us + QOS_FORK_PASS_US;
		}
		if (r->rtg.retry_us && r->rtg.retry_us < next) {
			next = r->rtg.retry_us;
		}
		if (r->adapt.wake_check_us && r->adapt.wake_check_us < next) {
			next = r->adapt.wake_check_us;
		}
		if (r->split.next_us && r->split.next_us < next) {
			next = r->split.next_us;
		}
		if (r->split.check_us && r->split.check_us < next) {
			next = r->split.check_us;
		}
	}
	if (next == mgr->armed_us) {
		return;
	}
	mgr->armed_us = next;
	struct itimerspec its = {
		.it_value = { .tv_sec = (time_t)(next / 1000000u),
				.tv_nsec = (long)(next % 1000000u) * 1000 },
	};
	if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0) {
		its.it_value.tv_nsec = 1;
	}
	timerfd_settime(mgr->timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* The starvation watchdog's cool-down suspends every new real-time grant. */
bool qos_reserve_rt_grants_allowed(struct qos_manager *mgr, uint64_t now, char *err,
		size_t err_len) {
	uint64_t left = qos_watchdog_cooldown_left_us(&mgr->watchdog, now);
	if (!left) {
		return true;
	}
	snprintf(err, err_len,
			"real-time grants are suspended for %llus after a starvation "
			"alarm",
			(unsigned long long)(left / 1000000u + 1));
	mgr->events.last_refusal = QOS_REFUSAL_FORBIDDEN;
	return false;
}

size_t qos_reserve_rt_holders(struct qos_manager *mgr, const struct qos_reserve *except, char *out,
		size_t len) {
	size_t n = 0;
	out[0] = '\0';
	for (struct qos_reserve *r = mgr->reserves; r && n < len; r = r->next) {
		const struct qos_params *p = &r->params;
		if (r == except || !r->n_members || !r->cgroup.exists || !p->period_us ||
				(p->policy != QOS_POLICY_FIFO && p->policy != QOS_POLICY_RR)) {
			continue;
		}
		int w = snprintf(out + n, len - n, "%s'%s' (%llu%%)", n ? ", " : "", r->name,
				(unsigned long long)(p->slice_us * 100 / p->period_us));
		if (w < 0) {
			break;
		}
		n += (size_t)w;
	}
	return n;
}

/* Why a group got no real-time bandwidth: the other real-time reserves hold it. */
void qos_reserve_rt_refusal(struct qos_manager *mgr, const struct qos_reserve *r, int gerr,
		char *out, size_t len) {
	char holders[256];
	if ((gerr == -EINVAL || gerr == -ENOSPC) &&
			qos_reserve_rt_holders(mgr, r, holders, sizeof(holders))) {
		snprintf(out, len,
				"the real-time share of the manager's root is held by %s, "
				"beside which a %s limit of %llu%% does not fit: give one a smaller limit "
				"(cpu=)",
				holders, qos_policy_name(r->params.policy),
				(unsigned long long)(r->params.period_us
								? r->params.slice_us * 100 / r->params.period_us
								: 0));
	} else {
		snprintf(out, len, "%s", strerror(-gerr));
	}
}

size_t qos_reserve_count_threads(struct qos_reserve *r) {
	size_t n = 0;
	for (size_t i = 0; i < r->n_members; i++) {
		struct qos_member *m = r->members[i];
		/* The task directory, not /proc/PID/status: that prints some
		 * fifty lines (most of a housekeeping pass) for one. */
		int threads = qos_threads_for_each(r->mgr, m, NULL, NULL);
		n += (size_t)(threads > 0 ? threads : 1);
	}
	return n ? n : 1;
}

struct thread_ctx {
	struct qos_reserve *r;
	pid_t pid; /* the member's process */
	enum qos_policy policy;
	uint64_t dl_runtime_ns;
	int err;
	pid_t err_tid;
};

static void set_one(pid_t tid, void *data) {
	struct thread_ctx *c = data;
	/* Never early: docs/qos-design.md says what an early return does. */
	if (c->policy == QOS_POLICY_QOS && qos_optimistic_waiting(c->r, tid)) {
		return;
	}
	/* Leaving SCHED_DEADLINE (fallback, demotion): see qos_sys_release_deadline. */
	if (c->policy != QOS_POLICY_QOS && !qos_sys_release_deadline(tid)) {
		return;
	}
	const struct qos_params *p = &c->r->params;
	bool entering_dl = false;
	uint64_t runtime_ns = c->dl_runtime_ns;
	/* Divided by use: a thread waiting outside keeps its class. */
	if (c->policy == QOS_POLICY_QOS && qos_split_grant(c->r, tid, &runtime_ns) != QOS_SPLIT_GIVE) {
		return; /* a thread that does not fit gets its runtime at the next plan */
	}
	if (c->policy == QOS_POLICY_QOS) {
		/* Each housekeeping pass comes here for every thread: most have
		 * their reservation already, and a system call fewer each. */
		bool same;
		entering_dl = !qos_sys_thread_is_deadline_as(tid, runtime_ns, p->period_us * 1000u, &same);
		if (same) {
			return;
		}
	}
	/* Moved out before RLIMIT_RTTIME kills it (rtguard.c): other until it sleeps. */
	bool static_rt = c->policy == QOS_POLICY_FIFO || c->policy == QOS_POLICY_RR;
	enum qos_policy policy = qos_policy_is_rt(c->policy) &&
					(qos_rtguard_demoted(c->r, tid) ||
							(static_rt && qos_rtguard_hold(c->r, c->pid, tid)))
			? QOS_POLICY_OTHER
			: c->policy;
	int e = qos_sys_set_thread_policy(tid, policy, p->nice, p->priority, runtime_ns,
			p->period_us * 1000u);
	if (e == 0 && entering_dl) {
		qos_optimistic_watch(c->r, c->pid, tid); /* it may have left the class throttled */
	}
	if (e == 0 && policy == QOS_POLICY_QOS) {
		qos_split_given(c->r, c->pid, tid, runtime_ns);
	}
	if (e < 0 && e != -ESRCH && !c->err) {
		c->err = e;
		c->err_tid = tid;
	}
}

const char *qos_reserve_policy_error(enum qos_policy policy, int err) {
	if (policy == QOS_POLICY_QOS && err == -EBUSY) {
		return "the kernel's deadline bandwidth is exhausted";
	}
	if (qos_policy_is_rt(policy) && err == -EPERM && !qos_sys_has_sys_nice()) {
		return "the manager runs without CAP_SYS_NICE, which real-time classes need: as "
			   "root, give its program the capability (setcap cap_sys_nice=ep PROGRAM) "
			   "or run it as root";
	}
	if (policy == QOS_POLICY_QOS && err == -EPERM) {
		return "deadline tasks must be allowed to run on every CPU (their CPU affinity "
			   "must cover them all)";
	}
	if (policy == QOS_POLICY_QOS && err == -EDOM) {
		return "a slice longer than the period is split over the reserve's threads, and "
			   "it has too few: each would need more than the period";
	}
	if ((policy == QOS_POLICY_FIFO || policy == QOS_POLICY_RR) && err == -EPERM) {
		return "the reserve's group has no real-time bandwidth";
	}
	return strerror(-err);
}

/* Applies a per-thread policy to one member (all threads of a process member). */
int qos_reserve_apply_member(struct qos_reserve *r, struct qos_member *m, enum qos_policy policy,
		uint64_t dl_runtime_ns) {
	struct thread_ctx c = { .r = r,
		.pid = m->pid,
		.policy = policy,
		.dl_runtime_ns = dl_runtime_ns };
	qos_threads_for_each(r->mgr, m, set_one, &c);
	if (c.err) {
		qos_event_emit(&r->mgr->events, QOS_EVENT_ERROR, r->name, m->pid, c.err_tid, 0,
				"cannot make thread %d %s: %s", c.err_tid, qos_policy_name(policy),
				qos_reserve_policy_error(policy, c.err));
	}
	return c.err;
}

static uint64_t split_slice_ns(struct qos_reserve *r) {
	/* Threads of one reserve split its slice evenly (thesis 5.3.2, option a). */
	uint64_t ns = r->params.slice_us * 1000u / qos_reserve_count_threads(r);
	return ns < 1024 ? 1024 : ns;
}

/*
 * A thread returning to its reservation gets what the others were given:
 * counting the threads again (a /proc read per member) at every return
 * would be most of what a return costs.
 */
uint64_t qos_reserve_dl_runtime_ns(struct qos_reserve *r) {
	if (!r->dl_runtime_ns) {
		r->dl_runtime_ns = split_slice_ns(r);
	}
	return r->dl_runtime_ns;
}

int qos_reserve_apply_threads(struct qos_reserve *r, enum qos_policy policy) {
	uint64_t rt = 0;
	if (policy == QOS_POLICY_QOS) {
		rt = r->dl_runtime_ns = split_slice_ns(r);
	}
	/* The kernel takes no runtime past the period (EINVAL, said plainly here). */
	if (r->n_members && rt > r->params.period_us * 1000u) {
		return -EDOM;
	}
	int err = 0;
	if (policy != QOS_POLICY_QOS) {
		qos_optimistic_clear(r); /* nothing returns to a reservation any more */
	}
	if (r->params.policy != QOS_POLICY_QOS || !r->n_members) {
		qos_split_clear(r);
	} else if (policy == QOS_POLICY_QOS) {
		/* Several threads: their use divides the slice from the next period on. */
		qos_split_replan(r);
		if (!r->split.next_us && rt < r->params.slice_us * 1000u) {
			r->split.next_us = qos_sys_now_us() + r->params.period_us;
		}
	}
	for (size_t i = 0; i < r->n_members; i++) {
		int e = qos_reserve_apply_member(r, r->members[i], policy, rt);
		if (e && !err) {
			err = e;
		}
	}
	return err;
}

/*
 * Reserve groups sit under our root, so against tasks outside it they all
 * share the root's weight.  Make the root stand for what is inside: idle when
 * every populated reserve is idle, else the sum of their nice weights.
 */
void qos_reserve_root_weight_update(struct qos_manager *mgr) {
	qos_reserve_root_weight_deferred(mgr, false);
}

static bool reserve_idle(const struct qos_reserve *r) {
	return r->params.policy == QOS_POLICY_IDLE ||
			(r->fb.applied && r->params.fallback == QOS_POLICY_IDLE);
}

/*
 * defer: a fallback switch, possibly 200 times a second per reserve.  Writing
 * cpu.shares walks every CPU's runqueue under its lock, so then only a change
 * between idle and not idle is written at once (it decides whether the
 * fallback works against outside tasks); a new weight waits for the next
 * housekeeping pass.  Unchanged values are never written again.
 */
void qos_reserve_root_weight_deferred(struct qos_manager *mgr, bool defer) {
	struct qos_cgroup *cg = &mgr->cg;
	if (!cg->cpu_ctl) {
		return;
	}
	if (defer && mgr->root.idle == 0) {
		/*
		 * The root stays busy while one populated reserve is: finding one
		 * is enough, usually the first, where summing them all cost 4% of
		 * the manager's time with 50 reserves switching.
		 */
		for (struct qos_reserve *r = mgr->reserves; r; r = r->next) {
			if (r->n_members && !reserve_idle(r)) {
				mgr->root.weight_dirty = true;
				return;
			}
		}
	}
	long weight = 0;
	bool any = false;
	for (struct qos_reserve *r = mgr->reserves; r; r = r->next) {
		if (!r->n_members) {
			continue;
		}
		any = true;
		if (!reserve_idle(r)) {
			weight += r->cgroup.weight
					? r->cgroup.weight
					: qos_cgroup_nice_to_weight(
							  r->params.policy == QOS_POLICY_OTHER ? r->params.nice : 0) *
							(long)r->n_members;
		}
	}
	/* The server's leaf (server.c) sits in the root too: never idle then. */
	long server = (long)qos_server_shares(mgr);
	int idle = any && weight == 0 && !server;
	weight += server;
	if (!weight) {
		weight = 1024;
	}
	if (idle == mgr->root.idle && (idle || weight == mgr->root.weight)) {
		mgr->root.weight_dirty = false;
		return;
	}
	if (defer && idle == mgr->root.idle) {
		mgr->root.weight_dirty = true;
		return;
	}
	qos_cgroup_set_root_weight(cg, idle, weight);
	mgr->root.idle = idle;
	mgr->root.weight = idle ? -1 : weight;
	mgr->root.weight_dirty = false;
}

/* The group's cpu.idle, written only when it changes. */
void qos_reserve_set_group_idle(struct qos_reserve *r, bool idle) {
	if (r->cgroup.idle == (int)idle) {
		return;
	}
	if (r->cgroup.idle_fd < 0) {
		r->cgroup.idle_fd = qos_cgroup_open_idle(&r->mgr->cg, r->group);
	}
	int e = r->cgroup.idle_fd >= 0 ? qos_cgroup_set_idle_fd(r->cgroup.idle_fd, idle)
								   : qos_cgroup_set_idle(&r->mgr->cg, r->group, idle);
	if (e == 0) {
		r->cgroup.idle = idle;
	} else {
		r->cgroup.idle = -1;
	}
}

void qos_reserve_update_weight(struct qos_reserve *r) {
	const struct qos_params *p = &r->params;
	if (!r->cgroup.exists || !r->mgr->cg.cpu_ctl || r->cgroup.idle == 1 ||
			!(p->policy == QOS_POLICY_QOS || qos_policy_is_rt(p->policy))) {
		return;
	}
	long weight = 1024 * (long)qos_reserve_count_threads(r);
	if (weight == r->cgroup.weight) {
		return;
	}
	if (qos_cgroup_set_weight(&r->mgr->cg, r->group, weight) == 0) {
		r->cgroup.weight = weight;
		r->mgr->root.weight_dirty = true; /* the root stands for it (next pass) */
	}
}

/* Group-level controls for the reserve's normal policy. */
int qos_reserve_apply_group(struct qos_reserve *r) {
	struct qos_cgroup *cg = &r->mgr->cg;
	const struct qos_params *p = &r->params;
	int rt_err = 0;
	if (!r->cgroup.exists) {
		return 0;
	}
	if (cg->cpu_ctl) {
		/* An idle group ignores its weight, and writing the weight clears idle. */
		r->cgroup.idle = -1;
		if (p->policy == QOS_POLICY_IDLE) {
			qos_reserve_set_group_idle(r, true);
		} else {
			qos_reserve_set_group_idle(r, false);
			r->cgroup.weight = 0;
			if (p->policy == QOS_POLICY_QOS || qos_policy_is_rt(p->policy)) {
				qos_reserve_update_weight(r);
			} else {
				qos_cgroup_set_nice_weight(cg, r->group,
						p->policy == QOS_POLICY_OTHER ? p->nice : 0);
			}
		}
		bool ceiling = qos_params_kernel_ceiling(p);
		int e = qos_cgroup_set_quota(cg, r->group, p->period_us, ceiling ? p->slice_us : 0);
		if (e < 0) {
			qos_event_emit(&r->mgr->events, QOS_EVENT_ERROR, r->name, 0, 0, 0,
					"cannot set cpu quota: %s", strerror(-e));
		}
	}
	if (cg->rt_group) {
		bool rt = p->policy == QOS_POLICY_FIFO || p->policy == QOS_POLICY_RR;
		int e = qos_cgroup_set_rt(cg, r->group, rt ? p->period_us : 1000000, rt ? p->slice_us : 0);
		if (e < 0 && rt) {
			qos_event_emit(&r->mgr->events, QOS_EVENT_ERROR, r->name, 0, 0, 0,
					"cannot give the group real-time bandwidth: %s", strerror(-e));
			rt_err = e;
		}
	}
	int fe = qos_cgroup_freeze(cg, r->group, p->policy == QOS_POLICY_PAUSE);
	if (fe < 0) {
		/* A pause that did not happen must not be reported as one. */
		qos_event_emit(&r->mgr->events, QOS_EVENT_ERROR, r->name, 0, 0, 0,
				"cannot %s the group: %s", p->policy == QOS_POLICY_PAUSE ? "freeze" : "thaw",
				strerror(-fe));
		if (p->policy == QOS_POLICY_PAUSE && !rt_err) {
			rt_err = fe;
		}
	}
	return rt_err;
}

/*
 * Threads created since the last look start as SCHED_OTHER (reset on fork),
 * so give them the reserve's current policy.  Deadline runtimes are re-split
 * over the new thread count at the same time.
 */
void qos_reserve_apply_active(struct qos_reserve *r) {
	enum qos_policy active =
			r->police.in_fallback && r->fb.applied && r->params.fallback != QOS_POLICY_PAUSE
			? r->params.fallback
			: r->params.policy;
	if (!r->n_members) {
		return;
	}
	if (r->params.policy == QOS_POLICY_QOS) {
		/* In an optimistic fallback the threads wait for the period end,
		 * and all of them return with the runtime split anew. */
		if (!(qos_fallback_optimistic(r) && r->police.in_fallback && r->fb.applied)) {
			qos_reserve_apply_threads(r, QOS_POLICY_QOS);
		} else if (qos_optimistic_hold_new(r, qos_police_period_end_us(&r->police))) {
			r->dl_runtime_ns = split_slice_ns(r);
		}
	} else if ((qos_policy_is_rt(active) || active == QOS_POLICY_IDLE) &&
			!(active != r->params.policy && qos_fallback_group_idles(r) && !r->fb.threads)) {
		qos_reserve_apply_threads(r, active);
	}
}

void qos_reserve_removal_failed(struct qos_manager *mgr, const char *reserve, const char *group,
		int err) {
	mgr->stale_groups++;
	qos_event_emit(&mgr->events, QOS_EVENT_ERROR, reserve, 0, 0, 0,
			"cannot remove group %s: %s; retried at every pass", group, strerror(-err));
}

struct qos_reserve *qos_reserve_new(struct qos_manager *mgr, const char *name,
		const struct qos_params *params) {
	struct qos_reserve *r = calloc(1, sizeof(*r));
	if (!r) {
		return NULL;
	}
	r->mgr = mgr;
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->params = *params;
	r->fb.next_check_us = UINT64_MAX;
	r->cgroup.stat_fd = -1;
	r->cgroup.idle = -1;
	r->cgroup.idle_fd = -1;
	r->cgroup.procs_fd = -1;
	r->cookie = ++mgr->cookies.next;
	r->cookie_next = mgr->cookies.by[r->cookie % QOS_COOKIE_BUCKETS];
	mgr->cookies.by[r->cookie % QOS_COOKIE_BUCKETS] = r;
	struct qos_reserve **tail = &mgr->reserves;
	while (*tail) {
		tail = &(*tail)->next;
	}
	*tail = r;
	qos_event_emit(&mgr->events, QOS_EVENT_RESERVE_CREATED, r->name, 0, 0, 0, NULL);
	return r;
}

void qos_reserve_free(struct qos_reserve *r) {
	if (!r) {
		return;
	}
	struct qos_manager *mgr = r->mgr;
	for (struct qos_reserve **pp = &mgr->reserves; *pp; pp = &(*pp)->next) {
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	}
	for (struct qos_reserve **pp = &mgr->cookies.by[r->cookie % QOS_COOKIE_BUCKETS]; *pp;
			pp = &(*pp)->cookie_next) {
		if (*pp == r) {
			*pp = r->cookie_next;
			break;
		}
	}
	if (r->granted) {
		qos_admission_release(&mgr->adm, r->granted_ppm);
	}
	if (r->cgroup.stat_fd >= 0) {
		close(r->cgroup.stat_fd);
	}
	if (r->cgroup.idle_fd >= 0) {
		close(r->cgroup.idle_fd);
	}
	qos_sys_drop_kept_fd(&r->cgroup.procs_fd, &mgr->kept_fds_budget);
	int err = r->cgroup.exists ? qos_cgroup_group_remove(&mgr->cg, r->group) : 0;
	if (err) {
		qos_reserve_removal_failed(mgr, r->name, r->group, err);
	}
	qos_event_emit(&mgr->events, QOS_EVENT_RESERVE_DELETED, r->name, 0, 0, 0, NULL);
	qos_optimistic_destroy(r);
	qos_rtguard_destroy(r);
	qos_split_clear(r);
	free(r->members);
	free(r);
}

/* A sysctl of the kernel's deadline class, or def when it cannot be read. */
static uint64_t dl_sysctl(const char *name, uint64_t def) {
	char path[96], buf[32];
	snprintf(path, sizeof(path), "/proc/sys/kernel/%s", name);
	if (qos_sys_read_file(path, buf, sizeof(buf)) <= 0) {
		return def;
	}
	char *end;
	unsigned long long v = strtoull(buf, &end, 10);
	return end != buf ? v : def;
}

/* A qos period the kernel's SCHED_DEADLINE takes (its bounds are sysctls). */
static bool deadline_period_ok(const struct qos_params *p, char *err, size_t err_len) {
	if (p->policy != QOS_POLICY_QOS) {
		return true;
	}
	uint64_t lo = dl_sysctl("sched_deadline_period_min_us", 100);
	uint64_t hi = dl_sysctl("sched_deadline_period_max_us", 1u << 22);
	if (p->period_us >= lo && p->period_us <= hi) {
		return true;
	}
	snprintf(err, err_len,
			"a qos period must be %" PRIu64 "us to %" PRIu64 "us, the "
			"kernel's bounds for deadline tasks (sysctl kernel.sched_deadline_period_min_us "
			"and sched_deadline_period_max_us)",
			lo, hi);
	return false;
}

bool qos_reserve_valid(const char *name, struct qos_params *p, char *err, size_t err_len) {
	return qos_name_valid(name, err, err_len) && qos_params_normalize(p, err, err_len) &&
			deadline_period_ok(p, err, err_len);
}

struct qos_reserve *qos_reserve_create(struct qos_manager *mgr, const char *name,
		const struct qos_params *p, char *err, size_t err_len) {
	if (qos_name_is_auto(name)) {
		snprintf(err, err_len, "'%s' is an automatic reserve name", name);
		return NULL;
	}
	struct qos_reserve *r = qos_reserve_new(mgr, name, p);
	if (!r) {
		snprintf(err, err_len, "out of memory");
	}
	return r;
}
