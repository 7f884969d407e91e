#include "qos/policy/police.h"

/* Sums that stop at the top: a huge bill holds the fallback, it never wraps to nothing. */
static uint64_t add_sat(uint64_t a, uint64_t b) {
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t window(const struct qos_police *p) {
	return p->period_us ? p->period_us : QOS_POLICE_REPORT_PERIOD_US;
}

void qos_police_start(struct qos_police *p, uint64_t period_us, uint64_t slice_us, uint64_t now_us,
		uint64_t own_cumulative_us) {
	*p = (struct qos_police){
		.period_us = slice_us ? period_us : 0,
		.slice_us = period_us ? slice_us : 0,
		.period_start_us = now_us,
		.base_own_us = own_cumulative_us,
		.parallel = 1,
	};
}

void qos_police_set_limit(struct qos_police *p, uint64_t period_us, uint64_t slice_us,
		uint64_t now_us, uint64_t own_cumulative_us) {
	bool fb = p->in_fallback;
	uint64_t periods = p->periods, overruns = p->overruns, last = p->last_used_us;
	uint64_t last_billed = p->last_billed_us;
	unsigned parallel = p->parallel;
	bool notified = p->notified;
	qos_police_start(p, period_us, slice_us, now_us, own_cumulative_us);
	p->in_fallback = fb;
	p->periods = periods;
	p->overruns = overruns;
	p->last_used_us = last;
	p->last_billed_us = last_billed;
	p->parallel = parallel;
	p->notified = notified;
}

void qos_police_resume(struct qos_police *p, uint64_t now_us, uint64_t own_cumulative_us) {
	/*
	 * The held stretch since the boundary is no period of its own; what is
	 * still owed (billed time past the slice) is owed all the same, and so
	 * is what was billed in the stretch: the members were in their
	 * fallback, as after an overrun, where a bill carries too.
	 */
	uint64_t debt = add_sat(p->debt_us, p->billed_us);
	qos_police_set_limit(p, p->period_us, p->slice_us, now_us, own_cumulative_us);
	p->debt_us = debt;
	p->in_fallback = false;
}

void qos_police_bill(struct qos_police *p, uint64_t usec) {
	p->billed_us = add_sat(p->billed_us, usec);
}

uint64_t qos_police_used_us(const struct qos_police *p) {
	return add_sat(add_sat(p->own_us, p->billed_us), p->debt_us);
}

uint64_t qos_police_period_end_us(const struct qos_police *p) {
	return p->period_start_us + window(p);
}

uint64_t qos_police_fallback_end_us(const struct qos_police *p) {
	uint64_t end = qos_police_period_end_us(p);
	if (!p->in_fallback || !p->notified || !p->slice_us || p->hold_fallback ||
			p->fb_grace_left_us || p->billed_us || p->kernel_enforced) {
		return end;
	}
	/* What the next boundary settles; each repays a slice. */
	uint64_t owed = p->fb_own_us + p->debt_us;
	uint64_t periods = owed / p->slice_us;
	return periods > 1 ? end + (periods - 1) * p->period_us : end;
}

/*
 * One step of the state machine, kept whole: the boundary's settlement and
 * the check within the period share the same running figures, and read in
 * order they are the policy police.h describes.
 */
enum qos_police_transition qos_police_update(struct qos_police *p, uint64_t now_us,
		uint64_t own_cumulative_us, uint64_t *next_check_us) {
	enum qos_police_transition t = QOS_POLICE_NONE;
	p->late_overrun = false;
	/* A counter can go backwards when a member leaves; rebase instead of wrapping. */
	if (own_cumulative_us < p->base_own_us) {
		p->base_own_us = own_cumulative_us > p->own_us ? own_cumulative_us - p->own_us : 0;
	}

	uint64_t w = window(p);
	if (now_us >= p->period_start_us + w) {
		/*
		 * Time consumed since the last check is charged to the period that
		 * just ended: the check runs at the boundary, so at most the timer's
		 * wake-up latency is misattributed.
		 */
		uint64_t delta = own_cumulative_us - p->base_own_us;
		uint64_t elapsed = (now_us - p->period_start_us) / w;
		uint64_t start = p->period_start_us + elapsed * w;
		uint64_t recent = 0;
		/* A fallback not held lasted until now: all of it was fallback time. */
		if (p->notified && elapsed > 1 && (!p->in_fallback || p->hold_fallback)) {
			/* Unchecked periods: the current one may hold all of it. */
			uint64_t room = (now_us - start) * (p->parallel ? p->parallel : 1);
			recent = delta < room ? delta : room;
		}
		p->own_us = delta - recent;
		uint64_t used = qos_police_used_us(p);
		/* Not checked for several periods (lazy accounting): their average. */
		p->last_used_us = used / elapsed;
		p->last_billed_us = p->billed_us / elapsed;
		uint64_t allowed = p->slice_us * elapsed;
		uint64_t owed = used;
		if (p->in_fallback && !p->kernel_enforced && p->own_us > p->fb_own_us) {
			uint64_t fb = p->own_us - p->fb_own_us;
			owed -= fb > p->fb_grace_left_us ? fb - p->fb_grace_left_us : 0;
		}
		uint64_t excess = p->slice_us && owed > allowed ? owed - allowed : 0;
		/*
		 * A polled reserve sees its own time past the slice late, and is
		 * not charged it again; billed time the members never ran, and
		 * what it still owed, carry all the same.
		 */
		uint64_t charged = add_sat(p->billed_us, p->debt_us);
		p->debt_us = (p->notified && !p->kernel_enforced) || excess < charged ? excess : charged;
		/* One period, so the use is all its own (after several, it is not
		 * known when in them it came). */
		p->late_overrun = p->kernel_enforced && p->slice_us && !p->in_fallback && elapsed == 1 &&
				used >= p->slice_us;
		if (p->late_overrun) {
			p->overruns++;
		}
		if (p->notified && p->in_fallback && !p->hold_fallback && !p->kernel_enforced &&
				p->slice_us && elapsed > 1) {
			/* Boundaries passed unchecked where the debt left kept it
			 * in the fallback (qos_police_fallback_end_us): overruns.
			 * Not where the kernel enforces the limit: what ran there
			 * is no debt, and such a fallback ends at every boundary. */
			uint64_t held = owed / p->slice_us;
			held = held > 1 ? held - 1 : 0;
			p->overruns += held < elapsed - 1 ? held : elapsed - 1;
		}
		p->periods += elapsed;
		p->period_start_us = start;
		p->base_own_us = own_cumulative_us - recent;
		p->own_us = recent;
		p->billed_us = 0;
		/* The switch, if any, was in an earlier period: its grace is spent. */
		p->fb_grace_left_us = 0;
		if (p->in_fallback && p->hold_fallback) {
			/* Still in the fallback: what it runs there is no use of the slice. */
			p->fb_own_us = p->own_us;
			p->held = true;
		} else if (p->in_fallback || p->late_overrun) {
			p->in_fallback = false;
			p->held = false;
			t = QOS_POLICE_RESTORE;
		}
	} else {
		p->own_us = own_cumulative_us - p->base_own_us;
	}

	uint64_t end = p->period_start_us + w;
	uint64_t used = add_sat(qos_police_used_us(p), p->projected_us);
	unsigned parallel = p->parallel ? p->parallel : 1;
	/*
	 * Within early_us of the slice, and running: the kernel may throttle
	 * the members at the next tick, so they leave once no more than
	 * margin_us is left, and until then the caller looks again when that
	 * will be.
	 */
	bool early = false;
	p->switch_at_us = 0;
	if (p->early_us && (p->running || p->projected_us) && used > 0 &&
			add_sat(used, p->early_us) >= p->slice_us) {
		uint64_t left = used < p->slice_us ? p->slice_us - used : 0;
		if (left <= p->margin_us) {
			early = true;
		} else {
			p->switch_at_us = now_us + (left - p->margin_us + parallel - 1) / parallel;
		}
	}
	if (p->slice_us && !p->in_fallback && (used >= p->slice_us || early)) {
		p->in_fallback = true;
		p->held = false;
		p->fb_own_us = p->own_us;
		p->overruns++;
		/*
		 * Overrun right at a boundary: the restore and the overrun cancel,
		 * and the members, never switched back, get no grace.
		 */
		p->fb_grace_left_us = t == QOS_POLICE_RESTORE ? 0 : p->fallback_grace_us;
		t = t == QOS_POLICE_RESTORE ? QOS_POLICE_NONE : QOS_POLICE_OVERRUN;
	}

	uint64_t next = end;
	if (p->slice_us && !p->in_fallback) {
		/* The budget cannot run out sooner than wall time on all usable CPUs allows. */
		uint64_t step = (p->slice_us - used) / parallel;
		if (step < QOS_POLICE_MIN_STEP_US) {
			step = QOS_POLICE_MIN_STEP_US;
		}
		if (now_us + step < next) {
			next = now_us + step;
		}
	}
	*next_check_us = next;
	return t;
}
