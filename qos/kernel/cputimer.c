#include "qos/kernel/cputimer.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

int qos_cputimer_open(int signo) {
	sigset_t set;
	sigemptyset(&set);
	if (sigaddset(&set, signo) < 0) {
		return -1;
	}
	int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0) {
		return -1;
	}
	/* Unblocked, the default action of a real-time signal ends the process. */
	int e = pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (e) {
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

bool qos_cputimer_create(pid_t pid, int signo, uint32_t cookie, timer_t *out) {
	clockid_t clock;
	int e = clock_getcpuclockid(pid, &clock);
	if (e) {
		errno = e;
		return false;
	}
	struct sigevent ev;
	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = signo;
	ev.sigev_value.sival_int = (int)cookie;
	ev._sigev_un._tid = gettid();
	return timer_create(clock, &ev, out) == 0;
}

static struct timespec to_timespec(uint64_t ns) {
	return (struct timespec){ .tv_sec = (time_t)(ns / 1000000000u),
		.tv_nsec = (long)(ns % 1000000000u) };
}

int qos_cputimer_arm(timer_t t, uint64_t at_ns) {
	struct itimerspec its = { .it_value = to_timespec(at_ns) };
	return timer_settime(t, TIMER_ABSTIME, &its, NULL) == 0 ? 0 : -errno;
}

bool qos_cputimer_rearm_after(timer_t t, uint64_t armed_at_ns, uint64_t rel_ns,
		uint64_t *clock_ns) {
	struct itimerspec its = { .it_value = to_timespec(rel_ns ? rel_ns : 1) }, old;
	if (!armed_at_ns || timer_settime(t, 0, &its, &old) != 0) {
		return false;
	}
	/*
	 * The kernel samples the clock once, for the old time to go and for
	 * the new expiry.  A timer past its expiry but not fired yet says 1 ns.
	 */
	uint64_t left = (uint64_t)old.it_value.tv_sec * 1000000000u + (uint64_t)old.it_value.tv_nsec;
	if (left <= 1 || left > armed_at_ns) {
		return false;
	}
	*clock_ns = armed_at_ns - left;
	return true;
}

void qos_cputimer_delete(timer_t t) {
	timer_delete(t);
}

size_t qos_cputimer_read(int fd, uint32_t *cookies, size_t max) {
	struct signalfd_siginfo si[16];
	if (max > sizeof(si) / sizeof(si[0])) {
		max = sizeof(si) / sizeof(si[0]);
	}
	ssize_t n = read(fd, si, max * sizeof(si[0]));
	if (n <= 0) {
		return 0;
	}
	size_t got = (size_t)n / sizeof(si[0]);
	for (size_t i = 0; i < got; i++) {
		cookies[i] = (uint32_t)si[i].ssi_int;
	}
	return got;
}
