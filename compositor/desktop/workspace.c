#include <json.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wlr/types/wlr_cursor.h>
#include <wlr/types/wlr_output.h>
#include <wlr/types/wlr_output_layout.h>
#include <wlr/types/wlr_scene.h>
#include <wlr/types/wlr_seat.h>
#include <wlr/types/wlr_surface.h>
#include <wlr/types/wlr_xdg_shell.h>
#include <wlr/util/log.h>

#include "input/cursor.h"
#include "ipc/ipc.h"
#include "ipc/ipc_commands.h"
#include "output/output.h"
#include "scheduler/scheduler.h"
#include "server.h"
#include "desktop/view.h"
#include "desktop/view_output.h"
#include "desktop/workspace.h"

/* Outputs whose shown workspace is remembered; more are told apart by none. */
#define MAX_OUTPUT_NAMES 32

struct shown_workspace {
	char name[64]; /* the output's name */
	int number;
};

struct qw_workspaces {
	struct qw_server *server;
	struct shown_workspace shown[MAX_OUTPUT_NAMES];
	size_t n_shown;
	struct wl_event_source *hidden_timer;
	struct wl_listener layout_change;
};

static struct shown_workspace *shown_entry(struct qw_workspaces *ws, const char *name, bool add) {
	for (size_t i = 0; i < ws->n_shown; i++) {
		if (strcmp(ws->shown[i].name, name) == 0) {
			return &ws->shown[i];
		}
	}
	if (!add || ws->n_shown == MAX_OUTPUT_NAMES) {
		return NULL;
	}
	struct shown_workspace *e = &ws->shown[ws->n_shown++];
	snprintf(e->name, sizeof(e->name), "%s", name);
	e->number = 1;
	return e;
}

static int shown_number(struct qw_workspaces *ws, struct qw_output *output) {
	struct shown_workspace *e = shown_entry(ws, output->wlr_output->name, false);
	return e ? e->number : 1;
}

/* The output showing most of the view, whether or not its workspace is shown. */
static struct qw_output *view_output(struct qw_view *view) {
	if (!view->mapped) {
		return NULL;
	}
	bool minimized = view->minimized;
	view->minimized = false; /* view_main_output() ignores minimized views */
	struct qw_output *output = view_main_output(view);
	view->minimized = minimized;
	return output;
}

bool workspace_view_shown(struct qw_view *view) {
	struct qw_workspaces *ws = view->server->workspaces;
	struct qw_output *output = view_output(view);
	if (!ws || !output || view->workspace == 0) {
		return true;
	}
	return shown_number(ws, output) == view->workspace;
}

/* Enable exactly the trees of mapped, unminimized views on shown workspaces. */
static void apply(struct qw_workspaces *ws) {
	struct qw_view *view;
	wl_list_for_each(view, &ws->server->views, link) {
		if (view->mapped && !view->minimized) {
			wlr_scene_node_set_enabled(&view->tree->node, workspace_view_shown(view));
		}
	}
}

static struct qw_view *focused_view(struct qw_server *server) {
	struct qw_view *view;
	wl_list_for_each(view, &server->views, link) {
		return view->mapped && view->deco.focused ? view : NULL;
	}
	return NULL;
}

/* A hidden window gives up the focus to the most recent shown one, if any. */
static void refocus(struct qw_server *server) {
	struct qw_view *focused = focused_view(server);
	if (focused && !focused->minimized && workspace_view_shown(focused)) {
		return;
	}
	struct qw_view *view;
	wl_list_for_each(view, &server->views, link) {
		if (view->mapped && !view->minimized && workspace_view_shown(view)) {
			view_focus(view);
			return;
		}
	}
	if (focused) {
		decoration_set_focused(&focused->deco, server, false);
		view_send_configure(focused);
		ipc_notify_window(server, focused, "changed");
	}
	if (!server->focused_layer) {
		wlr_seat_keyboard_notify_clear_focus(server->seat);
	}
}

static bool valid_number(int number) {
	return number >= 1 && number <= QW_WORKSPACE_COUNT;
}

static bool show(struct qw_workspaces *ws, struct qw_output *output, int number) {
	struct shown_workspace *e = shown_entry(ws, output->wlr_output->name, true);
	if (!e) {
		wlr_log(WLR_ERROR, "workspace: too many outputs to remember %s's",
				output->wlr_output->name);
		return false;
	}
	if (e->number != number) {
		e->number = number;
		wlr_log(WLR_DEBUG, "workspace: %s shows %d", output->wlr_output->name, number);
	}
	apply(ws);
	return true;
}

void workspace_switch(struct qw_server *server, struct qw_output *output, int number) {
	struct qw_workspaces *ws = server->workspaces;
	if (!ws || !output || !valid_number(number)) {
		return;
	}
	if (show(ws, output, number)) {
		refocus(server);
		cursor_rebase(server, 0);
	}
}

void workspace_move_view(struct qw_view *view, int number) {
	struct qw_server *server = view->server;
	struct qw_workspaces *ws = server->workspaces;
	if (!ws || !view->mapped || !valid_number(number) || view->workspace == number) {
		return;
	}
	view->workspace = number;
	apply(ws);
	ipc_notify_window(server, view, "changed");
	refocus(server);
	cursor_rebase(server, 0);
}

void workspace_show_view(struct qw_view *view) {
	struct qw_workspaces *ws = view->server->workspaces;
	struct qw_output *output = view_output(view);
	if (ws && output && !workspace_view_shown(view)) {
		show(ws, output, view->workspace);
	}
}

void workspace_view_mapped(struct qw_view *view) {
	struct qw_workspaces *ws = view->server->workspaces;
	struct qw_output *output = view_output(view);
	view->workspace = ws && output ? shown_number(ws, output) : 1;
}

void workspace_view_moved(struct qw_view *view) {
	struct qw_workspaces *ws = view->server->workspaces;
	if (!ws || !view->mapped || view->minimized || view->workspace == 0 ||
			!view->tree->node.state.enabled) {
		return;
	}
	struct qw_output *output = view_output(view);
	if (output && shown_number(ws, output) != view->workspace) {
		view->workspace = shown_number(ws, output);
		ipc_notify_window(view->server, view, "changed");
	}
}

struct qw_output *workspace_current_output(struct qw_server *server) {
	struct qw_view *focused = focused_view(server);
	struct qw_output *output = focused ? view_output(focused) : NULL;
	if (output || !server->cursor) {
		/* No cursor: a server checking commands without a seat (dry run). */
		return output;
	}
	return output_at(server, server->cursor->x, server->cursor->y);
}

/* Hidden windows' scene nodes are disabled, so no frame reaches them: they get
 * their callbacks here, at the hidden rate, unless their client is paused. */
static void send_frame_done(struct wlr_surface *surface, int sx, int sy, void *data) {
	wlr_surface_send_frame_done(surface, data);
}

static int hidden_rate_ms(struct qw_server *server) {
	unsigned int hz = server->config.scheduling.hidden_frame_rate;
	return hz ? (int)(1000 / hz) + 1 : 100;
}

static int handle_hidden_timer(void *data) {
	struct qw_workspaces *ws = data;
	struct qw_server *server = ws->server;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	struct qw_view *view;
	wl_list_for_each(view, &server->views, link) {
		if (!view->mapped || view->minimized || workspace_view_shown(view) ||
				view_is_paused(view)) {
			continue;
		}
		scheduler_own(server->scheduler);
		if (view->xdg_surface) {
			wlr_xdg_surface_for_each_surface(view->xdg_surface, send_frame_done, &now);
		} else if (view_surface(view)) {
			wlr_surface_for_each_surface(view_surface(view), send_frame_done, &now);
		}
	}
	wl_event_source_timer_update(ws->hidden_timer, hidden_rate_ms(server));
	return 0;
}

static void handle_layout_change(struct wl_listener *listener, void *data) {
	struct qw_workspaces *ws = wl_container_of(listener, ws, layout_change);
	apply(ws);
}

/* IPC */

static struct json_object *json_output(struct qw_workspaces *ws, struct qw_output *output) {
	struct json_object *obj = json_object_new_object();
	json_object_object_add(obj, "output", ipc_json_text(output->wlr_output->name));
	int shown = shown_number(ws, output);
	json_object_object_add(obj, "shown", json_object_new_int(shown));
	struct json_object *list = json_object_new_array();
	for (int n = 1; n <= QW_WORKSPACE_COUNT; n++) {
		struct json_object *windows = json_object_new_array();
		struct qw_view *view;
		wl_list_for_each(view, &ws->server->views, link) {
			if (view->mapped && view->workspace == n && view_output(view) == output) {
				json_object_array_add(windows, json_object_new_int64(view->id));
			}
		}
		if (n != shown && json_object_array_length(windows) == 0) {
			json_object_put(windows);
			continue;
		}
		struct json_object *w = json_object_new_object();
		json_object_object_add(w, "number", json_object_new_int(n));
		json_object_object_add(w, "shown", json_object_new_boolean(n == shown));
		json_object_object_add(w, "windows", windows);
		json_object_array_add(list, w);
	}
	json_object_object_add(obj, "workspaces", list);
	return obj;
}

static struct json_object *reply_ok(void) {
	struct json_object *obj = json_object_new_object();
	json_object_object_add(obj, "success", json_object_new_boolean(true));
	return obj;
}

static bool get_number(struct json_object *req, int *number, struct json_object **error) {
	struct json_object *v;
	if (!json_object_object_get_ex(req, "number", &v) || !json_object_is_type(v, json_type_int)) {
		*error = ipc_reply_error("missing or non-integer 'number'");
		return false;
	}
	int64_t n = json_object_get_int64(v);
	if (n < 1 || n > QW_WORKSPACE_COUNT) {
		*error = ipc_reply_error("workspace %lld out of range: 1 to %d", (long long)n,
				QW_WORKSPACE_COUNT);
		return false;
	}
	*number = (int)n;
	return true;
}

static struct qw_output *find_output(struct qw_server *server, const char *name) {
	struct qw_output *output;
	wl_list_for_each(output, &server->outputs, link) {
		if (strcmp(output->wlr_output->name, name) == 0 &&
				wlr_output_layout_get(server->output_layout, output->wlr_output)) {
			return output;
		}
	}
	return NULL;
}

static struct json_object *cmd_workspace(struct qw_server *server, struct json_object *req) {
	struct json_object *error = NULL;
	int number;
	if (!get_number(req, &number, &error)) {
		return error;
	}
	struct qw_output *output;
	struct json_object *v;
	if (json_object_object_get_ex(req, "output", &v)) {
		if (!json_object_is_type(v, json_type_string)) {
			return ipc_reply_error("'output' must be an output name");
		}
		output = find_output(server, json_object_get_string(v));
		if (!output) {
			return ipc_reply_error("no enabled output named '%.64s'", json_object_get_string(v));
		}
	} else {
		output = workspace_current_output(server);
		if (!output) {
			return ipc_reply_error("no output to show a workspace on");
		}
	}
	workspace_switch(server, output, number);
	return reply_ok();
}

static struct json_object *cmd_move(struct qw_server *server, struct json_object *req) {
	struct json_object *error = NULL;
	int number;
	struct json_object *v;
	if (!json_object_object_get_ex(req, "id", &v) || !json_object_is_type(v, json_type_int)) {
		return ipc_reply_error("missing or non-integer 'id'");
	}
	int64_t id = json_object_get_int64(v);
	struct qw_view *view = id > 0 && id <= UINT32_MAX ? view_from_id(server, (uint32_t)id) : NULL;
	if (!view || !view->mapped) {
		return ipc_reply_error("unknown window id %lld", (long long)id);
	}
	if (!get_number(req, &number, &error)) {
		return error;
	}
	workspace_move_view(view, number);
	return reply_ok();
}

struct json_object *workspace_ipc_command(struct qw_server *server, const char *command,
		struct json_object *req) {
	struct qw_workspaces *ws = server->workspaces;
	if (strcmp(command, "workspaces") == 0) {
		struct json_object *reply = reply_ok();
		struct json_object *list = json_object_new_array();
		struct qw_output *output;
		wl_list_for_each(output, &server->outputs, link) {
			if (wlr_output_layout_get(server->output_layout, output->wlr_output)) {
				json_object_array_add(list, json_output(ws, output));
			}
		}
		json_object_object_add(reply, "outputs", list);
		return reply;
	}
	if (strcmp(command, "workspace") == 0) {
		return cmd_workspace(server, req);
	}
	if (strcmp(command, "move-to-workspace") == 0) {
		return cmd_move(server, req);
	}
	return NULL;
}

bool workspace_init(struct qw_server *server) {
	struct qw_workspaces *ws = calloc(1, sizeof(*ws));
	if (!ws) {
		wlr_log(WLR_ERROR, "workspaces: out of memory");
		return false;
	}
	ws->server = server;
	ws->hidden_timer = wl_event_loop_add_timer(server->event_loop, handle_hidden_timer, ws);
	if (!ws->hidden_timer) {
		wlr_log(WLR_ERROR, "workspaces: cannot create the hidden-window frame timer");
		free(ws);
		return false;
	}
	wl_event_source_timer_update(ws->hidden_timer, hidden_rate_ms(server));
	ws->layout_change.notify = handle_layout_change;
	wl_signal_add(&server->output_layout->events.change, &ws->layout_change);
	server->workspaces = ws;
	return true;
}

void workspace_finish(struct qw_server *server) {
	struct qw_workspaces *ws = server->workspaces;
	if (!ws) {
		return;
	}
	wl_event_source_remove(ws->hidden_timer);
	wl_list_remove(&ws->layout_change.link);
	server->workspaces = NULL;
	free(ws);
}
