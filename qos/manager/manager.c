/* The manager object: setup, event loop integration, events and queries. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "qos/manager/adjust.h"
#include "qos/kernel/cputimer.h"
#include "qos/manager/canary.h"
#include "qos/policy/core.h"
#include "qos/reserve/fallback.h"
#include "qos/member/guardian.h"
#include "qos/member/member.h"
#include "qos/reserve/optimistic.h"
#include "qos/manager/reconcile.h"
#include "qos/reserve/reserve.h"
#include "qos/reserve/split.h"
#include "qos/reserve/rtguard.h"
#include "qos/reserve/server.h"
#include "qos/reserve/threads.h"
#include "qos/proc.h"
#include "qos/kernel/sys.h"

void qos_manager_config_init(struct qos_manager_config *config) {
	*config = (struct qos_manager_config){
		.cgroup_base = "/sys/fs/cgroup",
		.rsvd_ppm = QOS_RSVD_DEFAULT_PPM,
		.rttime_us = 5000000,
		.watchdog_timeout_us = 5000000,
		.watchdog_cooldown_us = 30000000,
		.guardian = true,
		.guardian_keep_fd = -1,
		.cputimer_signal = SIGRTMAX - 1,
	};
}

/* The loop's epoll set with its timer, and the CPU-timer signals' fd where it can be had. */
static bool open_loop(struct qos_manager *mgr, char *err, size_t err_len) {
	mgr->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	mgr->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (mgr->epoll_fd < 0 || mgr->timer_fd < 0) {
		snprintf(err, err_len, "epoll/timerfd: %s", strerror(errno));
		return false;
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &mgr->timer_fd };
	if (epoll_ctl(mgr->epoll_fd, EPOLL_CTL_ADD, mgr->timer_fd, &ev) < 0) {
		snprintf(err, err_len, "epoll_ctl: %s", strerror(errno));
		return false;
	}
	if (mgr->config.cputimer_signal > 0 && !mgr->config.fake_files) {
		/* Without it reserves are polled: slower, not wrong. */
		mgr->cputimer_fd = qos_cputimer_open(mgr->config.cputimer_signal);
		struct epoll_event cev = { .events = EPOLLIN, .data.ptr = &mgr->cputimer_fd };
		if (mgr->cputimer_fd >= 0 &&
				epoll_ctl(mgr->epoll_fd, EPOLL_CTL_ADD, mgr->cputimer_fd, &cev) < 0) {
			close(mgr->cputimer_fd);
			mgr->cputimer_fd = -1;
		}
	}
	return true;
}

/*
 * Each part set up in the order the next needs it (names, cgroups, loop,
 * guardian, watchdog), with one unwind path: split, the unwind would be.
 */
struct qos_manager *qos_manager_create(const struct qos_manager_config *config, char *err,
		size_t err_len) {
	struct qos_manager *mgr = calloc(1, sizeof(*mgr));
	if (!mgr) {
		snprintf(err, err_len, "out of memory");
		return NULL;
	}
	mgr->config = *config;
	mgr->events = (struct qos_events){ .fn = config->event, .data = config->event_data };
	mgr->epoll_fd = mgr->timer_fd = mgr->cputimer_fd = mgr->guardian.fd = mgr->guardian.pidfd =
			mgr->canary.fd = mgr->canary.stop_fd = -1;
	mgr->root.idle = -1;
	mgr->root.weight = -1;
	struct rlimit nofile;
	mgr->kept_fds_budget = QOS_KEPT_FDS_BUDGET;
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur / 4 < QOS_KEPT_FDS_BUDGET) {
		mgr->kept_fds_budget = (unsigned int)(nofile.rlim_cur / 4);
	}
	if (!mgr->config.cgroup_base) {
		mgr->config.cgroup_base = "/sys/fs/cgroup";
	}
	snprintf(mgr->base, sizeof(mgr->base), "%s", mgr->config.cgroup_base);
	mgr->config.cgroup_base = mgr->base;
	if (config->root_name && strlen(config->root_name) >= sizeof(mgr->root_name)) {
		/* Cut short, two long names could be one group. */
		snprintf(err, err_len, "cgroup root name longer than %zu bytes",
				sizeof(mgr->root_name) - 1);
		free(mgr);
		return NULL;
	}
	if (config->root_name) {
		snprintf(mgr->root_name, sizeof(mgr->root_name), "%s", config->root_name);
	} else {
		snprintf(mgr->root_name, sizeof(mgr->root_name), "qosway-%u", (unsigned)getuid());
	}
	mgr->config.root_name = mgr->root_name;
	unsigned ncpus = config->ncpus;
	if (!ncpus) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		ncpus = n > 0 ? (unsigned)n : 1;
	}
	qos_admission_init(&mgr->adm, ncpus, config->rsvd_ppm);
	mgr->dl.optimistic = qos_optimistic_supported();
	mgr->tick_us = qos_sys_tick_us();
	/* Refined later from every fresh reservation (optimistic.c). */
	if (mgr->dl.optimistic && !config->fake_files) {
		qos_sys_sched_clock_offset(&mgr->dl.clock_offset_ns);
	}

	if (!qos_cgroup_detect(&mgr->cg, mgr->base, config->cgroup_parent, mgr->root_name, err,
				err_len)) {
		goto err_free;
	}
	mgr->cg.fake_files = config->fake_files;
	/* A dead predecessor may have left frozen groups: undo them before anything else. */
	qos_reconcile(mgr);
	if (!qos_cgroup_setup_root(&mgr->cg, 1000000u - mgr->adm.rsvd_ppm, err, err_len)) {
		goto err_free;
	}
	if (!mgr->cg.cpu_ctl) {
		qos_event_emit(&mgr->events, QOS_EVENT_ERROR, NULL, 0, 0, 0,
				"no cpu controller in %s (the "
				"parent does not delegate it): reserve groups get no weight, idle flag or "
				"quota; nice and classes act per thread, and ceilings by freezing",
				mgr->cg.cpu_root);
	}

	if (!open_loop(mgr, err, err_len)) {
		goto err_fds;
	}
	if (config->guardian && !qos_guardian_start(mgr)) {
		snprintf(err, err_len, "cannot start the thaw guardian: %s", strerror(errno));
		goto err_fds;
	}
	if (config->watchdog_timeout_us && !qos_canary_start(mgr)) {
		snprintf(err, err_len, "cannot start the starvation watchdog: %s", strerror(errno));
		goto err_guardian;
	}
	mgr->housekeeping_us = qos_sys_now_us() + QOS_HOUSEKEEPING_US;
	qos_reserve_rearm(mgr);
	return mgr;

err_guardian:
	qos_guardian_stop(mgr);
err_fds:
	if (mgr->cputimer_fd >= 0) {
		close(mgr->cputimer_fd);
	}
	if (mgr->timer_fd >= 0) {
		close(mgr->timer_fd);
	}
	if (mgr->epoll_fd >= 0) {
		close(mgr->epoll_fd);
	}
	qos_cgroup_remove_root(&mgr->cg);
err_free:
	free(mgr);
	return NULL;
}

void qos_manager_destroy(struct qos_manager *mgr) {
	if (!mgr) {
		return;
	}
	if (mgr->events.depth) {
		/* The calls the callback came from would go on with freed state. */
		fprintf(stderr, "qos_manager_destroy called from the QoS event callback\n");
		abort();
	}
	while (mgr->reserves) {
		struct qos_reserve *r = mgr->reserves;
		r->is_auto = false; /* freed below, not by the last leave */
		while (r->n_members) {
			qos_member_remove(r->members[r->n_members - 1], true, false);
		}
		qos_reserve_free(r);
	}
	/* A group kept busy by an exiting task is free again within milliseconds. */
	for (int i = 0; i < 20 && mgr->stale_groups; i++) {
		usleep(10000);
		qos_reconcile_retry(mgr);
	}
	qos_canary_stop(mgr);
	qos_server_finish(mgr);
	/* First: the root goes only once the guardian has left its leaf. */
	qos_guardian_stop(mgr);
	qos_cgroup_remove_root(&mgr->cg);
	qos_rules_destroy(mgr->rules);
	close(mgr->timer_fd);
	if (mgr->cputimer_fd >= 0) {
		close(mgr->cputimer_fd);
	}
	close(mgr->epoll_fd);
	qos_threads_finish(mgr);
	qos_rtguard_finish(mgr);
	free(mgr);
}

int qos_manager_get_fd(struct qos_manager *mgr) {
	return mgr->epoll_fd;
}

static void reserve_housekeeping(struct qos_reserve *r) {
	qos_member_adopt_children(r);
	qos_threads_keep(r->mgr, true);
	qos_reserve_apply_active(r);
	qos_reserve_update_weight(r);
	if (r->n_members) {
		/* Threads come and go: how many can run at once, from the kept
		 * listing (no extra /proc read), for the timers' and switches'
		 * estimates (police.h). */
		unsigned n = (unsigned)qos_reserve_count_threads(r);
		r->police.parallel = n < r->mgr->adm.ncpus ? n : r->mgr->adm.ncpus;
	}
	if (r->n_members && r->params.policy == QOS_POLICY_QOS) {
		qos_optimistic_housekeeping(r);
	}
	qos_rtguard_pass(r);
	qos_threads_keep(r->mgr, false);
}

static void fork_pass(struct qos_reserve *r, uint64_t now_us) {
	r->forks.pending = false;
	r->forks.pass_us = now_us;
	qos_member_adopt_children(r);
	qos_reserve_apply_active(r);
	qos_fallback_check(r, now_us);
}

/*
 * A member forked or started a thread: the part of a housekeeping pass that
 * concerns new tasks (adopt or send back children, give threads their
 * policy), now.  The 1 s pass does the rest (the optimistic repair, which
 * reads every thread's /proc/TID/sched, and the RLIMIT_RTTIME guard, which
 * takes a new real-time thread as real-time since up to one pass ago).  It
 * reads the whole group, so a burst (a build, a shell loop, a thread pool
 * starting) gets one such pass per QOS_FORK_PASS_US.
 */
static void member_changed(struct qos_reserve *r) {
	struct qos_manager *mgr = r->mgr;
	uint64_t now = qos_sys_now_us();
	if (now < r->forks.pass_us + QOS_FORK_PASS_US) {
		r->forks.pending = true;
		qos_reserve_rearm(mgr);
		return;
	}
	fork_pass(r, now);
	qos_reserve_rearm(mgr);
}

void qos_manager_forked(struct qos_manager *mgr, pid_t parent, pid_t child) {
	if (qos_event_refuse_reentry(&mgr->events, NULL, 0)) {
		return; /* the next housekeeping pass finds the child */
	}
	struct qos_member *m = qos_reserve_find_member(mgr, parent, 0);
	if (!m || parent == child || qos_reserve_find_member(mgr, child, 0)) {
		return;
	}
	member_changed(m->reserve);
}

void qos_manager_thread_started(struct qos_manager *mgr, pid_t pid, pid_t tid) {
	if (qos_event_refuse_reentry(&mgr->events, NULL, 0)) {
		return; /* the next housekeeping pass finds the thread */
	}
	struct qos_member *m = qos_reserve_find_member(mgr, pid, 0);
	if (!m || pid == tid) {
		return;
	}
	member_changed(m->reserve);
}

static void run_timers(struct qos_manager *mgr) {
	uint64_t buf;
	/* One read takes every expiry; none (EAGAIN) when called for another reason. */
	ssize_t n = read(mgr->timer_fd, &buf, sizeof(buf));
	(void)n;
	uint64_t now = qos_sys_now_us();
	/* First, so lazily accounted reserves are put off to the next pass. */
	bool housekeeping = now >= mgr->housekeeping_us;
	if (housekeeping) {
		mgr->housekeeping_us = now + QOS_HOUSEKEEPING_US;
		/* Before the passes: removing one can free its reserve. */
		for (struct qos_member *m; (m = qos_member_find_exited(mgr));) {
			qos_member_remove(m, false, true);
		}
	}
	for (struct qos_reserve *r = mgr->reserves; r; r = r->next) {
		if (r->forks.pending && r->forks.pass_us + QOS_FORK_PASS_US <= now) {
			fork_pass(r, now);
		} else if (r->fb.next_check_us <= now) {
			qos_fallback_check(r, now);
		}
		if (r->rtg.retry_us && r->rtg.retry_us <= now) {
			qos_rtguard_retry(r, now);
		}
		if (r->split.next_us && r->split.next_us <= now) {
			qos_split_pass(r, now);
		}
		if (r->split.check_us && r->split.check_us <= now) {
			qos_split_check(r, now);
		}
	}
	if (housekeeping) {
		for (struct qos_reserve *r = mgr->reserves; r; r = r->next) {
			reserve_housekeeping(r);
		}
		qos_rtguard_prune(mgr);
		if (mgr->root.weight_dirty) {
			qos_reserve_root_weight_update(mgr);
		}
		qos_reconcile_retry(mgr);
		qos_guardian_retry(mgr);
		qos_canary_check(mgr, now);
	}
}

int qos_manager_dispatch(struct qos_manager *mgr) {
	if (qos_event_refuse_reentry(&mgr->events, NULL, 0)) {
		errno = EDEADLK;
		return -1;
	}
	struct epoll_event evs[32];
	int n = epoll_wait(mgr->epoll_fd, evs, 32, 0);
	if (n < 0) {
		return errno == EINTR ? 0 : -1;
	}
	bool timers = false;
	for (int i = 0; i < n; i++) {
		void *ptr = evs[i].data.ptr;
		if (ptr == &mgr->timer_fd) {
			timers = true;
		} else if (ptr == &mgr->cputimer_fd) {
			/* A member may have used up its share: check its reserve now. */
			uint32_t cookies[16];
			uint64_t now = qos_sys_now_us();
			size_t got;
			do {
				got = qos_cputimer_read(mgr->cputimer_fd, cookies, 16);
				for (size_t j = 0; j < got; j++) {
					struct qos_reserve *r = qos_reserve_find_by_cookie(mgr, cookies[j]);
					if (!r) {
						continue;
					}
					/* A lone member's timer fired, so it is disarmed. */
					if (r->n_members == 1) {
						r->timer.armed = false;
					}
					qos_fallback_check(r, now);
				}
			} while (got == 16);
		} else if (ptr == &mgr->guardian.pidfd) {
			qos_guardian_died(mgr);
		} else if (ptr == &mgr->canary.fd) {
			uint64_t v;
			if (read(mgr->canary.fd, &v, sizeof(v)) > 0) {
				qos_watchdog_tick(&mgr->watchdog, qos_sys_now_us());
			}
		} else {
			/* A member's pidfd became readable: it exited. */
			struct qos_member *m = ptr;
			qos_member_remove(m, false, true);
			/* Later events may point at members freed with an automatic reserve. */
			n = i + 1;
			timers = true;
		}
	}
	if (timers) {
		run_timers(mgr);
	}
	qos_adjust_pass(mgr);
	qos_reserve_rearm(mgr);
	return n;
}

/*
 * A reserve made from a qosrc definition that still has those parameters
 * takes the definition's new ones on a reload: an edited file means the
 * edit.  One changed since (through qosctl or the protocol) is left as it
 * is, and a change admission or the kernel refuses keeps the old ones, with
 * an error event saying why.
 *
 * The starvation watchdog's demotion to other is no such change: a reserve
 * it demoted while it had qosrc's parameters counts as having them, so a
 * reload after the cool-down gives it the file's definition, unchanged or
 * edited (real-time again).  During the cool-down a real-time definition is
 * not applied: the reserve stays other, a watchdog event says so, and the
 * definition it waits for is remembered as its own, for a reload after the
 * cool-down.  Demotions are kept otherwise (no restore when the cool-down
 * ends, as rtkit), and a user's change since the demotion is kept as any.
 */
static void apply_redefined(struct qos_manager *mgr, const struct qos_rules *old,
		const struct qos_rules *rules) {
	for (struct qos_reserve *r = mgr->reserves; r; r = r->next) {
		const struct qos_reserve_def *was = qos_rules_find_reserve(old, r->name);
		const struct qos_reserve_def *now = qos_rules_find_reserve(rules, r->name);
		const struct qos_params *as_made = r->wd.demoted ? &r->wd.before : qos_adjust_own_params(r);
		char err[256];
		if (!was || !now || r->is_auto || !qos_params_as_defined(as_made, &was->params)) {
			continue;
		}
		if (qos_params_as_defined(qos_adjust_own_params(r), &now->params)) {
			r->wd.demoted = false; /* the file now says what the demotion made it */
			continue;
		}
		uint64_t left = qos_watchdog_cooldown_left_us(&mgr->watchdog, qos_sys_now_us());
		if (r->wd.demoted && qos_policy_is_rt(now->params.policy) && left) {
			r->wd.before = now->params;
			qos_event_emit(&mgr->events, QOS_EVENT_WATCHDOG, r->name, 0, 0, 0,
					"qosrc makes it real-time, "
					"but real-time grants are suspended for %llus after a starvation alarm: it "
					"stays other until a reload after the cool-down",
					(unsigned long long)(left / 1000000u + 1));
			continue;
		}
		const struct qos_manager_config *c = &mgr->config;
		bool vetoed = r->n_members && c->may_redefine &&
				!c->may_redefine(c->may_redefine_data, r->name, &now->params, err, sizeof(err));
		if (vetoed || !qos_reserve_set(mgr, r->name, &now->params, false, true, err, sizeof(err))) {
			qos_event_emit(&mgr->events, QOS_EVENT_ERROR, r->name, 0, 0, 0,
					"qosrc's new parameters were refused (%s); it keeps the old ones", err);
		}
	}
}

bool qos_manager_set_rules(struct qos_manager *mgr, struct qos_rules *rules) {
	if (qos_event_refuse_reentry(&mgr->events, NULL, 0)) {
		return false;
	}
	if (rules == mgr->rules) {
		return true;
	}
	if (mgr->rules && rules) {
		apply_redefined(mgr, mgr->rules, rules);
	}
	qos_rules_destroy(mgr->rules);
	mgr->rules = rules;
	return true;
}

enum qos_refusal qos_manager_last_refusal(const struct qos_manager *mgr) {
	return mgr->events.last_refusal;
}

bool qos_manager_apply_rules(struct qos_manager *mgr, pid_t pid, const char *app_id, bool *applied,
		char *err, size_t err_len) {
	*applied = false;
	if (qos_event_refuse_reentry(&mgr->events, err, err_len)) {
		return false;
	}
	mgr->events.last_refusal = QOS_REFUSAL_ERROR;
	if (!mgr->rules) {
		return true;
	}
	char exe[PATH_MAX], cmd[4096];
	bool have_exe = qos_proc_exe(pid, exe, sizeof(exe));
	bool have_cmd = qos_proc_cmdline(pid, cmd, sizeof(cmd));
	const struct qos_rule *rule =
			qos_rules_match(mgr->rules, have_exe ? exe : NULL, have_cmd ? cmd : NULL, app_id);
	if (!rule || !rule->auto_apply) {
		return true;
	}
	bool ok = rule->reserve[0] ? qos_manager_join(mgr, rule->reserve, pid, 0, err, err_len)
							   : qos_manager_set_class(mgr, pid, &rule->params, err, err_len);
	*applied = ok;
	return ok;
}

void qos_manager_get_info(struct qos_manager *mgr, struct qos_manager_info *info) {
	*info = (struct qos_manager_info){
		.layout = mgr->cg.layout == QOS_CG_V2 ? "cgroup2" : "hybrid",
		.v2_root = mgr->cg.v2_root,
		.cpu_root = mgr->cg.cpu_root,
		.rt_group = mgr->cg.rt_group,
		.rt_note = mgr->cg.rt_note,
		.ncpus = mgr->adm.ncpus,
		.capacity_ppm = qos_admission_capacity_ppm(&mgr->adm),
		.granted_ppm = mgr->adm.granted_ppm,
		.watchdog_cooldown = !qos_watchdog_rt_allowed(&mgr->watchdog, qos_sys_now_us()),
		.watchdog_alarms = mgr->watchdog.alarms,
	};
}

size_t qos_manager_reserve_count(struct qos_manager *mgr) {
	size_t n = 0;
	for (struct qos_reserve *r = mgr->reserves; r; r = r->next) {
		n++;
	}
	return n;
}

static void fill_info(struct qos_reserve *r, struct qos_reserve_info *out) {
	*out = (struct qos_reserve_info){
		.params = r->params,
		.is_auto = r->is_auto,
		.owner = r->owner,
		.granted = r->granted,
		.in_fallback = r->police.in_fallback,
		.n_members = r->n_members,
		.used_us = qos_police_used_us(&r->police),
		.billed_us = r->police.billed_us,
		.last_used_us = r->police.last_used_us,
		.last_billed_us = r->police.last_billed_us,
		.periods = r->police.periods,
		.overruns = r->police.overruns,
	};
	qos_adjust_info(r, out);
	snprintf(out->name, sizeof(out->name), "%s", r->name);
	snprintf(out->group, sizeof(out->group), "%s", r->cgroup.exists ? r->group : "");
}

bool qos_manager_reserve_at(struct qos_manager *mgr, size_t index, struct qos_reserve_info *out) {
	for (struct qos_reserve *r = mgr->reserves; r; r = r->next) {
		if (index-- == 0) {
			fill_info(r, out);
			return true;
		}
	}
	return false;
}

bool qos_manager_reserve_info(struct qos_manager *mgr, const char *name,
		struct qos_reserve_info *out) {
	struct qos_reserve *r = qos_reserve_find(mgr, name);
	if (!r) {
		return false;
	}
	/*
	 * Bring the current-period figures up to date before reporting them;
	 * from the event callback they are (a check of this very reserve may
	 * be what called it, in the middle of applying its result).
	 */
	if (r->n_members && !mgr->events.depth) {
		qos_fallback_check(r, qos_sys_now_us());
		qos_reserve_rearm(mgr);
	}
	fill_info(r, out);
	return true;
}

ssize_t qos_manager_members(struct qos_manager *mgr, const char *name, struct qos_member_info *out,
		size_t max) {
	struct qos_reserve *r = qos_reserve_find(mgr, name);
	if (!r) {
		return -1;
	}
	for (size_t i = 0; i < r->n_members && i < max; i++) {
		out[i].pid = r->members[i]->pid;
		out[i].tid = r->members[i]->tid;
	}
	return (ssize_t)r->n_members;
}

const char *qos_manager_reserve_of(struct qos_manager *mgr, pid_t pid, pid_t tid) {
	struct qos_member *m = qos_reserve_find_member(mgr, pid, tid == pid ? 0 : tid);
	return m ? m->reserve->name : NULL;
}

ssize_t qos_manager_reserve_threads(struct qos_manager *mgr, const char *name,
		struct qos_thread_info *out, size_t max) {
	struct qos_reserve *r = qos_reserve_find(mgr, name);
	if (!r) {
		return -1;
	}
	const struct qos_split *s = &r->split;
	if (!s->built) {
		return 0;
	}
	for (size_t i = 0; i < s->n && i < max; i++) {
		const struct qos_split_thread *t = &s->t[i];
		out[i] = (struct qos_thread_info){ .pid = t->pid,
			.tid = t->tid,
			.runtime_ns = t->runtime_ns,
			.used_ns = t->last_used_ns,
			.parked = t->parked,
			.throttled = t->throttled,
			.ran_on = t->ran_on };
	}
	return (ssize_t)s->n;
}
