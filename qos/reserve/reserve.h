/*
 * qos/reserve/reserve.h - one reserve and its members as the layers above see
 * them: lookup, creation, the policy each member thread is given, the
 * group's controls, the root's weight and the manager's timer (reserve.c).
 * Layer 1 (reserve): may use layer 0 only.
 */
#ifndef QOS_RESERVE_H
#define QOS_RESERVE_H

#include "qos/policy/adapt.h"
#include "qos/policy/core.h"
#include "qos/reserve/fallback.h"
#include "qos/reserve/rtguard.h"
#include "qos/policy/police.h"
#include "qos/policy/split_rules.h"
#include "qos/kernel/sys.h"

#include <time.h>

struct qos_reserve;

struct qos_thread_orig {
	pid_t tid;
	struct qos_sched sched;
};

/*
 * Where a member came from, which leaving gives back (member.c; declared
 * here, below it, because struct qos_member holds it).
 */
struct qos_member_home {
	char v2[QOS_CG_REL_PATH];
	char cpu[QOS_CG_REL_PATH];
	/* Its class before it joined (a process's main thread's), and each of a
	 * process member's threads' then.  Threads started since get the
	 * member's. */
	struct qos_sched sched;
	struct qos_thread_orig *threads;
	size_t n_threads;
	bool moving; /* leaving for another reserve: home, not its old class */
};

/* The member's RLIMIT_RTTIME bound (member.c, as for struct qos_member_home). */
struct qos_member_rttime {
	bool bounded;
	uint64_t orig_hard; /* RLIMIT_RTTIME hard limit before any member bounded it */
	uint64_t old_soft, old_hard;
};

struct qos_member {
	struct qos_reserve *reserve;
	pid_t pid;
	pid_t tid; /* 0: whole process */
	int pidfd;
	/* pidfd is its process's (no thread pidfds before Linux 6.9): the
	 * thread's own exit is looked for at each housekeeping pass. */
	bool exit_polled;
	int task_fd; /* its /proc/PID/task, kept (threads.c), or -1 */
	uint64_t start_time;
	bool outside_root; /* a thread left in its process's group (cgroup v2) */
	struct qos_member_home home; /* member.c */
	struct qos_member_rttime rttime; /* member.c */
	struct qos_member_usage usage; /* fallback.c */
};

/*
 * The reserve's cgroup directory and the files of it kept open (reserve.c:
 * made on the first join by member.c, read by fallback.c's accounting).
 */
struct qos_reserve_cgroup {
	bool exists;
	int stat_fd; /* the group's cpu.stat, or -1 */
	int idle; /* cpu.idle last written, -1 unknown */
	int idle_fd; /* the group's cpu.idle, kept open for fallback switches */
	int procs_fd; /* the group's cgroup.procs (v2 tree), kept for housekeeping */
	long weight; /* load weight last written for a real-time class, 0 none */
};

/*
 * Passes for members' forks (manager.c, qos_manager_forked): kept here,
 * below it, because reserve.c's timer wakes for the pending one.
 */
struct qos_reserve_forks {
	uint64_t pass_us; /* the last pass */
	bool pending; /* a fork waits for the next one */
};

/*
 * The starvation watchdog, not a user, made the reserve other
 * (configure.c, qos_configure_demote_rt): its parameters before, which a
 * reload compares with qosrc's old definition (manager.c,
 * apply_redefined).  Any later change through qos_reserve_set (a user's,
 * or a reload's) clears it.  Declared here, below its layer 3 owners,
 * because struct qos_reserve holds it.
 */
struct qos_reserve_demotion {
	bool demoted;
	struct qos_params before;
};

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
	struct qos_reserve_cgroup cgroup; /* reserve.c */
	uint32_t cookie; /* names the reserve in CPU-timer notifications */
	struct qos_reserve *cookie_next;
	struct qos_reserve_timers timer; /* fallback.c */
	struct qos_police police; /* police.c's machine, run by fallback.c */
	struct qos_reserve_fallback fb; /* fallback.c */
	struct qos_optimistic *opt; /* optimistic.c: threads in an optimistic qos reserve's fallback */
	uint64_t dl_runtime_ns; /* reserve.c: runtime its deadline threads were last given, 0 none */
	struct qos_reserve_rtguard rtg; /* rtguard.c */
	struct qos_reserve_forks forks; /* reserve.c's timer, manager.c's passes */
	struct qos_reserve_demotion wd; /* configure.c */
	struct qos_adapt adapt; /* adapt.c's rules, run by adjust.c */
	struct qos_split split; /* split.c: the slice divided among the threads by use */
};

struct qos_reserve *qos_reserve_find(struct qos_manager *mgr, const char *name);
/* The reserve whose cgroup directory has this name, or NULL. */
struct qos_reserve *qos_reserve_find_by_group(struct qos_manager *mgr, const char *group);
struct qos_member *qos_reserve_find_member(struct qos_manager *mgr, pid_t pid, pid_t tid);
/* The reserve whose CPU timers carry this cookie, or NULL. */
struct qos_reserve *qos_reserve_find_by_cookie(struct qos_manager *mgr, uint32_t cookie);
void qos_reserve_free(struct qos_reserve *r);
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
/* Arms the manager's timer for the earliest time a reserve needs a look. */
void qos_reserve_rearm(struct qos_manager *mgr);
void qos_reserve_root_weight_update(struct qos_manager *mgr);
void qos_reserve_root_weight_deferred(struct qos_manager *mgr, bool defer);
/*
 * Deadline runtime of each thread: the slice split over the member threads,
 * as last given to them (counted afresh when none was given yet).
 */
uint64_t qos_reserve_dl_runtime_ns(struct qos_reserve *r);
/* A new reserve with these (normalized) parameters, listed and announced. */
struct qos_reserve *qos_reserve_new(struct qos_manager *mgr, const char *name,
		const struct qos_params *params);
/*
 * Whether new real-time grants are allowed now: not during the starvation
 * watchdog's cool-down, which err then explains.
 */
bool qos_reserve_rt_grants_allowed(struct qos_manager *mgr, uint64_t now, char *err,
		size_t err_len);
/* The reserve's member threads (at least 1): the deadline slice is split over them. */
size_t qos_reserve_count_threads(struct qos_reserve *r);
/*
 * Gives policy to every thread of every member (the slice split anew for
 * qos), or to member m's threads; returns the first error (-errno), which an
 * error event has reported.
 */
int qos_reserve_apply_threads(struct qos_reserve *r, enum qos_policy policy);
int qos_reserve_apply_member(struct qos_reserve *r, struct qos_member *m, enum qos_policy policy,
		uint64_t dl_runtime_ns);
/* What a refused policy means for the user, from its -errno. */
const char *qos_reserve_policy_error(enum qos_policy policy, int err);
/* The group's weight, idle flag, quota, real-time bandwidth and freezer. */
int qos_reserve_apply_group(struct qos_reserve *r);
/* The group's cpu.idle, written only when it changes. */
void qos_reserve_set_group_idle(struct qos_reserve *r, bool idle);
/*
 * A qos, fifo or rr reserve's group weighs 1024 per member thread, so the
 * time its threads run at the fallback class holds up under load; written
 * when the thread count changed (each housekeeping pass).
 */
void qos_reserve_update_weight(struct qos_reserve *r);
/* Counts a group that refused removal (err: -errno) and reports it. */
void qos_reserve_removal_failed(struct qos_manager *mgr, const char *reserve, const char *group,
		int err);

/* Re-applies the reserve's current policy to threads that appeared since the last pass. */
void qos_reserve_apply_active(struct qos_reserve *r);
/*
 * Whether name and p (normalized here) may define a reserve; false with
 * the reason in err.
 */
bool qos_reserve_valid(const char *name, struct qos_params *p, char *err, size_t err_len);
/* A new reserve from valid parameters: not under an automatic reserve's name. */
struct qos_reserve *qos_reserve_create(struct qos_manager *mgr, const char *name,
		const struct qos_params *p, char *err, size_t err_len);

#endif
