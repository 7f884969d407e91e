#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <wlr/types/wlr_output_layout.h>
#include <wlr/util/log.h>

#include "dry_server.h"
#include "ipc/ipc.h"
#include "qos_bridge/qos_link.h"
#include "qos_bridge/reserve_protocol.h"
#include "scheduler/scheduler.h"

static struct qw_server server;
static bool made;
static char dir[4096];

static void cleanup(void) {
	if (server.ipc_socket_path) {
		unlink(server.ipc_socket_path);
	}
	rmdir(dir);
}

struct qw_server *dry_server_get(void) {
	if (made) {
		return &server;
	}
	/* Errors only: a refusal is logged per request, millions of times. */
	wlr_log_init(WLR_SILENT, NULL);
	config_init_defaults(&server.config);
	/* "scheduling off": the books hang on surfaces, and there is no
	 * wlr_compositor (no renderer) here; the boost would be a class. */
	server.config.scheduling.serve_by_reserve = false;
	server.config.scheduling.bill = false;
	server.config.scheduling.boost = false;
	server.dry_run = true;
	server.proc_events.fd = -1;
	wl_list_init(&server.outputs);
	wl_list_init(&server.views);
	wl_list_init(&server.input.keyboards);
	server.wl_display = wl_display_create();
	if (!server.wl_display) {
		fprintf(stderr, "dry server: no wl_display\n");
		abort();
	}
	server.event_loop = wl_display_get_event_loop(server.wl_display);
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof(dir), "%s/qosway-fuzz-XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
	server.output_layout = wlr_output_layout_create();
	server.scheduler = scheduler_create(&server);
	if (!server.output_layout || !server_create_scene(&server) || !server.scheduler ||
			!qos_link_create(&server) || !reserve_protocol_create(&server) || !mkdtemp(dir) ||
			asprintf(&server.ipc_socket_path, "%s/ipc-%d.sock", dir, (int)getpid()) < 0 ||
			!(server.ipc = ipc_create(&server, server.ipc_socket_path))) {
		fprintf(stderr, "dry server: cannot start\n");
		abort();
	}
	atexit(cleanup);
	made = true;
	return &server;
}

void dry_server_dispatch(struct qw_server *s) {
	wl_display_flush_clients(s->wl_display);
	wl_event_loop_dispatch(s->event_loop, 0);
	wl_display_flush_clients(s->wl_display);
}
