/*
 * qos/policy/police.h - the per-reserve accounting and dual-policy state machine
 * (thesis 3.4.2-3.5), kept free of clocks and kernel calls so it can be driven
 * by a fake clock in tests.
 *
 * The caller feeds it the reserve's cumulative own CPU time (from cpu.stat,
 * cpuacct.usage or schedstat; never tick samples) plus billed time, and acts
 * on the returned transition.  Periods are aligned to the first start time.
 */
#ifndef QOS_POLICE_H
#define QOS_POLICE_H

#include <stdbool.h>
#include <stdint.h>

/* Shortest gap between two budget checks inside one period. */
#define QOS_POLICE_MIN_STEP_US 500u
/* Accounting window for reserves without a limit (usage reporting only). */
#define QOS_POLICE_REPORT_PERIOD_US 1000000u

enum qos_police_transition {
	QOS_POLICE_NONE,
	QOS_POLICE_OVERRUN, /* slice exhausted: switch to the fallback policy */
	QOS_POLICE_RESTORE, /* new period after an overrun: back to the policy */
};

struct qos_police {
	uint64_t period_us; /* 0 when the reserve has no limit */
	uint64_t slice_us;
	uint64_t period_start_us; /* start of the current period */
	uint64_t base_own_us; /* cumulative own time at period start */
	uint64_t own_us; /* own time used in this period */
	uint64_t billed_us; /* billed time charged in this period */
	uint64_t last_used_us; /* own + billed of the previous period (the average
	                           * per period when several passed unchecked) */
	uint64_t last_billed_us; /* the billed part of last_used_us (averaged alike) */
	unsigned parallel; /* CPUs the members can use at once (>= 1) */
	/*
	 * Tick-notified policing (cputimer.h): the kernel reports an overrun
	 * up to a tick late and the manager sleeps through quiet periods, so
	 *  - time used past the slice is carried into the next periods as debt
	 *    (as the CBS and cpu.max do), keeping the long-run share exact;
	 *  - after unchecked periods, the time since the last check is charged
	 *    to the current period as far as wall time allows (it may all be
	 *    recent), not averaged away over the quiet periods.
	 */
	bool notified;
	uint64_t debt_us; /* carried over from earlier periods (notified) */
	uint64_t fb_own_us; /* own_us when the fallback began */
	/*
	 * Set by the caller: how much of what the members run in the fallback
	 * after a switch still counts as use of the slice.  A switch the kernel
	 * applies only at its next tick (a group made idle: the running thread
	 * keeps the CPU until then) lets them run up to a tick more in the
	 * reserve's class, so that tick is owed; a synchronous switch (a
	 * thread's policy, a freeze) owes nothing.  Beyond it, fallback time is
	 * no debt: an idle fallback on a free CPU would otherwise pile up
	 * seconds of it and be kept idle long after load arrived.
	 */
	uint64_t fallback_grace_us;
	uint64_t fb_grace_left_us; /* of the grace, for the current fallback stint */
	/*
	 * Set by the caller when members cannot leave the fallback at the
	 * boundary (optimistic threads waiting for a safe return): the period
	 * ends without a restore, and their time counts as fallback time.
	 */
	bool hold_fallback;
	bool held; /* in the fallback by hold_fallback, not by an overrun */
	/*
	 * Set by the caller before each update: the overrun is declared once
	 * no more than early_us of the slice is left, if the members ran since
	 * the last update (optimistic qos, see fallback.c's timer_guard_us).
	 */
	uint64_t early_us;
	bool running;
	/*
	 * Set by the caller before each update: time the members ran that the
	 * counter does not show yet (a running thread's clock only moves at
	 * ticks and switches), and how close to the slice a switch is made.
	 * Within early_us of the slice and with more than margin_us left, no
	 * overrun is declared: switch_at_us (0 otherwise) says when the slice
	 * will be within margin_us of running out if the members keep running,
	 * and the caller checks again then.  So an optimistic reserve gives up
	 * margin_us of its slice rather than a tick.
	 */
	uint64_t projected_us;
	uint64_t margin_us;
	uint64_t switch_at_us;
	/*
	 * Set by the caller: the kernel holds the members to the slice by
	 * itself (a deadline runtime, a CFS or real-time group quota), in a
	 * window of its own, and an overrun of their own time needs no act of
	 * the caller.  Then
	 *  - what they run after an overrun counts as use (no fallback stops
	 *    them; the kernel does, in its window);
	 *  - their own time past the slice is not carried: the kernel's window
	 *    pays it back by itself.  Billed time, which the kernel never
	 *    sees, is, as for a polled reserve;
	 *  - a period that ends used up with no overrun seen in it (the
	 *    kernel throttled the members at the very tick that would have
	 *    told the caller, which then hears of it only once they run
	 *    again) counts as one at its end: the update sets late_overrun
	 *    and returns the restore of the new period, or, used up again at
	 *    once (billed time owed), no transition with in_fallback set.
	 */
	bool kernel_enforced;
	bool late_overrun;
	bool in_fallback;
	uint64_t periods; /* completed periods */
	uint64_t overruns; /* periods in which the slice ran out */
};

void qos_police_start(struct qos_police *p, uint64_t period_us, uint64_t slice_us, uint64_t now_us,
		uint64_t own_cumulative_us);

/* Changing parameters restarts the period; the fallback state is kept. */
void qos_police_set_limit(struct qos_police *p, uint64_t period_us, uint64_t slice_us,
		uint64_t now_us, uint64_t own_cumulative_us);

/*
 * Ends a held fallback early: a new period starts at now_us, out of the
 * fallback and without debt (the members' deadline reservation starts
 * afresh with it).
 */
void qos_police_resume(struct qos_police *p, uint64_t now_us, uint64_t own_cumulative_us);

/* Time the compositor spent for this reserve; counts like own time. */
void qos_police_bill(struct qos_police *p, uint64_t usec);

/*
 * Advances to now_us with the given cumulative own time.  Returns the
 * transition the caller must apply and stores the next time it wants to be
 * called in *next_check_us.
 */
enum qos_police_transition qos_police_update(struct qos_police *p, uint64_t now_us,
		uint64_t own_cumulative_us, uint64_t *next_check_us);

/*
 * The first boundary at which a reserve in its fallback can leave it, if it
 * is billed nothing more: before it, a notified reserve that entered the
 * fallback at a boundary (its grace spent, so time run there owes nothing)
 * stays there by the debt alone, and checks would find nothing to do.  A
 * check at that boundary settles the periods between in one go, counting
 * them as overruns as checks at each would have.  Otherwise, and outside
 * the fallback, the end of the current period.
 */
uint64_t qos_police_fallback_end_us(const struct qos_police *p);

uint64_t qos_police_used_us(const struct qos_police *p);
uint64_t qos_police_period_end_us(const struct qos_police *p);

#endif
