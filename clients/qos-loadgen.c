/*
 * qos-loadgen: reproducible CPU load for benchmarks and demos.
 *
 * Forks CPU hogs (busy loops that never sleep) and periodic tasks (a job of
 * util x period CPU time, +-jitter, released every period), optionally all
 * joined to a reserve or set to a class through qosway's IPC before they
 * start.  While they run a progress line goes to stderr; at the end (after
 * -d, or SIGINT/SIGTERM) one JSON summary goes to stdout with what each
 * task achieved: CPU share, jobs per second, deadline misses.
 *
 * Exit status: 0 ran, 1 the compositor refused the reserve or class
 * (nothing ran), 2 bad usage, 3 the compositor cannot be reached.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <json.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ipc-client.h"
#include "qos/params.h"

#define MAX_TASKS 1024
#define IPC_TIMEOUT_MS 5000

static const char usage[] =
		"Usage: qos-loadgen [OPTIONS]\n"
		"\n"
		"Tasks (at least one):\n"
		"  -H, --hogs N         CPU hogs: busy loops that never sleep\n"
		"  -P, --periodic N     periodic tasks: one job per period\n"
		"  -p, --period TIME    period of the periodic tasks (default 20ms)\n"
		"  -u, --util PERCENT   CPU a job needs, as a share of the period (default 25%)\n"
		"  -j, --jitter TIME    each job's demand varies by up to +-TIME (default 0)\n"
		"      --seed N         seed of the jitter (default 1)\n"
		"\n"
		"Run:\n"
		"  -d, --duration TIME  stop after TIME (default: at SIGINT or SIGTERM)\n"
		"  -r, --reserve NAME   join every task to reserve NAME before it starts\n"
		"  -c, --class CLASS    start every task at CLASS: realtime, fifo, idle,\n"
		"                       nice, paused or normal\n"
		"  -s, --socket PATH    qosway's IPC socket (default $QOSWAY_SOCK)\n"
		"  -q, --quiet          no progress line\n"
		"  -h, --help           this text\n"
		"\n"
		"TIME is 500us, 20ms, 1.5s (bare numbers are microseconds).\n";

enum task_kind {
	TASK_HOG,
	TASK_PERIODIC,
};

/* Written by the task, read by the parent for the progress line. */
struct task_shared {
	volatile uint64_t units; /* hog: rounds of work done */
	volatile uint64_t jobs; /* periodic: jobs completed */
	volatile uint64_t late; /* jobs completed after their deadline */
	volatile uint64_t skipped; /* releases dropped: already past when the job before ended */
};

struct task {
	enum task_kind kind;
	pid_t pid;
	struct task_shared *shared;
	double cpu_s;
	int status;
};

struct options {
	long hogs, periodic;
	uint64_t period_us, util_ppm, jitter_us, duration_us;
	unsigned long seed;
	const char *reserve;
	const char *class;
	const char *socket;
	bool quiet;
};

static int usage_error(const char *fmt, const char *arg) {
	fprintf(stderr, "qos-loadgen: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'qos-loadgen --help'.\n");
	return 2;
}

static bool parse_count(const char *s, long max, long *out) {
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > max || s[0] == '-' || s[0] == '+') {
		return false;
	}
	*out = v;
	return true;
}

static const char *const classes[] = { "realtime", "fifo", "idle", "nice", "paused", "normal" };

static bool class_known(const char *name) {
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
		if (strcmp(name, classes[i]) == 0) {
			return true;
		}
	}
	return false;
}

/*
 * A task option (see usage) c into opt: false if c is none, else true
 * with *status -1 to go on or the exit status of a bad value.
 */
static bool parse_task_option(int c, struct options *opt, int *status) {
	long n;
	char err[128];
	*status = -1;
	switch (c) {
	case 'H':
	case 'P':
		if (!parse_count(optarg, MAX_TASKS, &n)) {
			snprintf(err, sizeof(err), "bad %s count '%%s': want 0..%d",
					c == 'H' ? "--hogs" : "--periodic", MAX_TASKS);
			*status = usage_error(err, optarg);
		} else {
			*(c == 'H' ? &opt->hogs : &opt->periodic) = n;
		}
		return true;
	case 'p':
		if (!qos_parse_duration_us(optarg, &opt->period_us) || opt->period_us < 100) {
			*status = usage_error("bad --period '%s': want a time of at least 100us, "
								  "e.g. 20ms",
					optarg);
		}
		return true;
	case 'u':
		if (!qos_parse_percent_ppm(optarg, &opt->util_ppm) || opt->util_ppm == 0 ||
				opt->util_ppm > 1000000) {
			*status = usage_error("bad --util '%s': want a share above 0%% and at most "
								  "100%%, e.g. 25%%",
					optarg);
		}
		return true;
	case 'j':
		if (!qos_parse_duration_us(optarg, &opt->jitter_us)) {
			*status = usage_error("bad --jitter '%s': want a time, e.g. 2ms", optarg);
		}
		return true;
	case 'S':
		if (!parse_count(optarg, LONG_MAX, &n)) {
			*status = usage_error("bad --seed '%s': want a whole number", optarg);
		} else {
			opt->seed = (unsigned long)n;
		}
		return true;
	default:
		return false;
	}
}

/* Any other option c into opt: -1 to go on, else the exit status. */
static int parse_run_option(int c, char *argv[], struct options *opt) {
	char err[128];
	switch (c) {
	case 'd':
		if (!qos_parse_duration_us(optarg, &opt->duration_us) || opt->duration_us == 0) {
			return usage_error("bad --duration '%s': want a time above 0, e.g. 5s", optarg);
		}
		return -1;
	case 'r':
		if (!qos_name_valid(optarg, err, sizeof(err))) {
			fprintf(stderr, "qos-loadgen: bad --reserve '%s': %s\n", optarg, err);
			return 2;
		}
		opt->reserve = optarg;
		return -1;
	case 'c':
		if (!class_known(optarg)) {
			return usage_error("bad --class '%s': want realtime, fifo, idle, nice, paused "
							   "or normal",
					optarg);
		}
		opt->class = optarg;
		return -1;
	case 's':
		opt->socket = optarg;
		return -1;
	case 'q':
		opt->quiet = true;
		return -1;
	case 'h':
		fputs(usage, stdout);
		return 0;
	case ':':
		snprintf(err, sizeof(err), "option '%s' needs a value", argv[optind - 1]);
		return usage_error("%s", err);
	default:
		return usage_error("unknown option '%s'", argv[optind - 1]);
	}
}

/* The options together: -1 if they make a run, else the exit status. */
static int check_options(const struct options *opt) {
	if (opt->hogs + opt->periodic == 0) {
		return usage_error("%s", "no tasks: give --hogs N and/or --periodic N");
	}
	if (opt->hogs + opt->periodic > MAX_TASKS) {
		char err[128];
		snprintf(err, sizeof(err), "%%s: at most %d tasks in all", MAX_TASKS);
		return usage_error(err, "too many tasks");
	}
	if (opt->reserve && opt->class) {
		return usage_error("%s", "give --reserve or --class, not both: a reserve has a class");
	}
	if (opt->periodic > 0 && opt->jitter_us * 1000000 > opt->util_ppm * opt->period_us) {
		return usage_error("%s", "--jitter is larger than a job's demand (--util x --period)");
	}
	return -1;
}

/* Returns -1 to go on, else the exit status (after -h or a bad argument). */
static int parse_options(int argc, char *argv[], struct options *opt) {
	static const struct option longopts[] = {
		{ "hogs", required_argument, NULL, 'H' },
		{ "periodic", required_argument, NULL, 'P' },
		{ "period", required_argument, NULL, 'p' },
		{ "util", required_argument, NULL, 'u' },
		{ "jitter", required_argument, NULL, 'j' },
		{ "seed", required_argument, NULL, 'S' },
		{ "duration", required_argument, NULL, 'd' },
		{ "reserve", required_argument, NULL, 'r' },
		{ "class", required_argument, NULL, 'c' },
		{ "socket", required_argument, NULL, 's' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	*opt = (struct options){ .period_us = 20000, .util_ppm = 250000, .seed = 1 };
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, ":H:P:p:u:j:d:r:c:s:qh", longopts, NULL)) != -1) {
		int status;
		if (!parse_task_option(c, opt, &status)) {
			status = parse_run_option(c, argv, opt);
		}
		if (status != -1) {
			return status;
		}
	}
	if (optind < argc) {
		return usage_error("unexpected argument '%s'", argv[optind]);
	}
	return check_options(opt);
}

static double clock_s(clockid_t id) {
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t work_sink;

/* About 10 us of CPU on current machines: the unit of every task's work. */
static void work_round(void) {
	uint64_t x = work_sink | 1;
	for (int i = 0; i < 2048; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	/* Stored so the compiler cannot drop the loop. */
	work_sink = x;
}

static _Noreturn void run_hog(struct task_shared *shared) {
	for (;;) {
		work_round();
		shared->units++;
	}
}

/* Burns CPU time of this thread, not wall time: work that competes for the CPU. */
static void burn_cpu(double seconds) {
	double end = clock_s(CLOCK_THREAD_CPUTIME_ID) + seconds;
	while (clock_s(CLOCK_THREAD_CPUTIME_ID) < end) {
		work_round();
	}
}

static void add_us(struct timespec *ts, uint64_t us) {
	ts->tv_sec += (time_t)(us / 1000000);
	ts->tv_nsec += (long)(us % 1000000) * 1000;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

static bool before(const struct timespec *a, const struct timespec *b) {
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

static _Noreturn void run_periodic(struct task_shared *shared, const struct options *opt,
		unsigned int seed) {
	double demand = (double)opt->util_ppm * (double)opt->period_us / 1e12;
	double jitter = (double)opt->jitter_us / 1e6;
	struct timespec release;
	clock_gettime(CLOCK_MONOTONIC, &release);
	for (;;) {
		double d = demand;
		if (jitter > 0) {
			d += jitter * (2.0 * (double)rand_r(&seed) / (double)RAND_MAX - 1.0);
		}
		burn_cpu(d);
		struct timespec deadline = release, now;
		add_us(&deadline, opt->period_us);
		clock_gettime(CLOCK_MONOTONIC, &now);
		shared->jobs++;
		if (before(&deadline, &now)) {
			shared->late++;
		}
		release = deadline;
		/* A player drops the frames it is already too late for. */
		for (;;) {
			struct timespec next = release;
			add_us(&next, opt->period_us);
			if (!before(&next, &now)) {
				break;
			}
			release = next;
			shared->skipped++;
		}
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &release, NULL) == EINTR) {
		}
	}
}

/* Forks one task, held until the start pipe closes. */
static bool start_task(struct task *task, const struct options *opt, const int start_pipe[2],
		unsigned int seed, const sigset_t *oldmask) {
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "qos-loadgen: fork: %s\n", strerror(errno));
		return false;
	}
	if (pid > 0) {
		task->pid = pid;
		return true;
	}
	sigprocmask(SIG_SETMASK, oldmask, NULL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent) {
		_exit(1);
	}
	close(start_pipe[1]);
	char byte;
	while (read(start_pipe[0], &byte, 1) < 0 && errno == EINTR) {
	}
	if (task->kind == TASK_HOG) {
		run_hog(task->shared);
	}
	run_periodic(task->shared, opt, seed);
}

static void stop_tasks(struct task *tasks, size_t n) {
	for (size_t i = 0; i < n; i++) {
		if (tasks[i].pid > 0) {
			kill(tasks[i].pid, SIGKILL);
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (tasks[i].pid <= 0) {
			continue;
		}
		struct rusage ru;
		while (wait4(tasks[i].pid, &tasks[i].status, 0, &ru) < 0 && errno == EINTR) {
		}
		tasks[i].cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
				(double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	}
}

/*
 * Joins or sets every task through the compositor.  False (after a message)
 * at the first refusal.  *confirmed gets the class the manager confirmed.
 */
static bool apply_qos(struct ipc_client *ipc, const struct options *opt, struct task *tasks,
		size_t n, char *confirmed, size_t confirmed_len) {
	for (size_t i = 0; i < n; i++) {
		struct json_object *req = ipc_client_command(opt->reserve ? "join" : "set");
		char target[32];
		snprintf(target, sizeof(target), "pid:%d", (int)tasks[i].pid);
		json_object_object_add(req, "target", json_object_new_string(target));
		json_object_object_add(req, opt->reserve ? "reserve" : "class",
				json_object_new_string(opt->reserve ? opt->reserve : opt->class));
		char err[256];
		struct json_object *reply =
				ipc_client_request(ipc, req, IPC_TIMEOUT_MS, NULL, NULL, err, sizeof(err));
		json_object_put(req);
		bool ok = reply && ipc_json_success(reply);
		if (!ok) {
			fprintf(stderr, "qos-loadgen: %s %s refused for task %zu (pid %d): %s\n",
					opt->reserve ? "reserve" : "class", opt->reserve ? opt->reserve : opt->class, i,
					(int)tasks[i].pid, reply ? ipc_json_string(reply, "error") : err);
		} else if (!opt->reserve) {
			snprintf(confirmed, confirmed_len, "%s", ipc_json_string(reply, "class"));
		}
		json_object_put(reply);
		if (!ok) {
			return false;
		}
	}
	return true;
}

/* Back to normal before the tasks die: a paused task must not stay frozen. */
static void restore_class(struct ipc_client *ipc, struct task *tasks, size_t n) {
	for (size_t i = 0; i < n; i++) {
		struct json_object *req = ipc_client_command("set");
		char target[32], err[256];
		snprintf(target, sizeof(target), "pid:%d", (int)tasks[i].pid);
		json_object_object_add(req, "target", json_object_new_string(target));
		json_object_object_add(req, "class", json_object_new_string("normal"));
		json_object_put(ipc_client_request(ipc, req, IPC_TIMEOUT_MS, NULL, NULL, err, sizeof(err)));
		json_object_put(req);
	}
}

static void progress(const struct options *opt, const struct task *tasks, size_t n, double t) {
	uint64_t jobs = 0, misses = 0, units = 0;
	for (size_t i = 0; i < n; i++) {
		units += tasks[i].shared->units;
		jobs += tasks[i].shared->jobs;
		misses += tasks[i].shared->late + tasks[i].shared->skipped;
	}
	bool tty = isatty(STDERR_FILENO);
	fprintf(stderr, "%sqos-loadgen: %6.1f s", tty ? "\r" : "", t);
	if (opt->hogs) {
		fprintf(stderr, "  %ld hog%s: %" PRIu64 "k rounds", opt->hogs, opt->hogs == 1 ? "" : "s",
				units / 1000);
	}
	if (opt->periodic) {
		fprintf(stderr, "  %ld periodic: %" PRIu64 " jobs, %" PRIu64 " missed", opt->periodic, jobs,
				misses);
	}
	fputs(tty ? "  " : "\n", stderr);
}

static struct json_object *summary(const struct options *opt, const struct task *tasks, size_t n,
		double elapsed, const char *confirmed_class) {
	struct json_object *root = json_object_new_object();
	json_object_object_add(root, "duration_s", json_object_new_double(elapsed));
	json_object_object_add(root, "hogs", json_object_new_int64(opt->hogs));
	json_object_object_add(root, "periodic", json_object_new_int64(opt->periodic));
	json_object_object_add(root, "reserve",
			opt->reserve ? json_object_new_string(opt->reserve) : NULL);
	json_object_object_add(root, "class",
			opt->class ? json_object_new_string(confirmed_class) : NULL);
	struct json_object *list = json_object_new_array();
	for (size_t i = 0; i < n; i++) {
		const struct task *t = &tasks[i];
		struct json_object *o = json_object_new_object();
		json_object_object_add(o, "index", json_object_new_int64((int64_t)i));
		json_object_object_add(o, "kind",
				json_object_new_string(t->kind == TASK_HOG ? "hog" : "periodic"));
		json_object_object_add(o, "pid", json_object_new_int(t->pid));
		json_object_object_add(o, "cpu_s", json_object_new_double(t->cpu_s));
		json_object_object_add(o, "cpu_share",
				json_object_new_double(elapsed > 0 ? t->cpu_s / elapsed : 0.0));
		if (t->kind == TASK_HOG) {
			json_object_object_add(o, "rounds", json_object_new_int64((int64_t)t->shared->units));
			json_object_object_add(o, "rounds_per_s",
					json_object_new_double(elapsed > 0 ? (double)t->shared->units / elapsed : 0));
		} else {
			uint64_t misses = t->shared->late + t->shared->skipped;
			json_object_object_add(o, "period_us", json_object_new_int64((int64_t)opt->period_us));
			json_object_object_add(o, "util", json_object_new_double((double)opt->util_ppm / 1e6));
			json_object_object_add(o, "jitter_us", json_object_new_int64((int64_t)opt->jitter_us));
			json_object_object_add(o, "jobs", json_object_new_int64((int64_t)t->shared->jobs));
			json_object_object_add(o, "late", json_object_new_int64((int64_t)t->shared->late));
			json_object_object_add(o, "skipped",
					json_object_new_int64((int64_t)t->shared->skipped));
			json_object_object_add(o, "misses", json_object_new_int64((int64_t)misses));
			json_object_object_add(o, "rate_hz",
					json_object_new_double(elapsed > 0 ? (double)t->shared->jobs / elapsed : 0));
			json_object_object_add(o, "expected_hz",
					json_object_new_double(1e6 / (double)opt->period_us));
		}
		json_object_object_add(o, "reserve",
				opt->reserve ? json_object_new_string(opt->reserve) : NULL);
		json_object_object_add(o, "class",
				opt->class ? json_object_new_string(confirmed_class) : NULL);
		json_object_array_add(list, o);
	}
	json_object_object_add(root, "tasks", list);
	return root;
}

/* Waits for the duration or a signal, printing progress once a second. */
static void wait_run(const struct options *opt, const struct task *tasks, size_t n, double start,
		const sigset_t *stop) {
	for (;;) {
		double t = clock_s(CLOCK_MONOTONIC) - start;
		double left = opt->duration_us ? (double)opt->duration_us / 1e6 - t : 1.0;
		if (left <= 0) {
			return;
		}
		double step = left < 1.0 ? left : 1.0;
		struct timespec ts = { .tv_sec = (time_t)step,
			.tv_nsec = (long)((step - (double)(time_t)step) * 1e9) };
		int sig = sigtimedwait(stop, NULL, &ts);
		if (sig > 0 || (opt->duration_us && step == left)) {
			return; /* main prints the last progress line */
		}
		if (!opt->quiet) {
			progress(opt, tasks, n, clock_s(CLOCK_MONOTONIC) - start);
		}
	}
}

int main(int argc, char *argv[]) {
	struct options opt;
	int status = parse_options(argc, argv, &opt);
	if (status >= 0) {
		return status;
	}
	struct ipc_client *ipc = NULL;
	if (opt.reserve || opt.class) {
		char err[256];
		ipc = ipc_client_connect(opt.socket, err, sizeof(err));
		if (!ipc) {
			fprintf(stderr, "qos-loadgen: %s\n", err);
			return 3;
		}
	}
	size_t n = (size_t)(opt.hogs + opt.periodic);
	struct task *tasks = calloc(n, sizeof(*tasks));
	struct task_shared *shared = mmap(NULL, n * sizeof(*shared), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int start_pipe[2] = { -1, -1 };
	status = EXIT_FAILURE;
	if (!tasks || shared == MAP_FAILED) {
		fprintf(stderr, "qos-loadgen: out of memory\n");
		goto out;
	}
	if (pipe2(start_pipe, O_CLOEXEC) < 0) {
		fprintf(stderr, "qos-loadgen: pipe: %s\n", strerror(errno));
		goto out;
	}
	sigset_t stop, oldmask;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	sigprocmask(SIG_BLOCK, &stop, &oldmask);
	size_t started = 0;
	for (; started < n; started++) {
		struct task *t = &tasks[started];
		t->kind = started < (size_t)opt.hogs ? TASK_HOG : TASK_PERIODIC;
		t->shared = &shared[started];
		if (!start_task(t, &opt, start_pipe, (unsigned int)(opt.seed + started), &oldmask)) {
			break;
		}
	}
	char confirmed[32] = "";
	if (started < n ||
			(ipc && !apply_qos(ipc, &opt, tasks, started, confirmed, sizeof(confirmed)))) {
		/* Nothing ran: the tasks die before their first round of work. */
		if (ipc && opt.class) {
			restore_class(ipc, tasks, started);
		}
		stop_tasks(tasks, started);
		goto out;
	}
	double start = clock_s(CLOCK_MONOTONIC);
	close(start_pipe[1]);
	start_pipe[1] = -1;
	wait_run(&opt, tasks, n, start, &stop);
	double elapsed = clock_s(CLOCK_MONOTONIC) - start;
	if (ipc && opt.class) {
		restore_class(ipc, tasks, n);
	}
	stop_tasks(tasks, n);
	if (!opt.quiet) {
		progress(&opt, tasks, n, elapsed);
		if (isatty(STDERR_FILENO)) {
			fputc('\n', stderr);
		}
	}
	struct json_object *json = summary(&opt, tasks, n, elapsed, confirmed);
	printf("%s\n", json_object_to_json_string_ext(json, JSON_C_TO_STRING_PLAIN));
	fflush(stdout);
	json_object_put(json);
	status = EXIT_SUCCESS;
out:
	for (int i = 0; i < 2; i++) {
		if (start_pipe[i] >= 0) {
			close(start_pipe[i]);
		}
	}
	if (shared != MAP_FAILED) {
		munmap(shared, n * sizeof(*shared));
	}
	free(tasks);
	ipc_client_destroy(ipc);
	return status;
}
