/*
 * qos/reserve/optimistic.h - qos reserves falling back to other or idle, and the
 * repair of deadline threads the kernel left throttled without a timer.
 * Layer 1 (reserve).
 */
#ifndef QOS_OPTIMISTIC_H
#define QOS_OPTIMISTIC_H

#include "qos/reserve/reserve.h"

bool qos_optimistic_supported(void);
/* Moves every deadline thread to the fallback, each with its safe return time. */
void qos_optimistic_enter(struct qos_reserve *r, uint64_t period_end_us);
/*
 * During the fallback: threads the members started since it began (reset on
 * fork makes them SCHED_OTHER) wait in the fallback class with the others
 * and enter the reservation with them at the period end.  True when there
 * were any: the slice must then be split over more threads.
 */
bool qos_optimistic_hold_new(struct qos_reserve *r, uint64_t period_end_us);
/* Returns due threads, checks returned ones; gives the next time it needs. */
uint64_t qos_optimistic_run(struct qos_reserve *r, uint64_t now_us, bool in_fallback);
/* Repairs member threads stuck throttled (safety net, at housekeeping). */
void qos_optimistic_housekeeping(struct qos_reserve *r);
/* A thread just put into SCHED_DEADLINE: checked now, and a moment later
 * when that cannot tell whether the kernel left it stuck. */
void qos_optimistic_watch(struct qos_reserve *r, pid_t pid, pid_t tid);
/*
 * Run-on: a member thread of a divided reserve (split.h) found throttled,
 * its share used up while the reserve may still have slice left, goes on
 * in the fallback class until it may safely return (its 0-lag time), as
 * every thread does once the reserve's whole slice is used.  Only a thread
 * that ran since the last look has its deadline state read.  True when it
 * was moved; it returns through qos_optimistic_run.
 */
bool qos_optimistic_run_on(struct qos_reserve *r, pid_t pid, pid_t tid, uint64_t now_us);
/*
 * A member thread seen runnable without running for a whole period: taken
 * out of SCHED_DEADLINE until its 0-lag time if the kernel left it stuck.
 * True when it was.
 */
bool qos_optimistic_unstick(struct qos_reserve *r, pid_t pid, pid_t tid);
/* Whether any thread still waits in the fallback. */
bool qos_optimistic_any_waiting(const struct qos_reserve *r);
/* Whether tid sits in the fallback waiting for its return time. */
bool qos_optimistic_waiting(const struct qos_reserve *r, pid_t tid);
/* A member thread's state letter ('R' runnable), through its kept stat file
 * when it has an entry; 0 when it is gone. */
char qos_optimistic_thread_state(struct qos_reserve *r, pid_t pid, pid_t tid);
void qos_optimistic_forget(struct qos_reserve *r, pid_t pid, pid_t tid);
void qos_optimistic_clear(struct qos_reserve *r);
void qos_optimistic_destroy(struct qos_reserve *r);

#endif
