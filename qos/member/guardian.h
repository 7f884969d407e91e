/*
 * qos/member/guardian.h - the helper process that takes every member back to
 * time-sharing and thaws our groups if the manager dies.
 * Layer 2 (member).
 */
#ifndef QOS_GUARDIAN_H
#define QOS_GUARDIAN_H

#include "qos/reserve/reserve.h"

/* Forks a guardian (it knows the thread members tracked so far) and watches it. */
bool qos_guardian_start(struct qos_manager *mgr);
void qos_guardian_stop(struct qos_manager *mgr);
/*
 * Its pidfd was readable: reaps it, starts a new one, and says so in an
 * error event (or that none could be started).
 */
void qos_guardian_died(struct qos_manager *mgr);
/* At each 1 s pass: starts one if the guardian is configured but none runs. */
void qos_guardian_retry(struct qos_manager *mgr);
/* The guardian is configured but none runs (it died and none could be started). */
bool qos_guardian_missing(const struct qos_manager *mgr);
/*
 * Whether a task may be given params p now: while qos_guardian_missing, a
 * real-time class or a freeze would outlive a crash of the manager, so
 * neither is given (false, the reason in err, QOS_REFUSAL_FORBIDDEN).
 */
bool qos_guardian_allows(struct qos_manager *mgr, const struct qos_params *p, char *err,
		size_t err_len);
/*
 * Tells the guardian of a thread member outside our groups (on cgroup v2 a
 * thread stays in its process's group), which no scan of our root finds:
 * it takes such threads back to time-sharing too.  False if the record
 * could not be sent (the guardian is gone), or the guardian keeps its most
 * (QOS_GUARDIAN_MAX_THREADS) already.
 */
bool qos_guardian_track(struct qos_manager *mgr, const struct qos_member *m, bool on);
/* How many the guardian keeps; qos_guardian_track refuses more. */
#define QOS_GUARDIAN_MAX_THREADS 1024

#endif
