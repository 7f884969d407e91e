/*
 * qos/core.h - the manager's shared state, and what every layer may use of it.
 *
 * Layer 0 (kernel and reporting).  The qos/ files form layers that call only
 * downward (scripts/check-layers.py lists any call that does not):
 *   0 kernel:   sys, proc, cgroup*, cglimit, cputimer, journal, params,
 *               admission, police, watchdog, rules*, event, core.h
 *   1 reserve:  reserve, threads, fallback, optimistic, rtguard
 *   2 member:   member, guardian
 *   3 manager:  manager, configure, reconcile, canary
 * Each layer's files hold the state they own in their own structs; struct
 * qos_manager gathers them so that one pointer reaches all.
 */
#ifndef QOS_CORE_H
#define QOS_CORE_H

#include "qos/admission.h"
#include "qos/cgroup.h"
#include "qos/event.h"
#include "qos/qos.h"
#include "qos/watchdog.h"

#include <stdlib.h>

struct qos_reserve;
struct qos_rules;
struct qos_rt_carry;

#define QOS_COOKIE_BUCKETS 64u
/* The housekeeping pass: adoption, new threads, lazy accounting, watchdog. */
#define QOS_HOUSEKEEPING_US 1000000u
/* Shortest gap between two passes for members' forks, per reserve. */
#define QOS_FORK_PASS_US 10000u

/* A process member's threads as listed once in a housekeeping pass (threads.c). */
struct qos_thread_listing {
	pid_t pid;
	size_t first, n; /* its tids in qos_thread_cache.tids */
	bool gone; /* the listing failed: the process is gone */
};

struct qos_thread_cache {
	bool keep; /* only during one reserve's housekeeping pass */
	struct qos_thread_listing *lists;
	size_t n, cap;
	pid_t *tids;
	size_t n_tids, cap_tids;
};

struct qos_manager {
	struct qos_manager_config config;
	char root_name[64];
	char base[QOS_CG_PATH - 64];
	struct qos_cgroup cg;
	struct qos_admission adm;
	struct qos_reserve *reserves;
	struct qos_rules *rules;
	bool optimistic; /* the kernel shows deadline state: qos -> other works */
	int64_t dl_clock_offset_ns; /* scheduler clock - CLOCK_MONOTONIC */
	uint64_t dl_calibrated_us; /* when a fresh reservation last refined it */
	uint64_t tick_us; /* the scheduler tick (qos_sys_tick_us) */
	struct qos_events events; /* the embedder's callback; why the last call was refused */
	bool journal_warned; /* a member's origin could not be recorded */
	int epoll_fd;
	int timer_fd;
	int cputimer_fd; /* signalfd of CPU-timer notifications, or -1 */
	uint32_t next_cookie;
	/* Reserves by cookie: each CPU-timer signal names one (chained by cookie_next). */
	struct qos_reserve *by_cookie[QOS_COOKIE_BUCKETS];
	uint64_t armed_us;
	uint64_t housekeeping_us;
	int root_idle; /* our root's cpu.idle / weight last written, -1 unknown */
	long root_weight;
	bool root_weight_dirty; /* a weight change waits for housekeeping */
	unsigned stale_groups; /* groups that refused removal (reconcile.c) */
	pid_t guardian_pid;
	int guardian_fd; /* our end of its socket; -1: none runs */
	int guardian_pidfd; /* in the epoll set: its death is replaced at once */
	size_t n_outside_root; /* thread members named to the guardian (guardian.c) */
	/* RLIMIT_RTTIME estimates of threads no reserve's guard watches now (rtguard.c) */
	struct qos_rt_carry *rt_carry;
	size_t n_rt_carry, cap_rt_carry;
	/* watchdog */
	int canary_fd; /* eventfd the canary bumps every second */
	int canary_stop_fd; /* eventfd that ends our canary thread */
	bool canary_running; /* our own canary thread (not watchdog_external_canary) */
	unsigned long canary_thread;
	struct qos_watchdog watchdog;
	uint64_t watchdog_run_delay_us; /* the loop thread's run delay at the last check */
	struct qos_thread_cache threads;
	/*
	 * Descriptors still to keep open for reads repeated every pass or
	 * switch: /proc files of optimistic switches (sys.h), member task
	 * directories, reserve groups' cgroup.procs.
	 */
	unsigned int kept_fds_budget;
};

/* At most this, and at most a quarter of the process's descriptor limit:
 * the compositor's clients need the rest. */
#define QOS_KEPT_FDS_BUDGET 512u

/*
 * Room for one more element in a growable array of n elements (capacity
 * *cap, elements of `size` bytes): returns the array to use from now on, or
 * NULL, leaving it as it was, when memory runs out.
 */
static inline void *qos_array_room(void *items, size_t *cap, size_t n, size_t size) {
	if (n < *cap)
		return items;
	size_t c = *cap ? *cap * 2 : 8;
	void *grown = realloc(items, c * size);
	if (grown)
		*cap = c;
	return grown;
}

#endif
