/*
 * qos-bench: the timing-critical workloads of the qos benchmarks
 * (tests/bench/qos_*.py).  A single-threaded process that never forks, so it
 * can be a SCHED_DEADLINE member.  Every mode prints "ready ..." and waits for
 * one line on stdin before it starts, so the caller can place it first.
 *
 *   periodic WORK_PPM SECONDS PERIOD_US...
 *       For each period in turn: "ready PERIOD_US", wait for a line, then
 *       release a job every period (absolute timer) that burns WORK_PPM/1e6
 *       of the period in CPU time (this thread's clock).  A job misses when it
 *       completes after the end of its period.  Stops the attempt at the first
 *       miss; prints "result PERIOD_US jobs missed max_response_us" and moves
 *       on to the next period, or stops when the caller answers "stop".
 *       Appended: for the worst job, how long it waited runnable for a CPU in
 *       this kernel (schedstat run_delay) and the rest of its response not
 *       explained by its own CPU time or that wait ("lost": interrupts, or a
 *       virtual CPU the host did not run).
 *   timerlat COUNT MIN_MS MAX_MS SEED
 *       COUNT alarms at uniformly random delays; prints "lat NS" per alarm
 *       (wake-up time minus expiry time), then "done".
 *   spin
 *       Busy loop until killed.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t now_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t_ns)
{
	struct timespec ts = { .tv_sec = (time_t)(t_ns / 1000000000u),
		.tv_nsec = (long)(t_ns % 1000000000u) };
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static bool wait_go(void)
{
	char line[64];
	if (!fgets(line, sizeof(line), stdin))
		return false;
	return strncmp(line, "stop", 4) != 0;
}

/* Cumulative time this thread spent runnable but waiting for a CPU. */
static uint64_t run_delay_ns(void)
{
	char buf[128];
	FILE *f = fopen("/proc/thread-self/schedstat", "re");
	unsigned long long run = 0, wait = 0;
	if (f) {
		if (fgets(buf, sizeof(buf), f))
			sscanf(buf, "%llu %llu", &run, &wait);
		fclose(f);
	}
	return wait;
}

static void burn(uint64_t cpu_ns)
{
	uint64_t start = now_ns(CLOCK_THREAD_CPUTIME_ID);
	while (now_ns(CLOCK_THREAD_CPUTIME_ID) - start < cpu_ns)
		;
}

static int periodic(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	uint64_t work_ppm = strtoull(argv[0], NULL, 10);
	double seconds = atof(argv[1]);
	for (int i = 2; i < argc; i++) {
		uint64_t period_ns = strtoull(argv[i], NULL, 10) * 1000u;
		uint64_t work_ns = period_ns * work_ppm / 1000000u;
		uint64_t jobs = (uint64_t)(seconds * 1e9 / (double)period_ns);
		printf("ready %s\n", argv[i]);
		fflush(stdout);
		if (!wait_go())
			return 0;
		uint64_t start = now_ns(CLOCK_MONOTONIC) + period_ns;
		uint64_t done = 0, missed = 0, worst = 0, worst_wait = 0, worst_lost = 0;
		uint64_t wait_before = run_delay_ns();
		for (uint64_t k = 0; k < jobs; k++) {
			uint64_t release = start + k * period_ns;
			sleep_until(release);
			uint64_t cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
			burn(work_ns);
			uint64_t resp = now_ns(CLOCK_MONOTONIC) - release;
			uint64_t cpu = now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
			uint64_t wait_after = run_delay_ns();
			uint64_t wait = wait_after - wait_before;
			wait_before = wait_after;
			if (resp > worst) {
				worst = resp;
				worst_wait = wait;
				worst_lost = resp > cpu + wait ? resp - cpu - wait : 0;
			}
			done++;
			if (resp > period_ns) {
				missed++;
				break;
			}
		}
		printf("result %s %llu %llu %llu %llu %llu\n", argv[i], (unsigned long long)done,
			(unsigned long long)missed, (unsigned long long)(worst / 1000u),
			(unsigned long long)(worst_wait / 1000u),
			(unsigned long long)(worst_lost / 1000u));
		fflush(stdout);
	}
	return 0;
}

static int timerlat(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	long count = atol(argv[0]);
	uint64_t min_ms = strtoull(argv[1], NULL, 10), max_ms = strtoull(argv[2], NULL, 10);
	srand48(atol(argv[3]));
	printf("ready\n");
	fflush(stdout);
	if (!wait_go())
		return 0;
	uint64_t *lat = calloc((size_t)count, sizeof(*lat));
	if (!lat)
		return 1;
	for (long i = 0; i < count; i++) {
		uint64_t delay_ms = min_ms + (uint64_t)(drand48() * (double)(max_ms - min_ms + 1));
		uint64_t target = now_ns(CLOCK_MONOTONIC) + delay_ms * 1000000u;
		sleep_until(target);
		lat[i] = now_ns(CLOCK_MONOTONIC) - target;
	}
	for (long i = 0; i < count; i++)
		printf("lat %llu\n", (unsigned long long)lat[i]);
	printf("done\n");
	fflush(stdout);
	free(lat);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "periodic") == 0)
		return periodic(argc - 2, argv + 2);
	if (argc >= 2 && strcmp(argv[1], "timerlat") == 0)
		return timerlat(argc - 2, argv + 2);
	if (argc >= 2 && strcmp(argv[1], "spin") == 0) {
		for (volatile unsigned long n = 0;; n++)
			;
	}
	fprintf(stderr, "usage: %s periodic WORK_PPM SECONDS PERIOD_US... | "
		"timerlat COUNT MIN_MS MAX_MS SEED | spin\n", argv[0]);
	return 2;
}
