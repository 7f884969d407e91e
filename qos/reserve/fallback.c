/*
 * Policing one reserve: its CPU time, the police state machine run on it,
 * the switch to the fallback policy and back, the members' CPU timers that
 * tell the manager when to look, and billed time (docs/qos-design.md).
 */
#include <errno.h>
#include <string.h>

#include "qos/kernel/cputimer.h"
#include "qos/policy/core.h"
#include "qos/reserve/fallback.h"
#include "qos/reserve/optimistic.h"
#include "qos/reserve/reserve.h"
#include "qos/reserve/rtguard.h"
#include "qos/reserve/threads.h"
#include "qos/kernel/sys.h"

/*
 * qos falling back to other or idle: the manager moves the deadline threads
 * out at the overrun (docs/qos-design.md).  Where the kernel does not show their
 * deadline state it cannot do that safely, and the reserve stays hard.
 */
bool qos_fallback_optimistic(const struct qos_reserve *r) {
	return r->params.policy == QOS_POLICY_QOS && r->mgr->dl.optimistic &&
			(r->params.fallback == QOS_POLICY_OTHER || r->params.fallback == QOS_POLICY_IDLE);
}

/* Whether the kernel itself stops the reserve at its limit (no freeze needed). */
static bool kernel_caps(const struct qos_reserve *r) {
	const struct qos_cgroup *cg = &r->mgr->cg;
	switch (r->params.policy) {
	case QOS_POLICY_QOS:
		return true; /* SCHED_DEADLINE throttles at the runtime */
	case QOS_POLICY_OTHER:
	case QOS_POLICY_IDLE:
		return cg->cpu_ctl && qos_params_kernel_ceiling(&r->params);
	case QOS_POLICY_FIFO:
	case QOS_POLICY_RR:
		return cg->rt_group;
	case QOS_POLICY_PAUSE:
		return true;
	}
	return false;
}

static bool has_thread_members(const struct qos_reserve *r) {
	for (size_t i = 0; i < r->n_members; i++) {
		if (r->members[i]->tid) {
			return true;
		}
	}
	return false;
}

/*
 * Whether the kernel holds the members to the limit by itself, so that an
 * overrun of their own time needs no act of the manager (billed time still
 * does: the kernel never sees it).
 */
static bool kernel_enforced(const struct qos_reserve *r) {
	const struct qos_params *p = &r->params;
	if (!qos_params_has_limit(p)) {
		return false;
	}
	if (p->fallback == QOS_POLICY_PAUSE) {
		return kernel_caps(r);
	}
	if (p->fallback == p->policy) {
		return true; /* nothing to switch */
	}
	/* qos where the kernel does not show deadline state stays hard */
	return p->policy == QOS_POLICY_QOS && !qos_fallback_optimistic(r);
}

/*
 * Whether the manager looks at the reserve's periods as they pass: when an
 * overrun needs it to act (switch policies or freeze), or someone watches
 * for the events (qos_manager_watch_overruns).  Otherwise the kernel
 * enforces the limit by itself and the manager only keeps the books, which
 * it does lazily (see qos_fallback_check).
 */
static bool manager_polices(const struct qos_reserve *r) {
	if (!qos_params_has_limit(&r->params)) {
		return false;
	}
	if (r->police.billed_us > 0 || r->police.debt_us > 0 || r->fb.applied || r->fb.watched) {
		return true; /* billed time (or what it left owed) is invisible to the kernel */
	}
	/* Adaptation wants one sample per period, not an average over a second. */
	if (qos_params_adaptive(&r->params)) {
		return true;
	}
	return !kernel_enforced(r);
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
static bool exact_clocks(const struct qos_reserve *r) {
	return qos_fallback_optimistic(r) ||
			(r->mgr->cputimer_fd >= 0 && qos_params_has_limit(&r->params));
}

/*
 * Whether the kernel tells the manager when the reserve's slice may be used
 * up (cputimer.h) instead of the manager polling for it.  Timers exist on
 * processes only.
 */
static bool notified(const struct qos_reserve *r) {
	return r->mgr->cputimer_fd >= 0 && r->n_members && !r->timer.refused && manager_polices(r) &&
			!has_thread_members(r);
}

/*
 * A check that finds no more than the guard (timer_guard_us, below) left
 * does not switch there and then: it comes back when the slice, used on at
 * the rate the members run, is down to this much (police.h's switch_at_us): more than
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
 *  - optimistic qos: the deadline runtime (see timer_guard_us, below);
 *  - fifo or rr with a fallback other than pause: the group's
 *    cpu.rt_runtime_us.  At a tick that finds both used up, the throttle
 *    comes first, and the thread does not even take the CPU-timer notice
 *    then: the kernel delivers it as task work on the way back to user
 *    space, which a throttled thread takes only when the group's next
 *    period starts.  When the reserve's period boundary falls in that gap,
 *    the notice arrives in the next period every time and the fallback never
 *    happens: the kernel pauses the thread instead (1 test run in 20 here).
 */
static bool races_kernel_throttle(const struct qos_reserve *r) {
	const struct qos_params *p = &r->params;
	return qos_fallback_optimistic(r) ||
			(qos_policy_is_rt(p->policy) && r->mgr->cg.rt_group &&
					p->fallback != QOS_POLICY_PAUSE && p->fallback != p->policy &&
					qos_params_has_limit(p));
}

/*
 * How much of the slice a reserve the kernel also throttles
 * (races_kernel_throttle, above) gives up to leave its class in time; told
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
 * throttled by the kernel and waits out its debt (docs/qos-design.md).
 *
 * A reserve the kernel enforces by itself (kernel_enforced) switches
 * nothing, but is in the same race for the notice: at a tick that uses up
 * its window the kernel throttles the members, and the timer's notice waits
 * with them for the next window, in the manager's next period (a watched
 * 30% qos reserve with a busy member saw no overrun in 15 periods).  So
 * its timers fire a tick early too, and the check planned from there
 * (switch_at_us, with no margin) declares the overrun once the slice is
 * used, counting what the members ran since the tick (projected_us).
 * Other reserves need no guard: the kernel's own debt rules make up for a
 * late switch.
 */
static uint64_t timer_guard_us(const struct qos_reserve *r) {
	if (!races_kernel_throttle(r) && !kernel_enforced(r)) {
		return 0;
	}
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
static void note_running(pid_t tid, void *data) {
	struct running_ctx *c = data;
	if (!c->running && qos_optimistic_thread_state(c->r, c->pid, tid) == 'R') {
		c->running = true;
	}
}

static bool members_running(struct qos_reserve *r) {
	struct running_ctx c = { .r = r };
	for (size_t i = 0; i < r->n_members && !c.running; i++) {
		struct qos_member *m = r->members[i];
		c.pid = m->pid;
		qos_threads_for_each(r->mgr, m, note_running, &c);
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
static uint64_t projected_us(struct qos_reserve *r, uint64_t own, uint64_t now_us) {
	if (own != r->timer.fresh_own_us || r->timer.fresh_at_us == 0) {
		r->timer.fresh_own_us = own;
		r->timer.fresh_at_us = now_us;
		return 0;
	}
	uint64_t dt = now_us - r->timer.fresh_at_us;
	if (!r->police.early_us || r->police.in_fallback || dt == 0 || dt > r->mgr->tick_us ||
			!members_running(r)) {
		return 0;
	}
	return dt * (r->police.parallel ? r->police.parallel : 1);
}

/*
 * other -> idle where the group's cpu.idle alone does it: the group is the
 * reserve's, so making it idle against everything outside is the fallback;
 * the threads inside keep their policy, which saves a sched_setattr per
 * thread at each of up to 200 switches a second.
 */
bool qos_fallback_group_idles(const struct qos_reserve *r) {
	return r->params.policy == QOS_POLICY_OTHER && r->params.fallback == QOS_POLICY_IDLE &&
			r->mgr->cg.cpu_ctl && r->cgroup.exists && !has_thread_members(r);
}

/*
 * Where the kernel can notify, limited reserves' periods start on a common
 * grid, so the period ends of notified reserves share wake-ups.  Not where
 * the kernel keeps a window of its own on the same budget: a deadline
 * reservation starts afresh with each return (docs/qos-design.md), and a real-time
 * group's bandwidth period starts when its first thread becomes runnable
 * real-time in it, which for a new group is the member's join, just before
 * this is asked.  Out of phase, the kernel would throttle threads in
 * periods where the manager sees its slice far from used.
 */
uint64_t qos_fallback_period_origin(const struct qos_reserve *r, uint64_t now_us) {
	uint64_t period = r->params.period_us;
	if (r->mgr->cputimer_fd < 0 || !period || races_kernel_throttle(r)) {
		return now_us;
	}
	return now_us - now_us % period;
}

uint64_t qos_fallback_own_cpu_us(struct qos_reserve *r) {
	uint64_t total = r->fb.retired_us, v = 0;
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
			if (qos_sys_thread_cpu_us(m->pid, m->tid, &v) && v >= m->usage.cpu_base_us) {
				total += v - m->usage.cpu_base_us;
			}
		} else if (exact) {
			m->usage.clock_read = qos_sys_process_clock_us(m->pid, &v);
			m->usage.clock_us = v;
			if (m->usage.clock_read && v >= m->usage.clock_base_us) {
				total += v - m->usage.clock_base_us;
			}
		} else if (!group_counted) {
			/* One read covers every process member and its inheriting children. */
			if (r->cgroup.stat_fd < 0) {
				r->cgroup.stat_fd = qos_cgroup_open_stat(&r->mgr->cg, r->group);
			}
			if ((r->cgroup.stat_fd >= 0 && qos_cgroup_usage_fd(r->cgroup.stat_fd, &v)) ||
					qos_cgroup_usage_us(&r->mgr->cg, r->group, &v)) {
				total += v;
			}
			group_counted = true;
		}
	}
	return total;
}

void qos_fallback_retire_member(struct qos_reserve *r, struct qos_member *m, bool exited) {
	uint64_t v;
	if (m->tid) {
		if (qos_sys_thread_cpu_us(m->pid, m->tid, &v) && v >= m->usage.cpu_base_us) {
			r->fb.retired_us += v - m->usage.cpu_base_us;
		}
	} else if (exact_clocks(r)) {
		/* A process that exited is not read again (its pid may be reused):
		 * the last check's reading is what it ran here. */
		if (exited || !qos_sys_process_clock_us(m->pid, &v)) {
			if (!m->usage.clock_read) {
				return;
			}
			v = m->usage.clock_us;
		}
		if (v >= m->usage.clock_base_us) {
			r->fb.retired_us += v - m->usage.clock_base_us;
		}
	}
}

static void enter_fallback(struct qos_reserve *r) {
	const struct qos_params *p = &r->params;
	struct qos_cgroup *cg = &r->mgr->cg;
	if (p->fallback == QOS_POLICY_PAUSE) {
		/* Billed time is invisible to the kernel, so only then must we freeze. */
		if (!kernel_caps(r) || r->police.billed_us > 0 || r->police.debt_us > 0) {
			int e = qos_cgroup_freeze(cg, r->group, true);
			if (e < 0) {
				qos_event_emit(&r->mgr->events, QOS_EVENT_ERROR, r->name, 0, 0, 0,
						"cannot freeze at the limit: %s", strerror(-e));
			}
			/* Applied all the same: the thaw at the boundary is harmless. */
			r->fb.applied = true;
		}
		return;
	}
	if (p->fallback == p->policy) {
		return;
	}
	if (p->policy == QOS_POLICY_QOS) {
		if (qos_fallback_optimistic(r)) {
			qos_optimistic_enter(r, qos_police_period_end_us(&r->police));
			/* SCHED_IDLE threads alone would still get the group's share. */
			if (p->fallback == QOS_POLICY_IDLE && cg->cpu_ctl) {
				qos_reserve_set_group_idle(r, true);
			}
			r->fb.applied = true;
			qos_reserve_root_weight_deferred(r->mgr, true);
		}
		return;
	}
	if (r->rtg.guard) {
		qos_rtguard_switch(r, false);
	}
	r->fb.threads = !qos_fallback_group_idles(r);
	if (r->fb.threads) {
		qos_reserve_apply_threads(r, p->fallback);
	}
	if (p->fallback == QOS_POLICY_IDLE && cg->cpu_ctl) {
		qos_reserve_set_group_idle(r, true);
	}
	r->fb.applied = true;
	qos_reserve_root_weight_deferred(r->mgr, true);
}

/*
 * An optimistic reserve leaves its fallback thread by thread, each at its
 * own safe time (docs/qos-design.md); the group stays idle (for qos -> idle) until
 * the last one is back, or a waiting SCHED_IDLE thread would get the group's
 * whole share.  Returns when the threads next need the manager.
 */
static uint64_t settle_optimistic(struct qos_reserve *r, uint64_t now_us) {
	/* Only an optimistic fallback holds threads back; a repaired thread of a
	 * hard reserve returns at its 0-lag time. */
	bool overrun = r->police.in_fallback && !r->police.held;
	uint64_t due = qos_optimistic_run(r, now_us, qos_fallback_optimistic(r) && overrun);
	if (r->police.held && !qos_optimistic_any_waiting(r)) {
		/*
		 * The last thread is back in its reservation, whose period starts
		 * now (its deadline is now + period): so does the police's, and it
		 * watches the slice again from here.
		 */
		qos_police_resume(&r->police, now_us, qos_fallback_own_cpu_us(r));
		qos_event_emit(&r->mgr->events, QOS_EVENT_RESTORED, r->name, 0, 0, r->police.last_used_us,
				NULL);
		if (due > now_us + QOS_POLICE_MIN_STEP_US) {
			due = now_us + QOS_POLICE_MIN_STEP_US;
		}
	}
	if (!r->fb.applied || r->police.in_fallback || qos_optimistic_any_waiting(r)) {
		return due;
	}
	r->fb.applied = false;
	if (r->params.fallback == QOS_POLICY_IDLE && r->mgr->cg.cpu_ctl) {
		qos_reserve_set_group_idle(r, false);
	}
	qos_reserve_root_weight_deferred(r->mgr, true);
	return due;
}

void qos_fallback_leave(struct qos_reserve *r) {
	const struct qos_params *p = &r->params;
	struct qos_cgroup *cg = &r->mgr->cg;
	if (!r->fb.applied) {
		return;
	}
	if (p->policy == QOS_POLICY_QOS && p->fallback != QOS_POLICY_PAUSE) {
		settle_optimistic(r, qos_sys_now_us());
		return;
	}
	r->fb.applied = false;
	if (p->fallback == QOS_POLICY_PAUSE) {
		int e = qos_cgroup_freeze(cg, r->group, p->policy == QOS_POLICY_PAUSE);
		if (e < 0 && p->policy != QOS_POLICY_PAUSE) {
			/* Still frozen: qos_fallback_check tries again. */
			r->fb.applied = true;
			qos_event_emit(&r->mgr->events, QOS_EVENT_ERROR, r->name, 0, 0, 0,
					"cannot thaw the group after its fallback: %s", strerror(-e));
		}
		return;
	}
	if (p->fallback == QOS_POLICY_IDLE && cg->cpu_ctl) {
		qos_reserve_set_group_idle(r, p->policy == QOS_POLICY_IDLE);
	}
	/* Threads switched one by one go back one by one, even where the group
	 * alone would do now (the thread member that kept it from it left). */
	if (r->fb.threads || !qos_fallback_group_idles(r)) {
		qos_reserve_apply_threads(r, p->policy);
	}
	r->fb.threads = false;
	if (r->rtg.guard) {
		qos_rtguard_switch(r, true);
	}
	qos_reserve_root_weight_deferred(r->mgr, true);
}

static void disarm_timers(struct qos_reserve *r) {
	if (!r->timer.armed) {
		return;
	}
	for (size_t i = 0; i < r->n_members; i++) {
		if (r->members[i]->usage.has_cpu_timer) {
			qos_cputimer_arm(r->members[i]->usage.cpu_timer, 0);
		}
		r->members[i]->usage.timer_at_ns = 0;
	}
	r->timer.armed = false;
}

/* Each member's timer share of what is left of the slice less the guard (>= 1 us). */
static uint64_t timer_share_us(const struct qos_reserve *r, uint64_t used_us, uint64_t guard_us) {
	uint64_t slice = r->params.slice_us;
	uint64_t share = (used_us + guard_us < slice ? slice - used_us - guard_us : 0) / r->n_members;
	return share ? share : 1;
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
static int arm_timers(struct qos_reserve *r, uint64_t own_us, uint64_t guard_us, bool first_use) {
	uint64_t used = qos_police_used_us(&r->police);
	if (r->timer.armed && own_us == r->timer.armed_own_us && used <= r->timer.armed_used_us &&
			(r->timer.armed_first_use || !first_use)) {
		return 0;
	}
	uint64_t share = first_use ? 1 : timer_share_us(r, used, guard_us);
	r->timer.armed_first_use = first_use;
	r->timer.armed = true; /* from here on, a failure disarms what was armed */
	for (size_t i = 0; i < r->n_members; i++) {
		struct qos_member *m = r->members[i];
		int e = 0;
		if (!m->usage.has_cpu_timer) {
			if (qos_cputimer_create(m->pid, r->mgr->config.cputimer_signal, r->cookie,
						&m->usage.cpu_timer)) {
				m->usage.has_cpu_timer = true;
			} else {
				e = -errno;
			}
		}
		/* The clock as qos_fallback_own_cpu_us() just read it (notified
		 * reserves have exact clocks). */
		if (!e && !m->usage.clock_read) {
			continue; /* exiting: its pidfd says so next */
		}
		m->usage.timer_at_ns = (m->usage.clock_us + share) * 1000u;
		if (!e) {
			e = qos_cputimer_arm(m->usage.cpu_timer, m->usage.timer_at_ns);
		}
		/*
		 * A member that exited since its clock was read (reaped: ESRCH)
		 * is no refusal: its pidfd says so next, and the others stay
		 * notified.  Taken for one, the reserve was polled for good.
		 */
		if (e && qos_sys_start_time(m->pid, 0) != m->start_time) {
			continue;
		}
		if (e) {
			disarm_timers(r);
			return e;
		}
	}
	r->timer.armed_own_us = own_us;
	r->timer.armed_used_us = used;
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
static bool quiet(const struct qos_reserve *r, uint64_t own_us) {
	return own_us == r->timer.checked_own_us && qos_police_used_us(&r->police) == 0 &&
			r->police.last_used_us == 0;
}

/*
 * The first check after a boundary, of a reserve whose timers all wait
 * (none of its slice ran out, so it carries no debt into the new period):
 * the new period gives it the whole slice, so each timer is re-armed that
 * far past its process's clock, and the clock comes back with it
 * (qos_cputimer_rearm_after): a clock read fewer per member at the check
 * every busy reserve gets at every boundary.  Stores the reserve's
 * own time in *own; false, with
 * nothing read, where the new budget depends on that time or a timer had
 * fired.
 */
static bool roll_timers(struct qos_reserve *r, uint64_t now_us, uint64_t guard_us, uint64_t *own) {
	const struct qos_police *p = &r->police;
	uint64_t end = qos_police_period_end_us(p);
	if (!p->notified || !r->timer.armed || !p->period_us || p->in_fallback || p->billed_us ||
			p->debt_us || guard_us || now_us < end || now_us - end >= p->period_us) {
		return false;
	}
	uint64_t share_ns = timer_share_us(r, 0, 0) * 1000u, total = r->fb.retired_us;
	for (size_t i = 0; i < r->n_members; i++) {
		struct qos_member *m = r->members[i];
		uint64_t clock_ns;
		if (!m->usage.has_cpu_timer ||
				!qos_cputimer_rearm_after(m->usage.cpu_timer, m->usage.timer_at_ns, share_ns,
						&clock_ns)) {
			/* Timers of other members may be re-armed already: arm_timers
			 * sets them all again from the clocks read the usual way. */
			m->usage.timer_at_ns = 0;
			r->timer.armed_own_us = UINT64_MAX;
			return false;
		}
		m->usage.timer_at_ns = clock_ns + share_ns;
		m->usage.clock_us = clock_ns / 1000u;
		m->usage.clock_read = true;
		if (m->usage.clock_us >= m->usage.clock_base_us) {
			total += m->usage.clock_us - m->usage.clock_base_us;
		}
	}
	/* As arm_timers would have armed them for the period's start. */
	r->timer.armed_first_use = false;
	r->timer.armed_own_us = total;
	r->timer.armed_used_us = 0;
	*own = total;
	return true;
}

/* What the police state machine is told of r now; returns its own CPU time. */
static uint64_t police_inputs(struct qos_reserve *r, uint64_t now_us, uint64_t *guard) {
	r->police.notified = notified(r);
	r->police.kernel_enforced = kernel_enforced(r);
	r->police.hold_fallback =
			qos_fallback_optimistic(r) && r->fb.applied && qos_optimistic_any_waiting(r);
	uint64_t own;
	*guard = timer_guard_us(r);
	if (!roll_timers(r, now_us, *guard, &own)) {
		own = qos_fallback_own_cpu_us(r);
	}
	r->police.early_us = r->police.notified ? *guard : 0;
	/*
	 * Only a group made idle switches at the kernel's next tick (police.h):
	 * the next tick of each CPU a member thread runs on, so up to a tick
	 * on every one of them.
	 */
	unsigned par = r->police.parallel ? r->police.parallel : 1;
	r->police.fallback_grace_us = qos_fallback_group_idles(r) ? r->mgr->tick_us * par : 0;
	r->police.running = own != r->timer.checked_own_us;
	r->police.projected_us = projected_us(r, own, now_us);
	/* With nothing to switch, the overrun comes when the slice is used. */
	r->police.margin_us = r->police.kernel_enforced ? 0 : SWITCH_MARGIN_US;
	return own;
}

/* Acts on what the police state machine decided: the switch and its event. */
static void police_act(struct qos_reserve *r, enum qos_police_transition t) {
	if (r->police.late_overrun) {
		qos_event_emit(&r->mgr->events, QOS_EVENT_OVERRUN, r->name, 0, 0, r->police.last_used_us,
				"slice of %lluus used by the end of the period",
				(unsigned long long)r->params.slice_us);
		/* Used up again at once (billed time owed): the fallback holds. */
		if (t == QOS_POLICE_NONE && r->police.in_fallback) {
			enter_fallback(r);
		}
	}
	if (t == QOS_POLICE_OVERRUN) {
		enter_fallback(r);
		qos_event_emit(&r->mgr->events, QOS_EVENT_OVERRUN, r->name, 0, 0,
				qos_police_used_us(&r->police) + r->police.projected_us,
				"slice of %lluus used, fallback %s", (unsigned long long)r->params.slice_us,
				qos_policy_name(r->params.fallback));
	} else if (t == QOS_POLICE_RESTORE) {
		qos_fallback_leave(r);
		qos_event_emit(&r->mgr->events, QOS_EVENT_RESTORED, r->name, 0, 0, r->police.last_used_us,
				NULL);
	} else if (r->fb.applied && !r->police.in_fallback && r->params.fallback == QOS_POLICY_PAUSE) {
		qos_fallback_leave(r); /* a thaw that failed */
	}
}

/* When to look at r next, and its members' CPU timers armed for it. */
static void plan_next_check(struct qos_reserve *r, uint64_t now_us, uint64_t own, uint64_t guard) {
	/*
	 * Checking a kernel-enforced reserve at every period boundary (and
	 * more often within periods) would cost the manager more than the
	 * reserve is worth: 50 reserves at 10 ms are 5000+ cpu.stat reads a
	 * second.  Such reserves are accounted at the housekeeping pass instead
	 * (per-period figures become averages over it), and again whenever they
	 * are queried or billed.
	 */
	if (!manager_polices(r) && r->fb.next_check_us < r->mgr->housekeeping_us) {
		r->fb.next_check_us = r->mgr->housekeeping_us;
	}
	int e = 0;
	bool idle = quiet(r, own);
	if (!r->police.notified || !notified(r)) {
		disarm_timers(r);
	} else if (r->police.in_fallback) {
		disarm_timers(r); /* nothing to watch until the boundary */
		/* Optimistic threads come back on times of their own (below). */
		if (!qos_fallback_optimistic(r)) {
			r->fb.next_check_us = qos_police_fallback_end_us(&r->police);
		}
	} else if ((e = arm_timers(r, own, guard, idle)) == 0) {
		/*
		 * The kernel wakes us if the slice may be gone, or for a quiet
		 * reserve as soon as a member runs; otherwise only the boundary
		 * matters.  A quiet reserve costs no wake-ups at all.
		 */
		uint64_t end = qos_police_period_end_us(&r->police);
		r->fb.next_check_us = idle ? r->mgr->housekeeping_us : end;
		/* Running out before the next tick: switch precisely (police.h). */
		if (r->police.switch_at_us && r->police.switch_at_us < r->fb.next_check_us) {
			r->fb.next_check_us = r->police.switch_at_us;
		}
	} else {
		qos_event_emit(&r->mgr->events, QOS_EVENT_ERROR, r->name, 0, 0, 0,
				"no CPU-time notifications (%s): polling instead", strerror(-e));
		r->timer.refused = true;
		r->police.notified = false;
	}
	r->timer.checked_own_us = own;
	/*
	 * A held fallback ends when the threads return, not at a boundary:
	 * their return times (below) wake us, and the periods in between are
	 * settled in one go then.  A throttled thread of a 1% reserve can wait
	 * hundreds of periods.
	 */
	if (r->police.held) {
		r->fb.next_check_us = r->mgr->housekeeping_us;
	}
	/* Threads waiting to return, or to be checked after entering SCHED_DEADLINE. */
	if (r->opt) {
		uint64_t due = settle_optimistic(r, now_us);
		if (due < r->fb.next_check_us) {
			r->fb.next_check_us = due;
		}
	}
}

void qos_fallback_check(struct qos_reserve *r, uint64_t now_us) {
	if (r->n_members == 0) {
		r->fb.next_check_us = UINT64_MAX;
		return;
	}
	uint64_t guard;
	uint64_t own = police_inputs(r, now_us, &guard);
	police_act(r, qos_police_update(&r->police, now_us, own, &r->fb.next_check_us));
	plan_next_check(r, now_us, own, guard);
}

/* r has members. */
static bool bill(struct qos_reserve *r, uint64_t usec) {
	if (!usec) {
		return true;
	}
	uint64_t now = qos_sys_now_us();
	/*
	 * Up to date first where a period ended since the last look (a reserve
	 * the kernel caps is looked at lazily): the bill belongs to the period
	 * running now, not to one long ended.  Within the period the police's
	 * figures are the period's already.
	 */
	if (now >= qos_police_period_end_us(&r->police)) {
		qos_fallback_check(r, now);
	}
	qos_police_bill(&r->police, usec);
	/* Without a limit the bill is only reported: there is nothing to decide. */
	if (qos_params_has_limit(&r->params)) {
		qos_fallback_check(r, now);
		qos_reserve_rearm(r->mgr);
	}
	return true;
}

bool qos_manager_bill(struct qos_manager *mgr, const char *name, uint64_t usec) {
	if (!name || qos_event_refuse_reentry(&mgr->events, NULL, 0)) {
		return false;
	}
	struct qos_reserve *r = qos_reserve_find(mgr, name);
	/* Without members no period runs: the first join starts the books afresh. */
	if (!r || r->n_members == 0) {
		return false;
	}
	return bill(r, usec);
}

bool qos_manager_bill_pid(struct qos_manager *mgr, pid_t pid, uint64_t usec) {
	if (qos_event_refuse_reentry(&mgr->events, NULL, 0)) {
		return false;
	}
	/* Whole processes only: see qos.h for a process some threads of which are members. */
	struct qos_member *m = qos_reserve_find_member(mgr, pid, 0);
	return m && bill(m->reserve, usec);
}

bool qos_manager_watch_overruns(struct qos_manager *mgr, const char *name, bool on) {
	if (!name || qos_event_refuse_reentry(&mgr->events, NULL, 0)) {
		return false;
	}
	struct qos_reserve *r = qos_reserve_find(mgr, name);
	if (!r) {
		return false;
	}
	if (r->fb.watched == on) {
		return true;
	}
	r->fb.watched = on;
	if (r->n_members) {
		qos_fallback_check(r, qos_sys_now_us());
		qos_reserve_rearm(mgr);
	}
	return true;
}
