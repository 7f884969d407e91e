/*
 * The RLIMIT_RTTIME guard: every real-time member runs under an
 * RLIMIT_RTTIME bound (5 s by default) so that a runaway thread cannot hang
 * the machine if the manager dies.  The kernel enforces it with SIGKILL, and
 * its count, the real-time CPU time since the thread last went to sleep, is
 * only reset when the thread wakes up *as a real-time thread*: a policy
 * change does not reset it (on 6.18, a thread made SCHED_OTHER at 0.6 s and
 * FIFO again at 1.0 s under a 1 s bound was still killed at 1.4 s).
 * Without this guard a fifo member that never sleeps, a game's busy render
 * loop say, is killed 5 s after the user made it real-time.
 *
 * The count is not exported, so the guard estimates it from above at each
 * housekeeping pass, per thread: what it ran since the last pass is added,
 * unless it went to sleep in that time (its voluntary context switches
 * moved) while it was real-time throughout, in which case at most what it
 * ran since the last pass is left.  A thread whose estimate comes within
 * one and a half passes of the bound is moved to other (its reserve's nice)
 * and stays there until it sleeps; then it is real-time again, its count
 * where it stood, and the next pass that finds it has not slept as
 * real-time moves it out again before the count can reach the bound.
 */
#include <sched.h>
#include <stdlib.h>

#include "qos/internal.h"
#include "qos/sys.h"

struct rt_thread {
	pid_t pid; /* the member's process */
	pid_t tid;
	uint64_t sleeps; /* voluntary context switches at the last pass */
	uint64_t run_ns; /* CPU time at the last pass */
	uint64_t rt_ns;  /* estimated real-time run since it last slept as such */
	bool was_rt;     /* real-time at the last pass */
	bool demoted;    /* moved to other by this guard */
	bool seen;
};

struct qos_rtguard {
	struct rt_thread *t;
	size_t n, cap;
	uint32_t rt_breaks; /* the reserve's count of fallback switches at the last pass */
};

struct pass_ctx {
	struct qos_reserve *r;
	pid_t pid;
	bool steady; /* no fallback switch took the threads out since the last pass */
	uint64_t threshold_ns;
};

static struct rt_thread *find(struct qos_rtguard *g, pid_t tid)
{
	for (size_t i = 0; i < g->n; i++) {
		if (g->t[i].tid == tid)
			return &g->t[i];
	}
	return NULL;
}

static struct rt_thread *add(struct qos_rtguard *g, pid_t pid, pid_t tid)
{
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 8;
		struct rt_thread *t = realloc(g->t, cap * sizeof(*t));
		if (!t)
			return NULL;
		g->t = t;
		g->cap = cap;
	}
	struct rt_thread *e = &g->t[g->n++];
	*e = (struct rt_thread){ .pid = pid, .tid = tid };
	return e;
}

/*
 * Stop short of the bound by one and a half passes: a thread runs at most
 * one pass's worth between two of them, and a pass may come late.
 */
static uint64_t threshold_ns(const struct qos_manager *mgr)
{
	uint64_t bound = mgr->config.rttime_us;
	uint64_t margin = QOS_HOUSEKEEPING_US + QOS_HOUSEKEEPING_US / 2;
	return (bound > 2 * margin ? bound - margin : bound / 2) * 1000u;
}

static void set_policy(struct qos_reserve *r, pid_t tid, enum qos_policy policy)
{
	const struct qos_params *p = &r->params;
	qos_sys_set_thread_policy(tid, policy, p->nice, p->priority, 0, 0);
}

static void check_thread(pid_t tid, void *data)
{
	struct pass_ctx *c = data;
	struct qos_rtguard *g = c->r->rtg;
	uint64_t sleeps, run;
	if (!qos_sys_thread_sleeps(tid, &sleeps) || !qos_sys_thread_cpu_ns(tid, &run))
		return; /* gone: dropped below */
	int policy = qos_sys_get_thread_policy(tid, NULL);
	bool is_rt = policy == SCHED_FIFO || policy == SCHED_RR;
	struct rt_thread *e = find(g, tid);
	if (!e) {
		/*
		 * New to us: it may have run as real-time since it joined, up
		 * to a pass ago, without sleeping; no more than it ran at all.
		 */
		e = add(g, c->pid, tid);
		if (!e)
			return;
		uint64_t pass_ns = QOS_HOUSEKEEPING_US * 1000ull;
		e->rt_ns = is_rt ? (run < pass_ns ? run : pass_ns) : 0;
		e->sleeps = sleeps;
		e->run_ns = run;
		e->was_rt = is_rt;
		e->seen = true;
		return;
	}
	e->seen = true;
	uint64_t ran = run > e->run_ns ? run - e->run_ns : 0;
	bool slept = sleeps != e->sleeps;
	if (e->demoted) {
		if (slept) {
			/*
			 * It does sleep: real-time again, its count where it
			 * stood (in a fallback, leaving it makes it so).
			 */
			e->demoted = false;
			if (!c->r->fb_applied) {
				set_policy(c->r, tid, c->r->params.policy);
				is_rt = true;
			}
			qos_emit(c->r->mgr, QOS_EVENT_RT_RESUMED, c->r->name, c->pid, tid, 0,
				"thread %d sleeps again: %s again", tid,
				qos_policy_name(c->r->params.policy));
		}
	} else if (is_rt || e->was_rt) {
		if (slept && c->steady && is_rt && e->was_rt)
			e->rt_ns = ran; /* its count was reset at a wake-up since the last pass */
		else
			e->rt_ns += ran;
		if (is_rt && e->rt_ns >= c->threshold_ns) {
			e->demoted = true;
			set_policy(c->r, tid, QOS_POLICY_OTHER);
			is_rt = false;
			qos_emit(c->r->mgr, QOS_EVENT_RT_DEMOTED, c->r->name, c->pid, tid,
				e->rt_ns / 1000u,
				"thread %d ran %.1f s as %s without sleeping: other until it sleeps "
				"(RLIMIT_RTTIME would kill it at %.1f s)", tid, (double)e->rt_ns / 1e9,
				qos_policy_name(c->r->params.policy),
				(double)c->r->mgr->config.rttime_us / 1e6);
		}
	}
	e->sleeps = sleeps;
	e->run_ns = run;
	e->was_rt = is_rt;
}

void qos_rtguard_pass(struct qos_reserve *r)
{
	struct qos_manager *mgr = r->mgr;
	if (!qos_policy_is_rt(r->params.policy) || !mgr->config.rttime_us) {
		qos_rtguard_destroy(r);
		return;
	}
	if (!r->rtg) {
		r->rtg = calloc(1, sizeof(*r->rtg));
		if (!r->rtg)
			return;
		r->rtg->rt_breaks = r->rt_breaks;
	}
	struct qos_rtguard *g = r->rtg;
	for (size_t i = 0; i < g->n; i++)
		g->t[i].seen = false;
	struct pass_ctx c = {
		.r = r,
		.steady = r->rt_breaks == g->rt_breaks && !r->fb_applied,
		.threshold_ns = threshold_ns(mgr),
	};
	for (size_t i = 0; i < r->n_members; i++) {
		struct qos_member *m = r->members[i];
		c.pid = m->pid;
		if (m->tid)
			check_thread(m->tid, &c);
		else
			qos_sys_for_each_thread(m->pid, check_thread, &c);
	}
	g->rt_breaks = r->rt_breaks;
	size_t kept = 0;
	for (size_t i = 0; i < g->n; i++) {
		if (g->t[i].seen)
			g->t[kept++] = g->t[i];
	}
	g->n = kept;
}

bool qos_rtguard_demoted(const struct qos_reserve *r, pid_t tid)
{
	if (!r->rtg)
		return false;
	const struct rt_thread *e = find(r->rtg, tid);
	return e && e->demoted;
}

void qos_rtguard_destroy(struct qos_reserve *r)
{
	if (!r->rtg)
		return;
	free(r->rtg->t);
	free(r->rtg);
	r->rtg = NULL;
}
