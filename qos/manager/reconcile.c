/*
 * Start-up reconciliation: whatever a previous instance left under our root
 * is undone.  Frozen groups are thawed first; their tasks return to time
 * sharing, with the nice level and RLIMIT_RTTIME they had, to the cgroups
 * they came from (journal.h: recorded on the group before each move), and
 * the empty groups are removed.  A task with no record of its own (a child
 * born in the group) goes where its nearest recorded ancestor came from, or
 * else where any member of the group came from; with no record at all, or
 * when that cgroup is gone, to the top of the tree.
 *
 * A group can refuse removal for a while (EBUSY until a task that left it has
 * finished exiting), and a deleted reserve can leave tasks we never tracked in
 * its group.  Such groups are counted in stale_groups and released again at
 * every housekeeping pass until they are gone, so nothing stays behind frozen
 * or holding real-time runtime until the next start.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "qos/policy/core.h"
#include "qos/member/member.h"
#include "qos/manager/reconcile.h"
#include "qos/reserve/reserve.h"
#include "qos/reserve/rtguard.h"
#include "qos/kernel/journal.h"
#include "qos/kernel/sys.h"

struct rc_ctx {
	struct qos_manager *mgr;
	const char *group;
	struct qos_journal_entry origin; /* of the task being released */
	bool known; /* origin holds a record */
	pid_t own_tid; /* the thread the record was written for */
	bool own; /* the record is the released task's own */
	bool lent; /* a record of the group's, not of a relative */
};

/* A record is trusted only for the task it was written for (pids are reused). */
static bool own_record(struct rc_ctx *c, pid_t pid, pid_t tid) {
	return qos_journal_lookup(&c->mgr->cg, c->group, pid, tid, &c->origin) == 1 &&
			c->origin.start_time == qos_sys_start_time(pid, tid);
}

static bool has_record(pid_t pid, void *data) {
	return own_record(data, pid, 0);
}

/* Fills c->origin for a process; true when the record is the process's own. */
static bool find_origin(struct rc_ctx *c, pid_t pid) {
	c->known = true;
	c->lent = false;
	if (own_record(c, pid, 0)) {
		return true;
	}
	if (!qos_sys_find_ancestor(pid, has_record, c)) {
		c->known = qos_journal_any(&c->mgr->cg, c->group, &c->origin);
		c->lent = true;
	}
	return false;
}

/* The thread's own line in the record (journal.h), when the record is its process's. */
static const struct qos_journal_thread *listed(const struct rc_ctx *c, pid_t tid) {
	for (size_t i = 0; c->own && i < c->origin.n_threads; i++) {
		if (c->origin.threads[i].tid == tid) {
			return &c->origin.threads[i];
		}
	}
	return NULL;
}

static void reset_thread(pid_t tid, void *data) {
	struct rc_ctx *c = data;
	int pol = qos_sys_get_thread_policy(tid, NULL);
	if (pol < 0 || !qos_sys_release_deadline(tid)) {
		return;
	}
	if (!c->known) {
		if (pol != 0) {
			qos_sys_set_thread_policy(tid, QOS_POLICY_OTHER, 0, 0, 0, 0);
		}
		return;
	}
	const struct qos_journal_thread *t = listed(c, tid);
	int want = t ? t->nice : c->origin.nice;
	errno = 0;
	int nice = getpriority(PRIO_PROCESS, (id_t)tid);
	if (pol != 0 || (errno == 0 && nice != want)) {
		qos_sys_set_thread_policy(tid, QOS_POLICY_OTHER, want, 0, 0, 0);
	}
}

/*
 * Real time back under an RLIMIT_RTTIME bound the task did not have
 * (raising it needs CAP_SYS_RESOURCE) would get a thread that runs that
 * long without sleeping killed: it stays time-sharing, and an event says so.
 */
static bool rt_held(struct rc_ctx *c, pid_t tid, const struct qos_sched *s) {
	pid_t pid = qos_sys_tgid(tid);
	if (!qos_sys_sched_is_rt(s) || pid <= 0 || !qos_sys_rttime_tighter(pid, c->origin.rt_hard)) {
		return false;
	}
	qos_event_emit(&c->mgr->events, QOS_EVENT_ERROR, c->group, pid, tid, 0,
			"thread %d is given back as "
			"time-sharing, not real-time: the RLIMIT_RTTIME bound of %d stays (raising it "
			"needs CAP_SYS_RESOURCE), and the kernel would kill it once it ran that long "
			"without sleeping",
			tid, pid);
	return true;
}

/*
 * Once home, the class itself where the record says it was not plain
 * time-sharing (reset_thread left it SCHED_OTHER at its nice): after the
 * move, since fifo/rr need the real-time bandwidth of home.
 */
static void restore_class(pid_t tid, void *data) {
	struct rc_ctx *c = data;
	const struct qos_journal_entry *o = &c->origin;
	const struct qos_journal_thread *t = listed(c, tid);
	if (t) {
		/* Its own class at the join, real time included. */
		struct qos_sched s = { .policy = t->policy,
			.priority = t->priority,
			.nice = t->nice,
			.reset_on_fork = t->reset_on_fork };
		if ((s.policy != 0 || s.reset_on_fork) && !rt_held(c, tid, &s)) {
			qos_sys_set_sched(tid, &s);
		}
		return;
	}
	if (!c->known || c->lent || (o->policy == 0 && !o->reset_on_fork)) {
		return;
	}
	/* A record holds one thread's class (a process's main thread): real
	 * time goes back to that thread only, never to its siblings or
	 * children; nothing but the nice to a stranger the group's record was
	 * lent to (lent). */
	if ((o->policy == 1 || o->policy == 2) && tid != c->own_tid) {
		return;
	}
	struct qos_sched s = { .policy = o->policy,
		.priority = o->priority,
		.nice = o->nice,
		.reset_on_fork = o->reset_on_fork };
	if (!rt_held(c, tid, &s)) {
		qos_sys_set_sched(tid, &s);
	}
}

/* Back where the record says, or to the top when there is none or it is gone. */
static void send_back(struct rc_ctx *c, pid_t pid, pid_t tid, bool whole_process) {
	if (c->known) {
		qos_member_send_home(c->mgr, c->group, pid, tid, whole_process, c->origin.v2,
				c->origin.cpu);
	} else {
		qos_cgroup_restore(&c->mgr->cg, pid, tid, whole_process, "", "/");
	}
}

static void release_pid(pid_t pid, void *data) {
	struct rc_ctx *c = data;
	bool own = find_origin(c, pid);
	c->own = own;
	c->own_tid = own ? pid : 0;
	qos_sys_for_each_thread(pid, reset_thread, c);
	/* Children inherited the bounded limit; only a member's own record knows better. */
	if (own) {
		qos_rtguard_restore_limit(c->mgr, c->group, pid, c->origin.rt_soft, c->origin.rt_hard);
	}
	send_back(c, pid, 0, true);
	qos_sys_for_each_thread(pid, restore_class, c);
}

/*
 * A thread member's process gets the loosest RLIMIT_RTTIME any of its
 * threads' records held (RLIM_INFINITY is the largest value): the limit is
 * the process's, and each record holds what it was before the bound.
 */
static void restore_thread_rttime(struct rc_ctx *c, pid_t pid, const struct qos_journal_entry *e) {
	uint64_t soft, hard;
	if (qos_sys_get_rttime(pid, &soft, &hard) != 0) {
		return;
	}
	uint64_t new_hard = e->rt_hard > hard ? e->rt_hard : hard;
	uint64_t new_soft = e->rt_soft > soft ? e->rt_soft : soft;
	if (new_soft > new_hard) {
		new_soft = new_hard;
	}
	if (new_soft != soft || new_hard != hard) {
		qos_rtguard_restore_limit(c->mgr, c->group, pid, new_soft, new_hard);
	}
}

/* A thread moved on its own (hybrid layout: the v1 cpu tree only). */
static void release_tid(pid_t tid, void *data) {
	struct rc_ctx *c = data;
	pid_t pid = qos_sys_tgid(tid);
	c->known = true;
	c->lent = false;
	bool own = pid && own_record(c, pid, tid);
	if (!own) {
		find_origin(c, pid ? pid : tid);
	}
	c->own = own;
	c->own_tid = own ? tid : 0;
	reset_thread(tid, c);
	if (own) {
		restore_thread_rttime(c, pid, &c->origin);
	}
	send_back(c, tid, tid, false);
	restore_class(tid, c);
}

/*
 * A thread member on cgroup v2, found by its record only (it never left its
 * process's group): back to time-sharing at its old nice, and its process
 * given the loosest RLIMIT_RTTIME any of its threads' records held.
 */
static void release_recorded_thread(pid_t pid, pid_t tid, const struct qos_journal_entry *e,
		void *data) {
	struct rc_ctx *c = data;
	if (qos_sys_start_time(pid, tid) != e->start_time) {
		return;
	}
	c->origin = *e;
	c->known = true;
	c->lent = false;
	c->own = true;
	c->own_tid = tid;
	reset_thread(tid, c);
	restore_thread_rttime(c, pid, e);
	restore_class(tid, c);
}

/* Thaws a group no reserve owns, sends its tasks back and removes it. */
static int release_group(struct qos_manager *mgr, const char *name) {
	struct rc_ctx *c = calloc(1, sizeof(*c));
	if (!c) {
		return -ENOMEM;
	}
	c->mgr = mgr;
	c->group = name;
	qos_cgroup_freeze(&mgr->cg, name, false);
	qos_cgroup_for_each_pid(&mgr->cg, name, false, release_pid, c);
	if (mgr->cg.layout == QOS_CG_HYBRID) {
		qos_cgroup_for_each_pid(&mgr->cg, name, true, release_tid, c);
	} else {
		qos_journal_for_each_thread(&mgr->cg, name, release_recorded_thread, c);
	}
	free(c);
	return qos_cgroup_group_remove(&mgr->cg, name);
}

static void reconcile_group(const char *name, void *data) {
	struct qos_manager *mgr = data;
	qos_event_emit(&mgr->events, QOS_EVENT_ERROR, name, 0, 0, 0,
			"reconciling group left by an earlier instance");
	int err = release_group(mgr, name);
	if (err) {
		qos_reserve_removal_failed(mgr, name, name, err);
	}
}

static void reconcile_root(struct qos_manager *mgr) {
	/* Root-level thaw too, in case someone froze our whole subtree. */
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/cgroup.freeze", mgr->cg.v2_root);
	qos_sys_write_file(p, "0");
	qos_cgroup_for_each_group(&mgr->cg, reconcile_group, mgr);
}

/*
 * A root a dead manager left in another group of ours: released as our
 * own, then removed with that group given back as it was before it came
 * (cgroup.h), so nothing stays frozen there, nor that group unusable.
 */
static void reconcile_elsewhere(const char *parent, void *data) {
	struct qos_manager *mgr = data;
	struct qos_cgroup own = mgr->cg;
	if (qos_cgroup_retarget(&mgr->cg, parent)) {
		qos_event_emit(&mgr->events, QOS_EVENT_ERROR, NULL, 0, 0, 0,
				"reconciling the groups an earlier instance left in %s", parent);
		reconcile_root(mgr);
		qos_cgroup_remove_root(&mgr->cg);
	}
	mgr->cg = own;
}

void qos_reconcile(struct qos_manager *mgr) {
	reconcile_root(mgr);
	qos_cgroup_for_each_stale_root(&mgr->cg, reconcile_elsewhere, mgr);
}

static void retry_group(const char *name, void *data) {
	struct qos_manager *mgr = data;
	if (qos_reserve_find_by_group(mgr, name)) {
		return;
	}
	/* Listed twice on a hybrid layout while both directories remain. */
	if (release_group(mgr, name) != 0) {
		mgr->stale_groups++;
	}
}

void qos_reconcile_retry(struct qos_manager *mgr) {
	if (!mgr->stale_groups) {
		return;
	}
	mgr->stale_groups = 0;
	qos_cgroup_for_each_group(&mgr->cg, retry_group, mgr);
}
