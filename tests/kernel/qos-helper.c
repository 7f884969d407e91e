/*
 * qos-helper: runs one QoS manager and takes commands on stdin, one per line,
 * so the kernel tests (tests/kernel/test_*.py) can drive real processes through it.
 *
 *   reserve NAME key=value...   create or modify (keys as in qosrc)
 *   class PID key=value...      automatic reserve for PID
 *   join NAME PID [TID]  |  leave PID [TID]  |  delete NAME
 *   forked PARENT CHILD         as the process-event connector reports a fork
 *   thread PID TID              ... or a new thread
 *   bill NAME USEC  |  info NAME  |  path NAME  |  sync  |  quit
 *   threads NAME                the slice's division: TID:RUNTIME_NS:USED_NS:PARKED:RAN_ON...
 *   bill-pid PID USEC           bill the reserve PID is in as a whole process
 *   watch NAME on|off           per-period overrun events (qos_manager_watch_overruns)
 *   feed                        canary heartbeat (--external-canary)
 *   hold SECONDS                a child that keeps our descriptors (no exec), as
 *                               an embedder's child may: prints its pid
 *   stats                       event counts and watchdog state
 *
 * Replies are "ok ...", or "err MESSAGE", with " [capacity|forbidden|error]"
 * appended when the manager refused (qos_manager_last_refusal); events are
 * printed as "event ..." (only counted with --quiet).
 * Options: --root NAME, --base DIR, --parent CGROUP, --no-guardian, --fake, --quiet,
 * --rsvd PERCENT, --ncpus N, --watchdog-timeout MS, --watchdog-cooldown MS,
 * --external-canary, --rttime MS.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "qos/kernel/cgroup.h"
#include "qos/qos.h"

static const char *const event_names[] = {
	"created",
	"deleted",
	"renamed",
	"params",
	"joined",
	"left",
	"exited",
	"granted",
	"refused",
	"overrun",
	"restored",
	"watchdog",
	"error",
	"rt-demoted",
	"rt-resumed",
	"released",
};

#define N_EVENTS (sizeof(event_names) / sizeof(event_names[0]))
_Static_assert(N_EVENTS == QOS_EVENT_RELEASED + 1, "a name for every event");

static bool quiet;
static unsigned long long event_counts[N_EVENTS];
/* Times the manager's fd woke the loop: its own wake-ups, not commands'. */
static unsigned long long dispatches;

static void on_event(void *data, const struct qos_event *ev) {
	if ((size_t)ev->type < N_EVENTS) {
		event_counts[ev->type]++;
	}
	if (quiet) {
		return;
	}
	printf("event %s reserve=%s pid=%d tid=%d used=%llu msg=%s\n", event_names[ev->type],
			ev->reserve ? ev->reserve : "-", ev->pid, ev->tid, (unsigned long long)ev->used_us,
			ev->message ? ev->message : "");
	fflush(stdout);
}

static void diag(void *data, const char *msg) {
	snprintf(data, 512, "%s", msg);
}

/* Parses "key=value..." with the rule-file parser so both accept the same syntax. */
static bool parse_params(const char *kind, const char *rest, struct qos_params *out, char *err) {
	char line[1024];
	snprintf(line, sizeof(line), "%s %s", kind, rest);
	struct qos_rules *rules = qos_rules_create();
	if (!rules) {
		return false;
	}
	err[0] = '\0';
	int n = qos_rules_parse_string(rules, "cmd", line, diag, err);
	bool ok = n == 0;
	if (ok && rules->n_reserves) {
		*out = rules->reserves[0].params;
	} else if (ok && rules->n_rules) {
		*out = rules->rules[0].params;
	} else {
		ok = false;
	}
	qos_rules_destroy(rules);
	return ok;
}

static void command(struct qos_manager *mgr, char *line, bool *quit) {
	static const char *const refusal_names[] = { "error", "capacity", "forbidden" };
	char err[512] = "";
	char name[128];
	bool refusal = false; /* a manager call failed: say how it classified it */
	int pid = 0, tid = 0, off = 0;
	unsigned long long usec, usec2;
	long long offset;
	struct qos_params p;
	line[strcspn(line, "\n")] = '\0';
	if (sscanf(line, "reserve %127s %n", name, &off) == 1) {
		if (!parse_params("reserve", line + 8, &p, err)) {
			goto fail;
		}
		refusal = true;
		if (!qos_reserve_set(mgr, name, &p, true, true, err, sizeof(err))) {
			goto fail;
		}
	} else if (sscanf(line, "class %d %n", &pid, &off) == 1) {
		char rest[1024];
		snprintf(rest, sizeof(rest), "exe=x %s", line + off);
		if (!parse_params("rule", rest, &p, err)) {
			goto fail;
		}
		refusal = true;
		if (!qos_manager_set_class(mgr, pid, &p, err, sizeof(err))) {
			goto fail;
		}
	} else if (sscanf(line, "join %127s %d %d", name, &pid, &tid) >= 2) {
		refusal = true;
		if (!qos_manager_join(mgr, name, pid, tid, err, sizeof(err))) {
			goto fail;
		}
	} else if (sscanf(line, "leave %d %d", &pid, &tid) >= 1) {
		if (!qos_manager_leave(mgr, pid, tid)) {
			snprintf(err, sizeof(err), "not a member");
			goto fail;
		}
	} else if (sscanf(line, "forked %d %d", &pid, &tid) == 2) {
		qos_manager_forked(mgr, pid, tid);
	} else if (sscanf(line, "thread %d %d", &pid, &tid) == 2) {
		qos_manager_thread_started(mgr, pid, tid);
	} else if (sscanf(line, "delete %127s", name) == 1) {
		if (!qos_reserve_delete(mgr, name, err, sizeof(err))) {
			goto fail;
		}
	} else if (sscanf(line, "bill-pid %d %llu", &pid, &usec) == 2) {
		if (!qos_manager_bill_pid(mgr, pid, usec)) {
			snprintf(err, sizeof(err), "not a process member");
			goto fail;
		}
	} else if (sscanf(line, "bill %127s %llu", name, &usec) == 2) {
		if (!qos_manager_bill(mgr, name, usec)) {
			snprintf(err, sizeof(err), "no such reserve");
			goto fail;
		}
	} else if (sscanf(line, "watch %127s %n", name, &off) == 1 &&
			(!strcmp(line + off, "on") || !strcmp(line + off, "off"))) {
		if (!qos_manager_watch_overruns(mgr, name, !strcmp(line + off, "on"))) {
			snprintf(err, sizeof(err), "no such reserve");
			goto fail;
		}
	} else if (sscanf(line, "work %127s %llu %llu", name, &usec, &usec2) == 3) {
		if (!qos_manager_report_work(mgr, name, usec, usec2)) {
			snprintf(err, sizeof(err), "no such adaptive reserve");
			goto fail;
		}
	} else if (sscanf(line, "vblank %127s %lld %llu", name, &offset, &usec) == 3) {
		/* when: offset microseconds from now, as the compositor's vblank time is. */
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t now = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
		if (!qos_manager_vblank(mgr, name, (uint64_t)((int64_t)now + offset), usec, err,
					sizeof(err))) {
			goto fail;
		}
	} else if (sscanf(line, "info %127s", name) == 1) {
		struct qos_reserve_info info;
		if (!qos_manager_reserve_info(mgr, name, &info)) {
			snprintf(err, sizeof(err), "no such reserve");
			goto fail;
		}
		char params[256];
		qos_params_format(&info.params, params, sizeof(params));
		printf("ok name=%s members=%zu granted=%d fallback=%d used=%llu billed=%llu "
			   "last=%llu last_billed=%llu periods=%llu overruns=%llu owner=%d auto=%d "
			   "released=%d adapt_slice=%llu period_us=%llu slice_us=%llu %s\n",
				info.name, info.n_members, info.granted, info.in_fallback,
				(unsigned long long)info.used_us, (unsigned long long)info.billed_us,
				(unsigned long long)info.last_used_us, (unsigned long long)info.last_billed_us,
				(unsigned long long)info.periods, (unsigned long long)info.overruns, info.owner,
				info.is_auto, info.released, (unsigned long long)info.adapt_slice_us,
				(unsigned long long)info.params.period_us, (unsigned long long)info.params.slice_us,
				params);
		fflush(stdout);
		return;
	} else if (sscanf(line, "threads %127s", name) == 1) {
		struct qos_thread_info th[256];
		ssize_t n = qos_manager_reserve_threads(mgr, name, th, 256);
		if (n < 0) {
			snprintf(err, sizeof(err), "no such reserve");
			goto fail;
		}
		printf("ok");
		for (ssize_t i = 0; i < n && i < 256; i++) {
			printf(" %d:%llu:%llu:%d:%llu", (int)th[i].tid, (unsigned long long)th[i].runtime_ns,
					(unsigned long long)th[i].used_ns, th[i].parked,
					(unsigned long long)th[i].ran_on);
		}
		printf("\n");
		fflush(stdout);
		return;
	} else if (sscanf(line, "path %127s", name) == 1) {
		struct qos_manager_info mi;
		struct qos_reserve_info ri;
		qos_manager_get_info(mgr, &mi);
		/* The group directory once there is one, else where it will be. */
		const char *group =
				qos_manager_reserve_info(mgr, name, &ri) && ri.group[0] ? ri.group : name;
		printf("ok v2=%s/%s cpu=%s/%s layout=%s\n", mi.v2_root, group, mi.cpu_root, group,
				mi.layout);
		fflush(stdout);
		return;
	} else if (sscanf(line, "hold %d", &pid) == 1) {
		fflush(stdout);
		pid_t child = fork();
		if (child == 0) {
			sleep((unsigned)pid);
			_exit(0);
		}
		if (child < 0) {
			snprintf(err, sizeof(err), "fork: %s", strerror(errno));
			goto fail;
		}
		printf("ok %d\n", (int)child);
		fflush(stdout);
		return;
	} else if (strcmp(line, "feed") == 0) {
		qos_manager_watchdog_feed(mgr);
	} else if (strcmp(line, "stats") == 0) {
		struct qos_manager_info mi;
		qos_manager_get_info(mgr, &mi);
		printf("ok watchdog_alarms=%llu cooldown=%d granted=%llu capacity=%llu "
			   "dispatches=%llu",
				(unsigned long long)mi.watchdog_alarms, mi.watchdog_cooldown,
				(unsigned long long)mi.granted_ppm, (unsigned long long)mi.capacity_ppm,
				dispatches);
		for (size_t i = 0; i < N_EVENTS; i++) {
			printf(" %s=%llu", event_names[i], event_counts[i]);
		}
		printf("\n");
		fflush(stdout);
		return;
	} else if (strcmp(line, "sync") == 0) {
		qos_manager_dispatch(mgr);
	} else if (strcmp(line, "quit") == 0) {
		*quit = true;
	} else {
		snprintf(err, sizeof(err), "unknown command");
		goto fail;
	}
	printf("ok\n");
	fflush(stdout);
	return;
fail:
	if (refusal) {
		printf("err %s [%s]\n", err, refusal_names[qos_manager_last_refusal(mgr)]);
	} else {
		printf("err %s\n", err);
	}
	fflush(stdout);
}

int main(int argc, char **argv) {
	struct qos_manager_config cfg;
	qos_manager_config_init(&cfg);
	cfg.event = on_event;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--root") && i + 1 < argc) {
			cfg.root_name = argv[++i];
		} else if (!strcmp(argv[i], "--parent") && i + 1 < argc) {
			cfg.cgroup_parent = argv[++i];
		} else if (!strcmp(argv[i], "--base") && i + 1 < argc) {
			cfg.cgroup_base = argv[++i];
		} else if (!strcmp(argv[i], "--no-guardian")) {
			cfg.guardian = false;
		} else if (!strcmp(argv[i], "--fake")) {
			cfg.fake_files = true;
		} else if (!strcmp(argv[i], "--quiet")) {
			quiet = true;
		} else if (!strcmp(argv[i], "--external-canary")) {
			cfg.watchdog_external_canary = true;
		} else if (!strcmp(argv[i], "--rsvd") && i + 1 < argc) {
			cfg.rsvd_ppm = (uint64_t)(atof(argv[++i]) * 1e4);
		} else if (!strcmp(argv[i], "--ncpus") && i + 1 < argc) {
			cfg.ncpus = (unsigned)atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--watchdog-timeout") && i + 1 < argc) {
			cfg.watchdog_timeout_us = strtoull(argv[++i], NULL, 10) * 1000u;
		} else if (!strcmp(argv[i], "--watchdog-cooldown") && i + 1 < argc) {
			cfg.watchdog_cooldown_us = strtoull(argv[++i], NULL, 10) * 1000u;
		} else if (!strcmp(argv[i], "--rttime") && i + 1 < argc) {
			cfg.rttime_us = strtoull(argv[++i], NULL, 10) * 1000u;
		} else {
			fprintf(stderr,
					"usage: %s [--root NAME] [--base DIR] [--no-guardian] [--fake] "
					"[--quiet] [--rsvd PERCENT] [--ncpus N] [--watchdog-timeout MS] "
					"[--watchdog-cooldown MS] [--external-canary] [--rttime MS]\n",
					argv[0]);
			return 2;
		}
	}
	char err[512];
	struct qos_manager *mgr = qos_manager_create(&cfg, err, sizeof(err));
	if (!mgr) {
		printf("err %s\n", err);
		return 1;
	}
	struct qos_manager_info mi;
	qos_manager_get_info(mgr, &mi);
	printf("ready layout=%s rt_group=%d capacity=%llu v2=%s cpu=%s\n", mi.layout, mi.rt_group,
			(unsigned long long)mi.capacity_ppm, mi.v2_root, mi.cpu_root);
	fflush(stdout);
	bool quit = false;
	char line[2048];
	while (!quit) {
		struct pollfd fds[2] = {
			{ .fd = 0, .events = POLLIN },
			{ .fd = qos_manager_get_fd(mgr), .events = POLLIN },
		};
		if (poll(fds, 2, -1) < 0 && errno != EINTR) {
			break;
		}
		if (fds[1].revents & POLLIN) {
			dispatches++;
			qos_manager_dispatch(mgr);
		}
		if (fds[0].revents & (POLLIN | POLLHUP)) {
			if (!fgets(line, sizeof(line), stdin)) {
				break;
			}
			command(mgr, line, &quit);
		}
	}
	qos_manager_destroy(mgr);
	return 0;
}
