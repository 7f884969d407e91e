/*
 * qos-bench: the timing-critical workloads of the qos benchmarks
 * (tests/bench/qos_*.py).  A single-threaded process that never forks (but
 * in switchcost, which is never a member), so it can be a SCHED_DEADLINE
 * member.  periodic and timerlat print "ready ..." and wait for one line on
 * stdin before they start, so the caller can place them first; waker prints
 * "ready" once it is waking.
 *
 *   periodic WORK_PPM SECONDS PERIOD_US...
 *       For each period in turn: "ready PERIOD_US", wait for a line, then
 *       release a job every period (absolute timer) that burns WORK_PPM/1e6
 *       of the period in CPU time (this thread's clock).  A job misses when it
 *       completes after the end of its period.  Stops the attempt at the first
 *       miss and prints
 *           result PERIOD_US jobs missed worst_us wait_us lost_us switches
 *                  [JOB...]
 *       where wait/lost/switches describe the worst job and each JOB
 *       ("lost:waited:switches:stops:stolen", times in us) is one of the last four
 *       jobs up to the miss, oldest first.  waited: time runnable but not
 *       running in this kernel (schedstat run_delay); switches: times this
 *       kernel took the CPU from the job before it completed (throttled or
 *       preempted); lost: the rest of its response not explained by its CPU
 *       time or that wait (the wake-up path, interrupts, or a virtual CPU the
 *       host did not run); stops: times the job's busy loop saw its clock jump
 *       100 us or more, switched out or not (a host stall that this VM's
 *       kernel charges as the thread's CPU time shows only here); stolen:
 *       times one turn of that loop, two clock reads, cost the thread 100 us
 *       or more of its own CPU time.  The loop cannot use that much: it is
 *       time charged to the job that the job did not get (a host stall, or
 *       an interrupt, charged as CPU time), and under SCHED_DEADLINE it
 *       comes out of the budget.  A throttle that follows at once merges
 *       with it into one stop, so only this count tells them apart.
 *       Then it waits for a line: "again" repeats the period, "stop" ends,
 *       anything else moves on to the next period.
 *   timerlat COUNT MIN_MS MAX_MS SEED
 *       COUNT alarms at uniformly random delays; prints "lat NS" per alarm
 *       (wake-up time minus expiry time), then "done".
 *   spin
 *       Busy loop until killed.
 *   waker HZ
 *       Wakes HZ times a second and does nothing else, the way qos-helper
 *       waits (poll on stdin and an epoll fd holding a timerfd, then
 *       epoll_wait and a read), until stdin closes: the cost of merely
 *       waking as often as the manager does (tests/bench/qos_overhead.py).
 *   switchcost PAIRS IDLE_FILE
 *       What the kernel operations of the manager's fallback switches cost
 *       this process, without the manager: PAIRS times, writes 1 and then 0
 *       to IDLE_FILE (a scratch group's cpu.idle, holding a busy child of its
 *       own while it runs; "-" for none), and moves another busy child from
 *       SCHED_DEADLINE (100 us / 10 ms) to SCHED_OTHER and back.  Each
 *       operation comes 1 ms after the last, as the manager's do.  Prints
 *       "switchcost IDLE_PAIR_US SETATTR_PAIR_US" (its own CPU time per pair;
 *       "-" for what it could not do).
 *   reclaim SECONDS
 *       Why the manager, not the kernel, switches an optimistic reserve to
 *       other: the one way SCHED_DEADLINE lets a thread run past its runtime,
 *       SCHED_FLAG_RECLAIM (GRUB), takes the time from time-sharing tasks,
 *       where "other" would share it with them.  With a busy loop pinned to
 *       each CPU, this thread runs busy for SECONDS as SCHED_DEADLINE
 *       100 us / 10 ms, first plain, then with the flag.  Prints
 *       "reclaim HARD_PCT RECLAIM_PCT LOOP_HARD_PCT LOOP_RECLAIM_PCT": its
 *       share of a CPU each time, and the busy loops' mean share of theirs.
 *       Under "other" it would get about half a CPU, the loops the rest.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(clockid_t clock) {
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t_ns) {
	struct timespec ts = { .tv_sec = (time_t)(t_ns / 1000000000u),
		.tv_nsec = (long)(t_ns % 1000000000u) };
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
		;
	}
}

static bool wait_go(void) {
	char line[64];
	if (!fgets(line, sizeof(line), stdin)) {
		return false;
	}
	return strncmp(line, "stop", 4) != 0;
}

struct sched_stat {
	uint64_t wait_ns; /* runnable but not running (run_delay) */
	uint64_t arrivals; /* times this thread was given a CPU (pcount) */
};

/*
 * Read through an fd kept open: the job pays for it out of its reservation,
 * and an fopen() per job costs tens of microseconds, sometimes far more.
 */
static struct sched_stat sched_stat_now(int fd) {
	char buf[128];
	unsigned long long run = 0, wait = 0, count = 0;
	ssize_t n = fd >= 0 ? pread(fd, buf, sizeof(buf) - 1, 0) : -1;
	if (n > 0) {
		buf[n] = '\0';
		sscanf(buf, "%llu %llu %llu", &run, &wait, &count);
	}
	return (struct sched_stat){ .wait_ns = wait, .arrivals = count };
}

/* Gaps this long in a busy loop mean it did not run: switched out, or stalled. */
#define GAP_NS 100000u

struct burn_note {
	uint64_t stops; /* the wall clock jumped: not running, or stalled */
	uint64_t stolen; /* the thread's own clock jumped: charged, not used */
};

/* Burns cpu_ns of this thread's CPU time. */
static struct burn_note burn(uint64_t cpu_ns) {
	struct burn_note n = { 0 };
	uint64_t start = now_ns(CLOCK_THREAD_CPUTIME_ID), cpu_last = start;
	uint64_t last = now_ns(CLOCK_MONOTONIC);
	for (;;) {
		uint64_t c = now_ns(CLOCK_THREAD_CPUTIME_ID);
		if (c - cpu_last >= GAP_NS) {
			n.stolen++;
		}
		cpu_last = c;
		if (c - start >= cpu_ns) {
			break;
		}
		uint64_t t = now_ns(CLOCK_MONOTONIC);
		if (t - last >= GAP_NS) {
			n.stops++;
		}
		last = t;
	}
	return n;
}

struct job_note {
	uint64_t lost_ns, wait_ns, switches, stops, stolen;
};

#define JOB_HISTORY 4

static int periodic(int argc, char **argv) {
	if (argc < 3) {
		return 2;
	}
	uint64_t work_ppm = strtoull(argv[0], NULL, 10);
	double seconds = atof(argv[1]);
	int stat_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
	for (int i = 2; i < argc; i++) {
		uint64_t period_ns = strtoull(argv[i], NULL, 10) * 1000u;
		uint64_t work_ns = period_ns * work_ppm / 1000000u;
		uint64_t jobs = (uint64_t)(seconds * 1e9 / (double)period_ns);
		printf("ready %s\n", argv[i]);
		fflush(stdout);
		if (!wait_go()) {
			break;
		}
		uint64_t start = now_ns(CLOCK_MONOTONIC) + period_ns;
		uint64_t done = 0, missed = 0, worst = 0;
		struct job_note worst_note = { 0 }, hist[JOB_HISTORY] = { 0 };
		struct sched_stat before = sched_stat_now(stat_fd);
		for (uint64_t k = 0; k < jobs; k++) {
			uint64_t release = start + k * period_ns;
			/* A late job runs on into the next one without a wake-up. */
			bool sleeps = now_ns(CLOCK_MONOTONIC) < release;
			sleep_until(release);
			uint64_t cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
			struct burn_note b = burn(work_ns);
			uint64_t resp = now_ns(CLOCK_MONOTONIC) - release;
			uint64_t cpu = now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
			struct sched_stat after = sched_stat_now(stat_fd);
			uint64_t wait = after.wait_ns - before.wait_ns;
			uint64_t arrivals = after.arrivals - before.arrivals;
			before = after;
			struct job_note n = {
				.lost_ns = resp > cpu + wait ? resp - cpu - wait : 0,
				.wait_ns = wait,
				.switches = arrivals > (sleeps ? 1u : 0u) ? arrivals - (sleeps ? 1u : 0u) : 0,
				.stops = b.stops,
				.stolen = b.stolen,
			};
			hist[k % JOB_HISTORY] = n;
			if (resp > worst) {
				worst = resp;
				worst_note = n;
			}
			done++;
			if (resp > period_ns) {
				missed++;
				break;
			}
		}
		printf("result %s %llu %llu %llu %llu %llu %llu", argv[i], (unsigned long long)done,
				(unsigned long long)missed, (unsigned long long)(worst / 1000u),
				(unsigned long long)(worst_note.wait_ns / 1000u),
				(unsigned long long)(worst_note.lost_ns / 1000u),
				(unsigned long long)worst_note.switches);
		uint64_t first = done > JOB_HISTORY ? done - JOB_HISTORY : 0;
		for (uint64_t k = first; k < done; k++) {
			const struct job_note *h = &hist[k % JOB_HISTORY];
			printf(" %llu:%llu:%llu:%llu:%llu", (unsigned long long)(h->lost_ns / 1000u),
					(unsigned long long)(h->wait_ns / 1000u), (unsigned long long)h->switches,
					(unsigned long long)h->stops, (unsigned long long)h->stolen);
		}
		printf("\n");
		fflush(stdout);
		char line[64];
		if (!fgets(line, sizeof(line), stdin) || strncmp(line, "stop", 4) == 0) {
			break;
		}
		if (strncmp(line, "again", 5) == 0) {
			i--;
		}
	}
	if (stat_fd >= 0) {
		close(stat_fd);
	}
	return 0;
}

static int timerlat(int argc, char **argv) {
	if (argc < 4) {
		return 2;
	}
	long count = atol(argv[0]);
	uint64_t min_ms = strtoull(argv[1], NULL, 10), max_ms = strtoull(argv[2], NULL, 10);
	srand48(atol(argv[3]));
	printf("ready\n");
	fflush(stdout);
	if (!wait_go()) {
		return 0;
	}
	uint64_t *lat = calloc((size_t)count, sizeof(*lat));
	if (!lat) {
		return 1;
	}
	for (long i = 0; i < count; i++) {
		uint64_t delay_ms = min_ms + (uint64_t)(drand48() * (double)(max_ms - min_ms + 1));
		uint64_t target = now_ns(CLOCK_MONOTONIC) + delay_ms * 1000000u;
		sleep_until(target);
		lat[i] = now_ns(CLOCK_MONOTONIC) - target;
	}
	for (long i = 0; i < count; i++) {
		printf("lat %llu\n", (unsigned long long)lat[i]);
	}
	printf("done\n");
	fflush(stdout);
	free(lat);
	return 0;
}

static int waker(int argc, char **argv) {
	double hz = argc >= 1 ? atof(argv[0]) : 0;
	if (hz <= 0 || hz > 100000) {
		return 2;
	}
	int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN };
	if (tfd < 0 || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev) < 0) {
		return 1;
	}
	uint64_t ns = (uint64_t)(1e9 / hz);
	struct itimerspec its = {
		.it_interval = { .tv_sec = (time_t)(ns / 1000000000u),
				.tv_nsec = (long)(ns % 1000000000u) },
	};
	its.it_value = its.it_interval;
	if (timerfd_settime(tfd, 0, &its, NULL) < 0) {
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		struct pollfd fds[2] = {
			{ .fd = 0, .events = POLLIN },
			{ .fd = ep, .events = POLLIN },
		};
		if (poll(fds, 2, -1) < 0 && errno != EINTR) {
			return 1;
		}
		if (fds[1].revents & POLLIN) {
			struct epoll_event out[4];
			uint64_t v;
			if (epoll_wait(ep, out, 4, 0) > 0 && read(tfd, &v, sizeof(v)) < 0 && errno != EAGAIN) {
				return 1;
			}
		}
		if (fds[0].revents & (POLLIN | POLLHUP)) {
			return 0;
		}
	}
}

/* struct sched_attr, which Debian 12's headers do not give to user space. */
struct bench_sched_attr {
	uint32_t size, sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime, sched_deadline, sched_period;
};

static void print_pair(double cpu_ns, long pairs, bool ok) {
	if (ok) {
		printf(" %.2f", cpu_ns / 1000.0 / (double)pairs);
	} else {
		printf(" -");
	}
}

static pid_t spin_child(void) {
	pid_t parent = getpid();
	pid_t child = fork();
	if (child == 0) {
		/* Not a busy loop left behind should switchcost be killed. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) {
			_exit(1);
		}
		for (volatile unsigned long n = 0;; n++) {
			;
		}
	}
	return child;
}

static void end_child(pid_t child) {
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
}

/*
 * The manager meets each operation fresh from a sleep, with its caches cold,
 * and on a busy task: a switch changes the class or the group weight of a
 * thread that is running or queued.  Timed that way, each alone, less the
 * cost of the two clock reads around it.
 */
static const struct timespec op_gap = { .tv_nsec = 1000000 };

static uint64_t op_start(void) {
	nanosleep(&op_gap, NULL);
	return now_ns(CLOCK_THREAD_CPUTIME_ID);
}

static uint64_t clock_pair_ns(long n) {
	uint64_t sum = 0;
	for (long i = 0; i < n; i++) {
		uint64_t t0 = op_start();
		sum += now_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
	}
	return sum;
}

/* Moves a busy child of ours into the group whose cpu.idle is idle_path. */
static bool fill_group(const char *idle_path, pid_t child) {
	char procs[4096];
	const char *slash = strrchr(idle_path, '/');
	if (!slash || child <= 0 ||
			snprintf(procs, sizeof(procs), "%.*s/cgroup.procs", (int)(slash - idle_path),
					idle_path) >= (int)sizeof(procs)) {
		return false;
	}
	int fd = open(procs, O_WRONLY | O_CLOEXEC);
	bool ok = fd >= 0 && dprintf(fd, "%d", child) > 0;
	if (fd >= 0) {
		close(fd);
	}
	return ok;
}

static bool idle_pairs(const char *idle_path, long pairs, uint64_t *ns) {
	pid_t child = spin_child();
	int fd = open(idle_path, O_WRONLY | O_CLOEXEC);
	bool ok = fd >= 0 && fill_group(idle_path, child);
	for (long i = 0; ok && i < pairs; i++) {
		for (int k = 0; ok && k < 2; k++) {
			uint64_t t0 = op_start();
			ok = pwrite(fd, k ? "0" : "1", 1, 0) == 1;
			*ns += now_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
		}
	}
	if (fd >= 0) {
		close(fd);
	}
	end_child(child); /* reaped: the group is empty again for its owner to remove */
	return ok;
}

static bool setattr_pairs(long pairs, uint64_t *ns) {
	struct bench_sched_attr dl = { .size = sizeof(dl),
		.sched_policy = 6 /* DEADLINE */,
		.sched_flags = 1 /* RESET_ON_FORK */,
		.sched_runtime = 100000,
		.sched_deadline = 10000000,
		.sched_period = 10000000 };
	struct bench_sched_attr other = { .size = sizeof(other), .sched_policy = 0 };
	pid_t child = spin_child();
	bool ok = child > 0;
	for (long i = 0; ok && i < pairs; i++) {
		for (int k = 0; ok && k < 2; k++) {
			uint64_t t0 = op_start();
			ok = syscall(SYS_sched_setattr, child, k ? &other : &dl, 0) == 0;
			*ns += now_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
		}
	}
	end_child(child);
	return ok;
}

/* A busy child of ours that runs on that CPU alone. */
static pid_t pinned_spin_child(int cpu) {
	pid_t child = spin_child();
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (child > 0 && sched_setaffinity(child, sizeof(set), &set) != 0) {
		end_child(child);
		return -1;
	}
	return child;
}

static uint64_t process_cpu_ns(pid_t pid) {
	clockid_t clock;
	struct timespec ts;
	if (clock_getcpuclockid(pid, &clock) != 0 || clock_gettime(clock, &ts) != 0) {
		return 0;
	}
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * This thread's share of a CPU, busy for secs under SCHED_DEADLINE with
 * those flags, and the loops' mean share of theirs; false if the kernel
 * refused the class.
 */
static bool deadline_share(uint64_t flags, double secs, const pid_t *loops, int n, double *own,
		double *theirs) {
	struct bench_sched_attr dl = { .size = sizeof(dl),
		.sched_policy = 6 /* DEADLINE */,
		.sched_flags = 1 /* RESET_ON_FORK */ | flags,
		.sched_runtime = 100000,
		.sched_deadline = 10000000,
		.sched_period = 10000000 };
	struct bench_sched_attr other = { .size = sizeof(other), .sched_policy = 0 };
	uint64_t loops0 = 0, loops1 = 0;
	for (int i = 0; i < n; i++) {
		loops0 += process_cpu_ns(loops[i]);
	}
	if (syscall(SYS_sched_setattr, 0, &dl, 0) != 0) {
		return false;
	}
	uint64_t t0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	uint64_t span = (uint64_t)(secs * 1e9), t1;
	while ((t1 = now_ns(CLOCK_MONOTONIC)) - t0 < span) {
		;
	}
	uint64_t c1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	/* Running, so never throttled here: the kernel keeps no bandwidth of ours. */
	syscall(SYS_sched_setattr, 0, &other, 0);
	for (int i = 0; i < n; i++) {
		loops1 += process_cpu_ns(loops[i]);
	}
	*own = 100.0 * (double)(c1 - c0) / (double)(t1 - t0);
	*theirs = 100.0 * (double)(loops1 - loops0) / (double)(t1 - t0) / n;
	return true;
}

static int reclaim(int argc, char **argv) {
	double secs = argc >= 1 ? atof(argv[0]) : 0;
	long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (!(secs > 0 && secs <= 60) || ncpus < 1 || ncpus > 64) {
		return 2;
	}
	pid_t loops[64];
	int n = 0;
	for (; n < ncpus; n++) {
		if ((loops[n] = pinned_spin_child(n)) <= 0) {
			break;
		}
	}
	double own[2] = { 0 }, theirs[2] = { 0 };
	bool ok[2] = { false, false };
	if (n == ncpus) {
		ok[0] = deadline_share(0, secs, loops, n, &own[0], &theirs[0]);
		/*
		 * Past our 0-lag time: until then the kernel counts the
		 * bandwidth we left as still active, and reclaiming yields to it.
		 */
		nanosleep(&(struct timespec){ .tv_nsec = 200000000 }, NULL);
		ok[1] = deadline_share(2 /* SCHED_FLAG_RECLAIM */, secs, loops, n, &own[1], &theirs[1]);
	}
	for (int i = 0; i < n; i++) {
		end_child(loops[i]);
	}
	printf("reclaim");
	for (int i = 0; i < 4; i++) {
		if (ok[i % 2]) {
			printf(" %.1f", i < 2 ? own[i] : theirs[i - 2]);
		} else {
			printf(" -");
		}
	}
	printf("\n");
	return ok[0] && ok[1] ? 0 : 1;
}

static int switchcost(int argc, char **argv) {
	long pairs = argc >= 1 ? atol(argv[0]) : 0;
	if (pairs <= 0 || pairs > 100000 || argc < 2) {
		return 2;
	}
	uint64_t idle_ns = 0, set_ns = 0;
	bool idle_ok = strcmp(argv[1], "-") != 0 && idle_pairs(argv[1], pairs, &idle_ns);
	bool set_ok = setattr_pairs(pairs, &set_ns);
	uint64_t reads = clock_pair_ns(2 * pairs);
	idle_ns = idle_ns > reads ? idle_ns - reads : 0;
	set_ns = set_ns > reads ? set_ns - reads : 0;
	printf("switchcost");
	print_pair((double)idle_ns, pairs, idle_ok);
	print_pair((double)set_ns, pairs, set_ok);
	printf("\n");
	return 0;
}

int main(int argc, char **argv) {
	if (argc >= 2 && strcmp(argv[1], "periodic") == 0) {
		return periodic(argc - 2, argv + 2);
	}
	if (argc >= 2 && strcmp(argv[1], "timerlat") == 0) {
		return timerlat(argc - 2, argv + 2);
	}
	if (argc >= 2 && strcmp(argv[1], "waker") == 0) {
		return waker(argc - 2, argv + 2);
	}
	if (argc >= 2 && strcmp(argv[1], "switchcost") == 0) {
		return switchcost(argc - 2, argv + 2);
	}
	if (argc >= 2 && strcmp(argv[1], "reclaim") == 0) {
		return reclaim(argc - 2, argv + 2);
	}
	if (argc >= 2 && strcmp(argv[1], "spin") == 0) {
		for (volatile unsigned long n = 0;; n++) {
			;
		}
	}
	fprintf(stderr,
			"usage: %s periodic WORK_PPM SECONDS PERIOD_US... | "
			"timerlat COUNT MIN_MS MAX_MS SEED | spin | waker HZ | switchcost PAIRS IDLE_FILE | "
			"reclaim SECONDS\n",
			argv[0]);
	return 2;
}
