/*
 * qos/policy/split_rules.c: a slice divided among threads by their use.  Made-up
 * per-period figures, no kernel: a busy thread's runtime covers its use
 * while idle ones shrink to their headroom, the sum never passes the slice,
 * a thread that ran out gets more, idle sleepers park and wake, demand that
 * does not fit is divided max-min fair, and small moves are not applied.
 */
#include "check.h"
#include "qos/policy/split_rules.h"

#define MS 1000000ull
#define PERIOD (20 * MS)
#define SLICE (8 * MS)

/* One period of use for each thread, then the plan; what it gave is applied. */
static bool period(struct qos_split_thread *t, size_t n, const uint64_t *used, bool asleep) {
	for (size_t i = 0; i < n; i++) {
		qos_split_rules_sample(&t[i], used[i], asleep);
	}
	bool starved = qos_split_rules_plan(t, n, SLICE, PERIOD);
	CHECK(qos_split_rules_planned(t, n) <= SLICE);
	for (size_t i = 0; i < n; i++) {
		t[i].runtime_ns = t[i].parked ? 0 : t[i].want_ns;
	}
	return starved;
}

static void even(struct qos_split_thread *t, size_t n) {
	for (size_t i = 0; i < n; i++) {
		t[i] = (struct qos_split_thread){ .tid = (pid_t)(100 + i), .runtime_ns = SLICE / n };
	}
}

static void test_busy_grows_idle_shrink(void) {
	struct qos_split_thread t[12];
	uint64_t used[12] = { 0 };
	even(t, 12);
	/* The busy thread runs out of its even share at first. */
	used[0] = SLICE / 12;
	CHECK(!period(t, 12, used, false));
	CHECK(t[0].throttled);
	CHECK(t[0].want_ns > SLICE / 12);
	for (int k = 0; k < 6; k++) {
		used[0] = t[0].runtime_ns < 4 * MS ? t[0].runtime_ns : 4 * MS;
		period(t, 12, used, false);
	}
	CHECK(t[0].runtime_ns >= 4 * MS);
	for (size_t i = 1; i < 12; i++) {
		CHECK(t[i].runtime_ns < SLICE / 12);
		CHECK(t[i].runtime_ns >= QOS_SPLIT_MIN_NS);
	}
	CHECK(!t[0].throttled);
}

static void test_sleepers_park_and_wake(void) {
	struct qos_split_thread t[4];
	uint64_t used[4] = { 2 * MS, 0, 0, 0 };
	even(t, 4);
	for (unsigned k = 0; k < QOS_SPLIT_PARK_PERIODS - 1; k++) {
		period(t, 4, used, true);
	}
	CHECK(!t[1].parked);
	/* Awake (runnable) threads do not park however idle they were. */
	period(t, 4, used, false);
	CHECK(!t[1].parked);
	period(t, 4, used, true);
	CHECK(t[1].parked && t[2].parked && t[3].parked);
	CHECK(!t[0].parked);
	CHECK_EQ_U(t[1].runtime_ns, 0);
	/* Alone, the busy thread holds the whole slice. */
	CHECK_EQ_U(t[0].runtime_ns, SLICE);
	/* Thread 3 runs at the fallback class: it wakes and asks for what it ran. */
	used[3] = 1 * MS;
	period(t, 4, used, true);
	CHECK(!t[3].parked);
	CHECK(t[3].runtime_ns >= 1 * MS);
	CHECK(t[1].parked);
	CHECK(t[0].runtime_ns >= 2 * MS);
}

static void test_throttled_thread_not_parked(void) {
	struct qos_split_thread t = { .tid = 1, .runtime_ns = 2 * MS, .idle = 100 };
	qos_split_rules_sample(&t, 2 * MS, true);
	CHECK(t.throttled);
	CHECK(!t.parked);
	CHECK(qos_split_rules_demand(&t, PERIOD) >= 3 * MS);
}

static void test_overload_is_max_min_fair(void) {
	struct qos_split_thread t[3];
	even(t, 3);
	uint64_t used[3] = { 6 * MS, 6 * MS, MS / 2 };
	bool starved = false;
	for (int k = 0; k < 4; k++) {
		starved = period(t, 3, used, false);
	}
	CHECK(starved);
	/* The light thread gets its demand, the two heavy ones split the rest. */
	uint64_t light = qos_split_rules_demand(&t[2], PERIOD);
	CHECK(t[2].runtime_ns >= light * 9 / 10);
	uint64_t diff = t[0].runtime_ns > t[1].runtime_ns ? t[0].runtime_ns - t[1].runtime_ns
													  : t[1].runtime_ns - t[0].runtime_ns;
	CHECK(diff <= t[0].runtime_ns / 10 + 1);
	CHECK(qos_split_rules_planned(t, 3) <= SLICE);
}

static void test_small_moves_are_kept(void) {
	struct qos_split_thread t[2];
	even(t, 2);
	uint64_t used[2] = { 3 * MS, 1 * MS };
	for (int k = 0; k < 8; k++) {
		period(t, 2, used, false);
	}
	uint64_t a = t[0].runtime_ns, b = t[1].runtime_ns;
	used[0] = 3 * MS + MS / 20; /* under the hysteresis */
	period(t, 2, used, false);
	CHECK_EQ_U(t[0].runtime_ns, a);
	CHECK_EQ_U(t[1].runtime_ns, b);
}

static void test_tiny_slice(void) {
	struct qos_split_thread t[4];
	even(t, 4);
	for (size_t i = 0; i < 4; i++) {
		t[i].used[0] = 1 * MS, t[i].n_used = 1;
	}
	CHECK(qos_split_rules_plan(t, 4, 3000, PERIOD));
	CHECK(qos_split_rules_planned(t, 4) <= 3000);
}

/* A slice of two CPUs and a bit for two threads that use a CPU each: each
 * gets a period, no more, whatever spare the slice has. */
static void test_slice_past_the_period(void) {
	struct qos_split_thread t[3];
	for (size_t i = 0; i < 3; i++) {
		t[i] = (struct qos_split_thread){ .tid = (pid_t)(100 + i), .runtime_ns = PERIOD / 2 };
	}
	for (int k = 0; k < 6; k++) {
		for (size_t i = 0; i < 3; i++) {
			qos_split_rules_sample(&t[i], i ? PERIOD : 0, false);
		}
		CHECK(!qos_split_rules_plan(t, 3, 2 * PERIOD + 2 * MS, PERIOD));
		CHECK(qos_split_rules_planned(t, 3) <= 2 * PERIOD + 2 * MS);
		for (size_t i = 0; i < 3; i++) {
			CHECK(t[i].want_ns <= PERIOD);
			t[i].runtime_ns = t[i].want_ns;
		}
	}
	CHECK_EQ_U(t[1].runtime_ns, PERIOD);
	CHECK_EQ_U(t[2].runtime_ns, PERIOD);
}

int main(void) {
	test_busy_grows_idle_shrink();
	test_sleepers_park_and_wake();
	test_throttled_thread_not_parked();
	test_overload_is_max_min_fair();
	test_small_moves_are_kept();
	test_tiny_slice();
	test_slice_past_the_period();
	return check_report("test_split");
}
