/*
 * qos/kernel/proc.c against real tasks: this process, a thread and a forked child
 * (renamed so its command name holds spaces and ')', then running a program
 * with arguments), a zombie, a reaped pid; and against bad input: pids that
 * are not positive or not there, buffers too small, stat lines cut short.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "qos/proc.h"
#include "waiting_thread.h"

/* A name the kernel keeps whole (15 bytes) with all a stat parser trips on. */
#define ODD_NAME "a) b (c) 1 2 )"

/* Whether /proc/PID/task/TID/comm reads ODD_NAME: the stat line to parse
 * then holds it. */
static bool named_odd(pid_t pid, pid_t tid) {
	char path[96], comm[32] = "";
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	FILE *f = fopen(path, "re");
	bool ok = f && fgets(comm, sizeof(comm), f) && strcmp(comm, ODD_NAME "\n") == 0;
	if (f) {
		fclose(f);
	}
	return ok;
}

/* Reads until EOF: the writer closed its end, or exec closed it for it. */
static void wait_eof(int fd) {
	char c;
	while (read(fd, &c, 1) > 0 || errno == EINTR) {
		errno = 0;
	}
}

/*
 * A child that renames itself, tells so on a pipe, waits for a byte and
 * then runs /bin/sleep; the pipe's other end closes at the exec.
 */
struct child {
	pid_t pid;
	int to_child, from_child;
};

static struct child start_child(void) {
	int down[2], up[2];
	struct child c = { .pid = -1 };
	if (pipe2(down, O_CLOEXEC) != 0 || pipe2(up, O_CLOEXEC) != 0) {
		CHECK(!"pipes");
		return c;
	}
	c.pid = fork();
	CHECK(c.pid >= 0);
	if (c.pid == 0) {
		prctl(PR_SET_NAME, ODD_NAME);
		if (write(up[1], "r", 1) != 1) {
			_exit(1);
		}
		char go;
		if (read(down[0], &go, 1) != 1) {
			_exit(1);
		}
		/* An argument with a blank that sleep still takes (it skips
		 * leading blanks): one it refused would make it exit at once,
		 * before the checks below read its command line. */
		execl("/bin/sleep", "sleep", "1000", " 5", (char *)NULL);
		_exit(127);
	}
	close(down[0]);
	close(up[1]);
	c.to_child = down[1];
	c.from_child = up[0];
	char ready;
	CHECK(read(c.from_child, &ready, 1) == 1);
	return c;
}

static void test_self(void) {
	pid_t self = getpid();
	struct qos_proc_stat st;
	CHECK(qos_proc_read_stat(self, 0, &st));
	CHECK(st.state == 'R');
	CHECK_EQ_U(st.ppid, getppid());
	CHECK(st.start_time > 0);
	CHECK_EQ_U(qos_proc_parent(self), getppid());
	CHECK_EQ_U(qos_proc_start_time(self, 0), st.start_time);
	CHECK_EQ_U(qos_proc_start_time(self, self), st.start_time);
	CHECK(qos_proc_state(self) == 'R');
	CHECK(qos_proc_has_thread(self, self));
	CHECK_EQ_U(qos_proc_tgid(self), self);
	CHECK_EQ_U(qos_proc_uid(self), getuid());

	char exe[PATH_MAX], want[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", want, sizeof(want) - 1);
	CHECK(n > 0);
	want[n > 0 ? n : 0] = '\0';
	CHECK(qos_proc_exe(self, exe, sizeof(exe)));
	CHECK_STR(exe, want);

	/* Some CPU went into getting here; more goes in, never less. */
	uint64_t a = 0, b = 0;
	CHECK(qos_proc_cpu_ns(self, &a) && a > 0);
	for (volatile int i = 0; i < 1000000; i++) {
		;
	}
	CHECK(qos_proc_cpu_ns(self, &b) && b >= a);
}

static void test_thread(void) {
	pthread_t th;
	pid_t self = getpid();
	pid_t tid = start_thread(&th);
	CHECK(pthread_setname_np(th, ODD_NAME) == 0);
	CHECK(named_odd(self, tid));

	CHECK(qos_proc_has_thread(self, tid));
	CHECK(!qos_proc_has_thread(self, 0));
	CHECK(!qos_proc_has_thread(self, -tid));
	CHECK(!qos_proc_has_thread(0, tid));
	CHECK_EQ_U(qos_proc_tgid(tid), self);
	/* Its name is ODD_NAME: the fields still come from after the last ')'. */
	struct qos_proc_stat st;
	CHECK(qos_proc_read_stat(self, tid, &st));
	CHECK(st.state == 'S' || st.state == 'R');
	CHECK_EQ_U(st.ppid, getppid());
	CHECK(st.start_time >= qos_proc_start_time(self, 0));
	CHECK(qos_proc_state(tid) == st.state);

	stop_thread(th);
	/* The task directory goes once the thread is reaped, which join waits
	 * for only as far as the thread's own exit: look again a while. */
	for (int i = 0; i < 1000 && qos_proc_has_thread(self, tid); i++) {
		usleep(1000);
	}
	CHECK(!qos_proc_has_thread(self, tid));
	CHECK_EQ_U(qos_proc_start_time(self, tid), 0);
}

static void test_child(void) {
	pid_t self = getpid();
	struct child c = start_child();
	if (c.pid <= 0) {
		return;
	}
	/* Renamed, not yet exec'd: a copy of us under ODD_NAME. */
	CHECK(named_odd(c.pid, c.pid));
	struct qos_proc_stat st;
	CHECK(qos_proc_read_stat(c.pid, 0, &st));
	CHECK_EQ_U(st.ppid, self);
	CHECK(st.start_time >= qos_proc_start_time(self, 0));
	CHECK_EQ_U(qos_proc_parent(c.pid), self);
	CHECK(qos_proc_has_thread(c.pid, c.pid));
	CHECK(!qos_proc_has_thread(c.pid, self));
	CHECK(!qos_proc_has_thread(self, c.pid));
	CHECK_EQ_U(qos_proc_tgid(c.pid), c.pid);
	uint64_t started = st.start_time;

	CHECK(write(c.to_child, "g", 1) == 1);
	wait_eof(c.from_child);
	char buf[PATH_MAX];
	CHECK(qos_proc_cmdline(c.pid, buf, sizeof(buf)));
	CHECK_STR(buf, "sleep 1000  5");
	CHECK(qos_proc_exe(c.pid, buf, sizeof(buf)));
	CHECK(strlen(buf) > 6 && strcmp(buf + strlen(buf) - 6, "/sleep") == 0);
	/* The same process after exec: same start, same parent. */
	CHECK_EQ_U(qos_proc_start_time(c.pid, 0), started);
	CHECK_EQ_U(qos_proc_parent(c.pid), self);

	/* Buffers too small: the command line is cut, the path refused. */
	char tiny[8];
	memset(tiny, 'x', sizeof(tiny));
	CHECK(!qos_proc_exe(c.pid, tiny, 0));
	CHECK(tiny[0] == 'x');
	CHECK(!qos_proc_exe(c.pid, tiny, 1));
	CHECK_STR(tiny, "");
	CHECK(!qos_proc_exe(c.pid, tiny, sizeof(tiny)));
	CHECK_STR(tiny, "");
	size_t fit = strlen(buf) + 1;
	char *exact = malloc(fit);
	CHECK(exact && qos_proc_exe(c.pid, exact, fit) && strcmp(exact, buf) == 0);
	CHECK(exact && !qos_proc_exe(c.pid, exact, fit - 1));
	free(exact);
	memset(tiny, 'x', sizeof(tiny));
	CHECK(!qos_proc_cmdline(c.pid, tiny, 0));
	CHECK(tiny[0] == 'x');
	CHECK(!qos_proc_cmdline(c.pid, tiny, 1));
	CHECK_STR(tiny, "");
	CHECK(qos_proc_cmdline(c.pid, tiny, 7));
	CHECK_STR(tiny, "sleep");
	CHECK(qos_proc_cmdline(c.pid, tiny, sizeof(tiny)));
	CHECK_STR(tiny, "sleep 1");

	/* A zombie has no command line nor executable, still a parent. */
	kill(c.pid, SIGKILL);
	siginfo_t info;
	CHECK(waitid(P_PID, (id_t)c.pid, &info, WEXITED | WNOWAIT) == 0);
	CHECK(qos_proc_state(c.pid) == 'Z');
	CHECK_EQ_U(qos_proc_parent(c.pid), self);
	CHECK(!qos_proc_cmdline(c.pid, buf, sizeof(buf)));
	CHECK_STR(buf, "");
	CHECK(!qos_proc_exe(c.pid, buf, sizeof(buf)));

	/* Reaped: every answer is "unknown". */
	CHECK(waitpid(c.pid, NULL, 0) == c.pid);
	close(c.to_child);
	close(c.from_child);
	CHECK(!qos_proc_read_stat(c.pid, 0, &st));
	CHECK_EQ_U(qos_proc_parent(c.pid), 0);
	CHECK_EQ_U(qos_proc_start_time(c.pid, 0), 0);
	CHECK(qos_proc_state(c.pid) == 0);
	CHECK(!qos_proc_has_thread(c.pid, c.pid));
	CHECK_EQ_U(qos_proc_tgid(c.pid), 0);
	CHECK(qos_proc_uid(c.pid) == (uid_t)-1);
	uint64_t ns = 7;
	CHECK(!qos_proc_cpu_ns(c.pid, &ns) && ns == 7);
}

static void test_bad_pids(void) {
	/* Above any pid_max (2^22): never a process. */
	const pid_t bad[] = { 0, -1, INT_MIN, INT_MAX, 1 << 23 };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		pid_t p = bad[i];
		struct qos_proc_stat st = { .state = 'q' };
		char buf[64] = "untouched";
		uint64_t ns = 7;
		CHECK(!qos_proc_read_stat(p, 0, &st) && st.state == 'q');
		/* A tid that is not positive means the process itself. */
		CHECK(qos_proc_read_stat(getpid(), p, &st) == (p <= 0));
		CHECK_EQ_U(qos_proc_parent(p), 0);
		CHECK_EQ_U(qos_proc_start_time(p, 0), 0);
		CHECK_EQ_U(qos_proc_start_time(p, p), 0);
		CHECK((qos_proc_start_time(getpid(), p) != 0) == (p <= 0));
		CHECK(qos_proc_state(p) == 0);
		CHECK(!qos_proc_exe(p, buf, sizeof(buf)));
		CHECK_STR(buf, "");
		snprintf(buf, sizeof(buf), "untouched");
		CHECK(!qos_proc_cmdline(p, buf, sizeof(buf)));
		CHECK_STR(buf, "");
		CHECK(!qos_proc_has_thread(p, p));
		CHECK(!qos_proc_has_thread(getpid(), p));
		CHECK_EQ_U(qos_proc_tgid(p), 0);
		CHECK(qos_proc_uid(p) == (uid_t)-1);
		CHECK(!qos_proc_cpu_ns(p, &ns) && ns == 7);
	}
}

static void test_parse(void) {
	struct qos_proc_stat st;
	CHECK(!qos_proc_parse_stat(NULL, &st));
	CHECK(!qos_proc_parse_stat("", &st));
	CHECK(!qos_proc_parse_stat("12 (name", &st));
	CHECK(!qos_proc_parse_stat("12 (name)", &st));
	CHECK(!qos_proc_parse_stat("12 (name) ", &st));
	CHECK(!qos_proc_parse_stat("12 (name)S 1", &st));
	CHECK(!qos_proc_parse_stat("12 (name) SS 1", &st));
	/* Fields 3 to 22 and more; the name ends at the last ')'. */
	const char *full = "12 (x) (y) 3 4) S 77 12 12 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 "
					   "123456789 1000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0\n";
	CHECK(qos_proc_parse_stat(full, &st));
	CHECK(st.state == 'S');
	CHECK_EQ_U(st.ppid, 77);
	CHECK_EQ_U(st.start_time, 123456789);
	/* Cut before field 22, or in its middle: the start is not known. */
	CHECK(qos_proc_parse_stat("12 (x) R 77 12 12 0 -1 4194560 100", &st));
	CHECK(st.state == 'R');
	CHECK_EQ_U(st.ppid, 77);
	CHECK_EQ_U(st.start_time, 0);
	CHECK(qos_proc_parse_stat("12 (x) R 77 12 12 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 12345",
			&st));
	CHECK_EQ_U(st.start_time, 0);
	CHECK(qos_proc_parse_stat("12 (x) Z 7", &st));
	CHECK(st.state == 'Z');
	CHECK_EQ_U(st.ppid, 0);
	CHECK(qos_proc_parse_stat("12 (x) Z\n", &st) && st.state == 'Z' && st.ppid == 0);
	CHECK(qos_proc_parse_stat("12 (x) S 5x 1", &st) && st.ppid == 0);
}

int main(void) {
	test_parse();
	test_self();
	test_thread();
	test_child();
	test_bad_pids();
	return check_report("test_proc");
}
