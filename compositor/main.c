#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wayland-server-core.h>
#include <wlr/util/log.h>

#include "config/config.h"
#include "scheduler/scheduler.h"
#include "server.h"

static const char usage[] = "Usage: qosway [options]\n"
							"\n"
							"  -c FILE   read the configuration from FILE\n"
							"  -s CMD    run CMD with sh -c once the display is up\n"
							"  -d        verbose (debug) logging\n"
							"  -h        show this help\n"
							"  -v        show the version\n"
							"\n"
							"Without -c, the first of $XDG_CONFIG_HOME/qosway/config,\n"
							"" QOSWAY_SYSCONFDIR "/config and " QOSWAY_DATADIR "/config is used.\n";

int main(int argc, char *argv[]) {
	const char *config_path = NULL;
	const char *startup_cmd = NULL;
	enum wlr_log_importance verbosity = WLR_INFO;
	int c;
	while ((c = getopt(argc, argv, "c:s:dhv")) != -1) {
		switch (c) {
		case 'c':
			config_path = optarg;
			break;
		case 's':
			startup_cmd = optarg;
			break;
		case 'd':
			verbosity = WLR_DEBUG;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case 'v':
			printf("qosway %s\n", QOSWAY_VERSION);
			return 0;
		default:
			fputs(usage, stderr);
			return 1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "qosway: unexpected argument '%s'\n", argv[optind]);
		fputs(usage, stderr);
		return 1;
	}
	wlr_log_init(verbosity, NULL);

	struct qw_server server = { 0 };
	config_init_defaults(&server.config);
	char *found = config_path ? NULL : config_find_default();
	const char *path = config_path ? config_path : found;
	if (path) {
		server.config_path = strdup(path);
		/* A missing or partly bad file leaves the defaults in place: the
		 * session must come up so the user can fix it. */
		config_load_file(&server.config, path, stderr);
		wlr_log(WLR_INFO, "configuration: %s (%u bad lines)", path, server.config.error_count);
	}
	free(found);

	if (!server_init(&server)) {
		wlr_log(WLR_ERROR, "failed to start the compositor");
		server_finish(&server);
		config_finish(&server.config);
		free(server.config_path);
		return 1;
	}
	setenv("WAYLAND_DISPLAY", server.socket, true);
	setenv("QOSWAY_SOCK", server.ipc_socket_path, true);
	fprintf(stderr, "qosway: WAYLAND_DISPLAY=%s QOSWAY_SOCK=%s\n", server.socket,
			server.ipc_socket_path);
	if (startup_cmd) {
		server_spawn_shell(&server, startup_cmd);
	}
	scheduler_run(server.scheduler);
	wlr_log(WLR_INFO, "exiting");
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	server_finish(&server);
	config_finish(&server.config);
	free(server.config_path);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* What is left of an exit that takes long is the process's own teardown. */
	wlr_log(WLR_INFO, "shut down in %ld ms",
			(long)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000));
	return server.exit_code;
}
