/*
 * qos/watchdog.h - the starvation watchdog's state machine (thesis: a canary
 * at normal priority must keep running), free of clocks and threads so tests
 * can drive it with a fake clock.  The manager feeds it canary ticks and asks
 * it, once per housekeeping pass, whether real-time members must be demoted.
 */
#ifndef QOS_WATCHDOG_H
#define QOS_WATCHDOG_H

#include <stdbool.h>
#include <stdint.h>

struct qos_watchdog {
	uint64_t timeout_us;        /* canary silence that counts as starvation */
	uint64_t cooldown_us;       /* no new real-time grants for this long after */
	uint64_t seen_us;           /* last canary tick (or start, or last alarm) */
	uint64_t cooldown_until_us; /* 0: no cool-down yet */
	uint64_t alarms;            /* starvation alarms so far */
};

void qos_watchdog_init(struct qos_watchdog *w, uint64_t timeout_us, uint64_t cooldown_us,
	uint64_t now_us);
/* The canary ran at now_us. */
void qos_watchdog_tick(struct qos_watchdog *w, uint64_t now_us);
/*
 * True when the canary has been silent for timeout_us: the caller demotes
 * every real-time member now.  The cool-down starts, and the silence is
 * measured afresh from now_us, so one starvation raises one alarm per timeout.
 */
bool qos_watchdog_expired(struct qos_watchdog *w, uint64_t now_us);
/* False during the cool-down that follows an alarm. */
bool qos_watchdog_rt_allowed(const struct qos_watchdog *w, uint64_t now_us);
/* Microseconds of cool-down left (0 when real-time grants are allowed). */
uint64_t qos_watchdog_cooldown_left_us(const struct qos_watchdog *w, uint64_t now_us);

#endif
