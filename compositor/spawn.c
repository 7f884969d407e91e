#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
#include <wlr/util/log.h>

#include "server.h"

pid_t server_spawn_argv(struct qw_server *server, char *const argv[]) {
	pid_t pid = fork();
	if (pid < 0) {
		wlr_log_errno(WLR_ERROR, "fork failed for %s", argv[0]);
		return -1;
	}
	if (pid == 0) {
		/* The event loop blocks the signals it handles through signalfd;
		 * a blocked mask survives exec, so children must start clean. */
		sigset_t set;
		sigemptyset(&set);
		sigprocmask(SIG_SETMASK, &set, NULL);
		signal(SIGPIPE, SIG_DFL);
		setsid();
		execvp(argv[0], argv);
		_exit(127);
	}
	wlr_log(WLR_INFO, "started %s as pid %d", argv[0], (int)pid);
	return pid;
}

pid_t server_spawn_shell(struct qw_server *server, const char *cmd) {
	if (!cmd || !*cmd) {
		return -1;
	}
	char *const argv[] = {"/bin/sh", "-c", (char *)cmd, NULL};
	return server_spawn_argv(server, argv);
}
