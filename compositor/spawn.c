#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <wlr/util/log.h>

#include "qos/qos.h"
#include "qos_bridge/qos_gate.h"
#include "qos_bridge/qos_link.h"
#include "scheduler/scheduler.h"
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
				(!params || qos_gate_may_raise(params, pid, err, err_len)) &&
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
	if (!qos_gate_may_raise(def ? &def->params : &rule->params, pid, err, err_len)) {
		wlr_log(WLR_INFO, "AutoQOS for %s (pid %d) not applied: %s", exe, (int)pid, err);
		return;
	}
	bool ok = rule->reserve[0] ? qos_manager_join(qos, rule->reserve, pid, 0, err, err_len)
							   : qos_manager_set_class(qos, pid, &rule->params, err, err_len);
	if (!ok) {
		wlr_log(WLR_INFO, "AutoQOS for %s (pid %d) refused: %s", exe, (int)pid, err);
	}
}

#define KEPT_ENV_PREFIX "QOSWAY_ENV_"

static bool name_is(const char *entry, const char *name, size_t name_len) {
	return strncmp(entry, name, name_len) == 0 && entry[name_len] == '=';
}

/*
 * The environment for a child: ours, with each QOSWAY_ENV_NAME=value that
 * qosway-session kept aside given back as NAME=value. glibc drops such
 * variables (LD_LIBRARY_PATH, TMPDIR, ...) from a program started with a
 * file capability; the child runs without it and gets the user's. Built
 * before fork: the child may only make system calls. NULL if out of memory.
 */
static char **child_environment(void) {
	size_t n = 0;
	while (environ[n]) {
		n++;
	}
	char **env = calloc(n + 1, sizeof(*env));
	if (!env) {
		return NULL;
	}
	size_t out = 0;
	const size_t plen = strlen(KEPT_ENV_PREFIX);
	for (size_t i = 0; i < n; i++) {
		const char *entry = environ[i];
		if (strncmp(entry, KEPT_ENV_PREFIX, plen) == 0) {
			continue;
		}
		/* Replaced by the kept value, if there is one. */
		const char *eq = strchr(entry, '=');
		size_t name_len = eq ? (size_t)(eq - entry) : strlen(entry);
		bool kept = false;
		for (size_t j = 0; j < n && !kept; j++) {
			kept = strncmp(environ[j], KEPT_ENV_PREFIX, plen) == 0 &&
					name_is(environ[j] + plen, entry, name_len);
		}
		if (!kept) {
			env[out++] = (char *)entry;
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (strncmp(environ[i], KEPT_ENV_PREFIX, plen) == 0 && environ[i][plen] != '=' &&
				strchr(environ[i] + plen, '=')) {
			env[out++] = environ[i] + plen;
		}
	}
	env[out] = NULL;
	return env;
}

/*
 * No capability of the compositor's (CAP_SYS_NICE from its file
 * capability) may reach what it starts: with empty inheritable and ambient
 * sets, exec of a program without file capabilities leaves it none.
 * System calls only (between fork and exec).
 */
static void drop_inheritable_capabilities(void) {
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	if (syscall(SYS_capget, &header, data) != 0) {
		return;
	}
	for (size_t i = 0; i < _LINUX_CAPABILITY_U32S_3; i++) {
		data[i].inheritable = 0;
	}
	syscall(SYS_capset, &header, data);
}

pid_t server_spawn_argv_qos(struct qw_server *server, char *const argv[], const char *reserve,
		char *err, size_t err_len) {
	err[0] = '\0';
	if (server->dry_run) {
		snprintf(err, err_len, "nothing is started in a dry run");
		return -1;
	}
	char **env = child_environment();
	if (!env) {
		snprintf(err, err_len, "out of memory");
		return -1;
	}
	int gate[2];
	if (pipe2(gate, O_CLOEXEC) < 0) {
		snprintf(err, err_len, "pipe: %s", strerror(errno));
		free(env);
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(err, err_len, "fork: %s", strerror(errno));
		close(gate[0]);
		close(gate[1]);
		free(env);
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
		drop_inheritable_capabilities();
		setsid();
		close(gate[1]);
		/* Wait until the compositor has settled our QoS (EOF either way). */
		char byte;
		while (read(gate[0], &byte, 1) < 0 && errno == EINTR) {
		}
		close(gate[0]);
		execvpe(argv[0], argv, env);
		_exit(127);
	}
	free(env);
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
