/*
 * The IPC's requests and the JSON they are answered with (docs/ipc.md);
 * ipc.c carries them over the socket.
 */
#include <errno.h>
#include <glib.h>
#include <json.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wlr/types/wlr_output.h>
#include <wlr/types/wlr_output_layout.h>
#include <wlr/types/wlr_scene.h>
#include <wlr/types/wlr_xdg_shell.h>

#include "qos_bridge/client_identity.h"
#include "input/input_devices.h"
#include "input/input_emit.h"
#include "ipc/ipc_commands.h"
#include "output/output.h"
#include "output/output_apply.h"
#include "config/output_config.h"
#include "output/output_headless.h"
#include "qos/proc.h"
#include "qos/qos.h"
#include "qos_bridge/qos_gate.h"
#include "qos_bridge/qos_link.h"
#include "scheduler/scheduler.h"
#include "desktop/view.h"
#include "desktop/workspace.h"
#include "desktop/view_output.h"

static struct json_object *box_json(struct wlr_box box) {
	struct json_object *obj = json_object_new_object();
	json_object_object_add(obj, "x", json_object_new_int(box.x));
	json_object_object_add(obj, "y", json_object_new_int(box.y));
	json_object_object_add(obj, "width", json_object_new_int(box.width));
	json_object_object_add(obj, "height", json_object_new_int(box.height));
	return obj;
}

/*
 * A JSON string that is valid UTF-8 whatever s holds: titles and app ids
 * come from clients unchecked, qosrc diagnostics quote files, and "%.64s"
 * may cut a character in two.  json-c passes bytes through as they are, and
 * a reply that is not UTF-8 is not JSON to most readers.
 */
struct json_object *ipc_json_text(const char *s) {
	if (!s) {
		return NULL;
	}
	if (g_utf8_validate(s, -1, NULL)) {
		return json_object_new_string(s);
	}
	char *valid = g_utf8_make_valid(s, -1);
	struct json_object *obj = json_object_new_string(valid);
	g_free(valid);
	return obj;
}

struct json_object *ipc_json_window(struct qw_view *view) {
	struct json_object *obj = json_object_new_object();
	json_object_object_add(obj, "id", json_object_new_int64(view->id));
	json_object_object_add(obj, "app_id", ipc_json_text(view_app_id(view)));
	json_object_object_add(obj, "title", ipc_json_text(view_title(view)));
	json_object_object_add(obj, "pid", json_object_new_int(view_get_pid(view)));
	json_object_object_add(obj, "class", json_object_new_string(qos_class_name(view->class)));
	json_object_object_add(obj, "held_back", json_object_new_boolean(view->held_back));
	const char *reserve = NULL;
	qos_link_class_of(view->server, view_get_pid(view), &reserve);
	json_object_object_add(obj, "reserve", ipc_json_text(reserve));
	struct client_identity *id = view_identity(view);
	json_object_object_add(obj, "cpu_percent", json_object_new_double(id ? id->cpu_percent : 0.0));
	double server_percent = 0.0;
	struct wl_client *client = view_client(view);
	uint64_t server_us = client
			? scheduler_client_server_us(view->server->scheduler, client, &server_percent)
			: 0;
	json_object_object_add(obj, "server_cpu_us", json_object_new_int64((int64_t)server_us));
	json_object_object_add(obj, "server_cpu_percent", json_object_new_double(server_percent));
	json_object_object_add(obj, "focused", json_object_new_boolean(view->deco.focused));
	json_object_object_add(obj, "maximized", json_object_new_boolean(view->maximized));
	json_object_object_add(obj, "fullscreen", json_object_new_boolean(view->fullscreen));
	json_object_object_add(obj, "minimized", json_object_new_boolean(view->minimized));
	json_object_object_add(obj, "urgent", json_object_new_boolean(view->deco.urgent));
	json_object_object_add(obj, "workspace", json_object_new_int(view->workspace));
	json_object_object_add(obj, "inactive", json_object_new_boolean(view->inactive));
	json_object_object_add(obj, "inactive_since",
			view->inactive ? json_object_new_int64(view->inactive_since) : NULL);
	struct qw_output *output = view_main_output(view);
	json_object_object_add(obj, "output",
			output ? json_object_new_string(output->wlr_output->name) : NULL);
	json_object_object_add(obj, "geometry",
			box_json((struct wlr_box){ view->x, view->y, view->width, view->height }));
	json_object_object_add(obj, "frame", box_json(view_frame_box(view)));
	json_object_object_add(obj, "titlebar", box_json(view_titlebar_box(view)));
	struct json_object *buttons = json_object_new_object();
	for (int k = 0; k < QW_BUTTON_KIND_COUNT; k++) {
		struct wlr_box box;
		if (view_button_box(view, k, &box)) {
			json_object_object_add(buttons, config_button_name(k), box_json(box));
		}
	}
	json_object_object_add(obj, "buttons", buttons);
	return obj;
}

static struct json_object *reply_ok(void) {
	struct json_object *obj = json_object_new_object();
	json_object_object_add(obj, "success", json_object_new_boolean(true));
	return obj;
}

struct json_object *ipc_reply_error(const char *fmt, ...) {
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	struct json_object *obj = json_object_new_object();
	json_object_object_add(obj, "success", json_object_new_boolean(false));
	json_object_object_add(obj, "error", ipc_json_text(msg));
	return obj;
}

/*
 * One request on its way to its command's handler (ipc_commands below).
 * A handler answers with its reply; subscribe and terminate ask the caller
 * to act once the reply is queued.
 */
struct ipc_call {
	struct qw_server *server;
	pid_t peer_pid; /* -1 when unknown */
	const char *command;
	struct json_object *req;
	bool subscribe, terminate;
};

static void add_windows_of(struct json_object *list, struct wlr_scene_tree *tree) {
	struct wlr_scene_node *node;
	wl_list_for_each(node, &tree->node.state.children, state.link) {
		struct qw_node_desc *desc = node->data;
		if (desc && desc->magic == QW_NODE_DESC_MAGIC && desc->view && desc->view->mapped) {
			json_object_array_add(list, ipc_json_window(desc->view));
		}
	}
}

static struct json_object *cmd_windows(struct ipc_call *call) {
	struct qw_server *server = call->server;
	struct json_object *reply = reply_ok();
	struct json_object *list = json_object_new_array();
	/* Stacking order, bottom first, as the scene draws them. */
	add_windows_of(list, server->trees.views);
	add_windows_of(list, server->trees.fullscreen);
	json_object_object_add(reply, "windows", list);
	return reply;
}

static struct json_object *cmd_outputs(struct ipc_call *call) {
	struct qw_server *server = call->server;
	struct json_object *reply = reply_ok();
	struct json_object *list = json_object_new_array();
	struct qw_output *output;
	wl_list_for_each(output, &server->outputs, link) {
		struct wlr_output *o = output->wlr_output;
		struct wlr_box box = output_layout_box(output);
		struct json_object *obj = json_object_new_object();
		json_object_object_add(obj, "name", ipc_json_text(o->name));
		json_object_object_add(obj, "make", ipc_json_text(o->make));
		json_object_object_add(obj, "model", ipc_json_text(o->model));
		json_object_object_add(obj, "width", json_object_new_int(o->width));
		json_object_object_add(obj, "height", json_object_new_int(o->height));
		json_object_object_add(obj, "refresh_mhz", json_object_new_int(o->refresh));
		json_object_object_add(obj, "x", json_object_new_int(box.x));
		json_object_object_add(obj, "y", json_object_new_int(box.y));
		json_object_object_add(obj, "scale", json_object_new_double(o->scale));
		json_object_object_add(obj, "transform",
				json_object_new_string(output_transform_name(o->transform)));
		/* The size windows see: the mode turned and divided by the scale. */
		json_object_object_add(obj, "logical_width", json_object_new_int(box.width));
		json_object_object_add(obj, "logical_height", json_object_new_int(box.height));
		json_object_object_add(obj, "enabled", json_object_new_boolean(o->enabled));
		json_object_array_add(list, obj);
	}
	json_object_object_add(reply, "outputs", list);
	return reply;
}

/* {"command": "output-add", "width": W, "height": H}: a headless output. */
static struct json_object *cmd_output_add(struct ipc_call *call) {
	char err[256], name[64];
	struct json_object *w_obj, *h_obj;
	if (!json_object_object_get_ex(call->req, "width", &w_obj) ||
			!json_object_object_get_ex(call->req, "height", &h_obj) ||
			!json_object_is_type(w_obj, json_type_int) ||
			!json_object_is_type(h_obj, json_type_int)) {
		return ipc_reply_error("output-add wants integer 'width' and 'height'");
	}
	int64_t w = json_object_get_int64(w_obj), h = json_object_get_int64(h_obj);
	if (w > 16384 || h > 16384 || w < 0 || h < 0) {
		return ipc_reply_error("output size wants 64 to 16384 pixels each way");
	}
	if (!output_headless_add(call->server, (int)w, (int)h, name, sizeof(name), err, sizeof(err))) {
		return ipc_reply_error("%s", err);
	}
	struct json_object *reply = reply_ok();
	json_object_object_add(reply, "name", ipc_json_text(name));
	return reply;
}

/* {"command": "output-remove", "name": NAME}: headless outputs only. */
static struct json_object *cmd_output_remove(struct ipc_call *call) {
	char err[256];
	struct json_object *arg;
	if (!json_object_object_get_ex(call->req, "name", &arg) ||
			!json_object_is_type(arg, json_type_string)) {
		return ipc_reply_error("output-remove wants a string 'name'");
	}
	if (!output_headless_remove(call->server, json_object_get_string(arg), err, sizeof(err))) {
		return ipc_reply_error("%s", err);
	}
	return reply_ok();
}

static struct qw_view *lookup_view(struct qw_server *server, struct json_object *req,
		struct json_object **error) {
	struct json_object *id_obj;
	if (!json_object_object_get_ex(req, "id", &id_obj) ||
			!json_object_is_type(id_obj, json_type_int)) {
		*error = ipc_reply_error("missing or non-integer 'id'");
		return NULL;
	}
	int64_t id = json_object_get_int64(id_obj);
	struct qw_view *view = id > 0 && id <= UINT32_MAX ? view_from_id(server, (uint32_t)id) : NULL;
	if (!view || !view->mapped) {
		*error = ipc_reply_error("unknown window id %lld", (long long)id);
		return NULL;
	}
	return view;
}

static const char *get_string(struct json_object *req, const char *key) {
	struct json_object *v;
	if (!json_object_object_get_ex(req, key, &v) || !json_object_is_type(v, json_type_string)) {
		return NULL;
	}
	return json_object_get_string(v);
}

/*
 * "ID" (a window), "pid:N" or "tid:N" (one thread, in *tid; 0 for the
 * others) -> a live pid, or an error reply.
 */
static pid_t resolve_target(struct qw_server *server, struct json_object *req, pid_t *tid,
		struct json_object **error) {
	*tid = 0;
	const char *target = get_string(req, "target");
	if (!target) {
		*error = ipc_reply_error("missing string 'target' (a window id, pid:N or tid:N)");
		return -1;
	}
	char *end;
	if (strncmp(target, "tid:", 4) == 0) {
		long t = strtol(target + 4, &end, 10);
		if (*end || end == target + 4 || t <= 0 || t > INT32_MAX) {
			*error = ipc_reply_error("bad target '%.64s': want tid:N", target);
			return -1;
		}
		pid_t pid = qos_proc_tgid((pid_t)t);
		if (pid <= 0) {
			*error = ipc_reply_error("no thread %ld", t);
			return -1;
		}
		*tid = (pid_t)t;
		return pid;
	}
	if (strncmp(target, "pid:", 4) == 0) {
		long pid = strtol(target + 4, &end, 10);
		if (*end || end == target + 4 || pid <= 0 || pid > INT32_MAX) {
			*error = ipc_reply_error("bad target '%.64s': want pid:N", target);
			return -1;
		}
		if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
			*error = ipc_reply_error("no process %ld", pid);
			return -1;
		}
		return (pid_t)pid;
	}
	long id = strtol(target, &end, 10);
	struct qw_view *view = *end || end == target || id <= 0 || id > UINT32_MAX
			? NULL
			: view_from_id(server, (uint32_t)id);
	if (!view || !view->mapped) {
		*error = ipc_reply_error("unknown window '%.64s'", target);
		return -1;
	}
	pid_t pid = view_get_pid(view);
	if (pid <= 0) {
		*error = ipc_reply_error("the process of window %ld is gone", id);
		return -1;
	}
	return pid;
}

static struct json_object *cmd_set(struct ipc_call *call) {
	struct qw_server *server = call->server;
	struct json_object *req = call->req;
	struct json_object *error = NULL;
	pid_t tid;
	pid_t pid = resolve_target(server, req, &tid, &error);
	if (pid < 0) {
		return error;
	}
	const char *name = get_string(req, "class");
	enum qw_class class;
	if (!name || !qos_class_from_name(name, &class)) {
		return ipc_reply_error("bad class '%.32s': want realtime, fifo, idle, nice, paused "
							   "or normal",
				name ? name : "");
	}
	char err[256];
	struct qos_gate_asker asker = { .who = QOS_GATE_USER, .pid = call->peer_pid };
	if (tid && class != QW_CLASS_NORMAL) {
		return ipc_reply_error("a thread takes a class by joining a reserve (join tid:N "
							   "RESERVE); set tid:N normal takes it out");
	}
	if (tid) {
		if (!qos_gate_leave_thread(server, &asker, pid, tid, err, sizeof(err))) {
			return ipc_reply_error("%s", err);
		}
		struct json_object *reply = reply_ok();
		json_object_object_add(reply, "pid", json_object_new_int(pid));
		json_object_object_add(reply, "tid", json_object_new_int(tid));
		return reply;
	}
	if (!qos_gate_set_class(server, &asker, pid, class, err, sizeof(err))) {
		return ipc_reply_error("%s", err);
	}
	struct json_object *reply = reply_ok();
	json_object_object_add(reply, "pid", json_object_new_int(pid));
	json_object_object_add(reply, "class",
			json_object_new_string(qos_class_name(qos_link_class_of(server, pid, NULL))));
	return reply;
}

static struct json_object *cmd_join(struct ipc_call *call) {
	struct qw_server *server = call->server;
	struct json_object *req = call->req;
	struct json_object *error = NULL;
	pid_t tid;
	pid_t pid = resolve_target(server, req, &tid, &error);
	if (pid < 0) {
		return error;
	}
	const char *reserve = get_string(req, "reserve");
	char err[256];
	if (!reserve || !qos_name_valid(reserve, err, sizeof(err))) {
		return ipc_reply_error("bad reserve name: %s", reserve ? err : "missing 'reserve'");
	}
	struct qos_gate_asker asker = { .who = QOS_GATE_USER, .pid = call->peer_pid };
	if (!qos_gate_join(server, &asker, reserve, pid, tid, NULL, NULL, err, sizeof(err))) {
		return ipc_reply_error("%s", err);
	}
	return reply_ok();
}

struct diag_buf {
	char text[256];
};

static void keep_first_diag(void *data, const char *message) {
	struct diag_buf *buf = data;
	if (!buf->text[0]) {
		snprintf(buf->text, sizeof(buf->text), "%s", message);
	}
}

static struct json_object *cmd_reserve(struct ipc_call *call) {
	struct qw_server *server = call->server;
	struct json_object *req = call->req;
	const char *name = get_string(req, "name");
	const char *params = get_string(req, "params");
	char err[256];
	if (!name || !qos_name_valid(name, err, sizeof(err))) {
		return ipc_reply_error("bad reserve name: %s", name ? err : "missing 'name'");
	}
	/* The same key=value grammar as qosrc, parsed by the same code; the name
	 * (checked above, and it may hold spaces) is not part of the line. */
	char *line = NULL;
	if (asprintf(&line, "reserve x %s", params ? params : "") < 0) {
		return ipc_reply_error("out of memory");
	}
	struct qos_rules *parsed = qos_rules_create();
	struct diag_buf diag = { 0 };
	int bad = parsed ? qos_rules_parse_string(parsed, "request", line, keep_first_diag, &diag) : -1;
	free(line);
	struct json_object *reply;
	struct qos_gate_asker asker = { .who = QOS_GATE_USER, .pid = call->peer_pid };
	if (bad != 0 || parsed->n_reserves != 1) {
		reply = ipc_reply_error("bad parameters: %s", diag.text[0] ? diag.text : "unparsable");
	} else if (!qos_gate_define(server, &asker, name, &parsed->reserves[0].params, NULL, err,
					   sizeof(err))) {
		reply = ipc_reply_error("%s", err);
	} else {
		reply = reply_ok();
	}
	qos_rules_destroy(parsed);
	return reply;
}

/* Adaptation, vblank periods and idle release: what changes a reserve's
 * parameters or capacity without anyone asking. */
static void add_adapt_fields(struct json_object *obj, const struct qos_reserve_info *info) {
	const struct qos_adapt_params *a = &info->params.adapt;
	struct json_object *adapt = NULL;
	if (a->auto_slice || a->continuous) {
		adapt = json_object_new_object();
		json_object_object_add(adapt, "auto", json_object_new_boolean(a->auto_slice));
		json_object_object_add(adapt, "continuous", json_object_new_boolean(a->continuous));
		json_object_object_add(adapt, "min_ppm", json_object_new_int64((int64_t)a->min_ppm));
		json_object_object_add(adapt, "max_ppm", json_object_new_int64((int64_t)a->max_ppm));
	}
	json_object_object_add(obj, "adapt", adapt);
	json_object_object_add(obj, "adapt_slice_us", json_object_new_int64(info->adapt_slice_us));
	json_object_object_add(obj, "period_vblank",
			json_object_new_boolean(info->params.period_vblank));
	json_object_object_add(obj, "idle_periods", json_object_new_int64(info->params.idle_periods));
	json_object_object_add(obj, "released", json_object_new_boolean(info->released));
	json_object_object_add(obj, "return_refused", json_object_new_boolean(info->return_refused));
}

/* A qos slice divided among the members' threads by use: each one's share. */
static struct json_object *threads_of(struct qos_manager *qos, const char *name) {
	struct qos_thread_info threads[128];
	ssize_t count = qos_manager_reserve_threads(qos, name, threads, 128);
	struct json_object *list = json_object_new_array();
	for (ssize_t i = 0; i < count && i < 128; i++) {
		struct json_object *t = json_object_new_object();
		json_object_object_add(t, "pid", json_object_new_int(threads[i].pid));
		json_object_object_add(t, "tid", json_object_new_int(threads[i].tid));
		json_object_object_add(t, "runtime_ns",
				json_object_new_int64((int64_t)threads[i].runtime_ns));
		json_object_object_add(t, "use_ns", json_object_new_int64((int64_t)threads[i].used_ns));
		json_object_object_add(t, "parked", json_object_new_boolean(threads[i].parked));
		json_object_object_add(t, "throttled", json_object_new_boolean(threads[i].throttled));
		json_object_object_add(t, "ran_on", json_object_new_int64((int64_t)threads[i].ran_on));
		json_object_array_add(list, t);
	}
	return list;
}

static struct json_object *cmd_reserves(struct ipc_call *call) {
	struct qw_server *server = call->server;
	struct qos_manager *qos = qos_link_manager(server);
	char err[256];
	if (!qos_link_ready(server, err, sizeof(err))) {
		return ipc_reply_error("%s", err);
	}
	struct json_object *reply = reply_ok();
	struct json_object *list = json_object_new_array();
	size_t n = qos_manager_reserve_count(qos);
	for (size_t i = 0; i < n; i++) {
		struct qos_reserve_info info;
		if (!qos_manager_reserve_at(qos, i, &info)) {
			continue;
		}
		char params[256];
		qos_params_format(&info.params, params, sizeof(params));
		struct json_object *obj = json_object_new_object();
		json_object_object_add(obj, "name", ipc_json_text(info.name));
		json_object_object_add(obj, "params", ipc_json_text(params));
		json_object_object_add(obj, "policy",
				json_object_new_string(qos_policy_name(info.params.policy)));
		json_object_object_add(obj, "period_us", json_object_new_int64(info.params.period_us));
		json_object_object_add(obj, "slice_us", json_object_new_int64(info.params.slice_us));
		json_object_object_add(obj, "fallback",
				qos_params_has_limit(&info.params)
						? json_object_new_string(qos_policy_name(info.params.fallback))
						: NULL);
		json_object_object_add(obj, "granted", json_object_new_boolean(info.granted));
		json_object_object_add(obj, "automatic", json_object_new_boolean(info.is_auto));
		json_object_object_add(obj, "in_fallback", json_object_new_boolean(info.in_fallback));
		json_object_object_add(obj, "used_us", json_object_new_int64(info.used_us));
		json_object_object_add(obj, "billed_us", json_object_new_int64(info.billed_us));
		json_object_object_add(obj, "last_used_us", json_object_new_int64(info.last_used_us));
		json_object_object_add(obj, "last_billed_us", json_object_new_int64(info.last_billed_us));
		json_object_object_add(obj, "periods", json_object_new_int64(info.periods));
		json_object_object_add(obj, "overruns", json_object_new_int64(info.overruns));
		add_adapt_fields(obj, &info);
		struct qos_member_info members[64];
		ssize_t count = qos_manager_members(qos, info.name, members, 64);
		struct json_object *mlist = json_object_new_array();
		for (ssize_t m = 0; m < count && m < 64; m++) {
			struct json_object *mo = json_object_new_object();
			json_object_object_add(mo, "pid", json_object_new_int(members[m].pid));
			json_object_object_add(mo, "tid", json_object_new_int(members[m].tid));
			json_object_array_add(mlist, mo);
		}
		json_object_object_add(obj, "members", mlist);
		json_object_object_add(obj, "threads", threads_of(qos, info.name));
		json_object_array_add(list, obj);
	}
	json_object_object_add(reply, "reserves", list);
	return reply;
}

static struct json_object *cmd_capacity(struct ipc_call *call) {
	struct qw_server *server = call->server;
	char err[256];
	if (!qos_link_ready(server, err, sizeof(err))) {
		return ipc_reply_error("%s", err);
	}
	struct qos_manager_info info;
	qos_manager_get_info(qos_link_manager(server), &info);
	struct json_object *reply = reply_ok();
	json_object_object_add(reply, "ncpus", json_object_new_int(info.ncpus));
	json_object_object_add(reply, "total_ppm", json_object_new_int64(info.capacity_ppm));
	json_object_object_add(reply, "granted_ppm", json_object_new_int64(info.granted_ppm));
	uint64_t all = (uint64_t)info.ncpus * 1000000;
	json_object_object_add(reply, "rsvd_ppm",
			json_object_new_int64(all > info.capacity_ppm
							? (all - info.capacity_ppm) / (info.ncpus ? info.ncpus : 1)
							: 0));
	json_object_object_add(reply, "layout", ipc_json_text(info.layout));
	json_object_object_add(reply, "watchdog_alarms",
			json_object_new_int64((int64_t)info.watchdog_alarms));
	json_object_object_add(reply, "watchdog_cooldown",
			json_object_new_boolean(info.watchdog_cooldown));
	return reply;
}

static struct json_object *cmd_reload(struct ipc_call *call) {
	struct qw_server *server = call->server;
	char err[256] = "";
	if (!output_config_reload(server, err, sizeof(err))) {
		return ipc_reply_error("%s", err);
	}
	if (!input_devices_reload(server, err, sizeof(err))) {
		return ipc_reply_error("%s", err);
	}
	if (!qos_link_reload(server, err, sizeof(err))) {
		return ipc_reply_error("%s", err);
	}
	struct json_object *reply = reply_ok();
	if (err[0]) {
		json_object_object_add(reply, "warning", ipc_json_text(err));
	}
	return reply;
}

/*
 * One argument of argv_base64: strict base64 (the alphabet, padding only at
 * the end, a multiple of 4 long) of a non-empty string without NUL bytes.
 * Returns it decoded and NUL-terminated, or NULL.
 */
static char *decode_arg(const char *text, size_t len) {
	size_t pad = 0;
	if (len == 0 || len % 4) {
		return NULL;
	}
	for (size_t i = 0; i < len; i++) {
		char c = text[i];
		if (c == '=' && i >= len - 2) {
			pad++;
		} else if (pad || !(g_ascii_isalnum(c) || c == '+' || c == '/')) {
			return NULL;
		}
	}
	gsize n;
	guchar *raw = g_base64_decode(text, &n);
	char *arg = NULL;
	if (n > 0 && !memchr(raw, '\0', n) && (arg = malloc(n + 1))) {
		memcpy(arg, raw, n);
		arg[n] = '\0';
	}
	g_free(raw);
	return arg;
}

static void free_args(char **argv, size_t n, bool owned) {
	for (size_t i = 0; owned && i < n; i++) {
		free(argv[i]);
	}
	free(argv);
}

/*
 * argv (text) or argv_base64 (any bytes but NUL: file names and arguments
 * in another encoding, which a JSON string cannot carry as they are).
 */
static struct json_object *cmd_exec(struct ipc_call *call) {
	struct qw_server *server = call->server;
	struct json_object *req = call->req;
	struct json_object *text_obj = NULL, *b64_obj = NULL;
	json_object_object_get_ex(req, "argv", &text_obj);
	json_object_object_get_ex(req, "argv_base64", &b64_obj);
	if (text_obj && b64_obj) {
		return ipc_reply_error("give 'argv' or 'argv_base64', not both");
	}
	bool owned = b64_obj != NULL;
	const char *key = owned ? "argv_base64" : "argv";
	struct json_object *argv_obj = owned ? b64_obj : text_obj;
	if (!argv_obj || !json_object_is_type(argv_obj, json_type_array) ||
			json_object_array_length(argv_obj) == 0) {
		return ipc_reply_error("'argv' (or 'argv_base64') must be a non-empty array of strings");
	}
	size_t n = json_object_array_length(argv_obj);
	if (n > 4096) {
		return ipc_reply_error("'%s' has too many elements", key);
	}
	char **argv = calloc(n + 1, sizeof(char *));
	if (!argv) {
		return ipc_reply_error("out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		struct json_object *arg = json_object_array_get_idx(argv_obj, i);
		if (!json_object_is_type(arg, json_type_string) || json_object_get_string_len(arg) == 0) {
			free_args(argv, i, owned);
			return ipc_reply_error("'%s' element %zu is not a non-empty string", key, i);
		}
		if (!owned) {
			argv[i] = (char *)json_object_get_string(arg);
		} else if (!(argv[i] = decode_arg(json_object_get_string(arg),
							 (size_t)json_object_get_string_len(arg)))) {
			free_args(argv, i, owned);
			return ipc_reply_error("'argv_base64' element %zu is not base64 of a non-empty "
								   "argument without NUL bytes",
					i);
		}
	}
	const char *reserve = get_string(req, "reserve");
	char err[256] = "";
	if (reserve && !qos_name_valid(reserve, err, sizeof(err))) {
		free_args(argv, n, owned);
		return ipc_reply_error("bad reserve name: %s", err);
	}
	pid_t pid = server_spawn_argv_qos(server, argv, reserve, err, sizeof(err));
	free_args(argv, n, owned);
	if (pid < 0) {
		return ipc_reply_error("%s", err[0] ? err : "fork failed");
	}
	struct json_object *reply = reply_ok();
	json_object_object_add(reply, "pid", json_object_new_int(pid));
	if (err[0]) {
		/* It runs, but without the reserve: say why. */
		json_object_object_add(reply, "refused", ipc_json_text(err));
	}
	return reply;
}

/* One JSON value spanning the whole line (json-c alone stops after the
 * first value and ignores trailing garbage). NULL if it does not. */
static struct json_object *parse_whole(const char *line) {
	struct json_tokener *tok = json_tokener_new();
	if (!tok) {
		return NULL;
	}
	size_t len = strlen(line);
	struct json_object *obj = json_tokener_parse_ex(tok, line, (int)len);
	if (obj && json_tokener_get_error(tok) == json_tokener_success) {
		size_t used = json_tokener_get_parse_end(tok);
		while (used < len && (line[used] == ' ' || line[used] == '\t' || line[used] == '\r')) {
			used++;
		}
		if (used != len) {
			json_object_put(obj);
			obj = NULL;
		}
	} else if (obj) {
		json_object_put(obj);
		obj = NULL;
	}
	json_tokener_free(tok);
	return obj;
}

/*
 * A string value holding a NUL byte ("\u0000"), described in where: json-c
 * keeps it, with its length, but every use here is a C string, which would
 * end at the NUL (an empty argv[0], a name cut short without a word).
 */
static bool find_nul(struct json_object *value, const char *key, char *where, size_t len,
		int depth) {
	if (json_object_is_type(value, json_type_string)) {
		const char *s = json_object_get_string(value);
		if (memchr(s, '\0', (size_t)json_object_get_string_len(value))) {
			snprintf(where, len, "'%.64s'", key);
			return true;
		}
	} else if (json_object_is_type(value, json_type_array) && depth < 64) {
		size_t n = json_object_array_length(value);
		for (size_t i = 0; i < n; i++) {
			if (find_nul(json_object_array_get_idx(value, i), key, where, len, depth + 1)) {
				if (depth == 0) {
					snprintf(where, len, "'%.64s' element %zu", key, i);
				}
				return true;
			}
		}
	} else if (json_object_is_type(value, json_type_object) && depth < 64) {
		json_object_object_foreach(value, k, v) {
			if (find_nul(v, depth == 0 ? key : k, where, len, depth + 1)) {
				return true;
			}
		}
	}
	return false;
}

static bool find_nul_in_request(struct json_object *req, char *where, size_t len) {
	json_object_object_foreach(req, key, value) {
		if (find_nul(value, key, where, len, 0)) {
			return true;
		}
	}
	return false;
}

static struct json_object *cmd_version(struct ipc_call *call) {
	struct json_object *reply = reply_ok();
	json_object_object_add(reply, "version", json_object_new_string(QOSWAY_VERSION));
	return reply;
}

/* workspaces, workspace, move-to-workspace (workspace.h) */
static struct json_object *cmd_workspace(struct ipc_call *call) {
	return workspace_ipc_command(call->server, call->command, call->req);
}

/* The fields of an object, added to a reply (which takes references). */
static void add_fields(struct json_object *reply, struct json_object *fields) {
	json_object_object_foreach(fields, key, value) {
		json_object_object_add(reply, key, json_object_get(value));
	}
	json_object_put(fields);
}

static struct json_object *cmd_inputs(struct ipc_call *call) {
	struct json_object *reply = reply_ok();
	add_fields(reply, input_devices_json(call->server));
	return reply;
}

/* {"command": "input-add", "type": TYPE}: a headless device, for tests. */
static struct json_object *cmd_input_add(struct ipc_call *call) {
	struct json_object *type;
	char err[160];
	uint32_t id = 0;
	if (!json_object_object_get_ex(call->req, "type", &type) ||
			!json_object_is_type(type, json_type_string)) {
		return ipc_reply_error("input-add wants a string 'type'");
	}
	if (!input_devices_add_headless(call->server, json_object_get_string(type), &id, err,
				sizeof(err))) {
		return ipc_reply_error("%s", err);
	}
	struct json_object *reply = reply_ok();
	json_object_object_add(reply, "id", json_object_new_int64(id));
	return reply;
}

/* input-touch, input-gesture, input-tablet: events from a headless device. */
static struct json_object *cmd_input_emit(struct ipc_call *call) {
	char err[160];
	if (!input_emit(call->server, call->command + strlen("input-"), call->req, err, sizeof(err))) {
		return ipc_reply_error("%s: %s", call->command, err);
	}
	return reply_ok();
}

static struct json_object *cmd_ping(struct ipc_call *call) {
	struct json_object *reply = NULL;
	struct qw_view *view = lookup_view(call->server, call->req, &reply);
	if (!view) {
		return reply;
	}
	if (view_is_paused(view)) {
		/* It could not answer; the ping would only pile up. */
		return ipc_reply_error("window %u is paused", view->id);
	}
	view_ping(view);
	return reply_ok();
}

static struct json_object *cmd_focus(struct ipc_call *call) {
	struct json_object *reply = NULL;
	struct qw_view *view = lookup_view(call->server, call->req, &reply);
	if (!view) {
		return reply;
	}
	view_focus(view);
	return reply_ok();
}

static struct json_object *cmd_close(struct ipc_call *call) {
	struct json_object *reply = NULL;
	struct qw_view *view = lookup_view(call->server, call->req, &reply);
	if (!view) {
		return reply;
	}
	view_close(view);
	return reply_ok();
}

static struct json_object *cmd_clients(struct ipc_call *call) {
	struct json_object *reply = reply_ok();
	json_object_object_add(reply, "clients", scheduler_json_clients(call->server->scheduler));
	return reply;
}

static struct json_object *cmd_scheduler(struct ipc_call *call) {
	struct json_object *reply = reply_ok();
	add_fields(reply, scheduler_json(call->server->scheduler));
	return reply;
}

static struct json_object *cmd_subscribe(struct ipc_call *call) {
	call->subscribe = true;
	return reply_ok();
}

static struct json_object *cmd_exit(struct ipc_call *call) {
	call->terminate = true;
	return reply_ok();
}

/*
 * Every command a request may name (docs/ipc.md). A new command is one row
 * here and its handler, which gets the request once it passed the checks
 * common to all (ipc_command_handle).
 */
static const struct {
	const char *name;
	struct json_object *(*handle)(struct ipc_call *call);
} ipc_commands[] = {
	{ "version", cmd_version },
	{ "windows", cmd_windows },
	{ "outputs", cmd_outputs },
	{ "output-add", cmd_output_add },
	{ "output-remove", cmd_output_remove },
	{ "workspaces", cmd_workspace },
	{ "workspace", cmd_workspace },
	{ "move-to-workspace", cmd_workspace },
	{ "inputs", cmd_inputs },
	{ "input-add", cmd_input_add },
	{ "input-touch", cmd_input_emit },
	{ "input-gesture", cmd_input_emit },
	{ "input-tablet", cmd_input_emit },
	{ "ping", cmd_ping },
	{ "focus", cmd_focus },
	{ "close", cmd_close },
	{ "exec", cmd_exec },
	{ "set", cmd_set },
	{ "join", cmd_join },
	{ "reserve", cmd_reserve },
	{ "reserves", cmd_reserves },
	{ "capacity", cmd_capacity },
	{ "clients", cmd_clients },
	{ "scheduler", cmd_scheduler },
	{ "reload", cmd_reload },
	{ "subscribe", cmd_subscribe },
	{ "exit", cmd_exit },
};

static struct json_object *dispatch(struct ipc_call *call) {
	for (size_t i = 0; i < sizeof(ipc_commands) / sizeof(ipc_commands[0]); i++) {
		if (strcmp(call->command, ipc_commands[i].name) == 0) {
			return ipc_commands[i].handle(call);
		}
	}
	return ipc_reply_error("unknown command '%.64s'", call->command);
}

struct json_object *ipc_command_handle(struct qw_server *server, pid_t peer_pid, const char *line,
		bool *subscribe, bool *terminate) {
	/* json-c takes any bytes inside a string; names and targets must be text. */
	bool text = g_utf8_validate(line, -1, NULL);
	struct ipc_call call = {
		.server = server,
		.peer_pid = peer_pid,
		.req = text ? parse_whole(line) : NULL,
	};
	struct json_object *reply, *cmd_obj;
	char where[160];
	if (!text) {
		reply = ipc_reply_error("request is not valid UTF-8");
	} else if (!call.req) {
		reply = ipc_reply_error("malformed JSON: the line must be exactly one JSON object");
	} else if (!json_object_is_type(call.req, json_type_object) ||
			!json_object_object_get_ex(call.req, "command", &cmd_obj) ||
			!json_object_is_type(cmd_obj, json_type_string)) {
		reply = ipc_reply_error("request must be an object with a string 'command'");
	} else if (find_nul_in_request(call.req, where, sizeof(where))) {
		reply = ipc_reply_error("%s holds a NUL byte (\\u0000), which no argument, name or "
								"target may contain",
				where);
	} else {
		call.command = json_object_get_string(cmd_obj);
		reply = dispatch(&call);
	}
	if (call.subscribe) {
		*subscribe = true;
	}
	if (call.terminate) {
		*terminate = true;
	}
	json_object_put(call.req);
	return reply;
}
