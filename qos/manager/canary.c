/*
 * The starvation watchdog's canary and its check in the manager's loop.  A
 * canary thread at normal priority ticks an eventfd once a second; if the
 * manager hears nothing for watchdog_timeout_us, normal tasks are being
 * starved, so every real-time reserve is demoted to other and new
 * real-time grants are refused for watchdog_cooldown_us (watchdog.c holds
 * that state machine).  The check runs in the manager's own loop, which
 * must therefore not run at a lower priority than its real-time members.
 * Manager layer (see qos/manager/canary.h).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "qos/policy/core.h"
#include "qos/manager/canary.h"
#include "qos/manager/configure.h"
#include "qos/kernel/journal.h"
#include "qos/kernel/sys.h"

static void *canary_main(void *data) {
	struct qos_manager *mgr = data;
	struct sched_param sp = { 0 };
	pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);
	/*
	 * Told to stop through an eventfd rather than cancelled: unwinding a
	 * cancelled thread trips AddressSanitizer's own thread teardown
	 * (a stack-buffer-underflow in its sigaltstack interceptor, GCC 12).
	 */
	struct pollfd stop = { .fd = mgr->canary.stop_fd, .events = POLLIN };
	for (;;) {
		int n = poll(&stop, 1, 1000);
		if (n > 0 || (n < 0 && errno != EINTR)) {
			break;
		}
		uint64_t one = 1;
		if (n == 0 && write(mgr->canary.fd, &one, sizeof(one)) < 0 && errno == EBADF) {
			break;
		}
	}
	return NULL;
}

bool qos_canary_start(struct qos_manager *mgr) {
	mgr->canary.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (mgr->canary.fd < 0) {
		return false;
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &mgr->canary.fd };
	if (epoll_ctl(mgr->epoll_fd, EPOLL_CTL_ADD, mgr->canary.fd, &ev) < 0) {
		goto err;
	}
	uint64_t now = qos_sys_now_us(), until;
	qos_watchdog_init(&mgr->watchdog, mgr->config.watchdog_timeout_us,
			mgr->config.watchdog_cooldown_us, now);
	/* A predecessor that died during a cool-down: the rest of it holds. */
	if (qos_journal_load_cooldown(&mgr->cg, &until)) {
		uint64_t left = qos_watchdog_carry_cooldown(&mgr->watchdog, until, now);
		if (left) {
			qos_event_emit(&mgr->events, QOS_EVENT_WATCHDOG, NULL, 0, 0, 0,
					"a cool-down after a "
					"starvation alarm of the previous instance: real-time grants stay "
					"suspended for %llus",
					(unsigned long long)(left / 1000000u + 1));
		}
	}
	if (mgr->config.watchdog_external_canary) {
		return true;
	}
	mgr->canary.stop_fd = eventfd(0, EFD_CLOEXEC);
	if (mgr->canary.stop_fd < 0) {
		goto err;
	}
	pthread_t t;
	if (pthread_create(&t, NULL, canary_main, mgr) != 0) {
		goto err;
	}
	mgr->canary.thread = (unsigned long)t;
	mgr->canary.running = true;
	return true;
err:
	if (mgr->canary.stop_fd >= 0) {
		close(mgr->canary.stop_fd);
	}
	mgr->canary.stop_fd = -1;
	close(mgr->canary.fd);
	mgr->canary.fd = -1;
	return false;
}

void qos_canary_stop(struct qos_manager *mgr) {
	if (mgr->canary.running) {
		uint64_t one = 1;
		pthread_t t = (pthread_t)mgr->canary.thread;
		if (write(mgr->canary.stop_fd, &one, sizeof(one)) == sizeof(one)) {
			pthread_join(t, NULL);
		} else {
			pthread_detach(t); /* it ends at its next beat, on the closed canary.fd */
		}
		mgr->canary.running = false;
	}
	if (mgr->canary.stop_fd >= 0) {
		close(mgr->canary.stop_fd);
	}
	mgr->canary.stop_fd = -1;
	if (mgr->canary.fd >= 0) {
		close(mgr->canary.fd);
	}
	mgr->canary.fd = -1;
}

void qos_canary_check(struct qos_manager *mgr, uint64_t now_us) {
	if (mgr->canary.fd < 0) {
		return;
	}
	uint64_t v, delay, waited = UINT64_MAX;
	if (qos_sys_self_run_delay_us(&delay)) {
		if (mgr->canary.run_delay_us && delay >= mgr->canary.run_delay_us) {
			waited = delay - mgr->canary.run_delay_us;
		}
		mgr->canary.run_delay_us = delay;
	}
	qos_watchdog_checked(&mgr->watchdog, now_us, waited);
	/* The event may not have been dispatched yet in this round. */
	if (read(mgr->canary.fd, &v, sizeof(v)) > 0) {
		qos_watchdog_tick(&mgr->watchdog, now_us);
	}
	if (qos_watchdog_expired(&mgr->watchdog, now_us)) {
		int e = qos_journal_save_cooldown(&mgr->cg, mgr->watchdog.cooldown_until_us);
		if (e < 0) {
			qos_event_emit(&mgr->events, QOS_EVENT_ERROR, NULL, 0, 0, 0,
					"cannot keep the cool-down "
					"on %s (%s): a restart after a crash would not keep it",
					mgr->cg.v2_root, strerror(-e));
		}
		qos_configure_demote_rt(mgr);
	}
}

void qos_manager_watchdog_feed(struct qos_manager *mgr) {
	uint64_t one = 1;
	if (mgr->canary.fd >= 0 && write(mgr->canary.fd, &one, sizeof(one)) < 0) {
		return;
	}
}
