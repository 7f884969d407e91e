#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <wlr/backend.h>
#include <wlr/backend/headless.h>
#include <wlr/backend/multi.h>
#include <wlr/render/allocator.h>
#include <wlr/render/pixman.h>
#include <wlr/render/wlr_renderer.h>
#include <wlr/types/wlr_compositor.h>
#include <wlr/types/wlr_data_device.h>
#include <wlr/types/wlr_idle.h>
#include <wlr/types/wlr_idle_inhibit_v1.h>
#include <wlr/types/wlr_layer_shell_v1.h>
#include <wlr/types/wlr_output_layout.h>
#include <wlr/types/wlr_presentation_time.h>
#include <wlr/types/wlr_primary_selection_v1.h>
#include <wlr/types/wlr_scene.h>
#include <wlr/types/wlr_screencopy_v1.h>
#include <wlr/types/wlr_server_decoration.h>
#include <wlr/types/wlr_viewporter.h>
#include <wlr/types/wlr_xdg_activation_v1.h>
#include <wlr/types/wlr_xdg_decoration_v1.h>
#include <wlr/types/wlr_xdg_output_v1.h>
#include <wlr/types/wlr_xdg_shell.h>
#include <wlr/util/log.h>

#include "desktop/activation.h"
#include "input/cursor.h"
#include "desktop/desktop_protocols.h"
#include "input/dnd.h"
#include "desktop/foreign_toplevel.h"
#include "input/gestures.h"
#include "desktop/idle.h"
#include "input/input_devices.h"
#include "ipc/ipc.h"
#include "desktop/layer_shell.h"
#include "output/output.h"
#include "output/output_apply.h"
#include "output/output_management.h"
#include "input/pointer_constraints.h"
#include "qos_bridge/proc_events.h"
#include "qos_bridge/qos_link.h"
#include "decoration/reserve_menu.h"
#include "desktop/inactive.h"
#include "qos_bridge/reserve_protocol.h"
#include "output/vblank.h"
#include "scheduler/scheduler.h"
#include "desktop/screen_lock.h"
#include "input/seat.h"
#include "input/shortcuts_inhibit.h"
#include "input/tablet.h"
#include "input/text_input.h"
#include "input/touch.h"
#include "server.h"
#include "desktop/view.h"
#include "desktop/workspace.h"
#include "decoration/xdg_decoration.h"
#include "desktop/xwayland.h"

void server_terminate(struct qw_server *server) {
	scheduler_stop(server->scheduler);
	wl_display_terminate(server->wl_display);
}

static int handle_terminate_signal(int signal, void *data) {
	struct qw_server *server = data;
	wlr_log(WLR_INFO, "signal %d: shutting down", signal);
	server_terminate(server);
	return 0;
}

static int handle_sighup(int signal, void *data) {
	struct qw_server *server = data;
	char err[256] = "";
	if (!output_config_reload(server, err, sizeof(err))) {
		wlr_log(WLR_ERROR, "SIGHUP: %s", err);
	}
	err[0] = '\0';
	if (!input_devices_reload(server, err, sizeof(err))) {
		wlr_log(WLR_ERROR, "SIGHUP: %s", err);
	}
	err[0] = '\0';
	if (!qos_link_reload(server, err, sizeof(err))) {
		wlr_log(WLR_ERROR, "SIGHUP: qosrc not reloaded: %s", err);
	}
	return 0;
}

static int handle_sigchld(int signal, void *data) {
	/* Reap every child we started so none lingers as a zombie. */
	int status;
	while (waitpid(-1, &status, WNOHANG) > 0) {
	}
	return 0;
}

static void find_headless(struct wlr_backend *backend, void *data) {
	struct qw_server *server = data;
	if (wlr_backend_is_headless(backend)) {
		server->headless_backend = backend;
	}
}

/*
 * Autodetection would wait seconds for a DRM device that cannot appear on
 * a machine with no GPU; when nothing but DRM could work, skip straight to
 * the headless fallback. WLR_BACKENDS always wins.
 */
static bool autodetect_hopeless(void) {
	if (getenv("WLR_BACKENDS") || getenv("WAYLAND_DISPLAY") || getenv("WAYLAND_SOCKET") ||
			getenv("DISPLAY")) {
		return false;
	}
	glob_t cards;
	bool none = glob("/dev/dri/card*", 0, NULL, &cards) != 0;
	globfree(&cards);
	return none;
}

static bool create_backend(struct qw_server *server) {
	server->backend = autodetect_hopeless() ? NULL : wlr_backend_autocreate(server->wl_display);
	if (server->backend) {
		if (wlr_backend_is_multi(server->backend)) {
			wlr_multi_for_each_backend(server->backend, find_headless, server);
		} else {
			find_headless(server->backend, server);
		}
	} else {
		/* No seat, no display, no GPU: a bare qosway still runs, headless. */
		wlr_log(WLR_INFO, "no usable backend found; falling back to headless");
		server->backend = wlr_headless_backend_create(server->wl_display);
		server->headless_backend = server->backend;
		if (!server->backend) {
			wlr_log(WLR_ERROR, "failed to create the headless backend");
			return false;
		}
	}
	server->headless = server->headless_backend != NULL;
	server->renderer = wlr_renderer_autocreate(server->backend);
	if (!server->renderer) {
		wlr_log(WLR_INFO, "no hardware renderer; using pixman");
		server->renderer = wlr_pixman_renderer_create();
	}
	if (!server->renderer) {
		wlr_log(WLR_ERROR, "failed to create a renderer");
		return false;
	}
	wlr_renderer_init_wl_display(server->renderer, server->wl_display);
	server->allocator = wlr_allocator_autocreate(server->backend, server->renderer);
	if (!server->allocator) {
		wlr_log(WLR_ERROR, "failed to create an allocator");
		return false;
	}
	return true;
}

bool server_create_scene(struct qw_server *server) {
	server->scene = wlr_scene_create();
	if (!server->scene || !wlr_scene_attach_output_layout(server->scene, server->output_layout)) {
		return false;
	}
	/* Creation order is stacking order (see server.h). */
	struct wlr_scene_node *root = &server->scene->node;
	server->trees.layers[QW_LAYER_BACKGROUND] = wlr_scene_tree_create(root);
	server->trees.layers[QW_LAYER_BOTTOM] = wlr_scene_tree_create(root);
	server->trees.views = wlr_scene_tree_create(root);
	server->trees.layers[QW_LAYER_TOP] = wlr_scene_tree_create(root);
	server->trees.fullscreen = wlr_scene_tree_create(root);
	server->trees.unmanaged = wlr_scene_tree_create(root);
	server->trees.layers[QW_LAYER_OVERLAY] = wlr_scene_tree_create(root);
	for (int i = 0; i < QW_LAYER_COUNT; i++) {
		if (!server->trees.layers[i]) {
			return false;
		}
	}
	return server->trees.views && server->trees.fullscreen && server->trees.unmanaged;
}

static bool create_protocols(struct qw_server *server) {
	struct wl_display *display = server->wl_display;
	server->compositor = wlr_compositor_create(display, server->renderer);
	server->presentation = wlr_presentation_create(display, server->backend);
	server->xdg.shell = wlr_xdg_shell_create(display);
	server->layer_shell.manager = wlr_layer_shell_v1_create(display);
	server->decorations.xdg_manager = wlr_xdg_decoration_manager_v1_create(display);
	server->decorations.server_manager = wlr_server_decoration_manager_create(display);
	server->activation.manager = wlr_xdg_activation_v1_create(display);
	server->idle.manager = wlr_idle_create(display);
	server->idle.inhibit_manager = wlr_idle_inhibit_v1_create(display);
	if (!server->compositor || !server->presentation || !server->xdg.shell ||
			!server->layer_shell.manager || !server->decorations.xdg_manager ||
			!server->decorations.server_manager || !server->activation.manager || !server->idle.manager ||
			!server->idle.inhibit_manager || !wlr_data_device_manager_create(display) ||
			!wlr_primary_selection_v1_device_manager_create(display) ||
			!wlr_screencopy_manager_v1_create(display) ||
			!wlr_xdg_output_manager_v1_create(display, server->output_layout) ||
			!wlr_viewporter_create(display) || !foreign_toplevel_init(server) ||
			!output_management_init(server) || !desktop_protocols_init(server)) {
		wlr_log(WLR_ERROR, "failed to create a protocol global");
		return false;
	}
	wlr_scene_set_presentation(server->scene, server->presentation);
	wlr_server_decoration_manager_set_default_mode(server->decorations.server_manager,
			WLR_SERVER_DECORATION_MANAGER_MODE_SERVER);

	server->xdg.new_surface.notify = view_handle_new_xdg_surface;
	wl_signal_add(&server->xdg.shell->events.new_surface, &server->xdg.new_surface);
	server->layer_shell.new_surface.notify = layer_shell_handle_new_surface;
	wl_signal_add(&server->layer_shell.manager->events.new_surface, &server->layer_shell.new_surface);
	server->decorations.new_toplevel_decoration.notify = xdg_decoration_handle_new;
	wl_signal_add(&server->decorations.xdg_manager->events.new_toplevel_decoration,
			&server->decorations.new_toplevel_decoration);
	server->decorations.new_server_decoration.notify = xdg_decoration_handle_new_kde;
	wl_signal_add(&server->decorations.server_manager->events.new_decoration,
			&server->decorations.new_server_decoration);
	activation_init(server);
	return true;
}

static bool start_ipc(struct qw_server *server) {
	const char *dir = getenv("XDG_RUNTIME_DIR");
	if (!dir) {
		wlr_log(WLR_ERROR, "XDG_RUNTIME_DIR is not set; no IPC socket");
		return false;
	}
	if (asprintf(&server->ipc_socket_path, "%s/qosway-%u.%d.sock", dir, (unsigned int)getuid(),
				(int)getpid()) < 0) {
		server->ipc_socket_path = NULL;
		return false;
	}
	server->ipc = ipc_create(server, server->ipc_socket_path);
	return server->ipc != NULL;
}

bool server_init(struct qw_server *server) {
	server->proc_events.fd = -1;
	wl_list_init(&server->outputs);
	wl_list_init(&server->views);
	wl_list_init(&server->input.keyboards);
	server->wl_display = wl_display_create();
	if (!server->wl_display) {
		return false;
	}
	server->event_loop = wl_display_get_event_loop(server->wl_display);
	if (!theme_init(&server->theme, &server->config)) {
		return false;
	}
	if (!create_backend(server)) {
		return false;
	}
	server->output_layout = wlr_output_layout_create();
	if (!server->output_layout || !server_create_scene(server) || !create_protocols(server)) {
		return false;
	}
	if (!cursor_init(server) || !touch_init(server) || !tablet_init(server) || !seat_init(server) ||
			!screen_lock_init(server) || !dnd_init(server) || !gestures_init(server) ||
			!pointer_constraints_init(server) || !shortcuts_inhibit_init(server) ||
			!text_input_init(server)) {
		return false;
	}
	idle_init(server);
	xwayland_init(server);
	server->scheduler = scheduler_create(server);
	if (!server->scheduler) {
		wlr_log(WLR_ERROR, "cannot create the scheduler");
		return false;
	}
	if (!inactive_create(server)) {
		wlr_log(WLR_ERROR, "cannot create the inactive-window tracker: out of memory");
		return false;
	}
	if (!workspace_init(server)) {
		return false;
	}
	if (!vblank_create(server)) {
		wlr_log(WLR_ERROR, "cannot create the vblank tracker: out of memory");
		return false;
	}
	server->new_output.notify = output_handle_new;
	wl_signal_add(&server->backend->events.new_output, &server->new_output);

	server->socket = wl_display_add_socket_auto(server->wl_display);
	if (!server->socket) {
		wlr_log(WLR_ERROR, "cannot create a wayland socket (is XDG_RUNTIME_DIR set?)");
		return false;
	}
	if (!wlr_backend_start(server->backend)) {
		wlr_log(WLR_ERROR, "failed to start the backend");
		return false;
	}
	/* wlroots' autocreate already adds WLR_HEADLESS_OUTPUTS (default 1)
	 * outputs to a headless backend; only our own fallback needs one. */
	if (server->headless_backend && server->headless_backend == server->backend &&
			!wlr_headless_add_output(server->headless_backend, server->config.output_width,
					server->config.output_height)) {
		wlr_log(WLR_ERROR, "failed to add a headless output");
		return false;
	}
	if (!start_ipc(server)) {
		return false;
	}
	server->signals.sigint =
			wl_event_loop_add_signal(server->event_loop, SIGINT, handle_terminate_signal, server);
	server->signals.sigterm =
			wl_event_loop_add_signal(server->event_loop, SIGTERM, handle_terminate_signal, server);
	server->signals.sigchld =
			wl_event_loop_add_signal(server->event_loop, SIGCHLD, handle_sigchld, server);
	server->signals.sighup =
			wl_event_loop_add_signal(server->event_loop, SIGHUP, handle_sighup, server);
	qos_link_create(server);
	scheduler_weight_start(server->scheduler);
	if (qos_link_manager(server)) {
		proc_events_init(server);
	}
	if (!reserve_protocol_create(server)) {
		wlr_log(WLR_ERROR, "failed to create the qosway-reserve-v1 global");
	}
	return server->signals.sigint && server->signals.sigterm && server->signals.sigchld &&
			server->signals.sighup;
}

void server_finish(struct qw_server *server) {
	if (!server->wl_display) {
		return;
	}
	/* X windows go while the server is whole: tearing down the window
	 * manager runs the event loop (xwayland.c), and Xwayland must be gone
	 * before the other clients or it would be restarted. */
	xwayland_finish(server);
	/* Then give every process back its own cgroup and class: nothing
	 * may stay frozen or real-time after the session. */
	proc_events_finish(server);
	qos_link_destroy(server->qos_link);
	vblank_destroy(server->vblank);
	inactive_destroy(server->inactive);
	workspace_finish(server);
	ipc_destroy(server->ipc);
	server->ipc = NULL;
	free(server->ipc_socket_path);
	wl_display_destroy_clients(server->wl_display);
	screen_lock_finish(server);
	dnd_finish(server);
	desktop_protocols_finish(server);
	scheduler_destroy(server->scheduler);
	server->scheduler = NULL;
	if (server->signals.sigint) {
		wl_event_source_remove(server->signals.sigint);
	}
	if (server->signals.sigterm) {
		wl_event_source_remove(server->signals.sigterm);
	}
	if (server->signals.sigchld) {
		wl_event_source_remove(server->signals.sigchld);
	}
	if (server->signals.sighup) {
		wl_event_source_remove(server->signals.sighup);
	}
	if (server->xdg.new_surface.notify) {
		wl_list_remove(&server->xdg.new_surface.link);
		wl_list_remove(&server->layer_shell.new_surface.link);
		wl_list_remove(&server->decorations.new_toplevel_decoration.link);
		wl_list_remove(&server->decorations.new_server_decoration.link);
		activation_finish(server);
	}
	idle_finish(server);
	pointer_constraints_finish(server);
	shortcuts_inhibit_finish(server);
	text_input_finish(server);
	gestures_finish(server);
	seat_finish(server);
	tablet_finish(server);
	touch_finish(server);
	if (server->new_output.notify) {
		wl_list_remove(&server->new_output.link);
	}
	/* Destroying the backend destroys its outputs (and their listeners). */
	if (server->backend) {
		wlr_backend_destroy(server->backend);
	}
	cursor_finish(server);
	reserve_menu_close(server);
	if (server->scene) {
		wlr_scene_node_destroy(&server->scene->node);
	}
	if (server->output_layout) {
		wlr_output_layout_destroy(server->output_layout);
	}
	wl_display_destroy(server->wl_display);
	if (server->allocator) {
		wlr_allocator_destroy(server->allocator);
	}
	if (server->renderer) {
		wlr_renderer_destroy(server->renderer);
	}
	theme_finish(&server->theme);
	server->wl_display = NULL;
}
