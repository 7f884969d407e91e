/*
 * The RLIMIT_RTTIME guard: real-time member threads that run without
 * sleeping are moved to other before the kernel's RLIMIT_RTTIME bound kills
 * them, and made real-time again once they sleep.  Why and how the count is
 * estimated: docs/qos-design.md.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "qos/policy/core.h"
#include "qos/reserve/rtguard.h"
#include "qos/reserve/threads.h"
#include "qos/kernel/sys.h"

struct rt_thread {
	pid_t pid; /* the member's process */
	pid_t tid;
	uint64_t rt_ns; /* estimated count when the open stretch began */
	bool open; /* real-time since the stretch began */
	uint64_t open_sleeps, open_run_ns;
	uint64_t pass_sleeps, pass_run_ns; /* at the last pass */
	bool demoted; /* moved to other by this guard */
	bool sleeps_again; /* ... and has slept since: real-time again once caught asleep */
	bool seen;
};

struct qos_rtguard {
	struct rt_thread *t;
	size_t n, cap;
	uint64_t retry_until_us; /* looks for sleeping moved-out threads until then */
};

/* How often, and for how long after a pass, a moved-out thread is looked for asleep. */
#define RETRY_US 10000u
#define RETRY_FOR_US 200000u

struct qos_rt_carry {
	pid_t pid, tid;
	uint64_t start_time; /* a tid may be reused */
	uint64_t rt_ns; /* the estimate as the thread left the guard */
	uint64_t run_ns; /* its CPU time then */
	bool demoted; /* moved to other by that guard ... */
	uint64_t sleeps; /* ... and not woken since it was, at this count */
};

struct pass_ctx {
	struct qos_reserve *r;
	pid_t pid;
	uint64_t bound_us; /* the member's: ours, or a tighter one of its own */
	uint64_t threshold_ns;
};

static struct rt_thread *find(struct qos_rtguard *g, pid_t tid) {
	for (size_t i = 0; i < g->n; i++) {
		if (g->t[i].tid == tid) {
			return &g->t[i];
		}
	}
	return NULL;
}

static struct rt_thread *add(struct qos_rtguard *g, pid_t pid, pid_t tid) {
	struct rt_thread *t = qos_array_room(g->t, &g->cap, g->n, sizeof(*t));
	if (!t) {
		return NULL;
	}
	g->t = t;
	struct rt_thread *e = &g->t[g->n++];
	*e = (struct rt_thread){ .pid = pid, .tid = tid };
	return e;
}

/*
 * Stop short of the bound by one and a half passes: a thread runs at most
 * one pass's worth between two of them, and a pass may come late.
 */
static uint64_t threshold_of(uint64_t bound_us) {
	uint64_t margin = QOS_HOUSEKEEPING_US + QOS_HOUSEKEEPING_US / 2;
	return (bound_us > 2 * margin ? bound_us - margin : bound_us / 2) * 1000u;
}

static uint64_t threshold_ns(const struct qos_manager *mgr) {
	return threshold_of(mgr->config.rttime_us);
}

/*
 * A process may have had a tighter limit of its own before we bounded it
 * (rtkit's clients do): the kernel kills at that one, so it is the bound.
 */
static uint64_t process_bound_us(const struct qos_manager *mgr, pid_t pid) {
	uint64_t soft, hard;
	if (qos_sys_get_rttime(pid, &soft, &hard) == 0 && hard < mgr->config.rttime_us) {
		return hard;
	}
	return mgr->config.rttime_us;
}

static void open_stretch(struct rt_thread *e, uint64_t sleeps, uint64_t run) {
	e->open = true;
	e->open_sleeps = sleeps;
	e->open_run_ns = run;
}

static void close_stretch(struct rt_thread *e, uint64_t sleeps, uint64_t run, bool awake) {
	if (!e->open) {
		return;
	}
	uint64_t ran = run > e->open_run_ns ? run - e->open_run_ns : 0;
	uint64_t slept = sleeps - e->open_sleeps;
	bool woke = slept >= 2 || (slept == 1 && awake);
	e->rt_ns = woke ? ran : e->rt_ns + ran;
	e->open = false;
}

/* Sleeps and CPU time of a thread, and whether it is awake (running or runnable). */
static bool read_thread(pid_t tid, uint64_t *sleeps, uint64_t *run, bool *awake) {
	if (!qos_sys_thread_sleeps(tid, sleeps) || !qos_sys_thread_cpu_ns(tid, run)) {
		return false;
	}
	*awake = qos_sys_thread_state(tid) == 'R';
	return true;
}

/* A tid kept from an earlier pass may name another thread by now: read only the member's. */
static bool read_kept(const struct rt_thread *e, uint64_t *sleeps, uint64_t *run, bool *awake) {
	return qos_sys_thread_in_process(e->pid, e->tid) && read_thread(e->tid, sleeps, run, awake);
}

static int set_policy(struct qos_reserve *r, pid_t tid, enum qos_policy policy) {
	const struct qos_params *p = &r->params;
	return qos_sys_set_thread_policy(tid, policy, p->nice, p->priority, 0, 0);
}

/* Records kept at most; past it the oldest goes (a thread long out of any reserve). */
#define RT_CARRY_MAX 4096

static void drop_carry(struct qos_manager *mgr, size_t i) {
	memmove(&mgr->carry.items[i], &mgr->carry.items[i + 1],
			(mgr->carry.n - i - 1) * sizeof(*mgr->carry.items));
	mgr->carry.n--;
}

/* Keeps e's estimate, its open stretch closed, for the thread's next guard. */
static void carry(struct qos_manager *mgr, struct rt_thread *e) {
	uint64_t sleeps, run;
	bool awake;
	if (!read_kept(e, &sleeps, &run, &awake)) {
		return;
	}
	close_stretch(e, sleeps, run, awake);
	for (size_t i = 0; i < mgr->carry.n; i++) {
		if (mgr->carry.items[i].tid == e->tid) {
			drop_carry(mgr, i);
			break;
		}
	}
	if (!e->rt_ns) {
		return;
	}
	if (mgr->carry.n == RT_CARRY_MAX) {
		drop_carry(mgr, 0);
	}
	struct qos_rt_carry *c =
			qos_array_room(mgr->carry.items, &mgr->carry.cap, mgr->carry.n, sizeof(*c));
	if (!c) {
		return;
	}
	mgr->carry.items = c;
	mgr->carry.items[mgr->carry.n++] = (struct qos_rt_carry){
		.pid = e->pid,
		.tid = e->tid,
		.start_time = qos_sys_start_time(e->pid, e->tid),
		.rt_ns = e->rt_ns,
		.run_ns = run,
		.demoted = e->demoted && sleeps == e->pass_sleeps,
		.sleeps = sleeps,
	};
}

/*
 * The carried estimate of tid (taken: 0 if none).  Since the last pass it
 * may have been real-time all along: at most a pass's worth, as for a
 * thread new to the guard.
 */
static uint64_t carried_ns(struct qos_manager *mgr, pid_t pid, pid_t tid, uint64_t run) {
	for (size_t i = 0; i < mgr->carry.n; i++) {
		struct qos_rt_carry c = mgr->carry.items[i];
		if (c.tid != tid) {
			continue;
		}
		drop_carry(mgr, i);
		if (c.pid != pid || qos_sys_start_time(pid, tid) != c.start_time) {
			return 0;
		}
		uint64_t since = run > c.run_ns ? run - c.run_ns : 0;
		uint64_t pass_ns = QOS_HOUSEKEEPING_US * 1000ull;
		return c.rt_ns + (since < pass_ns ? since : pass_ns);
	}
	return 0;
}

void qos_rtguard_prune(struct qos_manager *mgr) {
	size_t kept = 0;
	for (size_t i = 0; i < mgr->carry.n; i++) {
		struct qos_rt_carry c = mgr->carry.items[i];
		uint64_t run;
		if (!qos_sys_thread_in_process(c.pid, c.tid) ||
				qos_sys_start_time(c.pid, c.tid) != c.start_time ||
				!qos_sys_thread_cpu_ns(c.tid, &run)) {
			continue; /* gone */
		}
		/*
		 * The kernel's count grows only while the thread is real-time
		 * (outside our reserves: its own doing): what it ran since the last
		 * pass counts if it is so now.  A sleep resets the count, which
		 * this leaves out, so the estimate stays from above.
		 */
		int policy = qos_sys_get_thread_policy(c.tid, NULL);
		if ((policy == SCHED_FIFO || policy == SCHED_RR) && run > c.run_ns) {
			c.rt_ns += run - c.run_ns;
		}
		c.run_ns = run;
		mgr->carry.items[kept++] = c;
	}
	mgr->carry.n = kept;
}

void qos_rtguard_forget_member(struct qos_reserve *r, const struct qos_member *m) {
	struct qos_rtguard *g = r->rtg.guard;
	if (!g) {
		return;
	}
	size_t kept = 0;
	for (size_t i = 0; i < g->n; i++) {
		struct rt_thread *e = &g->t[i];
		if (m->tid ? e->tid == m->tid : e->pid == m->pid) {
			carry(r->mgr, e);
		} else {
			g->t[kept++] = *e;
		}
	}
	g->n = kept;
}

/*
 * A moved-out thread that sleeps is made real-time again only while asleep
 * (see the top): true when it is.  Not in the reserve's fallback, whose end
 * makes it so (its threads are other until then).
 */
static bool resume_asleep(struct qos_reserve *r, struct rt_thread *e, uint64_t sleeps,
		uint64_t run) {
	if (r->fb.applied || qos_sys_thread_state(e->tid) == 'R') {
		return false;
	}
	if (set_policy(r, e->tid, r->params.policy) != 0) {
		return false;
	}
	if (qos_sys_thread_state(e->tid) == 'R') {
		set_policy(r, e->tid, QOS_POLICY_OTHER);
		return false;
	}
	e->demoted = false;
	e->sleeps_again = false;
	e->rt_ns = 0; /* it wakes as real-time, which resets the kernel's count */
	open_stretch(e, sleeps, run);
	e->pass_sleeps = sleeps;
	e->pass_run_ns = run;
	qos_event_emit(&r->mgr->events, QOS_EVENT_RT_RESUMED, r->name, e->pid, e->tid, 0,
			"thread %d sleeps again: %s again", e->tid, qos_policy_name(r->params.policy));
	return true;
}

static void check_thread(pid_t tid, void *data) {
	struct pass_ctx *c = data;
	struct qos_rtguard *g = c->r->rtg.guard;
	uint64_t sleeps, run;
	bool awake;
	if (!read_thread(tid, &sleeps, &run, &awake)) {
		return; /* gone: dropped below */
	}
	int policy = qos_sys_get_thread_policy(tid, NULL);
	bool is_rt = policy == SCHED_FIFO || policy == SCHED_RR;
	struct rt_thread *e = find(g, tid);
	if (!e) {
		/*
		 * New to us: it may have run as real-time since it joined, up
		 * to a pass ago, without sleeping; no more than it ran at all.
		 * Found in its reserve's fallback, it may have run so until the
		 * fallback began.
		 */
		e = add(g, c->pid, tid);
		if (!e) {
			return;
		}
		uint64_t pass_ns = QOS_HOUSEKEEPING_US * 1000ull;
		e->rt_ns = is_rt || c->r->fb.applied ? (run < pass_ns ? run : pass_ns) : 0;
		uint64_t before = carried_ns(c->r->mgr, c->pid, tid, run);
		if (before > e->rt_ns) {
			e->rt_ns = before;
		}
	} else if (e->open) {
		close_stretch(e, sleeps, run, awake);
	} else if (is_rt && !e->demoted) {
		/* Real-time again since some time after the last pass: all of it counts. */
		e->rt_ns += run > e->pass_run_ns ? run - e->pass_run_ns : 0;
	}
	e->seen = true;
	if (e->demoted) {
		if (sleeps != e->pass_sleeps) {
			e->sleeps_again = true;
		}
		if (e->sleeps_again && resume_asleep(c->r, e, sleeps, run)) {
			return; /* its stretch is open, from now */
		}
	} else if ((is_rt || c->r->fb.applied) && e->rt_ns >= c->threshold_ns) {
		/*
		 * Found in its reserve's fallback, it is other already, but the
		 * count stands: marked, it stays other when the fallback ends.
		 */
		int err = is_rt ? set_policy(c->r, tid, QOS_POLICY_OTHER) : 0;
		if (err == -ESRCH) {
			return; /* exited meanwhile: dropped at the next pass */
		}
		if (err) {
			/* Still real-time: said so, and tried again at the next pass. */
			qos_event_emit(&c->r->mgr->events, QOS_EVENT_ERROR, c->r->name, c->pid, tid, 0,
					"cannot move thread %d, real-time for %.1f s without sleeping, to "
					"other: %s (RLIMIT_RTTIME kills it at %.1f s)",
					tid, (double)e->rt_ns / 1e9, strerror(-err), (double)c->bound_us / 1e6);
		} else {
			e->demoted = true;
			is_rt = false;
			qos_event_emit(&c->r->mgr->events, QOS_EVENT_RT_DEMOTED, c->r->name, c->pid, tid,
					e->rt_ns / 1000u,
					"thread %d ran %.1f s as %s without sleeping: other "
					"until it sleeps (RLIMIT_RTTIME would kill it at %.1f s)",
					tid, (double)e->rt_ns / 1e9, qos_policy_name(c->r->params.policy),
					(double)c->bound_us / 1e6);
		}
	}
	if (is_rt) {
		open_stretch(e, sleeps, run);
	}
	e->pass_sleeps = sleeps;
	e->pass_run_ns = run;
}

/* Arms the retry while a moved-out thread that sleeps waits to be caught asleep. */
static void arm_retry(struct qos_reserve *r, uint64_t now_us) {
	struct qos_rtguard *g = r->rtg.guard;
	r->rtg.retry_us = 0;
	if (!g || now_us >= g->retry_until_us) {
		return;
	}
	for (size_t i = 0; i < g->n; i++) {
		if (g->t[i].demoted && g->t[i].sleeps_again) {
			r->rtg.retry_us = now_us + RETRY_US;
			return;
		}
	}
}

void qos_rtguard_retry(struct qos_reserve *r, uint64_t now_us) {
	struct qos_rtguard *g = r->rtg.guard;
	for (size_t i = 0; g && i < g->n; i++) {
		struct rt_thread *e = &g->t[i];
		uint64_t sleeps, run;
		bool awake;
		if (!e->demoted || !e->sleeps_again || !read_kept(e, &sleeps, &run, &awake)) {
			continue;
		}
		resume_asleep(r, e, sleeps, run);
	}
	arm_retry(r, now_us);
}

void qos_rtguard_pass(struct qos_reserve *r) {
	struct qos_manager *mgr = r->mgr;
	/* Deadline threads get no bound: the kernel counts only fifo and rr time. */
	bool bounded = r->params.policy == QOS_POLICY_FIFO || r->params.policy == QOS_POLICY_RR;
	if (!bounded || !mgr->config.rttime_us) {
		qos_rtguard_destroy(r);
		return;
	}
	if (!r->rtg.guard && !(r->rtg.guard = calloc(1, sizeof(*r->rtg.guard)))) {
		return;
	}
	struct qos_rtguard *g = r->rtg.guard;
	for (size_t i = 0; i < g->n; i++) {
		g->t[i].seen = false;
	}
	struct pass_ctx c = { .r = r };
	for (size_t i = 0; i < r->n_members; i++) {
		struct qos_member *m = r->members[i];
		c.pid = m->pid;
		c.bound_us = process_bound_us(mgr, m->pid);
		c.threshold_ns = threshold_of(c.bound_us);
		qos_threads_for_each(mgr, m, check_thread, &c);
	}
	size_t kept = 0;
	for (size_t i = 0; i < g->n; i++) {
		if (g->t[i].seen) {
			g->t[kept++] = g->t[i];
		} else {
			carry(mgr, &g->t[i]);
		}
	}
	g->n = kept;
	uint64_t now = qos_sys_now_us();
	g->retry_until_us = now + RETRY_FOR_US;
	arm_retry(r, now);
}

void qos_rtguard_switch(struct qos_reserve *r, bool to_rt) {
	struct qos_rtguard *g = r->rtg.guard;
	for (size_t i = 0; g && i < g->n; i++) {
		struct rt_thread *e = &g->t[i];
		uint64_t sleeps, run;
		bool awake;
		if (e->demoted || !read_kept(e, &sleeps, &run, &awake)) {
			continue;
		}
		if (to_rt) {
			open_stretch(e, sleeps, run);
		} else {
			close_stretch(e, sleeps, run, awake);
		}
	}
}

bool qos_rtguard_demoted(const struct qos_reserve *r, pid_t tid) {
	if (!r->rtg.guard) {
		return false;
	}
	const struct rt_thread *e = find(r->rtg.guard, tid);
	return e && e->demoted;
}

/*
 * A thread about to be made fifo/rr whose carried estimate says the kernel's
 * count is near the bound: moved out by another guard and not asleep since,
 * or real-time near the threshold.  It stays other, watched by r's guard as
 * one it moved out, until a pass sees it sleep.  Made real-time at once, it
 * would run until r's next pass, and the kernel's count could reach the bound
 * first (a thread toggled fifo/other, or moved between fifo reserves, was
 * killed so).
 */
bool qos_rtguard_hold(struct qos_reserve *r, pid_t pid, pid_t tid) {
	struct qos_manager *mgr = r->mgr;
	if (!mgr->config.rttime_us) {
		return false;
	}
	for (size_t i = 0; i < mgr->carry.n; i++) {
		struct qos_rt_carry c = mgr->carry.items[i];
		uint64_t sleeps, run;
		bool awake;
		if (c.tid != tid) {
			continue;
		}
		if (c.pid != pid || qos_sys_start_time(pid, tid) != c.start_time ||
				!read_thread(tid, &sleeps, &run, &awake)) {
			return false;
		}
		bool still = c.demoted && sleeps == c.sleeps;
		if (!still && c.rt_ns < threshold_ns(mgr)) {
			return false;
		}
		if (!r->rtg.guard && !(r->rtg.guard = calloc(1, sizeof(*r->rtg.guard)))) {
			return false;
		}
		struct rt_thread *e = find(r->rtg.guard, tid);
		if (!e && !(e = add(r->rtg.guard, pid, tid))) {
			return false;
		}
		drop_carry(mgr, i);
		e->rt_ns = c.rt_ns;
		e->open = false;
		e->demoted = true;
		e->pass_sleeps = sleeps;
		e->pass_run_ns = run;
		qos_event_emit(&mgr->events, QOS_EVENT_RT_DEMOTED, r->name, pid, tid, c.rt_ns / 1000u,
				"thread %d ran %.1f s as real-time without sleeping: other until it sleeps "
				"(RLIMIT_RTTIME would kill it at %.1f s)",
				tid, (double)c.rt_ns / 1e9, (double)mgr->config.rttime_us / 1e6);
		return true;
	}
	return false;
}

void qos_rtguard_destroy(struct qos_reserve *r) {
	if (!r->rtg.guard) {
		return;
	}
	for (size_t i = 0; i < r->rtg.guard->n; i++) {
		carry(r->mgr, &r->rtg.guard->t[i]);
	}
	free(r->rtg.guard->t);
	free(r->rtg.guard);
	r->rtg.guard = NULL;
	r->rtg.retry_us = 0;
}

void qos_rtguard_finish(struct qos_manager *mgr) {
	free(mgr->carry.items);
	mgr->carry.items = NULL;
	mgr->carry.n = mgr->carry.cap = 0;
}

void qos_rtguard_restore_limit(struct qos_manager *mgr, const char *reserve, pid_t pid,
		uint64_t soft, uint64_t hard) {
	uint64_t cur_soft, cur_hard;
	if (qos_sys_get_rttime(pid, &cur_soft, &cur_hard) != 0 ||
			(cur_soft == soft && cur_hard == hard)) {
		return;
	}
	int e = qos_sys_restore_rttime(pid, soft, hard);
	if (e != 0 && e != -ESRCH) {
		qos_event_emit(&mgr->events, QOS_EVENT_ERROR, reserve, pid, 0, 0,
				"RLIMIT_RTTIME of %d stays bounded at %llu us: %s", pid,
				(unsigned long long)cur_hard, strerror(-e));
	}
}
