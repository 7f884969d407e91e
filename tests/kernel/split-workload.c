/*
 * split-workload: a multi-threaded member for the tests of a qos slice
 * divided among threads by use (tests/kernel/test_split.py).
 *
 *   split-workload THREADS PERIOD_MS BUSY_MS WAKE_MS [EVERY]
 *
 * Starts THREADS threads (the main thread among them).  One runs BUSY_MS of
 * its own CPU time in every PERIOD_MS, or in one period of every EVERY (a
 * burst, as a video decoder's threads take turns with frames; a late job
 * skips the boundaries it missed); the rest sleep.  SIGUSR1 wakes one sleeper, which from then on
 * runs WAKE_MS in every period; the others sleep for good.  SIGUSR2 starts
 * one more sleeper and prints "new TID".  Prints "busy TID", "waker TID",
 * "ready".
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long period_ns;
static long every = 1;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t woken = PTHREAD_COND_INITIALIZER;
static int wake;

static int64_t ns_of(clockid_t clock) {
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Runs work_ns of this thread's CPU time each `each` periods, for good. */
static void periodic(int64_t work_ns, long each) {
	int64_t start = ns_of(CLOCK_MONOTONIC);
	for (;;) {
		int64_t end = ns_of(CLOCK_THREAD_CPUTIME_ID) + work_ns;
		while (ns_of(CLOCK_THREAD_CPUTIME_ID) < end) {
		}
		int64_t now = ns_of(CLOCK_MONOTONIC);
		int64_t next = start + ((now - start) / period_ns + each) * period_ns;
		struct timespec ts = { .tv_sec = next / 1000000000, .tv_nsec = next % 1000000000 };
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	}
}

static void *busy(void *arg) {
	printf("busy %ld\n", (long)syscall(SYS_gettid));
	fflush(stdout);
	periodic((int64_t)(intptr_t)arg, every);
	return NULL;
}

static void *sleeper(void *arg) {
	if (arg) {
		printf("new %ld\n", (long)syscall(SYS_gettid));
		fflush(stdout);
	}
	for (;;) {
		sleep(1000);
	}
	return arg;
}

static void *waker(void *arg) {
	printf("waker %ld\n", (long)syscall(SYS_gettid));
	fflush(stdout);
	pthread_mutex_lock(&lock);
	while (!wake) {
		pthread_cond_wait(&woken, &lock);
	}
	pthread_mutex_unlock(&lock);
	periodic((int64_t)(intptr_t)arg, 1);
	return NULL;
}

int main(int argc, char **argv) {
	if (argc != 5 && argc != 6) {
		fprintf(stderr, "usage: split-workload THREADS PERIOD_MS BUSY_MS WAKE_MS [EVERY]\n");
		return 2;
	}
	int n = atoi(argv[1]);
	period_ns = atol(argv[2]) * 1000000L;
	int64_t busy_ns = (int64_t)(atof(argv[3]) * 1e6);
	int64_t wake_ns = (int64_t)(atof(argv[4]) * 1e6);
	if (argc == 6) {
		every = atol(argv[5]);
	}
	if (n < 3 || period_ns <= 0 || busy_ns <= 0 || wake_ns <= 0 || every < 1) {
		fprintf(stderr, "split-workload: bad arguments\n");
		return 2;
	}
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &set, NULL); /* the threads inherit the mask */
	pthread_t t;
	if (pthread_create(&t, NULL, busy, (void *)(intptr_t)busy_ns) ||
			pthread_create(&t, NULL, waker, (void *)(intptr_t)wake_ns)) {
		return 1;
	}
	for (int i = 3; i < n; i++) {
		if (pthread_create(&t, NULL, sleeper, NULL)) {
			return 1;
		}
	}
	usleep(100000);
	printf("ready\n");
	fflush(stdout);
	int sig;
	while (sigwait(&set, &sig) == 0) {
		if (sig == SIGUSR2) {
			if (pthread_create(&t, NULL, sleeper, &period_ns)) {
				return 1;
			}
			continue;
		}
		pthread_mutex_lock(&lock);
		wake = 1;
		pthread_mutex_unlock(&lock);
		pthread_cond_signal(&woken);
	}
	return 0;
}
