/*
 * The display server's own cgroup leaf (server.h says why).
 *
 * Only the cpu tree is used: on a hybrid system the v1 cpu hierarchy (the
 * v2 tree there has no cpu controller), on pure v2 the one tree, where the
 * leaf is what lets a process sit under a root that passes cpu on.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qos/policy/core.h"
#include "qos/reserve/reserve.h"
#include "qos/reserve/server.h"

#define SERVER_WEIGHT_MAX 10000u

static void leaf_path(const struct qos_manager *mgr, const char *file, char *out, size_t len) {
	if (file) {
		snprintf(out, len, "%s/" QOS_CG_SERVER_LEAF "/%s", mgr->cg.cpu_root, file);
	} else {
		snprintf(out, len, "%s/" QOS_CG_SERVER_LEAF, mgr->cg.cpu_root);
	}
}

uint64_t qos_server_shares(const struct qos_manager *mgr) {
	return mgr->server.pid ? (uint64_t)mgr->server.weight * 1024 / 100 : 0;
}

static int write_weight(struct qos_manager *mgr, uint32_t weight) {
	char p[PATH_MAX], v[32];
	if (mgr->cg.layout == QOS_CG_HYBRID) {
		leaf_path(mgr, "cpu.shares", p, sizeof(p));
		uint64_t shares = (uint64_t)weight * 1024 / 100;
		snprintf(v, sizeof(v), "%llu", (unsigned long long)(shares < 2 ? 2 : shares));
	} else {
		leaf_path(mgr, "cpu.weight", p, sizeof(p));
		snprintf(v, sizeof(v), "%u", weight);
	}
	return qos_cgroup_write(&mgr->cg, p, v);
}

static void remove_leaf(struct qos_manager *mgr) {
	char p[PATH_MAX];
	leaf_path(mgr, NULL, p, sizeof(p));
	/* A process that just left can keep the group busy for a moment. */
	for (int i = 0; i < 20 && rmdir(p) < 0 && errno == EBUSY; i++) {
		usleep(5000);
	}
}

static bool enter(struct qos_manager *mgr, pid_t pid, uint32_t weight, char *err, size_t err_len) {
	struct qos_manager_server *s = &mgr->server;
	if (mgr->cg.layout == QOS_CG_NONE || !mgr->cg.cpu_ctl) {
		snprintf(err, err_len, "no cpu controller in the QoS manager's cgroup root");
		return false;
	}
	if (!qos_cgroup_current(&mgr->cg, pid, 0, s->v2, sizeof(s->v2), s->cpu, sizeof(s->cpu))) {
		snprintf(err, err_len, "cannot read the cgroups of process %d", (int)pid);
		return false;
	}
	char p[PATH_MAX], v[32];
	leaf_path(mgr, NULL, p, sizeof(p));
	if (mkdir(p, 0755) < 0 && errno != EEXIST) {
		snprintf(err, err_len, "cannot create %s: %s", p, strerror(errno));
		return false;
	}
	int r = write_weight(mgr, weight);
	if (r < 0) {
		snprintf(err, err_len, "cannot set the weight of %s: %s", p, strerror(-r));
		remove_leaf(mgr);
		return false;
	}
	leaf_path(mgr, "cgroup.procs", p, sizeof(p));
	snprintf(v, sizeof(v), "%d", (int)pid);
	r = qos_cgroup_write(&mgr->cg, p, v);
	if (r < 0) {
		snprintf(err, err_len, "cannot move process %d into %s: %s", (int)pid, p, strerror(-r));
		remove_leaf(mgr);
		return false;
	}
	s->pid = pid;
	snprintf(s->origin_procs, sizeof(s->origin_procs), "%s%s/cgroup.procs", mgr->cg.cpu_base,
			strcmp(s->cpu, "/") == 0 ? "" : s->cpu);
	return true;
}

void qos_server_finish(struct qos_manager *mgr) {
	struct qos_manager_server *s = &mgr->server;
	if (!s->pid) {
		return;
	}
	/* Back where it came from, or to the nearest ancestor that takes it
	 * (a transient scope may be gone); the v2 tree was never changed. */
	qos_cgroup_restore_near(&mgr->cg, s->pid, 0, true, s->v2, s->cpu);
	s->pid = 0;
	s->weight = 0;
	s->origin_procs[0] = '\0';
	remove_leaf(mgr);
	qos_reserve_root_weight_update(mgr);
}

bool qos_manager_set_server_weight(struct qos_manager *mgr, pid_t pid, uint32_t weight, char *err,
		size_t err_len) {
	struct qos_manager_server *s = &mgr->server;
	if (weight > SERVER_WEIGHT_MAX || pid <= 0) {
		snprintf(err, err_len, "server weight %u of process %d: want 0 to %u and a process", weight,
				(int)pid, SERVER_WEIGHT_MAX);
		return false;
	}
	if (s->pid && s->pid != pid) {
		snprintf(err, err_len, "the server's leaf holds process %d already", (int)s->pid);
		return false;
	}
	if (weight == 0) {
		qos_server_finish(mgr);
		return true;
	}
	if (s->pid) {
		int r = write_weight(mgr, weight);
		if (r < 0) {
			snprintf(err, err_len, "cannot set the server's weight: %s", strerror(-r));
			return false;
		}
	} else if (!enter(mgr, pid, weight, err, err_len)) {
		return false;
	}
	s->weight = weight;
	qos_reserve_root_weight_update(mgr);
	return true;
}

bool qos_manager_server_leaf_rt(const struct qos_manager *mgr) {
	/* The kernel's setting, not whether our root got runtime (cg.rt_group). */
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/cpu.rt_runtime_us", mgr->cg.cpu_base);
	return !(mgr->cg.layout == QOS_CG_HYBRID && access(p, F_OK) == 0);
}

const char *qos_manager_server_origin(const struct qos_manager *mgr) {
	return mgr->server.pid ? mgr->server.origin_procs : NULL;
}

struct release_walk {
	struct qos_manager *mgr;
	int moved, failed;
};

static void release_one(pid_t pid, void *data) {
	struct release_walk *w = data;
	if (pid == w->mgr->server.pid) {
		return;
	}
	char v[32];
	snprintf(v, sizeof(v), "%d", (int)pid);
	if (qos_cgroup_write(&w->mgr->cg, w->mgr->server.origin_procs, v) == 0) {
		w->moved++;
	} else if (kill(pid, 0) == 0) {
		w->failed++; /* one that exited meanwhile is not a failure */
	}
}

int qos_manager_server_release_others(struct qos_manager *mgr) {
	if (!mgr->server.pid) {
		return 0;
	}
	char p[PATH_MAX];
	leaf_path(mgr, "cgroup.procs", p, sizeof(p));
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		return -1;
	}
	struct release_walk w = { .mgr = mgr };
	int n = qos_cgroup_for_each_pid_fd(fd, release_one, &w);
	close(fd);
	return n < 0 || w.failed ? -1 : w.moved;
}
