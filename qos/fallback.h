/*
 * qos/fallback.h - policing one reserve: its CPU time, the police state
 * machine run on it, the switch to the fallback and back (fallback.c).
 * Layer 1 (reserve).
 */
#ifndef QOS_FALLBACK_H
#define QOS_FALLBACK_H

#include "qos/reserve.h"

/* Runs the police state machine for one reserve now and applies the result. */
void qos_fallback_check(struct qos_reserve *r, uint64_t now_us);
/* qos falling back to other or idle, which the manager switches thread by thread. */
bool qos_fallback_optimistic(const struct qos_reserve *r);
/* other -> idle made by the group's cpu.idle alone, the threads left as they are. */
bool qos_fallback_group_idles(const struct qos_reserve *r);
/* Where a period starting now begins: on the common grid where that is safe. */
uint64_t qos_fallback_period_origin(const struct qos_reserve *r, uint64_t now_us);
/* CPU time of the members since they joined (billed time not included). */
uint64_t qos_fallback_own_cpu_us(struct qos_reserve *r);
/*
 * Keeps what m ran in r (since it joined) in r's count as m leaves, so the
 * period it leaves in is still charged for it.  Group counters keep it by
 * themselves; member clocks go with the member.
 */
void qos_fallback_retire_member(struct qos_reserve *r, struct qos_member *m, bool exited);
/* Takes the members back from the fallback to the reserve's policy. */
void qos_fallback_leave(struct qos_reserve *r);

#endif
