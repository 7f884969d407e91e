/*
 * qos/policy/watchdog.h - the starvation watchdog's state machine (thesis: a canary
 * at normal priority must keep running), free of clocks and threads so tests
 * can drive it with a fake clock.  The manager feeds it canary ticks and asks
 * it, once per housekeeping pass, whether real-time members must be demoted.
 */
#ifndef QOS_WATCHDOG_H
#define QOS_WATCHDOG_H

#include <stdbool.h>
#include <stdint.h>

struct qos_watchdog {
	uint64_t timeout_us; /* canary silence that counts as starvation */
	uint64_t cooldown_us; /* no new real-time grants for this long after */
	uint64_t seen_us; /* last canary tick (or start, or last alarm) */
	uint64_t cooldown_until_us; /* 0: no cool-down yet */
	uint64_t alarms; /* starvation alarms so far */
	uint64_t checked_us; /* the manager's last check (0: none yet) */
};

/*
 * A gap between the manager's checks this long, spent mostly not waiting
 * for a CPU, means the manager was stopped rather than starved.
 */
#define QOS_WATCHDOG_GAP_US 2000000u

void qos_watchdog_init(struct qos_watchdog *w, uint64_t timeout_us, uint64_t cooldown_us,
		uint64_t now_us);
/*
 * The manager checks at now_us, having waited waited_us for a CPU since its
 * last check (UINT64_MAX: unknown).  After a gap of QOS_WATCHDOG_GAP_US or
 * more in which it waited less than half the time, the manager was not
 * runnable (SIGSTOP, a debugger, a frozen cgroup), and its canary with it:
 * that silence is no starvation, so it is measured afresh from now_us.
 * Starved, the manager would have waited runnable most of the gap.
 */
void qos_watchdog_checked(struct qos_watchdog *w, uint64_t now_us, uint64_t waited_us);
/* The canary ran at now_us. */
void qos_watchdog_tick(struct qos_watchdog *w, uint64_t now_us);
/*
 * True when the canary has been silent for timeout_us: the caller demotes
 * every real-time member now.  The cool-down starts, and the silence is
 * measured afresh from now_us, so one starvation raises one alarm per timeout.
 */
bool qos_watchdog_expired(struct qos_watchdog *w, uint64_t now_us);
/*
 * Takes over a cool-down a predecessor started, ending at until_us, as far
 * as it is still running at now_us and no longer than one cool-down from
 * now (a saved end beyond that is no end this watchdog would set).
 * Returns the microseconds of it left (0: none).
 */
uint64_t qos_watchdog_carry_cooldown(struct qos_watchdog *w, uint64_t until_us, uint64_t now_us);
/* False during the cool-down that follows an alarm. */
bool qos_watchdog_rt_allowed(const struct qos_watchdog *w, uint64_t now_us);
/* Microseconds of cool-down left (0 when real-time grants are allowed). */
uint64_t qos_watchdog_cooldown_left_us(const struct qos_watchdog *w, uint64_t now_us);

#endif
