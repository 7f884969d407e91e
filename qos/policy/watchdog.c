/*
 * The starvation watchdog's state: canary ticks, the alarm, and the
 * cool-down that suspends new real-time grants after it (canary.c runs it).
 */
#include <stdint.h>

#include "qos/policy/watchdog.h"

void qos_watchdog_init(struct qos_watchdog *w, uint64_t timeout_us, uint64_t cooldown_us,
		uint64_t now_us) {
	*w = (struct qos_watchdog){
		.timeout_us = timeout_us,
		.cooldown_us = cooldown_us,
		.seen_us = now_us,
	};
}

void qos_watchdog_checked(struct qos_watchdog *w, uint64_t now_us, uint64_t waited_us) {
	uint64_t gap = w->checked_us && now_us > w->checked_us ? now_us - w->checked_us : 0;
	w->checked_us = now_us;
	if (gap >= QOS_WATCHDOG_GAP_US && waited_us < gap / 2 && now_us > w->seen_us) {
		w->seen_us = now_us;
	}
}

void qos_watchdog_tick(struct qos_watchdog *w, uint64_t now_us) {
	if (now_us > w->seen_us) {
		w->seen_us = now_us;
	}
}

bool qos_watchdog_expired(struct qos_watchdog *w, uint64_t now_us) {
	if (!w->timeout_us || now_us < w->seen_us || now_us - w->seen_us < w->timeout_us) {
		return false;
	}
	w->cooldown_until_us = now_us + w->cooldown_us;
	w->seen_us = now_us;
	w->alarms++;
	return true;
}

uint64_t qos_watchdog_carry_cooldown(struct qos_watchdog *w, uint64_t until_us, uint64_t now_us) {
	if (until_us <= now_us || !w->cooldown_us) {
		return 0;
	}
	if (until_us - now_us > w->cooldown_us) {
		until_us = now_us + w->cooldown_us;
	}
	if (until_us > w->cooldown_until_us) {
		w->cooldown_until_us = until_us;
	}
	return w->cooldown_until_us - now_us;
}

bool qos_watchdog_rt_allowed(const struct qos_watchdog *w, uint64_t now_us) {
	return now_us >= w->cooldown_until_us;
}

uint64_t qos_watchdog_cooldown_left_us(const struct qos_watchdog *w, uint64_t now_us) {
	return now_us < w->cooldown_until_us ? w->cooldown_until_us - now_us : 0;
}
