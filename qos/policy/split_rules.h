/*
 * qos/policy/split_rules.h - how a qos reserve's slice is divided among its member
 * threads by what each uses, kept free of clocks and kernel calls so tests
 * drive it with made-up figures.  Layer 0 (kernel and reporting): split.c
 * samples the threads once a period and applies what these rules plan.
 *
 * Rules (docs/qos-design.md, "Dividing a slice among threads"):
 *  - A thread's demand is the mean of its last QOS_SPLIT_HISTORY periods'
 *    use plus QOS_SPLIT_MARGIN_PCT, plus QOS_SPLIT_HEADROOM_PPM of the
 *    period.  A thread that ran QOS_SPLIT_FULL_PCT of its runtime ran out:
 *    its use says only what it was allowed, so it asks for
 *    QOS_SPLIT_THROTTLED_PCT more than its runtime.  No thread asks for
 *    more than the period (a slice may span several CPUs; a thread not).
 *  - A thread that has not run for QOS_SPLIT_PARK_PERIODS periods and is
 *    asleep (and did not run out) is parked: it waits at the fallback
 *    class with no runtime.  Once it runs there it is unparked and asks for
 *    what it ran.
 *  - The slice is divided max-min fair: each thread gets its demand when
 *    they all fit (what is left goes out in proportion to demand), else
 *    the same level for every thread that asks for more.  The planned
 *    runtimes never sum to more than the slice.
 *  - A runtime is changed only when the plan moves it by more than
 *    QOS_SPLIT_CHANGE_PCT, unless keeping it would take the sum past the
 *    slice.
 */
#ifndef QOS_SPLIT_RULES_H
#define QOS_SPLIT_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define QOS_SPLIT_HISTORY 4u
#define QOS_SPLIT_MARGIN_PCT 25u
#define QOS_SPLIT_HEADROOM_PPM 6000u /* 0.6% of a CPU */
#define QOS_SPLIT_FULL_PCT 90u
#define QOS_SPLIT_THROTTLED_PCT 50u
#define QOS_SPLIT_PARK_PERIODS 8u
#define QOS_SPLIT_CHANGE_PCT 10u
/* Looks a period for threads throttled at their share (split.c). */
#define QOS_SPLIT_CHECKS 4u
/* Less than this in a period is not running (ns). */
#define QOS_SPLIT_RAN_NS 1000u
/* The kernel's smallest deadline runtime (ns). */
#define QOS_SPLIT_MIN_NS 1024u

struct qos_split_thread {
	pid_t pid, tid;
	uint64_t cpu_ns; /* its CPU clock at the last sample (split.c) */
	uint64_t used[QOS_SPLIT_HISTORY]; /* per period, newest at head - 1 */
	unsigned head, n_used;
	uint64_t last_used_ns; /* the last period's use */
	uint64_t runtime_ns; /* deadline runtime it holds; 0: none (parked or not given yet) */
	uint64_t want_ns; /* the plan's runtime */
	uint32_t idle; /* periods in a row it has not run */
	bool parked;
	bool throttled; /* it ran out of its runtime in the last period */
	bool seen; /* listed in the last sample (split.c) */
	uint64_t ran_on; /* times it ran on in the fallback class after running out (split.c) */
};

struct qos_split {
	struct qos_split_thread *t;
	size_t n, cap;
	bool built; /* the threads are known: new ones start parked */
	uint64_t slice_ns, period_ns; /* what the plan divided */
	uint64_t last_us; /* the last sample, CLOCK_MONOTONIC */
	uint64_t next_us; /* the next one; UINT64_MAX none */
	uint64_t check_us; /* the next run-on look (split.c); 0 none */
	uint64_t starved; /* periods whose demand did not fit the slice (for adaptation) */
};

/*
 * One period's use of t (used_ns, scaled to a period), with whether it is
 * asleep now: keeps its history and decides whether it ran out, is idle,
 * parks or wakes.
 */
void qos_split_rules_sample(struct qos_split_thread *t, uint64_t used_ns, bool asleep);

/* What t asks for in a period of period_ns: 0 when parked. */
uint64_t qos_split_rules_demand(const struct qos_split_thread *t, uint64_t period_ns);

/*
 * Plans every thread's runtime (want_ns) from its demand: the slice divided
 * max-min fair, the sum at most slice_ns, a change only past the hysteresis.
 * Returns true when the demand did not fit the slice.
 */
bool qos_split_rules_plan(struct qos_split_thread *t, size_t n, uint64_t slice_ns,
		uint64_t period_ns);

/* The sum of the planned runtimes. */
uint64_t qos_split_rules_planned(const struct qos_split_thread *t, size_t n);

#endif
