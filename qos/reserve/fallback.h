/*
 * qos/reserve/fallback.h - policing one reserve: its CPU time, the police state
 * machine run on it, the switch to the fallback and back (fallback.c).
 * Layer 1 (reserve).
 */
#ifndef QOS_FALLBACK_H
#define QOS_FALLBACK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

struct qos_member;
struct qos_reserve;

/* The watch on a reserve's CPU use: members' CPU timers and what they last read. */
struct qos_reserve_timers {
	bool armed; /* members' CPU timers armed for this budget */
	bool refused; /* the kernel refused a timer: polled instead */
	uint64_t armed_own_us; /* own time when they were armed */
	uint64_t armed_used_us; /* used time in the period when they were armed */
	bool armed_first_use; /* armed to fire at the first tick a member runs */
	uint64_t checked_own_us; /* own time at the last check */
	uint64_t fresh_own_us; /* own time as last changed ... */
	uint64_t fresh_at_us; /* ... first seen then */
};

/* What a member has run since it joined, by its own clock or the scheduler's. */
struct qos_member_usage {
	uint64_t cpu_base_us; /* thread members: schedstat at join */
	uint64_t clock_base_us; /* process members: their CPU clock at join */
	uint64_t clock_us; /* ... and as the last check read it */
	bool clock_read; /* false: that read failed (the process is exiting) */
	timer_t cpu_timer; /* notifies the manager at a CPU-time threshold */
	bool has_cpu_timer;
	uint64_t timer_at_ns; /* where cpu_timer is armed on the clock; 0: not known */
};

/* The reserve's switch to its fallback, and when it is looked at next. */
struct qos_reserve_fallback {
	uint64_t next_check_us;
	bool applied; /* the manager switched members to the fallback */
	bool threads; /* ... thread by thread (not the group's cpu.idle alone) */
	bool watched; /* qos_manager_watch_overruns: per-period events wanted */
	uint64_t retired_us; /* CPU time of thread members that left */
};

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
