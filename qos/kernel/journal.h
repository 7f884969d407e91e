/*
 * qos/kernel/journal.h - where members came from, written where a crash cannot
 * lose it.
 *
 * A manager that dies leaves its members in its groups.  The next instance
 * (qos/manager/reconcile.c) must send them back to the cgroups they came from with
 * the nice level and RLIMIT_RTTIME they had, but that knowledge lived in the
 * dead process.  So before a task is moved into a group, its origin is
 * written as an extended attribute on the group's directory in the v2 tree
 * (cgroupfs keeps "user." attributes, as every file system we run on does):
 * one attribute per member, named after its pid (and tid for a thread
 * member).  The record dies with the group, so nothing outlives what it
 * describes, and it costs one syscall per join and one per leave.
 *
 * The value is text, one "key=value" per line, versioned:
 *
 *   qosway-journal 1
 *   start=<clock ticks since boot, /proc/PID/stat field 22>
 *   nice=<-20..19>
 *   sched=<policy> <priority> <reset-on-fork 0|1>   (optional: SCHED_OTHER 0 0)
 *   thread=<tid> <policy> <priority> <nice> <reset-on-fork>   (optional, repeated)
 *   rttime=<soft> <hard>      (µs, or "inf")
 *   v2=<cgroup2 path relative to the v2 mount>
 *   cpu=<v1 cpu path relative to its mount; the v2 path on pure cgroup v2>
 *
 * Records are read back only by reconciliation, which checks the start time
 * against the live task before trusting one (a pid may have been reused).
 */
#ifndef QOS_JOURNAL_H
#define QOS_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "qos/kernel/cgroup.h"

/*
 * A process member's threads as they were at the join, those whose class
 * differs from what an unlisted thread gets back (the first
 * QOS_JOURNAL_THREADS of them): after a crash each gets its own class and
 * nice back.  A thread not listed (like its main thread, started later,
 * or past the cap) gets the main thread's class without real time.
 */
#define QOS_JOURNAL_THREADS 64

struct qos_journal_thread {
	pid_t tid;
	int policy;
	int priority;
	int nice;
	bool reset_on_fork;
};

struct qos_journal_entry {
	uint64_t start_time;
	int nice;
	int policy; /* the kernel's SCHED_OTHER, _BATCH, _IDLE, _FIFO or _RR */
	int priority; /* fifo/rr */
	bool reset_on_fork;
	size_t n_threads;
	struct qos_journal_thread threads[QOS_JOURNAL_THREADS];
	uint64_t rt_soft, rt_hard; /* RLIM_INFINITY when unbounded */
	char v2[QOS_CG_REL_PATH];
	char cpu[QOS_CG_REL_PATH];
};

/*
 * Records the origin of a member (tid 0: a whole process) on its group.
 * Returns 0 or a negative errno (ENOTSUP where the tree has no user
 * attributes, ENOSPC past the kernel's 128 per cgroup).
 */
int qos_journal_record(const struct qos_cgroup *cg, const char *group, pid_t pid, pid_t tid,
		const struct qos_journal_entry *e);

/* Drops a member's record; a missing record or group is not an error. */
void qos_journal_forget(const struct qos_cgroup *cg, const char *group, pid_t pid, pid_t tid);

/*
 * Reads the record of (pid, tid).  Returns 1 when found and well formed, 0
 * when there is none, -EINVAL when it cannot be parsed.
 */
int qos_journal_lookup(const struct qos_cgroup *cg, const char *group, pid_t pid, pid_t tid,
		struct qos_journal_entry *out);

/*
 * Some well-formed record of the group, whatever member it is for: where a
 * task that joined by being born in the group (an inheriting child) came
 * from.  False when the group has none.
 */
bool qos_journal_any(const struct qos_cgroup *cg, const char *group, struct qos_journal_entry *out);

/*
 * Calls fn for each well-formed record of a thread member (tid != 0) on the
 * group: on cgroup v2 such a thread stays in its process's group, so the
 * record is all that leads to it.
 */
void qos_journal_for_each_thread(const struct qos_cgroup *cg, const char *group,
		void (*fn)(pid_t pid, pid_t tid, const struct qos_journal_entry *e, void *data),
		void *data);

/* The text form (exposed for unit tests).  format returns the length, 0 if it does not fit. */
size_t qos_journal_format(const struct qos_journal_entry *e, char *buf, size_t len);
bool qos_journal_parse(const char *buf, size_t len, struct qos_journal_entry *out);

/*
 * The starvation watchdog's cool-down, kept as an attribute of our v2 root
 * ("user.qosway.cooldown": the CLOCK_MONOTONIC microsecond it ends), so that
 * a manager restarted after a crash refuses real-time grants for the rest
 * of it too: the program that starved the machine may ask again at once.
 * It goes with the root at a clean stop.  Returns 0 or -errno.
 */
int qos_journal_save_cooldown(const struct qos_cgroup *cg, uint64_t until_us);
/* The cool-down end a predecessor saved; false if none or unreadable. */
bool qos_journal_load_cooldown(const struct qos_cgroup *cg, uint64_t *until_us);

#endif
