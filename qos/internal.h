/* qos/internal.h - the manager's private state, shared by its source files. */
#ifndef QOS_INTERNAL_H
#define QOS_INTERNAL_H

#include "qos/admission.h"
#include "qos/cgroup.h"
#include "qos/event.h"
#include "qos/police.h"
#include "qos/qos.h"
#include "qos/sys.h"
#include "qos/watchdog.h"

#include <stdlib.h>
#include <time.h>

struct qos_reserve;

struct qos_thread_orig {
	pid_t tid;
	struct qos_sched sched;
};

struct qos_member {
	struct qos_reserve *reserve;
	pid_t pid;
	pid_t tid; /* 0: whole process */
	int pidfd;
	int task_fd; /* its /proc/PID/task, kept (threads.c), or -1 */
	uint64_t start_time;
	char orig_v2[QOS_CG_REL_PATH];
	char orig_cpu[QOS_CG_REL_PATH];
	bool rttime_bounded;
	bool outside_root; /* a thread left in its process's group (cgroup v2) */
	uint64_t orig_rt_hard; /* RLIMIT_RTTIME hard limit before any member bounded it */
	uint64_t old_rt_soft, old_rt_hard;
	/* Its class before it joined (a process's main thread's), and each of a
	 * process member's threads' then: what leaving gives back.  Threads
	 * started since get the member's. */
	struct qos_sched orig;
	struct qos_thread_orig *orig_threads;
	size_t n_orig_threads;
	bool moving; /* leaving for another reserve: home, not its old class */
	uint64_t cpu_base_us; /* thread members: schedstat at join */
	uint64_t clock_base_us; /* process members: their CPU clock at join */
	uint64_t clock_us; /* ... and as the last check read it */
	bool clock_read; /* false: that read failed (the process is exiting) */
	timer_t cpu_timer; /* notifies the manager at a CPU-time threshold */
	bool has_cpu_timer;
	uint64_t timer_at_ns; /* where cpu_timer is armed on the clock; 0: not known */
};

#define QOS_COOKIE_BUCKETS 64u
/* The housekeeping pass: adoption, new threads, lazy accounting, watchdog. */
#define QOS_HOUSEKEEPING_US 1000000u
/* Shortest gap between two passes for members' forks, per reserve. */
#define QOS_FORK_PASS_US 10000u

struct qos_reserve {
	struct qos_manager *mgr;
	struct qos_reserve *next;
	char name[QOS_NAME_MAX + 1];
	char group[QOS_NAME_MAX + 16]; /* its cgroup directory (kept across renames) */
	struct qos_params params;
	bool is_auto;
	pid_t owner;
	struct qos_member **members;
	size_t n_members, cap_members;
	bool granted;
	uint64_t granted_ppm;
	bool has_group;
	int stat_fd; /* the group's cpu.stat, or -1 */
	int group_idle; /* cpu.idle last written, -1 unknown */
	int idle_fd; /* the group's cpu.idle, kept open for fallback switches */
	int procs_fd; /* the group's cgroup.procs (v2 tree), kept for housekeeping */
	uint32_t cookie; /* names the reserve in CPU-timer notifications */
	struct qos_reserve *cookie_next;
	bool timers_armed; /* members' CPU timers armed for this budget */
	bool timers_refused; /* the kernel refused a timer: polled instead */
	uint64_t armed_own_us; /* own time when they were armed */
	uint64_t armed_used_us; /* used time in the period when they were armed */
	bool armed_first_use; /* armed to fire at the first tick a member runs */
	uint64_t checked_own_us; /* own time at the last check */
	uint64_t fresh_own_us; /* own time as last changed ... */
	uint64_t fresh_at_us; /* ... first seen then */
	struct qos_police police;
	uint64_t next_check_us;
	bool fb_applied; /* the manager switched members to the fallback */
	bool fb_threads; /* ... thread by thread (not the group's cpu.idle alone) */
	bool watched; /* qos_manager_watch_overruns: per-period events wanted */
	uint64_t retired_us; /* CPU time of thread members that left */
	struct qos_optimistic *opt; /* threads in the fallback of an optimistic qos reserve */
	uint64_t dl_runtime_ns; /* runtime its deadline threads were last given, 0 none */
	struct qos_rtguard *rtg; /* real-time threads watched for RLIMIT_RTTIME (rtguard.c) */
	uint64_t rtg_retry_us; /* the guard looks for a moved-out thread asleep again; 0: no */
	uint64_t fork_pass_us; /* last pass for a member's fork (qos_manager_forked) */
	bool fork_pending; /* a fork waits for the next one */
	/*
	 * The starvation watchdog, not a user, made it other (qos_demote_all_rt):
	 * its parameters before, which a reload compares with qosrc's old
	 * definition (manager.c, apply_redefined).  Any later change through
	 * qos_reserve_set (a user's, or a reload's) clears it.
	 */
	bool wd_demoted;
	struct qos_params wd_before;
};

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

/*
 * Calls fn (when not NULL) for every thread of member m (its one thread for
 * a thread member) and returns how many, or -1 when the process is gone.
 * Between qos_threads_keep(mgr, true) and (mgr, false), a process is listed
 * once and the listing reused (threads.c).
 */
int qos_member_for_each_thread(struct qos_manager *mgr, struct qos_member *m,
		void (*fn)(pid_t tid, void *data), void *data);
/* Closes the task directory the listings keep open for m; before freeing it. */
void qos_member_close_task_dir(struct qos_manager *mgr, struct qos_member *m);
void qos_threads_keep(struct qos_manager *mgr, bool keep);
void qos_threads_finish(struct qos_manager *mgr);

struct qos_reserve *qos_find_reserve(struct qos_manager *mgr, const char *name);
/* The reserve whose cgroup directory has this name, or NULL. */
struct qos_reserve *qos_find_reserve_by_group(struct qos_manager *mgr, const char *group);
struct qos_member *qos_find_member(struct qos_manager *mgr, pid_t pid, pid_t tid);
void qos_reserve_free(struct qos_reserve *r);
void qos_member_remove(struct qos_member *m, bool alive, bool exited);
/*
 * Gives m's process the RLIMIT_RTTIME bound when m's reserve is fifo or rr
 * and it has none yet (at join, adoption, and a change into fifo/rr): a
 * thread that never sleeps is stopped by the kernel even with no manager.
 * The bound stays until m leaves.
 */
void qos_member_bound_rttime(struct qos_member *m);
/*
 * The populated fifo/rr reserves other than except, with their limits, as
 * text ("'a' (90%), 'b' (20%)"); returns its length.  Their groups hold our
 * root's real-time share, which a new group's runtime must fit beside.
 */
size_t qos_reserve_rt_holders(struct qos_manager *mgr, const struct qos_reserve *except, char *out,
		size_t len);
/* Why r's group got no real-time bandwidth (gerr), for the user. */
void qos_reserve_rt_refusal(struct qos_manager *mgr, const struct qos_reserve *r, int gerr,
		char *out, size_t len);
/* Whether pid can be given an RLIMIT_RTTIME bound, which p's class needs; else err. */
bool qos_member_rttime_boundable(struct qos_manager *mgr, const struct qos_params *p, pid_t pid,
		char *err, size_t err_len);
/* The reserve whose CPU timers carry this cookie, or NULL. */
struct qos_reserve *qos_find_reserve_by_cookie(struct qos_manager *mgr, uint32_t cookie);
/* Runs the police state machine for one reserve now and applies the result. */
void qos_reserve_check(struct qos_reserve *r, uint64_t now_us);
/* Re-applies per-thread policy to threads that appeared since the last pass. */
void qos_reserve_housekeeping(struct qos_reserve *r);
/* Adoption, thread policy and a check for a reserve whose member forked. */
void qos_reserve_fork_pass(struct qos_reserve *r, uint64_t now_us);
/* Arms the manager's timer for the earliest time a reserve needs a look. */
void qos_reserve_rearm(struct qos_manager *mgr);
void qos_demote_all_rt(struct qos_manager *mgr);
void qos_root_weight_update(struct qos_manager *mgr);
void qos_root_weight_update_deferred(struct qos_manager *mgr, bool defer);

/*
 * Deadline runtime of each thread: the slice split over the member threads,
 * as last given to them (counted afresh when none was given yet).
 */
uint64_t qos_reserve_dl_runtime_ns(struct qos_reserve *r);

/* reserve.c */
/* Whether a reserve with params p may freeze its group (pause, or a pause fallback). */
bool qos_reserve_may_freeze(const struct qos_params *p);
/* A new reserve with these (normalized) parameters, listed and announced. */
struct qos_reserve *qos_reserve_new(struct qos_manager *mgr, const char *name,
		const struct qos_params *params);
/*
 * Whether new real-time grants are allowed now: not during the starvation
 * watchdog's cool-down, which err then explains.
 */
bool qos_rt_grants_allowed(struct qos_manager *mgr, uint64_t now, char *err, size_t err_len);
/* The reserve's member threads (at least 1): the deadline slice is split over them. */
size_t qos_reserve_count_threads(struct qos_reserve *r);
/*
 * Gives policy to every thread of every member (the slice split anew for
 * qos), or to member m's threads; returns the first error (-errno), which an
 * error event has reported.
 */
int qos_reserve_apply_threads(struct qos_reserve *r, enum qos_policy policy);
/*
 * Whether a reserve with params p can hold single threads (the rest of their
 * process outside it); false with the reason in err.
 */
bool qos_reserve_fits_threads(const struct qos_manager *mgr, const struct qos_params *p, char *err,
		size_t err_len);
int qos_reserve_apply_member(struct qos_reserve *r, struct qos_member *m, enum qos_policy policy,
		uint64_t dl_runtime_ns);
/* What a refused policy means for the user, from its -errno. */
const char *qos_reserve_policy_error(enum qos_policy policy, int err);
/*
 * Takes a leaving task's threads back to SCHED_OTHER at their old nice
 * (deadline threads released cleanly): member m's threads, each at its own
 * (m's orig_threads, else orig), or with m NULL every thread of process pid
 * (a child that does not inherit) at orig's.  Once the task is home,
 * qos_reserve_restore_sched gives back the class itself where it was not
 * SCHED_OTHER (fifo/rr need the real-time bandwidth of home); a fifo/rr
 * class only to a thread that had it at the join, never to one started
 * since or to a child (its parent may have had reset-on-fork, or be no
 * parent at all but the member the child was put down to).
 */
/*
 * Sends a task back to the groups it came from (v2, cpu).  Where they are
 * gone (a transient scope removed once it emptied), it goes to the top of
 * the tree instead, with an error event naming reserve: it must not stay in
 * a reserve's group, which may be frozen, once it has left.
 */
void qos_send_home(struct qos_manager *mgr, const char *reserve, pid_t pid, pid_t tid,
		bool whole_process, const char *v2, const char *cpu);
void qos_reserve_release_threads(struct qos_reserve *r, struct qos_member *m, pid_t pid,
		const struct qos_sched *orig);
void qos_reserve_restore_sched(struct qos_reserve *r, struct qos_member *m, pid_t pid,
		const struct qos_sched *orig);
/*
 * The class a thread of m had before m joined: its own, or m's for a thread
 * started since (*known false, when known is not NULL).
 */
const struct qos_sched *qos_member_orig_of(const struct qos_member *m, pid_t tid, bool *known);
/* The group's weight, idle flag, quota, real-time bandwidth and freezer. */
int qos_reserve_apply_group(struct qos_reserve *r);
/* The group's cpu.idle, written only when it changes. */
void qos_reserve_set_group_idle(struct qos_reserve *r, bool idle);

/* fallback.c */
/* qos falling back to other or idle, which the manager switches thread by thread. */
bool qos_reserve_optimistic(const struct qos_reserve *r);
/* other -> idle made by the group's cpu.idle alone, the threads left as they are. */
bool qos_reserve_group_idles(const struct qos_reserve *r);
/* Where a period starting now begins: on the common grid where that is safe. */
uint64_t qos_reserve_period_origin(const struct qos_reserve *r, uint64_t now_us);
/* CPU time of the members since they joined (billed time not included). */
uint64_t qos_reserve_own_cpu_us(struct qos_reserve *r);
/*
 * Keeps what m ran in r (since it joined) in r's count as m leaves, so the
 * period it leaves in is still charged for it.  Group counters keep it by
 * themselves; member clocks go with the member.
 */
void qos_reserve_retire_member(struct qos_reserve *r, struct qos_member *m, bool exited);
/* Takes the members back from the fallback to the reserve's policy. */
void qos_reserve_leave_fallback(struct qos_reserve *r);

/* member.c */
/* Adopts the members' new children (inherit) or sends them back. */
void qos_reserve_adopt_children(struct qos_reserve *r);

/*
 * optimistic.c: qos reserves falling back to other or idle, and the repair of
 * deadline threads the kernel left throttled without a timer.
 */
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

/*
 * rtguard.c: real-time threads that never sleep are moved to other before
 * RLIMIT_RTTIME kills them, and back once they sleep.
 */
void qos_rtguard_pass(struct qos_reserve *r);
/*
 * The reserve's real-time threads are about to leave for its fallback
 * (to_rt false: call before switching them) or are back (true: after).
 */
void qos_rtguard_switch(struct qos_reserve *r, bool to_rt);
bool qos_rtguard_demoted(const struct qos_reserve *r, pid_t tid);
/* At r->rtg_retry_us: moved-out threads that sleep are made real-time while asleep. */
void qos_rtguard_retry(struct qos_reserve *r, uint64_t now_us);
/* Whether tid, about to be made fifo/rr by r, must stay other (see rtguard.c). */
bool qos_rtguard_hold(struct qos_reserve *r, pid_t pid, pid_t tid);
void qos_rtguard_destroy(struct qos_reserve *r);
/* m leaves r: its threads' estimates are carried at the manager (rtguard.c). */
void qos_rtguard_forget_member(struct qos_reserve *r, const struct qos_member *m);
/* Once a pass: carried estimates of threads gone are dropped, the others brought up to date. */
void qos_rtguard_prune(struct qos_manager *mgr);
void qos_rtguard_finish(struct qos_manager *mgr);
/*
 * Gives a leaving process back the RLIMIT_RTTIME it had before we bounded
 * it.  Raising a hard limit takes CAP_SYS_RESOURCE: without it the bound
 * stays (a limit, never a grant), and an error event says so.
 */
void qos_rtguard_restore_limit(struct qos_manager *mgr, const char *reserve, pid_t pid,
		uint64_t soft, uint64_t hard);

/* guardian.c */
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
/* reconcile.c */
void qos_reconcile(struct qos_manager *mgr);
/* Counts a group that refused removal (err: -errno) and reports it. */
void qos_reconcile_failed(struct qos_manager *mgr, const char *reserve, const char *group, int err);
/* Releases and removes again the groups that refused removal, if any. */
void qos_reconcile_retry(struct qos_manager *mgr);
/* watchdog.c */
bool qos_watchdog_start(struct qos_manager *mgr);
void qos_watchdog_stop(struct qos_manager *mgr);
void qos_watchdog_check(struct qos_manager *mgr, uint64_t now_us);

#endif
