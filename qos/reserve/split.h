/*
 * qos/reserve/split.h - a qos reserve's slice divided among its member threads by
 * what each runs (split.c, the rules in split_rules.h).  Layer 1 (reserve).
 *
 * Once a period the threads' CPU clocks (schedstat: their own time, never
 * what the compositor billed to the reserve) are sampled and each deadline
 * runtime planned anew; runtimes that shrink are given first, so the
 * kernel's admission never sees more than the slice.  While the reserve as
 * a whole is in its fallback nothing is applied: the return at the period
 * end gives each thread its planned runtime.
 */
#ifndef QOS_SPLIT_H
#define QOS_SPLIT_H

#include "qos/reserve/reserve.h"

/* Samples r's threads and applies the plan; called when r->split.next_us is due. */
void qos_split_pass(struct qos_reserve *r, uint64_t now_us);

/*
 * The deadline runtime thread tid of r holds under the division, in
 * *runtime_ns (left alone, the even split, while r has no division yet or
 * the thread started since the last sample: the next one divides the
 * slice anew).  False when the thread waits outside the reservation
 * (parked): its class is then left as it is.
 */
bool qos_split_runtime(struct qos_reserve *r, pid_t tid, uint64_t *runtime_ns);

enum qos_split_grant {
	QOS_SPLIT_GIVE, /* give it *runtime_ns now */
	QOS_SPLIT_OUTSIDE, /* parked: it keeps the class it has until it runs */
	QOS_SPLIT_FULL, /* the others hold the slice: try again later */
};

/*
 * What thread tid of r may be given now that it enters its reservation
 * outside a pass (a return from the fallback, housekeeping, a new thread):
 * the plan's runtime (the even split, *runtime_ns on entry, before the
 * first plan or for a thread started since the last sample), less what
 * the others hold past the slice once those holding more than the plan
 * have shrunk.  So the runtimes the kernel holds never sum past the slice,
 * whatever order threads come back in.
 */
enum qos_split_grant qos_split_grant(struct qos_reserve *r, pid_t tid, uint64_t *runtime_ns);

/* Thread tid (of member pid) of r was given runtime_ns outside a pass. */
void qos_split_given(struct qos_reserve *r, pid_t pid, pid_t tid, uint64_t runtime_ns);
/*
 * The runtime the kernel holds for tid, as last given (the plan may have
 * moved since): what its 0-lag time is reckoned with.  False when the
 * division does not know it (one thread, or not given one yet).
 */
bool qos_split_held(const struct qos_reserve *r, pid_t tid, uint64_t *runtime_ns);

/*
 * Looks for threads throttled at their share (qos_optimistic_run_on),
 * QOS_SPLIT_CHECKS times a period; called when r->split.check_us is due.
 */
void qos_split_check(struct qos_reserve *r, uint64_t now_us);

/* The division for r's current slice (after a change of parameters). */
void qos_split_replan(struct qos_reserve *r);

/* Forgets the division (r no longer qos, or emptied). */
void qos_split_clear(struct qos_reserve *r);

/* Periods since the last call whose threads ran out with the slice all planned. */
uint64_t qos_split_take_starved(struct qos_reserve *r);

#endif
