/*
 * qos/kernel/sys.h - thin wrappers over /proc, pidfds and the scheduler syscalls.
 * Internal to the library (the manager API is in qos/qos.h), but kept in one
 * header so the tests and the helper tool can reuse the process probes.
 * What they parse out of /proc/PID/stat, status and task/ is parsed by
 * qos/kernel/proc.c, the one reader the compositor uses too.
 */
#ifndef QOS_SYS_H
#define QOS_SYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "qos/params.h"

/* Start time (clock ticks since boot, /proc/PID/stat field 22); 0 when gone. */
uint64_t qos_sys_start_time(pid_t pid, pid_t tid);

/* pidfd for a process, or for a single thread when thread is true. */
int qos_sys_pidfd_open(pid_t pid, bool thread);

/* Whether this process has CAP_SYS_NICE in its effective set. */
bool qos_sys_has_sys_nice(void);

/* Cumulative CPU time of one thread from schedstat, in microseconds. */
bool qos_sys_thread_cpu_us(pid_t pid, pid_t tid, uint64_t *out);

/* Cumulative CPU time of one thread (schedstat), in nanoseconds. */
bool qos_sys_thread_cpu_ns(pid_t tid, uint64_t *out);

/*
 * How long the calling thread has waited, runnable, for a CPU (schedstat's
 * second field), in microseconds.
 */
bool qos_sys_self_run_delay_us(uint64_t *out);

/*
 * How often a thread has gone to sleep (voluntary context switches, from
 * /proc/TID/status).  Being throttled or preempted does not count.
 */
bool qos_sys_thread_sleeps(pid_t tid, uint64_t *out);

/*
 * A thread's /proc files, opened once and read again from the start (the
 * kernel prints them anew): a thread the manager looks at hundreds of times
 * a second saves a path walk and a close per read.  A file opens only while
 * the thread is pid's (under /proc/PID/task/TID) and is opened again when
 * its thread has exited.  *budget is how many more descriptors may be kept
 * (shared by all the files of a manager, which lives in a process with a
 * descriptor limit); past it, each read opens and closes.
 */
enum qos_thread_file {
	QOS_THREAD_STAT,
	QOS_THREAD_SCHED,
	QOS_THREAD_SCHEDSTAT
};
#define QOS_THREAD_FILES 3

struct qos_thread_files {
	pid_t pid, tid;
	int fd[QOS_THREAD_FILES]; /* -1: not kept */
	unsigned int *budget;
};

void qos_thread_files_init(struct qos_thread_files *f, pid_t pid, pid_t tid, unsigned int *budget);
/* Closes a kept descriptor, if *fd is one, and gives its place back to *budget. */
void qos_sys_drop_kept_fd(int *fd, unsigned int *budget);
/* Closes what is kept; NULL is fine.  The struct may be initialized again. */
void qos_thread_files_finish(struct qos_thread_files *f);
/* As qos_sys_thread_state, qos_sys_thread_dl_state, qos_sys_thread_cpu_ns. */
char qos_thread_files_state(struct qos_thread_files *f);
bool qos_thread_files_dl_state(struct qos_thread_files *f, int64_t *runtime_ns,
		int64_t *deadline_ns, uint64_t *cpu_ns);
bool qos_thread_files_cpu_ns(struct qos_thread_files *f, uint64_t *out);

/*
 * dl.runtime (may be negative: an overrun) and dl.deadline (sched clock) of a
 * SCHED_DEADLINE thread, from /proc/TID/sched, and when cpu_ns is not NULL
 * its CPU time from the same snapshot (the counter schedstat shows).  False
 * when the thread is not SCHED_DEADLINE or the kernel does not show them.
 */
bool qos_sys_thread_dl_state(pid_t tid, int64_t *runtime_ns, int64_t *deadline_ns,
		uint64_t *cpu_ns);

/*
 * Cumulative CPU time of a whole process from its CPU clock: exact to the
 * moment (the kernel settles a running thread's time first), unlike
 * schedstat and cpu.stat, which lag by up to a tick.
 */
bool qos_sys_process_clock_us(pid_t pid, uint64_t *out);

/*
 * The scheduler clock (in which SCHED_DEADLINE deadlines are kept) minus
 * CLOCK_MONOTONIC, measured by a short-lived child entering SCHED_DEADLINE.
 * False where it cannot (no privilege, no dl.* fields).  The two clocks
 * differ by some hundred microseconds to milliseconds, enough to mistake a
 * throttled thread about to be replenished for a stuck one.
 */
bool qos_sys_sched_clock_offset(int64_t *offset_ns);

/* Calls fn (when not NULL) for every thread of pid; returns the number of
 * threads or -1. */
int qos_sys_for_each_thread(pid_t pid, void (*fn)(pid_t tid, void *data), void *data);
/* /proc/PID/task, to be kept: it lists that process's threads until it
 * exits, and then fails, whoever has the pid since.  -1 when gone. */
int qos_sys_open_task_dir(pid_t pid);
/* As qos_sys_for_each_thread, from the start of a kept task directory. */
int qos_sys_for_each_thread_in(int dir_fd, void (*fn)(pid_t tid, void *data), void *data);

/*
 * Puts one thread under a per-thread policy.  fifo/rr/qos always carry
 * SCHED_RESET_ON_FORK; other/idle keep it when the kernel refuses to clear
 * it (without CAP_SYS_NICE).  qos is SCHED_DEADLINE with the given runtime and
 * period.  Returns 0 or a negative errno.
 */
int qos_sys_set_thread_policy(pid_t tid, enum qos_policy policy, int nice, int priority,
		uint64_t dl_runtime_ns, uint64_t dl_period_ns);

/*
 * A thread's class as it was before the manager took it: what a member gets
 * back when it leaves.  policy is the kernel's (SCHED_OTHER, SCHED_BATCH,
 * SCHED_IDLE, SCHED_FIFO, SCHED_RR); nice counts for the first three,
 * priority for the last two.
 */
struct qos_sched {
	int policy;
	int priority;
	int nice;
	bool reset_on_fork;
};

/*
 * Reads tid's class.  A deadline thread reads as SCHED_OTHER (a reservation
 * is not the manager's to give back).  False when the thread is gone.
 */
bool qos_sys_get_sched(pid_t tid, struct qos_sched *out);
/* Gives tid that class; 0 or a negative errno. */
int qos_sys_set_sched(pid_t tid, const struct qos_sched *s);
/* Whether it is SCHED_FIFO or SCHED_RR. */
bool qos_sys_sched_is_rt(const struct qos_sched *s);

/*
 * Call before a thread leaves the manager's hands (see sys.c).  False when
 * the thread is gone or dead: then leave its policy alone.
 */
bool qos_sys_release_deadline(pid_t tid);

/*
 * The same for a thread the manager made SCHED_DEADLINE (so reset-on-fork
 * is its only flag) whose state (qos_sys_thread_state) the caller has just
 * read: saves reading both again.
 */
bool qos_sys_release_deadline_in(pid_t tid, char state);

/*
 * Whether thread tid is one of process pid's threads now.  For a tid kept
 * over time: were it reused, it would be another process's thread.  The
 * main thread (tid == pid) is the caller's to check through its pidfd.
 */
bool qos_sys_thread_in_process(pid_t pid, pid_t tid);

/* Scheduler state letter of a thread (R, S, D, Z, ...), or 0 when it is gone. */
char qos_sys_thread_state(pid_t tid);

/* Whether the thread is SCHED_DEADLINE now. */
bool qos_sys_thread_is_deadline(pid_t tid);

/*
 * The same, and when it is, *same says whether its reservation is exactly
 * what qos_sys_set_thread_policy would give it for this runtime and period:
 * then setting it again would change nothing.
 */
bool qos_sys_thread_is_deadline_as(pid_t tid, uint64_t runtime_ns, uint64_t period_ns, bool *same);

/* Reads the kernel policy of a thread (SCHED_* value) or -1. */
int qos_sys_get_thread_policy(pid_t tid, bool *reset_on_fork);

/* Lowers RLIMIT_RTTIME of pid to at most usec; the old soft/hard are returned. */
int qos_sys_bound_rttime(pid_t pid, uint64_t usec, uint64_t *old_soft, uint64_t *old_hard);
int qos_sys_restore_rttime(pid_t pid, uint64_t soft, uint64_t hard);
/* The current RLIMIT_RTTIME of pid; 0 or a negative errno. */
int qos_sys_get_rttime(pid_t pid, uint64_t *soft, uint64_t *hard);
/*
 * Whether pid's hard RLIMIT_RTTIME is now under hard, the one it had: a
 * bound we set that stays (raising it takes CAP_SYS_RESOURCE).  Real time
 * given back under it gets a thread killed that ran that long without
 * sleeping, as it never was before.
 */
bool qos_sys_rttime_tighter(pid_t pid, uint64_t hard);

/*
 * The nearest ancestor of pid (parent first, at most 16 generations, never
 * init) for which match returns true, or 0 when there is none.
 */
pid_t qos_sys_find_ancestor(pid_t pid, bool (*match)(pid_t ancestor, void *data), void *data);
/* The process a thread belongs to (its thread group id), or 0 when it is gone. */
pid_t qos_sys_tgid(pid_t tid);

/* Reads a whole small file into buf (NUL-terminated); returns length or -1. */
ssize_t qos_sys_read_file(const char *path, char *buf, size_t len);
/* Writes a string to a file (no O_CREAT); returns 0 or a negative errno. */
int qos_sys_write_file(const char *path, const char *value);

uint64_t qos_sys_now_us(void);
int64_t qos_sys_now_ns(void);
/*
 * The scheduler tick in microseconds (the coarse clock's resolution), 4000
 * at HZ=250: CPU-time timers and deadline throttling happen at ticks.
 */
uint64_t qos_sys_tick_us(void);

#endif
