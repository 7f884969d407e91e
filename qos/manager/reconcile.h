/*
 * qos/manager/reconcile.h - groups a dead predecessor left, and groups that
 * refused removal, released and removed.
 * Layer 3 (manager).
 */
#ifndef QOS_RECONCILE_H
#define QOS_RECONCILE_H

#include "qos/policy/core.h"

/* At start: sends every task left in our groups back, and removes the groups. */
void qos_reconcile(struct qos_manager *mgr);
/* Releases and removes again the groups that refused removal, if any. */
void qos_reconcile_retry(struct qos_manager *mgr);

#endif
