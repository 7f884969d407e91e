/*
 * The compositor's own CPU weight: its process in a cgroup leaf of the QoS
 * manager's root with a high weight (qos_manager_set_server_weight), so
 * that it gets a CPU as soon as it wakes even among a hundred busy
 * clients. A real-time client's frame needs the compositor's loop twice
 * (its commit read, its frame callback sent); at an ordinary weight the
 * loop waits behind every runnable client thread, the boost covering only
 * the real-time client's own requests. The weight is safe because the
 * books bill the compositor's time for a client back to that client.
 *
 * What the compositor starts belongs where it came from, not in the
 * leaf: spawned children move back before exec, and Xwayland (which
 * wlroots forks itself) once it is up.
 */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <wlr/util/log.h>

#include "qos/qos.h"
#include "qos_bridge/qos_link.h"
#include "scheduler/scheduler_internal.h"
#include "server.h"

void scheduler_weight_start(struct qw_scheduler *sched) {
	if (!sched) {
		return;
	}
	unsigned int weight = sched->server->config.scheduling.server_weight;
	struct qos_manager *qos = qos_link_manager(sched->server);
	if (!weight) {
		snprintf(sched->weight_note, sizeof(sched->weight_note), "turned off in the configuration");
		return;
	}
	if (!qos) {
		snprintf(sched->weight_note, sizeof(sched->weight_note), "no QoS manager");
		wlr_log(WLR_INFO, "scheduling: no server weight: no QoS manager");
		return;
	}
	/* Where the cpu tree has real-time group scheduling, the leaf takes no
	 * SCHED_FIFO thread and the weight costs the boost.  Measured at 100
	 * windows the weight is worth more (docs/qos-benchmarks.md), so it
	 * stays the default; `server-weight off` keeps the boost instead. */
	bool leaf_rt = qos_manager_server_leaf_rt(qos);
	bool boost = sched->boost.available;
	char err[200];
	if (!qos_manager_set_server_weight(qos, getpid(), weight, err, sizeof(err))) {
		snprintf(sched->weight_note, sizeof(sched->weight_note), "%s", err);
		wlr_log(WLR_INFO, "scheduling: no server weight: %s", err);
		return;
	}
	sched->server_weight = weight;
	wlr_log(WLR_INFO, "scheduling: the compositor's cgroup has CPU weight %u", weight);
	if (!leaf_rt && boost) {
		sched->boost.available = false;
		snprintf(sched->boost.note, sizeof(sched->boost.note),
				"the compositor's cgroup (server-weight) has no real-time runtime");
		wlr_log(WLR_INFO, "scheduling: boost off: %s", sched->boost.note);
	}
}

void sched_weight_prepare_child(const struct qw_scheduler *sched) {
	/* Between fork and exec: memory reads, open and write only. */
	struct qos_manager *qos = sched->server_weight ? qos_link_manager(sched->server) : NULL;
	const char *origin = qos ? qos_manager_server_origin(qos) : NULL;
	if (!origin) {
		return;
	}
	int fd = open(origin, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "0", 1) < 0) {
			/* It stays in the leaf: nothing else to do this side of exec. */
		}
		close(fd);
	}
}

void scheduler_children_started(struct qw_scheduler *sched) {
	struct qos_manager *qos =
			sched && sched->server_weight ? qos_link_manager(sched->server) : NULL;
	if (qos && qos_manager_server_release_others(qos) < 0) {
		wlr_log(WLR_ERROR,
				"scheduling: cannot move a process the compositor started out of "
				"its cgroup");
	}
}
