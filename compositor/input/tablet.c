#include <stdlib.h>
#include <wlr/types/wlr_cursor.h>
#include <wlr/types/wlr_input_device.h>
#include <wlr/types/wlr_tablet_tool.h>
#include <wlr/types/wlr_tablet_v2.h>
#include <wlr/util/log.h>

#include "desktop/idle.h"
#include "scheduler/scheduler.h"
#include "server.h"
#include "input/tablet.h"
#include "desktop/view.h"

struct qw_tablets {
	struct qw_server *server;
	struct wlr_tablet_manager_v2 *manager;
	struct wl_list tablets; /* tablet.link */
	struct wl_list tools; /* tablet_tool.link */
};

/* A tablet device; wlroots destroys its v2 tablet with the device. */
struct tablet {
	struct wl_list link;
	struct qw_tablets *tablets;
	struct wlr_input_device *device;
	struct wlr_tablet_v2_tablet *v2; /* NULL for a pad */
	struct wl_listener axis;
	struct wl_listener proximity;
	struct wl_listener tip;
	struct wl_listener destroy;
};

/* A physical tool (pen, eraser), found through wlr_tablet_tool.data. */
struct tablet_tool {
	struct wl_list link;
	struct wlr_tablet_tool *wlr_tool;
	struct wlr_tablet_v2_tablet_tool *v2;
	struct wl_listener destroy;
};

static void tool_free(struct tablet_tool *tool) {
	tool->wlr_tool->data = NULL;
	wl_list_remove(&tool->destroy.link);
	wl_list_remove(&tool->link);
	free(tool);
}

static void handle_tool_destroy(struct wl_listener *listener, void *data) {
	struct tablet_tool *tool = wl_container_of(listener, tool, destroy);
	tool_free(tool);
}

static struct tablet_tool *tool_get(struct qw_tablets *tablets, struct wlr_tablet_tool *wlr_tool) {
	if (wlr_tool->data) {
		return wlr_tool->data;
	}
	struct tablet_tool *tool = calloc(1, sizeof(*tool));
	if (!tool) {
		wlr_log(WLR_ERROR, "out of memory for a tablet tool");
		return NULL;
	}
	tool->v2 = wlr_tablet_tool_create(tablets->manager, tablets->server->seat, wlr_tool);
	if (!tool->v2) {
		wlr_log(WLR_ERROR, "failed to create a tablet v2 tool");
		free(tool);
		return NULL;
	}
	tool->wlr_tool = wlr_tool;
	tool->destroy.notify = handle_tool_destroy;
	wl_signal_add(&wlr_tool->events.destroy, &tool->destroy);
	wl_list_insert(&tablets->tools, &tool->link);
	wlr_tool->data = tool;
	return tool;
}

/*
 * Give the tool to the surface under (x, y), entering proximity there if
 * it is another surface than before, leaving proximity where there is no
 * surface that can take it.
 */
static void tool_move(struct tablet *tablet, struct tablet_tool *tool, uint32_t time, double x,
		double y) {
	struct qw_server *server = tablet->tablets->server;
	double lx, ly, sx = 0, sy = 0;
	wlr_cursor_absolute_to_layout_coords(server->cursor, tablet->device, x, y, &lx, &ly);
	struct wlr_surface *surface = NULL;
	struct qw_node_desc *desc = NULL;
	struct qw_view *view = view_at(server, lx, ly, &surface, &sx, &sy, &desc);
	if (surface && (view && view_is_paused(view))) {
		surface = NULL;
	}
	if (surface && !wlr_surface_accepts_tablet_v2(tablet->v2, surface)) {
		surface = NULL;
	}
	if (!surface) {
		if (tool->v2->focused_surface) {
			wlr_tablet_v2_tablet_tool_notify_proximity_out(tool->v2);
		}
		return;
	}
	if (tool->v2->focused_surface != surface) {
		wlr_tablet_v2_tablet_tool_notify_proximity_in(tool->v2, tablet->v2, surface);
	}
	wlr_tablet_v2_tablet_tool_notify_motion(tool->v2, sx, sy);
}

static void handle_proximity(struct wl_listener *listener, void *data) {
	struct tablet *tablet = wl_container_of(listener, tablet, proximity);
	struct wlr_event_tablet_tool_proximity *event = data;
	scheduler_own(tablet->tablets->server->scheduler);
	idle_notify_activity(tablet->tablets->server);
	struct tablet_tool *tool = tool_get(tablet->tablets, event->tool);
	if (!tool) {
		return;
	}
	if (event->state == WLR_TABLET_TOOL_PROXIMITY_OUT) {
		if (tool->v2->focused_surface) {
			wlr_tablet_v2_tablet_tool_notify_proximity_out(tool->v2);
		}
		return;
	}
	tool_move(tablet, tool, event->time_msec, event->x, event->y);
}

static void handle_axis(struct wl_listener *listener, void *data) {
	struct tablet *tablet = wl_container_of(listener, tablet, axis);
	struct wlr_event_tablet_tool_axis *event = data;
	scheduler_own(tablet->tablets->server->scheduler);
	idle_notify_activity(tablet->tablets->server);
	struct tablet_tool *tool = tool_get(tablet->tablets, event->tool);
	if (!tool) {
		return;
	}
	if (event->updated_axes & (WLR_TABLET_TOOL_AXIS_X | WLR_TABLET_TOOL_AXIS_Y)) {
		tool_move(tablet, tool, event->time_msec, event->x, event->y);
	}
	if (tool->v2->focused_surface && (event->updated_axes & WLR_TABLET_TOOL_AXIS_PRESSURE)) {
		wlr_tablet_v2_tablet_tool_notify_pressure(tool->v2, event->pressure);
	}
}

static void handle_tip(struct wl_listener *listener, void *data) {
	struct tablet *tablet = wl_container_of(listener, tablet, tip);
	struct wlr_event_tablet_tool_tip *event = data;
	scheduler_own(tablet->tablets->server->scheduler);
	idle_notify_activity(tablet->tablets->server);
	struct tablet_tool *tool = tool_get(tablet->tablets, event->tool);
	if (!tool || !tool->v2->focused_surface) {
		return;
	}
	if (event->state == WLR_TABLET_TOOL_TIP_DOWN) {
		wlr_tablet_v2_tablet_tool_notify_down(tool->v2);
	} else {
		wlr_tablet_v2_tablet_tool_notify_up(tool->v2);
	}
}

static void tablet_free(struct tablet *tablet) {
	if (tablet->v2) {
		wl_list_remove(&tablet->axis.link);
		wl_list_remove(&tablet->proximity.link);
		wl_list_remove(&tablet->tip.link);
	}
	wl_list_remove(&tablet->destroy.link);
	wl_list_remove(&tablet->link);
	free(tablet);
}

static void handle_destroy(struct wl_listener *listener, void *data) {
	struct tablet *tablet = wl_container_of(listener, tablet, destroy);
	tablet_free(tablet);
}

void tablet_add_device(struct qw_server *server, struct wlr_input_device *device) {
	struct qw_tablets *tablets = server->tablets;
	struct tablet *tablet = calloc(1, sizeof(*tablet));
	if (!tablet) {
		wlr_log(WLR_ERROR, "out of memory for tablet %s", device->name);
		return;
	}
	tablet->tablets = tablets;
	tablet->device = device;
	if (device->type == WLR_INPUT_DEVICE_TABLET_PAD) {
		/* Pads are announced to clients; their buttons, rings and
		 * strips are not forwarded. */
		if (!wlr_tablet_pad_create(tablets->manager, server->seat, device)) {
			wlr_log(WLR_ERROR, "failed to create a tablet v2 pad for %s", device->name);
			free(tablet);
			return;
		}
	} else {
		tablet->v2 = wlr_tablet_create(tablets->manager, server->seat, device);
		if (!tablet->v2) {
			wlr_log(WLR_ERROR, "failed to create a tablet v2 tablet for %s", device->name);
			free(tablet);
			return;
		}
		tablet->axis.notify = handle_axis;
		wl_signal_add(&device->tablet->events.axis, &tablet->axis);
		tablet->proximity.notify = handle_proximity;
		wl_signal_add(&device->tablet->events.proximity, &tablet->proximity);
		tablet->tip.notify = handle_tip;
		wl_signal_add(&device->tablet->events.tip, &tablet->tip);
	}
	tablet->destroy.notify = handle_destroy;
	wl_signal_add(&device->events.destroy, &tablet->destroy);
	wl_list_insert(&tablets->tablets, &tablet->link);
}

bool tablet_init(struct qw_server *server) {
	struct qw_tablets *tablets = calloc(1, sizeof(*tablets));
	if (!tablets) {
		wlr_log(WLR_ERROR, "out of memory for tablets");
		return false;
	}
	tablets->server = server;
	wl_list_init(&tablets->tablets);
	wl_list_init(&tablets->tools);
	tablets->manager = wlr_tablet_v2_create(server->wl_display);
	if (!tablets->manager) {
		wlr_log(WLR_ERROR, "failed to create the zwp_tablet_manager_v2 global");
		free(tablets);
		return false;
	}
	server->tablets = tablets;
	return true;
}

void tablet_finish(struct qw_server *server) {
	struct qw_tablets *tablets = server->tablets;
	if (!tablets) {
		return;
	}
	struct tablet *tablet, *tmp;
	wl_list_for_each_safe(tablet, tmp, &tablets->tablets, link) {
		tablet_free(tablet);
	}
	struct tablet_tool *tool, *ttmp;
	wl_list_for_each_safe(tool, ttmp, &tablets->tools, link) {
		tool_free(tool);
	}
	free(tablets);
	server->tablets = NULL;
}
