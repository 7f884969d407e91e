/* The dual-policy state machine against a fake clock, including billing. */
#include "check.h"
#include "qos/policy/police.h"

static void test_ceiling_cycle(void) {
	struct qos_police p;
	uint64_t next;
	/* 20 ms period, 4 ms slice; the member runs flat out from t=0. */
	qos_police_start(&p, 20000, 4000, 1000000, 500);
	CHECK(qos_police_update(&p, 1000000, 500, &next) == QOS_POLICE_NONE);
	CHECK_EQ_U(next, 1004000); /* earliest possible exhaustion */
	CHECK(qos_police_update(&p, 1003000, 3500, &next) == QOS_POLICE_NONE);
	CHECK_EQ_U(next, 1004000);
	CHECK(qos_police_update(&p, 1004000, 4500, &next) == QOS_POLICE_OVERRUN);
	CHECK(p.in_fallback);
	CHECK_EQ_U(next, 1020000); /* nothing to do until the period ends */
	CHECK(qos_police_update(&p, 1010000, 4600, &next) == QOS_POLICE_NONE);
	CHECK(qos_police_update(&p, 1020000, 4700, &next) == QOS_POLICE_RESTORE);
	CHECK(!p.in_fallback);
	CHECK_EQ_U(p.last_used_us, 4200);
	CHECK_EQ_U(p.periods, 1);
	CHECK_EQ_U(p.overruns, 1);
	CHECK_EQ_U(qos_police_used_us(&p), 0);
	CHECK_EQ_U(next, 1024000);
}

static void test_light_member(void) {
	struct qos_police p;
	uint64_t next;
	qos_police_start(&p, 10000, 5000, 0, 0);
	/* Uses 1 ms per period: never overruns, checks back off to the boundary. */
	uint64_t own = 0;
	for (uint64_t t = 0; t < 100000; t += 10000) {
		CHECK(qos_police_update(&p, t, own, &next) == QOS_POLICE_NONE);
		own += 1000;
	}
	CHECK_EQ_U(p.overruns, 0);
	CHECK_EQ_U(p.periods, 9);
	CHECK_EQ_U(p.last_used_us, 1000);
	/* The timer never fires more often than the minimum step. */
	qos_police_start(&p, 10000, 5000, 0, 0);
	CHECK(qos_police_update(&p, 9800, 4900, &next) == QOS_POLICE_NONE);
	CHECK_EQ_U(next, 10000);
	qos_police_start(&p, 100000, 5000, 0, 0);
	CHECK(qos_police_update(&p, 1000, 4900, &next) == QOS_POLICE_NONE);
	CHECK_EQ_U(next, 1000 + QOS_POLICE_MIN_STEP_US);
}

static void test_billing(void) {
	struct qos_police p;
	uint64_t next;
	qos_police_start(&p, 20000, 6000, 0, 0);
	CHECK(qos_police_update(&p, 1000, 1000, &next) == QOS_POLICE_NONE);
	/* The compositor spent 4 ms for the member; with 1 ms own time 5 of 6 are gone. */
	qos_police_bill(&p, 4000);
	CHECK(qos_police_update(&p, 1100, 1000, &next) == QOS_POLICE_NONE);
	CHECK_EQ_U(qos_police_used_us(&p), 5000);
	CHECK_EQ_U(next, 2100);
	qos_police_bill(&p, 1000);
	CHECK(qos_police_update(&p, 1200, 1000, &next) == QOS_POLICE_OVERRUN);
	/* Billed time is reported with the period and forgotten at the boundary. */
	CHECK(qos_police_update(&p, 20000, 1500, &next) == QOS_POLICE_RESTORE);
	CHECK_EQ_U(p.last_used_us, 6500);
	CHECK_EQ_U(qos_police_used_us(&p), 0);
	/* Bills alone can exhaust a reserve whose members sleep. */
	qos_police_bill(&p, 7000);
	CHECK(qos_police_update(&p, 21000, 1500, &next) == QOS_POLICE_OVERRUN);
}

static void test_missed_boundaries(void) {
	struct qos_police p;
	uint64_t next;
	qos_police_start(&p, 10000, 2000, 0, 0);
	CHECK(qos_police_update(&p, 500, 2500, &next) == QOS_POLICE_OVERRUN);
	/* The loop stalled for 3.5 periods: one restore, aligned to the grid. */
	CHECK(qos_police_update(&p, 35000, 2600, &next) == QOS_POLICE_RESTORE);
	CHECK_EQ_U(p.period_start_us, 30000);
	CHECK_EQ_U(p.periods, 3);
	CHECK_EQ_U(p.last_used_us, 2600 / 3); /* the average of the periods it spanned */
	/* Lazy accounting of a reserve the kernel caps: one check a second. */
	qos_police_start(&p, 10000, 1000, 0, 0);
	CHECK(qos_police_update(&p, 1000000, 100000, &next) == QOS_POLICE_NONE);
	CHECK_EQ_U(p.periods, 100);
	CHECK_EQ_U(p.last_used_us, 1000);
	CHECK_EQ_U(qos_police_used_us(&p), 0);
	/* Overrun detected exactly at the boundary cancels the restore. */
	qos_police_start(&p, 10000, 2000, 0, 0);
	CHECK(qos_police_update(&p, 2000, 2000, &next) == QOS_POLICE_OVERRUN);
	CHECK(qos_police_update(&p, 10000, 4100, &next) == QOS_POLICE_RESTORE);
	qos_police_bill(&p, 2500);
	CHECK(qos_police_update(&p, 10001, 4100, &next) == QOS_POLICE_OVERRUN);
	/* A counter that drops (member left) does not wrap. */
	CHECK(qos_police_update(&p, 20000, 100, &next) == QOS_POLICE_RESTORE);
	CHECK(qos_police_update(&p, 20500, 300, &next) == QOS_POLICE_NONE);
	/* 200 us its own, and the 500 us billed past the last slice still owed. */
	CHECK_EQ_U(qos_police_used_us(&p), 700);
}

/*
 * Billed time past the slice carries into the next periods for a polled
 * reserve as for a notified one, survives the return from a held fallback,
 * and a bill too big to count holds the fallback rather than wrapping.
 */
static void test_billed_debt(void) {
	struct qos_police p;
	uint64_t next;
	qos_police_start(&p, 100000, 20000, 0, 0);
	qos_police_bill(&p, 100000);
	CHECK(qos_police_update(&p, 1000, 0, &next) == QOS_POLICE_OVERRUN);
	/* Five slices billed: four periods more in the fallback. */
	int overruns = 0;
	for (uint64_t t = 100000; t <= 500000; t += 100000) {
		enum qos_police_transition tr = qos_police_update(&p, t, 0, &next);
		if (tr == QOS_POLICE_OVERRUN || (tr == QOS_POLICE_NONE && p.in_fallback)) {
			overruns++;
		}
	}
	CHECK(p.in_fallback == false);
	CHECK(overruns >= 3);
	CHECK_EQ_U(qos_police_used_us(&p), 0);

	qos_police_start(&p, 100000, 20000, 0, 0);
	qos_police_bill(&p, 60000);
	CHECK(qos_police_update(&p, 1000, 0, &next) == QOS_POLICE_OVERRUN);
	qos_police_update(&p, 100000, 0, &next);
	uint64_t owed = p.debt_us;
	CHECK(owed > 0);
	qos_police_resume(&p, 100500, 0);
	CHECK_EQ_U(p.debt_us, owed);

	qos_police_start(&p, 100000, 20000, 0, 0);
	qos_police_bill(&p, UINT64_MAX - 5);
	qos_police_bill(&p, 10000);
	CHECK_EQ_U(qos_police_used_us(&p), UINT64_MAX);
	CHECK(qos_police_update(&p, 1000, 500, &next) == QOS_POLICE_OVERRUN);
}

static void test_unlimited_and_parallel(void) {
	struct qos_police p;
	uint64_t next;
	qos_police_start(&p, 0, 0, 0, 0);
	CHECK(qos_police_update(&p, 400000, 900000, &next) == QOS_POLICE_NONE);
	CHECK_EQ_U(next, QOS_POLICE_REPORT_PERIOD_US);
	CHECK(qos_police_update(&p, 1000000, 1500000, &next) == QOS_POLICE_NONE);
	CHECK_EQ_U(p.last_used_us, 1500000);
	/* Two CPUs burn a budget twice as fast, so check twice as early. */
	qos_police_start(&p, 20000, 8000, 0, 0);
	p.parallel = 2;
	CHECK(qos_police_update(&p, 0, 0, &next) == QOS_POLICE_NONE);
	CHECK_EQ_U(next, 4000);
	/* Changing the limit restarts the period but keeps the fallback state. */
	CHECK(qos_police_update(&p, 4000, 8000, &next) == QOS_POLICE_OVERRUN);
	qos_police_set_limit(&p, 40000, 8000, 5000, 8200);
	CHECK(p.in_fallback);
	CHECK(qos_police_update(&p, 45000, 9000, &next) == QOS_POLICE_RESTORE);
}

static void test_notified_debt(void) {
	struct qos_police p;
	uint64_t next;
	/* 10 ms period, 1 ms slice; the kernel reports the overrun a 4 ms tick late. */
	qos_police_start(&p, 10000, 1000, 0, 0);
	p.notified = true;
	CHECK(qos_police_update(&p, 4000, 4000, &next) == QOS_POLICE_OVERRUN);
	/* 3 ms over: the next three periods are still paid for, no restore. */
	CHECK(qos_police_update(&p, 10000, 4000, &next) == QOS_POLICE_NONE);
	CHECK(p.in_fallback);
	CHECK_EQ_U(p.debt_us, 3000);
	CHECK_EQ_U(p.last_used_us, 4000);
	CHECK(qos_police_update(&p, 20000, 4000, &next) == QOS_POLICE_NONE);
	CHECK_EQ_U(p.debt_us, 2000);
	CHECK(qos_police_update(&p, 30000, 4000, &next) == QOS_POLICE_NONE);
	CHECK_EQ_U(p.debt_us, 1000);
	CHECK(qos_police_update(&p, 40000, 4000, &next) == QOS_POLICE_RESTORE);
	CHECK_EQ_U(p.debt_us, 0);
	CHECK(!p.in_fallback);
	/* Over five periods it had 4 ms + 1 ms: its 10% exactly. */
	CHECK(qos_police_update(&p, 41000, 5000, &next) == QOS_POLICE_OVERRUN);
	CHECK_EQ_U(p.overruns, 5);
	/* Several periods passed at once repay a slice each. */
	qos_police_start(&p, 10000, 1000, 0, 0);
	p.notified = true;
	CHECK(qos_police_update(&p, 5000, 5000, &next) == QOS_POLICE_OVERRUN);
	CHECK(qos_police_update(&p, 30000, 5000, &next) == QOS_POLICE_NONE);
	CHECK_EQ_U(p.debt_us, 2000);
	/*
	 * Members that left the class at the overrun (optimistic qos): 5 ms
	 * more in the fallback owe nothing; only the 3 ms before are carried.
	 */
	qos_police_start(&p, 10000, 1000, 0, 0);
	p.notified = true;
	CHECK(qos_police_update(&p, 4000, 4000, &next) == QOS_POLICE_OVERRUN);
	CHECK(qos_police_update(&p, 7000, 6000, &next) == QOS_POLICE_NONE);
	CHECK(qos_police_update(&p, 10000, 9000, &next) == QOS_POLICE_NONE);
	CHECK_EQ_U(p.debt_us, 3000);
	CHECK_EQ_U(p.last_used_us, 9000);
	/* Without notification (polled) nothing is carried. */
	qos_police_start(&p, 10000, 1000, 0, 0);
	CHECK(qos_police_update(&p, 4000, 4000, &next) == QOS_POLICE_OVERRUN);
	CHECK(qos_police_update(&p, 10000, 4000, &next) == QOS_POLICE_RESTORE);
	CHECK_EQ_U(p.debt_us, 0);
}

/*
 * A group made idle keeps running until the kernel's next tick: up to a tick
 * of fallback time counts, once per switch.  On a free CPU the idle group
 * then runs every period through; none of that is debt, so the fallback
 * ends a bounded number of periods later (before, a reserve alone for 3 s
 * carried 2.7 s of debt and got 0.4% instead of 10% once load came).
 */
static void test_idle_fallback_debt_is_bounded(void) {
	struct qos_police p;
	uint64_t next;
	qos_police_start(&p, 10000, 1000, 0, 0);
	p.notified = true;
	p.fallback_grace_us = 4000;
	CHECK(qos_police_update(&p, 4000, 4000, &next) == QOS_POLICE_OVERRUN);
	/* 6 ms in the fallback, 4 of them owed: 8 ms used, 7 ms carried. */
	CHECK(qos_police_update(&p, 10000, 10000, &next) == QOS_POLICE_NONE);
	CHECK(p.in_fallback);
	CHECK_EQ_U(p.debt_us, 7000);
	CHECK_EQ_U(p.last_used_us, 10000);
	/* Never switched back: whole periods in the fallback owe nothing. */
	uint64_t own = 10000;
	for (uint64_t end = 20000; end <= 70000; end += 10000) {
		own += 10000;
		CHECK(qos_police_update(&p, end, own, &next) == QOS_POLICE_NONE);
		CHECK(p.in_fallback);
		CHECK_EQ_U(p.debt_us, 7000 - (end - 10000) / 10);
	}
	CHECK(qos_police_update(&p, 80000, own + 10000, &next) == QOS_POLICE_RESTORE);
	CHECK_EQ_U(p.debt_us, 0);
	CHECK(!p.in_fallback);
	/* The next switch has its grace again: 1 ms over, then 1 ms more, all owed. */
	CHECK(qos_police_update(&p, 82000, 82000, &next) == QOS_POLICE_OVERRUN);
	CHECK(qos_police_update(&p, 90000, 83000, &next) == QOS_POLICE_NONE);
	CHECK_EQ_U(p.debt_us, 2000);
}

/*
 * A reserve kept in its fallback by debt needs no check at the boundaries
 * before qos_police_fallback_end_us: one check there (a wake-up late) leaves
 * it as checks at every boundary do, in debt, state and overruns.
 */
static void test_fallback_end_skips_boundaries(void) {
	for (uint64_t over = 0; over <= 7000; over += 700) {
		struct qos_police every, once;
		uint64_t next;
		qos_police_start(&every, 10000, 1000, 0, 0);
		every.notified = true;
		every.fallback_grace_us = 4000;
		/* Reported a tick late; then it runs half the time in the fallback. */
		CHECK(qos_police_update(&every, 3000, 1000 + over, &next) == QOS_POLICE_OVERRUN);
		uint64_t own = 1000 + over + 3500;
		CHECK(qos_police_update(&every, 10050, own, &next) == QOS_POLICE_NONE ||
				!every.in_fallback);
		if (!every.in_fallback) {
			CHECK(over < 1000); /* within the grace, so nothing was carried */
			continue;
		}
		once = every;
		uint64_t end = qos_police_fallback_end_us(&once);
		CHECK(end >= 20000 && end % 10000 == 0);
		enum qos_police_transition t = QOS_POLICE_NONE;
		for (uint64_t b = 20000; b <= end; b += 10000) {
			own += 5000;
			t = qos_police_update(&every, b + 50, own, &next);
			CHECK(b == end || (t == QOS_POLICE_NONE && every.in_fallback));
		}
		CHECK(t == QOS_POLICE_RESTORE);
		CHECK(qos_police_update(&once, end + 50, own, &next) == QOS_POLICE_RESTORE);
		CHECK_EQ_U(once.debt_us, every.debt_us);
		CHECK_EQ_U(once.overruns, every.overruns);
		CHECK_EQ_U(once.periods, every.periods);
		CHECK_EQ_U(qos_police_used_us(&once), qos_police_used_us(&every));
	}
	/* Billed time, or a grace not spent yet: the next boundary. */
	struct qos_police p;
	uint64_t next;
	qos_police_start(&p, 10000, 1000, 0, 0);
	p.notified = true;
	p.fallback_grace_us = 4000;
	CHECK(qos_police_update(&p, 3000, 6000, &next) == QOS_POLICE_OVERRUN);
	CHECK_EQ_U(qos_police_fallback_end_us(&p), 10000);
	CHECK(qos_police_update(&p, 10000, 6000, &next) == QOS_POLICE_NONE);
	CHECK_EQ_U(qos_police_fallback_end_us(&p), 60000); /* 5 ms of debt */
	qos_police_bill(&p, 100);
	CHECK_EQ_U(qos_police_fallback_end_us(&p), 20000);
}

static void test_notified_quiet_periods(void) {
	struct qos_police p;
	uint64_t next;
	/* Checked last at t=0; the kernel wakes us at 52 ms after 2 ms of use. */
	qos_police_start(&p, 10000, 1000, 0, 0);
	p.notified = true;
	CHECK(qos_police_update(&p, 52000, 2000, &next) == QOS_POLICE_OVERRUN);
	/* Only 2 ms of this period had passed: all of it may be recent. */
	CHECK_EQ_U(p.period_start_us, 50000);
	CHECK_EQ_U(qos_police_used_us(&p), 2000);
	CHECK_EQ_U(p.periods, 5);
	/* Used longer ago than the current period allows: the rest is history. */
	qos_police_start(&p, 10000, 1000, 0, 0);
	p.notified = true;
	CHECK(qos_police_update(&p, 50500, 3000, &next) == QOS_POLICE_NONE);
	CHECK_EQ_U(qos_police_used_us(&p), 500);
	CHECK_EQ_U(p.last_used_us, 500);
	/* Polled reserves average it over the periods, as before. */
	qos_police_start(&p, 10000, 1000, 0, 0);
	CHECK(qos_police_update(&p, 52000, 2000, &next) == QOS_POLICE_NONE);
	CHECK_EQ_U(qos_police_used_us(&p), 0);
}

static void test_early_overrun_and_hold(void) {
	struct qos_police p;
	uint64_t next;
	/*
	 * 20 ms / 6 ms, a 4 ms tick, a 300 us margin: with 4 ms or less left
	 * the switch is planned for when 300 us will be left...
	 */
	qos_police_start(&p, 20000, 6000, 0, 0);
	p.notified = true;
	p.early_us = 4000;
	p.margin_us = 300;
	p.running = true;
	CHECK(qos_police_update(&p, 1500, 1500, &next) == QOS_POLICE_NONE);
	CHECK_EQ_U(p.switch_at_us, 0);
	CHECK(qos_police_update(&p, 2100, 2100, &next) == QOS_POLICE_NONE);
	CHECK_EQ_U(p.switch_at_us, 2100 + 3900 - 300);
	/* ...and made then on the time the counter does not show yet. */
	p.running = false;
	p.projected_us = 5700 - 2100;
	CHECK(qos_police_update(&p, 5700, 2100, &next) == QOS_POLICE_OVERRUN);
	CHECK_EQ_U(p.overruns, 1);
	CHECK_EQ_U(p.switch_at_us, 0);
	/* Two CPUs' worth of members use it up twice as fast. */
	qos_police_start(&p, 20000, 6000, 0, 0);
	p.parallel = 2;
	p.early_us = 8000;
	p.margin_us = 300;
	p.running = true;
	CHECK(qos_police_update(&p, 1000, 2000, &next) == QOS_POLICE_NONE);
	CHECK_EQ_U(p.switch_at_us, 1000 + (4000 - 300) / 2);
	/* Not seen running since the last update, nothing projected: no switch. */
	qos_police_start(&p, 20000, 6000, 0, 0);
	p.early_us = 4000;
	p.margin_us = 300;
	p.running = false;
	CHECK(qos_police_update(&p, 2500, 2500, &next) == QOS_POLICE_NONE);
	CHECK_EQ_U(p.switch_at_us, 0);
	/*
	 * A slice shorter than the tick gives up at most half (fallback.c):
	 * a light member seen running keeps its reservation...
	 */
	qos_police_start(&p, 10000, 100, 0, 0);
	p.notified = true;
	p.early_us = 50;
	p.margin_us = 300;
	p.running = true;
	CHECK(qos_police_update(&p, 10, 0, &next) == QOS_POLICE_NONE);
	CHECK(qos_police_update(&p, 20, 30, &next) == QOS_POLICE_NONE);
	CHECK(qos_police_update(&p, 30, 60, &next) == QOS_POLICE_OVERRUN);
	/*
	 * ...and a boundary its threads cannot return at holds the fallback:
	 * no restore, and what ran in the fallback is no debt.
	 */
	p.hold_fallback = true;
	CHECK(qos_police_update(&p, 10000, 9000, &next) == QOS_POLICE_NONE);
	CHECK(p.in_fallback);
	CHECK(p.held);
	CHECK_EQ_U(p.debt_us, 0);
	CHECK_EQ_U(p.last_used_us, 9000);
	CHECK(qos_police_update(&p, 15000, 14000, &next) == QOS_POLICE_NONE);
	CHECK(p.in_fallback);
	/* They are back: a new period from then, out of the fallback. */
	qos_police_resume(&p, 15500, 14000);
	CHECK(!p.in_fallback);
	CHECK(!p.held);
	CHECK_EQ_U(p.period_start_us, 15500);
	CHECK_EQ_U(qos_police_period_end_us(&p), 25500);
	CHECK_EQ_U(p.periods, 1);
	CHECK_EQ_U(p.overruns, 1);
	CHECK_EQ_U(p.last_used_us, 9000);
	p.hold_fallback = false;
	CHECK(qos_police_update(&p, 16000, 14050, &next) == QOS_POLICE_NONE);
	CHECK_EQ_U(qos_police_used_us(&p), 50);
}

/*
 * A limit the kernel holds by itself (qos_police.kernel_enforced): the
 * police only watches.  Own time past the slice is the kernel's to pay back,
 * billed time is carried, time run after the overrun is use, and a period
 * that ends used up unseen counts as an overrun at its end.
 */
static void test_kernel_enforced(void) {
	struct qos_police p;
	uint64_t next;
	/*
	 * 100 ms / 20 ms; the overrun is seen a tick late, 3 ms past the slice,
	 * and the members run 2 ms more in the kernel's window.
	 */
	qos_police_start(&p, 100000, 20000, 0, 0);
	p.notified = true;
	p.kernel_enforced = true;
	CHECK(qos_police_update(&p, 23000, 23000, &next) == QOS_POLICE_OVERRUN);
	CHECK(!p.late_overrun);
	CHECK(qos_police_update(&p, 30000, 25000, &next) == QOS_POLICE_NONE);
	CHECK_EQ_U(qos_police_used_us(&p), 25000); /* all of it is use */
	CHECK_EQ_U(qos_police_fallback_end_us(&p), 100000);
	CHECK(qos_police_update(&p, 100000, 25000, &next) == QOS_POLICE_RESTORE);
	CHECK_EQ_U(p.last_used_us, 25000);
	CHECK_EQ_U(p.debt_us, 0); /* the kernel's window pays it back */
	CHECK_EQ_U(p.overruns, 1);
	/* Not kernel-enforced (a fallback the caller applies), the 3 ms are carried. */
	struct qos_police q;
	qos_police_start(&q, 100000, 20000, 0, 0);
	q.notified = true;
	CHECK(qos_police_update(&q, 23000, 23000, &next) == QOS_POLICE_OVERRUN);
	CHECK(qos_police_update(&q, 30000, 25000, &next) == QOS_POLICE_NONE);
	CHECK_EQ_U(qos_police_fallback_end_us(&q), 100000);
	CHECK(qos_police_update(&q, 100000, 25000, &next) == QOS_POLICE_RESTORE);
	CHECK_EQ_U(q.debt_us, 3000);

	/*
	 * The kernel throttled the member at the tick that would have told us:
	 * the next look is at the boundary, which reports the overrun of the
	 * period that ended and the restore of the new one, once.
	 */
	CHECK(qos_police_update(&p, 150000, 25000 + 19000, &next) == QOS_POLICE_NONE);
	CHECK(qos_police_update(&p, 200000, 25000 + 20500, &next) == QOS_POLICE_RESTORE);
	CHECK(p.late_overrun);
	CHECK(!p.in_fallback);
	CHECK_EQ_U(p.last_used_us, 20500);
	CHECK_EQ_U(p.overruns, 2);
	CHECK_EQ_U(p.periods, 2);
	/* A period within its slice: no late overrun. */
	CHECK(qos_police_update(&p, 300000, 45500 + 19999, &next) == QOS_POLICE_NONE);
	CHECK(!p.late_overrun);
	CHECK_EQ_U(p.overruns, 2);
	/* Seen in the period already: not again at its end. */
	CHECK(qos_police_update(&p, 310000, 65499 + 20000, &next) == QOS_POLICE_OVERRUN);
	CHECK(qos_police_update(&p, 400000, 65499 + 20000, &next) == QOS_POLICE_RESTORE);
	CHECK(!p.late_overrun);
	CHECK_EQ_U(p.overruns, 3);
	/* Several periods without a look (lazy): not known when, so no overrun. */
	CHECK(qos_police_update(&p, 700000, 85499 + 60000, &next) == QOS_POLICE_NONE);
	CHECK(!p.late_overrun);
	CHECK_EQ_U(p.overruns, 3);
	CHECK_EQ_U(p.last_used_us, 20000);

	/*
	 * Billed time the kernel never sees carries (what the caller enforces
	 * by freezing); a period that ends used up by a bill and with more
	 * still owed stays exhausted: the late overrun and no restore.
	 */
	qos_police_start(&p, 100000, 20000, 0, 0);
	p.notified = true;
	p.kernel_enforced = true;
	CHECK(qos_police_update(&p, 1000, 5000, &next) == QOS_POLICE_NONE);
	qos_police_bill(&p, 50000);
	CHECK(qos_police_update(&p, 1000, 5000, &next) == QOS_POLICE_OVERRUN);
	CHECK_EQ_U(p.billed_us, 50000);
	CHECK(qos_police_update(&p, 100000, 8000, &next) == QOS_POLICE_NONE);
	CHECK(p.in_fallback);
	CHECK_EQ_U(p.debt_us, 38000); /* 58 ms used, 20 allowed, all of it billed */
	CHECK_EQ_U(p.last_used_us, 58000);
	CHECK_EQ_U(p.last_billed_us, 50000);
	CHECK_EQ_U(p.billed_us, 0);
	/* 18 ms still owed: restored, with that much of the new slice gone. */
	CHECK(qos_police_update(&p, 200000, 8000, &next) == QOS_POLICE_RESTORE);
	CHECK_EQ_U(p.debt_us, 18000);
	CHECK_EQ_U(p.last_billed_us, 0);
	CHECK(qos_police_update(&p, 201000, 10000, &next) == QOS_POLICE_OVERRUN);
	/* The same with the overrun unseen in its period. */
	qos_police_start(&p, 100000, 20000, 0, 0);
	p.kernel_enforced = true;
	CHECK(qos_police_update(&p, 1000, 0, &next) == QOS_POLICE_NONE);
	qos_police_bill(&p, 45000);
	CHECK(qos_police_update(&p, 100000, 0, &next) == QOS_POLICE_NONE);
	CHECK(p.late_overrun);
	CHECK(p.in_fallback);
	CHECK_EQ_U(p.debt_us, 25000);
	CHECK(qos_police_update(&p, 200000, 0, &next) == QOS_POLICE_RESTORE);
	CHECK(!p.late_overrun); /* it was seen in its fallback */
	CHECK_EQ_U(p.debt_us, 5000);
}

/*
 * The billed part of the previous period's use, beside it; averaged alike
 * over periods passed without a look.
 */
static void test_last_billed(void) {
	struct qos_police p;
	uint64_t next;
	qos_police_start(&p, 10000, 5000, 0, 0);
	CHECK(qos_police_update(&p, 1000, 1000, &next) == QOS_POLICE_NONE);
	qos_police_bill(&p, 1500);
	CHECK(qos_police_update(&p, 10000, 2000, &next) == QOS_POLICE_NONE);
	CHECK_EQ_U(p.last_used_us, 3500);
	CHECK_EQ_U(p.last_billed_us, 1500);
	qos_police_bill(&p, 3000);
	CHECK(qos_police_update(&p, 40000, 2000, &next) == QOS_POLICE_NONE);
	CHECK_EQ_U(p.last_used_us, 1000);
	CHECK_EQ_U(p.last_billed_us, 1000);
	/* A change of limit keeps both, as it keeps the counts. */
	qos_police_set_limit(&p, 20000, 5000, 41000, 2000);
	CHECK_EQ_U(p.last_used_us, 1000);
	CHECK_EQ_U(p.last_billed_us, 1000);
}

/*
 * Bills in a held fallback (optimistic threads waiting for their return)
 * are owed once the threads are back, like bills in any fallback.
 */
static void test_billed_while_held(void) {
	struct qos_police p;
	uint64_t next;
	qos_police_start(&p, 10000, 1000, 0, 0);
	p.notified = true;
	CHECK(qos_police_update(&p, 500, 1000, &next) == QOS_POLICE_OVERRUN);
	p.hold_fallback = true;
	CHECK(qos_police_update(&p, 10000, 1000, &next) == QOS_POLICE_NONE);
	CHECK(p.held);
	qos_police_bill(&p, 700);
	qos_police_resume(&p, 12000, 1000);
	CHECK_EQ_U(p.debt_us, 700);
	p.hold_fallback = false;
	CHECK(qos_police_update(&p, 12100, 1100, &next) == QOS_POLICE_NONE);
	CHECK_EQ_U(qos_police_used_us(&p), 800);
	CHECK(qos_police_update(&p, 12200, 1300, &next) == QOS_POLICE_OVERRUN);
}

/* With no margin (nothing to switch), the look comes when the slice will be used. */
static void test_no_margin(void) {
	struct qos_police p;
	uint64_t next;
	qos_police_start(&p, 20000, 6000, 0, 0);
	p.notified = true;
	p.kernel_enforced = true;
	p.early_us = 4000;
	p.parallel = 2;
	p.running = true;
	CHECK(qos_police_update(&p, 2100, 2101, &next) == QOS_POLICE_NONE);
	/* 3899 us left on two CPUs: rounded up, so the look finds it used. */
	CHECK_EQ_U(p.switch_at_us, 2100 + 1950);
	p.running = false;
	p.projected_us = 3900;
	CHECK(qos_police_update(&p, 4050, 2101, &next) == QOS_POLICE_OVERRUN);
}

int main(void) {
	test_ceiling_cycle();
	test_light_member();
	test_billing();
	test_missed_boundaries();
	test_unlimited_and_parallel();
	test_notified_debt();
	test_billed_debt();
	test_idle_fallback_debt_is_bounded();
	test_fallback_end_skips_boundaries();
	test_notified_quiet_periods();
	test_early_overrun_and_hold();
	test_kernel_enforced();
	test_last_billed();
	test_billed_while_held();
	test_no_margin();
	return check_report("test_police");
}
