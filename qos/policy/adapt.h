/*
 * qos/policy/adapt.h - the rules that size an adaptive reserve's slice (thesis
 * ch. 6), kept free of clocks and kernel calls so a fake clock drives them
 * in tests.  Layer 0 (kernel and reporting): adjust.c feeds it one sample
 * per completed period and applies what it decides through admission.
 *
 * Rules (docs/qos-design.md, "Adaptation"):
 *  - Periods the members used under 1% of the slice are idle and left out
 *    of the percentiles: the slice is sized for the program at work, idle
 *    release gives an idle one's capacity back.
 *  - cpu=auto: after QOS_ADAPT_INITIAL_PERIODS samples, half of them not
 *    idle, the slice becomes their 95th percentile plus
 *    QOS_ADAPT_MARGIN_PCT, within the bounds (a reserve without idle
 *    release settles after a ring of samples, idle or not).
 *    The first QOS_ADAPT_WARMUP periods are not among them: the period a
 *    member joined in is partial, and a task changing class runs what it
 *    fell behind on.
 *  - adapt=yes: the slice grows by a quarter (or to the percentile plus
 *    margin, if more) when at least 2 of the last 16 periods used it up,
 *    or one did and another had less than QOS_ADAPT_CALM periods before,
 *    a cpu=auto slice at once to its first guess if that is more, and
 *    shrinks to the percentile plus margin of the last 16 periods when
 *    that is below the slice by more than QOS_ADAPT_BAND_PCT, half of
 *    them were not idle and none used the slice up for QOS_ADAPT_CALM
 *    periods.  cpu=auto's measurement cut short by the provisional slice
 *    (2 of the last 16 periods used it up) settles no lower than the
 *    grow rule's step.  A change
 *    starts the count afresh, so each rule sees only periods run with the
 *    slice it judges.  No shrink while a thread may have been throttled at
 *    its share of a split slice (thread_share_us).
 *  - Reports of the work done per frame (qos_manager_report_work), when
 *    one came in the last QOS_ADAPT_REPORT_FRESH periods, count where they
 *    say more than the measured use: they tell what the work needs where
 *    the slice held it back, but cover only what the application timed
 *    (not its drawing or protocol traffic), so they never lower the figure.
 */
#ifndef QOS_ADAPT_H
#define QOS_ADAPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qos/params.h"

#define QOS_ADAPT_RING 32u
#define QOS_ADAPT_INITIAL_PERIODS 20u
#define QOS_ADAPT_WARMUP 2u
#define QOS_ADAPT_WINDOW 16u /* periods the shrink rule looks at */
#define QOS_ADAPT_MARGIN_PCT 15u
#define QOS_ADAPT_BAND_PCT 25u
#define QOS_ADAPT_GROW_PCT 25u
#define QOS_ADAPT_GROW_OVERS 2u /* of the last QOS_ADAPT_GROW_SPAN periods */
#define QOS_ADAPT_GROW_SPAN 16u
/* No shrink until this many periods passed without one used up (about 2 s
 * at 60 Hz): a video's key frames, seconds apart, need the slice back. */
#define QOS_ADAPT_CALM 128u
#define QOS_ADAPT_REPORT_FRESH 8u
/* No slice below this: the deadline class and the timers want some room. */
#define QOS_ADAPT_MIN_SLICE_US 100u

/* cpu=auto's slice before anything is measured: half the period. */
static inline uint64_t qos_adapt_first_guess_us(const struct qos_params *p) {
	return p->period_us / 2;
}

/* A period's use that counts as none: under 1% of the slice.  Adaptation
 * sizes nothing by such periods, idle release counts them. */
static inline bool qos_adapt_idle_use(uint64_t used_us, uint64_t slice_us) {
	return used_us * 100 < slice_us;
}

/* A ring of per-period figures, newest at head - 1. */
struct qos_adapt_ring {
	uint64_t v[QOS_ADAPT_RING];
	bool over[QOS_ADAPT_RING]; /* the period used the slice up */
	unsigned head, n;
};

struct qos_adapt {
	struct qos_adapt_ring used; /* own + billed per period, as police booked it */
	struct qos_adapt_ring work; /* reported work, scaled to a period */
	uint64_t periods; /* samples taken */
	uint64_t report_period; /* periods when the last report came */
	bool reported;
	unsigned since_change; /* samples since the slice last changed */
	bool settled; /* cpu=auto's first measurement is done */
	uint64_t want_us; /* the slice last decided (granted or not); 0: none yet */
	/* Set by a decision to grow past the plain step: that step, for the
	 * caller to ask for when admission refuses the decision; else 0. */
	uint64_t modest_us;
	/*
	 * Set by the caller before deciding: the share of the slice each member
	 * thread's deadline runtime holds (the slice split over the threads),
	 * 0 for the whole slice.  The kernel throttles a thread at its share
	 * with no overrun of the reserve to see, so a period used that far
	 * may have been cut short: no shrink then.
	 */
	uint64_t thread_share_us;
	/*
	 * Set by the caller before deciding: the CPUs a qos reserve's threads
	 * can run on at once while its slice is divided among them (each
	 * thread's runtime still fits one period).  The slice may grow to that
	 * many periods; 0 or 1: one CPU, the period.
	 */
	unsigned cpus;
	/* Kept by adjust.c: the police counters last seen, and idle release. */
	uint64_t seen_periods, seen_overruns;
	uint32_t idle_run; /* consecutive periods without use */
	/* The last period that used the slice up, and the one before, in
	 * a->periods since the reset (which counts from 1); 0: none. */
	uint64_t over_period, prev_over_period;
	uint32_t vblank_off; /* consecutive vblanks out of phase (period=vblank) */
	bool released;
	bool refusal_told; /* a refused re-admission was reported for this wake */
	uint64_t retry_us; /* ... and is not asked for again before this */
	uint64_t wake_check_us; /* released: when to read the members' clocks next; 0 none */
	uint64_t own_seen_us; /* ... and their own CPU time at the last read */
	struct qos_params kept; /* the reserve's own parameters while released */
};

/* Forgets every sample and decision (new parameters from the user). */
void qos_adapt_reset(struct qos_adapt *a);

/* One completed period: used_us of it, and whether it used the slice up. */
void qos_adapt_sample(struct qos_adapt *a, uint64_t used_us, bool overran);

/*
 * n periods completed since the last call, looked at together: each used
 * used_us (their average), the last `overruns` of them used the slice up.
 * Reports that came since the last call are as recent as the newest of
 * them: a quiet reserve is looked at once a second, and its reports must
 * not read as stale for the periods that passed meanwhile.
 */
void qos_adapt_periods(struct qos_adapt *a, uint64_t n, uint64_t used_us, uint64_t overruns);

/*
 * A report of one frame's work: actual_us against target_us, scaled to a
 * period of period_us.  False (nothing kept) for a zero target.
 */
bool qos_adapt_report(struct qos_adapt *a, uint64_t target_us, uint64_t actual_us,
		uint64_t period_us);

/*
 * Whether p's slice should change now; if so, true with the new slice in
 * *slice_us and why in `why` ("slice 4.2ms (p95 3.6ms + 15%)").  The
 * caller applies it, then calls qos_adapt_changed whether admission
 * granted it or not.
 */
bool qos_adapt_decide(struct qos_adapt *a, const struct qos_params *p, uint64_t *slice_us,
		char *why, size_t why_len);

/*
 * A change to slice_us was applied or refused: the rules start counting
 * afresh either way, so a refused growth is asked for again only after as
 * many periods as a granted one would wait.
 */
void qos_adapt_changed(struct qos_adapt *a, uint64_t slice_us);

/* The slice bounds for p with a->cpus: [*lo, *hi] microseconds. */
void qos_adapt_bounds(const struct qos_adapt *a, const struct qos_params *p, uint64_t *lo,
		uint64_t *hi);

/* The p-th percentile (0..100) of the last n figures of the ring (n <= its count). */
uint64_t qos_adapt_percentile(const struct qos_adapt_ring *ring, unsigned n, unsigned pct);

#endif
