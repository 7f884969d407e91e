/* The adaptation rules (qos/policy/adapt.h) driven with made-up periods. */
#include "check.h"
#include "qos/policy/adapt.h"

static struct qos_params adaptive(bool auto_slice, bool continuous, uint64_t slice_us) {
	struct qos_params p;
	qos_params_init(&p);
	p.policy = QOS_POLICY_QOS;
	p.period_us = 10000;
	p.slice_us = slice_us;
	p.adapt.auto_slice = auto_slice;
	p.adapt.continuous = continuous;
	return p;
}

/* Feeds n periods of use base..base+jitter (a fixed pattern), none used up. */
static void feed(struct qos_adapt *a, unsigned n, uint64_t base, uint64_t jitter) {
	for (unsigned i = 0; i < n; i++) {
		qos_adapt_sample(a, base + (jitter ? (i * 7919u) % (jitter + 1) : 0), false);
	}
}

static void test_initial(void) {
	struct qos_adapt a = { 0 };
	struct qos_params p = adaptive(true, false, 5000);
	uint64_t slice;
	char why[160];
	/* The warm-up's periods count for nothing, however long. */
	feed(&a, QOS_ADAPT_WARMUP, 9000, 0);
	feed(&a, QOS_ADAPT_INITIAL_PERIODS - 1, 3000, 400);
	CHECK(!qos_adapt_decide(&a, &p, &slice, why, sizeof(why)));
	feed(&a, 1, 3000, 0);
	CHECK(qos_adapt_decide(&a, &p, &slice, why, sizeof(why)));
	/* Within [measured, twice measured]: p95 plus the margin. */
	uint64_t p95 = qos_adapt_percentile(&a.used, QOS_ADAPT_INITIAL_PERIODS, 95);
	CHECK(p95 >= 3000 && p95 <= 3400);
	CHECK_EQ_U(slice, p95 + p95 * QOS_ADAPT_MARGIN_PCT / 100);
	CHECK(strstr(why, "adapted: slice settled at") != NULL);
	qos_adapt_changed(&a, slice);
	p.slice_us = slice;
	/* Settled, without adapt=yes it stays. */
	feed(&a, 40, 500, 0);
	CHECK(!qos_adapt_decide(&a, &p, &slice, why, sizeof(why)));
}

static void test_grow(void) {
	struct qos_adapt a = { 0 };
	struct qos_params p = adaptive(false, true, 2000);
	uint64_t slice;
	char why[160];
	qos_adapt_sample(&a, 2000, true);
	qos_adapt_sample(&a, 1500, false);
	qos_adapt_sample(&a, 2000, true);
	CHECK(!qos_adapt_decide(&a, &p, &slice, why, sizeof(why))); /* 2 of 3 */
	qos_adapt_sample(&a, 2000, true);
	CHECK(qos_adapt_decide(&a, &p, &slice, why, sizeof(why)));
	CHECK(slice >= 2500);
	/* A frame that spills into the next period: every other one used up. */
	struct qos_adapt b = { 0 };
	for (int i = 0; i < 4; i++) {
		qos_adapt_sample(&b, i % 2 ? 600 : 2000, i % 2 == 0);
	}
	uint64_t spill;
	CHECK(qos_adapt_decide(&b, &p, &spill, why, sizeof(why)));
	CHECK(spill >= 2500);
	/* One overrun in four is noise. */
	struct qos_adapt c = { 0 };
	for (int i = 0; i < 4; i++) {
		qos_adapt_sample(&c, i ? 1500 : 2000, i == 0);
	}
	CHECK(!qos_adapt_decide(&c, &p, &spill, why, sizeof(why)));
	CHECK(strstr(why, "grown to") != NULL);
	qos_adapt_changed(&a, slice);
	p.slice_us = slice;
	/* Held: the next periods judge the new slice only. */
	qos_adapt_sample(&a, slice, true);
	CHECK(!qos_adapt_decide(&a, &p, &slice, why, sizeof(why)));
	/* Up to the bound and no further. */
	p.adapt.max_ppm = 300000;
	for (int i = 0; i < 8; i++) {
		qos_adapt_sample(&a, 9000, true);
	}
	CHECK(qos_adapt_decide(&a, &p, &slice, why, sizeof(why)));
	CHECK_EQ_U(slice, 3000);
	qos_adapt_changed(&a, slice);
	p.slice_us = slice;
	for (int i = 0; i < 8; i++) {
		qos_adapt_sample(&a, 9000, true);
	}
	CHECK(!qos_adapt_decide(&a, &p, &slice, why, sizeof(why)));
}

/* A cpu=auto slice settled small (an idle program) that works again. */
static void test_auto_grows_back_to_first_guess(void) {
	struct qos_adapt a = { .settled = true };
	struct qos_params p = adaptive(true, true, 100);
	uint64_t slice;
	char why[160];
	for (int i = 0; i < 4; i++) {
		qos_adapt_sample(&a, 100, true);
	}
	CHECK(qos_adapt_decide(&a, &p, &slice, why, sizeof(why)));
	CHECK_EQ_U(slice, 5000); /* half the 10 ms period at once */
	CHECK_EQ_U(a.modest_us, 125); /* the plain step, if that is refused */
	CHECK(strstr(why, "first guess") != NULL);
	/* Within the bounds. */
	p.adapt.max_ppm = 300000;
	CHECK(qos_adapt_decide(&a, &p, &slice, why, sizeof(why)));
	CHECK_EQ_U(slice, 3000);
	/* At or past the first guess, and for adapt=yes alone: a quarter more. */
	struct qos_adapt b = { .settled = true };
	struct qos_params q = adaptive(true, true, 6000);
	for (int i = 0; i < 4; i++) {
		qos_adapt_sample(&b, 6000, true);
	}
	CHECK(qos_adapt_decide(&b, &q, &slice, why, sizeof(why)));
	CHECK_EQ_U(slice, 7500);
	CHECK_EQ_U(b.modest_us, 0);
	q = adaptive(false, true, 100);
	CHECK(qos_adapt_decide(&a, &q, &slice, why, sizeof(why)));
	CHECK_EQ_U(slice, 125);
	CHECK(strstr(why, "grown to") != NULL);
}

/* A paused video: idle periods size nothing, and idle release handles them. */
static void test_idle_periods_left_out(void) {
	struct qos_adapt a = { 0 };
	struct qos_params p = adaptive(true, true, 5000);
	p.idle_periods = 120;
	uint64_t slice;
	char why[160];
	feed(&a, QOS_ADAPT_WARMUP + QOS_ADAPT_RING + 10, 10, 5);
	CHECK(!qos_adapt_decide(&a, &p, &slice, why, sizeof(why))); /* nothing to settle on */
	feed(&a, QOS_ADAPT_INITIAL_PERIODS / 2 - 1, 3000, 0);
	CHECK(!qos_adapt_decide(&a, &p, &slice, why, sizeof(why)));
	feed(&a, 1, 3000, 0);
	CHECK(qos_adapt_decide(&a, &p, &slice, why, sizeof(why)));
	CHECK_EQ_U(slice, 3450); /* the working periods' figure, not the idle ones' */
	qos_adapt_changed(&a, slice);
	p.slice_us = slice;
	/* Paused again: no shrink, however long. */
	feed(&a, 3 * QOS_ADAPT_RING, 0, 0);
	CHECK(!qos_adapt_decide(&a, &p, &slice, why, sizeof(why)));
	/* Working at a third of it, one period in two: down to that. */
	for (unsigned i = 0; i < QOS_ADAPT_WINDOW; i++) {
		qos_adapt_sample(&a, i % 2 ? 1000 : 0, false);
	}
	CHECK(qos_adapt_decide(&a, &p, &slice, why, sizeof(why)));
	CHECK_EQ_U(slice, 1150);
	/* Without idle release a ring of idle periods settles it after all. */
	struct qos_adapt b = { 0 };
	struct qos_params q = adaptive(true, false, 5000);
	feed(&b, QOS_ADAPT_WARMUP + QOS_ADAPT_RING - 1, 10, 0);
	CHECK(!qos_adapt_decide(&b, &q, &slice, why, sizeof(why)));
	feed(&b, 1, 10, 0);
	CHECK(qos_adapt_decide(&b, &q, &slice, why, sizeof(why)));
	CHECK_EQ_U(slice, QOS_ADAPT_MIN_SLICE_US);
}

static void test_shrink_and_band(void) {
	struct qos_adapt a = { 0 };
	struct qos_params p = adaptive(false, true, 4000);
	uint64_t slice;
	char why[160];
	/* Jittery use whose p95 + margin lies inside the band: nothing changes. */
	feed(&a, 64, 2700, 400);
	CHECK(!qos_adapt_decide(&a, &p, &slice, why, sizeof(why)));
	/* Sustained under-use: down to the p95 plus margin. */
	feed(&a, QOS_ADAPT_WINDOW - 1, 1000, 0);
	CHECK(!qos_adapt_decide(&a, &p, &slice, why, sizeof(why)) || slice < 4000);
	qos_adapt_sample(&a, 1000, false);
	CHECK(qos_adapt_decide(&a, &p, &slice, why, sizeof(why)));
	CHECK_EQ_U(slice, 1150);
	CHECK(strstr(why, "shrunk to 1.1ms") || strstr(why, "shrunk to 1.2ms"));
	/* Not below the lower bound. */
	p.adapt.min_ppm = 200000;
	CHECK(qos_adapt_decide(&a, &p, &slice, why, sizeof(why)));
	CHECK_EQ_U(slice, 2000);
	qos_adapt_changed(&a, slice);
	p.slice_us = slice;
	feed(&a, QOS_ADAPT_WINDOW, 10, 0);
	CHECK(!qos_adapt_decide(&a, &p, &slice, why, sizeof(why)));
}

/* A slice split over threads: a period at one thread's share may have been cut short. */
static void test_split_slice_holds(void) {
	struct qos_adapt a = { 0 };
	struct qos_params p = adaptive(false, true, 4000);
	uint64_t slice;
	char why[160];
	a.thread_share_us = 2000;
	feed(&a, QOS_ADAPT_WINDOW - 1, 1000, 0);
	qos_adapt_sample(&a, 2000, false);
	CHECK(!qos_adapt_decide(&a, &p, &slice, why, sizeof(why)));
	feed(&a, QOS_ADAPT_WINDOW, 1000, 0);
	CHECK(qos_adapt_decide(&a, &p, &slice, why, sizeof(why)));
	CHECK_EQ_U(slice, 1150);
}

/*
 * A slice divided among threads that run on two CPUs at once grows past
 * the period, up to two periods; undivided it stops at the period.
 */
static void test_divided_slice_grows_past_the_period(void) {
	for (unsigned cpus = 0; cpus <= 2; cpus++) {
		struct qos_adapt a = { .cpus = cpus };
		struct qos_params p = adaptive(false, true, 9000);
		uint64_t slice = p.slice_us;
		char why[160];
		for (int step = 0; step < 6; step++) {
			for (int i = 0; i < 4; i++) {
				qos_adapt_sample(&a, 18000, true);
			}
			if (qos_adapt_decide(&a, &p, &slice, why, sizeof(why))) {
				qos_adapt_changed(&a, slice);
				p.slice_us = slice;
			}
		}
		CHECK_EQ_U(p.slice_us, cpus == 2 ? 20000 : 10000);
	}
}

/* Overruns a few periods apart (a video's heavy frames) grow the slice. */
static void test_sparse_overruns_grow(void) {
	struct qos_adapt a = { 0 };
	struct qos_params p = adaptive(false, true, 4000);
	uint64_t slice;
	char why[160];
	feed(&a, 8, 3000, 0);
	qos_adapt_sample(&a, 4000, true);
	feed(&a, 9, 3000, 0);
	CHECK(!qos_adapt_decide(&a, &p, &slice, why, sizeof(why))); /* one in 16 */
	qos_adapt_sample(&a, 4000, true);
	feed(&a, 3, 3000, 0);
	CHECK(qos_adapt_decide(&a, &p, &slice, why, sizeof(why))); /* two, 13 apart */
	CHECK_EQ_U(slice, 5000);
}

/* Overruns a second apart, never two in 16 periods, grow it at the second. */
static void test_recurring_overruns_grow(void) {
	struct qos_adapt a = { 0 };
	struct qos_params p = adaptive(false, true, 4000);
	uint64_t slice;
	char why[160];
	feed(&a, 20, 3000, 0);
	qos_adapt_sample(&a, 3000, true);
	feed(&a, 60, 3000, 0);
	CHECK(!qos_adapt_decide(&a, &p, &slice, why, sizeof(why)));
	qos_adapt_sample(&a, 3000, true);
	CHECK(qos_adapt_decide(&a, &p, &slice, why, sizeof(why)));
	CHECK_EQ_U(slice, 5000);
	qos_adapt_changed(&a, slice);
	p.slice_us = slice;
	/* One before the change and one after do not judge the new slice. */
	feed(&a, 10, 3000, 0);
	qos_adapt_sample(&a, 3000, true);
	CHECK(!qos_adapt_decide(&a, &p, &slice, why, sizeof(why)));
	/* Further apart than the calm: noise. */
	feed(&a, QOS_ADAPT_CALM, 3000, 0);
	qos_adapt_sample(&a, 3000, true);
	CHECK(!qos_adapt_decide(&a, &p, &slice, why, sizeof(why)));
}

/* A slice grown for peaks stays until QOS_ADAPT_CALM periods pass without one. */
static void test_no_shrink_soon_after_an_overrun(void) {
	struct qos_adapt a = { 0 };
	struct qos_params p = adaptive(false, true, 8000);
	uint64_t slice;
	char why[160];
	qos_adapt_sample(&a, 8000, true);
	unsigned n = 0;
	for (; n < 4 * QOS_ADAPT_CALM; n++) {
		qos_adapt_sample(&a, 2000, false);
		if (qos_adapt_decide(&a, &p, &slice, why, sizeof(why))) {
			break;
		}
	}
	CHECK_EQ_U(n + 1, QOS_ADAPT_CALM);
	CHECK_EQ_U(slice, 2300);
}

/* cpu=auto measured at a provisional slice that cut it short settles above it. */
static void test_cut_short_measurement_settles_above(void) {
	struct qos_adapt a = { 0 };
	struct qos_params p = adaptive(true, true, 5000);
	uint64_t slice;
	char why[160];
	feed(&a, QOS_ADAPT_WARMUP, 5000, 0);
	for (unsigned i = 0; i < QOS_ADAPT_INITIAL_PERIODS; i++) {
		qos_adapt_sample(&a, i % 3 ? 4000 : 5000, i % 3 == 0);
	}
	CHECK(qos_adapt_decide(&a, &p, &slice, why, sizeof(why)));
	CHECK_EQ_U(slice, 6250);
}

static void test_reports_preferred(void) {
	struct qos_adapt a = { 0 };
	struct qos_params p = adaptive(false, true, 4000);
	uint64_t slice;
	char why[160];
	CHECK(!qos_adapt_report(&a, 0, 100, p.period_us));
	/* Measured use is low (the fallback held it), the reports say more. */
	for (unsigned i = 0; i < QOS_ADAPT_WINDOW; i++) {
		qos_adapt_sample(&a, 1000, false);
		/* 6ms of work per 20ms frame is 3ms of a 10ms period. */
		CHECK(qos_adapt_report(&a, 20000, 6000, p.period_us));
	}
	CHECK(!qos_adapt_decide(&a, &p, &slice, why, sizeof(why))); /* 3450 is inside the band */
	/* Work past the slice in 3 of 4 reports: growth, though no period overran. */
	for (int i = 0; i < 4; i++) {
		qos_adapt_report(&a, 10000, 4500, p.period_us);
	}
	CHECK(qos_adapt_decide(&a, &p, &slice, why, sizeof(why)));
	CHECK(slice >= 5000 && strstr(why, "reported work"));
	qos_adapt_changed(&a, slice);
	/* Reports gone stale: the measured use rules again. */
	p.slice_us = slice;
	feed(&a, QOS_ADAPT_WINDOW + QOS_ADAPT_REPORT_FRESH, 1000, 0);
	CHECK(qos_adapt_decide(&a, &p, &slice, why, sizeof(why)));
	CHECK_EQ_U(slice, 1150);
}

/* A quiet reserve's periods come in a batch: reports made meanwhile stay fresh. */
static void test_batched_periods(void) {
	struct qos_adapt a = { 0 };
	struct qos_params p = adaptive(false, true, 2000);
	uint64_t slice;
	char why[160];
	qos_adapt_periods(&a, 5, 0, 0);
	for (int i = 0; i < 4; i++) {
		qos_adapt_report(&a, 20000, 16000, p.period_us);
	}
	qos_adapt_periods(&a, 50, 0, 0);
	CHECK_EQ_U(a.used.n, QOS_ADAPT_RING);
	CHECK(qos_adapt_decide(&a, &p, &slice, why, sizeof(why)));
	CHECK(slice >= 9000 && strstr(why, "grown to") && strstr(why, "reported work"));
	/* Overruns among a batch are its last periods. */
	struct qos_adapt b = { 0 };
	qos_adapt_periods(&b, 6, 1500, 3);
	CHECK(qos_adapt_decide(&b, &p, &slice, why, sizeof(why)));
	CHECK(slice == 2500 && strstr(why, "grown to 2.5ms"));
	struct qos_adapt c = { 0 };
	qos_adapt_periods(&c, 6, 1500, 1);
	CHECK(!qos_adapt_decide(&c, &p, &slice, why, sizeof(why)));
}

static void test_percentile(void) {
	struct qos_adapt a = { 0 };
	for (uint64_t v = 1; v <= 20; v++) {
		qos_adapt_sample(&a, v, false);
	}
	CHECK_EQ_U(qos_adapt_percentile(&a.used, 20, 95), 19);
	CHECK_EQ_U(qos_adapt_percentile(&a.used, 20, 100), 20);
	CHECK_EQ_U(qos_adapt_percentile(&a.used, 4, 50), 18);
	struct qos_adapt empty = { 0 };
	CHECK_EQ_U(qos_adapt_percentile(&empty.used, 16, 95), 0);
	/* The reset keeps the police counters the samples were taken from. */
	a.seen_periods = 7;
	qos_adapt_reset(&a);
	CHECK(a.used.n == 0 && a.seen_periods == 7);
}

int main(void) {
	test_initial();
	test_grow();
	test_auto_grows_back_to_first_guess();
	test_idle_periods_left_out();
	test_shrink_and_band();
	test_split_slice_holds();
	test_divided_slice_grows_past_the_period();
	test_sparse_overruns_grow();
	test_recurring_overruns_grow();
	test_no_shrink_soon_after_an_overrun();
	test_cut_short_measurement_settles_above();
	test_reports_preferred();
	test_batched_periods();
	test_percentile();
	return check_report("test_adapt");
}
