#include "qos/kernel/sys.h"

#include <errno.h>
#include <linux/capability.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "qos/proc.h"

#ifndef SCHED_DEADLINE
#define SCHED_DEADLINE 6
#endif
#ifndef SCHED_RESET_ON_FORK
#define SCHED_RESET_ON_FORK 0x40000000
#endif
#define QOS_SCHED_FLAG_RESET_ON_FORK 0x01
#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif

/* Our own copy: glibc 2.36 does not declare struct sched_attr. */
struct qos_sched_attr {
	uint32_t size;
	uint32_t sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime;
	uint64_t sched_deadline;
	uint64_t sched_period;
};

uint64_t qos_sys_now_us(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t qos_sys_tick_us(void) {
	struct timespec ts;
	if (clock_getres(CLOCK_MONOTONIC_COARSE, &ts) < 0 || ts.tv_sec > 0) {
		return 10000; /* HZ=100, the coarsest a kernel has */
	}
	uint64_t us = (uint64_t)ts.tv_nsec / 1000u;
	return us ? us : 1;
}

int64_t qos_sys_now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * A kept /proc file from its start: -1 only when the first read fails.  A
 * seq_file read fills the buffer as far as the file goes, so a short read
 * is the end and the read that would only say so is saved.
 */
static ssize_t read_from_start(int fd, char *buf, size_t len) {
	size_t off = 0;
	while (off + 1 < len) {
		size_t want = len - 1 - off;
		ssize_t n = pread(fd, buf + off, want, (off_t)off);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n < 0 && off == 0) {
			return -1;
		}
		if (n <= 0) {
			break;
		}
		off += (size_t)n;
		if ((size_t)n < want) {
			break;
		}
	}
	buf[off] = '\0';
	return (ssize_t)off;
}

ssize_t qos_sys_read_file(const char *path, char *buf, size_t len) {
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		return -1;
	}
	size_t off = 0;
	while (off + 1 < len) {
		ssize_t n = read(fd, buf + off, len - 1 - off);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n <= 0) {
			break;
		}
		off += (size_t)n;
	}
	close(fd);
	buf[off] = '\0';
	return (ssize_t)off;
}

int qos_sys_write_file(const char *path, const char *value) {
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		return -errno;
	}
	size_t len = strlen(value);
	ssize_t n = write(fd, value, len);
	int err = n < 0 ? -errno : ((size_t)n == len ? 0 : -EIO);
	close(fd);
	return err;
}

uint64_t qos_sys_start_time(pid_t pid, pid_t tid) {
	return qos_proc_start_time(pid, tid);
}

int qos_sys_pidfd_open(pid_t pid, bool thread) {
	return (int)syscall(SYS_pidfd_open, pid, thread ? PIDFD_THREAD : 0);
}

bool qos_sys_has_sys_nice(void) {
	struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	if (syscall(SYS_capget, &header, data) != 0) {
		return false;
	}
	return data[CAP_TO_INDEX(CAP_SYS_NICE)].effective & CAP_TO_MASK(CAP_SYS_NICE);
}

/* First field of a schedstat file: CPU time in nanoseconds. */
static bool read_schedstat_ns(const char *path, uint64_t *out) {
	char buf[128];
	if (qos_sys_read_file(path, buf, sizeof(buf)) <= 0) {
		return false;
	}
	*out = strtoull(buf, NULL, 10);
	return true;
}

bool qos_sys_thread_cpu_us(pid_t pid, pid_t tid, uint64_t *out) {
	char path[64];
	uint64_t ns;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", pid, tid);
	if (!read_schedstat_ns(path, &ns)) {
		return false;
	}
	*out = ns / 1000u;
	return true;
}

bool qos_sys_thread_cpu_ns(pid_t tid, uint64_t *out) {
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/schedstat", tid);
	return read_schedstat_ns(path, out);
}

bool qos_sys_self_run_delay_us(uint64_t *out) {
	char buf[128];
	if (qos_sys_read_file("/proc/thread-self/schedstat", buf, sizeof(buf)) <= 0) {
		return false;
	}
	char *end;
	strtoull(buf, &end, 10);
	if (*end != ' ') {
		return false;
	}
	*out = strtoull(end + 1, NULL, 10) / 1000u;
	return true;
}

bool qos_sys_thread_sleeps(pid_t tid, uint64_t *out) {
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	if (qos_sys_read_file(path, buf, sizeof(buf)) <= 0) {
		return false;
	}
	/* "nonvoluntary_ctxt_switches:" follows; match at a line start only. */
	const char *p = strstr(buf, "\nvoluntary_ctxt_switches:");
	if (!p) {
		return false;
	}
	char *end;
	unsigned long long v = strtoull(p + strlen("\nvoluntary_ctxt_switches:"), &end, 10);
	if (end == p + strlen("\nvoluntary_ctxt_switches:")) {
		return false;
	}
	*out = v;
	return true;
}

static bool sched_field(const char *buf, const char *key, int64_t *out) {
	const char *p = strstr(buf, key);
	if (!p) {
		return false;
	}
	p = strchr(p, ':');
	if (!p) {
		return false;
	}
	char *end;
	*out = strtoll(p + 1, &end, 10);
	return end != p + 1;
}

/* "se.sum_exec_runtime : MS.NNNNNN" (milliseconds, nanosecond decimals). */
static bool sched_ns_field(const char *buf, const char *key, uint64_t *out) {
	const char *p = strstr(buf, key);
	if (!p || !(p = strchr(p, ':'))) {
		return false;
	}
	char *end;
	unsigned long long ms = strtoull(p + 1, &end, 10);
	if (end == p + 1 || *end != '.') {
		return false;
	}
	const char *frac = end + 1;
	unsigned long long ns = strtoull(frac, &end, 10);
	if (end - frac != 6) {
		return false;
	}
	*out = ms * 1000000u + ns;
	return true;
}

static bool parse_dl_state(const char *buf, int64_t *runtime_ns, int64_t *deadline_ns,
		uint64_t *cpu_ns) {
	if (cpu_ns && !sched_ns_field(buf, "\nse.sum_exec_runtime ", cpu_ns)) {
		return false;
	}
	return sched_field(buf, "\ndl.runtime ", runtime_ns) &&
			sched_field(buf, "\ndl.deadline ", deadline_ns);
}

bool qos_sys_thread_dl_state(pid_t tid, int64_t *runtime_ns, int64_t *deadline_ns,
		uint64_t *cpu_ns) {
	char path[64], buf[8192];
	snprintf(path, sizeof(path), "/proc/%d/sched", tid);
	if (qos_sys_read_file(path, buf, sizeof(buf)) <= 0) {
		return false;
	}
	return parse_dl_state(buf, runtime_ns, deadline_ns, cpu_ns);
}

void qos_thread_files_init(struct qos_thread_files *f, pid_t pid, pid_t tid, unsigned int *budget) {
	*f = (struct qos_thread_files){ .pid = pid, .tid = tid, .budget = budget };
	for (size_t i = 0; i < QOS_THREAD_FILES; i++) {
		f->fd[i] = -1;
	}
}

void qos_sys_drop_kept_fd(int *fd, unsigned int *budget) {
	if (*fd < 0) {
		return;
	}
	close(*fd);
	*fd = -1;
	(*budget)++;
}

static void close_thread_file(struct qos_thread_files *f, enum qos_thread_file which) {
	qos_sys_drop_kept_fd(&f->fd[which], f->budget);
}

void qos_thread_files_finish(struct qos_thread_files *f) {
	if (!f) {
		return;
	}
	for (size_t i = 0; i < QOS_THREAD_FILES; i++) {
		close_thread_file(f, (enum qos_thread_file)i);
	}
}

static const char *const thread_file_names[QOS_THREAD_FILES] = {
	[QOS_THREAD_STAT] = "stat",
	[QOS_THREAD_SCHED] = "sched",
	[QOS_THREAD_SCHEDSTAT] = "schedstat",
};

/*
 * Reads one of the thread's files through its kept descriptor, opening it
 * (under /proc/PID/task/TID: only while the thread is pid's) when there is
 * none or the kept one fails: its thread has exited, and the tid may be
 * another thread's now, as it would be for a path.  Past the budget the
 * file is opened for this read only.
 */
static ssize_t read_thread_file(struct qos_thread_files *f, enum qos_thread_file which, char *buf,
		size_t len) {
	if (f->fd[which] >= 0) {
		ssize_t n = read_from_start(f->fd[which], buf, len);
		if (n > 0) {
			return n;
		}
		close_thread_file(f, which);
	}
	char path[96];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/%s", f->pid, f->tid, thread_file_names[which]);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		return -1;
	}
	ssize_t n = read_from_start(fd, buf, len);
	if (*f->budget > 0 && n > 0) {
		(*f->budget)--;
		f->fd[which] = fd;
	} else {
		close(fd);
	}
	return n > 0 ? n : -1;
}

char qos_thread_files_state(struct qos_thread_files *f) {
	char buf[512];
	struct qos_proc_stat st;
	return read_thread_file(f, QOS_THREAD_STAT, buf, sizeof(buf)) > 0 &&
					qos_proc_parse_stat(buf, &st)
			? st.state
			: 0;
}

bool qos_thread_files_dl_state(struct qos_thread_files *f, int64_t *runtime_ns,
		int64_t *deadline_ns, uint64_t *cpu_ns) {
	char buf[8192];
	return read_thread_file(f, QOS_THREAD_SCHED, buf, sizeof(buf)) > 0 &&
			parse_dl_state(buf, runtime_ns, deadline_ns, cpu_ns);
}

bool qos_thread_files_cpu_ns(struct qos_thread_files *f, uint64_t *out) {
	char buf[128];
	if (read_thread_file(f, QOS_THREAD_SCHEDSTAT, buf, sizeof(buf)) < 0) {
		return false;
	}
	*out = strtoull(buf, NULL, 10);
	return true;
}

bool qos_sys_sched_clock_offset(int64_t *offset_ns) {
	/*
	 * A running thread that enters SCHED_DEADLINE gets deadline = scheduler
	 * clock at the switch + its relative deadline.  A child does it, so
	 * no thread of ours changes class.  It stays in the class only for
	 * one read of its sched file (opened before) and leaves before
	 * anything slow: its reservation is small, and a child that parsed,
	 * wrote and exited in it (the exit tears down a copy of the whole
	 * compositor) was throttled to 200 us a second, which kept an ASan
	 * build's start waiting 21 s.  Leaving while running returns the
	 * bandwidth at the 0-lag time, at once for a reservation hardly used.
	 */
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0) {
		return false;
	}
	pid_t pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return false;
	}
	if (pid == 0) {
		close(fds[0]);
		struct qos_sched_attr a = {
			.size = sizeof(a),
			.sched_policy = SCHED_DEADLINE,
			.sched_runtime = 2000000,
			.sched_deadline = 1000000000ull,
			.sched_period = 1000000000ull,
		};
		struct qos_sched_attr other = { .size = sizeof(other), .sched_policy = SCHED_OTHER };
		char buf[8192];
		int fd = open("/proc/thread-self/sched", O_RDONLY | O_CLOEXEC);
		int64_t t0 = qos_sys_now_ns();
		if (fd < 0 || syscall(SYS_sched_setattr, 0, &a, 0) != 0) {
			_exit(1);
		}
		int64_t t1 = qos_sys_now_ns();
		ssize_t len = read(fd, buf, sizeof(buf) - 1);
		syscall(SYS_sched_setattr, 0, &other, 0);
		int64_t runtime, deadline;
		if (len <= 0) {
			_exit(1);
		}
		buf[len] = '\0';
		/* Throttled before the read, it would show the next period's deadline. */
		if (!parse_dl_state(buf, &runtime, &deadline, NULL) || runtime <= 0) {
			_exit(1);
		}
		int64_t offset = deadline - (int64_t)a.sched_deadline - (t0 + (t1 - t0) / 2);
		ssize_t n = write(fds[1], &offset, sizeof(offset));
		_exit(n == (ssize_t)sizeof(offset) ? 0 : 1);
	}
	close(fds[1]);
	int64_t v;
	ssize_t n;
	while ((n = read(fds[0], &v, sizeof(v))) < 0 && errno == EINTR) {
		;
	}
	close(fds[0]);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
		;
	}
	if (n != (ssize_t)sizeof(v)) {
		return false;
	}
	*offset_ns = v;
	return true;
}

/* The layout getdents64 fills in (glibc declares it only with _GNU_SOURCE). */
struct qos_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* More room than any /proc/PID/task entry takes: a call that leaves this
 * much of the buffer unused has reached the end of the directory. */
#define DIRENT_ROOM 512

int qos_sys_open_task_dir(pid_t pid) {
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

int qos_sys_for_each_thread(pid_t pid, void (*fn)(pid_t tid, void *data), void *data) {
	/*
	 * Three system calls, not the five of opendir/readdir (an fstat, and a
	 * last getdents that only finds the end): the manager lists threads at
	 * every overrun of an optimistic reserve and at every housekeeping pass.
	 */
	int fd = qos_sys_open_task_dir(pid);
	if (fd < 0) {
		return -1;
	}
	int n = qos_sys_for_each_thread_in(fd, fn, data);
	close(fd);
	return n;
}

int qos_sys_for_each_thread_in(int dir_fd, void (*fn)(pid_t tid, void *data), void *data) {
	if (lseek(dir_fd, 0, SEEK_SET) != 0) {
		return -1;
	}
	_Alignas(struct qos_dirent64) char buf[8192];
	int n = 0;
	for (bool first = true;; first = false) {
		long got = syscall(SYS_getdents64, dir_fd, buf, sizeof(buf));
		if (got < 0 && first) {
			return -1; /* the process has exited */
		}
		if (got <= 0) {
			break;
		}
		for (long off = 0; off < got;) {
			const struct qos_dirent64 *e = (const void *)(buf + off);
			off += e->d_reclen;
			if (e->d_name[0] < '0' || e->d_name[0] > '9') {
				continue;
			}
			if (fn) {
				fn((pid_t)atoi(e->d_name), data);
			}
			n++;
		}
		if ((size_t)got + DIRENT_ROOM <= sizeof(buf)) {
			break;
		}
	}
	return n;
}

bool qos_sys_process_clock_us(pid_t pid, uint64_t *out) {
	/* CPUCLOCK_SCHED of the process (the encoding clock_getcpuclockid uses). */
	clockid_t id = (clockid_t)(((unsigned)~pid << 3) | 2);
	struct timespec ts;
	if (clock_gettime(id, &ts) != 0) {
		return false;
	}
	*out = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
	return true;
}

/*
 * The shrink qos_sys_release_deadline explains: a reservation whose
 * bandwidth, runtime << 20 / period in the kernel's fixed point, rounds to
 * zero (1024 ns is the least runtime, 4.19 s the longest default period).
 */
#define RELEASE_RUNTIME_NS 1024ull
#define RELEASE_PERIOD_NS 2000000000ull

/*
 * Linux (6.1 and 6.18 here) admits SCHED_DEADLINE for a thread that has
 * already died, a zombie waiting to be reaped (a process's main thread
 * stays one while its other threads run), and never gives that bandwidth
 * back: the exit path that would has run (tests/kernel/test_deadline_books.py).
 * A deadline-to-deadline change is accounted at once even there, so a
 * thread found dead once it holds a reservation is shrunk to one of no
 * bandwidth.  A thread that dies after the check leaves the class on its way
 * out, as any other.
 */
static int given_to_the_living(pid_t tid, struct qos_sched_attr *a) {
	char state = qos_proc_state(tid);
	if (state != 'Z' && state != 'X' && state != 'x') {
		return 0;
	}
	a->sched_runtime = RELEASE_RUNTIME_NS;
	a->sched_deadline = a->sched_period = RELEASE_PERIOD_NS;
	syscall(SYS_sched_setattr, tid, a, 0);
	return -ESRCH;
}

int qos_sys_set_thread_policy(pid_t tid, enum qos_policy policy, int nice, int priority,
		uint64_t dl_runtime_ns, uint64_t dl_period_ns) {
	struct qos_sched_attr a = { .size = sizeof(a) };
	switch (policy) {
	case QOS_POLICY_OTHER:
	case QOS_POLICY_PAUSE: /* frozen via the cgroup; the thread keeps time-sharing */
		a.sched_policy = SCHED_OTHER;
		a.sched_nice = nice;
		break;
	case QOS_POLICY_IDLE:
		a.sched_policy = SCHED_IDLE;
		a.sched_nice = nice;
		break;
	case QOS_POLICY_FIFO:
	case QOS_POLICY_RR:
		a.sched_policy = policy == QOS_POLICY_FIFO ? SCHED_FIFO : SCHED_RR;
		a.sched_priority = (uint32_t)priority;
		a.sched_flags = QOS_SCHED_FLAG_RESET_ON_FORK;
		break;
	case QOS_POLICY_QOS:
		a.sched_policy = SCHED_DEADLINE;
		a.sched_flags = QOS_SCHED_FLAG_RESET_ON_FORK;
		a.sched_runtime = dl_runtime_ns;
		a.sched_deadline = dl_period_ns;
		a.sched_period = dl_period_ns;
		break;
	}
	if (syscall(SYS_sched_setattr, tid, &a, 0) == 0) {
		return policy == QOS_POLICY_QOS ? given_to_the_living(tid, &a) : 0;
	}
	int e = errno;
	/*
	 * Real-time classes are given with reset-on-fork, and the kernel lets
	 * only CAP_SYS_NICE clear that flag: a manager that gave fifo within
	 * the target's RLIMIT_RTPRIO could otherwise never take it back.  The
	 * flag then stays on the time-sharing thread (its future children
	 * start at the default class, which is what they get anyway).
	 */
	if (e == EPERM && !(a.sched_flags & QOS_SCHED_FLAG_RESET_ON_FORK) &&
			(a.sched_policy == SCHED_OTHER || a.sched_policy == SCHED_IDLE)) {
		a.sched_flags |= QOS_SCHED_FLAG_RESET_ON_FORK;
		if (syscall(SYS_sched_setattr, tid, &a, 0) == 0) {
			return 0;
		}
	}
	return -e;
}

bool qos_sys_get_sched(pid_t tid, struct qos_sched *out) {
	struct qos_sched_attr a = { 0 };
	if (syscall(SYS_sched_getattr, tid, &a, sizeof(a), 0) != 0) {
		return false;
	}
	*out = (struct qos_sched){ .policy = (int)a.sched_policy,
		.reset_on_fork = a.sched_flags & QOS_SCHED_FLAG_RESET_ON_FORK };
	switch (out->policy) {
	case SCHED_FIFO:
	case SCHED_RR:
		/* sched_getattr gives no nice for them; it still counts once they
		 * time-share (released, or past a limit). */
		out->priority = (int)a.sched_priority;
		errno = 0;
		out->nice = getpriority(PRIO_PROCESS, (id_t)tid);
		if (errno) {
			out->nice = 0;
		}
		break;
	case SCHED_OTHER:
	case SCHED_BATCH:
	case SCHED_IDLE:
		out->nice = a.sched_nice;
		break;
	default:
		out->policy = SCHED_OTHER;
		out->reset_on_fork = false;
		break;
	}
	return true;
}

bool qos_sys_sched_is_rt(const struct qos_sched *s) {
	return s->policy == SCHED_FIFO || s->policy == SCHED_RR;
}

int qos_sys_set_sched(pid_t tid, const struct qos_sched *s) {
	struct qos_sched_attr a = { .size = sizeof(a),
		.sched_policy = (uint32_t)s->policy,
		.sched_flags = s->reset_on_fork ? QOS_SCHED_FLAG_RESET_ON_FORK : 0 };
	if (s->policy == SCHED_FIFO || s->policy == SCHED_RR) {
		a.sched_priority = (uint32_t)s->priority;
	} else {
		a.sched_nice = s->nice;
	}
	if (syscall(SYS_sched_setattr, tid, &a, 0) != 0) {
		return -errno;
	}
	return 0;
}

bool qos_sys_thread_in_process(pid_t pid, pid_t tid) {
	return tid == pid || qos_proc_has_thread(pid, tid);
}

char qos_sys_thread_state(pid_t tid) {
	return qos_proc_state(tid);
}

static bool release_in(pid_t tid, char state, uint64_t flags) {
	if (state == 'Z' || state == 'X' || state == 'x') {
		return false;
	}
	int64_t runtime, deadline;
	if ((state == 'R' || state == 0) &&
			(!qos_sys_thread_dl_state(tid, &runtime, &deadline, NULL) || runtime <= 0)) {
		return true; /* throttled (or unread): its inactive timer gives it back */
	}
	struct qos_sched_attr zero = {
		.size = sizeof(zero),
		.sched_policy = SCHED_DEADLINE,
		.sched_flags = flags,
		.sched_runtime = RELEASE_RUNTIME_NS,
		.sched_deadline = RELEASE_PERIOD_NS,
		.sched_period = RELEASE_PERIOD_NS,
	};
	syscall(SYS_sched_setattr, tid, &zero, 0);
	return true;
}

bool qos_sys_release_deadline(pid_t tid) {
	/*
	 * The kernel takes a thread leaving SCHED_DEADLINE out of the root
	 * domain's books at its 0-lag time: at once when it is queued and the
	 * time has passed, else by an inactive timer.  One off the runqueue
	 * with no timer armed (it slept past its 0-lag time, or a
	 * deadline-to-deadline change cancelled the timer) keeps its bandwidth
	 * booked for good (seen on 6.1 and 6.18).  Reading the thread's state
	 * cannot say which case the switch will meet: a thread being woken on
	 * another CPU reads as running while off the runqueue, and one may
	 * sleep between the read and the switch.
	 *
	 * So a thread is first given a reservation of zero bandwidth, which
	 * is accounted at once and cancels any timer: whatever the switch then
	 * meets, nothing is left booked.  Queued with runtime left, the tiny
	 * runtime puts its 0-lag time far in the past, so it is out of the
	 * books at the switch.  The exception is a thread read as running with
	 * no runtime left: throttled, it is queued (it cannot go to sleep), so
	 * its own timer gives the bandwidth back within a period, while the
	 * tiny runtime would turn its overrun into a 0-lag time hours out, and
	 * the armed timer holds the task and every cgroup it was in.  Dead
	 * threads (zombies) have released it already and are left alone.
	 */
	struct qos_sched_attr cur = { 0 };
	if (syscall(SYS_sched_getattr, tid, &cur, sizeof(cur), 0) != 0) {
		return false;
	}
	if (cur.sched_policy != SCHED_DEADLINE) {
		return true;
	}
	return release_in(tid, qos_sys_thread_state(tid), cur.sched_flags);
}

bool qos_sys_release_deadline_in(pid_t tid, char state) {
	return release_in(tid, state, QOS_SCHED_FLAG_RESET_ON_FORK);
}

bool qos_sys_thread_is_deadline(pid_t tid) {
	return qos_sys_get_thread_policy(tid, NULL) == SCHED_DEADLINE;
}

bool qos_sys_thread_is_deadline_as(pid_t tid, uint64_t runtime_ns, uint64_t period_ns, bool *same) {
	struct qos_sched_attr a = { 0 };
	*same = false;
	if (syscall(SYS_sched_getattr, tid, &a, sizeof(a), 0) != 0 ||
			a.sched_policy != SCHED_DEADLINE) {
		return false;
	}
	*same = a.sched_runtime == runtime_ns && a.sched_deadline == period_ns &&
			a.sched_period == period_ns && a.sched_flags == QOS_SCHED_FLAG_RESET_ON_FORK;
	return true;
}

int qos_sys_get_thread_policy(pid_t tid, bool *reset_on_fork) {
	struct qos_sched_attr a = { 0 };
	if (syscall(SYS_sched_getattr, tid, &a, sizeof(a), 0) != 0) {
		return -1;
	}
	if (reset_on_fork) {
		*reset_on_fork = a.sched_flags & QOS_SCHED_FLAG_RESET_ON_FORK;
	}
	return (int)a.sched_policy;
}

int qos_sys_get_rttime(pid_t pid, uint64_t *soft, uint64_t *hard) {
	struct rlimit rl;
	if (prlimit(pid, RLIMIT_RTTIME, NULL, &rl) != 0) {
		return -errno;
	}
	*soft = rl.rlim_cur;
	*hard = rl.rlim_max;
	return 0;
}

bool qos_sys_rttime_tighter(pid_t pid, uint64_t hard) {
	uint64_t soft, now;
	return qos_sys_get_rttime(pid, &soft, &now) == 0 && now < hard;
}

int qos_sys_bound_rttime(pid_t pid, uint64_t usec, uint64_t *old_soft, uint64_t *old_hard) {
	int e = qos_sys_get_rttime(pid, old_soft, old_hard);
	if (e) {
		return e;
	}
	struct rlimit nl = { .rlim_cur = *old_soft, .rlim_max = *old_hard };
	/* Never raise an existing bound, only tighten it. */
	if (nl.rlim_max == RLIM_INFINITY || nl.rlim_max > usec) {
		nl.rlim_max = usec;
	}
	if (nl.rlim_cur == RLIM_INFINITY || nl.rlim_cur > nl.rlim_max) {
		nl.rlim_cur = nl.rlim_max;
	}
	if (prlimit(pid, RLIMIT_RTTIME, &nl, NULL) != 0) {
		return -errno;
	}
	return 0;
}

int qos_sys_restore_rttime(pid_t pid, uint64_t soft, uint64_t hard) {
	struct rlimit rl = { .rlim_cur = soft, .rlim_max = hard };
	return prlimit(pid, RLIMIT_RTTIME, &rl, NULL) == 0 ? 0 : -errno;
}

pid_t qos_sys_find_ancestor(pid_t pid, bool (*match)(pid_t ancestor, void *data), void *data) {
	for (pid_t p = qos_proc_parent(pid), depth = 0; p > 1 && depth < 16;
			p = qos_proc_parent(p), depth++) {
		if (match(p, data)) {
			return p;
		}
	}
	return 0;
}

pid_t qos_sys_tgid(pid_t tid) {
	return qos_proc_tgid(tid);
}
