/*
 * Member thread listings, kept for one reserve's housekeeping pass.
 *
 * The pass walks a member's threads up to four times: counting them to
 * split a deadline runtime, giving new ones the reserve's policy, looking
 * for deadline threads the kernel left stuck, and the real-time guard.
 * Each walk listed /proc/PID/task again, three system calls and most of
 * what the pass cost for a sleeping member; now one listing serves them all.
 * Threads started during the pass wait for the next one, as they would
 * have waited for the next listing anyway.
 */
#include <stdlib.h>
#include <unistd.h>

#include "qos/policy/core.h"
#include "qos/reserve/threads.h"
#include "qos/kernel/sys.h"

struct collect_ctx {
	struct qos_thread_cache *c;
	bool failed;
};

static void collect(pid_t tid, void *data) {
	struct collect_ctx *x = data;
	struct qos_thread_cache *c = x->c;
	pid_t *grown = qos_array_room(c->tids, &c->cap_tids, c->n_tids, sizeof(*grown));
	if (!grown) {
		x->failed = true;
		return;
	}
	c->tids = grown;
	c->tids[c->n_tids++] = tid;
}

static int list_member(struct qos_manager *mgr, struct qos_member *m,
		void (*fn)(pid_t tid, void *data), void *data);

/* The kept listing of m, listing it first; NULL when it cannot be kept. */
static struct qos_thread_listing *listing(struct qos_manager *mgr, struct qos_member *m) {
	struct qos_thread_cache *c = &mgr->threads;
	pid_t pid = m->pid;
	for (size_t i = 0; i < c->n; i++) {
		if (c->lists[i].pid == pid) {
			return &c->lists[i];
		}
	}
	struct qos_thread_listing *grown = qos_array_room(c->lists, &c->cap, c->n, sizeof(*grown));
	if (!grown) {
		return NULL;
	}
	c->lists = grown;
	size_t first = c->n_tids;
	struct collect_ctx x = { .c = c };
	int n = list_member(mgr, m, collect, &x);
	if (x.failed) {
		c->n_tids = first;
		return NULL;
	}
	struct qos_thread_listing *l = &c->lists[c->n++];
	*l = (struct qos_thread_listing){ .pid = pid,
		.first = first,
		.n = n < 0 ? 0 : (size_t)n,
		.gone = n < 0 };
	return l;
}

/*
 * A busy optimistic reserve lists its members at every overrun: through a
 * kept directory that is a rewind and a getdents, without the path walk.
 */
static int list_member(struct qos_manager *mgr, struct qos_member *m,
		void (*fn)(pid_t tid, void *data), void *data) {
	if (m->task_fd < 0 && mgr->kept_fds_budget > 0) {
		m->task_fd = qos_sys_open_task_dir(m->pid);
		/* Kept, it lists whichever process had the pid when it opened:
		 * only keep it when that was the member (the pid cannot pass on
		 * while the member still runs after the open). */
		if (m->task_fd >= 0 && qos_sys_start_time(m->pid, 0) != m->start_time) {
			close(m->task_fd);
			m->task_fd = -1;
		}
		if (m->task_fd >= 0) {
			mgr->kept_fds_budget--;
		}
	}
	if (m->task_fd >= 0) {
		return qos_sys_for_each_thread_in(m->task_fd, fn, data);
	}
	return qos_sys_for_each_thread(m->pid, fn, data);
}

void qos_threads_close_task_dir(struct qos_manager *mgr, struct qos_member *m) {
	qos_sys_drop_kept_fd(&m->task_fd, &mgr->kept_fds_budget);
}

int qos_threads_for_each(struct qos_manager *mgr, struct qos_member *m,
		void (*fn)(pid_t tid, void *data), void *data) {
	if (m->tid) {
		if (fn) {
			fn(m->tid, data);
		}
		return 1;
	}
	struct qos_thread_cache *c = &mgr->threads;
	const struct qos_thread_listing *l = c->keep ? listing(mgr, m) : NULL;
	if (!l) {
		return list_member(mgr, m, fn, data);
	}
	if (l->gone) {
		return -1;
	}
	/* By index: fn may list another member and move the array. */
	size_t first = l->first, n = l->n;
	for (size_t i = 0; fn && i < n; i++) {
		fn(c->tids[first + i], data);
	}
	return (int)n;
}

void qos_threads_keep(struct qos_manager *mgr, bool keep) {
	struct qos_thread_cache *c = &mgr->threads;
	c->keep = keep;
	c->n = 0;
	c->n_tids = 0;
}

void qos_threads_finish(struct qos_manager *mgr) {
	struct qos_thread_cache *c = &mgr->threads;
	free(c->lists);
	free(c->tids);
	*c = (struct qos_thread_cache){ 0 };
}
