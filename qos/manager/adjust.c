/*
 * Reserves that change their own parameters: adaptation, idle release and
 * display-synchronous periods (qos/manager/adjust.h).  Every change goes through
 * configure.c as a user's would, so admission never revokes another
 * reserve's grant to make room: a refused one is reported and the reserve
 * keeps what it has.
 */
#include <stdio.h>

#include "qos/manager/adjust.h"
#include "qos/manager/configure.h"
#include "qos/reserve/fallback.h"
#include "qos/reserve/reserve.h"
#include "qos/reserve/split.h"
#include "qos/kernel/sys.h"

const struct qos_params *qos_adjust_own_params(const struct qos_reserve *r) {
	return r->adapt.released ? &r->adapt.kept : &r->params;
}

void qos_adjust_info(const struct qos_reserve *r, struct qos_reserve_info *out) {
	const struct qos_params *own = qos_adjust_own_params(r);
	out->params = *own;
	out->released = r->adapt.released;
	out->return_refused = r->adapt.released && r->adapt.refusal_told;
	out->adapt_slice_us = !qos_params_adaptive(own) ? 0
			: r->adapt.want_us                      ? r->adapt.want_us
													: own->slice_us;
}

static bool idle_use(const struct qos_reserve *r, uint64_t used_us) {
	return qos_adapt_idle_use(used_us, qos_adjust_own_params(r)->slice_us);
}

/*
 * Feeds adaptation the periods the police completed since the last look
 * (several at once when it looked lazily: each their average, the
 * overruns among them the last ones) and counts idle ones; returns how
 * many there were.
 */
static uint64_t take_periods(struct qos_reserve *r) {
	struct qos_adapt *a = &r->adapt;
	const struct qos_police *pol = &r->police;
	if (pol->periods < a->seen_periods || pol->overruns < a->seen_overruns) {
		a->seen_periods = pol->periods; /* the books started afresh */
		a->seen_overruns = pol->overruns;
	}
	uint64_t n = pol->periods - a->seen_periods;
	if (!n) {
		return 0; /* an overrun in the running period counts when it ends */
	}
	uint64_t over = pol->overruns - a->seen_overruns;
	a->seen_periods = pol->periods;
	a->seen_overruns = pol->overruns;
	/* A period whose threads ran out with the whole slice divided among them
	 * is an overrun the reserve's books do not show (split.c). */
	over += qos_split_take_starved(r);
	if (over > n) {
		over = n;
	}
	uint64_t used = pol->last_used_us;
	if (!a->released && qos_params_adaptive(&r->params)) {
		qos_adapt_periods(a, n, used, over);
	}
	if (!idle_use(r, used)) {
		a->idle_run = 0;
	} else if (a->idle_run < UINT32_MAX - n) {
		a->idle_run += (uint32_t)n;
	}
	return n;
}

/* The parameters a released reserve runs with: its fallback, no limit, no grant. */
static struct qos_params released_params(const struct qos_params *own) {
	struct qos_params p;
	qos_params_init(&p);
	p.policy = p.fallback = own->fallback;
	p.nice = own->nice;
	p.inherit = own->inherit;
	return p;
}

static uint64_t wake_poll_us(const struct qos_reserve *r) {
	uint64_t period = qos_adjust_own_params(r)->period_us;
	return period > QOS_WAKE_POLL_US ? period : QOS_WAKE_POLL_US;
}

static void release(struct qos_reserve *r) {
	struct qos_manager *mgr = r->mgr;
	struct qos_params run = released_params(&r->params);
	char why[160], err[256];
	snprintf(why, sizeof(why), "idle for %u periods: %.1f%% of a CPU given back, members %s",
			r->adapt.idle_run, r->granted_ppm / 1e4, qos_policy_name(run.policy));
	r->adapt.kept = r->params;
	r->adapt.released = true; /* before the event: its info shows the release */
	r->adapt.refusal_told = false;
	r->adapt.idle_run = 0;
	if (qos_configure_change(mgr, r, &run, QOS_EVENT_RELEASED, why, err, sizeof(err))) {
		r->adapt.own_seen_us = qos_fallback_own_cpu_us(r);
		r->adapt.wake_check_us = qos_sys_now_us() + wake_poll_us(r);
		return;
	}
	r->adapt.released = false;
	qos_event_emit(&mgr->events, QOS_EVENT_ERROR, r->name, 0, 0, 0, "idle, but not released: %s",
			err);
}

/*
 * A member of a released reserve ran: admission again.  Refused, the
 * reserve stays at its fallback and the refusal is reported once
 * (change_admit or the kernel check raises it with the reason); it asks
 * again at later passes, once the capacity would fit and at most once a
 * second, since a refusal for another reason (the watchdog's cool-down,
 * the kernel's own bound) may last.
 */
static void wake(struct qos_reserve *r) {
	struct qos_manager *mgr = r->mgr;
	struct qos_params own = r->adapt.kept;
	uint64_t now = qos_sys_now_us();
	uint64_t cap = qos_admission_capacity_ppm(&mgr->adm);
	if (r->adapt.refusal_told &&
			(now < r->adapt.retry_us || mgr->adm.granted_ppm + qos_params_util_ppm(&own) > cap)) {
		return;
	}
	char err[256];
	r->adapt.released = false;
	if (qos_configure_change(mgr, r, &own, QOS_EVENT_PARAMS_CHANGED,
				"woke from idle: its capacity granted again", err, sizeof(err))) {
		r->adapt.idle_run = 0;
		r->adapt.wake_check_us = 0;
		return;
	}
	r->adapt.released = true;
	r->adapt.refusal_told = true;
	r->adapt.retry_us = now + QOS_HOUSEKEEPING_US;
}

/* Applies what adaptation decides, or reports why admission refused it. */
static void adapt_step(struct qos_reserve *r) {
	struct qos_manager *mgr = r->mgr;
	uint64_t slice;
	char why[160], err[256];
	r->adapt.thread_share_us = r->params.policy == QOS_POLICY_QOS ? r->dl_runtime_ns / 1000u : 0;
	r->adapt.cpus = r->params.policy == QOS_POLICY_QOS && r->split.built ? r->police.parallel : 1;
	if (!qos_adapt_decide(&r->adapt, &r->params, &slice, why, sizeof(why))) {
		return;
	}
	struct qos_params p = r->params;
	uint64_t old = p.slice_us;
	p.slice_us = slice;
	bool ok = qos_params_normalize(&p, err, sizeof(err)) &&
			qos_configure_change(mgr, r, &p, QOS_EVENT_PARAMS_CHANGED, why, err, sizeof(err));
	if (!ok && r->adapt.modest_us) {
		/* The jump did not fit: the plain step may. */
		char why2[400];
		snprintf(why2, sizeof(why2), "adapted: slice grown to %.1fms (%.1fms refused: %s)",
				r->adapt.modest_us / 1e3, slice / 1e3, err);
		p.slice_us = slice = r->adapt.modest_us;
		ok = qos_params_normalize(&p, err, sizeof(err)) &&
				qos_configure_change(mgr, r, &p, QOS_EVENT_PARAMS_CHANGED, why2, err, sizeof(err));
	}
	qos_adapt_changed(&r->adapt, slice);
	if (!ok) {
		qos_event_emit(&mgr->events, QOS_EVENT_ADMISSION_REFUSED, r->name, 0, 0, 0,
				"adaptation asked for a slice of %.1fms: %s; it keeps %.1fms", slice / 1e3, err,
				old / 1e3);
	}
}

/*
 * Whether a released reserve's members ran since the last look: the
 * police's books (a pass or a bill looked at them), or, when the poll is
 * due, their clocks read now.
 */
static bool woken(struct qos_reserve *r, uint64_t n) {
	struct qos_adapt *a = &r->adapt;
	if ((n && !idle_use(r, r->police.last_used_us)) ||
			!idle_use(r, qos_police_used_us(&r->police))) {
		return true;
	}
	uint64_t now = qos_sys_now_us();
	if (now < a->wake_check_us) {
		return false;
	}
	uint64_t own = qos_fallback_own_cpu_us(r);
	bool ran = own > a->own_seen_us && !idle_use(r, own - a->own_seen_us);
	a->own_seen_us = own;
	a->wake_check_us = now + wake_poll_us(r);
	return ran;
}

static void adjust_reserve(struct qos_reserve *r) {
	const struct qos_params *own = qos_adjust_own_params(r);
	if (!r->n_members || (!qos_params_adaptive(own) && !own->idle_periods)) {
		r->adapt.wake_check_us = 0; /* a released reserve emptied: nothing to wake */
		return;
	}
	uint64_t n = take_periods(r);
	if (r->adapt.released) {
		if (woken(r, n)) {
			wake(r);
		}
		return;
	}
	if (!n) {
		return;
	}
	if (own->idle_periods && r->granted && r->adapt.idle_run >= own->idle_periods) {
		release(r);
		return;
	}
	adapt_step(r);
}

void qos_adjust_pass(struct qos_manager *mgr) {
	for (struct qos_reserve *r = mgr->reserves; r; r = r->next) {
		adjust_reserve(r);
	}
}

bool qos_manager_report_work(struct qos_manager *mgr, const char *name, uint64_t target_us,
		uint64_t actual_us) {
	if (!name || qos_event_refuse_reentry(&mgr->events, NULL, 0)) {
		return false;
	}
	struct qos_reserve *r = qos_reserve_find(mgr, name);
	if (!r || !qos_params_adaptive(qos_adjust_own_params(r))) {
		return false;
	}
	return qos_adapt_report(&r->adapt, target_us, actual_us, qos_adjust_own_params(r)->period_us);
}

/* A new refresh period, the slice kept as the same share of it. */
static bool set_period(struct qos_reserve *r, uint64_t refresh_us, char *err, size_t err_len) {
	struct qos_params p = *qos_adjust_own_params(r);
	unsigned __int128 slice = (unsigned __int128)p.slice_us * refresh_us / p.period_us;
	p.slice_us = slice ? (uint64_t)slice : 1;
	p.period_us = refresh_us;
	if (!qos_params_normalize(&p, err, err_len)) {
		return false;
	}
	char why[96];
	snprintf(why, sizeof(why), "period %.3fms from the output's refresh, slice %.3fms",
			refresh_us / 1e3, p.slice_us / 1e3);
	if (r->adapt.released) {
		/* Nothing the kernel holds: the grant asked for on waking is the new one. */
		r->adapt.kept = p;
		qos_event_emit(&r->mgr->events, QOS_EVENT_PARAMS_CHANGED, r->name, 0, 0, 0, "%s", why);
		return true;
	}
	return qos_configure_change(r->mgr, r, &p, QOS_EVENT_PARAMS_CHANGED, why, err, err_len);
}

/* How far when_us lies from the nearest period boundary. */
static uint64_t phase_error(const struct qos_police *pol, uint64_t when_us) {
	uint64_t per = pol->period_us;
	uint64_t off = when_us >= pol->period_start_us ? (when_us - pol->period_start_us) % per
												   : per - (pol->period_start_us - when_us) % per;
	off %= per;
	return off < per - off ? off : per - off;
}

/*
 * Moves the period boundaries onto the vblank grid once they stay off it
 * (QOS_VBLANK_MOVE_AFTER): the period running now starts at the last
 * vblank-aligned time not after now.  The part of it before the move
 * counts nothing; a move is rare (drift of the output's clock against the
 * rounded period), so that costs little.
 */
static void align(struct qos_reserve *r, uint64_t when_us) {
	struct qos_police *pol = &r->police;
	if (!r->n_members || r->adapt.released || !pol->period_us) {
		return;
	}
	uint64_t tolerance = pol->period_us / 8 > QOS_VBLANK_TOLERANCE_US ? pol->period_us / 8
																	  : QOS_VBLANK_TOLERANCE_US;
	if (phase_error(pol, when_us) <= tolerance) {
		r->adapt.vblank_off = 0;
		return;
	}
	if (++r->adapt.vblank_off < QOS_VBLANK_MOVE_AFTER) {
		return;
	}
	r->adapt.vblank_off = 0;
	uint64_t now = qos_sys_now_us(), per = pol->period_us;
	uint64_t start = when_us <= now ? when_us + (now - when_us) / per * per
									: when_us - (when_us - now + per - 1) / per * per;
	qos_police_set_limit(pol, per, pol->slice_us, start, qos_fallback_own_cpu_us(r));
	r->timer.armed = false;
	qos_fallback_check(r, now);
	qos_reserve_rearm(r->mgr);
}

bool qos_manager_vblank(struct qos_manager *mgr, const char *name, uint64_t when_us,
		uint64_t refresh_us, char *err, size_t err_len) {
	if (qos_event_refuse_reentry(&mgr->events, err, err_len)) {
		return false;
	}
	struct qos_reserve *r = name ? qos_reserve_find(mgr, name) : NULL;
	if (!r) {
		snprintf(err, err_len, "no reserve named '%s'", name ? name : "");
		return false;
	}
	const struct qos_params *own = qos_adjust_own_params(r);
	if (!own->period_vblank) {
		snprintf(err, err_len, "reserve '%s' is not period=vblank", name);
		return false;
	}
	if (refresh_us < QOS_VBLANK_SHORTEST_US || refresh_us > 10000000) {
		snprintf(err, err_len, "refresh period of %lluus is outside 1ms..10s",
				(unsigned long long)refresh_us);
		return false;
	}
	if (own->period_us != refresh_us && !set_period(r, refresh_us, err, err_len)) {
		return false;
	}
	align(r, when_us);
	return true;
}
