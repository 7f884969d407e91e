/*
 * qos/manager/configure.h - reserves defined, changed and deleted with their
 * members in them (configure.c; the public calls are in qos.h).
 * Layer 3 (manager).
 */
#ifndef QOS_CONFIGURE_H
#define QOS_CONFIGURE_H

#include "qos/policy/core.h"

/* The starvation watchdog's alarm: every real-time reserve to other. */
void qos_configure_demote_rt(struct qos_manager *mgr);

/*
 * Changes r to p (normalized) from inside the manager (adaptation, idle
 * release, a new refresh period): the same admission and kernel steps as
 * qos_reserve_set, without resetting adaptation, and the change's event is
 * `type` (QOS_EVENT_PARAMS_CHANGED or QOS_EVENT_RELEASED) with `why` as its
 * message.  False with err when admission or the kernel refuses it: r
 * keeps its parameters.
 */
bool qos_configure_change(struct qos_manager *mgr, struct qos_reserve *r,
		const struct qos_params *p, enum qos_event_type type, const char *why, char *err,
		size_t err_len);

#endif
