/*
 * qos/manager/canary.h - the starvation watchdog's canary thread and its check
 * in the manager's loop (canary.c).
 * Layer 3 (manager).
 */
#ifndef QOS_CANARY_H
#define QOS_CANARY_H

#include "qos/policy/core.h"

bool qos_canary_start(struct qos_manager *mgr);
void qos_canary_stop(struct qos_manager *mgr);
/* At each housekeeping pass: an alarm demotes every real-time reserve. */
void qos_canary_check(struct qos_manager *mgr, uint64_t now_us);

#endif
