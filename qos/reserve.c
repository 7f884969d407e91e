/* Reserves and their members: create/modify/delete, join/leave, policy application. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include "qos/cputimer.h"
#include "qos/internal.h"
#include "qos/journal.h"
#include "qos/sys.h"

struct qos_reserve *qos_find_reserve(struct qos_manager *mgr, const char *name)
{
	for (struct qos_reserve *r = mgr->reserves; r; r = r->next) {
		if (strcmp(r->name, name) == 0)
			return r;
	}
	return NULL;
}

struct qos_reserve *qos_find_reserve_by_group(struct qos_manager *mgr, const char *group)
{
	for (struct qos_reserve *r = mgr->reserves; r; r = r->next) {
		if (r->has_group && strcmp(r->group, group) == 0)
			return r;
	}
	return NULL;
}

struct qos_reserve *qos_find_reserve_by_cookie(struct qos_manager *mgr, uint32_t cookie)
{
	for (struct qos_reserve *r = mgr->by_cookie[cookie % QOS_COOKIE_BUCKETS]; r;
			r = r->cookie_next) {
		if (r->cookie == cookie)
			return r;
	}
	return NULL;
}

struct qos_member *qos_find_member(struct qos_manager *mgr, pid_t pid, pid_t tid)
{
	for (struct qos_reserve *r = mgr->reserves; r; r = r->next) {
		for (size_t i = 0; i < r->n_members; i++) {
			struct qos_member *m = r->members[i];
			if (m->pid == pid && m->tid == tid)
				return m;
		}
	}
	return NULL;
}

static struct qos_member *find_thread_member(struct qos_manager *mgr, pid_t pid,
	struct qos_reserve *except)
{
	for (struct qos_reserve *r = mgr->reserves; r; r = r->next) {
		for (size_t i = 0; r != except && i < r->n_members; i++) {
			if (r->members[i]->pid == pid && r->members[i]->tid)
				return r->members[i];
		}
	}
	return NULL;
}

static bool member_alive(const struct qos_member *m)
{
	return qos_sys_start_time(m->pid, m->tid) == m->start_time;
}

/* The starvation watchdog's cool-down suspends every new real-time grant. */
static bool rt_allowed(struct qos_manager *mgr, uint64_t now, char *err, size_t err_len)
{
	uint64_t left = qos_watchdog_cooldown_left_us(&mgr->watchdog, now);
	if (!left)
		return true;
	snprintf(err, err_len, "real-time grants are suspended for %llus after a starvation "
		"alarm", (unsigned long long)(left / 1000000u + 1));
	mgr->last_refusal = QOS_REFUSAL_FORBIDDEN;
	return false;
}

/*
 * qos falling back to other or idle: the manager moves the deadline threads
 * out at the overrun (optimistic.c).  Where the kernel does not show their
 * deadline state it cannot do that safely, and the reserve stays hard.
 */
static bool optimistic(const struct qos_reserve *r)
{
	return r->params.policy == QOS_POLICY_QOS && r->mgr->optimistic &&
		(r->params.fallback == QOS_POLICY_OTHER || r->params.fallback == QOS_POLICY_IDLE);
}

/* Whether the kernel itself stops the reserve at its limit (no freeze needed). */
static bool kernel_caps(const struct qos_reserve *r)
{
	const struct qos_cgroup *cg = &r->mgr->cg;
	switch (r->params.policy) {
	case QOS_POLICY_QOS:
		return true; /* SCHED_DEADLINE throttles at the runtime */
	case QOS_POLICY_OTHER:
	case QOS_POLICY_IDLE:
		return cg->cpu_ctl;
	case QOS_POLICY_FIFO:
	case QOS_POLICY_RR:
		return cg->rt_group;
	case QOS_POLICY_PAUSE:
		return true;
	}
	return false;
}

static bool has_thread_members(const struct qos_reserve *r)
{
	for (size_t i = 0; i < r->n_members; i++) {
		if (r->members[i]->tid)
			return true;
	}
	return false;
}

/*
 * Process members of a limited reserve are accounted from their CPU clocks
 * whenever the kernel can also notify on them: cheaper than cpu.stat, and
 * the same clock the timers are armed on.  Read from another process, a
 * running thread's clock is only brought up to date at ticks and switches
 * (measured: 9 distinct values in 200 reads over 30 ms at HZ=250), the very
 * points where the kernel also does its deadline accounting and throttling.
 * Fixed per parameter set, so the source of the police's cumulative counter
 * never changes under it.
 */
static bool exact_clocks(const struct qos_reserve *r)
{
	return optimistic(r) ||
		(r->mgr->cputimer_fd >= 0 && qos_params_has_limit(&r->params));
}

static bool manager_polices(const struct qos_reserve *r);

/*
 * Whether the kernel tells the manager when the reserve's slice may be used
 * up (cputimer.h) instead of the manager polling for it.  Timers exist on
 * processes only.
 */
static bool notified(const struct qos_reserve *r)
{
	return r->mgr->cputimer_fd >= 0 && r->n_members && !r->timers_refused &&
		manager_polices(r) && !has_thread_members(r);
}

/*
 * How much of the slice a reserve the kernel also throttles
 * (races_kernel_throttle, below) gives up to leave its class in time; told
 * here for optimistic qos, the same holds for a real-time group's runtime.
 * The kernel brings a running thread's accounting
 * (its CPU clock, its deadline runtime) up to date only at ticks and
 * switches, and throttles it at the first tick that finds the runtime gone;
 * a CPU timer fires at a tick too.  So a check that sees less than a tick
 * left (on each CPU the members use) cannot know the thread survives the
 * next tick, and must move it to the fallback before then, with the runtime
 * still positive; the timers fire at the tick where that becomes true.
 *
 * A slice of a tick or less is different: a tick that merely finds a
 * light member running (an audio thread using a tenth of its slice) would
 * cost it its reservation for the rest of the period.  Such a reserve
 * leaves early only once it has used half; one that overruns from less is
 * throttled by the kernel and waits out its debt (optimistic.c).  Other
 * reserves need no guard: the kernel's own debt rules make up for a late
 * switch.
 */
/*
 * A check that finds no more than the guard left does not switch there and
 * then, though: it comes back when the slice, used on at the rate the
 * members run, is down to this much (police.h's switch_at_us): more than
 * the manager's wake-up latency (50-70 us at p99 in
 * tests/bench/qos_timerlat.py), well short of the tick the kernel throttles
 * at.  Before, a 6 ms slice at HZ=250 left at about 4 ms used: a 30%
 * reserve ran 20% of each period as such.
 */
#define SWITCH_MARGIN_US 300u

/*
 * Whether the kernel enforces the reserve's budget itself, in a window of its
 * own, so that the manager's switch to the fallback must come before the
 * tick at which the kernel would stop the members:
 *  - optimistic qos: the deadline runtime (see timer_guard_us below);
 *  - fifo or rr with a fallback other than pause: the group's
 *    cpu.rt_runtime_us.  At a tick that finds both used up, the throttle
 *    comes first, and the thread does not even take the CPU-timer notice
 *    then: the kernel delivers it as task work on the way back to user
 *    space, which a throttled thread takes only when the group's next
 *    period starts.  When the reserve's period boundary falls in that gap,
 *    the notice arrives in the next period every time and the fallback never
 *    happens: the kernel pauses the thread instead (1 test run in 20 here).
 */
static bool races_kernel_throttle(const struct qos_reserve *r)
{
	const struct qos_params *p = &r->params;
	return optimistic(r) || (qos_policy_is_rt(p->policy) && r->mgr->cg.rt_group &&
		p->fallback != QOS_POLICY_PAUSE && p->fallback != p->policy &&
		qos_params_has_limit(p));
}

static uint64_t timer_guard_us(const struct qos_reserve *r)
{
	if (!races_kernel_throttle(r))
		return 0;
	unsigned n = r->police.parallel ? r->police.parallel : 1;
	uint64_t guard = r->mgr->tick_us * n;
	return guard < r->params.slice_us ? guard : r->params.slice_us / 2;
}

struct running_ctx {
	struct qos_reserve *r;
	pid_t pid;
	bool running;
};

/* Asked at most overruns of a busy optimistic reserve: its kept files serve. */
static void note_running(pid_t tid, void *data)
{
	struct running_ctx *c = data;
	if (!c->running && qos_optimistic_thread_state(c->r, c->pid, tid) == 'R')
		c->running = true;
}

static bool members_running(struct qos_reserve *r)
{
	struct running_ctx c = { .r = r };
	for (size_t i = 0; i < r->n_members && !c.running; i++) {
		struct qos_member *m = r->members[i];
		c.pid = m->pid;
		qos_member_for_each_thread(r->mgr, m, note_running, &c);
	}
	return c.running;
}

/*
 * What the members ran since their counter last moved, which it does not
 * show yet: a running thread's clock moves at ticks and switches only, so
 * a counter that has stood still for less than a tick, with a member
 * runnable, has been running all along (for a tick at most: the next tick
 * would have moved it).  Underestimates by the manager's wake-up latency
 * after the tick; the switch margin covers that.
 */
static uint64_t projected_us(struct qos_reserve *r, uint64_t own, uint64_t now_us)
{
	if (own != r->fresh_own_us || r->fresh_at_us == 0) {
		r->fresh_own_us = own;
		r->fresh_at_us = now_us;
		return 0;
	}
	uint64_t dt = now_us - r->fresh_at_us;
	if (!r->police.early_us || r->police.in_fallback || dt == 0 || dt > r->mgr->tick_us ||
			!members_running(r))
		return 0;
	return dt * (r->police.parallel ? r->police.parallel : 1);
}

/*
 * other -> idle where the group's cpu.idle alone does it: the group is the
 * reserve's, so making it idle against everything outside is the fallback;
 * the threads inside keep their policy, which saves a sched_setattr per
 * thread at each of up to 200 switches a second.
 */
static bool group_idles(const struct qos_reserve *r)
{
	return r->params.policy == QOS_POLICY_OTHER && r->params.fallback == QOS_POLICY_IDLE &&
		r->mgr->cg.cpu_ctl && r->has_group && !has_thread_members(r);
}

/*
 * Where the kernel can notify, limited reserves' periods start on a common
 * grid, so the period ends of notified reserves share wake-ups.  Not where
 * the kernel keeps a window of its own on the same budget: a deadline
 * reservation starts afresh with each return (optimistic.c), and a real-time
 * group's bandwidth period starts when its first thread becomes runnable
 * real-time in it, which for a new group is the member's join, just before
 * this is asked.  Out of phase, the kernel would throttle threads in
 * periods where the manager sees its slice far from used.
 */
static uint64_t period_origin(const struct qos_reserve *r, uint64_t now_us)
{
	uint64_t period = r->params.period_us;
	if (r->mgr->cputimer_fd < 0 || !period || races_kernel_throttle(r))
		return now_us;
	return now_us - now_us % period;
}

static size_t count_threads(struct qos_reserve *r)
{
	size_t n = 0;
	for (size_t i = 0; i < r->n_members; i++) {
		struct qos_member *m = r->members[i];
		/* The task directory, not /proc/PID/status: that prints some
		 * fifty lines (most of a housekeeping pass) for one. */
		int threads = qos_member_for_each_thread(r->mgr, m, NULL, NULL);
		n += (size_t)(threads > 0 ? threads : 1);
	}
	return n ? n : 1;
}

struct thread_ctx {
	struct qos_reserve *r;
	pid_t pid; /* the member's process */
	enum qos_policy policy;
	uint64_t dl_runtime_ns;
	bool release; /* the thread leaves us: drop deadline bandwidth cleanly */
	int err;
	pid_t err_tid;
};

static void set_one(pid_t tid, void *data)
{
	struct thread_ctx *c = data;
	/* Never early: see optimistic.c for what an early return does. */
	if (c->policy == QOS_POLICY_QOS && !c->release && qos_optimistic_waiting(c->r, tid))
		return;
	/* Leaving SCHED_DEADLINE (fallback, demotion, leave): see qos_sys_release_deadline. */
	if ((c->release || c->policy != QOS_POLICY_QOS) && !qos_sys_release_deadline(tid))
		return;
	const struct qos_params *p = &c->r->params;
	bool entering_dl = false;
	if (c->policy == QOS_POLICY_QOS && !c->release) {
		/* Each housekeeping pass comes here for every thread: most have
		 * their reservation already, and a system call fewer each. */
		bool same;
		entering_dl = !qos_sys_thread_is_deadline_as(tid, c->dl_runtime_ns,
			p->period_us * 1000u, &same);
		if (same)
			return;
	}
	/* Moved out before RLIMIT_RTTIME kills it (rtguard.c): other until it sleeps. */
	enum qos_policy policy = qos_policy_is_rt(c->policy) && !c->release &&
		qos_rtguard_demoted(c->r, tid) ? QOS_POLICY_OTHER : c->policy;
	int e = qos_sys_set_thread_policy(tid, policy, p->nice, p->priority, c->dl_runtime_ns,
		p->period_us * 1000u);
	if (e == 0 && entering_dl)
		qos_optimistic_watch(c->r, c->pid, tid); /* it may have left the class throttled */
	if (e < 0 && e != -ESRCH && !c->err) {
		c->err = e;
		c->err_tid = tid;
	}
}

static const char *policy_error(enum qos_policy policy, int err)
{
	if (policy == QOS_POLICY_QOS && err == -EBUSY)
		return "the kernel's deadline bandwidth is exhausted";
	if (policy == QOS_POLICY_QOS && err == -EPERM)
		return "deadline tasks must be allowed to run on every CPU";
	if ((policy == QOS_POLICY_FIFO || policy == QOS_POLICY_RR) && err == -EPERM)
		return "the reserve's group has no real-time bandwidth";
	return strerror(-err);
}

/* Applies a per-thread policy to one member (all threads of a process member). */
static int apply_member(struct qos_reserve *r, struct qos_member *m, enum qos_policy policy,
	uint64_t dl_runtime_ns)
{
	struct thread_ctx c = { .r = r, .pid = m->pid, .policy = policy,
		.dl_runtime_ns = dl_runtime_ns };
	qos_member_for_each_thread(r->mgr, m, set_one, &c);
	if (c.err)
		qos_emit(r->mgr, QOS_EVENT_ERROR, r->name, m->pid, c.err_tid, 0,
			"cannot make thread %d %s: %s", c.err_tid, qos_policy_name(policy),
			policy_error(policy, c.err));
	return c.err;
}

static uint64_t split_slice_ns(struct qos_reserve *r)
{
	/* Threads of one reserve split its slice evenly (thesis 5.3.2, option a). */
	uint64_t ns = r->params.slice_us * 1000u / count_threads(r);
	return ns < 1024 ? 1024 : ns;
}

/*
 * A thread returning to its reservation gets what the others were given:
 * counting the threads again (a /proc read per member) at every return
 * would be most of what a return costs.
 */
uint64_t qos_reserve_dl_runtime_ns(struct qos_reserve *r)
{
	if (!r->dl_runtime_ns)
		r->dl_runtime_ns = split_slice_ns(r);
	return r->dl_runtime_ns;
}

static int apply_threads(struct qos_reserve *r, enum qos_policy policy)
{
	uint64_t rt = 0;
	if (policy == QOS_POLICY_QOS)
		rt = r->dl_runtime_ns = split_slice_ns(r);
	int err = 0;
	if (policy != QOS_POLICY_QOS)
		qos_optimistic_clear(r); /* nothing returns to a reservation any more */
	for (size_t i = 0; i < r->n_members; i++) {
		int e = apply_member(r, r->members[i], policy, rt);
		if (e && !err)
			err = e;
	}
	return err;
}

/*
 * Reserve groups sit under our root, so against tasks outside it they all
 * share the root's weight.  Make the root stand for what is inside: idle when
 * every populated reserve is idle, else the sum of their nice weights.
 */
void qos_root_weight_update(struct qos_manager *mgr)
{
	qos_root_weight_update_deferred(mgr, false);
}

static bool reserve_idle(const struct qos_reserve *r)
{
	return r->params.policy == QOS_POLICY_IDLE ||
		(r->fb_applied && r->params.fallback == QOS_POLICY_IDLE);
}

/*
 * defer: a fallback switch, possibly 200 times a second per reserve.  Writing
 * cpu.shares walks every CPU's runqueue under its lock, so then only a change
 * between idle and not idle is written at once (it decides whether the
 * fallback works against outside tasks); a new weight waits for the next
 * housekeeping pass.  Unchanged values are never written again.
 */
void qos_root_weight_update_deferred(struct qos_manager *mgr, bool defer)
{
	struct qos_cgroup *cg = &mgr->cg;
	if (!cg->cpu_ctl)
		return;
	if (defer && mgr->root_idle == 0) {
		/*
		 * The root stays busy while one populated reserve is: finding one
		 * is enough, usually the first, where summing them all cost 4% of
		 * the manager's time with 50 reserves switching.
		 */
		for (struct qos_reserve *r = mgr->reserves; r; r = r->next) {
			if (r->n_members && !reserve_idle(r)) {
				mgr->root_weight_dirty = true;
				return;
			}
		}
	}
	long weight = 0;
	bool any = false;
	for (struct qos_reserve *r = mgr->reserves; r; r = r->next) {
		if (!r->n_members)
			continue;
		any = true;
		if (!reserve_idle(r))
			weight += qos_cgroup_nice_to_weight(r->params.policy == QOS_POLICY_OTHER ?
				r->params.nice : 0) * (long)r->n_members;
	}
	int idle = any && weight == 0;
	if (!weight)
		weight = 1024;
	if (idle == mgr->root_idle && (idle || weight == mgr->root_weight)) {
		mgr->root_weight_dirty = false;
		return;
	}
	if (defer && idle == mgr->root_idle) {
		mgr->root_weight_dirty = true;
		return;
	}
	qos_cgroup_set_root_weight(cg, idle, weight);
	mgr->root_idle = idle;
	mgr->root_weight = idle ? -1 : weight;
	mgr->root_weight_dirty = false;
}

/* The group's cpu.idle, written only when it changes. */
static void set_group_idle(struct qos_reserve *r, bool idle)
{
	if (r->group_idle == (int)idle)
		return;
	if (r->idle_fd < 0)
		r->idle_fd = qos_cgroup_open_idle(&r->mgr->cg, r->group);
	int e = r->idle_fd >= 0 ? qos_cgroup_set_idle_fd(r->idle_fd, idle) :
		qos_cgroup_set_idle(&r->mgr->cg, r->group, idle);
	if (e == 0)
		r->group_idle = idle;
	else
		r->group_idle = -1;
}

/* Group-level controls for the reserve's normal policy. */
static void apply_group(struct qos_reserve *r)
{
	struct qos_cgroup *cg = &r->mgr->cg;
	const struct qos_params *p = &r->params;
	if (!r->has_group)
		return;
	if (cg->cpu_ctl) {
		/* An idle group ignores its weight, and writing the weight clears idle. */
		r->group_idle = -1;
		if (p->policy == QOS_POLICY_IDLE) {
			set_group_idle(r, true);
		} else {
			set_group_idle(r, false);
			qos_cgroup_set_nice_weight(cg, r->group,
				p->policy == QOS_POLICY_OTHER ? p->nice : 0);
		}
		bool ceiling = qos_params_has_limit(p) && p->fallback == QOS_POLICY_PAUSE &&
			(p->policy == QOS_POLICY_OTHER || p->policy == QOS_POLICY_IDLE);
		int e = qos_cgroup_set_quota(cg, r->group, p->period_us, ceiling ? p->slice_us : 0);
		if (e < 0)
			qos_emit(r->mgr, QOS_EVENT_ERROR, r->name, 0, 0, 0, "cannot set cpu quota: %s",
				strerror(-e));
	}
	if (cg->rt_group) {
		bool rt = p->policy == QOS_POLICY_FIFO || p->policy == QOS_POLICY_RR;
		int e = qos_cgroup_set_rt(cg, r->group, rt ? p->period_us : 1000000,
			rt ? p->slice_us : 0);
		if (e < 0 && rt)
			qos_emit(r->mgr, QOS_EVENT_ERROR, r->name, 0, 0, 0,
				"cannot give the group real-time bandwidth: %s", strerror(-e));
	}
	qos_cgroup_freeze(cg, r->group, p->policy == QOS_POLICY_PAUSE);
}

static uint64_t own_cpu_us(struct qos_reserve *r)
{
	uint64_t total = r->retired_us, v = 0;
	bool group_counted = false;
	/*
	 * Process members of reserves with exact_clocks() are read from their
	 * CPU clocks (see there); children not adopted yet are left out until
	 * then.
	 */
	bool exact = exact_clocks(r);
	for (size_t i = 0; i < r->n_members; i++) {
		struct qos_member *m = r->members[i];
		if (m->tid) {
			if (qos_sys_thread_cpu_us(m->pid, m->tid, &v) && v >= m->cpu_base_us)
				total += v - m->cpu_base_us;
		} else if (exact) {
			m->clock_read = qos_sys_process_clock_us(m->pid, &v);
			m->clock_us = v;
			if (m->clock_read && v >= m->clock_base_us)
				total += v - m->clock_base_us;
		} else if (!group_counted) {
			/* One read covers every process member and its inheriting children. */
			if (r->stat_fd < 0)
				r->stat_fd = qos_cgroup_open_stat(&r->mgr->cg, r->group);
			if ((r->stat_fd >= 0 && qos_cgroup_usage_fd(r->stat_fd, &v)) ||
					qos_cgroup_usage_us(&r->mgr->cg, r->group, &v))
				total += v;
			group_counted = true;
		}
	}
	return total;
}

static void enter_fallback(struct qos_reserve *r)
{
	const struct qos_params *p = &r->params;
	struct qos_cgroup *cg = &r->mgr->cg;
	if (p->fallback == QOS_POLICY_PAUSE) {
		/* Billed time is invisible to the kernel, so only then must we freeze. */
		if (!kernel_caps(r) || r->police.billed_us > 0) {
			qos_cgroup_freeze(cg, r->group, true);
			r->fb_applied = true;
		}
		return;
	}
	if (p->fallback == p->policy)
		return;
	if (p->policy == QOS_POLICY_QOS) {
		if (optimistic(r)) {
			qos_optimistic_enter(r, qos_police_period_end_us(&r->police));
			/* SCHED_IDLE threads alone would still get the group's share. */
			if (p->fallback == QOS_POLICY_IDLE && cg->cpu_ctl)
				set_group_idle(r, true);
			r->fb_applied = true;
			qos_root_weight_update_deferred(r->mgr, true);
		}
		return;
	}
	if (r->rtg)
		qos_rtguard_switch(r, false);
	if (!group_idles(r))
		apply_threads(r, p->fallback);
	if (p->fallback == QOS_POLICY_IDLE && cg->cpu_ctl)
		set_group_idle(r, true);
	r->fb_applied = true;
	qos_root_weight_update_deferred(r->mgr, true);
}

/*
 * An optimistic reserve leaves its fallback thread by thread, each at its
 * own safe time (optimistic.c); the group stays idle (for qos -> idle) until
 * the last one is back, or a waiting SCHED_IDLE thread would get the group's
 * whole share.  Returns when the threads next need the manager.
 */
static uint64_t settle_optimistic(struct qos_reserve *r, uint64_t now_us)
{
	/* Only an optimistic fallback holds threads back; a repaired thread of a
	 * hard reserve returns at its 0-lag time. */
	bool overrun = r->police.in_fallback && !r->police.held;
	uint64_t due = qos_optimistic_run(r, now_us, optimistic(r) && overrun);
	if (r->police.held && !qos_optimistic_any_waiting(r)) {
		/*
		 * The last thread is back in its reservation, whose period starts
		 * now (its deadline is now + period): so does the police's, and it
		 * watches the slice again from here.
		 */
		qos_police_resume(&r->police, now_us, own_cpu_us(r));
		qos_emit(r->mgr, QOS_EVENT_RESTORED, r->name, 0, 0, r->police.last_used_us, NULL);
		if (due > now_us + QOS_POLICE_MIN_STEP_US)
			due = now_us + QOS_POLICE_MIN_STEP_US;
	}
	if (!r->fb_applied || r->police.in_fallback || qos_optimistic_any_waiting(r))
		return due;
	r->fb_applied = false;
	if (r->params.fallback == QOS_POLICY_IDLE && r->mgr->cg.cpu_ctl)
		set_group_idle(r, false);
	qos_root_weight_update_deferred(r->mgr, true);
	return due;
}

static void leave_fallback(struct qos_reserve *r)
{
	const struct qos_params *p = &r->params;
	struct qos_cgroup *cg = &r->mgr->cg;
	if (!r->fb_applied)
		return;
	if (p->policy == QOS_POLICY_QOS && p->fallback != QOS_POLICY_PAUSE) {
		settle_optimistic(r, qos_sys_now_us());
		return;
	}
	r->fb_applied = false;
	if (p->fallback == QOS_POLICY_PAUSE) {
		qos_cgroup_freeze(cg, r->group, p->policy == QOS_POLICY_PAUSE);
		return;
	}
	if (p->fallback == QOS_POLICY_IDLE && cg->cpu_ctl)
		set_group_idle(r, p->policy == QOS_POLICY_IDLE);
	if (!group_idles(r))
		apply_threads(r, p->policy);
	if (r->rtg)
		qos_rtguard_switch(r, true);
	qos_root_weight_update_deferred(r->mgr, true);
}

/*
 * Whether an overrun needs the manager to act (switch policies or freeze).
 * When it does not, the kernel enforces the limit by itself and the manager
 * only keeps the books, which it does lazily (see qos_reserve_check).
 */
static bool manager_polices(const struct qos_reserve *r)
{
	const struct qos_params *p = &r->params;
	if (!qos_params_has_limit(p))
		return false;
	if (r->police.billed_us > 0 || r->fb_applied)
		return true; /* billed time is invisible to the kernel */
	if (p->fallback == QOS_POLICY_PAUSE)
		return !kernel_caps(r);
	if (p->fallback == p->policy)
		return false;
	if (p->policy == QOS_POLICY_QOS)
		return optimistic(r);
	return true;
}

static void disarm_timers(struct qos_reserve *r)
{
	if (!r->timers_armed)
		return;
	for (size_t i = 0; i < r->n_members; i++) {
		if (r->members[i]->has_cpu_timer)
			qos_cputimer_arm(r->members[i]->cpu_timer, 0);
		r->members[i]->timer_at_ns = 0;
	}
	r->timers_armed = false;
}

/*
 * Arms every member's CPU timer at its share of what is left of the slice
 * less the guard, so the first to fire comes no later than that runs out (a
 * tick late at most).  With less left than the guard, or with first_use
 * (quiet, below), they fire at the first tick that finds a member running.
 * Timers still armed from an earlier budget fire no later than needed, so
 * they are left alone while nothing was used since.  Returns 0, or a
 * negative errno when the kernel refuses a timer; then none is left armed
 * and the reserve is polled.
 */
/* Each member's timer share of what is left of the slice less the guard (>= 1 us). */
static uint64_t timer_share_us(const struct qos_reserve *r, uint64_t used_us, uint64_t guard_us)
{
	uint64_t slice = r->params.slice_us;
	uint64_t share = (used_us + guard_us < slice ? slice - used_us - guard_us : 0) /
		r->n_members;
	return share ? share : 1;
}

static int arm_timers(struct qos_reserve *r, uint64_t own_us, uint64_t guard_us,
	bool first_use)
{
	uint64_t used = qos_police_used_us(&r->police);
	if (r->timers_armed && own_us == r->armed_own_us && used <= r->armed_used_us &&
			(r->armed_first_use || !first_use))
		return 0;
	uint64_t share = first_use ? 1 : timer_share_us(r, used, guard_us);
	r->armed_first_use = first_use;
	r->timers_armed = true; /* from here on, a failure disarms what was armed */
	for (size_t i = 0; i < r->n_members; i++) {
		struct qos_member *m = r->members[i];
		int e = 0;
		if (!m->has_cpu_timer) {
			if (qos_cputimer_create(m->pid, r->mgr->config.cputimer_signal, r->cookie,
					&m->cpu_timer))
				m->has_cpu_timer = true;
			else
				e = -errno;
		}
		/* The clock as own_cpu_us() just read it (notified reserves have exact clocks). */
		if (!e && !m->clock_read)
			continue; /* exiting: its pidfd says so next */
		m->timer_at_ns = (m->clock_us + share) * 1000u;
		if (!e)
			e = qos_cputimer_arm(m->cpu_timer, m->timer_at_ns);
		if (e) {
			disarm_timers(r);
			return e;
		}
	}
	r->armed_own_us = own_us;
	r->armed_used_us = used;
	return 0;
}

/*
 * A reserve that used nothing in this period nor in the last, and nothing
 * since the last check, is checked no more at period ends: its timers wake
 * the manager at the first tick a member runs again, so that the boundaries
 * resume from there.  Armed at the slice instead, they fired only once the
 * members had used a slice since, all of which the check then charged to
 * one period (it cannot tell when in the skipped periods it was used): a
 * periodic member had an overrun it never made each time it woke from
 * quiet.  Nothing since the last check alone is not enough either: a check
 * in a periodic member's gap (a query) would see nothing.
 */
static bool quiet(const struct qos_reserve *r, uint64_t own_us)
{
	return own_us == r->checked_own_us && qos_police_used_us(&r->police) == 0 &&
		r->police.last_used_us == 0;
}

/*
 * The first check after a boundary, of a reserve whose timers all wait
 * (none of its slice ran out, so it carries no debt into the new period):
 * the new period gives it the whole slice, so each timer is re-armed that
 * far past its process's clock, and the clock comes back with it
 * (qos_cputimer_rearm_after): a clock read fewer per member at the check
 * every busy reserve gets at every boundary (15% of the cut-idle
 * benchmark's system calls, docs/qos-benchmarks.md).  Stores the reserve's
 * own time in *own; false, with
 * nothing read, where the new budget depends on that time or a timer had
 * fired.
 */
static bool roll_timers(struct qos_reserve *r, uint64_t now_us, uint64_t guard_us,
	uint64_t *own)
{
	const struct qos_police *p = &r->police;
	uint64_t end = qos_police_period_end_us(p);
	if (!p->notified || !r->timers_armed || !p->period_us || p->in_fallback ||
			p->billed_us || p->debt_us || guard_us || now_us < end ||
			now_us - end >= p->period_us)
		return false;
	uint64_t share_ns = timer_share_us(r, 0, 0) * 1000u, total = r->retired_us;
	for (size_t i = 0; i < r->n_members; i++) {
		struct qos_member *m = r->members[i];
		uint64_t clock_ns;
		if (!m->has_cpu_timer || !qos_cputimer_rearm_after(m->cpu_timer, m->timer_at_ns,
				share_ns, &clock_ns)) {
			/* Timers of other members may be re-armed already: arm_timers
			 * sets them all again from the clocks read the usual way. */
			m->timer_at_ns = 0;
			r->armed_own_us = UINT64_MAX;
			return false;
		}
		m->timer_at_ns = clock_ns + share_ns;
		m->clock_us = clock_ns / 1000u;
		m->clock_read = true;
		if (m->clock_us >= m->clock_base_us)
			total += m->clock_us - m->clock_base_us;
	}
	/* As arm_timers would have armed them for the period's start. */
	r->armed_first_use = false;
	r->armed_own_us = total;
	r->armed_used_us = 0;
	*own = total;
	return true;
}

void qos_reserve_check(struct qos_reserve *r, uint64_t now_us)
{
	if (r->n_members == 0) {
		r->next_check_us = UINT64_MAX;
		return;
	}
	r->police.notified = notified(r);
	r->police.hold_fallback = optimistic(r) && r->fb_applied && qos_optimistic_any_waiting(r);
	uint64_t guard = timer_guard_us(r);
	uint64_t own;
	if (!roll_timers(r, now_us, guard, &own))
		own = own_cpu_us(r);
	r->police.early_us = r->police.notified ? guard : 0;
	/* Only a group made idle switches at the kernel's next tick (police.h). */
	r->police.fallback_grace_us = group_idles(r) ? r->mgr->tick_us : 0;
	r->police.running = own != r->checked_own_us;
	r->police.projected_us = projected_us(r, own, now_us);
	r->police.margin_us = SWITCH_MARGIN_US;
	enum qos_police_transition t = qos_police_update(&r->police, now_us, own,
		&r->next_check_us);
	if (t == QOS_POLICE_OVERRUN) {
		enter_fallback(r);
		qos_emit(r->mgr, QOS_EVENT_OVERRUN, r->name, 0, 0,
			qos_police_used_us(&r->police) + r->police.projected_us,
			"slice of %lluus used, fallback %s", (unsigned long long)r->params.slice_us,
			qos_policy_name(r->params.fallback));
	} else if (t == QOS_POLICE_RESTORE) {
		leave_fallback(r);
		qos_emit(r->mgr, QOS_EVENT_RESTORED, r->name, 0, 0, r->police.last_used_us, NULL);
	}
	/*
	 * Checking a kernel-enforced reserve at every period boundary (and
	 * more often within periods) would cost the manager more than the
	 * reserve is worth: 50 reserves at 10 ms are 5000+ cpu.stat reads a
	 * second.  Such reserves are accounted at the housekeeping pass instead
	 * (per-period figures become averages over it), and again whenever they
	 * are queried or billed.
	 */
	if (!manager_polices(r) && r->next_check_us < r->mgr->housekeeping_us)
		r->next_check_us = r->mgr->housekeeping_us;
	int e = 0;
	bool idle = quiet(r, own);
	if (!r->police.notified || !notified(r)) {
		disarm_timers(r);
	} else if (r->police.in_fallback) {
		disarm_timers(r); /* nothing to watch until the boundary */
		/* Optimistic threads come back on times of their own (below). */
		if (!optimistic(r))
			r->next_check_us = qos_police_fallback_end_us(&r->police);
	} else if ((e = arm_timers(r, own, guard, idle)) == 0) {
		/*
		 * The kernel wakes us if the slice may be gone, or for a quiet
		 * reserve as soon as a member runs; otherwise only the boundary
		 * matters.  A quiet reserve costs no wake-ups at all.
		 */
		uint64_t end = qos_police_period_end_us(&r->police);
		r->next_check_us = idle ? r->mgr->housekeeping_us : end;
		/* Running out before the next tick: switch precisely (police.h). */
		if (r->police.switch_at_us && r->police.switch_at_us < r->next_check_us)
			r->next_check_us = r->police.switch_at_us;
	} else {
		qos_emit(r->mgr, QOS_EVENT_ERROR, r->name, 0, 0, 0,
			"no CPU-time notifications (%s): polling instead", strerror(-e));
		r->timers_refused = true;
		r->police.notified = false;
	}
	r->checked_own_us = own;
	/*
	 * A held fallback ends when the threads return, not at a boundary:
	 * their return times (below) wake us, and the periods in between are
	 * settled in one go then.  A throttled thread of a 1% reserve can wait
	 * hundreds of periods.
	 */
	if (r->police.held)
		r->next_check_us = r->mgr->housekeeping_us;
	/* Threads waiting to return, or to be checked after entering SCHED_DEADLINE. */
	if (r->opt) {
		uint64_t due = settle_optimistic(r, now_us);
		if (due < r->next_check_us)
			r->next_check_us = due;
	}
}

static void adopt_children(struct qos_reserve *r);

/*
 * Threads created since the last look start as SCHED_OTHER (reset on fork),
 * so give them the reserve's current policy.  Deadline runtimes are re-split
 * over the new thread count at the same time.
 */
static void apply_active(struct qos_reserve *r)
{
	enum qos_policy active = r->police.in_fallback && r->fb_applied &&
		r->params.fallback != QOS_POLICY_PAUSE ? r->params.fallback : r->params.policy;
	if (!r->n_members)
		return;
	if (r->params.policy == QOS_POLICY_QOS) {
		/* In an optimistic fallback the threads wait for the period end,
		 * and all of them return with the runtime split anew. */
		if (!(optimistic(r) && r->police.in_fallback && r->fb_applied))
			apply_threads(r, QOS_POLICY_QOS);
		else if (qos_optimistic_hold_new(r, qos_police_period_end_us(&r->police)))
			r->dl_runtime_ns = split_slice_ns(r);
	} else if ((qos_policy_is_rt(active) || active == QOS_POLICY_IDLE) &&
			!(active != r->params.policy && group_idles(r))) {
		apply_threads(r, active);
	}
}

void qos_reserve_housekeeping(struct qos_reserve *r)
{
	adopt_children(r);
	qos_threads_keep(r->mgr, true);
	apply_active(r);
	if (r->n_members && r->params.policy == QOS_POLICY_QOS)
		qos_optimistic_housekeeping(r);
	qos_rtguard_pass(r);
	qos_threads_keep(r->mgr, false);
}

static struct qos_reserve *reserve_new(struct qos_manager *mgr, const char *name,
	const struct qos_params *params)
{
	struct qos_reserve *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->mgr = mgr;
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->params = *params;
	r->next_check_us = UINT64_MAX;
	r->stat_fd = -1;
	r->group_idle = -1;
	r->idle_fd = -1;
	r->procs_fd = -1;
	r->cookie = ++mgr->next_cookie;
	r->cookie_next = mgr->by_cookie[r->cookie % QOS_COOKIE_BUCKETS];
	mgr->by_cookie[r->cookie % QOS_COOKIE_BUCKETS] = r;
	struct qos_reserve **tail = &mgr->reserves;
	while (*tail)
		tail = &(*tail)->next;
	*tail = r;
	qos_emit(mgr, QOS_EVENT_RESERVE_CREATED, r->name, 0, 0, 0, NULL);
	return r;
}

void qos_reserve_free(struct qos_reserve *r)
{
	if (!r)
		return;
	struct qos_manager *mgr = r->mgr;
	for (struct qos_reserve **pp = &mgr->reserves; *pp; pp = &(*pp)->next) {
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	}
	for (struct qos_reserve **pp = &mgr->by_cookie[r->cookie % QOS_COOKIE_BUCKETS]; *pp;
			pp = &(*pp)->cookie_next) {
		if (*pp == r) {
			*pp = r->cookie_next;
			break;
		}
	}
	if (r->granted)
		qos_admission_release(&mgr->adm, r->granted_ppm);
	if (r->stat_fd >= 0)
		close(r->stat_fd);
	if (r->idle_fd >= 0)
		close(r->idle_fd);
	qos_sys_drop_kept_fd(&r->procs_fd, &mgr->kept_fds_budget);
	int err = r->has_group ? qos_cgroup_group_remove(&mgr->cg, r->group) : 0;
	if (err)
		qos_reconcile_failed(mgr, r->name, r->group, err);
	qos_emit(mgr, QOS_EVENT_RESERVE_DELETED, r->name, 0, 0, 0, NULL);
	qos_optimistic_destroy(r);
	qos_rtguard_destroy(r);
	free(r->members);
	free(r);
}

bool qos_reserve_set(struct qos_manager *mgr, const char *name, const struct qos_params *params,
	bool create, bool modify, char *err, size_t err_len)
{
	char why[256];
	mgr->last_refusal = QOS_REFUSAL_ERROR;
	if (!qos_name_valid(name, err, err_len))
		return false;
	struct qos_params p = *params;
	if (!qos_params_normalize(&p, err, err_len))
		return false;
	struct qos_reserve *r = qos_find_reserve(mgr, name);
	if (!r) {
		if (!create) {
			snprintf(err, err_len, "no reserve named '%s'", name);
			return false;
		}
		if (qos_name_is_auto(name)) {
			snprintf(err, err_len, "'%s' is an automatic reserve name", name);
			return false;
		}
		if (!reserve_new(mgr, name, &p)) {
			snprintf(err, err_len, "out of memory");
			return false;
		}
		return true;
	}
	if (!modify) {
		snprintf(err, err_len, "reserve '%s' already exists", name);
		return false;
	}
	if (r->n_members && qos_policy_is_rt(p.policy) && !qos_policy_is_rt(r->params.policy) &&
			!rt_allowed(mgr, qos_sys_now_us(), why, sizeof(why))) {
		snprintf(err, err_len, "cannot make '%s' real-time: %s", name, why);
		qos_emit(mgr, QOS_EVENT_ADMISSION_REFUSED, name, 0, 0, 0, "%s", why);
		return false;
	}
	uint64_t new_ppm = p.policy == QOS_POLICY_QOS ? qos_params_util_ppm(&p) : 0;
	if (r->granted) {
		if (!qos_admission_resize(&mgr->adm, r->granted_ppm, new_ppm, why, sizeof(why))) {
			snprintf(err, err_len, "cannot grow '%s': %s", name, why);
			mgr->last_refusal = QOS_REFUSAL_CAPACITY;
			return false;
		}
		r->granted_ppm = new_ppm;
		r->granted = new_ppm > 0;
	} else if (new_ppm && r->n_members) {
		if (!qos_admission_request(&mgr->adm, new_ppm, why, sizeof(why))) {
			snprintf(err, err_len, "cannot make '%s' a qos reserve: %s", name, why);
			mgr->last_refusal = QOS_REFUSAL_CAPACITY;
			qos_emit(mgr, QOS_EVENT_ADMISSION_REFUSED, name, 0, 0, 0, "%s", why);
			return false;
		}
		r->granted = true;
		r->granted_ppm = new_ppm;
		qos_emit(mgr, QOS_EVENT_ADMISSION_GRANTED, name, 0, 0, 0, NULL);
	}
	/*
	 * A real-time group keeps its kernel window across the change when the
	 * period stays: the kernel's timer runs on in its phase, so the
	 * manager's period must too, or the two drift apart (the kernel
	 * throttling the members while the manager still counts slice left).
	 * Otherwise the period starts now, and the clocks are read before
	 * leaving the fallback gives a real-time member the CPU
	 * (qos_manager_join says why).
	 */
	uint64_t now = qos_sys_now_us();
	const struct qos_police *pol = &r->police;
	bool keep_phase = r->n_members && r->mgr->cg.rt_group &&
		qos_policy_is_rt(r->params.policy) && r->params.policy != QOS_POLICY_QOS &&
		qos_policy_is_rt(p.policy) && p.policy != QOS_POLICY_QOS &&
		r->params.period_us == p.period_us && pol->period_us == p.period_us &&
		now < pol->period_start_us + pol->period_us;
	uint64_t base = keep_phase ? pol->base_own_us : own_cpu_us(r);
	leave_fallback(r);
	if (p.policy != QOS_POLICY_QOS)
		r->fb_applied = false; /* apply_threads takes every thread to the new policy */
	r->params = p;
	r->police.in_fallback = false;
	qos_police_set_limit(&r->police, p.period_us, p.slice_us,
		keep_phase ? pol->period_start_us : period_origin(r, now), base);
	r->timers_armed = false;
	apply_group(r);
	apply_threads(r, p.policy);
	qos_root_weight_update(mgr);
	qos_emit(mgr, QOS_EVENT_PARAMS_CHANGED, name, 0, 0, 0, NULL);
	qos_reserve_check(r, now);
	qos_manager_rearm(mgr);
	return true;
}

bool qos_reserve_delete(struct qos_manager *mgr, const char *name, char *err, size_t err_len)
{
	struct qos_reserve *r = qos_find_reserve(mgr, name);
	if (!r) {
		snprintf(err, err_len, "no reserve named '%s'", name);
		return false;
	}
	if (r->n_members) {
		snprintf(err, err_len, "reserve '%s' still has %zu member(s)", name, r->n_members);
		return false;
	}
	qos_reserve_free(r);
	return true;
}

static void restore_member(struct qos_member *m)
{
	struct qos_manager *mgr = m->reserve->mgr;
	/* Back to time-sharing first, so a moved RT thread never lands in a
	 * group without RT bandwidth. */
	struct qos_params p;
	qos_params_init(&p);
	struct thread_ctx c = { .r = m->reserve, .pid = m->pid, .policy = QOS_POLICY_OTHER,
		.release = true };
	struct qos_params saved = m->reserve->params;
	m->reserve->params.nice = m->orig_nice;
	qos_member_for_each_thread(m->reserve->mgr, m, set_one, &c);
	m->reserve->params = saved;
	if (m->rttime_bounded)
		qos_rtguard_restore_limit(mgr, m->reserve->name, m->pid, m->old_rt_soft,
			m->old_rt_hard);
	qos_cgroup_restore(&mgr->cg, m->pid, m->tid, m->tid == 0, m->orig_v2, m->orig_cpu);
}

static bool rename_auto(struct qos_reserve *r, pid_t new_owner)
{
	char name[QOS_NAME_MAX + 1], old[QOS_NAME_MAX + 1];
	snprintf(name, sizeof(name), QOS_AUTO_PREFIX "%d", new_owner);
	snprintf(old, sizeof(old), "%s", r->name);
	/* The group keeps its directory name: cgroup2 cannot rename groups. */
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->owner = new_owner;
	qos_emit(r->mgr, QOS_EVENT_RESERVE_RENAMED, r->name, new_owner, 0, 0, "%s", old);
	return true;
}

void qos_member_remove(struct qos_member *m, bool alive, bool exited)
{
	struct qos_reserve *r = m->reserve;
	struct qos_manager *mgr = r->mgr;
	if (m->pidfd >= 0) {
		epoll_ctl(mgr->epoll_fd, EPOLL_CTL_DEL, m->pidfd, NULL);
		close(m->pidfd);
	}
	if (m->tid) {
		uint64_t v;
		if (qos_sys_thread_cpu_us(m->pid, m->tid, &v) && v >= m->cpu_base_us)
			r->retired_us += v - m->cpu_base_us;
	}
	qos_optimistic_forget(r, m->pid, m->tid);
	if (m->has_cpu_timer)
		qos_cputimer_delete(m->cpu_timer);
	r->timers_armed = false; /* the shares change */
	if (alive && member_alive(m))
		restore_member(m);
	if (r->has_group)
		qos_journal_forget(&mgr->cg, r->group, m->pid, m->tid);
	for (size_t i = 0; i < r->n_members; i++) {
		if (r->members[i] == m) {
			memmove(&r->members[i], &r->members[i + 1],
				(r->n_members - i - 1) * sizeof(*r->members));
			r->n_members--;
			break;
		}
	}
	qos_emit(mgr, exited ? QOS_EVENT_MEMBER_EXITED : QOS_EVENT_MEMBER_LEFT, r->name, m->pid,
		m->tid, 0, NULL);
	pid_t gone = m->pid;
	qos_member_close_task_dir(mgr, m);
	free(m);
	qos_root_weight_update(mgr);

	if (r->n_members == 0) {
		/* Guarantees are held only while someone uses them (thesis 3.7.2). */
		if (r->granted) {
			qos_admission_release(&mgr->adm, r->granted_ppm);
			r->granted = false;
			r->granted_ppm = 0;
		}
		r->fb_applied = false;
		r->next_check_us = UINT64_MAX;
		if (r->has_group)
			qos_cgroup_freeze(&mgr->cg, r->group, false);
		if (r->is_auto)
			qos_reserve_free(r);
	} else if (r->is_auto && gone == r->owner) {
		/* A daemon that forks and exits keeps the reserve set up for it. */
		rename_auto(r, r->members[0]->pid);
	}
}

static bool admit(struct qos_reserve *r, char *err, size_t err_len)
{
	struct qos_manager *mgr = r->mgr;
	uint64_t now = qos_sys_now_us();
	if (qos_policy_is_rt(r->params.policy) && !rt_allowed(mgr, now, err, err_len)) {
		qos_emit(mgr, QOS_EVENT_ADMISSION_REFUSED, r->name, 0, 0, 0, "%s", err);
		return false;
	}
	if (r->params.policy != QOS_POLICY_QOS || r->granted)
		return true;
	char why[256];
	uint64_t ppm = qos_params_util_ppm(&r->params);
	if (!qos_admission_request(&mgr->adm, ppm, why, sizeof(why))) {
		snprintf(err, err_len, "reserve '%s' refused: %s", r->name, why);
		mgr->last_refusal = QOS_REFUSAL_CAPACITY;
		qos_emit(mgr, QOS_EVENT_ADMISSION_REFUSED, r->name, 0, 0, 0, "%s", why);
		return false;
	}
	r->granted = true;
	r->granted_ppm = ppm;
	qos_emit(mgr, QOS_EVENT_ADMISSION_GRANTED, r->name, 0, 0, 0, "%.1f%% of a CPU",
		ppm / 1e4);
	return true;
}

static bool group_taken(struct qos_manager *mgr, const char *group)
{
	/* Nor a group that refused removal: its tasks are not this reserve's. */
	return qos_find_reserve_by_group(mgr, group) ||
		(mgr->stale_groups && qos_cgroup_group_exists(&mgr->cg, group));
}

static bool ensure_group(struct qos_reserve *r, char *err, size_t err_len)
{
	if (r->has_group)
		return true;
	/*
	 * The directory is named after the reserve, unless a renamed automatic
	 * reserve still holds that directory under its old name, or a group
	 * of that name waits to be removed.
	 */
	snprintf(r->group, sizeof(r->group), "%s", r->name);
	for (unsigned n = 1; group_taken(r->mgr, r->group); n++)
		snprintf(r->group, sizeof(r->group), "%s~%u", r->name, n);
	if (!qos_cgroup_group_create(&r->mgr->cg, r->group)) {
		snprintf(err, err_len, "cannot create cgroup for '%s': %s", r->name, strerror(errno));
		return false;
	}
	r->has_group = true;
	apply_group(r);
	return true;
}

/*
 * Writes where a joining task comes from onto its group (journal.h), so that
 * an instance started after a crash can send it back.  A failure is reported
 * once per manager: the join goes ahead, and reconciliation falls back to
 * another member's origin, or the top of the tree.
 */
static void journal_origin(struct qos_reserve *r, const struct qos_member *m)
{
	struct qos_manager *mgr = r->mgr;
	struct qos_journal_entry *e = calloc(1, sizeof(*e));
	int err = -ENOMEM;
	if (e) {
		e->start_time = m->start_time;
		e->nice = m->orig_nice;
		e->rt_soft = e->rt_hard = (uint64_t)RLIM_INFINITY;
		qos_sys_get_rttime(m->pid, &e->rt_soft, &e->rt_hard);
		snprintf(e->v2, sizeof(e->v2), "%s", m->orig_v2);
		snprintf(e->cpu, sizeof(e->cpu), "%s", m->orig_cpu);
		err = qos_journal_record(&mgr->cg, r->group, m->pid, m->tid, e);
		free(e);
	}
	if (err && !mgr->journal_warned) {
		mgr->journal_warned = true;
		qos_emit(mgr, QOS_EVENT_ERROR, r->name, m->pid, m->tid, 0,
			"cannot record where %d came from (%s): after a crash it would return "
			"to another member's cgroup", m->tid ? m->tid : m->pid, strerror(-err));
	}
}

static bool add_member(struct qos_reserve *r, struct qos_member *m)
{
	struct qos_member **grown = qos_array_room(r->members, &r->cap_members, r->n_members,
		sizeof(*grown));
	if (!grown)
		return false;
	r->members = grown;
	r->members[r->n_members++] = m;
	r->timers_armed = false; /* the shares change */
	return true;
}

#define ADOPT_MAX 256

struct adopt_ctx {
	pid_t pids[ADOPT_MAX];
	size_t n;
};

static void collect_pid(pid_t pid, void *data)
{
	struct adopt_ctx *c = data;
	if (c->n < ADOPT_MAX)
		c->pids[c->n++] = pid;
}

static struct qos_member *process_member(struct qos_reserve *r, pid_t pid)
{
	for (size_t i = 0; i < r->n_members; i++) {
		if (r->members[i]->tid == 0 && (!pid || r->members[i]->pid == pid))
			return r->members[i];
	}
	return NULL;
}

static bool is_process_member(pid_t pid, void *data)
{
	return process_member(data, pid) != NULL;
}

/* The process member a new process in the group descends from (or the first). */
static struct qos_member *origin_member(struct qos_reserve *r, pid_t pid)
{
	pid_t ancestor = qos_sys_find_ancestor(pid, is_process_member, r);
	return process_member(r, ancestor);
}

static void evict(struct qos_reserve *r, pid_t pid, const struct qos_member *origin)
{
	struct thread_ctx c = { .r = r, .pid = pid, .policy = QOS_POLICY_OTHER, .release = true };
	struct qos_params saved = r->params;
	r->params.nice = origin->orig_nice;
	qos_sys_for_each_thread(pid, set_one, &c);
	r->params = saved;
	qos_cgroup_restore(&r->mgr->cg, pid, 0, true, origin->orig_v2, origin->orig_cpu);
}

static bool adopt(struct qos_reserve *r, pid_t pid, const struct qos_member *origin)
{
	struct qos_manager *mgr = r->mgr;
	struct qos_member *m = calloc(1, sizeof(*m));
	if (!m)
		return false;
	m->reserve = r;
	m->pid = pid;
	m->task_fd = -1;
	m->start_time = qos_sys_start_time(pid, 0);
	m->pidfd = m->start_time ? qos_sys_pidfd_open(pid, false) : -1;
	/* Leaving takes it back to where its ancestor came from. */
	snprintf(m->orig_v2, sizeof(m->orig_v2), "%s", origin->orig_v2);
	snprintf(m->orig_cpu, sizeof(m->orig_cpu), "%s", origin->orig_cpu);
	m->orig_nice = origin->orig_nice;
	if (m->pidfd < 0 || !member_alive(m) || !add_member(r, m)) {
		if (m->pidfd >= 0)
			close(m->pidfd);
		qos_member_close_task_dir(mgr, m);
		free(m);
		return false;
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = m };
	epoll_ctl(mgr->epoll_fd, EPOLL_CTL_ADD, m->pidfd, &ev);
	/* Its own record: the ancestor's may be gone (with it) by a crash. */
	journal_origin(r, m);
	if (qos_policy_is_rt(r->params.policy) && r->params.policy != QOS_POLICY_QOS &&
			qos_sys_bound_rttime(pid, mgr->config.rttime_us, &m->old_rt_soft,
				&m->old_rt_hard) == 0)
		m->rttime_bounded = true;
	qos_emit(mgr, QOS_EVENT_MEMBER_JOINED, r->name, pid, 0, 0, "inherited from %d",
		origin->pid);
	unsigned n = (unsigned)count_threads(r);
	r->police.parallel = n < mgr->adm.ncpus ? n : mgr->adm.ncpus;
	return true;
}

/*
 * A member's children start in its cgroup (the kernel puts them there) but
 * not in the reserve: with reset-on-fork they do not even keep a real-time
 * policy.  With inherit they become members like their parent (thesis:
 * children join the parent's reserve); without, they go back to where the
 * parent came from.  Found at each housekeeping pass.
 */
/* The group's processes, through its cgroup.procs kept open within the budget. */
static void list_group(struct qos_reserve *r, struct adopt_ctx *c)
{
	struct qos_manager *mgr = r->mgr;
	if (r->procs_fd < 0 && mgr->kept_fds_budget > 0) {
		r->procs_fd = qos_cgroup_open_procs(&mgr->cg, r->group);
		if (r->procs_fd >= 0)
			mgr->kept_fds_budget--;
	}
	if (r->procs_fd >= 0) {
		if (qos_cgroup_for_each_pid_fd(r->procs_fd, collect_pid, c) >= 0)
			return;
		/* The group went away under us: open it again next time. */
		qos_sys_drop_kept_fd(&r->procs_fd, &mgr->kept_fds_budget);
		c->n = 0;
	}
	qos_cgroup_for_each_pid(&mgr->cg, r->group, false, collect_pid, c);
}

static void adopt_children(struct qos_reserve *r)
{
	if (!r->has_group || r->n_members == 0)
		return;
	struct adopt_ctx c = { .n = 0 };
	list_group(r, &c);
	bool adopted = false;
	for (size_t i = 0; i < c.n; i++) {
		pid_t pid = c.pids[i];
		if (qos_find_member(r->mgr, pid, 0) || find_thread_member(r->mgr, pid, NULL))
			continue;
		struct qos_member *origin = origin_member(r, pid);
		if (!origin)
			continue;
		if (r->params.inherit && adopt(r, pid, origin))
			adopted = true;
		else
			evict(r, pid, origin);
	}
	if (adopted)
		qos_root_weight_update(r->mgr);
}

/*
 * A member forked or started a thread: the part of a housekeeping pass that
 * concerns new tasks (adopt or send back children, give threads their
 * policy), now.  The 1 s pass does the rest (the optimistic repair, which
 * reads every thread's /proc/TID/sched, and the RLIMIT_RTTIME guard, which
 * takes a new real-time thread as real-time since up to one pass ago).  It
 * reads the whole group, so a burst (a build, a shell loop, a thread pool
 * starting) gets one such pass per QOS_FORK_PASS_US.
 */
static void member_changed(struct qos_reserve *r)
{
	struct qos_manager *mgr = r->mgr;
	uint64_t now = qos_sys_now_us();
	if (now < r->fork_pass_us + QOS_FORK_PASS_US) {
		r->fork_pending = true;
		qos_manager_rearm(mgr);
		return;
	}
	qos_reserve_fork_pass(r, now);
	qos_manager_rearm(mgr);
}

void qos_manager_forked(struct qos_manager *mgr, pid_t parent, pid_t child)
{
	struct qos_member *m = qos_find_member(mgr, parent, 0);
	if (!m || parent == child || qos_find_member(mgr, child, 0))
		return;
	member_changed(m->reserve);
}

void qos_manager_thread_started(struct qos_manager *mgr, pid_t pid, pid_t tid)
{
	struct qos_member *m = qos_find_member(mgr, pid, 0);
	if (!m || pid == tid)
		return;
	member_changed(m->reserve);
}

void qos_reserve_fork_pass(struct qos_reserve *r, uint64_t now_us)
{
	r->fork_pending = false;
	r->fork_pass_us = now_us;
	adopt_children(r);
	apply_active(r);
	qos_reserve_check(r, now_us);
}

static void release_if_unused(struct qos_reserve *r)
{
	if (r->n_members == 0 && r->granted) {
		qos_admission_release(&r->mgr->adm, r->granted_ppm);
		r->granted = false;
		r->granted_ppm = 0;
	}
}

bool qos_manager_join(struct qos_manager *mgr, const char *name, pid_t pid, pid_t tid,
	char *err, size_t err_len)
{
	mgr->last_refusal = QOS_REFUSAL_ERROR;
	struct qos_reserve *r = qos_find_reserve(mgr, name);
	if (!r && mgr->rules) {
		const struct qos_reserve_def *def = qos_rules_find_reserve(mgr->rules, name);
		if (def && !qos_reserve_set(mgr, name, &def->params, true, false, err, err_len))
			return false;
		r = qos_find_reserve(mgr, name);
	}
	if (!r) {
		snprintf(err, err_len, "no reserve named '%s'", name);
		return false;
	}
	struct qos_member *m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(err, err_len, "out of memory");
		return false;
	}
	m->pid = pid;
	m->tid = tid == pid ? 0 : tid;
	m->pidfd = -1;
	m->task_fd = -1;
	m->start_time = qos_sys_start_time(pid, m->tid);
	if (!m->start_time) {
		snprintf(err, err_len, "no such %s %d", m->tid ? "thread" : "process",
			m->tid ? m->tid : pid);
		goto err_free;
	}
	if (m->tid && mgr->cg.layout != QOS_CG_HYBRID && r->params.policy == QOS_POLICY_PAUSE) {
		snprintf(err, err_len, "pause freezes whole processes; join the process instead");
		goto err_free;
	}
	m->pidfd = qos_sys_pidfd_open(m->tid ? m->tid : pid, m->tid != 0);
	if (m->pidfd < 0) {
		snprintf(err, err_len, "pidfd_open(%d): %s", m->tid ? m->tid : pid, strerror(errno));
		goto err_free;
	}
	bool first = r->n_members == 0;
	if (first && !admit(r, err, err_len))
		goto err_close;
	if (!ensure_group(r, err, err_len))
		goto err_admit;

	/* Joining implies leaving: a task is in at most one reserve. */
	struct qos_member *old = qos_find_member(mgr, pid, m->tid);
	if (old == NULL && m->tid == 0) {
		/* Threads of this process joined individually are folded into it. */
		struct qos_member *t;
		while ((t = find_thread_member(mgr, pid, r)))
			qos_member_remove(t, true, false);
	}
	if (old) {
		if (old->reserve == r) {
			close(m->pidfd);
			qos_member_close_task_dir(mgr, m);
			free(m);
			return true;
		}
		/* Keep the original placement, not the reserve it is leaving. */
		snprintf(m->orig_v2, sizeof(m->orig_v2), "%s", old->orig_v2);
		snprintf(m->orig_cpu, sizeof(m->orig_cpu), "%s", old->orig_cpu);
		m->orig_nice = old->orig_nice;
		qos_member_remove(old, true, false);
	} else {
		errno = 0;
		int nice = getpriority(PRIO_PROCESS, (id_t)(m->tid ? m->tid : pid));
		m->orig_nice = errno ? 0 : nice;
	}
	if (!m->orig_v2[0] && !qos_cgroup_current(&mgr->cg, pid, m->tid, m->orig_v2,
			sizeof(m->orig_v2), m->orig_cpu, sizeof(m->orig_cpu))) {
		snprintf(err, err_len, "cannot read the cgroup of %d", pid);
		goto err_admit;
	}
	/* Before the move: a crash right after it must still find the way back. */
	journal_origin(r, m);
	int e = m->tid ? qos_cgroup_attach_thread(&mgr->cg, r->group, m->tid)
		: qos_cgroup_attach_process(&mgr->cg, r->group, pid);
	if (e < 0 && !(m->tid && e == -ENOTSUP)) {
		snprintf(err, err_len, "cannot move %d into '%s': %s", m->tid ? m->tid : pid,
			r->name, strerror(-e));
		goto err_restore;
	}
	/* The pid may have been recycled while we moved it: check again. */
	if (!member_alive(m)) {
		snprintf(err, err_len, "%d exited while joining", pid);
		goto err_restore;
	}
	m->reserve = r;
	if (!add_member(r, m)) {
		snprintf(err, err_len, "out of memory");
		goto err_restore;
	}
	if (qos_policy_is_rt(r->params.policy) && r->params.policy != QOS_POLICY_QOS &&
			qos_sys_bound_rttime(pid, mgr->config.rttime_us, &m->old_rt_soft,
				&m->old_rt_hard) == 0)
		m->rttime_bounded = true;
	if (m->tid)
		qos_sys_thread_cpu_us(pid, m->tid, &m->cpu_base_us);
	else
		qos_sys_process_clock_us(pid, &m->clock_base_us);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = m };
	epoll_ctl(mgr->epoll_fd, EPOLL_CTL_ADD, m->pidfd, &ev);

	/*
	 * The period starts, and the clocks are read, before the member gets its
	 * policy: a real-time member on the manager's CPU runs from that moment,
	 * and the manager with it only once the kernel throttles the member.
	 * Started after, the period began that much late, what the member ran
	 * meanwhile was counted as before the join, and the kernel's real-time
	 * window stayed that far ahead of the manager's periods for good (the
	 * member throttled in half of every period instead of running on as
	 * its fallback: test_fifo_safety_limit_runs_on_as_other).
	 */
	uint64_t now = qos_sys_now_us();
	if (first) {
		qos_police_start(&r->police, r->params.period_us, r->params.slice_us,
			period_origin(r, now), own_cpu_us(r));
		r->police.parallel = 1;
	}
	enum qos_policy active = r->police.in_fallback && r->fb_applied &&
		r->params.fallback != QOS_POLICY_PAUSE ? r->params.fallback : r->params.policy;
	/* Deadline runtimes are per thread: re-split over everyone when one joins. */
	int perr = active == QOS_POLICY_QOS ? apply_threads(r, active)
		: apply_member(r, m, active, 0);
	if (perr && qos_policy_is_rt(active)) {
		snprintf(err, err_len, "'%s' refused by the kernel: %s; running as other",
			r->name, policy_error(active, perr));
		/* EBUSY: the kernel's deadline bound; EPERM for fifo/rr: no RT group
		 * bandwidth left.  Both are capacity, not permission. */
		mgr->last_refusal = perr == -EBUSY || (active != QOS_POLICY_QOS && perr == -EPERM) ?
			QOS_REFUSAL_CAPACITY : QOS_REFUSAL_ERROR;
		qos_emit(mgr, QOS_EVENT_ADMISSION_REFUSED, r->name, pid, m->tid, 0, "%s", err);
		qos_member_remove(m, true, false);
		return false;
	}
	if (m->tid == 0 || count_threads(r) > 1) {
		unsigned n = (unsigned)count_threads(r);
		r->police.parallel = n < mgr->adm.ncpus ? n : mgr->adm.ncpus;
	}
	qos_root_weight_update(mgr);
	qos_emit(mgr, QOS_EVENT_MEMBER_JOINED, r->name, pid, m->tid, 0, "%s",
		qos_policy_name(r->params.policy));
	qos_reserve_check(r, now);
	qos_manager_rearm(mgr);
	return true;

err_restore:
	qos_cgroup_restore(&mgr->cg, pid, m->tid, m->tid == 0, m->orig_v2, m->orig_cpu);
	qos_journal_forget(&mgr->cg, r->group, pid, m->tid);
err_admit:
	release_if_unused(r);
err_close:
	close(m->pidfd);
err_free:
	qos_member_close_task_dir(mgr, m);
	free(m);
	return false;
}

bool qos_manager_leave(struct qos_manager *mgr, pid_t pid, pid_t tid)
{
	struct qos_member *m = qos_find_member(mgr, pid, tid == pid ? 0 : tid);
	if (!m)
		return false;
	qos_member_remove(m, true, false);
	qos_manager_rearm(mgr);
	return true;
}

bool qos_manager_set_class(struct qos_manager *mgr, pid_t pid, const struct qos_params *params,
	char *err, size_t err_len)
{
	char name[QOS_NAME_MAX + 1];
	snprintf(name, sizeof(name), QOS_AUTO_PREFIX "%d", pid);
	mgr->last_refusal = QOS_REFUSAL_ERROR;
	struct qos_params p = *params;
	if (!qos_params_normalize(&p, err, err_len))
		return false;
	struct qos_reserve *r = qos_find_reserve(mgr, name);
	bool created = false;
	if (r) {
		if (!qos_reserve_set(mgr, name, &p, false, true, err, err_len))
			return false;
	} else {
		r = reserve_new(mgr, name, &p);
		if (!r) {
			snprintf(err, err_len, "out of memory");
			return false;
		}
		r->is_auto = true;
		r->owner = pid;
		created = true;
	}
	if (qos_manager_join(mgr, name, pid, 0, err, err_len))
		return true;
	/* A refused join may already have dropped the empty automatic
	 * reserve: look it up again rather than trust r. */
	r = qos_find_reserve(mgr, name);
	if (created && r && r->n_members == 0)
		qos_reserve_free(r);
	return false;
}

bool qos_manager_bill(struct qos_manager *mgr, const char *name, uint64_t usec)
{
	struct qos_reserve *r = qos_find_reserve(mgr, name);
	if (!r)
		return false;
	qos_police_bill(&r->police, usec);
	qos_reserve_check(r, qos_sys_now_us());
	qos_manager_rearm(mgr);
	return true;
}

bool qos_manager_bill_pid(struct qos_manager *mgr, pid_t pid, uint64_t usec)
{
	struct qos_member *m = qos_find_member(mgr, pid, 0);
	if (!m) {
		for (struct qos_reserve *r = mgr->reserves; r && !m; r = r->next) {
			for (size_t i = 0; i < r->n_members && !m; i++) {
				if (r->members[i]->pid == pid)
					m = r->members[i];
			}
		}
	}
	return m && qos_manager_bill(mgr, m->reserve->name, usec);
}

void qos_demote_all_rt(struct qos_manager *mgr)
{
	for (struct qos_reserve *r = mgr->reserves; r; r = r->next) {
		if (!qos_policy_is_rt(r->params.policy))
			continue;
		struct qos_params p = r->params;
		p.policy = QOS_POLICY_OTHER;
		p.fallback = QOS_POLICY_OTHER;
		p.period_us = p.slice_us = 0;
		char err[128];
		qos_reserve_set(mgr, r->name, &p, false, true, err, sizeof(err));
		qos_emit(mgr, QOS_EVENT_WATCHDOG, r->name, 0, 0, 0,
			"normal tasks starved: demoted to other");
	}
}
