/*
 * The guardian: a small child process that outlives a crashed manager just
 * long enough to thaw every group under our root, so that no process stays
 * frozen because the manager died, and to take every real-time or deadline
 * thread in them back to time-sharing: with no manager to demote it at its
 * limit, a busy fifo thread would run on until RLIMIT_RTTIME's SIGXCPU
 * killed it.  It learns of the death through EOF on a socket, over which
 * the manager also names the thread members no scan of our root finds (on
 * cgroup v2 a thread stays in its process's group).  It is forked from a
 * possibly multi-threaded process, so it only makes system calls (open,
 * read, write, recv, getdents64, sched_getattr/setattr, _exit) and
 * string formatting without allocation.
 *
 * It runs in a leaf of our root of its own (qos_cgroup_attach_guardian), not
 * in the manager's cgroup, so that killing that cgroup (a unit stopped, an
 * OOM group kill) does not take it with the manager.
 *
 * The manager watches it through a pidfd in its epoll set: a guardian that
 * dies (killed) is replaced at once, and while none runs the manager
 * grants no real-time class and no pause, which a crash would then leave
 * in place.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qos/policy/core.h"
#include "qos/member/guardian.h"
#include "qos/kernel/sys.h"

struct linux_dirent64 {
	unsigned long long d_ino;
	long long d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static void thaw_at(int dirfd, const char *name) {
	char path[300];
	size_t n = strlen(name);
	if (n + sizeof("/cgroup.freeze") > sizeof(path)) {
		return;
	}
	memcpy(path, name, n);
	memcpy(path + n, "/cgroup.freeze", sizeof("/cgroup.freeze"));
	int fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t w = write(fd, "0", 1);
		(void)w;
		close(fd);
	}
}

static void demote_tid(pid_t tid) {
	int policy = qos_sys_get_thread_policy(tid, NULL);
	if (policy != SCHED_FIFO && policy != SCHED_RR && policy != 6 /* SCHED_DEADLINE */) {
		return;
	}
	/* A deadline thread demoted without it keeps its bandwidth in the
	 * kernel's books for good (see qos_sys_release_deadline). */
	if (policy == 6 && !qos_sys_release_deadline(tid)) {
		return;
	}
	qos_sys_set_thread_policy(tid, QOS_POLICY_OTHER, 0, 0, 0, 0);
}

/* Demotes every thread listed (one id a line) in the file name/list under dirfd. */
static void demote_listed(int dirfd, const char *name, const char *list) {
	char path[300];
	size_t n = strlen(name), m = strlen(list);
	if (n + m + 2 > sizeof(path)) {
		return;
	}
	memcpy(path, name, n);
	path[n] = '/';
	memcpy(path + n + 1, list, m + 1);
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		return;
	}
	char buf[4096];
	size_t have = 0;
	ssize_t got;
	while ((got = read(fd, buf + have, sizeof(buf) - have)) > 0) {
		have += (size_t)got;
		size_t line = 0;
		for (size_t i = 0; i < have; i++) {
			if (buf[i] != '\n') {
				continue;
			}
			pid_t tid = 0;
			for (size_t k = line; k < i && buf[k] >= '0' && buf[k] <= '9'; k++) {
				tid = tid * 10 + (buf[k] - '0');
			}
			if (tid > 0) {
				demote_tid(tid);
			}
			line = i + 1;
		}
		memmove(buf, buf + line, have - line);
		have -= line;
	}
	close(fd);
}

static void demote_v2(int dirfd, const char *name) {
	demote_listed(dirfd, name, "cgroup.threads");
}

/* Hybrid: a thread member moves alone, in the v1 cpu tree only. */
static void demote_v1(int dirfd, const char *name) {
	demote_listed(dirfd, name, "tasks");
}

/* Calls fn on root itself (".") and on each group directly under it. */
static void for_each_group(const char *root, void (*fn)(int dirfd, const char *name)) {
	int dfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		return;
	}
	fn(dfd, ".");
	char buf[4096];
	for (;;) {
		long n = syscall(SYS_getdents64, dfd, buf, sizeof(buf));
		if (n <= 0) {
			break;
		}
		for (long off = 0; off < n;) {
			struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + off);
			if (d->d_type == DT_DIR && d->d_name[0] != '.') {
				fn(dfd, d->d_name);
			}
			off += d->d_reclen;
		}
	}
	close(dfd);
}

/* Closes every descriptor from 3 up, however high, but a and b (-1: none). */
static void close_all_but(int a, int b) {
	unsigned int keep[2] = { a < 3 ? ~0u : (unsigned)a, b < 3 ? ~0u : (unsigned)b };
	if (keep[0] > keep[1]) {
		unsigned int t = keep[0];
		keep[0] = keep[1];
		keep[1] = t;
	}
	unsigned int from = 3;
	for (int i = 0; i < 2 && from != 0; i++) {
		if (keep[i] == ~0u) {
			break;
		}
		if (keep[i] > from) {
			syscall(SYS_close_range, from, keep[i] - 1, 0);
		}
		from = keep[i] + 1;
	}
	if (from != 0) {
		syscall(SYS_close_range, from, ~0u, 0);
	}
}

struct guardian_record {
	pid_t pid, tid;
	uint64_t start_time;
	bool on;
};

struct tracked {
	struct guardian_record t[QOS_GUARDIAN_MAX_THREADS];
	size_t n;
};

static void track(struct tracked *tr, const struct guardian_record *rec) {
	for (size_t i = 0; i < tr->n; i++) {
		if (tr->t[i].tid == rec->tid) {
			tr->t[i] = tr->t[--tr->n];
			break;
		}
	}
	if (rec->on && tr->n < QOS_GUARDIAN_MAX_THREADS) {
		tr->t[tr->n++] = *rec;
	}
}

/*
 * The thread members the manager had named when it forked us, read from
 * the copy of its memory we were given: a guardian started after another
 * died must know them too, and learns them here without a message (the
 * socket's buffer may not hold them all before we read).
 */
static void track_inherited(const struct qos_manager *mgr, struct tracked *tr) {
	for (const struct qos_reserve *r = mgr->reserves; r; r = r->next) {
		for (size_t i = 0; i < r->n_members; i++) {
			const struct qos_member *m = r->members[i];
			if (!m->outside_root) {
				continue;
			}
			struct guardian_record rec = {
				.pid = m->pid,
				.tid = m->tid,
				.start_time = m->start_time,
				.on = true,
			};
			track(tr, &rec);
		}
	}
}

enum record_read {
	RECORD_KEPT, /* one record read and kept (or a signal: try again) */
	RECORD_NONE, /* nothing queued */
	RECORD_END, /* the manager's end closed (or sent something malformed) */
};

static enum record_read read_record(int fd, struct tracked *tr) {
	struct guardian_record rec;
	ssize_t got = recv(fd, &rec, sizeof(rec), MSG_DONTWAIT);
	if (got < 0 && (errno == EINTR || errno == EAGAIN)) {
		return errno == EINTR ? RECORD_KEPT : RECORD_NONE;
	}
	if (got != (ssize_t)sizeof(rec)) {
		return RECORD_END;
	}
	track(tr, &rec);
	return RECORD_KEPT;
}

/* Once the manager is gone: what it sent before is still queued (a busy
 * machine may not have run us since), and is kept before acting. */
static void drain_records(int fd, struct tracked *tr) {
	while (read_record(fd, tr) == RECORD_KEPT) {
		;
	}
}

/*
 * Blocks until the manager is gone, keeping the records it sends meanwhile.
 * Also through a pidfd of the manager's process: a child it forked without
 * exec holds the socket's other end too, and the end would not close with
 * the manager (members stayed frozen until that child exited).  The pidfd
 * is opened after the fork, so it names the manager only if it is still
 * our parent; if it is not, it is gone already.  Without a pidfd the
 * socket alone tells.
 */
static void wait_for_manager(int fd, pid_t manager, struct tracked *tr) {
	int mfd = qos_sys_pidfd_open(manager, false);
	if (getppid() != manager) {
		drain_records(fd, tr);
		return;
	}
	struct pollfd pfd[2] = { { .fd = fd, .events = POLLIN }, { .fd = mfd, .events = POLLIN } };
	for (;;) {
		if (poll(pfd, mfd >= 0 ? 2 : 1, -1) < 0) {
			if (errno == EINTR) {
				continue;
			}
			return;
		}
		if (pfd[1].revents) {
			drain_records(fd, tr); /* the manager's process has exited */
			return;
		}
		if (read_record(fd, tr) == RECORD_END) {
			return; /* the manager's end closed */
		}
	}
}

/* The tracked threads still the ones named (a tid may be reused). */
static void demote_tracked(const struct tracked *tr) {
	for (size_t i = 0; i < tr->n; i++) {
		const struct guardian_record *rec = &tr->t[i];
		if (qos_sys_start_time(rec->pid, rec->tid) == rec->start_time) {
			demote_tid(rec->tid);
		}
	}
}

bool qos_guardian_track(struct qos_manager *mgr, const struct qos_member *m, bool on) {
	if (!mgr->config.guardian) {
		return true;
	}
	if (on && mgr->guardian.n_outside_root >= QOS_GUARDIAN_MAX_THREADS) {
		errno = ENOSPC;
		return false;
	}
	/* A member that left is uncounted even if the record below is lost: the
	 * guardian checks each thread's start time before it touches it. */
	if (!on && mgr->guardian.n_outside_root) {
		mgr->guardian.n_outside_root--;
	}
	/* With no guardian running the next one finds m among the members as
	 * it is forked (track_inherited): counted all the same. */
	if (mgr->guardian.fd >= 0) {
		struct guardian_record rec = {
			.pid = m->pid,
			.tid = m->tid,
			.start_time = m->start_time,
			.on = on,
		};
		ssize_t sent = send(mgr->guardian.fd, &rec, sizeof(rec), MSG_NOSIGNAL | MSG_DONTWAIT);
		if (sent != (ssize_t)sizeof(rec)) {
			if (sent >= 0) {
				errno = EMSGSIZE;
			}
			return false;
		}
	}
	if (on) {
		mgr->guardian.n_outside_root++;
	}
	return true;
}

bool qos_guardian_start(struct qos_manager *mgr) {
	int p[2], pidfd = -1, e;
	/* A seqpacket socket keeps each record whole, and its reader sees the
	 * manager's end close as it would with a pipe. */
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, p) < 0) {
		return false;
	}
	pid_t manager = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		goto err_close;
	}
	if (pid == 0) {
		/*
		 * Drop everything inherited except the read end: the write end
		 * above all, or the guardian would never see the manager die, and
		 * every client socket, which would outlive the compositor here.
		 */
		close_all_but(p[0], mgr->config.guardian_keep_fd);
		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		prctl(PR_SET_NAME, "qos-guardian", 0, 0, 0);
		struct tracked tr = { .n = 0 };
		track_inherited(mgr, &tr);
		wait_for_manager(p[0], manager, &tr);
		/* Demoted while still frozen: none runs real-time once thawed. */
		for_each_group(mgr->cg.v2_root, demote_v2);
		if (mgr->cg.layout == QOS_CG_HYBRID) {
			for_each_group(mgr->cg.cpu_root, demote_v1);
		}
		demote_tracked(&tr);
		for_each_group(mgr->cg.v2_root, thaw_at);
		_exit(0);
	}
	/* Its death must be seen as it happens, not at our own. */
	pidfd = qos_sys_pidfd_open(pid, false);
	if (pidfd < 0) {
		goto err_kill;
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &mgr->guardian.pidfd };
	if (epoll_ctl(mgr->epoll_fd, EPOLL_CTL_ADD, pidfd, &ev) < 0) {
		goto err_pidfd;
	}
	close(p[0]);
	mgr->guardian.pid = pid;
	mgr->guardian.fd = p[1];
	mgr->guardian.pidfd = pidfd;
	/* If the move fails it stays where it is: it still guards against the
	 * manager's own death, only not against its cgroup being killed. */
	int moved = qos_cgroup_attach_guardian(&mgr->cg, pid);
	if (moved < 0) {
		qos_event_emit(&mgr->events, QOS_EVENT_ERROR, NULL, 0, 0, 0,
				"the thaw guardian (pid %d) stays in "
				"the manager's cgroup (%s): killing that cgroup would kill it too, and leave "
				"paused members frozen until the next start",
				(int)pid, strerror(-moved));
	}
	return true;

err_pidfd:
	e = errno;
	close(pidfd);
	errno = e;
err_kill:
	/* Killed before it can read the end of the socket: it must not thaw
	 * and demote what the living manager holds. */
	e = errno;
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
		;
	}
	errno = e;
err_close:
	e = errno;
	close(p[0]);
	close(p[1]);
	errno = e;
	return false;
}

/* Closes what the manager held of a guardian gone or stopped. */
static void drop(struct qos_manager *mgr) {
	if (mgr->guardian.pidfd >= 0) {
		close(mgr->guardian.pidfd); /* which takes it out of the epoll set */
	}
	close(mgr->guardian.fd);
	mgr->guardian.pidfd = mgr->guardian.fd = -1;
	mgr->guardian.pid = 0; /* its pid may be reused by one that may join */
}

void qos_guardian_stop(struct qos_manager *mgr) {
	if (mgr->guardian.fd < 0) {
		return;
	}
	pid_t pid = mgr->guardian.pid;
	/* On the socket, not this descriptor: a child forked without exec may
	 * hold the end too, and the guardian would wait for it for ever. */
	shutdown(mgr->guardian.fd, SHUT_RDWR);
	drop(mgr);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
		;
	}
}

void qos_guardian_died(struct qos_manager *mgr) {
	pid_t old = mgr->guardian.pid;
	int status = 0;
	pid_t got;
	while ((got = waitpid(old, &status, WNOHANG)) < 0 && errno == EINTR) {
		;
	}
	char how[64];
	if (got == old && WIFSIGNALED(status)) {
		snprintf(how, sizeof(how), "was killed by signal %d", WTERMSIG(status));
	} else if (got == old && WIFEXITED(status)) {
		snprintf(how, sizeof(how), "exited with status %d", WEXITSTATUS(status));
	} else {
		snprintf(how, sizeof(how), "exited"); /* reaped by someone else */
	}
	drop(mgr);
	if (qos_guardian_start(mgr)) {
		qos_event_emit(&mgr->events, QOS_EVENT_ERROR, NULL, 0, 0, 0,
				"the thaw guardian (pid %d) %s; "
				"a new one (pid %d) runs",
				old, how, mgr->guardian.pid);
	} else {
		qos_event_emit(&mgr->events, QOS_EVENT_ERROR, NULL, 0, 0, 0,
				"the thaw guardian (pid %d) %s and "
				"no new one could be started (%s): real-time grants and pauses are refused "
				"until one runs (tried again every second)",
				old, how, strerror(errno));
	}
}

void qos_guardian_retry(struct qos_manager *mgr) {
	if (qos_guardian_missing(mgr)) {
		qos_guardian_start(mgr);
	}
}

bool qos_guardian_missing(const struct qos_manager *mgr) {
	return mgr->config.guardian && mgr->guardian.fd < 0;
}

bool qos_guardian_allows(struct qos_manager *mgr, const struct qos_params *p, char *err,
		size_t err_len) {
	bool rt = qos_policy_is_rt(p->policy), freeze = qos_params_may_freeze(p);
	if (!qos_guardian_missing(mgr) || !(rt || freeze)) {
		return true;
	}
	snprintf(err, err_len,
			"no thaw guardian runs (the last one died and none could be "
			"started), and a crash of the manager would leave its members %s: refused until "
			"one runs",
			rt && freeze ? "real-time or frozen"
					: rt ? "real-time"
						 : "frozen");
	mgr->events.last_refusal = QOS_REFUSAL_FORBIDDEN;
	return false;
}
