/* The rules that size an adaptive reserve's slice (qos/policy/adapt.h). */
#include "qos/policy/adapt.h"

#include <stdio.h>

void qos_adapt_reset(struct qos_adapt *a) {
	uint64_t periods = a->seen_periods, overruns = a->seen_overruns;
	*a = (struct qos_adapt){ .seen_periods = periods, .seen_overruns = overruns };
}

static void push(struct qos_adapt_ring *ring, uint64_t v, bool over) {
	ring->v[ring->head] = v;
	ring->over[ring->head] = over;
	ring->head = (ring->head + 1) % QOS_ADAPT_RING;
	if (ring->n < QOS_ADAPT_RING) {
		ring->n++;
	}
}

/* The i-th newest figure (0: the newest). */
static unsigned slot(const struct qos_adapt_ring *ring, unsigned i) {
	return (ring->head + QOS_ADAPT_RING - 1 - i) % QOS_ADAPT_RING;
}

void qos_adapt_sample(struct qos_adapt *a, uint64_t used_us, bool overran) {
	push(&a->used, used_us, overran);
	a->periods++;
	if (overran) {
		a->prev_over_period = a->over_period;
		a->over_period = a->periods;
	}
	if (a->since_change < UINT32_MAX) {
		a->since_change++;
	}
}

void qos_adapt_periods(struct qos_adapt *a, uint64_t n, uint64_t used_us, uint64_t overruns) {
	bool reported_since = a->reported && a->report_period == a->periods;
	uint64_t k = n < QOS_ADAPT_RING ? n : QOS_ADAPT_RING;
	for (uint64_t i = 0; i < k; i++) {
		qos_adapt_sample(a, used_us, k - i <= overruns);
	}
	if (reported_since) {
		a->report_period = a->periods;
	}
}

bool qos_adapt_report(struct qos_adapt *a, uint64_t target_us, uint64_t actual_us,
		uint64_t period_us) {
	if (target_us == 0) {
		return false;
	}
	/* A frame's work against its target is the share of a period it needs. */
	uint64_t scaled = actual_us * period_us / target_us;
	if (actual_us && period_us && scaled / period_us != actual_us / target_us) {
		scaled = UINT64_MAX; /* wrapped: more than any slice */
	}
	push(&a->work, scaled, false);
	a->reported = true;
	a->report_period = a->periods;
	return true;
}

/* The percentile of the newest n figures that are not idle against a slice
 * of slice_us (0: all count); *kept: how many were. */
static uint64_t percentile_from(const struct qos_adapt_ring *ring, unsigned n, unsigned pct,
		uint64_t slice_us, unsigned *kept) {
	uint64_t sorted[QOS_ADAPT_RING];
	unsigned k = 0;
	for (unsigned i = 0; i < n && i < ring->n; i++) {
		uint64_t v = ring->v[slot(ring, i)];
		if (qos_adapt_idle_use(v, slice_us)) {
			continue;
		}
		unsigned j = k++;
		for (; j > 0 && sorted[j - 1] > v; j--) {
			sorted[j] = sorted[j - 1];
		}
		sorted[j] = v;
	}
	*kept = k;
	if (k == 0) {
		return 0;
	}
	/* Nearest rank: the smallest figure at least pct% of them do not exceed. */
	unsigned rank = (k * pct + 99) / 100;
	return sorted[rank ? rank - 1 : 0];
}

uint64_t qos_adapt_percentile(const struct qos_adapt_ring *ring, unsigned n, unsigned pct) {
	unsigned kept;
	return percentile_from(ring, n, pct, 0, &kept);
}

void qos_adapt_bounds(const struct qos_adapt *a, const struct qos_params *p, uint64_t *lo,
		uint64_t *hi) {
	bool rt_static = p->policy == QOS_POLICY_FIFO || p->policy == QOS_POLICY_RR;
	/* fifo/rr must stay below the whole period (params.c): 95% of it. */
	*hi = rt_static ? p->period_us - p->period_us / 20 : p->period_us;
	/* A divided slice holds as many CPUs as its threads run on at once. */
	if (p->policy == QOS_POLICY_QOS && a->cpus > 1) {
		*hi = p->period_us * a->cpus;
	}
	if (p->adapt.max_ppm) {
		*hi = (p->period_us * p->adapt.max_ppm + 500000u) / 1000000u;
	}
	*lo = QOS_ADAPT_MIN_SLICE_US;
	if (p->adapt.min_ppm) {
		*lo = (p->period_us * p->adapt.min_ppm + 500000u) / 1000000u;
	}
	if (*hi < 1) {
		*hi = 1;
	}
	if (*lo > *hi) {
		*lo = *hi;
	}
}

static uint64_t clamp(const struct qos_adapt *a, const struct qos_params *p, uint64_t v) {
	uint64_t lo, hi;
	qos_adapt_bounds(a, p, &lo, &hi);
	return v < lo ? lo : v > hi ? hi : v;
}

static uint64_t with_margin(uint64_t v) {
	return v > UINT64_MAX / 2 ? UINT64_MAX : v + v * QOS_ADAPT_MARGIN_PCT / 100;
}

/* Of the last n figures, how many used up a slice of slice_us. */
static unsigned overs(const struct qos_adapt_ring *ring, unsigned n, uint64_t slice_us) {
	unsigned count = 0;
	for (unsigned i = 0; i < n && i < ring->n; i++) {
		unsigned s = slot(ring, i);
		count += ring->over[s] || ring->v[s] >= slice_us;
	}
	return count;
}

static bool reports_fresh(const struct qos_adapt *a) {
	return a->reported && a->periods - a->report_period <= QOS_ADAPT_REPORT_FRESH;
}

static void describe(char *why, size_t len, const char *verb, uint64_t slice_us, uint64_t p95,
		bool reported) {
	snprintf(why, len, "adapted: slice %s %.1fms (p95 %.1fms%s + %u%%)", verb, slice_us / 1e3,
			p95 / 1e3, reported ? " of reported work" : "", QOS_ADAPT_MARGIN_PCT);
}

/*
 * What a period needs: the percentile of measured use in the periods the
 * members worked, or of the reported work while reports are fresh when
 * that is more.  Periods used under 1% of the slice count as idle and are
 * left out: the slice is sized for the program at work, and an idle one
 * gives its capacity back by idle release (adjust.c) instead, so that a
 * paused video or a window waiting for input finds its slice there when
 * it works again.  A report covers only the work the application timed
 * (not its drawing or protocol traffic), so alone it would size the slice
 * below what the members run and keep them overrunning; measured use
 * alone cannot see past a slice the kernel holds them to.  *reported says
 * which one decided, *worked how many of the n periods were not idle.
 */
static uint64_t demand(const struct qos_adapt *a, unsigned n, uint64_t slice_us, bool *reported,
		unsigned *worked) {
	uint64_t used = percentile_from(&a->used, n, 95, slice_us, worked);
	uint64_t work = reports_fresh(a) ? qos_adapt_percentile(&a->work, n, 95) : 0;
	*reported = work > used;
	if (*reported) {
		*worked = n;
	}
	return work > used ? work : used;
}

/*
 * Of the last QOS_ADAPT_GROW_SPAN periods (at least 4 seen), how many ran
 * out: by measurement, or by reports.
 */
static unsigned recent_overs(const struct qos_adapt *a, uint64_t slice_us) {
	/* Only periods run with this slice judge it. */
	unsigned span = a->since_change < QOS_ADAPT_GROW_SPAN ? a->since_change : QOS_ADAPT_GROW_SPAN;
	unsigned used = a->used.n >= 4 ? overs(&a->used, span, slice_us) : 0;
	unsigned work = reports_fresh(a) && a->work.n >= 4 ? overs(&a->work, span, slice_us) : 0;
	return used > work ? used : work;
}

/*
 * The newest period used the slice up, and so did another run with it
 * less than QOS_ADAPT_CALM periods before: peaks a second or so apart,
 * each cut short, too far apart for the 16 periods recent_overs reads.
 */
static bool recurring_over(const struct qos_adapt *a) {
	uint64_t changed = a->periods - a->since_change;
	return a->over_period == a->periods && a->prev_over_period > changed &&
			a->over_period - a->prev_over_period < QOS_ADAPT_CALM;
}

/* The grow rule's target from cur: a quarter more, or p95 plus the margin. */
static uint64_t grow_step(uint64_t cur, uint64_t p95) {
	uint64_t step = cur + cur * QOS_ADAPT_GROW_PCT / 100;
	return step > with_margin(p95) ? step : with_margin(p95);
}

/* cpu=auto's first measurement: the percentile of it plus the margin. */
static bool decide_initial(struct qos_adapt *a, const struct qos_params *p, uint64_t *slice_us,
		char *why, size_t why_len) {
	if (a->since_change < QOS_ADAPT_WARMUP + QOS_ADAPT_INITIAL_PERIODS) {
		return false;
	}
	bool reported;
	unsigned worked;
	uint64_t p95 = demand(a, QOS_ADAPT_INITIAL_PERIODS, p->slice_us, &reported, &worked);
	/* Mostly idle so far: nothing to size it by yet.  Without idle release
	 * it settles on what a whole ring of periods showed, idle or not. */
	if (worked * 2 < QOS_ADAPT_INITIAL_PERIODS) {
		if (p->idle_periods || a->since_change < QOS_ADAPT_WARMUP + QOS_ADAPT_RING) {
			return false;
		}
		p95 = qos_adapt_percentile(&a->used, QOS_ADAPT_RING, 95);
	}
	a->settled = true;
	/* Periods cut short at the provisional slice read as the slice: the
	 * use was more, so settle no lower than growth would take it. */
	bool cut = recent_overs(a, p->slice_us) >= QOS_ADAPT_GROW_OVERS;
	*slice_us = clamp(a, p, cut ? grow_step(p->slice_us, p95) : with_margin(p95));
	describe(why, why_len, "settled at", *slice_us, p95, reported);
	return *slice_us != p->slice_us;
}

/*
 * adapt=yes: grow after repeated overruns, shrink after sustained under-use.
 * A cpu=auto slice below its first guess grows straight back to it: a
 * program that idled (a paused video, a window waiting for input) and
 * works again would otherwise wait a quarter more every few periods at the
 * fallback, frames lost all along; the shrink rule fits the slice to what
 * it runs once QOS_ADAPT_WINDOW periods show it.  a->modest_us keeps the
 * plain step for when admission refuses the jump.
 */
static bool decide_continuous(struct qos_adapt *a, const struct qos_params *p, uint64_t *slice_us,
		char *why, size_t why_len) {
	uint64_t cur = p->slice_us;
	bool reported;
	unsigned worked;
	uint64_t p95 = demand(a, QOS_ADAPT_WINDOW, cur, &reported, &worked);
	a->modest_us = 0;
	if (a->since_change >= 4 &&
			(recent_overs(a, cur) >= QOS_ADAPT_GROW_OVERS || recurring_over(a))) {
		uint64_t modest = clamp(a, p, grow_step(cur, p95));
		uint64_t guess = p->adapt.auto_slice ? clamp(a, p, qos_adapt_first_guess_us(p)) : 0;
		uint64_t target = guess > modest ? guess : modest;
		if (target > cur) {
			*slice_us = target;
			a->modest_us = modest > cur && modest < target ? modest : 0;
			describe(why, why_len, guess > modest ? "back to its first guess," : "grown to", target,
					p95, reported);
			return true;
		}
	}
	/* Idle more often than not: idle release's business, not a shrink. */
	if (a->since_change < QOS_ADAPT_WINDOW || a->used.n < QOS_ADAPT_WINDOW ||
			worked * 2 < QOS_ADAPT_WINDOW) {
		return false;
	}
	/* Peaks seconds apart (a video's key frames) fall outside the window. */
	if (a->over_period && a->periods - a->over_period < QOS_ADAPT_CALM) {
		return false;
	}
	if (a->thread_share_us && a->thread_share_us < cur &&
			qos_adapt_percentile(&a->used, QOS_ADAPT_WINDOW, 100) >= a->thread_share_us) {
		return false;
	}
	uint64_t target = clamp(a, p, with_margin(p95));
	/* Inside the band a jittery use changes nothing. */
	if (target >= cur || (cur - target) * 100 <= cur * QOS_ADAPT_BAND_PCT) {
		return false;
	}
	*slice_us = target;
	describe(why, why_len, "shrunk to", target, p95, reported);
	return true;
}

bool qos_adapt_decide(struct qos_adapt *a, const struct qos_params *p, uint64_t *slice_us,
		char *why, size_t why_len) {
	if (!qos_params_adaptive(p) || !qos_params_has_limit(p) || a->released) {
		return false;
	}
	if (p->adapt.auto_slice && !a->settled) {
		return decide_initial(a, p, slice_us, why, why_len);
	}
	if (!p->adapt.continuous) {
		return false;
	}
	return decide_continuous(a, p, slice_us, why, why_len);
}

void qos_adapt_changed(struct qos_adapt *a, uint64_t slice_us) {
	a->want_us = slice_us;
	a->since_change = 0;
}
