/*
 * Members: joining (admission, the group, the journal of where a task came
 * from), leaving and exiting, children adopted or sent back, automatic
 * reserves (thesis 3.7.2), and a process's class set in one call.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include "qos/kernel/cputimer.h"
#include "qos/policy/core.h"
#include "qos/reserve/fallback.h"
#include "qos/member/guardian.h"
#include "qos/member/member.h"
#include "qos/reserve/optimistic.h"
#include "qos/reserve/reserve.h"
#include "qos/reserve/rtguard.h"
#include "qos/reserve/threads.h"
#include "qos/kernel/journal.h"
#include "qos/kernel/sys.h"

static struct qos_member *find_thread_member_in(struct qos_reserve *r, pid_t pid) {
	for (size_t i = 0; i < r->n_members; i++) {
		if (r->members[i]->pid == pid && r->members[i]->tid) {
			return r->members[i];
		}
	}
	return NULL;
}

static struct qos_member *find_thread_member(struct qos_manager *mgr, pid_t pid,
		struct qos_reserve *except) {
	for (struct qos_reserve *r = mgr->reserves; r; r = r->next) {
		struct qos_member *t = r != except ? find_thread_member_in(r, pid) : NULL;
		if (t) {
			return t;
		}
	}
	return NULL;
}

static struct qos_member *find_process_member_in(struct qos_reserve *r, pid_t pid) {
	for (size_t i = 0; i < r->n_members; i++) {
		if (r->members[i]->pid == pid && !r->members[i]->tid) {
			return r->members[i];
		}
	}
	return NULL;
}

/* Whether the task has exited: a zombie (a process only once its last thread has). */
static bool exited(pid_t pid, pid_t tid) {
	char state = qos_sys_thread_state(tid ? tid : pid);
	if (state != 'Z' && state != 'X') {
		return false;
	}
	return tid || qos_sys_for_each_thread(pid, NULL, NULL) <= 1;
}

/*
 * Who may not join: the manager and its guardian (frozen or throttled, they
 * could not thaw anyone, themselves included), a pid that is a thread rather
 * than a process (a thread member would be keyed by it), a task that has
 * exited, and a thread whose process is a member of another reserve as a
 * whole: the process member's passes give its every thread that reserve's
 * policy, and send the whole process home when it leaves.
 */
static bool may_join(struct qos_manager *mgr, struct qos_reserve *r, pid_t pid, pid_t tid,
		char *err, size_t err_len) {
	if (pid == getpid() || (mgr->guardian.pid > 0 && pid == mgr->guardian.pid)) {
		snprintf(err, err_len, "%d is the QoS manager%s; it cannot join a reserve", pid,
				pid == getpid() ? "" : "'s guardian");
		return false;
	}
	if (qos_sys_tgid(pid) != pid) {
		snprintf(err, err_len,
				"%d is a thread, not a process: give its process id and "
				"the thread id",
				pid);
		return false;
	}
	if (exited(pid, tid)) {
		snprintf(err, err_len, "%s %d has exited", tid ? "thread" : "process", tid ? tid : pid);
		return false;
	}
	for (struct qos_reserve *o = mgr->reserves; tid && o; o = o->next) {
		if (o != r && find_process_member_in(o, pid)) {
			snprintf(err, err_len,
					"process %d is a member of '%s' as a whole: it "
					"leaves it, or joins as a whole, before thread %d can join another "
					"reserve",
					pid, o->name, tid);
			return false;
		}
	}
	return true;
}

static bool member_alive(const struct qos_member *m) {
	return qos_sys_start_time(m->pid, m->tid) == m->start_time;
}

void qos_member_send_home(struct qos_manager *mgr, const char *reserve, pid_t pid, pid_t tid,
		bool whole_process, const char *v2, const char *cpu) {
	struct qos_cgroup *cg = &mgr->cg;
	int e = qos_cgroup_restore(cg, pid, tid, whole_process, v2, cpu);
	if (e == 0 || e == -ESRCH) {
		return; /* back, or gone */
	}
	/* Where it came from is gone: the nearest ancestor, rather than the top. */
	char near_v2[QOS_CG_REL_PATH], near_cpu[QOS_CG_REL_PATH];
	snprintf(near_v2, sizeof(near_v2), "%s", v2);
	snprintf(near_cpu, sizeof(near_cpu), "%s", cpu);
	int e2 = qos_cgroup_restore_near(cg, pid, tid, whole_process, near_v2, near_cpu);
	if (e2 == -ESRCH) {
		return;
	}
	const char *to = whole_process ? near_v2 : near_cpu;
	qos_event_emit(&mgr->events, QOS_EVENT_ERROR, reserve, pid, tid, 0,
			"cannot return %d to %s: %s; moved to %s instead%s%s", tid ? tid : pid,
			v2[0] ? v2 : cpu, strerror(-e), to[0] && strcmp(to, "/") ? to : "the top of the tree",
			e2 ? ", which refused it too: " : "", e2 ? strerror(-e2) : "");
	if (e2) {
		qos_cgroup_restore(cg, pid, tid, whole_process, "", "/");
	}
}

static void send_home(struct qos_reserve *r, pid_t pid, pid_t tid, bool whole_process,
		const char *v2, const char *cpu) {
	qos_member_send_home(r->mgr, r->name, pid, tid, whole_process, v2, cpu);
}

/*
 * Another member of m's process that still holds the RLIMIT_RTTIME bound,
 * which is per process: several thread members share it.
 */
static struct qos_member *bound_sibling(struct qos_manager *mgr, const struct qos_member *m) {
	for (struct qos_reserve *r = mgr->reserves; r; r = r->next) {
		for (size_t i = 0; i < r->n_members; i++) {
			struct qos_member *o = r->members[i];
			if (o != m && o->pid == m->pid && o->rttime.bounded) {
				return o;
			}
		}
	}
	return NULL;
}

/*
 * fifo and rr come only with an RLIMIT_RTTIME bound.  Reading another
 * user's limits takes what lowering them does (the same user, or
 * CAP_SYS_RESOURCE), so a read that fails means no bound can be set.
 */
bool qos_member_rttime_boundable(struct qos_manager *mgr, const struct qos_params *p, pid_t pid,
		char *err, size_t err_len) {
	uint64_t soft, hard;
	if (!mgr->config.rttime_us || (p->policy != QOS_POLICY_FIFO && p->policy != QOS_POLICY_RR)) {
		return true;
	}
	int e = qos_sys_get_rttime(pid, &soft, &hard);
	if (e == 0 || e == -ESRCH) {
		return true; /* gone: the join finds out */
	}
	snprintf(err, err_len,
			"cannot bound RLIMIT_RTTIME of %d (%s; another user's process "
			"needs CAP_SYS_RESOURCE): no %s without the bound",
			pid, strerror(-e), qos_policy_name(p->policy));
	mgr->events.last_refusal = QOS_REFUSAL_FORBIDDEN;
	return false;
}

void qos_member_bound_rttime(struct qos_member *m) {
	const struct qos_reserve *r = m->reserve;
	if (m->rttime.bounded || !qos_policy_is_rt(r->params.policy) ||
			r->params.policy == QOS_POLICY_QOS) {
		return;
	}
	int e = qos_sys_bound_rttime(m->pid, r->mgr->config.rttime_us, &m->rttime.old_soft,
			&m->rttime.old_hard);
	if (e != 0) {
		if (e != -ESRCH) {
			qos_event_emit(&r->mgr->events, QOS_EVENT_ERROR, r->name, m->pid, m->tid, 0,
					"cannot bound RLIMIT_RTTIME of %d: %s", m->pid, strerror(-e));
		}
		return;
	}
	m->rttime.bounded = true;
	/* The guard looks once a pass, and needs three of them under the limit. */
	if (m->rttime.old_hard < r->mgr->config.rttime_us &&
			m->rttime.old_hard < 3 * (uint64_t)QOS_HOUSEKEEPING_US) {
		qos_event_emit(&r->mgr->events, QOS_EVENT_ERROR, r->name, m->pid, m->tid, 0,
				"%d has an RLIMIT_RTTIME of its own of %.2f s, too short for the guard to "
				"move a thread that runs without sleeping to other in time: the kernel kills "
				"one that runs that long",
				m->pid, (double)m->rttime.old_hard / 1e6);
	}
}

struct restore_ctx {
	const struct qos_member *m;
	const struct qos_sched *orig;
	bool rt_held; /* under a bound that stays: no real-time class back */
	pid_t held; /* a thread given none, for the event */
};

static void restore_one(pid_t tid, void *data) {
	struct restore_ctx *c = data;
	bool known = false;
	const struct qos_sched *s = c->m ? qos_member_orig_of(c->m, tid, &known) : c->orig;
	if (qos_sys_sched_is_rt(s) && (!known || c->rt_held)) {
		/* Time-sharing, where release left it: started since, or under a
		 * bound that stays. */
		if (known) {
			c->held = tid;
		}
		return;
	}
	/* Released to SCHED_OTHER at its nice already. */
	if (s->policy != 0 /* SCHED_OTHER */ || s->reset_on_fork) {
		qos_sys_set_sched(tid, s);
	}
}

void qos_member_restore_sched(struct qos_reserve *r, struct qos_member *m, pid_t pid,
		const struct qos_sched *orig) {
	struct restore_ctx c = { .m = m,
		.orig = orig,
		.rt_held = m && qos_sys_rttime_tighter(m->pid, m->rttime.orig_hard) };
	if (m && m->tid) {
		restore_one(m->tid, &c);
	} else {
		qos_sys_for_each_thread(m ? m->pid : pid, restore_one, &c);
	}
	if (c.held) {
		qos_event_emit(&r->mgr->events, QOS_EVENT_ERROR, r->name, m->pid, c.held, 0,
				"real-time threads "
				"of %d (%d among them) are given back as time-sharing: the RLIMIT_RTTIME bound "
				"stays (raising it needs CAP_SYS_RESOURCE), and the kernel would kill one that "
				"ran that long without sleeping",
				m->pid, c.held);
	}
}

struct leave_ctx {
	const struct qos_params *p;
	const struct qos_member *m;
	const struct qos_sched *orig;
};

/* A leaving thread to SCHED_OTHER at its old nice, a deadline one released cleanly. */
static void leave_one(pid_t tid, void *data) {
	struct leave_ctx *c = data;
	if (!qos_sys_release_deadline(tid)) {
		return;
	}
	int nice = c->m ? qos_member_orig_of(c->m, tid, NULL)->nice : c->orig->nice;
	qos_sys_set_thread_policy(tid, QOS_POLICY_OTHER, nice, c->p->priority, 0,
			c->p->period_us * 1000u);
}

void qos_member_release_threads(struct qos_reserve *r, struct qos_member *m, pid_t pid,
		const struct qos_sched *orig) {
	struct leave_ctx c = { .p = &r->params, .m = m, .orig = orig };
	if (m) {
		qos_threads_for_each(r->mgr, m, leave_one, &c);
	} else {
		qos_sys_for_each_thread(pid, leave_one, &c);
	}
}

static void restore_member(struct qos_member *m) {
	struct qos_manager *mgr = m->reserve->mgr;
	/* Back to time-sharing first, so a moved RT thread never lands in a
	 * group without RT bandwidth. */
	qos_member_release_threads(m->reserve, m, m->pid, &m->home.sched);
	struct qos_member *sibling = m->rttime.bounded ? bound_sibling(mgr, m) : NULL;
	if (sibling) {
		/*
		 * The bound stays for the sibling, which gives back the loosest
		 * limit either saw (unbounded sorts last): the one from before the
		 * first of them bounded it.
		 */
		if (m->rttime.old_hard > sibling->rttime.old_hard) {
			sibling->rttime.old_hard = m->rttime.old_hard;
		}
		if (m->rttime.old_soft > sibling->rttime.old_soft) {
			sibling->rttime.old_soft = m->rttime.old_soft;
		}
	} else if (m->rttime.bounded) {
		qos_rtguard_restore_limit(mgr, m->reserve->name, m->pid, m->rttime.old_soft,
				m->rttime.old_hard);
	}
	send_home(m->reserve, m->pid, m->tid, m->tid == 0, m->home.v2, m->home.cpu);
	if (!m->home.moving) {
		qos_member_restore_sched(m->reserve, m, m->pid, &m->home.sched);
	}
}

const struct qos_sched *qos_member_orig_of(const struct qos_member *m, pid_t tid, bool *known) {
	for (size_t i = 0; i < m->home.n_threads; i++) {
		if (m->home.threads[i].tid == tid) {
			if (known) {
				*known = true;
			}
			return &m->home.threads[i].sched;
		}
	}
	if (known) {
		*known = m->tid == tid;
	}
	return &m->home.sched;
}

struct capture_ctx {
	struct qos_member *m;
	size_t cap;
};

static void capture_one(pid_t tid, void *data) {
	struct capture_ctx *c = data;
	struct qos_member *m = c->m;
	struct qos_thread_orig *grown =
			qos_array_room(m->home.threads, &c->cap, m->home.n_threads, sizeof(*grown));
	if (!grown) {
		return; /* that thread gets the member's class back */
	}
	m->home.threads = grown;
	struct qos_thread_orig *t = &m->home.threads[m->home.n_threads];
	t->tid = tid;
	if (qos_sys_get_sched(tid, &t->sched)) {
		m->home.n_threads++;
	}
}

/*
 * Each thread's class before the join, for a process member (one
 * sched_getattr a thread): leaving gives each its own back, not all of them
 * the main thread's.  Every thread is listed, so that one started later is
 * known as such (qos_member_restore_sched gives it no real-time class).
 */
static void capture_orig(struct qos_manager *mgr, struct qos_member *m) {
	m->home.sched = (struct qos_sched){ .policy = 0 };
	qos_sys_get_sched(m->tid ? m->tid : m->pid, &m->home.sched);
	/* The limit as it was before any of our members bounded it. */
	const struct qos_member *b = bound_sibling(mgr, m);
	uint64_t soft;
	if (b) {
		m->rttime.orig_hard = b->rttime.old_hard;
	} else if (qos_sys_get_rttime(m->pid, &soft, &m->rttime.orig_hard) != 0) {
		m->rttime.orig_hard = 0; /* unknown: real time given back as before */
	}
	if (m->tid) {
		return;
	}
	struct capture_ctx c = { .m = m };
	qos_sys_for_each_thread(m->pid, capture_one, &c);
}

/* Copies what from holds about its threads' classes into m. */
static void copy_orig(struct qos_member *m, const struct qos_member *from) {
	m->home.sched = from->home.sched;
	m->rttime.orig_hard = from->rttime.orig_hard;
	if (!from->home.n_threads) {
		return;
	}
	size_t bytes = from->home.n_threads * sizeof(*from->home.threads);
	m->home.threads = malloc(bytes);
	if (!m->home.threads) {
		return; /* each gets the process's class back, no real-time one */
	}
	memcpy(m->home.threads, from->home.threads, bytes);
	m->home.n_threads = from->home.n_threads;
}

static struct qos_member *origin_member(struct qos_reserve *r, pid_t pid, bool *thread_child);

/*
 * A task not yet adopted or sent home from one of our groups (a member's
 * child the pass has not seen) took that reserve's class and cgroups from
 * its parent: where it came from is where that member came from.
 */
/* The group under our root that path (relative to base) names, or NULL. */
static const char *our_group(const char *path, const char *root, const char *base) {
	const char *rel = root + strlen(base);
	size_t n = strlen(rel);
	return strncmp(path, rel, n) == 0 && path[n] == '/' ? path + n + 1 : NULL;
}

/* What a child takes from the member it came from: no real-time class,
 * which its parent may have had with reset-on-fork. */
static struct qos_sched inherited_class(const struct qos_sched *parent) {
	if (!qos_sys_sched_is_rt(parent)) {
		return *parent;
	}
	return (struct qos_sched){ .policy = 0, .nice = parent->nice };
}

static void origin_in_our_group(struct qos_manager *mgr, struct qos_member *m) {
	/* On hybrid a thread member's child is in our cpu tree only. */
	const char *group = our_group(m->home.v2, mgr->cg.v2_root, mgr->cg.v2_base);
	if (!group && mgr->cg.layout == QOS_CG_HYBRID) {
		group = our_group(m->home.cpu, mgr->cg.cpu_root, mgr->cg.cpu_base);
	}
	struct qos_reserve *r = group ? qos_reserve_find_by_group(mgr, group) : NULL;
	bool thread_child;
	const struct qos_member *o = r ? origin_member(r, m->pid, &thread_child) : NULL;
	if (!o) {
		return;
	}
	snprintf(m->home.v2, sizeof(m->home.v2), "%s", o->home.v2);
	snprintf(m->home.cpu, sizeof(m->home.cpu), "%s", o->home.cpu);
	free(m->home.threads);
	m->home.threads = NULL;
	m->home.n_threads = 0;
	m->home.sched = inherited_class(&o->home.sched);
}

/* Records tid's class from before, over what capture_orig read. */
static void set_thread_orig(struct qos_member *m, pid_t tid, const struct qos_sched *s) {
	for (size_t i = 0; i < m->home.n_threads; i++) {
		if (m->home.threads[i].tid == tid) {
			m->home.threads[i].sched = *s;
			return;
		}
	}
	struct qos_thread_orig *grown =
			realloc(m->home.threads, (m->home.n_threads + 1) * sizeof(*grown));
	if (!grown) {
		return; /* it gets the process's class back */
	}
	m->home.threads = grown;
	m->home.threads[m->home.n_threads++] = (struct qos_thread_orig){ .tid = tid, .sched = *s };
}

struct release_ctx {
	const struct qos_member *m;
	bool deadline; /* deadline threads leave too */
	bool any;
};

static void release_rt_one(pid_t tid, void *data) {
	struct release_ctx *c = data;
	struct qos_sched now;
	if (!qos_sys_get_sched(tid, &now)) {
		return;
	}
	bool dl = c->deadline && now.policy == 6; /* SCHED_DEADLINE */
	if (!qos_sys_sched_is_rt(&now) && !dl) {
		return;
	}
	if (dl && !qos_sys_release_deadline(tid)) {
		return;
	}
	qos_sys_set_thread_policy(tid, QOS_POLICY_OTHER, qos_member_orig_of(c->m, tid, NULL)->nice, 0,
			0, 0);
	c->any = true;
}

/*
 * A fifo/rr task cannot enter a group without real-time runtime (the
 * kernel says EINVAL): joining anything but a fifo/rr reserve, it goes to
 * time-sharing first, which the reserve's class replaces at once.  A
 * deadline thread joining anything but a qos reserve leaves its class here
 * too, while its state says whether it sleeps (qos_sys_release_deadline):
 * moved into a frozen group first, it is woken to enter the freezer and
 * read as running just before it sleeps there, and the kernel then keeps
 * its bandwidth for good.  True when some thread was released (a failed
 * join gives them their class back).
 */
static bool release_rt_before_move(struct qos_reserve *r, const struct qos_member *m) {
	enum qos_policy p = r->params.policy;
	if (p == QOS_POLICY_FIFO || p == QOS_POLICY_RR) {
		return false;
	}
	struct release_ctx c = { .m = m, .deadline = p != QOS_POLICY_QOS };
	if (m->tid) {
		release_rt_one(m->tid, &c);
	} else {
		qos_sys_for_each_thread(m->pid, release_rt_one, &c);
	}
	return c.any;
}

static void member_free(struct qos_member *m) {
	if (!m) {
		return;
	}
	free(m->home.threads);
	free(m);
}

/*
 * The member that takes over an automatic reserve: a process member before a
 * thread member, and one without an automatic reserve of its own, whose name
 * it would otherwise take too (a process that left its own to join this one
 * still owns it while others stay in it).
 */
static pid_t next_owner(struct qos_reserve *r) {
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < r->n_members; i++) {
			const struct qos_member *m = r->members[i];
			char name[QOS_NAME_MAX + 1];
			snprintf(name, sizeof(name), QOS_AUTO_PREFIX "%d", m->pid);
			const struct qos_reserve *taken = qos_reserve_find(r->mgr, name);
			if ((pass == 0 && m->tid) || (taken && taken != r)) {
				continue;
			}
			return m->pid;
		}
	}
	return 0;
}

static bool rename_auto(struct qos_reserve *r, pid_t new_owner) {
	char name[QOS_NAME_MAX + 1], old[QOS_NAME_MAX + 1];
	if (new_owner <= 0) {
		/*
		 * Every member owns another automatic reserve: this one is nobody's
		 * now.  It keeps its members until they leave, under a name no
		 * process's own lookup (auto-PID) finds, so a process that is given
		 * the dead owner's pid does not take it over.
		 */
		snprintf(name, sizeof(name), QOS_AUTO_PREFIX "%d-orphan", r->owner);
		new_owner = 0;
	} else {
		snprintf(name, sizeof(name), QOS_AUTO_PREFIX "%d", new_owner);
	}
	snprintf(old, sizeof(old), "%s", r->name);
	/* The group keeps its directory name: cgroup2 cannot rename groups. */
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->owner = new_owner;
	qos_event_emit(&r->mgr->events, QOS_EVENT_RESERVE_RENAMED, r->name, new_owner, 0, 0, "%s", old);
	return true;
}

static bool has_member_of(const struct qos_reserve *r, pid_t pid) {
	for (size_t i = 0; i < r->n_members; i++) {
		if (r->members[i]->pid == pid) {
			return true;
		}
	}
	return false;
}

static bool other_process_member(const struct qos_reserve *r, const struct qos_member *m) {
	for (size_t i = 0; i < r->n_members; i++) {
		if (r->members[i] != m && r->members[i]->tid == 0) {
			return true;
		}
	}
	return false;
}

void qos_member_remove(struct qos_member *m, bool alive, bool exited) {
	struct qos_reserve *r = m->reserve;
	struct qos_manager *mgr = r->mgr;
	/*
	 * The last process member's children the pass has not seen yet (it
	 * forked and went at once) are adopted or sent where it came from
	 * now, while it is still there to say where: with no member left they
	 * stayed in the group, under its limits, a member of nothing.  So are
	 * a thread member's (on hybrid in the group's cpu tree only).
	 */
	if (m->tid || !other_process_member(r, m)) {
		qos_member_adopt_children(r);
	}
	if (m->pidfd >= 0) {
		epoll_ctl(mgr->epoll_fd, EPOLL_CTL_DEL, m->pidfd, NULL);
		close(m->pidfd);
	}
	qos_fallback_retire_member(r, m, exited);
	qos_optimistic_forget(r, m->pid, m->tid);
	if (m->usage.has_cpu_timer) {
		qos_cputimer_delete(m->usage.cpu_timer);
	}
	r->timer.armed = false; /* the shares change */
	/* Its threads' real-time estimates go with them, ready for the next
	 * reserve's guard (which may look before this one's next pass). */
	qos_rtguard_forget_member(r, m);
	if (alive && member_alive(m)) {
		restore_member(m);
	}
	if (m->outside_root) {
		qos_guardian_track(mgr, m, false);
	}
	if (r->cgroup.exists) {
		qos_journal_forget(&mgr->cg, r->group, m->pid, m->tid);
	}
	for (size_t i = 0; i < r->n_members; i++) {
		if (r->members[i] == m) {
			memmove(&r->members[i], &r->members[i + 1],
					(r->n_members - i - 1) * sizeof(*r->members));
			r->n_members--;
			break;
		}
	}
	qos_event_emit(&mgr->events, exited ? QOS_EVENT_MEMBER_EXITED : QOS_EVENT_MEMBER_LEFT, r->name,
			m->pid, m->tid, 0, NULL);
	pid_t gone = m->pid;
	qos_threads_close_task_dir(mgr, m);
	member_free(m);
	qos_reserve_root_weight_update(mgr);

	if (r->n_members == 0) {
		/* Guarantees are held only while someone uses them (thesis 3.7.2). */
		if (r->granted) {
			qos_admission_release(&mgr->adm, r->granted_ppm);
			r->granted = false;
			r->granted_ppm = 0;
		}
		/* No period runs without members: shown in its fallback, it would
		 * stay so until the next join restarts policing. */
		r->police.in_fallback = false;
		r->fb.applied = false;
		r->fb.next_check_us = UINT64_MAX;
		if (r->cgroup.exists) {
			qos_cgroup_freeze(&mgr->cg, r->group, false);
		}
		if (r->is_auto) {
			qos_reserve_free(r);
		}
	} else if (r->is_auto && gone == r->owner && !has_member_of(r, gone)) {
		/* A daemon that forks and exits keeps the reserve set up for it.
		 * The owner's thread member folded into its process member (or one
		 * of its threads leaving) leaves the owner in. */
		rename_auto(r, next_owner(r));
	}
}

static bool admit(struct qos_reserve *r, char *err, size_t err_len) {
	struct qos_manager *mgr = r->mgr;
	uint64_t now = qos_sys_now_us();
	if (qos_policy_is_rt(r->params.policy) &&
			!qos_reserve_rt_grants_allowed(mgr, now, err, err_len)) {
		qos_event_emit(&mgr->events, QOS_EVENT_ADMISSION_REFUSED, r->name, 0, 0, 0, "%s", err);
		return false;
	}
	if (r->params.policy != QOS_POLICY_QOS || r->granted) {
		return true;
	}
	char why[256];
	uint64_t ppm = qos_params_util_ppm(&r->params);
	if (!qos_admission_request(&mgr->adm, ppm, why, sizeof(why))) {
		snprintf(err, err_len, "reserve '%s' refused: %s", r->name, why);
		mgr->events.last_refusal = QOS_REFUSAL_CAPACITY;
		qos_event_emit(&mgr->events, QOS_EVENT_ADMISSION_REFUSED, r->name, 0, 0, 0, "%s", why);
		return false;
	}
	r->granted = true;
	r->granted_ppm = ppm;
	qos_event_emit(&mgr->events, QOS_EVENT_ADMISSION_GRANTED, r->name, 0, 0, 0, "%.1f%% of a CPU",
			ppm / 1e4);
	return true;
}

bool qos_member_fits_threads(const struct qos_manager *mgr, const struct qos_params *p, char *err,
		size_t err_len) {
	/*
	 * A thread moves alone only in the v1 cpu tree (hybrid); the freezer
	 * and every pure-v2 control act on the group's processes, which a
	 * thread member's are not.
	 */
	bool other_or_idle = p->policy == QOS_POLICY_OTHER || p->policy == QOS_POLICY_IDLE;
	/* On hybrid the v1 cpu group holds the thread to a kernel ceiling or
	 * real-time limit; a ceiling outside the kernel's range is a freeze. */
	if (p->policy == QOS_POLICY_PAUSE ||
			(qos_params_has_limit(p) && p->fallback == QOS_POLICY_PAUSE &&
					p->policy != QOS_POLICY_QOS &&
					(mgr->cg.layout != QOS_CG_HYBRID ||
							(other_or_idle && !qos_params_kernel_ceiling(p))))) {
		snprintf(err, err_len, "pause freezes whole processes; join the process instead");
		return false;
	}
	if (mgr->cg.layout != QOS_CG_HYBRID && qos_params_has_limit(p) && other_or_idle) {
		snprintf(err, err_len,
				"on cgroup v2 a limit on %s holds whole processes; "
				"join the process instead",
				qos_policy_name(p->policy));
		return false;
	}
	return true;
}

static bool group_taken(struct qos_manager *mgr, const char *group) {
	/*
	 * Nor a group that refused removal (its tasks are not this reserve's),
	 * nor a control file of the root ("tasks", "cpu.max", ...).
	 */
	return qos_reserve_find_by_group(mgr, group) || qos_cgroup_name_is_file(&mgr->cg, group) ||
			(mgr->stale_groups && qos_cgroup_group_exists(&mgr->cg, group));
}

static bool ensure_group(struct qos_reserve *r, char *err, size_t err_len) {
	if (r->cgroup.exists) {
		return true;
	}
	/*
	 * The directory is named after the reserve, unless a renamed automatic
	 * reserve still holds that directory under its old name, or a group
	 * of that name waits to be removed.
	 */
	snprintf(r->group, sizeof(r->group), "%s", r->name);
	for (unsigned n = 1; group_taken(r->mgr, r->group); n++) {
		snprintf(r->group, sizeof(r->group), "%s~%u", r->name, n);
	}
	if (!qos_cgroup_group_create(&r->mgr->cg, r->group)) {
		snprintf(err, err_len, "cannot create cgroup for '%s': %s", r->name, strerror(errno));
		return false;
	}
	r->cgroup.exists = true;
	return true;
}

static bool same_sched(const struct qos_sched *a, const struct qos_sched *b) {
	return a->policy == b->policy && a->priority == b->priority && a->nice == b->nice &&
			a->reset_on_fork == b->reset_on_fork;
}

/*
 * Whether the next instance gives t its class back without a line of its
 * own (reconcile.c): the main thread gets the record's class, any other
 * thread that class without real time.  Only the threads that differ take
 * one of the record's QOS_JOURNAL_THREADS lines, so the cap binds only a
 * process with that many threads of their own class, not any process with
 * that many threads.
 */
static bool restored_unlisted(const struct qos_member *m, const struct qos_thread_orig *t) {
	if (t->tid == m->pid) {
		return same_sched(&t->sched, &m->home.sched);
	}
	struct qos_sched u = m->home.sched;
	if (qos_sys_sched_is_rt(&u)) {
		u = (struct qos_sched){ .policy = 0, .nice = u.nice };
	}
	return same_sched(&t->sched, &u);
}

/*
 * Writes where a joining task comes from onto its group (journal.h), so that
 * an instance started after a crash can send it back.  A failure is reported
 * once per manager: the join goes ahead, and reconciliation falls back to
 * another member's origin, or the top of the tree.
 */
static void journal_origin(struct qos_reserve *r, const struct qos_member *m) {
	struct qos_manager *mgr = r->mgr;
	struct qos_journal_entry *e = calloc(1, sizeof(*e));
	int err = -ENOMEM;
	if (e) {
		e->start_time = m->start_time;
		e->nice = m->home.sched.nice;
		e->policy = m->home.sched.policy;
		e->priority = m->home.sched.priority;
		e->reset_on_fork = m->home.sched.reset_on_fork;
		for (size_t i = 0; i < m->home.n_threads && e->n_threads < QOS_JOURNAL_THREADS; i++) {
			const struct qos_thread_orig *t = &m->home.threads[i];
			if (restored_unlisted(m, t)) {
				continue;
			}
			e->threads[e->n_threads++] = (struct qos_journal_thread){ .tid = t->tid,
				.policy = t->sched.policy,
				.priority = t->sched.priority,
				.nice = t->sched.nice,
				.reset_on_fork = t->sched.reset_on_fork };
		}
		/*
		 * The limit from before any member of this process bounded it:
		 * recorded bounded, a crash would leave the bound looking like the
		 * process's own, and the next instance would not restore it.
		 */
		const struct qos_member *b = m->rttime.bounded ? m : bound_sibling(mgr, m);
		e->rt_soft = e->rt_hard = (uint64_t)RLIM_INFINITY;
		if (b) {
			e->rt_soft = b->rttime.old_soft;
			e->rt_hard = b->rttime.old_hard;
		} else {
			qos_sys_get_rttime(m->pid, &e->rt_soft, &e->rt_hard);
		}
		snprintf(e->v2, sizeof(e->v2), "%s", m->home.v2);
		snprintf(e->cpu, sizeof(e->cpu), "%s", m->home.cpu);
		err = qos_journal_record(&mgr->cg, r->group, m->pid, m->tid, e);
		free(e);
	}
	if (err && !mgr->journal_warned) {
		mgr->journal_warned = true;
		qos_event_emit(&mgr->events, QOS_EVENT_ERROR, r->name, m->pid, m->tid, 0,
				"cannot record where %d came from (%s): after a crash it would return "
				"to another member's cgroup",
				m->tid ? m->tid : m->pid, strerror(-err));
	}
}

static bool add_member(struct qos_reserve *r, struct qos_member *m) {
	struct qos_member **grown =
			qos_array_room(r->members, &r->cap_members, r->n_members, sizeof(*grown));
	if (!grown) {
		return false;
	}
	r->members = grown;
	r->members[r->n_members++] = m;
	r->timer.armed = false; /* the shares change */
	return true;
}

#define ADOPT_MAX 256

struct adopt_ctx {
	pid_t pids[ADOPT_MAX];
	size_t n;
};

static void collect_pid(pid_t pid, void *data) {
	struct adopt_ctx *c = data;
	if (c->n < ADOPT_MAX) {
		c->pids[c->n++] = pid;
	}
}

static void collect_new_pid(pid_t pid, void *data) {
	struct adopt_ctx *c = data;
	for (size_t i = 0; i < c->n; i++) {
		if (c->pids[i] == pid) {
			return;
		}
	}
	collect_pid(pid, data);
}

static struct qos_member *process_member(struct qos_reserve *r, pid_t pid) {
	for (size_t i = 0; i < r->n_members; i++) {
		if (r->members[i]->tid == 0 && (!pid || r->members[i]->pid == pid)) {
			return r->members[i];
		}
	}
	return NULL;
}

static bool is_process_member(pid_t pid, void *data) {
	return process_member(data, pid) != NULL;
}

static bool is_thread_member_process(pid_t pid, void *data) {
	return find_thread_member_in(data, pid) != NULL;
}

/*
 * Where a new process in the group came from: the process member it
 * descends from; else the thread member whose process forked it (on hybrid
 * such a child is in the cpu group only, outside the group's other trees,
 * so it is sent home, never adopted: *thread_child); else the first
 * process member.
 */
static struct qos_member *origin_member(struct qos_reserve *r, pid_t pid, bool *thread_child) {
	*thread_child = false;
	pid_t ancestor = qos_sys_find_ancestor(pid, is_process_member, r);
	if (!ancestor) {
		pid_t forker = qos_sys_find_ancestor(pid, is_thread_member_process, r);
		if (forker) {
			*thread_child = true;
			return find_thread_member_in(r, forker);
		}
	}
	return process_member(r, ancestor);
}

static void evict(struct qos_reserve *r, pid_t pid, const struct qos_member *origin) {
	qos_member_release_threads(r, NULL, pid, &origin->home.sched);
	send_home(r, pid, 0, true, origin->home.v2, origin->home.cpu);
	qos_member_restore_sched(r, NULL, pid, &origin->home.sched);
}

static bool adopt(struct qos_reserve *r, pid_t pid, const struct qos_member *origin) {
	struct qos_manager *mgr = r->mgr;
	struct qos_member *m = calloc(1, sizeof(*m));
	if (!m) {
		return false;
	}
	m->reserve = r;
	m->pid = pid;
	m->task_fd = -1;
	m->start_time = qos_sys_start_time(pid, 0);
	m->pidfd = m->start_time ? qos_sys_pidfd_open(pid, false) : -1;
	/* Leaving takes it back to where its ancestor came from. */
	snprintf(m->home.v2, sizeof(m->home.v2), "%s", origin->home.v2);
	snprintf(m->home.cpu, sizeof(m->home.cpu), "%s", origin->home.cpu);
	m->home.sched = inherited_class(&origin->home.sched);
	/* Watched for its exit before it counts as a member (closing the pidfd unwatches). */
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = m };
	if (m->pidfd < 0 || !member_alive(m) ||
			epoll_ctl(mgr->epoll_fd, EPOLL_CTL_ADD, m->pidfd, &ev) < 0 || !add_member(r, m)) {
		if (m->pidfd >= 0) {
			close(m->pidfd);
		}
		qos_threads_close_task_dir(mgr, m);
		member_free(m);
		return false;
	}
	/* The child gets an origin record of its own: its ancestor's may be gone
	 * (with the ancestor) by the time a crash is cleaned up. */
	journal_origin(r, m);
	qos_member_bound_rttime(m);
	qos_event_emit(&mgr->events, QOS_EVENT_MEMBER_JOINED, r->name, pid, 0, 0, "inherited from %d",
			origin->pid);
	unsigned n = (unsigned)qos_reserve_count_threads(r);
	r->police.parallel = n < mgr->adm.ncpus ? n : mgr->adm.ncpus;
	return true;
}
/* The group's processes, through its cgroup.procs kept open within the budget. */
static void list_group(struct qos_reserve *r, struct adopt_ctx *c) {
	struct qos_manager *mgr = r->mgr;
	if (r->cgroup.procs_fd < 0 && mgr->kept_fds_budget > 0) {
		r->cgroup.procs_fd = qos_cgroup_open_procs(&mgr->cg, r->group);
		if (r->cgroup.procs_fd >= 0) {
			mgr->kept_fds_budget--;
		}
	}
	if (r->cgroup.procs_fd >= 0) {
		if (qos_cgroup_for_each_pid_fd(r->cgroup.procs_fd, collect_pid, c) >= 0) {
			return;
		}
		/* The group went away under us: open it again next time. */
		qos_sys_drop_kept_fd(&r->cgroup.procs_fd, &mgr->kept_fds_budget);
		c->n = 0;
	}
	qos_cgroup_for_each_pid(&mgr->cg, r->group, false, collect_pid, c);
}

/*
 * On hybrid a thread member is in the group's cpu tree only, and so are the
 * processes its thread forks: they are found there, not in cgroup.procs of
 * the v2 tree that list_group reads.
 */
static void list_cpu_group(struct qos_reserve *r, struct adopt_ctx *c) {
	struct qos_manager *mgr = r->mgr;
	bool threads = false;
	for (size_t i = 0; i < r->n_members && !threads; i++) {
		threads = r->members[i]->tid != 0;
	}
	if (!threads || mgr->cg.layout != QOS_CG_HYBRID) {
		return;
	}
	char p[PATH_MAX];
	qos_cgroup_path(&mgr->cg, true, r->group, "cgroup.procs", p, sizeof(p));
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		return;
	}
	qos_cgroup_for_each_pid_fd(fd, collect_new_pid, c);
	close(fd);
}

/*
 * A member's children start in its cgroup (the kernel puts them there) but
 * not in the reserve: with reset-on-fork they do not even keep a real-time
 * policy.  With inherit they become members like their parent (thesis:
 * children join the parent's reserve); without, they go back to where the
 * parent came from.  Found at each housekeeping pass.
 */
void qos_member_adopt_children(struct qos_reserve *r) {
	if (!r->cgroup.exists || r->n_members == 0) {
		return;
	}
	struct adopt_ctx c = { .n = 0 };
	list_group(r, &c);
	list_cpu_group(r, &c);
	bool adopted = false;
	for (size_t i = 0; i < c.n; i++) {
		pid_t pid = c.pids[i];
		if (qos_reserve_find_member(r->mgr, pid, 0) || find_thread_member(r->mgr, pid, NULL)) {
			continue;
		}
		bool thread_child;
		struct qos_member *origin = origin_member(r, pid, &thread_child);
		if (!origin) {
			continue;
		}
		if (r->params.inherit && !thread_child && adopt(r, pid, origin)) {
			adopted = true;
		} else {
			evict(r, pid, origin);
		}
	}
	if (adopted) {
		qos_reserve_root_weight_update(r->mgr);
	}
}

static void release_if_unused(struct qos_reserve *r) {
	if (r->n_members == 0 && r->granted) {
		qos_admission_release(&r->mgr->adm, r->granted_ppm);
		r->granted = false;
		r->granted_ppm = 0;
	}
}

/*
 * A join in progress: what it has done so far, which join_undo takes back
 * in reverse order when a later step fails.
 */
struct join {
	struct qos_manager *mgr;
	struct qos_reserve *r;
	struct qos_member *m; /* the new member; owned by the join until added */
	struct qos_member *old; /* its membership in another reserve, left on the way */
	bool already; /* nothing to do: it is in r already */
	bool first; /* the reserve's first member */
	bool admitted; /* past admission: the grant goes back if no member is left */
	bool placed; /* being moved into r's group, its origin journaled */
	bool released; /* its real-time threads made time-sharing before the move */
	bool moved; /* home from old as time-sharing: a failure gives its class back */
	bool added; /* listed in r: leaving undoes all the rest */
	uint64_t now_us; /* when its period starts and its clocks are read */
};

static void join_undo(struct join *j) {
	struct qos_manager *mgr = j->mgr;
	struct qos_member *m = j->m;
	if (!m) {
		return;
	}
	if (j->added) {
		qos_member_remove(m, true, false);
		return;
	}
	if (m->outside_root) {
		qos_guardian_track(mgr, m, false);
	}
	if (j->placed) {
		qos_cgroup_restore(&mgr->cg, m->pid, m->tid, m->tid == 0, m->home.v2, m->home.cpu);
		if (j->released || j->moved) {
			qos_member_restore_sched(j->r, m, m->pid, &m->home.sched);
		}
		qos_journal_forget(&mgr->cg, j->r->group, m->pid, m->tid);
	}
	if (j->admitted) {
		release_if_unused(j->r);
	}
	if (m->pidfd >= 0) {
		close(m->pidfd);
	}
	qos_threads_close_task_dir(mgr, m);
	member_free(m);
}

/* The reserve to join: named, or made now from its qosrc definition. */
static bool join_find_reserve(struct join *j, const char *name, char *err, size_t err_len) {
	struct qos_manager *mgr = j->mgr;
	if (!name) {
		snprintf(err, err_len, "no reserve name");
		return false;
	}
	j->r = qos_reserve_find(mgr, name);
	if (!j->r && mgr->rules) {
		const struct qos_reserve_def *def = qos_rules_find_reserve(mgr->rules, name);
		struct qos_params p = def ? def->params : (struct qos_params){ 0 };
		if (def &&
				(!qos_reserve_valid(name, &p, err, err_len) ||
						!qos_reserve_create(mgr, name, &p, err, err_len))) {
			return false;
		}
		j->r = qos_reserve_find(mgr, name);
	}
	if (!j->r) {
		snprintf(err, err_len, "no reserve named '%s'", name);
		return false;
	}
	return true;
}

/*
 * Without CAP_SYS_NICE the kernel lets a thread leave SCHED_IDLE, or lower
 * its nice again, only as far as its RLIMIT_NICE allows (SCHED_IDLE counts
 * as nice 20).  A thread member gets its class per thread, so one the
 * manager could not give its class back to at the leave is refused now.
 */
static bool thread_class_returnable(const struct qos_params *p, pid_t pid, pid_t tid, char *err,
		size_t err_len) {
	errno = 0;
	int nice = getpriority(PRIO_PROCESS, (id_t)tid);
	if (errno) {
		return true; /* the join finds out what became of it */
	}
	bool idle = p->policy == QOS_POLICY_IDLE ||
			(qos_params_has_limit(p) && p->fallback == QOS_POLICY_IDLE);
	bool nicer = p->policy == QOS_POLICY_OTHER && p->nice > nice;
	struct rlimit rl;
	if ((!idle && !nicer) || qos_sys_has_sys_nice() || prlimit(pid, RLIMIT_NICE, NULL, &rl) != 0 ||
			rl.rlim_cur == RLIM_INFINITY || (rlim_t)(20 - nice) <= rl.rlim_cur) {
		return true;
	}
	snprintf(err, err_len,
			"thread %d could not get nice %d back after %s: without CAP_SYS_NICE the "
			"kernel lets it return only as far as its RLIMIT_NICE (%llu) allows; join the "
			"process, or give the compositor CAP_SYS_NICE",
			(int)tid, nice, idle ? "idle" : "a higher nice", (unsigned long long)rl.rlim_cur);
	return false;
}

/* Whether the task may join r now; opens the pidfd it is held by. */
static bool join_check(struct join *j, pid_t pid, pid_t tid, char *err, size_t err_len) {
	struct qos_manager *mgr = j->mgr;
	struct qos_reserve *r = j->r;
	struct qos_member *m = j->m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(err, err_len, "out of memory");
		return false;
	}
	m->pid = pid;
	m->tid = tid == pid ? 0 : tid;
	m->pidfd = -1;
	m->task_fd = -1;
	m->start_time = qos_sys_start_time(pid, m->tid);
	if (!m->start_time) {
		snprintf(err, err_len, "no such %s %d", m->tid ? "thread" : "process",
				m->tid ? m->tid : pid);
		return false;
	}
	if (!may_join(mgr, r, pid, m->tid, err, err_len)) {
		return false;
	}
	if (m->tid && find_process_member_in(r, pid)) {
		j->already = true; /* with its whole process */
		return true;
	}
	if (m->tid &&
			(!qos_member_fits_threads(mgr, &r->params, err, err_len) ||
					!thread_class_returnable(&r->params, pid, m->tid, err, err_len))) {
		return false;
	}
	/* Every member, not only the first (admit): each one would keep its
	 * real-time class, or stay frozen, after a crash with no guardian. */
	if (!qos_member_rttime_boundable(mgr, &r->params, pid, err, err_len) ||
			!qos_guardian_allows(mgr, &r->params, err, err_len)) {
		qos_event_emit(&mgr->events, QOS_EVENT_ADMISSION_REFUSED, r->name, pid, m->tid, 0, "%s",
				err);
		return false;
	}
	m->pidfd = qos_sys_pidfd_open(m->tid ? m->tid : pid, m->tid != 0);
	if (m->pidfd < 0 && m->tid && errno == EINVAL) {
		/* A kernel before 6.9 has no pidfd of a single thread: its
		 * process's says when the whole process is gone, and
		 * qos_member_find_exited when the thread is, earlier. */
		m->pidfd = qos_sys_pidfd_open(pid, false);
		m->exit_polled = true;
	}
	if (m->pidfd < 0) {
		snprintf(err, err_len, "pidfd_open(%d): %s", m->tid ? m->tid : pid, strerror(errno));
		return false;
	}
	return true;
}

struct qos_member *qos_member_find_exited(struct qos_manager *mgr) {
	for (struct qos_reserve *r = mgr->reserves; r; r = r->next) {
		for (size_t i = 0; i < r->n_members; i++) {
			if (r->members[i]->exit_polled && !member_alive(r->members[i])) {
				return r->members[i];
			}
		}
	}
	return NULL;
}

/*
 * Admission for the first member, and the group.  The first member gets
 * the group of the reserve's own policy: a new group has none yet, and the
 * last member to leave thawed the group and may have left it in its
 * fallback (cpu.idle).  A group the kernel refuses the reserve's real-time
 * bandwidth would hold its members to less than the manager counts (or to
 * what it held before).
 */
static bool join_admit(struct join *j, char *err, size_t err_len) {
	struct qos_manager *mgr = j->mgr;
	struct qos_reserve *r = j->r;
	if (j->already) {
		return true;
	}
	j->first = r->n_members == 0;
	if (j->first && !admit(r, err, err_len)) {
		return false;
	}
	j->admitted = true;
	if (!ensure_group(r, err, err_len)) {
		return false;
	}
	int gerr = j->first ? qos_reserve_apply_group(r) : 0;
	if (!gerr) {
		return true;
	}
	if (r->params.policy == QOS_POLICY_PAUSE) {
		snprintf(err, err_len, "'%s' refused by the kernel: its group cannot be frozen: %s",
				r->name, strerror(-gerr));
	} else {
		char why[384];
		qos_reserve_rt_refusal(mgr, r, gerr, why, sizeof(why));
		snprintf(err, err_len,
				"'%s' refused by the kernel: its group cannot get %s real-time bandwidth: %s",
				r->name, qos_policy_name(r->params.policy), why);
	}
	mgr->events.last_refusal = QOS_REFUSAL_CAPACITY;
	qos_event_emit(&mgr->events, QOS_EVENT_ADMISSION_REFUSED, r->name, j->m->pid, j->m->tid, 0,
			"%s", err);
	return false;
}

/*
 * Joining implies leaving: a task is in at most one reserve.  Where it
 * comes from is where it was before its old reserve, and its class the one
 * it had before that.
 */
static bool join_origin(struct join *j, char *err, size_t err_len) {
	struct qos_manager *mgr = j->mgr;
	struct qos_member *m = j->m;
	struct qos_member *old = j->old = qos_reserve_find_member(mgr, m->pid, m->tid);
	if (old == NULL && m->tid == 0) {
		/* Threads of this process joined individually are folded into it. */
		struct qos_member *t;
		while ((t = find_thread_member(mgr, m->pid, j->r))) {
			qos_member_remove(t, true, false);
		}
	}
	if (old && old->reserve == j->r) {
		j->already = true;
		return true;
	}
	if (old) {
		/* Keep the original placement, not the reserve it is leaving. */
		snprintf(m->home.v2, sizeof(m->home.v2), "%s", old->home.v2);
		snprintf(m->home.cpu, sizeof(m->home.cpu), "%s", old->home.cpu);
		copy_orig(m, old);
		/* Home and time-sharing on the way, not its old class: fifo
		 * there, it could not enter a group without real-time runtime. */
		old->home.moving = true;
		j->moved = true;
		qos_member_remove(old, true, false);
	} else {
		capture_orig(mgr, m);
	}
	if (!m->home.v2[0] &&
			!qos_cgroup_current(&mgr->cg, m->pid, m->tid, m->home.v2, sizeof(m->home.v2),
					m->home.cpu, sizeof(m->home.cpu))) {
		snprintf(err, err_len, "cannot read the cgroup of %d", m->pid);
		return false;
	}
	if (!old) {
		origin_in_our_group(mgr, m);
	}
	return true;
}

/*
 * Moves the task into r's group and lists it, watched for its exit
 * (unwatched, its exit would go unseen and a recycled pid could be given
 * its class; closing the pidfd on the way out unwatches it).
 */
static bool join_place(struct join *j, char *err, size_t err_len) {
	struct qos_manager *mgr = j->mgr;
	struct qos_reserve *r = j->r;
	struct qos_member *m = j->m;
	pid_t id = m->tid ? m->tid : m->pid;
	if (j->already) {
		return true;
	}
	if (!join_origin(j, err, err_len)) {
		return false;
	}
	if (j->already) {
		return true;
	}
	/* Before the move: a crash right after it must still find the way back. */
	journal_origin(r, m);
	j->released = release_rt_before_move(r, m);
	j->placed = true;
	int e = m->tid ? qos_cgroup_attach_thread(&mgr->cg, r->group, m->tid)
				   : qos_cgroup_attach_process(&mgr->cg, r->group, m->pid);
	if (e < 0 && !(m->tid && e == -ENOTSUP)) {
		snprintf(err, err_len, "cannot move %d into '%s': %s", id, r->name, strerror(-e));
		return false;
	}
	/* Before it can get a real-time policy, which the guardian must undo
	 * if the manager dies: it finds no trace of it in our groups. */
	if (e == -ENOTSUP && !qos_guardian_track(mgr, m, true)) {
		if (errno == ENOSPC) {
			snprintf(err, err_len,
					"already %d thread members outside the manager's groups, as many as "
					"its guardian can restore after a crash",
					QOS_GUARDIAN_MAX_THREADS);
		} else {
			snprintf(err, err_len, "cannot tell the guardian of thread %d: %s", m->tid,
					strerror(errno));
		}
		return false;
	}
	m->outside_root = e == -ENOTSUP;
	/* The pid may have been recycled while we moved it: check again. */
	if (!member_alive(m)) {
		snprintf(err, err_len, "%d exited while joining", m->pid);
		return false;
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = m };
	if (epoll_ctl(mgr->epoll_fd, EPOLL_CTL_ADD, m->pidfd, &ev) < 0) {
		snprintf(err, err_len, "cannot watch %d for its exit: %s", id, strerror(errno));
		return false;
	}
	m->reserve = r;
	if (!add_member(r, m)) {
		snprintf(err, err_len, "out of memory");
		return false;
	}
	j->added = true;
	return true;
}

/*
 * Its threads that joined this reserve one by one are part of the process
 * member now (those of other reserves left in join_origin).  Kept in place,
 * and their RLIMIT_RTTIME record passes to it; listed on they would be sent
 * home apart, and made real-time again by the next pass wherever they were.
 * After its clock is read: the events this sends may bring the reserve's
 * accounting up to date.
 */
static void join_fold_threads(struct join *j) {
	struct qos_member *m = j->m;
	struct qos_member *t;
	bool folded = false;
	while ((t = find_thread_member_in(j->r, m->pid))) {
		/* Read at the join, its class was the reserve's, not its own. */
		set_thread_orig(m, t->tid, &t->home.sched);
		folded = true;
		if (t->rttime.bounded && !m->rttime.bounded) {
			m->rttime.bounded = true;
			m->rttime.old_soft = t->rttime.old_soft;
			m->rttime.old_hard = t->rttime.old_hard;
		}
		t->rttime.bounded = false;
		qos_member_remove(t, false, false);
	}
	if (folded) {
		journal_origin(j->r, m); /* with the folded threads' own classes */
	}
}

/*
 * The period starts, and the clocks are read, before the member gets its
 * policy: a real-time member on the manager's CPU runs from that moment,
 * and the manager with it only once the kernel throttles the member.
 * Started after, the period began that much late, what the member ran
 * meanwhile was counted as before the join, and the kernel's real-time
 * window stayed that far ahead of the manager's periods for good (the
 * member throttled in half of every period instead of running on as its
 * fallback).
 */
static void join_start_clocks(struct join *j) {
	struct qos_reserve *r = j->r;
	struct qos_member *m = j->m;
	if (m->tid) {
		qos_sys_thread_cpu_us(m->pid, m->tid, &m->usage.cpu_base_us);
	} else {
		qos_sys_process_clock_us(m->pid, &m->usage.clock_base_us);
	}
	if (m->tid == 0) {
		join_fold_threads(j);
	}
	qos_member_bound_rttime(m);
	j->now_us = qos_sys_now_us();
	if (j->first) {
		qos_police_start(&r->police, r->params.period_us, r->params.slice_us,
				qos_fallback_period_origin(r, j->now_us), qos_fallback_own_cpu_us(r));
		r->police.parallel = 1;
	}
}

/* Gives the member the policy the reserve is in now (its own, or its fallback). */
static bool join_apply(struct join *j, char *err, size_t err_len) {
	struct qos_manager *mgr = j->mgr;
	struct qos_reserve *r = j->r;
	struct qos_member *m = j->m;
	if (j->already) {
		return true;
	}
	join_start_clocks(j);
	enum qos_policy active =
			r->police.in_fallback && r->fb.applied && r->params.fallback != QOS_POLICY_PAUSE
			? r->params.fallback
			: r->params.policy;
	/* Where the group's cpu.idle is the fallback, the threads keep the policy
	 * (nothing would give it back to them at the boundary). */
	if (active != r->params.policy && qos_fallback_group_idles(r) && !r->fb.threads) {
		active = r->params.policy;
	}
	/* Deadline runtimes are per thread: re-split over everyone when one joins. */
	int perr = active == QOS_POLICY_QOS ? qos_reserve_apply_threads(r, active)
										: qos_reserve_apply_member(r, m, active, 0);
	if (perr && qos_policy_is_rt(active)) {
		snprintf(err, err_len, "'%s' refused by the kernel: %s; running as other", r->name,
				qos_reserve_policy_error(active, perr));
		/* EBUSY: the kernel's deadline bound; EPERM for fifo/rr: no RT group
		 * bandwidth left.  Both are capacity, not permission. */
		mgr->events.last_refusal = perr == -EBUSY || (active != QOS_POLICY_QOS && perr == -EPERM)
				? QOS_REFUSAL_CAPACITY
				: QOS_REFUSAL_ERROR;
		qos_event_emit(&mgr->events, QOS_EVENT_ADMISSION_REFUSED, r->name, m->pid, m->tid, 0, "%s",
				err);
		return false;
	}
	if (m->tid == 0 || qos_reserve_count_threads(r) > 1) {
		unsigned n = (unsigned)qos_reserve_count_threads(r);
		r->police.parallel = n < mgr->adm.ncpus ? n : mgr->adm.ncpus;
	}
	qos_reserve_root_weight_update(mgr);
	qos_event_emit(&mgr->events, QOS_EVENT_MEMBER_JOINED, r->name, m->pid, m->tid, 0, "%s",
			qos_policy_name(r->params.policy));
	qos_fallback_check(r, j->now_us);
	return true;
}

bool qos_manager_join(struct qos_manager *mgr, const char *name, pid_t pid, pid_t tid, char *err,
		size_t err_len) {
	if (qos_event_refuse_reentry(&mgr->events, err, err_len)) {
		return false;
	}
	mgr->events.last_refusal = QOS_REFUSAL_ERROR;
	struct join j = { .mgr = mgr };
	if (!join_find_reserve(&j, name, err, err_len)) {
		return false;
	}
	if (!join_check(&j, pid, tid, err, err_len) || !join_admit(&j, err, err_len) ||
			!join_place(&j, err, err_len) || !join_apply(&j, err, err_len)) {
		join_undo(&j);
		return false;
	}
	if (j.already) {
		/* Nothing was changed: only the unused member goes. */
		if (j.m->pidfd >= 0) {
			close(j.m->pidfd);
		}
		qos_threads_close_task_dir(mgr, j.m);
		member_free(j.m);
		return true;
	}
	qos_reserve_rearm(mgr);
	return true;
}

bool qos_manager_leave(struct qos_manager *mgr, pid_t pid, pid_t tid) {
	if (qos_event_refuse_reentry(&mgr->events, NULL, 0)) {
		return false;
	}
	struct qos_member *m = qos_reserve_find_member(mgr, pid, tid == pid ? 0 : tid);
	if (!m) {
		return false;
	}
	qos_member_remove(m, true, false);
	qos_reserve_rearm(mgr);
	return true;
}
