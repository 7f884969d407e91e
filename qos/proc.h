/*
 * qos/proc.h - what /proc says about a process: its parent, start time and
 * state, executable, command line, threads, owner and CPU time.  The QoS
 * library and the compositor read these facts through here, so each file
 * has one parser.  No Wayland dependency.
 *
 * Every function takes any pid: one that is not positive, does not exist
 * or cannot be read gives the "unknown" answer each documents (0, -1,
 * false, an empty string), never an error of its own.  The answers are
 * snapshots: a process may exit, and its pid be reused, at any time after.
 */
#ifndef QOS_PROC_H
#define QOS_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The fields of a stat file (/proc/PID/stat, /proc/PID/task/TID/stat) in use. */
struct qos_proc_stat {
	char state; /* R, S, D, Z, ... */
	pid_t ppid; /* 0 when not shown */
	uint64_t start_time; /* clock ticks since boot; 0 when not shown */
};

/*
 * Parses the text of a stat file.  The command name (field 2) may hold
 * spaces, parentheses and digits, so the fields are read after its last
 * ')'.  False when there is no state after it; a field the text does not
 * hold whole (cut short) reads as 0.
 */
bool qos_proc_parse_stat(const char *text, struct qos_proc_stat *out);

/* Reads and parses /proc/PID/stat, or /proc/PID/task/TID/stat when tid > 0. */
bool qos_proc_read_stat(pid_t pid, pid_t tid, struct qos_proc_stat *out);

/* The parent's pid; 0 when unknown (and for init, whose parent is none). */
pid_t qos_proc_parent(pid_t pid);

/*
 * When the process (or its thread tid, when tid > 0) started, in clock ticks
 * since boot: with the pid, it names one task over time.  0 when unknown.
 */
uint64_t qos_proc_start_time(pid_t pid, pid_t tid);

/* The task's scheduler state letter (R, S, D, Z, ...); 0 when unknown. */
char qos_proc_state(pid_t tid);

/*
 * The path of pid's executable, as /proc/PID/exe links to it (with
 * " (deleted)" after a replaced file).  False, and buf "" when len > 0,
 * when it cannot be read or does not fit in len bytes with its NUL.
 */
bool qos_proc_exe(pid_t pid, char *buf, size_t len);

/*
 * pid's arguments joined by single spaces, cut to len - 1 bytes.  False,
 * and buf "" when len > 0, when there are none (a kernel thread, a zombie)
 * or they cannot be read.
 */
bool qos_proc_cmdline(pid_t pid, char *buf, size_t len);

/* Whether tid is one of process pid's threads (its main thread included). */
bool qos_proc_has_thread(pid_t pid, pid_t tid);

/* The process a thread belongs to (its thread group id); 0 when unknown. */
pid_t qos_proc_tgid(pid_t tid);

/* The real uid of pid; (uid_t)-1 when unknown. */
uid_t qos_proc_uid(pid_t pid);

/*
 * CPU time pid's live threads have run, in nanoseconds (schedstat: exact,
 * unlike the tick-sampled utime; threads that exited do not count).  False
 * when the process is gone.
 */
bool qos_proc_cpu_ns(pid_t pid, uint64_t *out);

#endif
