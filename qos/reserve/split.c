/*
 * A qos reserve's slice divided among its threads by use (qos/reserve/split.h).
 *
 * Each thread is read through /proc/PID/task/TID/schedstat: the kernel lets
 * no process read another's thread CPU clocks (clock_gettime on
 * ((~tid) << 3) | 6 for a thread of another process fails with EINVAL),
 * and schedstat is the same sum_exec_runtime, in nanoseconds.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "qos/policy/core.h"
#include "qos/reserve/fallback.h"
#include "qos/reserve/optimistic.h"
#include "qos/reserve/split.h"
#include "qos/kernel/sys.h"
#include "qos/reserve/threads.h"

static bool enabled(const struct qos_reserve *r) {
	return r->params.policy == QOS_POLICY_QOS && r->n_members && r->params.period_us;
}

/* The whole reserve waits in its fallback until the period ends. */
static bool held_in_fallback(const struct qos_reserve *r) {
	return r->police.in_fallback && r->fb.applied;
}

static struct qos_split_thread *find(struct qos_split *s, pid_t tid) {
	for (size_t i = 0; i < s->n; i++) {
		if (s->t[i].tid == tid) {
			return &s->t[i];
		}
	}
	return NULL;
}

void qos_split_clear(struct qos_reserve *r) {
	struct qos_split *s = &r->split;
	free(s->t);
	*s = (struct qos_split){ 0 };
}

struct sample_ctx {
	struct qos_reserve *r;
	pid_t pid;
	uint64_t interval_us;
	bool in_fallback; /* every thread waits in the reserve's fallback */
	bool failed;
};

static void sample_one(pid_t tid, void *data) {
	struct sample_ctx *c = data;
	struct qos_split *s = &c->r->split;
	uint64_t cpu;
	if (!qos_sys_thread_cpu_ns(tid, &cpu)) {
		return;
	}
	struct qos_split_thread *t = find(s, tid);
	if (!t) {
		struct qos_split_thread *grown = qos_array_room(s->t, &s->cap, s->n, sizeof(*grown));
		if (!grown) {
			c->failed = true;
			return;
		}
		s->t = grown;
		t = &s->t[s->n++];
		/* Before the first sample every thread holds the even split, and
		 * so does one started since (qos_split_runtime) once it was given
		 * the reserve's class or waits with the others in the fallback to
		 * get it.  One not given it yet holds nothing: the next plan gives
		 * it a runtime, and it parks like any other once idle. */
		bool even =
				!s->built || qos_optimistic_waiting(c->r, tid) || qos_sys_thread_is_deadline(tid);
		*t = (struct qos_split_thread){ .pid = c->pid,
			.tid = tid,
			.cpu_ns = cpu,
			.runtime_ns = even ? c->r->dl_runtime_ns : 0,
			.seen = true };
		return;
	}
	t->seen = true;
	uint64_t ran = cpu > t->cpu_ns ? cpu - t->cpu_ns : 0;
	t->cpu_ns = cpu;
	if (!c->interval_us) {
		return;
	}
	uint64_t used = ran * c->r->params.period_us / c->interval_us;
	/* The state is read only for a thread that ran nothing: it may park, or
	 * be stuck. */
	bool may_park = t->idle + 1 >= QOS_SPLIT_PARK_PERIODS;
	bool held = t->runtime_ns && !c->in_fallback && !qos_optimistic_waiting(c->r, tid);
	char st = 0;
	if (!t->parked && used < QOS_SPLIT_RAN_NS && (may_park || held)) {
		st = qos_sys_thread_state(tid);
	}
	/*
	 * Runnable in its reservation for a whole period without running: a
	 * thread whose replenishment the kernel lost (docs/qos-design.md).
	 * Housekeeping would find it within a second; a decoder stalled that
	 * long drops frames, so it is looked at now.
	 */
	if (st == 'R' && held && qos_optimistic_unstick(c->r, c->pid, tid)) {
		t->runtime_ns = 0;
	}
	bool asleep = may_park && (st == 'S' || st == 'D' || st == 'I');
	qos_split_rules_sample(t, used, asleep);
}

static int give(struct qos_reserve *r, struct qos_split_thread *t) {
	const struct qos_params *p = &r->params;
	if (qos_optimistic_waiting(r, t->tid)) {
		return 0; /* it returns at the period end with what the plan says */
	}
	if (t->parked) {
		/* Asleep, so not throttled: it leaves without the sleeper's leak. */
		if (!qos_sys_release_deadline(t->tid)) {
			return -ESRCH;
		}
		enum qos_policy fb = p->fallback == QOS_POLICY_IDLE ? QOS_POLICY_IDLE : QOS_POLICY_OTHER;
		int e = qos_sys_set_thread_policy(t->tid, fb, p->nice, 0, 0, 0);
		if (e == 0) {
			t->runtime_ns = 0;
		}
		return e;
	}
	bool entering = t->runtime_ns == 0;
	int e = qos_sys_set_thread_policy(t->tid, QOS_POLICY_QOS, p->nice, 0, t->want_ns,
			p->period_us * 1000u);
	if (e == 0) {
		t->runtime_ns = t->want_ns;
		if (entering) {
			qos_optimistic_watch(r, t->pid, t->tid);
		}
	}
	return e;
}

static void give_or_say(struct qos_reserve *r, struct qos_split_thread *t, uint64_t want) {
	int e = give(r, t);
	if (e < 0 && e != -ESRCH) {
		qos_event_emit(&r->mgr->events, QOS_EVENT_ERROR, r->name, t->pid, t->tid, 0,
				"cannot give thread %d a runtime of %.2fms: %s", t->tid, want / 1e6,
				qos_reserve_policy_error(QOS_POLICY_QOS, e));
	}
}

/* Shrinks first, then grows: the sum the kernel admits never passes the slice. */
static void apply(struct qos_reserve *r) {
	struct qos_split *s = &r->split;
	for (int grow = 0; grow < 2; grow++) {
		for (size_t i = 0; i < s->n; i++) {
			struct qos_split_thread *t = &s->t[i];
			uint64_t want = t->parked ? 0 : t->want_ns;
			if (want == t->runtime_ns || (want > t->runtime_ns) != (bool)grow) {
				continue;
			}
			give_or_say(r, t, want);
		}
	}
}

void qos_split_pass(struct qos_reserve *r, uint64_t now_us) {
	struct qos_split *s = &r->split;
	if (!enabled(r)) {
		qos_split_clear(r);
		return;
	}
	uint64_t period_ns = r->params.period_us * 1000u;
	if (s->built && s->period_ns != period_ns) {
		qos_split_clear(r); /* histories are per period: start afresh */
	}
	s->next_us = now_us + r->params.period_us;
	struct sample_ctx c = { .r = r,
		.interval_us = s->last_us ? now_us - s->last_us : 0,
		.in_fallback = held_in_fallback(r) };
	s->last_us = now_us;
	for (size_t i = 0; i < s->n; i++) {
		s->t[i].seen = false;
	}
	for (size_t i = 0; i < r->n_members; i++) {
		c.pid = r->members[i]->pid;
		qos_threads_for_each(r->mgr, r->members[i], sample_one, &c);
	}
	for (size_t i = 0; i < s->n;) {
		if (!s->t[i].seen) {
			s->t[i] = s->t[--s->n];
		} else {
			i++;
		}
	}
	if (s->n <= 1) {
		qos_split_clear(r); /* one thread holds the whole slice */
		return;
	}
	bool first = !s->built;
	s->built = true;
	if (!s->check_us && qos_fallback_optimistic(r)) {
		s->check_us = now_us + r->params.period_us / QOS_SPLIT_CHECKS;
	}
	s->period_ns = period_ns;
	s->slice_ns = r->params.slice_us * 1000u;
	if (first || !c.interval_us || c.failed) {
		return;
	}
	bool starved = qos_split_rules_plan(s->t, s->n, s->slice_ns, period_ns);
	bool ran_out = false;
	for (size_t i = 0; i < s->n; i++) {
		ran_out |= s->t[i].throttled;
	}
	if (starved && ran_out) {
		s->starved++;
	}
	/* The reserve-wide fallback holds every thread until the period ends. */
	if (held_in_fallback(r)) {
		return;
	}
	apply(r);
}

void qos_split_check(struct qos_reserve *r, uint64_t now_us) {
	struct qos_split *s = &r->split;
	s->check_us = 0;
	if (!s->built || !enabled(r) || !qos_fallback_optimistic(r)) {
		return;
	}
	s->check_us = now_us + r->params.period_us / QOS_SPLIT_CHECKS;
	/* The whole reserve waits in its fallback: nothing runs on from it. */
	if (held_in_fallback(r)) {
		return;
	}
	bool moved = false;
	for (size_t i = 0; i < s->n; i++) {
		struct qos_split_thread *t = &s->t[i];
		if (!t->parked && t->runtime_ns && qos_optimistic_run_on(r, t->pid, t->tid, now_us)) {
			t->ran_on++;
			moved = true;
		}
	}
	/* Its use counts in the slice from now on, and its return needs a wake-up. */
	if (moved) {
		qos_fallback_check(r, now_us);
	}
}

void qos_split_replan(struct qos_reserve *r) {
	struct qos_split *s = &r->split;
	if (!s->built) {
		return;
	}
	if (!enabled(r) || s->period_ns != r->params.period_us * 1000u) {
		qos_split_clear(r);
		return;
	}
	s->slice_ns = r->params.slice_us * 1000u;
	qos_split_rules_plan(s->t, s->n, s->slice_ns, s->period_ns);
}

bool qos_split_runtime(struct qos_reserve *r, pid_t tid, uint64_t *runtime_ns) {
	struct qos_split *s = &r->split;
	if (!s->built) {
		return true;
	}
	struct qos_split_thread *t = find(s, tid);
	if (!t) {
		return true; /* started since the last sample: the even split until the next */
	}
	if (t->parked) {
		return false;
	}
	uint64_t want = t->want_ns ? t->want_ns : t->runtime_ns;
	if (!want) {
		return false;
	}
	*runtime_ns = want;
	return true;
}

enum qos_split_grant qos_split_grant(struct qos_reserve *r, pid_t tid, uint64_t *runtime_ns) {
	struct qos_split *s = &r->split;
	if (!qos_split_runtime(r, tid, runtime_ns)) {
		return QOS_SPLIT_OUTSIDE;
	}
	if (!s->built) {
		return QOS_SPLIT_GIVE; /* every thread holds the even split */
	}
	/*
	 * The plan may have moved while the others kept what they hold: one
	 * made while the whole reserve waited in its fallback is applied as
	 * its threads come back one by one.  Those holding more than the plan
	 * give it back first; what still does not fit waits.
	 */
	uint64_t held = 0;
	for (size_t i = 0; i < s->n; i++) {
		struct qos_split_thread *t = &s->t[i];
		if (t->tid == tid || !t->runtime_ns || qos_optimistic_waiting(r, t->tid)) {
			continue;
		}
		uint64_t want = t->parked ? 0 : t->want_ns;
		if ((want || t->parked) && want < t->runtime_ns) {
			give_or_say(r, t, want);
		}
		held += t->runtime_ns;
	}
	uint64_t room = s->slice_ns > held ? s->slice_ns - held : 0;
	if (*runtime_ns > room) {
		*runtime_ns = room;
	}
	return *runtime_ns < QOS_SPLIT_MIN_NS ? QOS_SPLIT_FULL : QOS_SPLIT_GIVE;
}

void qos_split_given(struct qos_reserve *r, pid_t pid, pid_t tid, uint64_t runtime_ns) {
	struct qos_split *s = &r->split;
	if (!s->built) {
		return;
	}
	struct qos_split_thread *t = find(s, tid);
	if (!t) {
		/* Started since the last sample: counted from now, as what it holds
		 * is what the next grant leaves room for. */
		uint64_t cpu;
		struct qos_split_thread *grown = qos_array_room(s->t, &s->cap, s->n, sizeof(*grown));
		if (!grown || !qos_sys_thread_cpu_ns(tid, &cpu)) {
			return;
		}
		s->t = grown;
		t = &s->t[s->n++];
		*t = (struct qos_split_thread){ .pid = pid, .tid = tid, .cpu_ns = cpu, .seen = true };
	}
	t->runtime_ns = runtime_ns;
}

bool qos_split_held(const struct qos_reserve *r, pid_t tid, uint64_t *runtime_ns) {
	const struct qos_split *s = &r->split;
	for (size_t i = 0; s->built && i < s->n; i++) {
		if (s->t[i].tid == tid && s->t[i].runtime_ns) {
			*runtime_ns = s->t[i].runtime_ns;
			return true;
		}
	}
	return false;
}

uint64_t qos_split_take_starved(struct qos_reserve *r) {
	uint64_t n = r->split.starved;
	r->split.starved = 0;
	return n;
}
