/*
 * Optimistic qos (qos -> other or idle): deadline threads moved to the
 * fallback once the slice is used and back at a safe return time, and the
 * repair of threads the kernel left throttled without a timer.  Why the way
 * back is dangerous and how it is made safe: docs/qos-design.md.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qos/policy/core.h"
#include "qos/policy/split_rules.h"
#include "qos/reserve/optimistic.h"
#include "qos/reserve/reserve.h"
#include "qos/reserve/split.h"
#include "qos/reserve/threads.h"
#include "qos/kernel/sys.h"

#define RETURN_MARGIN_US 500u
#define VERIFY_AFTER_US 1000u
#define CALIBRATE_EVERY_US 1000000u
/* A throttled thread whose deadline passed this long ago has lost its timer. */
#define STUCK_AFTER_NS 500000

/*
 * A member thread that has left its reservation at least once.  Kept while
 * it is a member, also when back, for its /proc files: it is read at each
 * switch, hundreds of times a second in a busy reserve.
 */
struct fb_thread {
	pid_t pid; /* the member's process */
	pid_t tid;
	uint64_t back_at_us; /* may return to SCHED_DEADLINE from then; 0: it is back */
	uint64_t verify_at_us;
	bool risky; /* it may have left throttled: check it after its return */
	uint64_t ran_ns; /* its CPU time at the last run-on look (qos_optimistic_run_on) */
	bool seen; /* listed in this housekeeping pass */
	struct qos_thread_files files;
};

struct qos_optimistic {
	struct fb_thread *t;
	size_t n, cap;
};

bool qos_optimistic_supported(void) {
	/* The dl.* fields come with the scheduler's debug output. */
	return access("/proc/self/sched", R_OK) == 0;
}

void qos_optimistic_clear(struct qos_reserve *r) {
	for (size_t i = 0; r->opt && i < r->opt->n; i++) {
		qos_thread_files_finish(&r->opt->t[i].files);
	}
	if (r->opt) {
		r->opt->n = 0;
	}
}

void qos_optimistic_destroy(struct qos_reserve *r) {
	if (!r->opt) {
		return;
	}
	qos_optimistic_clear(r);
	free(r->opt->t);
	free(r->opt);
	r->opt = NULL;
}

/* Waiting to return, or to be looked at: not merely kept for its files. */
static bool busy_entry(const struct fb_thread *t) {
	return t->back_at_us || t->verify_at_us;
}

static struct fb_thread *find(struct qos_reserve *r, pid_t tid) {
	for (size_t i = 0; r->opt && i < r->opt->n; i++) {
		if (r->opt->t[i].tid == tid) {
			return &r->opt->t[i];
		}
	}
	return NULL;
}

static struct fb_thread *add(struct qos_reserve *r, pid_t pid, pid_t tid) {
	struct fb_thread *t = find(r, tid);
	if (t && t->pid != pid) {
		/* A tid another member's thread had: nothing of it applies. */
		qos_thread_files_finish(&t->files);
		*t = (struct fb_thread){ .pid = pid, .tid = tid };
		qos_thread_files_init(&t->files, pid, tid, &r->mgr->kept_fds_budget);
	}
	if (t) {
		return t;
	}
	if (!r->opt && !(r->opt = calloc(1, sizeof(*r->opt)))) {
		return NULL;
	}
	struct qos_optimistic *o = r->opt;
	struct fb_thread *grown = qos_array_room(o->t, &o->cap, o->n, sizeof(*grown));
	if (!grown) {
		return NULL;
	}
	o->t = grown;
	t = &o->t[o->n++];
	*t = (struct fb_thread){ .pid = pid, .tid = tid };
	qos_thread_files_init(&t->files, pid, tid, &r->mgr->kept_fds_budget);
	return t;
}

static void drop(struct qos_reserve *r, size_t i) {
	struct qos_optimistic *o = r->opt;
	qos_thread_files_finish(&o->t[i].files);
	o->t[i] = o->t[--o->n];
}

bool qos_optimistic_any_waiting(const struct qos_reserve *r) {
	for (size_t i = 0; r->opt && i < r->opt->n; i++) {
		if (r->opt->t[i].back_at_us) {
			return true;
		}
	}
	return false;
}

bool qos_optimistic_waiting(const struct qos_reserve *r, pid_t tid) {
	for (size_t i = 0; r->opt && i < r->opt->n; i++) {
		if (r->opt->t[i].tid == tid) {
			return r->opt->t[i].back_at_us != 0;
		}
	}
	return false;
}

/* Through the entry's kept stat file when there is one, else by path. */
static char state_of(struct fb_thread *t, pid_t tid) {
	return t ? qos_thread_files_state(&t->files) : qos_sys_thread_state(tid);
}

char qos_optimistic_thread_state(struct qos_reserve *r, pid_t pid, pid_t tid) {
	struct fb_thread *t = r->opt ? find(r, tid) : NULL;
	return state_of(t && t->pid == pid ? t : NULL, tid);
}

void qos_optimistic_forget(struct qos_reserve *r, pid_t pid, pid_t tid) {
	for (size_t i = 0; r->opt && i < r->opt->n;) {
		struct fb_thread *t = &r->opt->t[i];
		if (t->pid == pid && (!tid || t->tid == tid)) {
			drop(r, i);
		} else {
			i++;
		}
	}
}

/* The 0-lag time of a throttled thread, on CLOCK_MONOTONIC (us). */
static uint64_t zero_lag_us(struct qos_reserve *r, pid_t tid, int64_t runtime_ns,
		int64_t deadline_ns) {
	struct qos_manager *mgr = r->mgr;
	/* The kernel reckons it with the runtime it holds, not the plan's. */
	uint64_t q = qos_reserve_dl_runtime_ns(r);
	if (!qos_split_held(r, tid, &q)) {
		qos_split_runtime(r, tid, &q);
	}
	uint64_t debt = runtime_ns < 0 ? (uint64_t)-runtime_ns : 0;
	int64_t z = deadline_ns - mgr->dl.clock_offset_ns +
			(int64_t)(debt * (r->params.period_us * 1000u) / q);
	return z > 0 ? (uint64_t)z / 1000u : 0;
}

/* The class a thread waits in outside its reservation: idle, else other. */
static void to_fallback(struct qos_reserve *r, pid_t tid) {
	const struct qos_params *p = &r->params;
	enum qos_policy fb = p->fallback == QOS_POLICY_IDLE ? QOS_POLICY_IDLE : QOS_POLICY_OTHER;
	qos_sys_set_thread_policy(tid, fb, p->nice, 0, 0, 0);
}

struct leave_ctx {
	struct qos_reserve *r;
	pid_t pid;
	uint64_t period_end_us;
};

static void leave_one(pid_t tid, void *data) {
	struct leave_ctx *c = data;
	struct qos_reserve *r = c->r;
	if (!qos_sys_thread_is_deadline(tid)) {
		return;
	}
	struct fb_thread *t = add(r, c->pid, tid);
	if (!t) {
		return; /* out of memory: it stays a hard reservation this period */
	}
	t->verify_at_us = 0;
	t->back_at_us = c->period_end_us;
	t->risky = true;
	char state = qos_thread_files_state(&t->files);
	if (state != 'R') {
		/* Asleep, so not throttled; leave without the sleeper's leak. */
		if (qos_sys_release_deadline_in(tid, state)) {
			to_fallback(r, tid);
		}
		return;
	}
	int64_t runtime, deadline;
	uint64_t before = 0, after = 0;
	bool known = qos_thread_files_dl_state(&t->files, &runtime, &deadline, &before);
	to_fallback(r, tid);
	if (!known) {
		/* Unknown state: wait a whole period more, which is past any 0-lag
		 * time of an overrun shorter than a slice. */
		t->back_at_us = c->period_end_us + r->params.period_us;
		return;
	}
	/*
	 * Both counters lag by the same ticks; the switch settled them.  The
	 * switch also throttles a thread whose runtime it finds gone, so one
	 * left with runtime cannot be stuck on its return.  A thread already
	 * throttled (no runtime) was settled when the kernel throttled it and
	 * has not run in the class since: its figures are exact, and the
	 * second read is saved at most overruns of a slice shorter than a tick.
	 */
	if (runtime > 0 && qos_thread_files_cpu_ns(&t->files, &after)) {
		runtime -= (int64_t)(after - before);
	}
	t->risky = runtime <= 0;
	if (runtime <= 0) {
		uint64_t z = zero_lag_us(r, tid, runtime, deadline) + RETURN_MARGIN_US;
		if (z > t->back_at_us) {
			t->back_at_us = z;
		}
	}
}

void qos_optimistic_enter(struct qos_reserve *r, uint64_t period_end_us) {
	for (size_t i = 0; i < r->n_members; i++) {
		struct qos_member *m = r->members[i];
		struct leave_ctx c = { .r = r, .pid = m->pid, .period_end_us = period_end_us };
		qos_threads_for_each(r->mgr, m, leave_one, &c);
	}
}

struct hold_ctx {
	struct qos_reserve *r;
	pid_t pid;
	uint64_t period_end_us;
	bool held;
};

static void hold_one(pid_t tid, void *data) {
	struct hold_ctx *c = data;
	const struct fb_thread *w = find(c->r, tid);
	if ((w && w->back_at_us) || qos_sys_thread_is_deadline(tid)) {
		return;
	}
	struct fb_thread *t = add(c->r, c->pid, tid);
	if (!t) {
		return; /* out of memory: the next housekeeping pass places it */
	}
	/* Never in the class, so never throttled: the period end is safe. */
	t->back_at_us = c->period_end_us;
	t->verify_at_us = 0;
	t->risky = false;
	c->held = true;
	if (c->r->params.fallback == QOS_POLICY_IDLE) {
		to_fallback(c->r, tid);
	}
}

bool qos_optimistic_hold_new(struct qos_reserve *r, uint64_t period_end_us) {
	bool held = false;
	for (size_t i = 0; i < r->n_members; i++) {
		struct qos_member *m = r->members[i];
		struct hold_ctx c = { .r = r, .pid = m->pid, .period_end_us = period_end_us };
		qos_threads_for_each(r->mgr, m, hold_one, &c);
		held |= c.held;
	}
	return held;
}

/*
 * Membership only: whether the thread itself still exists shows when it is
 * acted on (ESRCH), so a check costs no system call.
 */
static bool is_member_thread(struct qos_reserve *r, pid_t pid, pid_t tid) {
	for (size_t i = 0; i < r->n_members; i++) {
		struct qos_member *m = r->members[i];
		if (m->pid == pid && (!m->tid || m->tid == tid)) {
			return true;
		}
	}
	return false;
}

/*
 * Throttled with its deadline well past: its replenishment timer is gone.
 * The state comes from the thread's kept files when it has an entry (a
 * sleeping member is asked every pass).
 */
static bool stuck(struct qos_reserve *r, struct fb_thread *t, pid_t tid, int64_t runtime,
		int64_t deadline) {
	if (runtime > 0) {
		return false;
	}
	int64_t now = qos_sys_now_ns() + r->mgr->dl.clock_offset_ns;
	if (deadline + STUCK_AFTER_NS > now) {
		return false;
	}
	return state_of(t, tid) == 'R';
}

/* Takes a stuck thread out of SCHED_DEADLINE until its 0-lag time. */
static void repair(struct qos_reserve *r, struct fb_thread *t, pid_t pid, pid_t tid,
		int64_t runtime, int64_t deadline, const char *found) {
	to_fallback(r, tid);
	if (!t) {
		t = add(r, pid, tid);
	}
	if (t) {
		t->back_at_us = zero_lag_us(r, tid, runtime, deadline) + RETURN_MARGIN_US;
		t->verify_at_us = 0;
		t->risky = true;
	}
	qos_event_emit(&r->mgr->events, QOS_EVENT_ERROR, r->name, pid, tid, 0,
			"thread %d was stuck throttled in SCHED_DEADLINE (found %s); %s until its 0-lag time",
			tid, found, r->params.fallback == QOS_POLICY_IDLE ? "idle" : "other");
}

/*
 * A thread just put into SCHED_DEADLINE that may have left the class
 * throttled, read right after the switch: a stuck one shows at once (the
 * switch neither replenishes nor enqueues it, so it keeps its old deadline,
 * past) and is repaired; one with runtime or a new deadline is settled (the
 * manager is not real-time: with busy members a tick may pass before it
 * looks, so a thread throttled in its new reservation is common).  True
 * when its deadline is too near now to tell: look again a moment later.
 */
static bool check_entry(struct qos_reserve *r, struct fb_thread *t, pid_t pid, pid_t tid,
		int64_t runtime, int64_t deadline) {
	if (runtime > 0 || deadline > qos_sys_now_ns() + r->mgr->dl.clock_offset_ns + STUCK_AFTER_NS) {
		return false;
	}
	if (!stuck(r, t, tid, runtime, deadline)) {
		return true;
	}
	repair(r, t, pid, tid, runtime, deadline, "on entry");
	return false;
}

/* Returns false when the thread is gone. */
static bool go_back(struct qos_reserve *r, struct fb_thread *t, uint64_t now_us) {
	/* Its tid was kept since it left: act on it only while it is still the member's. */
	if (!qos_sys_thread_in_process(t->pid, t->tid)) {
		return false;
	}
	uint64_t q = qos_reserve_dl_runtime_ns(r);
	/* Shrinking others takes no entry here (no add), so t stays valid. */
	enum qos_split_grant g = qos_split_grant(r, t->tid, &q);
	if (g == QOS_SPLIT_FULL) {
		t->back_at_us = now_us + r->params.period_us / QOS_SPLIT_CHECKS;
		return true;
	}
	if (g == QOS_SPLIT_OUTSIDE) {
		/* Parked by the division meanwhile: it waits outside until it runs. */
		t->back_at_us = 0;
		t->verify_at_us = 0;
		return true;
	}
	uint64_t period_ns = r->params.period_us * 1000u;
	int64_t before = qos_sys_now_ns();
	int e = qos_sys_set_thread_policy(t->tid, QOS_POLICY_QOS, r->params.nice, 0, q, period_ns);
	if (e == 0) {
		qos_split_given(r, t->pid, t->tid, q);
	}
	t->back_at_us = 0;
	t->verify_at_us = 0;
	if (e == -ESRCH) {
		return false;
	}
	if (e < 0) {
		/* EBUSY and the like: it stays in the fallback until housekeeping
		 * gives the reserve's policy to every thread again. */
		qos_event_emit(&r->mgr->events, QOS_EVENT_ERROR, r->name, t->pid, t->tid, 0,
				"cannot return thread %d to its reservation: %s", t->tid, strerror(-e));
		return true;
	}
	/*
	 * A thread that may have left throttled is looked at now, not a moment
	 * later (check_entry), which saves the manager a wake-up per return.
	 * Otherwise the read only refines the clock offset, which once a
	 * second is plenty.
	 */
	bool calibrate = now_us >= r->mgr->dl.calibrated_us + CALIBRATE_EVERY_US;
	if (!t->risky && !calibrate) {
		return true;
	}
	int64_t runtime, deadline;
	if (!qos_thread_files_dl_state(&t->files, &runtime, &deadline, NULL)) {
		if (t->risky) {
			t->verify_at_us = now_us + VERIFY_AFTER_US;
		}
		return true;
	}
	if (runtime == (int64_t)q) {
		/* A fresh reservation: deadline = scheduler clock at the switch + period. */
		r->mgr->dl.clock_offset_ns = deadline - (int64_t)period_ns - before;
		r->mgr->dl.calibrated_us = now_us;
		return true;
	}
	if (t->risky && check_entry(r, t, t->pid, t->tid, runtime, deadline)) {
		t->verify_at_us = now_us + VERIFY_AFTER_US;
	}
	return true;
}

void qos_optimistic_watch(struct qos_reserve *r, pid_t pid, pid_t tid) {
	int64_t runtime, deadline;
	if (qos_sys_thread_dl_state(tid, &runtime, &deadline, NULL) &&
			!check_entry(r, NULL, pid, tid, runtime, deadline)) {
		return;
	}
	struct fb_thread *t = add(r, pid, tid);
	if (t && !t->back_at_us) {
		t->verify_at_us = qos_sys_now_us() + VERIFY_AFTER_US;
	}
}

/* Undoes a return that left the thread throttled without a timer. */
static bool unstick(struct qos_reserve *r, struct fb_thread *t, pid_t pid, pid_t tid,
		const char *found) {
	int64_t runtime, deadline;
	bool known = t ? qos_thread_files_dl_state(&t->files, &runtime, &deadline, NULL)
				   : qos_sys_thread_dl_state(tid, &runtime, &deadline, NULL);
	if (!known || !stuck(r, t, tid, runtime, deadline)) {
		return false;
	}
	repair(r, t, pid, tid, runtime, deadline, found);
	return true;
}

bool qos_optimistic_run_on(struct qos_reserve *r, pid_t pid, pid_t tid, uint64_t now_us) {
	struct fb_thread *t = add(r, pid, tid);
	uint64_t cpu;
	if (!t || busy_entry(t) || !qos_thread_files_cpu_ns(&t->files, &cpu)) {
		return false;
	}
	/* One that has not run since the last look cannot have run out since:
	 * its deadline state (the costlier read) is left alone. */
	bool ran = cpu != t->ran_ns;
	t->ran_ns = cpu;
	int64_t runtime, deadline;
	if (!ran || !qos_thread_files_dl_state(&t->files, &runtime, &deadline, NULL) || runtime > 0 ||
			qos_thread_files_state(&t->files) != 'R') {
		return false;
	}
	struct leave_ctx c = { .r = r, .pid = pid, .period_end_us = now_us };
	leave_one(tid, &c);
	return t->back_at_us != 0;
}

bool qos_optimistic_unstick(struct qos_reserve *r, pid_t pid, pid_t tid) {
	struct fb_thread *t = find(r, tid);
	return unstick(r, t && t->pid == pid ? t : NULL, pid, tid, "idle in a period");
}

uint64_t qos_optimistic_run(struct qos_reserve *r, uint64_t now_us, bool in_fallback) {
	uint64_t next = UINT64_MAX;
	for (size_t i = 0; r->opt && i < r->opt->n;) {
		struct fb_thread *t = &r->opt->t[i];
		if (!is_member_thread(r, t->pid, t->tid)) {
			drop(r, i);
			continue;
		}
		if (t->back_at_us && !in_fallback && now_us >= t->back_at_us && !go_back(r, t, now_us)) {
			drop(r, i);
			continue;
		}
		if (t->verify_at_us && now_us >= t->verify_at_us) {
			t->verify_at_us = 0;
			if (qos_sys_thread_in_process(t->pid, t->tid)) {
				unstick(r, t, t->pid, t->tid, "after entry");
			}
		}
		if (!busy_entry(t)) {
			i++; /* back: kept for its files until it leaves again */
			continue;
		}
		/* While the reserve is in its fallback, the period boundary wakes us. */
		if (t->back_at_us && !in_fallback && t->back_at_us < next) {
			next = t->back_at_us;
		}
		if (t->verify_at_us && t->verify_at_us < next) {
			next = t->verify_at_us;
		}
		i++;
	}
	return next;
}

struct scan_ctx {
	struct qos_reserve *r;
	pid_t pid;
};

static void scan_one(pid_t tid, void *data) {
	struct scan_ctx *c = data;
	/* An entry for every member thread: the check below reads its /proc
	 * files every pass, through descriptors kept within the budget. */
	struct fb_thread *t = add(c->r, c->pid, tid);
	if (t) {
		t->seen = true;
	}
	if (!t || !busy_entry(t)) {
		unstick(c->r, t, c->pid, tid, "by the 1 s pass");
	}
}

void qos_optimistic_housekeeping(struct qos_reserve *r) {
	for (size_t i = 0; r->opt && i < r->opt->n; i++) {
		r->opt->t[i].seen = false;
	}
	for (size_t i = 0; i < r->n_members; i++) {
		struct qos_member *m = r->members[i];
		struct scan_ctx c = { .r = r, .pid = m->pid };
		qos_threads_for_each(r->mgr, m, scan_one, &c);
	}
	/* Kept entries of threads that have exited since, and their files. */
	for (size_t i = 0; r->opt && i < r->opt->n;) {
		if (!r->opt->t[i].seen && !busy_entry(&r->opt->t[i])) {
			drop(r, i);
		} else {
			i++;
		}
	}
}
