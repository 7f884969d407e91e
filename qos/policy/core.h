/*
 * qos/policy/core.h - the manager's shared state, and what every layer may use of it.
 *
 * Layer 0 (kernel and reporting).  The qos/ files form layers that call only
 * downward (scripts/check-layers.py lists any call that does not):
 *   0 kernel:   sys, proc, cgroup*, cglimit, cputimer, journal, params,
 *               admission, police, adapt, watchdog, rules*, split_rules, event,
 *               core.h
 *   1 reserve:  reserve, threads, fallback, optimistic, rtguard, split
 *   2 member:   member, guardian
 *   3 manager:  manager, configure, adjust, reconcile, canary
 * Each file's state is a sub-struct owned by that file; struct qos_manager,
 * struct qos_reserve and struct qos_member are compositions of them, and a
 * file may use the sub-structs of its own layer and the ones below only
 * (checked by the same script).
 */
#ifndef QOS_CORE_H
#define QOS_CORE_H

#include "qos/policy/admission.h"
#include "qos/kernel/cgroup.h"
#include "qos/policy/event.h"
#include "qos/qos.h"
#include "qos/policy/watchdog.h"

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

/*
 * The parts of struct qos_manager that one file owns.  They are declared
 * here, in layer 0, because struct qos_manager holds them; the comment on
 * each names its owner, the only file that should write it.
 */

/* The deadline scheduler's clock and state as seen from here (optimistic.c). */
struct qos_manager_deadline {
	bool optimistic; /* the kernel shows deadline state: qos -> other works (manager.c sets) */
	int64_t clock_offset_ns; /* scheduler clock - CLOCK_MONOTONIC */
	uint64_t calibrated_us; /* when a fresh reservation last refined it */
};

/* Reserves by cookie: each CPU-timer signal names one (reserve.c). */
struct qos_manager_cookies {
	uint32_t next;
	struct qos_reserve *by[QOS_COOKIE_BUCKETS]; /* chained by cookie_next */
};

/* Our root group's cpu.idle and weight (reserve.c). */
struct qos_manager_root {
	int idle; /* cpu.idle / weight last written, -1 unknown */
	long weight;
	bool weight_dirty; /* a weight change waits for housekeeping */
};

/* The display server's own cgroup leaf (server.c). */
struct qos_manager_server {
	pid_t pid; /* moved into the leaf; 0 when not */
	uint32_t weight; /* cgroup v2 scale, 1 to 10000 */
	char v2[QOS_CG_REL_PATH]; /* where it came from, relative to each mount */
	char cpu[QOS_CG_REL_PATH];
	/* The cpu tree's cgroup.procs of that group: children write "0" into it. */
	char origin_procs[QOS_CG_PATH + QOS_CG_REL_PATH];
};

/* The guardian process (guardian.c, layer 2). */
struct qos_manager_guardian {
	pid_t pid;
	int fd; /* our end of its socket; -1: none runs */
	int pidfd; /* in the epoll set: its death is replaced at once */
	size_t n_outside_root; /* thread members named to the guardian */
};

/* RLIMIT_RTTIME estimates of threads no reserve's guard watches now (rtguard.c). */
struct qos_manager_carry {
	struct qos_rt_carry *items;
	size_t n, cap;
};

/* The starvation watchdog's canary (canary.c, layer 3). */
struct qos_manager_canary {
	int fd; /* eventfd the canary bumps every second */
	int stop_fd; /* eventfd that ends our canary thread */
	bool running; /* our own canary thread (not watchdog_external_canary) */
	unsigned long thread;
	uint64_t run_delay_us; /* the loop thread's run delay at the last check */
};

struct qos_manager {
	/* Shared: set up by manager.c, read by every layer. */
	struct qos_manager_config config;
	char root_name[64];
	char base[QOS_CG_PATH - 64];
	struct qos_cgroup cg;
	struct qos_admission adm; /* admission.c's sums, kept by member.c and configure.c */
	struct qos_reserve *reserves; /* the list is reserve.c's */
	struct qos_rules *rules;
	uint64_t tick_us; /* the scheduler tick (qos_sys_tick_us) */
	struct qos_events events; /* the embedder's callback; why the last call was refused */
	int epoll_fd;
	struct qos_thread_cache threads; /* threads.c */
	/*
	 * Descriptors still to keep open for reads repeated every pass or
	 * switch: /proc files of optimistic switches (sys.h), member task
	 * directories, reserve groups' cgroup.procs.
	 */
	unsigned int kept_fds_budget;
	/* The manager's timer (manager.c reads it, reserve.c arms it). */
	int timer_fd;
	uint64_t armed_us;
	uint64_t housekeeping_us;
	int cputimer_fd; /* signalfd of CPU-timer notifications, or -1 (manager.c) */
	struct qos_watchdog watchdog; /* watchdog.c's state, run by canary.c and manager.c */
	/* Groups that refused removal: counted by reserve.c and reconcile.c,
	 * which removes them again. */
	unsigned stale_groups;
	/* Layer 1: reserve.c, optimistic.c, rtguard.c. */
	struct qos_manager_cookies cookies;
	struct qos_manager_root root;
	struct qos_manager_deadline dl;
	struct qos_manager_carry carry;
	struct qos_manager_server server;
	/* Layer 2: member.c, guardian.c. */
	bool journal_warned; /* a member's origin could not be recorded (member.c) */
	struct qos_manager_guardian guardian;
	/* Layer 3: canary.c. */
	struct qos_manager_canary canary;
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
	if (n < *cap) {
		return items;
	}
	size_t c = *cap ? *cap * 2 : 8;
	void *grown = realloc(items, c * size);
	if (grown) {
		*cap = c;
	}
	return grown;
}

#endif
