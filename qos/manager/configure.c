/*
 * Reserves defined, changed and deleted, and a process's class set in one
 * call: the public calls that change a reserve's parameters with its
 * members in it.  Manager layer (see qos/manager/configure.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "qos/manager/adjust.h"
#include "qos/policy/core.h"
#include "qos/manager/configure.h"
#include "qos/reserve/fallback.h"
#include "qos/member/guardian.h"
#include "qos/member/member.h"
#include "qos/reserve/reserve.h"
#include "qos/kernel/sys.h"

/*
 * A change of an existing reserve's parameters in progress.  Its one undo
 * is the change back to the old parameters (change_undo).
 */
struct change {
	struct qos_manager *mgr;
	struct qos_reserve *r;
	struct qos_params old, p;
	bool reverting; /* this is an undo: no second round, no new grant announced */
	enum qos_event_type type; /* the event a change that took announces */
	const char *why; /* ... and its message, or NULL */
	int gerr, perr; /* what the kernel refused the group and the threads */
	uint64_t now_us;
};

/* Whether the members may be given p: the same checks as a join. */
static bool change_check(struct change *c, char *err, size_t err_len) {
	struct qos_manager *mgr = c->mgr;
	struct qos_reserve *r = c->r;
	const struct qos_params *p = &c->p;
	const char *name = r->name;
	char why[256];
	for (size_t i = 0; i < r->n_members; i++) {
		if (r->members[i]->tid && !qos_member_fits_threads(mgr, p, why, sizeof(why))) {
			snprintf(err, err_len, "'%s' holds single threads: %s", name, why);
			return false;
		}
	}
	bool new_rt = qos_policy_is_rt(p->policy) && !qos_policy_is_rt(c->old.policy);
	if (r->n_members && new_rt &&
			!qos_reserve_rt_grants_allowed(mgr, qos_sys_now_us(), why, sizeof(why))) {
		snprintf(err, err_len, "cannot make '%s' real-time: %s", name, why);
		qos_event_emit(&mgr->events, QOS_EVENT_ADMISSION_REFUSED, name, 0, 0, 0, "%s", why);
		return false;
	}
	bool to_bounded = (p->policy == QOS_POLICY_FIFO || p->policy == QOS_POLICY_RR) &&
			c->old.policy != QOS_POLICY_FIFO && c->old.policy != QOS_POLICY_RR;
	for (size_t i = 0; to_bounded && !c->reverting && i < r->n_members; i++) {
		if (!qos_member_rttime_boundable(mgr, p, r->members[i]->pid, why, sizeof(why))) {
			snprintf(err, err_len, "cannot make '%s' %s: %s", name, qos_policy_name(p->policy),
					why);
			qos_event_emit(&mgr->events, QOS_EVENT_ADMISSION_REFUSED, name, 0, 0, 0, "%s", why);
			return false;
		}
	}
	/* Only what the members do not have already: the guardian's absence
	 * is no reason to take a class from them. */
	bool new_freeze = qos_params_may_freeze(p) && !qos_params_may_freeze(&c->old);
	if (r->n_members && !c->reverting && (new_rt || new_freeze) &&
			!qos_guardian_allows(mgr, p, why, sizeof(why))) {
		snprintf(err, err_len, "cannot change '%s': %s", name, why);
		qos_event_emit(&mgr->events, QOS_EVENT_ADMISSION_REFUSED, name, 0, 0, 0, "%s", why);
		return false;
	}
	return true;
}

/* Admission resized to the new parameters' share (a qos reserve's only). */
static bool change_admit(struct change *c, char *err, size_t err_len) {
	struct qos_manager *mgr = c->mgr;
	struct qos_reserve *r = c->r;
	const char *name = r->name;
	char why[256];
	uint64_t new_ppm = c->p.policy == QOS_POLICY_QOS ? qos_params_util_ppm(&c->p) : 0;
	if (r->granted) {
		if (!qos_admission_resize(&mgr->adm, r->granted_ppm, new_ppm, why, sizeof(why))) {
			snprintf(err, err_len, "cannot grow '%s': %s", name, why);
			mgr->events.last_refusal = QOS_REFUSAL_CAPACITY;
			return false;
		}
		r->granted_ppm = new_ppm;
		r->granted = new_ppm > 0;
	} else if (new_ppm && r->n_members) {
		if (!qos_admission_request(&mgr->adm, new_ppm, why, sizeof(why))) {
			snprintf(err, err_len, "cannot make '%s' a qos reserve: %s", name, why);
			mgr->events.last_refusal = QOS_REFUSAL_CAPACITY;
			qos_event_emit(&mgr->events, QOS_EVENT_ADMISSION_REFUSED, name, 0, 0, 0, "%s", why);
			return false;
		}
		r->granted = true;
		r->granted_ppm = new_ppm;
		/* A revert takes back what the refused change gave up: nothing new. */
		if (!c->reverting) {
			qos_event_emit(&mgr->events, QOS_EVENT_ADMISSION_GRANTED, name, 0, 0, 0, NULL);
		}
	}
	return true;
}

/*
 * The new parameters and period.  A real-time group keeps its kernel
 * window across the change when the period stays: the kernel's timer runs
 * on in its phase, so the manager's period must too, or the two drift
 * apart (the kernel throttling the members while the manager still counts
 * slice left).  Otherwise the period starts now, and the clocks are read
 * before leaving the fallback gives a real-time member the CPU (as at a
 * join).
 */
static void change_place(struct change *c) {
	struct qos_reserve *r = c->r;
	const struct qos_params *p = &c->p;
	const struct qos_police *pol = &r->police;
	c->now_us = qos_sys_now_us();
	bool keep_phase = r->n_members && r->mgr->cg.rt_group && qos_policy_is_rt(c->old.policy) &&
			c->old.policy != QOS_POLICY_QOS && qos_policy_is_rt(p->policy) &&
			p->policy != QOS_POLICY_QOS && c->old.period_us == p->period_us &&
			pol->period_us == p->period_us && c->now_us < pol->period_start_us + pol->period_us;
	uint64_t base = keep_phase ? pol->base_own_us : qos_fallback_own_cpu_us(r);
	qos_fallback_leave(r);
	if (p->policy != QOS_POLICY_QOS) {
		r->fb.applied = false; /* apply_threads takes every thread to the new policy */
	}
	r->params = *p;
	r->police.in_fallback = false;
	qos_police_set_limit(&r->police, p->period_us, p->slice_us,
			keep_phase ? pol->period_start_us : qos_fallback_period_origin(r, c->now_us), base);
	r->timer.armed = false;
}

/*
 * The group's controls and the threads' class.  Leaving fifo/rr, the
 * threads go first: the kernel refuses to take the group's real-time
 * bandwidth while it still holds real-time tasks.  A group refused the
 * new real-time bandwidth still holds the old (or, the period written,
 * part of it), which its threads would run under while the manager
 * counted the new limit: refused like a thread the kernel refuses.
 */
static bool change_apply(struct change *c, char *err, size_t err_len) {
	struct qos_reserve *r = c->r;
	const struct qos_params *p = &c->p;
	const char *name = r->name;
	bool leaving_rt = qos_policy_is_rt(c->old.policy) && c->old.policy != QOS_POLICY_QOS &&
			!(qos_policy_is_rt(p->policy) && p->policy != QOS_POLICY_QOS);
	bool pausing = p->policy == QOS_POLICY_PAUSE;
	/* Pausing, deadline threads leave their class before the freeze wakes
	 * them into the freezer (see release_rt_before_move in member.c). */
	bool threads_first = leaving_rt || (pausing && c->old.policy == QOS_POLICY_QOS);
	c->gerr = threads_first ? 0 : qos_reserve_apply_group(r);
	c->perr = c->gerr ? 0 : qos_reserve_apply_threads(r, p->policy);
	if (threads_first) {
		int ge = qos_reserve_apply_group(r);
		if (pausing) {
			c->gerr = ge; /* a pause that did not happen is refused */
		}
	}
	if (!(c->gerr || c->perr) || !(qos_policy_is_rt(p->policy) || pausing) || c->reverting) {
		return true;
	}
	if (c->gerr) {
		char reason[384];
		if (pausing) {
			snprintf(reason, sizeof(reason), "%s", strerror(-c->gerr));
		} else {
			qos_reserve_rt_refusal(c->mgr, r, c->gerr, reason, sizeof(reason));
		}
		snprintf(err, err_len,
				"'%s' refused by the kernel: its group cannot %s: %s; it keeps its parameters",
				name, pausing ? "be frozen" : "get that real-time bandwidth", reason);
	} else {
		snprintf(err, err_len, "'%s' refused by the kernel: %s; it keeps its parameters", name,
				qos_reserve_policy_error(p->policy, c->perr));
	}
	qos_event_emit(&c->mgr->events, QOS_EVENT_ADMISSION_REFUSED, name, 0, 0, 0, "%s", err);
	return false;
}

static bool change(struct qos_manager *mgr, struct qos_reserve *r, struct qos_params p,
		bool reverting, char *err, size_t err_len);
static bool change_as(struct change *c, char *err, size_t err_len);

/* Back to the old parameters, so no thread is left in a class they do not say. */
static void change_undo(struct change *c) {
	char ignored[256];
	change(c->mgr, c->r, c->old, true, ignored, sizeof(ignored));
	c->mgr->events.last_refusal =
			c->gerr || c->perr == -EBUSY || (c->p.policy != QOS_POLICY_QOS && c->perr == -EPERM)
			? QOS_REFUSAL_CAPACITY
			: QOS_REFUSAL_ERROR;
}

/* What follows once the kernel took the change: a refused one bounds no one. */
static void change_finish(struct change *c) {
	struct qos_reserve *r = c->r;
	for (size_t i = 0; i < r->n_members; i++) {
		qos_member_bound_rttime(r->members[i]);
	}
	qos_reserve_root_weight_update(c->mgr);
	if (!c->reverting) {
		qos_event_emit(&c->mgr->events, c->type, r->name, 0, 0, 0, c->why ? "%s" : NULL, c->why);
	}
	qos_fallback_check(r, c->now_us);
}

/*
 * Changes an existing reserve to p (normalized).  When the kernel refuses the
 * new real-time or deadline policy for a member's threads, the reserve goes
 * back to what it was, so no thread is left in a class the parameters do not
 * say, and the change is refused; `reverting` stops a second round.
 */
static bool change(struct qos_manager *mgr, struct qos_reserve *r, struct qos_params p,
		bool reverting, char *err, size_t err_len) {
	struct change c = { .mgr = mgr,
		.r = r,
		.old = r->params,
		.p = p,
		.reverting = reverting,
		.type = QOS_EVENT_PARAMS_CHANGED };
	return change_as(&c, err, err_len);
}

static bool change_as(struct change *c, char *err, size_t err_len) {
	if (!change_check(c, err, err_len) || !change_admit(c, err, err_len)) {
		return false;
	}
	change_place(c);
	if (!change_apply(c, err, err_len)) {
		change_undo(c);
		return false;
	}
	change_finish(c);
	qos_reserve_rearm(c->mgr);
	return true;
}

bool qos_configure_change(struct qos_manager *mgr, struct qos_reserve *r,
		const struct qos_params *p, enum qos_event_type type, const char *why, char *err,
		size_t err_len) {
	struct change c = { .mgr = mgr, .r = r, .old = r->params, .p = *p, .type = type, .why = why };
	return change_as(&c, err, err_len);
}

bool qos_reserve_set(struct qos_manager *mgr, const char *name, const struct qos_params *params,
		bool create, bool modify, char *err, size_t err_len) {
	if (qos_event_refuse_reentry(&mgr->events, err, err_len)) {
		return false;
	}
	mgr->events.last_refusal = QOS_REFUSAL_ERROR;
	if (!name || !params) {
		snprintf(err, err_len, "no reserve %s", name ? "parameters" : "name");
		return false;
	}
	struct qos_params p = *params;
	if (!qos_reserve_valid(name, &p, err, err_len)) {
		return false;
	}
	struct qos_reserve *r = qos_reserve_find(mgr, name);
	if (!r) {
		if (!create) {
			snprintf(err, err_len, "no reserve named '%s'", name);
			return false;
		}
		return qos_reserve_create(mgr, name, &p, err, err_len) != NULL;
	}
	if (!modify) {
		snprintf(err, err_len, "reserve '%s' already exists", name);
		return false;
	}
	bool redefined = !qos_params_as_defined(qos_adjust_own_params(r), &p);
	if (!change(mgr, r, p, false, err, err_len)) {
		return false;
	}
	r->wd.demoted = false; /* changed since the watchdog's demotion, if any */
	/*
	 * The reserve runs p now, released or not.  A new definition ends the
	 * measurements made for the old one; the same one set again (an
	 * embedder passing a new refresh period, say) keeps them.
	 */
	if (redefined) {
		qos_adapt_reset(&r->adapt);
	}
	r->adapt.released = false;
	r->adapt.wake_check_us = 0;
	return true;
}

bool qos_reserve_delete(struct qos_manager *mgr, const char *name, char *err, size_t err_len) {
	if (qos_event_refuse_reentry(&mgr->events, err, err_len)) {
		return false;
	}
	if (!name) {
		snprintf(err, err_len, "no reserve name");
		return false;
	}
	struct qos_reserve *r = qos_reserve_find(mgr, name);
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

void qos_configure_demote_rt(struct qos_manager *mgr) {
	for (struct qos_reserve *r = mgr->reserves; r; r = r->next) {
		if (!qos_policy_is_rt(r->params.policy)) {
			continue;
		}
		struct qos_params before = r->params;
		struct qos_params p = r->params;
		p.policy = QOS_POLICY_OTHER;
		p.fallback = QOS_POLICY_OTHER;
		p.period_us = p.slice_us = 0;
		char err[128];
		/* Remembered as the watchdog's doing, for a reload (apply_redefined). */
		if (qos_reserve_set(mgr, r->name, &p, false, true, err, sizeof(err))) {
			r->wd.demoted = true;
			r->wd.before = before;
		}
		qos_event_emit(&mgr->events, QOS_EVENT_WATCHDOG, r->name, 0, 0, 0,
				"normal tasks starved: demoted to other");
	}
}

bool qos_manager_set_class(struct qos_manager *mgr, pid_t pid, const struct qos_params *params,
		char *err, size_t err_len) {
	if (qos_event_refuse_reentry(&mgr->events, err, err_len)) {
		return false;
	}
	char name[QOS_NAME_MAX + 1];
	snprintf(name, sizeof(name), QOS_AUTO_PREFIX "%d", pid);
	mgr->events.last_refusal = QOS_REFUSAL_ERROR;
	if (!params) {
		snprintf(err, err_len, "no parameters");
		return false;
	}
	struct qos_params p = *params;
	if (!qos_params_normalize(&p, err, err_len)) {
		return false;
	}
	struct qos_reserve *r = qos_reserve_find(mgr, name);
	bool created = false;
	if (r) {
		if (!qos_reserve_set(mgr, name, &p, false, true, err, err_len)) {
			return false;
		}
	} else {
		r = qos_reserve_new(mgr, name, &p);
		if (!r) {
			snprintf(err, err_len, "out of memory");
			return false;
		}
		r->is_auto = true;
		r->owner = pid;
		created = true;
	}
	if (qos_manager_join(mgr, name, pid, 0, err, err_len)) {
		return true;
	}
	/* A refused join may already have dropped the empty automatic
	 * reserve: look it up again rather than trust r. */
	r = qos_reserve_find(mgr, name);
	if (created && r && r->n_members == 0) {
		qos_reserve_free(r);
	}
	return false;
}
