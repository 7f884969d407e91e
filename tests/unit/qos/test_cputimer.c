/*
 * qos/kernel/cputimer.c on a real CPU clock (a busy child of this test; no
 * privileges needed): the clock a relative re-arm gives back lies between
 * reads of the clock taken before and after it, the timer is then armed
 * that far past it, and a timer that fired or was disarmed gives nothing.
 */
#include <signal.h>
#include <sys/prctl.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "qos/kernel/cputimer.h"

#define SIGNO (SIGRTMAX - 1)

static uint64_t clock_of(clockid_t clock) {
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t left_ns(timer_t t) {
	struct itimerspec its;
	timer_gettime(t, &its);
	return (uint64_t)its.it_value.tv_sec * 1000000000u + (uint64_t)its.it_value.tv_nsec;
}

static void test_rearm_gives_back_the_clock(clockid_t clock, timer_t t) {
	uint64_t at = clock_of(clock) + 5000000000u;
	CHECK(qos_cputimer_arm(t, at) == 0);
	for (int i = 0; i < 50; i++) {
		usleep(2000); /* the child's clock moves */
		uint64_t rel = 3000000000u + (uint64_t)i;
		uint64_t before = clock_of(clock), now = 0;
		bool ok = qos_cputimer_rearm_after(t, at, rel, &now);
		uint64_t after = clock_of(clock);
		CHECK(ok);
		CHECK(before <= now && now <= after);
		/* Armed at now + rel: what is left, seen a moment later, is at most rel. */
		uint64_t left = left_ns(t), seen = clock_of(clock);
		CHECK(left <= rel && now + rel <= seen + left);
		at = now + rel;
	}
}

static void test_fired_or_disarmed_gives_nothing(clockid_t clock, timer_t t, int sfd) {
	uint64_t now = 0;
	CHECK(qos_cputimer_arm(t, 0) == 0);
	CHECK(!qos_cputimer_rearm_after(t, 0, 10000000000u, &now));
	/* Said to be armed, but disarmed in truth: no clock comes back. */
	CHECK(qos_cputimer_arm(t, 0) == 0);
	CHECK(!qos_cputimer_rearm_after(t, clock_of(clock) + 1000000000u, 10000000000u, &now));
	/* Fired: the kernel disarmed it. */
	uint64_t at = clock_of(clock) + 1000000;
	CHECK(qos_cputimer_arm(t, at) == 0);
	uint32_t cookie = 0;
	for (int i = 0; i < 200 && qos_cputimer_read(sfd, &cookie, 1) == 0; i++) {
		usleep(5000);
	}
	CHECK_EQ_U(cookie, 7);
	CHECK(clock_of(clock) >= at);
	CHECK(!qos_cputimer_rearm_after(t, at, 1000000, &now));
	CHECK(qos_cputimer_arm(t, 0) == 0);
}

int main(void) {
	int sfd = qos_cputimer_open(SIGNO);
	CHECK(sfd >= 0);
	pid_t child = fork();
	if (child == 0) {
		/* Never outlives a crashed test: it would take a CPU from the rest. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1) {
			_exit(0);
		}
		for (volatile unsigned long n = 0;; n++) {
			;
		}
	}
	CHECK(child > 0);
	timer_t t;
	clockid_t clock;
	if (child > 0 && sfd >= 0 && clock_getcpuclockid(child, &clock) == 0 &&
			qos_cputimer_create(child, SIGNO, 7, &t)) {
		test_rearm_gives_back_the_clock(clock, t);
		test_fired_or_disarmed_gives_nothing(clock, t, sfd);
		qos_cputimer_delete(t);
	} else {
		fprintf(stderr, "no CPU-clock timer on the child\n");
		check_failures++;
	}
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	if (sfd >= 0) {
		close(sfd);
	}
	return check_report("test_cputimer");
}
