/*
 * The main thread's borrowed priority, SCHED_VAR of thesis 5.4.7 on a stock
 * kernel: the compositor runs at its own time-sharing class and becomes
 * SCHED_FIFO (with reset-on-fork, so nothing it starts inherits it) only
 * while real-time work is pending: a real-time client's requests being
 * dispatched, or from the frame callback sent to a real-time client until
 * its next commit is on screen. It drops back before anything else is
 * served. Never SCHED_DEADLINE: the compositor's work has no period of its
 * own, and a throttled compositor would stall every client.
 *
 * The priority is just below the client's: one under a fifo/rr client's,
 * and 1 for qos (deadline) clients, whom any fifo priority already trails.
 * A soft RLIMIT_RTTIME bounds how long it may run real-time without
 * sleeping; its SIGXCPU demotes the thread at once (from the handler) and
 * the boost pauses for a while. Without the permission (CAP_SYS_NICE, or an
 * RLIMIT_RTPRIO) the boost stays off and the log says so once.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <wlr/util/log.h>

#include "scheduler/scheduler_internal.h"
#include "server.h"

#define BOOST_RTTIME_US 500000ull /* real-time without a sleep, at most */
#define BOOST_PAUSE_NS 5000000000ull /* no boost for this long after SIGXCPU */
#define SCHED_FLAG_RESET_ON_FORK_ 0x01

struct boost_attr {
	uint32_t size;
	uint32_t sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime, sched_deadline, sched_period;
};

/* The SIGXCPU handler's view: async-signal-safe, so plain statics. */
static pid_t handler_tid;
static struct boost_attr handler_own;
static volatile sig_atomic_t handler_revoked;

static int set_attr(pid_t tid, const struct boost_attr *a) {
	return syscall(SYS_sched_setattr, tid, a, 0) == 0 ? 0 : -errno;
}

static void handle_sigxcpu(int sig) {
	int saved = errno;
	syscall(SYS_sched_setattr, handler_tid, &handler_own, 0);
	handler_revoked = 1;
	errno = saved;
}

static struct boost_attr fifo_attr(int priority) {
	return (struct boost_attr){
		.size = sizeof(struct boost_attr),
		.sched_policy = SCHED_FIFO,
		.sched_flags = SCHED_FLAG_RESET_ON_FORK_,
		.sched_priority = (uint32_t)priority,
	};
}

void sched_boost_init(struct qw_scheduler *sched) {
	struct sched_boost *b = &sched->boost;
	b->tid = (pid_t)syscall(SYS_gettid);
	if (!sched->server->config.scheduling.boost) {
		snprintf(b->note, sizeof(b->note), "turned off in the configuration");
		return;
	}
	struct boost_attr own = { .size = sizeof(own) };
	if (syscall(SYS_sched_getattr, b->tid, &own, sizeof(own), 0) != 0) {
		snprintf(b->note, sizeof(b->note), "cannot read its own class: %s", strerror(errno));
		return;
	}
	if (own.sched_policy == SCHED_FIFO || own.sched_policy == SCHED_RR ||
			own.sched_policy == 6 /* SCHED_DEADLINE */) {
		snprintf(b->note, sizeof(b->note),
				"the compositor was started real-time "
				"already");
		return;
	}
	own.size = sizeof(own);
	own.sched_flags = 0;
	struct boost_attr probe = fifo_attr(1);
	int err = set_attr(b->tid, &probe);
	if (err) {
		snprintf(b->note, sizeof(b->note),
				"no permission for SCHED_FIFO (%s; it needs "
				"CAP_SYS_NICE or an RLIMIT_RTPRIO)",
				strerror(-err));
		wlr_log(WLR_INFO, "scheduling: boost off: %s", b->note);
		return;
	}
	set_attr(b->tid, &own);
	handler_tid = b->tid;
	handler_own = own;
	/* Bound real-time running without a sleep: SIGXCPU at the soft limit. */
	struct rlimit rt;
	if (getrlimit(RLIMIT_RTTIME, &rt) == 0) {
		b->saved_rttime = rt;
		b->have_rttime = true;
		struct rlimit bounded = rt;
		bounded.rlim_cur = rt.rlim_max != RLIM_INFINITY && rt.rlim_max < BOOST_RTTIME_US
				? rt.rlim_max / 2
				: BOOST_RTTIME_US;
		struct sigaction sa = { .sa_handler = handle_sigxcpu };
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGXCPU, &sa, NULL) != 0 || setrlimit(RLIMIT_RTTIME, &bounded) != 0) {
			snprintf(b->note, sizeof(b->note),
					"cannot bound its real-time running "
					"(RLIMIT_RTTIME): %s",
					strerror(errno));
			wlr_log(WLR_ERROR, "scheduling: boost off: %s", b->note);
			return;
		}
	}
	b->available = true;
}

void sched_boost_finish(struct qw_scheduler *sched) {
	sched_boost_set(sched, false);
	if (sched->boost.have_rttime) {
		setrlimit(RLIMIT_RTTIME, &sched->boost.saved_rttime);
	}
}

bool scheduler_boost_available(const struct qw_scheduler *sched) {
	return sched && sched->boost.available;
}

void scheduler_prepare_child(const struct qw_scheduler *sched) {
	/* Between fork and exec: only system calls. */
	if (sched && sched->boost.have_rttime) {
		setrlimit(RLIMIT_RTTIME, &sched->boost.saved_rttime);
	}
	if (sched) {
		sched_weight_prepare_child(sched);
	}
}

/* One below the most urgent real-time client waiting; 1 for qos clients. */
static int boost_priority(struct qw_scheduler *sched) {
	int prio = 1;
	struct sched_client *c;
	wl_list_for_each(c, &sched->clients, link) {
		if (c->realtime && c->rt_priority - 1 > prio) {
			prio = c->rt_priority - 1;
		}
	}
	return prio;
}

void sched_boost_set(struct qw_scheduler *sched, bool on) {
	struct sched_boost *b = &sched->boost;
	if (!b->available) {
		return;
	}
	uint64_t now = 0;
	if (on && handler_revoked) {
		return; /* SIGXCPU came: the pause starts at the next poll */
	}
	if (on && b->paused_until_ns) {
		now = sched_now_ns();
		if (now < b->paused_until_ns) {
			return;
		}
		b->paused_until_ns = 0;
	}
	int prio = on ? boost_priority(sched) : 0;
	if (on == b->active && (!on || prio == b->priority)) {
		return;
	}
	if (on && !b->active) {
		/* Dropping back restores the nice level too: take a renice made
		 * since the last boost, or the boost would undo it. */
		errno = 0;
		int nice = getpriority(PRIO_PROCESS, (id_t)b->tid);
		if (errno == 0) {
			handler_own.sched_nice = nice;
		}
	}
	struct boost_attr a = on ? fifo_attr(prio) : handler_own;
	int err = set_attr(b->tid, &a);
	if (err && on && prio > 1) {
		/* Past RLIMIT_RTPRIO: the lowest real-time priority still
		 * puts it ahead of every time-sharing client. */
		prio = 1;
		a = fifo_attr(prio);
		err = set_attr(b->tid, &a);
	}
	if (err) {
		wlr_log(WLR_ERROR, "scheduling: cannot %s the compositor's thread: %s; boost off",
				on ? "raise" : "lower", strerror(-err));
		b->available = false;
		return;
	}
	if (!now) {
		now = sched_now_ns();
	}
	if (on && !b->active) {
		b->count++;
		b->since_ns = now;
	} else if (!on && b->active) {
		b->active_ns += now - b->since_ns;
	}
	b->active = on;
	b->priority = prio;
}

void sched_boost_poll_revoked(struct qw_scheduler *sched) {
	struct sched_boost *b = &sched->boost;
	if (!handler_revoked) {
		return;
	}
	handler_revoked = 0;
	uint64_t now = sched_now_ns();
	if (b->active) {
		b->active_ns += now - b->since_ns;
	}
	b->active = false;
	/* The handler demoted the thread, but a boost set between the signal
	 * and this poll may have raised it again: lower it for the pause. */
	set_attr(b->tid, &handler_own);
	b->revocations++;
	b->paused_until_ns = now + BOOST_PAUSE_NS;
	wlr_log(WLR_ERROR,
			"scheduling: the compositor ran real-time for %llu ms without "
			"sleeping; SIGXCPU took the boost back, none for %llu s",
			BOOST_RTTIME_US / 1000, BOOST_PAUSE_NS / 1000000000ull);
}

bool sched_rt_pending(struct qw_scheduler *sched, uint64_t now, uint64_t *until) {
	if (!sched->boost.available || !sched->n_realtime) {
		return false;
	}
	bool pending = false;
	struct sched_client *c;
	wl_list_for_each(c, &sched->clients, link) {
		if (c->awaiting && now > c->awaiting_ns + SCHED_AWAIT_MAX_NS && !c->committed) {
			c->awaiting = false; /* it stopped drawing */
		}
		if (c->realtime && c->awaiting) {
			pending = true;
			/* Look again when it would expire, even if nothing wakes us. */
			uint64_t end = c->awaiting_ns + SCHED_AWAIT_MAX_NS + 1;
			if (until && !c->committed && (!*until || end < *until)) {
				*until = end;
			}
		}
	}
	return pending;
}
