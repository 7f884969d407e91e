#include <stdlib.h>
#include <wlr/backend.h>
#include <wlr/types/wlr_compositor.h>
#include <wlr/types/wlr_idle.h>
#include <wlr/types/wlr_idle_inhibit_v1.h>
#include <wlr/types/wlr_input_device.h>
#include <wlr/types/wlr_layer_shell_v1.h>
#include <wlr/types/wlr_touch.h>
#include <wlr/types/wlr_xdg_shell.h>
#include <wlr/util/log.h>

#include "qos_bridge/client_identity.h"
#include "desktop/idle.h"
#include "server.h"
#include "desktop/view.h"

struct qw_idle_inhibitor {
	struct wl_list link; /* qw_server.idle.inhibitors */
	struct qw_server *server;
	struct wlr_idle_inhibitor_v1 *inhibitor;
	/* Mapping and unmapping happen on commit. */
	struct wl_listener surface_commit;
	struct wl_listener destroy;
};

/* Touch screens are not part of the pointer; their events still count. */
struct qw_idle_touch {
	struct wl_list link; /* qw_server.idle.touch_devices */
	struct qw_server *server;
	struct wlr_input_device *device;
	struct wl_listener down;
	struct wl_listener up;
	struct wl_listener motion;
	struct wl_listener cancel;
	struct wl_listener destroy;
};

void idle_notify_activity(struct qw_server *server) {
	if (server->idle.manager && server->seat) {
		wlr_idle_notify_activity(server->idle.manager, server->seat);
	}
}

static bool client_paused(struct wlr_surface *surface) {
	struct client_identity *id = client_identity_find(wl_resource_get_client(surface->resource));
	return id && id->paused;
}

static bool surface_visible(struct wlr_surface *surface) {
	struct wlr_surface *root = wlr_surface_get_root_surface(surface);
	if (client_paused(root)) {
		return false;
	}
	if (wlr_surface_is_layer_surface(root)) {
		struct wlr_layer_surface_v1 *layer = wlr_layer_surface_v1_from_wlr_surface(root);
		return layer && layer->mapped;
	}
	if (!wlr_surface_is_xdg_surface(root)) {
		return false;
	}
	struct wlr_xdg_surface *xdg = wlr_xdg_surface_from_wlr_surface(root);
	if (!xdg || !xdg->mapped) {
		return false;
	}
	if (xdg->role != WLR_XDG_SURFACE_ROLE_TOPLEVEL) {
		return true; /* a popup shows while its parent does */
	}
	struct qw_node_desc *desc = xdg->data ? node_desc_find(xdg->data) : NULL;
	struct qw_view *view = desc ? desc->view : NULL;
	return view && view->mapped && !view->minimized && !view_is_paused(view);
}

void idle_update_inhibit(struct qw_server *server) {
	if (!server->idle.manager) {
		return;
	}
	bool inhibited = false;
	struct qw_idle_inhibitor *inhibitor;
	wl_list_for_each(inhibitor, &server->idle.inhibitors, link) {
		if (surface_visible(inhibitor->inhibitor->surface)) {
			inhibited = true;
			break;
		}
	}
	if (inhibited != server->idle.inhibited) {
		wlr_log(WLR_DEBUG, "idle timers %s", inhibited ? "inhibited" : "running");
		server->idle.inhibited = inhibited;
	}
	/* Re-enabling restarts every timer from zero, as activity would. */
	wlr_idle_set_enabled(server->idle.manager, server->seat, !inhibited);
}

static void inhibitor_destroy(struct qw_idle_inhibitor *inhibitor) {
	wl_list_remove(&inhibitor->surface_commit.link);
	wl_list_remove(&inhibitor->destroy.link);
	wl_list_remove(&inhibitor->link);
	free(inhibitor);
}

static void handle_inhibitor_destroy(struct wl_listener *listener, void *data) {
	struct qw_idle_inhibitor *inhibitor = wl_container_of(listener, inhibitor, destroy);
	struct qw_server *server = inhibitor->server;
	inhibitor_destroy(inhibitor);
	idle_update_inhibit(server);
}

static void handle_inhibitor_surface_commit(struct wl_listener *listener, void *data) {
	struct qw_idle_inhibitor *inhibitor = wl_container_of(listener, inhibitor, surface_commit);
	idle_update_inhibit(inhibitor->server);
}

static void handle_new_idle_inhibitor(struct wl_listener *listener, void *data) {
	struct qw_server *server = wl_container_of(listener, server, idle.new_inhibitor);
	struct wlr_idle_inhibitor_v1 *wlr_inhibitor = data;
	struct qw_idle_inhibitor *inhibitor = calloc(1, sizeof(*inhibitor));
	if (!inhibitor) {
		wlr_log(WLR_ERROR, "out of memory for an idle inhibitor");
		return;
	}
	inhibitor->server = server;
	inhibitor->inhibitor = wlr_inhibitor;
	inhibitor->destroy.notify = handle_inhibitor_destroy;
	wl_signal_add(&wlr_inhibitor->events.destroy, &inhibitor->destroy);
	inhibitor->surface_commit.notify = handle_inhibitor_surface_commit;
	wl_signal_add(&wlr_inhibitor->surface->events.commit, &inhibitor->surface_commit);
	wl_list_insert(&server->idle.inhibitors, &inhibitor->link);
	idle_update_inhibit(server);
}

static void touch_destroy(struct qw_idle_touch *touch) {
	wl_list_remove(&touch->down.link);
	wl_list_remove(&touch->up.link);
	wl_list_remove(&touch->motion.link);
	wl_list_remove(&touch->cancel.link);
	wl_list_remove(&touch->destroy.link);
	wl_list_remove(&touch->link);
	free(touch);
}

static void handle_touch_down(struct wl_listener *listener, void *data) {
	struct qw_idle_touch *touch = wl_container_of(listener, touch, down);
	idle_notify_activity(touch->server);
}

static void handle_touch_up(struct wl_listener *listener, void *data) {
	struct qw_idle_touch *touch = wl_container_of(listener, touch, up);
	idle_notify_activity(touch->server);
}

static void handle_touch_motion(struct wl_listener *listener, void *data) {
	struct qw_idle_touch *touch = wl_container_of(listener, touch, motion);
	idle_notify_activity(touch->server);
}

static void handle_touch_cancel(struct wl_listener *listener, void *data) {
	struct qw_idle_touch *touch = wl_container_of(listener, touch, cancel);
	idle_notify_activity(touch->server);
}

static void handle_touch_device_destroy(struct wl_listener *listener, void *data) {
	struct qw_idle_touch *touch = wl_container_of(listener, touch, destroy);
	touch_destroy(touch);
}

static void handle_new_input(struct wl_listener *listener, void *data) {
	struct qw_server *server = wl_container_of(listener, server, idle.new_input);
	struct wlr_input_device *device = data;
	if (device->type != WLR_INPUT_DEVICE_TOUCH) {
		return;
	}
	struct qw_idle_touch *touch = calloc(1, sizeof(*touch));
	if (!touch) {
		wlr_log(WLR_ERROR, "out of memory for touch device %s", device->name);
		return;
	}
	touch->server = server;
	touch->device = device;
	touch->down.notify = handle_touch_down;
	wl_signal_add(&device->touch->events.down, &touch->down);
	touch->up.notify = handle_touch_up;
	wl_signal_add(&device->touch->events.up, &touch->up);
	touch->motion.notify = handle_touch_motion;
	wl_signal_add(&device->touch->events.motion, &touch->motion);
	touch->cancel.notify = handle_touch_cancel;
	wl_signal_add(&device->touch->events.cancel, &touch->cancel);
	touch->destroy.notify = handle_touch_device_destroy;
	wl_signal_add(&device->events.destroy, &touch->destroy);
	wl_list_insert(&server->idle.touch_devices, &touch->link);
}

void idle_init(struct qw_server *server) {
	wl_list_init(&server->idle.inhibitors);
	wl_list_init(&server->idle.touch_devices);
	server->idle.new_inhibitor.notify = handle_new_idle_inhibitor;
	wl_signal_add(&server->idle.inhibit_manager->events.new_inhibitor, &server->idle.new_inhibitor);
	server->idle.new_input.notify = handle_new_input;
	wl_signal_add(&server->backend->events.new_input, &server->idle.new_input);
}

void idle_finish(struct qw_server *server) {
	if (!server->idle.new_inhibitor.notify) {
		return;
	}
	struct qw_idle_inhibitor *inhibitor, *itmp;
	wl_list_for_each_safe(inhibitor, itmp, &server->idle.inhibitors, link) {
		inhibitor_destroy(inhibitor);
	}
	struct qw_idle_touch *touch, *ttmp;
	wl_list_for_each_safe(touch, ttmp, &server->idle.touch_devices, link) {
		touch_destroy(touch);
	}
	wl_list_remove(&server->idle.new_inhibitor.link);
	wl_list_remove(&server->idle.new_input.link);
	server->idle.new_inhibitor.notify = NULL;
}
