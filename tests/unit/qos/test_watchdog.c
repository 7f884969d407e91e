/* The starvation watchdog's state machine against a fake clock. */
#include "check.h"
#include "qos/policy/watchdog.h"

#define S 1000000u

static void test_canary_keeps_it_quiet(void) {
	struct qos_watchdog w;
	qos_watchdog_init(&w, 5 * S, 30 * S, 100 * S);
	/* A canary ticking every second never raises the alarm. */
	for (uint64_t t = 100 * S; t <= 200 * S; t += S) {
		qos_watchdog_tick(&w, t);
		CHECK(!qos_watchdog_expired(&w, t + S / 2));
	}
	CHECK_EQ_U(w.alarms, 0);
	CHECK(qos_watchdog_rt_allowed(&w, 200 * S));
	/* Four and a half seconds of silence are still tolerated. */
	CHECK(!qos_watchdog_expired(&w, 204 * S + S / 2));
}

static void test_starvation_alarm_and_cooldown(void) {
	struct qos_watchdog w;
	qos_watchdog_init(&w, 5 * S, 30 * S, 0);
	qos_watchdog_tick(&w, 1 * S);
	CHECK(!qos_watchdog_expired(&w, 5 * S));
	CHECK(!qos_watchdog_expired(&w, 6 * S - 1));
	/* Silent for exactly the timeout: demote now, once. */
	CHECK(qos_watchdog_expired(&w, 6 * S));
	CHECK_EQ_U(w.alarms, 1);
	CHECK(!qos_watchdog_expired(&w, 6 * S + 1));
	CHECK(!qos_watchdog_expired(&w, 10 * S));
	/* New real-time grants are refused for the cool-down, then allowed again. */
	CHECK(!qos_watchdog_rt_allowed(&w, 6 * S));
	CHECK(!qos_watchdog_rt_allowed(&w, 10 * S));
	CHECK_EQ_U(qos_watchdog_cooldown_left_us(&w, 10 * S), 26 * S);
	/* Starvation that goes on raises the alarm again one timeout later and
	 * extends the cool-down from there. */
	CHECK(qos_watchdog_expired(&w, 11 * S));
	CHECK_EQ_U(w.alarms, 2);
	/* The canary comes back: quiet again, cool-down runs out on time. */
	qos_watchdog_tick(&w, 12 * S);
	CHECK(!qos_watchdog_expired(&w, 16 * S));
	CHECK(!qos_watchdog_rt_allowed(&w, 40 * S));
	CHECK_EQ_U(qos_watchdog_cooldown_left_us(&w, 40 * S), 1 * S);
	CHECK(qos_watchdog_rt_allowed(&w, 41 * S));
	CHECK_EQ_U(qos_watchdog_cooldown_left_us(&w, 41 * S), 0);
}

static void test_late_tick_and_disabled(void) {
	struct qos_watchdog w;
	qos_watchdog_init(&w, 5 * S, 30 * S, 10 * S);
	/* A tick stamped before the last one (dispatch order) does not rewind. */
	qos_watchdog_tick(&w, 14 * S);
	qos_watchdog_tick(&w, 12 * S);
	CHECK(!qos_watchdog_expired(&w, 18 * S));
	CHECK(qos_watchdog_expired(&w, 19 * S));
	/* timeout 0 disables the watchdog. */
	qos_watchdog_init(&w, 0, 30 * S, 0);
	CHECK(!qos_watchdog_expired(&w, 1000 * S));
	CHECK(qos_watchdog_rt_allowed(&w, 0));
}

/*
 * The manager and its canary stopped together (SIGSTOP, a debugger): at the
 * resume the manager checks before the canary has ticked.  That silence is
 * no starvation; a starved manager (waiting for a CPU all the gap) alarms.
 */
static void test_stopped_manager_is_no_starvation(void) {
	struct qos_watchdog w;
	qos_watchdog_init(&w, 5 * S, 30 * S, 0);
	for (uint64_t t = S; t <= 3 * S; t += S) {
		qos_watchdog_tick(&w, t);
		qos_watchdog_checked(&w, t, 0);
		CHECK(!qos_watchdog_expired(&w, t));
	}
	/* Stopped 7 s: a check 7 s after the last, having waited for nothing. */
	qos_watchdog_checked(&w, 10 * S, 1000);
	CHECK(!qos_watchdog_expired(&w, 10 * S));
	CHECK_EQ_U(w.alarms, 0);
	/* The canary stays silent after the resume: starvation, counted from it. */
	for (uint64_t t = 11 * S; t < 15 * S; t += S) {
		qos_watchdog_checked(&w, t, 0);
		CHECK(!qos_watchdog_expired(&w, t));
	}
	qos_watchdog_checked(&w, 15 * S, 0);
	CHECK(qos_watchdog_expired(&w, 15 * S));

	/* Starved: the 7 s gap was spent waiting for a CPU. */
	qos_watchdog_init(&w, 5 * S, 30 * S, 0);
	qos_watchdog_tick(&w, 3 * S);
	qos_watchdog_checked(&w, 3 * S, 0);
	qos_watchdog_checked(&w, 10 * S, 6 * S);
	CHECK(qos_watchdog_expired(&w, 10 * S));
	/* Unknown waiting counts as starved; short gaps never restart. */
	qos_watchdog_init(&w, 5 * S, 30 * S, 0);
	qos_watchdog_checked(&w, 1 * S, 0);
	qos_watchdog_checked(&w, 8 * S, UINT64_MAX);
	CHECK(qos_watchdog_expired(&w, 8 * S));
	qos_watchdog_init(&w, 5 * S, 30 * S, 0);
	for (uint64_t t = S; t <= 6 * S; t += S) {
		qos_watchdog_checked(&w, t, 0);
	}
	CHECK(qos_watchdog_expired(&w, 6 * S));
}

static void test_cooldown_carried_over(void) {
	struct qos_watchdog w;
	/* A predecessor's cool-down with 12 s left holds for those 12 s. */
	qos_watchdog_init(&w, 5 * S, 30 * S, 100 * S);
	CHECK_EQ_U(qos_watchdog_carry_cooldown(&w, 112 * S, 100 * S), 12 * S);
	CHECK(!qos_watchdog_rt_allowed(&w, 111 * S));
	CHECK(qos_watchdog_rt_allowed(&w, 112 * S));
	CHECK_EQ_U(w.alarms, 0);
	/* One already over, or ending now, changes nothing. */
	qos_watchdog_init(&w, 5 * S, 30 * S, 100 * S);
	CHECK_EQ_U(qos_watchdog_carry_cooldown(&w, 90 * S, 100 * S), 0);
	CHECK_EQ_U(qos_watchdog_carry_cooldown(&w, 100 * S, 100 * S), 0);
	CHECK(qos_watchdog_rt_allowed(&w, 100 * S));
	/* An end further off than one cool-down is cut to one cool-down. */
	CHECK_EQ_U(qos_watchdog_carry_cooldown(&w, 1000 * S, 100 * S), 30 * S);
	CHECK(!qos_watchdog_rt_allowed(&w, 129 * S));
	CHECK(qos_watchdog_rt_allowed(&w, 130 * S));
	/* It never shortens a cool-down of this watchdog's own. */
	qos_watchdog_init(&w, 5 * S, 30 * S, 0);
	CHECK(qos_watchdog_expired(&w, 5 * S));
	CHECK_EQ_U(qos_watchdog_carry_cooldown(&w, 10 * S, 6 * S), 29 * S);
	/* With no cool-down configured there is nothing to carry. */
	qos_watchdog_init(&w, 5 * S, 0, 100 * S);
	CHECK_EQ_U(qos_watchdog_carry_cooldown(&w, 112 * S, 100 * S), 0);
	CHECK(qos_watchdog_rt_allowed(&w, 100 * S));
}

int main(void) {
	test_cooldown_carried_over();
	test_canary_keeps_it_quiet();
	test_starvation_alarm_and_cooldown();
	test_late_tick_and_disabled();
	test_stopped_manager_is_no_starvation();
	return check_report("test_watchdog");
}
