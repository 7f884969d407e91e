#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wlr/util/log.h>

#include "qos/qos.h"
#include "qos_gate.h"
#include "qos_link.h"
#include "scheduler.h"
#include "server.h"

/* argv[0] as the exec will find it, for matching exe= rules before exec. */
static void resolve_exe(const char *name, char *out, size_t len) {
	snprintf(out, len, "%s", name);
	if (strchr(name, '/')) {
		return;
	}
	const char *path = getenv("PATH");
	if (!path) {
		return;
	}
	char *copy = strdup(path);
	char *save = NULL;
	for (char *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir;
			dir = strtok_r(NULL, ":", &save)) {
		char candidate[PATH_MAX];
		snprintf(candidate, sizeof(candidate), "%s/%s", dir, name);
		if (access(candidate, X_OK) == 0) {
			snprintf(out, len, "%s", candidate);
			break;
		}
	}
	free(copy);
}

/* Put the not-yet-exec'd child where its command belongs. */
static void settle_qos(struct qw_server *server, pid_t pid, char *const argv[], const char *reserve,
		char *err, size_t err_len) {
	struct qos_manager *qos = qos_link_manager(server);
	const struct qos_rules *rules = qos_link_rules(server);
	if (reserve) {
		struct qos_reserve_info info;
		const struct qos_reserve_def *def = rules ? qos_rules_find_reserve(rules, reserve) : NULL;
		const struct qos_params *params = qos && qos_manager_reserve_info(qos, reserve, &info)
				? &info.params
				: def ? &def->params
					  : NULL;
		if (qos_link_ready(server, err, err_len) &&
				(!params || qos_gate_may_raise(params, err, err_len)) &&
				!qos_manager_join(qos, reserve, pid, 0, err, err_len)) {
			wlr_log(WLR_INFO, "pid %d runs without reserve %s: %s", (int)pid, reserve, err);
		}
		return;
	}
	if (!qos || !rules) {
		return;
	}
	/* Match what the process will be, not the compositor copy it is now. */
	char exe[PATH_MAX], cmdline[4096] = "";
	resolve_exe(argv[0], exe, sizeof(exe));
	size_t off = 0;
	for (size_t i = 0; argv[i] && off < sizeof(cmdline) - 1; i++) {
		off += snprintf(cmdline + off, sizeof(cmdline) - off, "%s%s", i ? " " : "", argv[i]);
	}
	/* "sh -c CMD": the command is what the user named. */
	if (argv[0] && argv[1] && argv[2] && strcmp(argv[1], "-c") == 0 &&
			strcmp(argv[0], "/bin/sh") == 0) {
		char first[PATH_MAX];
		snprintf(first, sizeof(first), "%s", argv[2]);
		first[strcspn(first, " \t")] = '\0';
		resolve_exe(first, exe, sizeof(exe));
		snprintf(cmdline, sizeof(cmdline), "%s", argv[2]);
	}
	const struct qos_rule *rule = qos_rules_match(rules, exe, cmdline, NULL);
	if (!rule || !rule->auto_apply) {
		return;
	}
	const struct qos_reserve_def *def =
			rule->reserve[0] ? qos_rules_find_reserve(rules, rule->reserve) : NULL;
	if (!qos_gate_may_raise(def ? &def->params : &rule->params, err, err_len)) {
		wlr_log(WLR_INFO, "AutoQOS for %s (pid %d) not applied: %s", exe, (int)pid, err);
		return;
	}
	bool ok = rule->reserve[0] ? qos_manager_join(qos, rule->reserve, pid, 0, err, err_len)
							   : qos_manager_set_class(qos, pid, &rule->params, err, err_len);
	if (!ok) {
		wlr_log(WLR_INFO, "AutoQOS for %s (pid %d) refused: %s", exe, (int)pid, err);
	}
}

pid_t server_spawn_argv_qos(struct qw_server *server, char *const argv[], const char *reserve,
		char *err, size_t err_len) {
	err[0] = '\0';
	int gate[2];
	if (pipe2(gate, O_CLOEXEC) < 0) {
		snprintf(err, err_len, "pipe: %s", strerror(errno));
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(err, err_len, "fork: %s", strerror(errno));
		close(gate[0]);
		close(gate[1]);
		return -1;
	}
	if (pid == 0) {
		/* The event loop blocks the signals it handles through signalfd;
		 * a blocked mask survives exec, so children must start clean. */
		sigset_t set;
		sigemptyset(&set);
		sigprocmask(SIG_SETMASK, &set, NULL);
		signal(SIGPIPE, SIG_DFL);
		scheduler_prepare_child(server->scheduler);
		setsid();
		close(gate[1]);
		/* Wait until the compositor has settled our QoS (EOF either way). */
		char byte;
		while (read(gate[0], &byte, 1) < 0 && errno == EINTR) {
		}
		close(gate[0]);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(gate[0]);
	settle_qos(server, pid, argv, reserve, err, err_len);
	close(gate[1]);
	qos_link_schedule_refresh(server);
	wlr_log(WLR_INFO, "started %s as pid %d", argv[0], (int)pid);
	return pid;
}

pid_t server_spawn_argv(struct qw_server *server, char *const argv[]) {
	char err[256];
	return server_spawn_argv_qos(server, argv, NULL, err, sizeof(err));
}

pid_t server_spawn_shell(struct qw_server *server, const char *cmd) {
	if (!cmd || !*cmd) {
		return -1;
	}
	char *const argv[] = { "/bin/sh", "-c", (char *)cmd, NULL };
	return server_spawn_argv(server, argv);
}
