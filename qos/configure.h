/*
 * qos/configure.h - reserves defined, changed and deleted with their
 * members in them (configure.c; the public calls are in qos.h).
 * Layer 3 (manager).
 */
#ifndef QOS_CONFIGURE_H
#define QOS_CONFIGURE_H

#include "qos/core.h"

/* The starvation watchdog's alarm: every real-time reserve to other. */
void qos_configure_demote_rt(struct qos_manager *mgr);

#endif
