#include <stdio.h>
#include <wlr/types/wlr_foreign_toplevel_management_v1.h>
#include <wlr/types/wlr_output.h>
#include <wlr/types/wlr_xdg_shell.h>
#include <wlr/util/log.h>

#include "desktop/foreign_toplevel.h"
#include "output/output.h"
#include "server.h"
#include "desktop/view.h"

bool foreign_toplevel_init(struct qw_server *server) {
	server->foreign_toplevel_manager = wlr_foreign_toplevel_manager_v1_create(server->wl_display);
	return server->foreign_toplevel_manager != NULL;
}

static void handle_request_activate(struct wl_listener *listener, void *data) {
	struct qw_view *view = wl_container_of(listener, view, ftl_request_activate);
	/* Focusing restores a minimized window. */
	view_focus(view);
}

static void handle_request_maximize(struct wl_listener *listener, void *data) {
	struct qw_view *view = wl_container_of(listener, view, ftl_request_maximize);
	struct wlr_foreign_toplevel_handle_v1_maximized_event *event = data;
	view_set_maximized(view, event->maximized);
	foreign_toplevel_update_state(view);
}

static void handle_request_minimize(struct wl_listener *listener, void *data) {
	struct qw_view *view = wl_container_of(listener, view, ftl_request_minimize);
	struct wlr_foreign_toplevel_handle_v1_minimized_event *event = data;
	if (event->minimized) {
		view_set_minimized(view, true);
	} else {
		view_focus(view);
	}
}

static void handle_request_fullscreen(struct wl_listener *listener, void *data) {
	struct qw_view *view = wl_container_of(listener, view, ftl_request_fullscreen);
	struct wlr_foreign_toplevel_handle_v1_fullscreen_event *event = data;
	view_set_fullscreen(view, event->fullscreen);
	foreign_toplevel_update_state(view);
}

static void handle_request_close(struct wl_listener *listener, void *data) {
	struct qw_view *view = wl_container_of(listener, view, ftl_request_close);
	view_close(view);
}

void foreign_toplevel_map(struct qw_view *view) {
	struct qw_server *server = view->server;
	if (!server->foreign_toplevel_manager || view->ftl) {
		return;
	}
	view->ftl = wlr_foreign_toplevel_handle_v1_create(server->foreign_toplevel_manager);
	if (!view->ftl) {
		wlr_log(WLR_ERROR, "cannot announce window %u to taskbars", view->id);
		return;
	}
	view->ftl_request_activate.notify = handle_request_activate;
	wl_signal_add(&view->ftl->events.request_activate, &view->ftl_request_activate);
	view->ftl_request_maximize.notify = handle_request_maximize;
	wl_signal_add(&view->ftl->events.request_maximize, &view->ftl_request_maximize);
	view->ftl_request_minimize.notify = handle_request_minimize;
	wl_signal_add(&view->ftl->events.request_minimize, &view->ftl_request_minimize);
	view->ftl_request_fullscreen.notify = handle_request_fullscreen;
	wl_signal_add(&view->ftl->events.request_fullscreen, &view->ftl_request_fullscreen);
	view->ftl_request_close.notify = handle_request_close;
	wl_signal_add(&view->ftl->events.request_close, &view->ftl_request_close);
	foreign_toplevel_update_title(view);
	foreign_toplevel_update_app_id(view);
	foreign_toplevel_update_state(view);
}

void foreign_toplevel_unmap(struct qw_view *view) {
	if (!view->ftl) {
		return;
	}
	wl_list_remove(&view->ftl_request_activate.link);
	wl_list_remove(&view->ftl_request_maximize.link);
	wl_list_remove(&view->ftl_request_minimize.link);
	wl_list_remove(&view->ftl_request_fullscreen.link);
	wl_list_remove(&view->ftl_request_close.link);
	wlr_foreign_toplevel_handle_v1_destroy(view->ftl);
	view->ftl = NULL;
}

void foreign_toplevel_update_title(struct qw_view *view) {
	if (!view->ftl) {
		return;
	}
	const char *title = view_title(view);
	if (!view->server->config.taskbar_class) {
		wlr_foreign_toplevel_handle_v1_set_title(view->ftl, title);
		return;
	}
	char text[1024];
	snprintf(text, sizeof(text), "[%s] %s", qos_class_name(view->class), title);
	wlr_foreign_toplevel_handle_v1_set_title(view->ftl, text);
}

void foreign_toplevel_update_app_id(struct qw_view *view) {
	if (view->ftl) {
		const char *app_id = view_app_id(view);
		wlr_foreign_toplevel_handle_v1_set_app_id(view->ftl, app_id ? app_id : "");
	}
}

/*
 * Taskbars that list only their own output's windows need outputs. The
 * handle's list is the record: wlroots drops an entry when its output goes.
 */
static void update_output(struct qw_view *view) {
	struct qw_output *output =
			output_at(view->server, view->x + view->width / 2.0, view->y + view->height / 2.0);
	struct wlr_output *wanted = output ? output->wlr_output : NULL;
	bool entered = false;
	struct wlr_foreign_toplevel_handle_v1_output *entry, *tmp;
	wl_list_for_each_safe(entry, tmp, &view->ftl->outputs, link) {
		if (entry->output == wanted) {
			entered = true;
		} else {
			wlr_foreign_toplevel_handle_v1_output_leave(view->ftl, entry->output);
		}
	}
	if (wanted && !entered) {
		wlr_foreign_toplevel_handle_v1_output_enter(view->ftl, wanted);
	}
}

void foreign_toplevel_update_state(struct qw_view *view) {
	if (!view->ftl) {
		return;
	}
	wlr_foreign_toplevel_handle_v1_set_activated(view->ftl, view->deco.focused);
	wlr_foreign_toplevel_handle_v1_set_maximized(view->ftl, view->maximized);
	wlr_foreign_toplevel_handle_v1_set_minimized(view->ftl, view->minimized);
	wlr_foreign_toplevel_handle_v1_set_fullscreen(view->ftl, view->fullscreen);
	update_output(view);
}
