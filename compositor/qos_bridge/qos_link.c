#include <fcntl.h>
#include <limits.h>
#include <sys/file.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <wlr/types/wlr_xdg_shell.h>
#include <wlr/util/log.h>

#include "qos_bridge/client_identity.h"
#include "ipc/ipc.h"
#include "qos/proc.h"
#include "qos/qos.h"
#include "qos_bridge/qos_gate.h"
#include "qos_bridge/qos_link.h"
#include "qos_bridge/reserve_protocol.h"
#include "scheduler/scheduler.h"
#include "output/vblank.h"

/* Everything the compositor keeps for its QoS manager; server->qos_link. */
struct qos_link {
	struct qw_server *server;
	struct qos_manager *manager; /* NULL when unavailable: see error */
	struct qos_rules *rules; /* the manager's: it owns them */
	char error[256]; /* why there is no manager */
	struct wl_event_source *manager_source; /* the manager's fd */
	struct wl_event_source *refresh_idle; /* a pending refresh_views */
	struct wl_event_source *cpu_sample_timer;
	/* The QoS errors logged in the current second: a failure that repeats
	 * each period must not flood the log. */
	uint64_t log_second;
	unsigned int logged, log_dropped;
	int root_lock; /* flock marking our cgroup root live, -1 if none */
};

struct qos_manager *qos_link_manager(struct qw_server *server) {
	return server->qos_link ? server->qos_link->manager : NULL;
}

bool qos_link_reserve_info(struct qw_server *server, const char *name,
		struct qos_reserve_info *info) {
	struct qos_manager *qos = qos_link_manager(server);
	return qos && qos_manager_reserve_info(qos, name, info);
}

const struct qos_rules *qos_link_rules(struct qw_server *server) {
	return server->qos_link && server->qos_link->manager ? server->qos_link->rules : NULL;
}

bool qos_link_ready(struct qw_server *server, char *err, size_t err_len) {
	if (qos_link_manager(server)) {
		return true;
	}
	snprintf(err, err_len, "QoS manager unavailable: %s", qos_link_error(server));
	return false;
}

const char *qos_link_error(struct qw_server *server) {
	return server->qos_link ? server->qos_link->error : "out of memory";
}

static void rules_diag(void *data, const char *message) {
	/* file:line:col: message, on stderr through the log. */
	wlr_log(WLR_ERROR, "%s", message);
}

static struct qos_rules *load_rules(void) {
	char *paths[3] = { 0 };
	char datadir[PATH_MAX];
	snprintf(datadir, sizeof(datadir), "%s", QOSWAY_DATADIR);
	char probe[PATH_MAX + 8];
	snprintf(probe, sizeof(probe), "%s/qosrc", datadir);
	if (access(probe, R_OK) != 0) {
		/* Not installed: run from the source tree's config/. */
		snprintf(datadir, sizeof(datadir), "%s", QOSWAY_SOURCE_CONFIG);
	}
	size_t n = qos_rules_default_paths(datadir, QOSWAY_SYSCONFDIR, paths);
	struct qos_rules *rules = qos_rules_load((const char *const *)paths, n, rules_diag, NULL);
	for (size_t i = 0; i < n; i++) {
		free(paths[i]);
	}
	return rules;
}

static bool reload(struct qos_link *link, char *err, size_t err_len) {
	struct qos_rules *rules = load_rules();
	if (!rules) {
		snprintf(err, err_len, "no qosrc could be loaded; keeping the previous rules");
		return false;
	}
	size_t errors = rules->n_errors;
	link->rules = rules;
	qos_manager_set_rules(link->manager, rules);
	if (errors) {
		snprintf(err, err_len, "%zu bad line(s) skipped (see the log)", errors);
	}
	wlr_log(WLR_INFO, "qosrc loaded: %zu reserves, %zu rules, %zu bad lines", rules->n_reserves,
			rules->n_rules, errors);
	return true;
}

bool qos_link_reload(struct qw_server *server, char *err, size_t err_len) {
	return qos_link_ready(server, err, err_len) && reload(server->qos_link, err, err_len);
}

static enum qw_class class_of_params(const struct qos_params *p) {
	switch (p->policy) {
	case QOS_POLICY_QOS:
		return QW_CLASS_REALTIME;
	case QOS_POLICY_FIFO:
	case QOS_POLICY_RR:
		return QW_CLASS_FIFO;
	case QOS_POLICY_IDLE:
		return QW_CLASS_IDLE;
	case QOS_POLICY_PAUSE:
		return QW_CLASS_PAUSED;
	case QOS_POLICY_OTHER:
		return p->nice > 0 ? QW_CLASS_NICE : QW_CLASS_NORMAL;
	}
	return QW_CLASS_NORMAL;
}

enum qw_class qos_link_class_of(struct qw_server *server, pid_t pid, const char **reserve) {
	if (reserve) {
		*reserve = NULL;
	}
	struct qos_manager *qos = qos_link_manager(server);
	if (!qos || pid <= 0) {
		return QW_CLASS_NORMAL;
	}
	const char *name = qos_manager_reserve_of(qos, pid, 0);
	struct qos_reserve_info info;
	if (!name || !qos_manager_reserve_info(qos, name, &info)) {
		return QW_CLASS_NORMAL;
	}
	if (reserve) {
		*reserve = name;
	}
	return class_of_params(&info.params);
}

bool qos_link_held_back(struct qw_server *server, pid_t pid) {
	struct qos_manager *qos = qos_link_manager(server);
	const char *name = qos && pid > 0 ? qos_manager_reserve_of(qos, pid, 0) : NULL;
	struct qos_reserve_info info;
	return name && qos_manager_reserve_info(qos, name, &info) && info.return_refused;
}

const char *qos_link_reserve_of(struct qw_server *server, pid_t pid) {
	struct qos_manager *qos = qos_link_manager(server);
	return qos && pid > 0 ? qos_manager_reserve_of(qos, pid, 0) : NULL;
}

static void refresh_views(void *data) {
	struct qos_link *link = data;
	struct qw_server *server = link->server;
	link->refresh_idle = NULL;
	struct qw_view *view;
	wl_list_for_each(view, &server->views, link) {
		pid_t pid = view_get_pid(view);
		view_set_class(view, qos_link_class_of(server, pid, NULL));
		view_set_held_back(view, qos_link_held_back(server, pid));
	}
}

static void schedule_refresh(struct qos_link *link) {
	if (link->manager && !link->refresh_idle) {
		link->refresh_idle = wl_event_loop_add_idle(link->server->event_loop, refresh_views, link);
	}
}

void qos_link_schedule_refresh(struct qw_server *server) {
	if (server->qos_link) {
		schedule_refresh(server->qos_link);
	}
}

#define QOS_LOG_PER_SECOND 5

/*
 * The manager's errors and safety actions also go to the log, where a user
 * (or a failed test) looks first; IPC subscribers get every one.  At most
 * QOS_LOG_PER_SECOND a second: some failures repeat at every period.
 */
static void log_next_second(struct qos_link *link) {
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	uint64_t second = (uint64_t)now.tv_sec;
	if (second == link->log_second) {
		return;
	}
	if (link->log_dropped) {
		wlr_log(WLR_ERROR, "QoS: %u more messages in the last second not logged",
				link->log_dropped);
	}
	link->log_second = second;
	link->logged = link->log_dropped = 0;
}

static void log_qos_event(struct qos_link *link, const struct qos_event *event) {
	enum wlr_log_importance level = event->type == QOS_EVENT_ERROR ? WLR_ERROR : WLR_INFO;
	log_next_second(link);
	if (link->logged >= QOS_LOG_PER_SECOND) {
		link->log_dropped++;
		return;
	}
	link->logged++;
	wlr_log(level, "QoS: reserve %s, pid %d: %s", event->reserve ? event->reserve : "-",
			(int)event->pid, event->message ? event->message : "(no details)");
}

static void handle_qos_event(void *data, const struct qos_event *event) {
	struct qos_link *link = data;
	struct qw_server *server = link->server;
	switch (event->type) {
	case QOS_EVENT_ERROR:
	case QOS_EVENT_WATCHDOG:
	case QOS_EVENT_RT_DEMOTED:
		log_qos_event(link, event);
		break;
	default:
		break;
	}
	/* The listeners only read it (wl_signal carries a plain pointer). */
	wl_signal_emit(&server->events.qos_event, (void *)event);
	/* Anything may have changed some process's class: re-read once, after
	 * the manager has finished the operation that emitted this. */
	schedule_refresh(link);
}

#define CPU_SAMPLE_MSEC 1000

static int handle_cpu_sample(void *data) {
	struct qos_link *link = data;
	struct qw_server *server = link->server;
	scheduler_own(server->scheduler);
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	uint64_t now_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
	struct qw_view *view;
	wl_list_for_each(view, &server->views, link) {
		struct client_identity *id = view_identity(view);
		/* Several windows may share a client: sample it once per tick. */
		if (id && now_ns - id->sampled_ns > 500000000u) {
			client_identity_sample_cpu(id, now_ns);
		}
	}
	if (link->manager) {
		/* The starvation watchdog's canary: this loop runs at normal
		 * priority, so if real-time members starve normal tasks this
		 * timer stops firing and the manager demotes them. A loop the
		 * scheduler may boost is no canary: the manager's own thread
		 * is (qos_link_create). */
		if (!scheduler_boost_available(server->scheduler)) {
			qos_manager_watchdog_feed(link->manager);
		}
		/* The count of messages not logged comes out even when no more do. */
		log_next_second(link);
	}
	wl_event_source_timer_update(link->cpu_sample_timer, CPU_SAMPLE_MSEC);
	return 0;
}

static int handle_qos_fd(int fd, uint32_t mask, void *data) {
	struct qos_link *link = data;
	scheduler_own_qos(link->server->scheduler);
	if (qos_manager_dispatch(link->manager) < 0) {
		wlr_log(WLR_ERROR, "QoS manager dispatch failed");
	}
	return 0;
}

/*
 * One cgroup root per live instance. At start the manager treats everything
 * under its root as left over by a dead instance and reconciles it, so a
 * second qosway of the same user (nested, another seat, tests) must not take
 * a root a live one holds. A flock on a file named after the root marks it
 * live; it is released by the kernel when the instance (and its guard) dies.
 */
static bool claim_root(struct qos_link *link, char *name, size_t len) {
	const char *dir = access("/run/user", W_OK) == 0 ? "/run/user" : "/tmp";
	for (int n = 0; n < 32; n++) {
		if (n == 0) {
			snprintf(name, len, "qosway-%u", (unsigned int)getuid());
		} else {
			snprintf(name, len, "qosway-%u-%d", (unsigned int)getuid(), n);
		}
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/.%s.lock", dir, name);
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0) {
			continue;
		}
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			link->root_lock = fd;
			return true;
		}
		close(fd);
	}
	return false;
}

/* A reload redefines a reserve with members only as qosctl reserve may. */
static bool reload_may_redefine(void *data, const char *name, const struct qos_params *params,
		char *err, size_t len) {
	struct qos_link *link = data;
	return qos_gate_may_reload(link->server, name, params, err, len);
}

/* The manager and what it runs on; without it the link only refuses. */
static void start_manager(struct qos_link *link) {
	struct qw_server *server = link->server;
	char root[64];
	if (server->dry_run) {
		/* No cgroups, classes or signals: not even the root's lock file. */
		snprintf(link->error, sizeof(link->error), "off in a dry run (nothing may change)");
		return;
	}
	if (!claim_root(link, root, sizeof(root))) {
		snprintf(link->error, sizeof(link->error),
				"no free cgroup root: too many qosway instances");
		wlr_log(WLR_ERROR, "QoS manager unavailable: %s", link->error);
		return;
	}
	link->cpu_sample_timer = wl_event_loop_add_timer(server->event_loop, handle_cpu_sample, link);
	if (link->cpu_sample_timer) {
		wl_event_source_timer_update(link->cpu_sample_timer, CPU_SAMPLE_MSEC);
	}
	struct qos_manager_config config;
	qos_manager_config_init(&config);
	config.root_name = root;
	config.rsvd_ppm = server->config.qos_reserved_ppm;
	/* The guard holds the root's lock until it has thawed everything. */
	config.guardian_keep_fd = link->root_lock;
	/* The canary is our own loop (above), unless the scheduler may boost
	 * it to real-time: then a thread of the manager's, at normal priority. */
	config.watchdog_external_canary = !scheduler_boost_available(server->scheduler);
	config.event = handle_qos_event;
	config.event_data = link;
	config.may_redefine = reload_may_redefine;
	config.may_redefine_data = link;
	link->manager = qos_manager_create(&config, link->error, sizeof(link->error));
	if (!link->manager) {
		wlr_log(WLR_ERROR, "QoS manager unavailable, windows keep their scheduling: %s",
				link->error);
		return;
	}
	link->manager_source = wl_event_loop_add_fd(server->event_loop,
			qos_manager_get_fd(link->manager), WL_EVENT_READABLE, handle_qos_fd, link);
	char err[256] = "";
	if (!reload(link, err, sizeof(err))) {
		wlr_log(WLR_INFO, "%s", err);
	}
}

bool qos_link_create(struct qw_server *server) {
	struct qos_link *link = calloc(1, sizeof(*link));
	if (!link) {
		wlr_log(WLR_ERROR, "QoS manager unavailable: out of memory");
		return false;
	}
	link->server = server;
	link->root_lock = -1;
	/* Before the manager starts: what its events reach asks through here. */
	server->qos_link = link;
	start_manager(link);
	return true;
}

void qos_link_destroy(struct qos_link *link) {
	if (!link) {
		return;
	}
	if (link->cpu_sample_timer) {
		wl_event_source_remove(link->cpu_sample_timer);
	}
	if (link->manager_source) {
		wl_event_source_remove(link->manager_source);
	}
	/* Every member goes back to its own cgroup and policy; nothing stays
	 * frozen. Its events may still ask for a refresh, and whoever they
	 * reach finds no manager, so the idle source goes only after it. */
	struct qos_manager *qos = link->manager;
	link->manager = NULL;
	link->rules = NULL;
	qos_manager_destroy(qos);
	if (link->refresh_idle) {
		wl_event_source_remove(link->refresh_idle);
	}
	if (link->root_lock >= 0) {
		close(link->root_lock);
	}
	link->server->qos_link = NULL;
	free(link);
}

const struct qos_rule *qos_link_match_rule(struct qw_server *server, pid_t pid, const char *app_id,
		struct qos_app_limits *limits) {
	char exe[PATH_MAX], cmd[4096];
	const char *e = qos_proc_exe(pid, exe, sizeof(exe)) ? exe : NULL;
	const char *c = qos_proc_cmdline(pid, cmd, sizeof(cmd)) ? cmd : NULL;
	const struct qos_rules *rules = qos_link_rules(server);
	if (limits) {
		qos_rules_app_limits(rules, e, c, app_id, limits);
	}
	return rules ? qos_rules_match(rules, e, c, app_id) : NULL;
}

const char *qos_link_app_id_of(struct qw_server *server, pid_t pid) {
	struct qw_view *view;
	wl_list_for_each(view, &server->views, link) {
		if (view_get_pid(view) == pid && view_app_id(view)) {
			return view_app_id(view);
		}
	}
	return NULL;
}

void qos_link_apply_rules(struct qw_server *server, pid_t pid, const char *app_id) {
	struct qos_manager *qos = qos_link_manager(server);
	if (!qos || pid <= 0) {
		return;
	}
	bool applied;
	char err[256];
	/* AutoQOS touches nothing the user could not ask for, and asks the
	 * kernel nothing it would refuse for want of CAP_SYS_NICE. */
	const struct qos_rule *rule = qos_link_match_rule(server, pid, app_id, NULL);
	if (!rule || !rule->auto_apply) {
		return;
	}
	const struct qos_reserve_def *def =
			rule->reserve[0] ? qos_rules_find_reserve(qos_link_rules(server), rule->reserve) : NULL;
	if (!qos_gate_may_touch(server, pid, err, sizeof(err)) ||
			!qos_gate_may_raise(def ? &def->params : &rule->params, pid, err, sizeof(err))) {
		wlr_log(WLR_INFO, "AutoQOS for pid %d not applied: %s", (int)pid, err);
		return;
	}
	if (!qos_manager_apply_rules(qos, pid, app_id, &applied, err, sizeof(err))) {
		wlr_log(WLR_INFO, "AutoQOS for pid %d refused: %s", (int)pid, err);
	}
	qos_link_schedule_refresh(server);
}
