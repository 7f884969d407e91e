/*
 * Starvation watchdog.  A canary thread at normal priority ticks an eventfd
 * once a second; if the manager hears nothing for watchdog_timeout_us, normal
 * tasks are being starved, so every real-time reserve is demoted to other and
 * new real-time grants are refused for watchdog_cooldown_us.
 *
 * The check runs in the manager's own loop, which must therefore not run at
 * a lower priority than its real-time members (a compositor's loop normally
 * runs above them).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "qos/internal.h"
#include "qos/journal.h"
#include "qos/sys.h"
#include "qos/watchdog.h"

void qos_watchdog_init(struct qos_watchdog *w, uint64_t timeout_us, uint64_t cooldown_us,
		uint64_t now_us) {
	*w = (struct qos_watchdog){
		.timeout_us = timeout_us,
		.cooldown_us = cooldown_us,
		.seen_us = now_us,
	};
}

void qos_watchdog_checked(struct qos_watchdog *w, uint64_t now_us, uint64_t waited_us) {
	uint64_t gap = w->checked_us && now_us > w->checked_us ? now_us - w->checked_us : 0;
	w->checked_us = now_us;
	if (gap >= QOS_WATCHDOG_GAP_US && waited_us < gap / 2 && now_us > w->seen_us)
		w->seen_us = now_us;
}

void qos_watchdog_tick(struct qos_watchdog *w, uint64_t now_us) {
	if (now_us > w->seen_us)
		w->seen_us = now_us;
}

bool qos_watchdog_expired(struct qos_watchdog *w, uint64_t now_us) {
	if (!w->timeout_us || now_us < w->seen_us || now_us - w->seen_us < w->timeout_us)
		return false;
	w->cooldown_until_us = now_us + w->cooldown_us;
	w->seen_us = now_us;
	w->alarms++;
	return true;
}

uint64_t qos_watchdog_carry_cooldown(struct qos_watchdog *w, uint64_t until_us, uint64_t now_us) {
	if (until_us <= now_us || !w->cooldown_us)
		return 0;
	if (until_us - now_us > w->cooldown_us)
		until_us = now_us + w->cooldown_us;
	if (until_us > w->cooldown_until_us)
		w->cooldown_until_us = until_us;
	return w->cooldown_until_us - now_us;
}

bool qos_watchdog_rt_allowed(const struct qos_watchdog *w, uint64_t now_us) {
	return now_us >= w->cooldown_until_us;
}

uint64_t qos_watchdog_cooldown_left_us(const struct qos_watchdog *w, uint64_t now_us) {
	return now_us < w->cooldown_until_us ? w->cooldown_until_us - now_us : 0;
}

static void *canary_main(void *data) {
	struct qos_manager *mgr = data;
	struct sched_param sp = { 0 };
	pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);
	/*
	 * Told to stop through an eventfd rather than cancelled: unwinding a
	 * cancelled thread trips AddressSanitizer's own thread teardown
	 * (a stack-buffer-underflow in its sigaltstack interceptor, GCC 12).
	 */
	struct pollfd stop = { .fd = mgr->canary_stop_fd, .events = POLLIN };
	for (;;) {
		int n = poll(&stop, 1, 1000);
		if (n > 0 || (n < 0 && errno != EINTR))
			break;
		uint64_t one = 1;
		if (n == 0 && write(mgr->canary_fd, &one, sizeof(one)) < 0 && errno == EBADF)
			break;
	}
	return NULL;
}

bool qos_watchdog_start(struct qos_manager *mgr) {
	mgr->canary_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (mgr->canary_fd < 0)
		return false;
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &mgr->canary_fd };
	if (epoll_ctl(mgr->epoll_fd, EPOLL_CTL_ADD, mgr->canary_fd, &ev) < 0)
		goto err;
	uint64_t now = qos_sys_now_us(), until;
	qos_watchdog_init(&mgr->watchdog, mgr->config.watchdog_timeout_us,
			mgr->config.watchdog_cooldown_us, now);
	/* A predecessor that died during a cool-down: the rest of it holds. */
	if (qos_journal_load_cooldown(&mgr->cg, &until)) {
		uint64_t left = qos_watchdog_carry_cooldown(&mgr->watchdog, until, now);
		if (left)
			qos_event_emit(&mgr->events, QOS_EVENT_WATCHDOG, NULL, 0, 0, 0,
					"a cool-down after a "
					"starvation alarm of the previous instance: real-time grants stay "
					"suspended for %llus",
					(unsigned long long)(left / 1000000u + 1));
	}
	if (mgr->config.watchdog_external_canary)
		return true;
	mgr->canary_stop_fd = eventfd(0, EFD_CLOEXEC);
	if (mgr->canary_stop_fd < 0)
		goto err;
	pthread_t t;
	if (pthread_create(&t, NULL, canary_main, mgr) != 0)
		goto err;
	mgr->canary_thread = (unsigned long)t;
	mgr->canary_running = true;
	return true;
err:
	if (mgr->canary_stop_fd >= 0)
		close(mgr->canary_stop_fd);
	mgr->canary_stop_fd = -1;
	close(mgr->canary_fd);
	mgr->canary_fd = -1;
	return false;
}

void qos_watchdog_stop(struct qos_manager *mgr) {
	if (mgr->canary_running) {
		uint64_t one = 1;
		pthread_t t = (pthread_t)mgr->canary_thread;
		if (write(mgr->canary_stop_fd, &one, sizeof(one)) == sizeof(one))
			pthread_join(t, NULL);
		else
			pthread_detach(t); /* it ends at its next beat, on the closed canary_fd */
		mgr->canary_running = false;
	}
	if (mgr->canary_stop_fd >= 0)
		close(mgr->canary_stop_fd);
	mgr->canary_stop_fd = -1;
	if (mgr->canary_fd >= 0)
		close(mgr->canary_fd);
	mgr->canary_fd = -1;
}

void qos_watchdog_check(struct qos_manager *mgr, uint64_t now_us) {
	if (mgr->canary_fd < 0)
		return;
	uint64_t v, delay, waited = UINT64_MAX;
	if (qos_sys_self_run_delay_us(&delay)) {
		if (mgr->watchdog_run_delay_us && delay >= mgr->watchdog_run_delay_us)
			waited = delay - mgr->watchdog_run_delay_us;
		mgr->watchdog_run_delay_us = delay;
	}
	qos_watchdog_checked(&mgr->watchdog, now_us, waited);
	/* The event may not have been dispatched yet in this round. */
	if (read(mgr->canary_fd, &v, sizeof(v)) > 0)
		qos_watchdog_tick(&mgr->watchdog, now_us);
	if (qos_watchdog_expired(&mgr->watchdog, now_us)) {
		int e = qos_journal_save_cooldown(&mgr->cg, mgr->watchdog.cooldown_until_us);
		if (e < 0)
			qos_event_emit(&mgr->events, QOS_EVENT_ERROR, NULL, 0, 0, 0,
					"cannot keep the cool-down "
					"on %s (%s): a restart after a crash would not keep it",
					mgr->cg.v2_root, strerror(-e));
		qos_demote_all_rt(mgr);
	}
}

void qos_manager_watchdog_feed(struct qos_manager *mgr) {
	uint64_t one = 1;
	if (mgr->canary_fd >= 0 && write(mgr->canary_fd, &one, sizeof(one)) < 0)
		return;
}
