/*
 * qos/qos.h - the QoS manager: named reserves, scheduling classes, admission
 * control and policing with fallback (Linux-SRT, Ingram ch. 3, 5.3, 7.3) on
 * stock kernel mechanisms.  See docs/qos-kernel-mapping.md for the mapping.
 *
 * Include as "qos/qos.h"; link qos_dep.  No globals: every call takes the
 * manager.  The manager is single-threaded and never blocks: add
 * qos_manager_get_fd() to the event loop (readable -> qos_manager_dispatch()).
 * Calls are not thread-safe.
 *
 * Members are whole processes (tid == 0) or single threads.  They are held by
 * pidfd and checked against their start time before and after each change,
 * so a recycled pid is never mistaken for a member.
 */
#ifndef QOS_QOS_H
#define QOS_QOS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "qos/params.h"
#include "qos/rules.h"

struct qos_manager;

enum qos_event_type {
	QOS_EVENT_RESERVE_CREATED,
	QOS_EVENT_RESERVE_DELETED,
	QOS_EVENT_RESERVE_RENAMED, /* automatic reserve passed to a new owner */
	QOS_EVENT_PARAMS_CHANGED,
	QOS_EVENT_MEMBER_JOINED, /* class of pid/tid changed to the reserve's */
	QOS_EVENT_MEMBER_LEFT, /* pid/tid back to its own class */
	QOS_EVENT_MEMBER_EXITED,
	QOS_EVENT_ADMISSION_GRANTED,
	QOS_EVENT_ADMISSION_REFUSED, /* message holds the reason for the user */
	QOS_EVENT_OVERRUN, /* slice used up: fallback policy until period end
	                              * (kernel-capped reserves: qos_manager_watch_overruns) */
	QOS_EVENT_RESTORED, /* new period: back to the normal policy */
	QOS_EVENT_WATCHDOG, /* starvation: real-time members demoted; or a
	                              * reload's real-time definition waits for the
	                              * cool-down to end */
	QOS_EVENT_ERROR, /* a kernel call failed, or the guardian died: see message */
	QOS_EVENT_RT_DEMOTED, /* a real-time thread that never sleeps: other for now */
	QOS_EVENT_RT_RESUMED, /* ... and real-time again, since it sleeps */
	QOS_EVENT_RELEASED, /* idle for params.idle_periods: capacity given back
	                     * and members at the fallback; a member waking
	                     * (seen within 50 ms or a period, if longer)
	                     * brings GRANTED, or REFUSED
	                     * and the fallback while the capacity is others' */
};

struct qos_event {
	enum qos_event_type type;
	/* current name (old name for RENAMED is in message); NULL: the manager as a whole */
	const char *reserve;
	pid_t pid;
	pid_t tid; /* 0 for whole-process members */
	uint64_t used_us; /* OVERRUN/RESTORED: time used in the period concerned */
	const char *message; /* may be NULL */
};

/*
 * Called from inside the manager's calls (dispatch, join, set, ...), in the
 * middle of walking its reserves and members: it may query (reserve_info,
 * reserve_of, get_info, ...) but not change reserves or members.  From it,
 * join, leave, set_class, qos_reserve_set/delete, set_rules, apply_rules
 * and bill refuse (false, with err saying so), forked and thread_started do
 * nothing (the next pass finds the task), dispatch returns -1 (EDEADLK),
 * and destroy aborts.  Defer such work, e.g. to an idle callback of the
 * event loop.  The strings live until it returns.
 */
typedef void (*qos_event_fn)(void *data, const struct qos_event *event);

struct qos_manager_config {
	const char *cgroup_base; /* default /sys/fs/cgroup */
	/*
	 * Where under the cgroup2 mount the manager's root goes, relative to it
	 * (pure cgroup v2 only).  NULL: the top where the manager may write it
	 * (root); otherwise (unprivileged) its own cgroup, which must be
	 * delegated to it (systemd Delegate=yes).  It moves itself into a leaf
	 * of that group, "manager", so that the group may enable cpu for the
	 * manager's root.
	 */
	const char *cgroup_parent;
	const char *root_name; /* default qosway-<uid> */
	unsigned ncpus; /* 0: online CPUs */
	uint64_t rsvd_ppm; /* share of each CPU kept from guarantees; default 10% */
	uint64_t rttime_us; /* RLIMIT_RTTIME bound for real-time members; default 5s */
	uint64_t watchdog_timeout_us; /* canary silence that triggers demotion; default 5s */
	uint64_t watchdog_cooldown_us; /* no new real-time grants after that; default 30s */
	/*
	 * false (default): the manager runs its own canary thread at SCHED_OTHER.
	 * true: the embedder runs the canary and calls qos_manager_watchdog_feed()
	 * from it at least once per watchdog_timeout_us.
	 */
	bool watchdog_external_canary;
	/*
	 * Fork a helper that thaws everything if we die; default on.  One that
	 * dies itself is replaced at once (an error event says so); while none
	 * can be started, joins and changes that would give a real-time class
	 * or a pause are refused (QOS_REFUSAL_FORBIDDEN), and a start is tried
	 * again every second.
	 */
	bool guardian;
	/*
	 * An fd the guardian keeps open until it has thawed and exits (default
	 * -1: none). The embedder's lock on the root goes here, so a new
	 * instance cannot take the root while a dead one's guardian still works
	 * on it.
	 */
	int guardian_keep_fd;
	/*
	 * Real-time signal by which the kernel tells the manager that a member
	 * process has used a given CPU time (qos/kernel/cputimer.h); default
	 * SIGRTMAX - 1.  The manager blocks it in the thread that creates it and
	 * reads it through its fd, so that thread must be the one calling
	 * qos_manager_dispatch(), and children should get a clean signal mask
	 * before exec.  0: none; reserves the manager polices are polled.
	 */
	int cputimer_signal;
	bool fake_files; /* cgroup_base is a fake tree (tests) */
	qos_event_fn event;
	void *event_data;
	/*
	 * Asked before a reload (qos_manager_set_rules) gives a reserve that
	 * has members its new qosrc definition: false, with the reason in err,
	 * keeps the old one (an error event says why).  NULL: always allowed.
	 * The compositor refuses what it refuses a user (pausing itself or the
	 * login scope it runs under).
	 */
	bool (*may_redefine)(void *data, const char *reserve, const struct qos_params *params,
			char *err, size_t err_len);
	void *may_redefine_data;
};

void qos_manager_config_init(struct qos_manager_config *config);

/*
 * Detects the kernel layout, reconciles leftovers of a dead instance (thaws,
 * restores members, removes groups) and sets up our cgroup root.
 */
struct qos_manager *qos_manager_create(const struct qos_manager_config *config, char *err,
		size_t err_len);
/* Restores every member to its original cgroup and policy, removes our groups. */
void qos_manager_destroy(struct qos_manager *mgr);

/* One fd for the event loop (epoll: policing timer, member and guardian pidfds, watchdog). */
int qos_manager_get_fd(struct qos_manager *mgr);
/* Handles whatever is ready without blocking.  Returns events handled or -1. */
int qos_manager_dispatch(struct qos_manager *mgr);

/*
 * The canary's heartbeat, for watchdog_external_canary.  Unlike every other
 * call it may be made from any thread (it only writes to an eventfd).
 */
void qos_manager_watchdog_feed(struct qos_manager *mgr);

/*
 * Reserves (thesis set_reserve/delete_reserve).  create: make it if missing;
 * modify: change it if present.  Growing a granted qos reserve beyond free
 * capacity fails and keeps the old parameters.
 */
bool qos_reserve_set(struct qos_manager *mgr, const char *name, const struct qos_params *params,
		bool create, bool modify, char *err, size_t err_len);
/* Fails while the reserve has members. */
bool qos_reserve_delete(struct qos_manager *mgr, const char *name, char *err, size_t err_len);

/*
 * pid (tid == 0) or one thread joins a reserve, leaving its previous one.  The
 * first member of a qos reserve triggers admission control; on refusal false is
 * returned with the reason in err, and the task keeps running as before.  A
 * refusal the kernel makes once the task has moved (its own deadline or
 * real-time bandwidth bound) also returns false with the reason, and leaves
 * the task as other in its original cgroup, out of its previous reserve too.
 * If the reserve does not exist and the loaded rules define it, it is created.
 */
bool qos_manager_join(struct qos_manager *mgr, const char *name, pid_t pid, pid_t tid, char *err,
		size_t err_len);
/* Back to the original cgroup and policy.  False if it was not a member. */
bool qos_manager_leave(struct qos_manager *mgr, pid_t pid, pid_t tid);
/*
 * Tells the manager that process parent forked child (the kernel's
 * process-event connector reports it).  A member's child starts in the
 * reserve's cgroup; it is adopted (inherit=yes) or sent back to where its
 * parent came from right away instead of at the next housekeeping pass (up
 * to a second later, during which it was uncounted or shared the reserve's
 * limits).  Any other pair is ignored, so every fork may be passed on.
 */
void qos_manager_forked(struct qos_manager *mgr, pid_t parent, pid_t child);
/*
 * Tells the manager that process pid started thread tid.  In a member
 * process, the thread gets the reserve's policy right away (it starts as
 * SCHED_OTHER: reset on fork) instead of at the next pass; a qos reserve's
 * slice is split over its threads anew.  Same pacing as qos_manager_forked.
 */
void qos_manager_thread_started(struct qos_manager *mgr, pid_t pid, pid_t tid);
/* Puts pid in its automatic reserve "auto-<pid>" with these parameters. */
bool qos_manager_set_class(struct qos_manager *mgr, pid_t pid, const struct qos_params *params,
		char *err, size_t err_len);

/*
 * AutoQOS: the manager takes the rules over (NULL clears them) and destroys
 * the ones it held, so a pointer the caller keeps to them is good until the
 * next call (passing the rules it holds changes nothing).  A reserve made
 * from a definition in the old rules, with those parameters still, takes the
 * new rules' definition of it (an error event when that is refused).  apply
 * looks up exe/cmdline/app_id and joins pid accordingly.  Returns false with
 * err when refused, true (with *applied false) when no auto rule matched.
 */
bool qos_manager_set_rules(struct qos_manager *mgr, struct qos_rules *rules);
bool qos_manager_apply_rules(struct qos_manager *mgr, pid_t pid, const char *app_id, bool *applied,
		char *err, size_t err_len);

/*
 * Charges usec of CPU time spent on the reserve's behalf (e.g. compositor work
 * for a client).  It counts against slice and limit exactly like own time and
 * may trigger the fallback at once: an OVERRUN event from inside the call
 * when it uses the slice up, watched or not, and for a reserve the kernel
 * caps a freeze (fallback pause), since the kernel never sees the bill.
 * Billed time past the slice is owed in the next periods.  Returns false
 * when there is no such reserve or it has no members: no period runs then,
 * and the first member's join starts the books afresh.  A reserve without a
 * limit (a pause reserve among them) only reports the bill.  0 changes
 * nothing.
 *
 * Cost: one look at the reserve (a CPU-clock read and at most a CPU-timer
 * re-arm per member process, or a schedstat read per thread member), and
 * one more only when a period ended since the last; without a limit, none.
 * Timed on the 2-vCPU test VM: 1-2 us a call for a limited reserve with one
 * member process, 0.1 us without a limit (docs/qos-design.md, "Billing").
 */
bool qos_manager_bill(struct qos_manager *mgr, const char *name, uint64_t usec);
/*
 * Same, for the reserve pid is in as a whole process (the one
 * qos_manager_reserve_of(mgr, pid, 0) names).  A process only some threads of
 * which are members is billed nothing (false): the caller knows its work was
 * for the process, not for which thread, and charging the reserve of one
 * thread (an audio thread's fifo reserve, say) for work done for the others
 * would push that thread into its fallback.  Bill such a reserve by name
 * where the work is known to be its thread's.
 */
bool qos_manager_bill_pid(struct qos_manager *mgr, pid_t pid, uint64_t usec);

/*
 * The display server's own CPU weight.  Moves process pid (the compositor
 * running the manager) into a leaf ".server" of the manager's root with CPU
 * weight `weight` (cgroup v2 scale, 1 to 10000; v1 cpu.shares get
 * weight * 1024 / 100), which the root's weight against the rest of the
 * system includes.  Safe for a server that bills the time it spends for
 * each client back to that client (it then gains promptness, not CPU).
 * weight 0 puts pid back where it came from and removes the leaf, as
 * qos_manager_destroy() also does.  False, with the reason in err and
 * nothing changed, without a cpu controller in the manager's root or when
 * the kernel refuses; another pid than the one in the leaf is refused too.
 */
bool qos_manager_set_server_weight(struct qos_manager *mgr, pid_t pid, uint32_t weight, char *err,
		size_t err_len);
/*
 * Whether a thread in the server's leaf may take a real-time policy: not
 * where the cpu tree has real-time group scheduling (a v1 hierarchy with
 * cpu.rt_runtime_us), since the leaf has no real-time runtime of its own.
 */
bool qos_manager_server_leaf_rt(const struct qos_manager *mgr);
/*
 * The cgroup.procs file of the cpu-tree group the server came from, for
 * its children to write "0" into between fork and exec (open and write
 * are all it takes); NULL while the server is in no leaf.
 */
const char *qos_manager_server_origin(const struct qos_manager *mgr);
/*
 * Moves every process in the server's leaf but the server itself (what a
 * library of the server forked, such as an X server double-forked and so
 * no longer its child) to where the server came from.  Returns how many,
 * 0 while the server is in no leaf, or -1 when one could not be moved.
 */
int qos_manager_server_release_others(struct qos_manager *mgr);

/*
 * Per-period OVERRUN and RESTORED events for a reserve whose limit the
 * kernel holds by itself: qos with fallback pause (the deadline runtime),
 * other or idle with a ceiling the CFS quota takes (fallback pause, cpu
 * controller), fifo or rr with fallback pause where real-time groups exist,
 * and qos where the kernel does not show deadline state (held as hard).
 * Unwatched, such a reserve is accounted lazily, at the 1 s housekeeping
 * pass (its per-period figures are averages over it), and raises these
 * events only where a bill, or a query that happens to look at it, finds
 * a slice used up; watched, it is looked at as periods pass:
 *  - OVERRUN (used_us: own + billed in the period) once per period in which
 *    the slice is used up, and RESTORED (used_us: that period's use) when
 *    the next one starts.  No fallback is applied: the kernel holds the
 *    members (a freeze only for billed time).
 *  - The members' CPU timers (process members; thread members are polled)
 *    fire a tick before the slice ends, and the overrun comes when it is
 *    used.  Where the kernel's throttle at that very tick holds the notice
 *    back, or its window (a deadline reservation's starts where the member
 *    woke) straddles the period's end, the overrun is seen at the end of the
 *    period, and RESTORED follows at once (message "... used by the end of
 *    the period").
 * Reserves the manager polices itself (cut to idle, optimistic qos, fifo or
 * rr falling back to other, ceilings outside the kernel's range) raise
 * these events anyway, and ones without a limit never: for them the watch
 * changes nothing.  A watched reserve whose members run wakes the manager
 * up to three times a period (the timer a tick before the slice ends, the
 * look when it is used, the period's end), tens of microseconds of CPU each
 * (docs/qos-design.md, "Watched reserves the kernel caps"); one
 * whose members sleep costs nothing.  The watch stays with the reserve
 * (parameter changes, an automatic reserve's renaming) until it is
 * deleted; it is no count (one call with on false ends it).  False when
 * there is no such reserve, or from the event callback.
 */
bool qos_manager_watch_overruns(struct qos_manager *mgr, const char *name, bool on);

/*
 * Adaptation input from the application (Android ADPF style): the last
 * frame's work took actual_us against a target of target_us, which counts
 * as actual_us * period / target_us of one period.  An adaptive reserve
 * (params.adapt) sizes its slice from these reports while one came in its
 * last 8 periods, in preference to the measured use (which a fallback may
 * have cut short).  Adaptation itself runs in qos_manager_dispatch, never
 * here.  False when there is no such reserve, it does not adapt, or
 * target_us is 0.
 */
bool qos_manager_report_work(struct qos_manager *mgr, const char *name, uint64_t target_us,
		uint64_t actual_us);

/*
 * period=vblank reserves: a vblank of the output the reserve's window is on
 * happened at when_us (CLOCK_MONOTONIC, microseconds), refresh_us apart.
 * Sets the period to refresh_us when it differs (a change event, admission
 * as for qos_reserve_set) and aligns the reserve's period boundaries to the
 * vblank, so the slice is spent right after it.  False with err when there
 * is no such reserve, it is not period=vblank, refresh_us is outside
 * 1ms..10s, or the new period is refused.
 *
 * Meant for every vblank: with the period unchanged and the boundaries
 * near the vblank (qos/manager/adjust.h, QOS_VBLANK_MOVE_AFTER) it is a lookup
 * and a division, with no event and no kernel call.  The alignment is the manager's periods
 * (accounting, policing, overrun events); a deadline member's own CBS
 * period starts when it wakes, so a client woken by the frame callback
 * just after the vblank is in phase by itself.
 */
bool qos_manager_vblank(struct qos_manager *mgr, const char *name, uint64_t when_us,
		uint64_t refresh_us, char *err, size_t err_len);

struct qos_reserve_info {
	char name[QOS_NAME_MAX + 1];
	char group[QOS_NAME_MAX + 16]; /* cgroup directory under the root; "" before the first join */
	struct qos_params params;
	bool is_auto;
	pid_t owner; /* automatic reserves */
	bool granted; /* holds admitted qos capacity */
	bool in_fallback;
	size_t n_members;
	uint64_t used_us; /* own + billed in the current period, + what earlier ones left owed */
	uint64_t billed_us; /* billed part of used_us, billed in the current period */
	uint64_t last_used_us; /* the same for the previous period (the average per period
	                        * when several passed without a look: lazily accounted) */
	uint64_t last_billed_us; /* billed part of last_used_us (averaged alike) */
	uint64_t periods, overruns;
	bool released; /* idle: its admitted capacity given back (params.idle_periods);
	                * params are still its own, members run at the fallback */
	bool return_refused; /* released, its members ran, and admission refused the
	                      * capacity back: no guarantee until it fits again */
	uint64_t adapt_slice_us; /* the slice adaptation last asked for (granted or
	                          * not), else params.slice_us; 0: not adaptive */
};

struct qos_member_info {
	pid_t pid;
	pid_t tid; /* 0: the whole process */
};

struct qos_manager_info {
	const char *layout; /* "cgroup2" or "hybrid" */
	const char *v2_root;
	const char *cpu_root;
	bool rt_group;
	const char *rt_note;
	unsigned ncpus;
	uint64_t capacity_ppm, granted_ppm;
	bool watchdog_cooldown; /* real-time grants suspended after a starvation alarm */
	uint64_t watchdog_alarms;
};

void qos_manager_get_info(struct qos_manager *mgr, struct qos_manager_info *info);

enum qos_refusal {
	QOS_REFUSAL_ERROR, /* bad request or a failed call (no such task, ...) */
	QOS_REFUSAL_CAPACITY, /* admission control, or the kernel's own bandwidth bound */
	QOS_REFUSAL_FORBIDDEN, /* a safety policy (watchdog cool-down, no guardian running) */
};

/*
 * Why the last qos_reserve_set(), qos_manager_join(), qos_manager_set_class()
 * or qos_manager_apply_rules() that returned false was refused.
 */
enum qos_refusal qos_manager_last_refusal(const struct qos_manager *mgr);
size_t qos_manager_reserve_count(struct qos_manager *mgr);
/* index < reserve_count, in creation order. */
bool qos_manager_reserve_at(struct qos_manager *mgr, size_t index, struct qos_reserve_info *out);
bool qos_manager_reserve_info(struct qos_manager *mgr, const char *name,
		struct qos_reserve_info *out);
/* Fills up to max members; returns the total count, or -1 if no such reserve. */
ssize_t qos_manager_members(struct qos_manager *mgr, const char *name, struct qos_member_info *out,
		size_t max);
/* One thread of a reserve whose slice is divided among its threads by use. */
struct qos_thread_info {
	pid_t pid, tid;
	uint64_t runtime_ns; /* deadline runtime it holds; 0: it waits at the fallback class */
	uint64_t used_ns; /* CPU time it ran in the last period */
	bool parked; /* idle and asleep: outside the reservation until it runs */
	bool throttled; /* it ran out of its runtime in the last period */
	uint64_t ran_on; /* times it went on in the fallback class after running out */
};

/*
 * Fills up to max threads of the reserve's division (qos reserves with
 * several threads, once a period has been sampled); returns how many it
 * has (0: the slice is not divided), or -1 if no such reserve.
 */
ssize_t qos_manager_reserve_threads(struct qos_manager *mgr, const char *name,
		struct qos_thread_info *out, size_t max);

/*
 * The reserve pid (tid 0) or the thread is in, or NULL.  The name is the
 * manager's: good until the next call that changes reserves or members
 * (a leave can free it, an owner's exit rename it); copy it to keep it.
 */
const char *qos_manager_reserve_of(struct qos_manager *mgr, pid_t pid, pid_t tid);

#endif
