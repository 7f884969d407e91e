#include <errno.h>
#include <glib.h>
#include <limits.h>
#include <signal.h>
#include <json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <wlr/types/wlr_output.h>
#include <wlr/types/wlr_output_layout.h>
#include <wlr/types/wlr_scene.h>
#include <wlr/types/wlr_xdg_shell.h>
#include <wlr/util/log.h>

#include "client_identity.h"
#include "ipc.h"
#include "output.h"
#include "qos/qos.h"
#include "qos_link.h"
#include "view.h"

/* A request line longer than this is refused rather than buffered. */
#define IPC_MAX_REQUEST (64 * 1024)
/* A client whose unread replies pass this is dropped, not waited for. */
#define IPC_MAX_QUEUED (4 * 1024 * 1024)

struct qw_ipc {
	struct qw_server *server;
	int fd;
	char *path;
	struct wl_event_source *source;
	struct wl_list clients; /* ipc_client.link */
};

struct ipc_client {
	struct wl_list link;
	struct qw_ipc *ipc;
	int fd;
	struct wl_event_source *source;
	char *in;
	size_t in_len;
	char *out;
	size_t out_len, out_cap;
	bool subscribed;
	bool close_after_flush;
	pid_t peer_pid; /* never paused on its own request */
};

static void client_destroy(struct ipc_client *client) {
	wl_event_source_remove(client->source);
	close(client->fd);
	wl_list_remove(&client->link);
	free(client->in);
	free(client->out);
	free(client);
}

/* Returns false if the client was destroyed. */
static bool client_flush(struct ipc_client *client) {
	while (client->out_len > 0) {
		ssize_t n = send(client->fd, client->out, client->out_len,
			MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR) {
				continue;
			}
			if (errno == EAGAIN) {
				break;
			}
			client_destroy(client);
			return false;
		}
		memmove(client->out, client->out + n, client->out_len - n);
		client->out_len -= n;
	}
	if (client->out_len == 0 && client->close_after_flush) {
		client_destroy(client);
		return false;
	}
	uint32_t mask = WL_EVENT_READABLE | (client->out_len ? WL_EVENT_WRITABLE : 0);
	wl_event_source_fd_update(client->source, mask);
	return true;
}

/* Queue one JSON line. Returns false if the client was destroyed. */
static bool client_send(struct ipc_client *client, struct json_object *obj) {
	size_t len;
	const char *text = json_object_to_json_string_length(obj,
		JSON_C_TO_STRING_PLAIN, &len);
	if (client->out_len + len + 1 > IPC_MAX_QUEUED) {
		wlr_log(WLR_INFO, "IPC client stopped reading; dropping it");
		client_destroy(client);
		return false;
	}
	if (client->out_len + len + 1 > client->out_cap) {
		size_t cap = (client->out_len + len + 1) * 2;
		char *grown = realloc(client->out, cap);
		if (!grown) {
			client_destroy(client);
			return false;
		}
		client->out = grown;
		client->out_cap = cap;
	}
	memcpy(client->out + client->out_len, text, len);
	client->out[client->out_len + len] = '\n';
	client->out_len += len + 1;
	return client_flush(client);
}

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
static struct json_object *text_json(const char *s) {
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

static struct json_object *window_json(struct qw_view *view) {
	struct json_object *obj = json_object_new_object();
	json_object_object_add(obj, "id", json_object_new_int64(view->id));
	json_object_object_add(obj, "app_id", text_json(view->toplevel->app_id));
	json_object_object_add(obj, "title", text_json(view->toplevel->title));
	json_object_object_add(obj, "pid", json_object_new_int(view_get_pid(view)));
	json_object_object_add(obj, "class",
		json_object_new_string(view_class_name(view->class)));
	const char *reserve = NULL;
	qos_link_class_of(view->server, view_get_pid(view), &reserve);
	json_object_object_add(obj, "reserve", text_json(reserve));
	struct client_identity *id = view_identity(view);
	json_object_object_add(obj, "cpu_percent",
		json_object_new_double(id ? id->cpu_percent : 0.0));
	json_object_object_add(obj, "focused", json_object_new_boolean(view->deco.focused));
	json_object_object_add(obj, "maximized", json_object_new_boolean(view->maximized));
	json_object_object_add(obj, "fullscreen", json_object_new_boolean(view->fullscreen));
	json_object_object_add(obj, "geometry", box_json((struct wlr_box){
		view->x, view->y, view->width, view->height}));
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

static struct json_object *reply_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static struct json_object *reply_error(const char *fmt, ...) {
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	struct json_object *obj = json_object_new_object();
	json_object_object_add(obj, "success", json_object_new_boolean(false));
	json_object_object_add(obj, "error", text_json(msg));
	return obj;
}

static void add_windows_of(struct json_object *list, struct wlr_scene_tree *tree) {
	struct wlr_scene_node *node;
	wl_list_for_each(node, &tree->node.state.children, state.link) {
		struct qw_node_desc *desc = node->data;
		if (desc && desc->magic == QW_NODE_DESC_MAGIC && desc->view &&
				desc->view->mapped) {
			json_object_array_add(list, window_json(desc->view));
		}
	}
}

static struct json_object *cmd_windows(struct qw_server *server) {
	struct json_object *reply = reply_ok();
	struct json_object *list = json_object_new_array();
	/* Stacking order, bottom first, as the scene draws them. */
	add_windows_of(list, server->view_tree);
	add_windows_of(list, server->fullscreen_tree);
	json_object_object_add(reply, "windows", list);
	return reply;
}

static struct json_object *cmd_outputs(struct qw_server *server) {
	struct json_object *reply = reply_ok();
	struct json_object *list = json_object_new_array();
	struct qw_output *output;
	wl_list_for_each(output, &server->outputs, link) {
		struct wlr_output *o = output->wlr_output;
		struct wlr_box box = output_layout_box(output);
		struct json_object *obj = json_object_new_object();
		json_object_object_add(obj, "name", text_json(o->name));
		json_object_object_add(obj, "make", text_json(o->make));
		json_object_object_add(obj, "model", text_json(o->model));
		json_object_object_add(obj, "width", json_object_new_int(o->width));
		json_object_object_add(obj, "height", json_object_new_int(o->height));
		json_object_object_add(obj, "refresh_mhz", json_object_new_int(o->refresh));
		json_object_object_add(obj, "x", json_object_new_int(box.x));
		json_object_object_add(obj, "y", json_object_new_int(box.y));
		json_object_object_add(obj, "scale", json_object_new_double(o->scale));
		json_object_object_add(obj, "enabled", json_object_new_boolean(o->enabled));
		json_object_array_add(list, obj);
	}
	json_object_object_add(reply, "outputs", list);
	return reply;
}

static struct qw_view *lookup_view(struct qw_server *server, struct json_object *req,
		struct json_object **error) {
	struct json_object *id_obj;
	if (!json_object_object_get_ex(req, "id", &id_obj) ||
			!json_object_is_type(id_obj, json_type_int)) {
		*error = reply_error("missing or non-integer 'id'");
		return NULL;
	}
	int64_t id = json_object_get_int64(id_obj);
	struct qw_view *view = id > 0 && id <= UINT32_MAX ?
		view_from_id(server, (uint32_t)id) : NULL;
	if (!view || !view->mapped) {
		*error = reply_error("unknown window id %lld", (long long)id);
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

/* "ID" (a window) or "pid:N" -> a live pid, or an error reply. */
static pid_t resolve_target(struct qw_server *server, struct json_object *req,
		struct json_object **error) {
	const char *target = get_string(req, "target");
	if (!target) {
		*error = reply_error("missing string 'target' (a window id or pid:N)");
		return -1;
	}
	char *end;
	if (strncmp(target, "pid:", 4) == 0) {
		long pid = strtol(target + 4, &end, 10);
		if (*end || end == target + 4 || pid <= 0 || pid > INT32_MAX) {
			*error = reply_error("bad target '%.64s': want pid:N", target);
			return -1;
		}
		if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
			*error = reply_error("no process %ld", pid);
			return -1;
		}
		return (pid_t)pid;
	}
	long id = strtol(target, &end, 10);
	struct qw_view *view = *end || end == target || id <= 0 || id > UINT32_MAX ? NULL :
		view_from_id(server, (uint32_t)id);
	if (!view || !view->mapped) {
		*error = reply_error("unknown window '%.64s'", target);
		return -1;
	}
	pid_t pid = view_get_pid(view);
	if (pid <= 0) {
		*error = reply_error("the process of window %ld is gone", id);
		return -1;
	}
	return pid;
}

static struct json_object *cmd_set(struct ipc_client *client, struct json_object *req) {
	struct qw_server *server = client->ipc->server;
	struct json_object *error = NULL;
	pid_t pid = resolve_target(server, req, &error);
	if (pid < 0) {
		return error;
	}
	const char *name = get_string(req, "class");
	enum qw_view_class class;
	if (!name || !view_class_from_name(name, &class)) {
		return reply_error("bad class '%.32s': want realtime, fifo, idle, nice, paused "
			"or normal", name ? name : "");
	}
	char err[256];
	if (!qos_link_may_change(server, pid, client->peer_pid, class == QW_VIEW_CLASS_PAUSED,
			err, sizeof(err)) ||
			!qos_link_request(server, pid, class, err, sizeof(err))) {
		return reply_error("%s", err);
	}
	struct json_object *reply = reply_ok();
	json_object_object_add(reply, "pid", json_object_new_int(pid));
	json_object_object_add(reply, "class", json_object_new_string(
		view_class_name(qos_link_class_of(server, pid, NULL))));
	return reply;
}

static struct json_object *cmd_join(struct ipc_client *client, struct json_object *req) {
	struct qw_server *server = client->ipc->server;
	struct json_object *error = NULL;
	pid_t pid = resolve_target(server, req, &error);
	if (pid < 0) {
		return error;
	}
	const char *reserve = get_string(req, "reserve");
	char err[256];
	if (!reserve || !qos_name_valid(reserve, err, sizeof(err))) {
		return reply_error("bad reserve name: %s", reserve ? err : "missing 'reserve'");
	}
	if (!server->qos) {
		return reply_error("QoS manager unavailable: %s", server->qos_error);
	}
	if (!qos_link_may_change(server, pid, client->peer_pid,
			qos_link_reserve_freezes(server, reserve), err, sizeof(err))) {
		return reply_error("%s", err);
	}
	bool ok = qos_manager_join(server->qos, reserve, pid, 0, err, sizeof(err));
	qos_link_schedule_refresh(server);
	if (!ok) {
		return reply_error("%s", err);
	}
	return reply_ok();
}

/* Parameters the manager could never honour are refused when defined, not
 * at the first join: a guarantee beyond the whole reservable capacity. */
static bool reserve_params_valid(struct qw_server *server, struct qos_params *params,
		char *err, size_t len) {
	if (!qos_params_normalize(params, err, len)) {
		return false;
	}
	struct qos_manager_info info;
	qos_manager_get_info(server->qos, &info);
	uint64_t util = qos_params_util_ppm(params);
	if (params->policy == QOS_POLICY_QOS && util > info.capacity_ppm) {
		snprintf(err, len, "a guarantee of %.1f%% of a CPU exceeds the reservable "
			"capacity of %.1f%%", util / 10000.0, info.capacity_ppm / 10000.0);
		return false;
	}
	return true;
}

/* New parameters that can freeze must not reach a protected member. */
static bool members_may_take(struct qw_server *server, const char *name,
		const struct qos_params *params, pid_t asker, char *err, size_t len) {
	if (params->policy != QOS_POLICY_PAUSE && params->fallback != QOS_POLICY_PAUSE) {
		return true;
	}
	struct qos_member_info members[64];
	ssize_t n = qos_manager_members(server->qos, name, members, 64);
	for (ssize_t i = 0; i < n && i < 64; i++) {
		if (!qos_link_may_change(server, members[i].pid, asker, true, err, len)) {
			return false;
		}
	}
	return true;
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

static struct json_object *cmd_reserve(struct ipc_client *client, struct json_object *req) {
	struct qw_server *server = client->ipc->server;
	const char *name = get_string(req, "name");
	const char *params = get_string(req, "params");
	char err[256];
	if (!name || !qos_name_valid(name, err, sizeof(err))) {
		return reply_error("bad reserve name: %s", name ? err : "missing 'name'");
	}
	if (qos_name_is_auto(name)) {
		return reply_error("names starting with '" QOS_AUTO_PREFIX "' are automatic reserves");
	}
	if (!server->qos) {
		return reply_error("QoS manager unavailable: %s", server->qos_error);
	}
	/* The same key=value grammar as qosrc, parsed by the same code. */
	char *line = NULL;
	if (asprintf(&line, "reserve %s %s", name, params ? params : "") < 0) {
		return reply_error("out of memory");
	}
	struct qos_rules *parsed = qos_rules_create();
	struct diag_buf diag = {0};
	int bad = parsed ? qos_rules_parse_string(parsed, "request", line, keep_first_diag,
		&diag) : -1;
	free(line);
	struct json_object *reply;
	if (bad != 0 || parsed->n_reserves != 1) {
		reply = reply_error("bad parameters: %s", diag.text[0] ? diag.text : "unparsable");
	} else if (!reserve_params_valid(server, &parsed->reserves[0].params, err, sizeof(err))) {
		reply = reply_error("bad parameters: %s", err);
	} else if (!members_may_take(server, name, &parsed->reserves[0].params,
			client->peer_pid, err, sizeof(err)) ||
			!qos_reserve_set(server->qos, name, &parsed->reserves[0].params, true, true,
			err, sizeof(err))) {
		reply = reply_error("%s", err);
	} else {
		reply = reply_ok();
	}
	qos_rules_destroy(parsed);
	qos_link_schedule_refresh(server);
	return reply;
}

static struct json_object *cmd_reserves(struct qw_server *server) {
	if (!server->qos) {
		return reply_error("QoS manager unavailable: %s", server->qos_error);
	}
	struct json_object *reply = reply_ok();
	struct json_object *list = json_object_new_array();
	size_t n = qos_manager_reserve_count(server->qos);
	for (size_t i = 0; i < n; i++) {
		struct qos_reserve_info info;
		if (!qos_manager_reserve_at(server->qos, i, &info)) {
			continue;
		}
		char params[256];
		qos_params_format(&info.params, params, sizeof(params));
		struct json_object *obj = json_object_new_object();
		json_object_object_add(obj, "name", text_json(info.name));
		json_object_object_add(obj, "params", text_json(params));
		json_object_object_add(obj, "policy",
			json_object_new_string(qos_policy_name(info.params.policy)));
		json_object_object_add(obj, "period_us", json_object_new_int64(info.params.period_us));
		json_object_object_add(obj, "slice_us", json_object_new_int64(info.params.slice_us));
		json_object_object_add(obj, "granted", json_object_new_boolean(info.granted));
		json_object_object_add(obj, "automatic", json_object_new_boolean(info.is_auto));
		json_object_object_add(obj, "in_fallback", json_object_new_boolean(info.in_fallback));
		json_object_object_add(obj, "used_us", json_object_new_int64(info.used_us));
		json_object_object_add(obj, "billed_us", json_object_new_int64(info.billed_us));
		json_object_object_add(obj, "last_used_us", json_object_new_int64(info.last_used_us));
		json_object_object_add(obj, "overruns", json_object_new_int64(info.overruns));
		struct qos_member_info members[64];
		ssize_t count = qos_manager_members(server->qos, info.name, members, 64);
		struct json_object *mlist = json_object_new_array();
		for (ssize_t m = 0; m < count && m < 64; m++) {
			struct json_object *mo = json_object_new_object();
			json_object_object_add(mo, "pid", json_object_new_int(members[m].pid));
			json_object_object_add(mo, "tid", json_object_new_int(members[m].tid));
			json_object_array_add(mlist, mo);
		}
		json_object_object_add(obj, "members", mlist);
		json_object_array_add(list, obj);
	}
	json_object_object_add(reply, "reserves", list);
	return reply;
}

static struct json_object *cmd_capacity(struct qw_server *server) {
	if (!server->qos) {
		return reply_error("QoS manager unavailable: %s", server->qos_error);
	}
	struct qos_manager_info info;
	qos_manager_get_info(server->qos, &info);
	struct json_object *reply = reply_ok();
	json_object_object_add(reply, "ncpus", json_object_new_int(info.ncpus));
	json_object_object_add(reply, "total_ppm", json_object_new_int64(info.capacity_ppm));
	json_object_object_add(reply, "granted_ppm", json_object_new_int64(info.granted_ppm));
	uint64_t all = (uint64_t)info.ncpus * 1000000;
	json_object_object_add(reply, "rsvd_ppm", json_object_new_int64(
		all > info.capacity_ppm ? (all - info.capacity_ppm) / (info.ncpus ? info.ncpus : 1) : 0));
	json_object_object_add(reply, "layout", text_json(info.layout));
	return reply;
}

static struct json_object *cmd_reload(struct qw_server *server) {
	char err[256] = "";
	if (!qos_link_reload(server, err, sizeof(err))) {
		return reply_error("%s", err);
	}
	struct json_object *reply = reply_ok();
	if (err[0]) {
		json_object_object_add(reply, "warning", text_json(err));
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
static struct json_object *cmd_exec(struct qw_server *server, struct json_object *req) {
	struct json_object *text_obj = NULL, *b64_obj = NULL;
	json_object_object_get_ex(req, "argv", &text_obj);
	json_object_object_get_ex(req, "argv_base64", &b64_obj);
	if (text_obj && b64_obj) {
		return reply_error("give 'argv' or 'argv_base64', not both");
	}
	bool owned = b64_obj != NULL;
	const char *key = owned ? "argv_base64" : "argv";
	struct json_object *argv_obj = owned ? b64_obj : text_obj;
	if (!argv_obj || !json_object_is_type(argv_obj, json_type_array) ||
			json_object_array_length(argv_obj) == 0) {
		return reply_error("'argv' (or 'argv_base64') must be a non-empty array of strings");
	}
	size_t n = json_object_array_length(argv_obj);
	if (n > 4096) {
		return reply_error("'%s' has too many elements", key);
	}
	char **argv = calloc(n + 1, sizeof(char *));
	if (!argv) {
		return reply_error("out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		struct json_object *arg = json_object_array_get_idx(argv_obj, i);
		if (!json_object_is_type(arg, json_type_string) ||
				json_object_get_string_len(arg) == 0) {
			free_args(argv, i, owned);
			return reply_error("'%s' element %zu is not a non-empty string", key, i);
		}
		if (!owned) {
			argv[i] = (char *)json_object_get_string(arg);
		} else if (!(argv[i] = decode_arg(json_object_get_string(arg),
				(size_t)json_object_get_string_len(arg)))) {
			free_args(argv, i, owned);
			return reply_error("'argv_base64' element %zu is not base64 of a non-empty "
				"argument without NUL bytes", i);
		}
	}
	const char *reserve = get_string(req, "reserve");
	char err[256] = "";
	if (reserve && !qos_name_valid(reserve, err, sizeof(err))) {
		free_args(argv, n, owned);
		return reply_error("bad reserve name: %s", err);
	}
	pid_t pid = server_spawn_argv_qos(server, argv, reserve, err, sizeof(err));
	free_args(argv, n, owned);
	if (pid < 0) {
		return reply_error("%s", err[0] ? err : "fork failed");
	}
	struct json_object *reply = reply_ok();
	json_object_object_add(reply, "pid", json_object_new_int(pid));
	if (err[0]) {
		/* It runs, but without the reserve: say why. */
		json_object_object_add(reply, "refused", text_json(err));
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

/* Handle one request; returns false if the client is gone. */
static bool handle_request(struct ipc_client *client, const char *line) {
	struct qw_server *server = client->ipc->server;
	/* json-c takes any bytes inside a string; names and targets must be text. */
	bool text = g_utf8_validate(line, -1, NULL);
	struct json_object *req = text ? parse_whole(line) : NULL;
	struct json_object *reply = NULL;
	const char *command = NULL;
	struct json_object *cmd_obj;
	bool terminate = false;
	if (!text) {
		reply = reply_error("request is not valid UTF-8");
	} else if (!req) {
		reply = reply_error("malformed JSON: the line must be exactly one JSON object");
	} else if (!json_object_is_type(req, json_type_object) ||
			!json_object_object_get_ex(req, "command", &cmd_obj) ||
			!json_object_is_type(cmd_obj, json_type_string)) {
		reply = reply_error("request must be an object with a string 'command'");
	} else {
		command = json_object_get_string(cmd_obj);
	}
	if (!command) {
		/* reply already set */
	} else if (strcmp(command, "version") == 0) {
		reply = reply_ok();
		json_object_object_add(reply, "version", json_object_new_string(QOSWAY_VERSION));
	} else if (strcmp(command, "windows") == 0) {
		reply = cmd_windows(server);
	} else if (strcmp(command, "outputs") == 0) {
		reply = cmd_outputs(server);
	} else if (strcmp(command, "ping") == 0) {
		struct qw_view *view = lookup_view(server, req, &reply);
		if (view && view_is_paused(view)) {
			/* It could not answer; the ping would only pile up. */
			reply = reply_error("window %u is paused", view->id);
		} else if (view) {
			wlr_xdg_surface_ping(view->xdg_surface);
			reply = reply_ok();
		}
	} else if (strcmp(command, "focus") == 0 || strcmp(command, "close") == 0) {
		struct qw_view *view = lookup_view(server, req, &reply);
		if (view) {
			if (command[0] == 'f') {
				view_focus(view);
			} else {
				view_close(view);
			}
			reply = reply_ok();
		}
	} else if (strcmp(command, "exec") == 0) {
		reply = cmd_exec(server, req);
	} else if (strcmp(command, "set") == 0) {
		reply = cmd_set(client, req);
	} else if (strcmp(command, "join") == 0) {
		reply = cmd_join(client, req);
	} else if (strcmp(command, "reserve") == 0) {
		reply = cmd_reserve(client, req);
	} else if (strcmp(command, "reserves") == 0) {
		reply = cmd_reserves(server);
	} else if (strcmp(command, "capacity") == 0) {
		reply = cmd_capacity(server);
	} else if (strcmp(command, "reload") == 0) {
		reply = cmd_reload(server);
	} else if (strcmp(command, "subscribe") == 0) {
		client->subscribed = true;
		reply = reply_ok();
	} else if (strcmp(command, "exit") == 0) {
		reply = reply_ok();
		terminate = true;
	} else {
		reply = reply_error("unknown command '%.64s'", command);
	}
	json_object_put(req);
	bool alive = client_send(client, reply);
	json_object_put(reply);
	if (terminate) {
		server_terminate(server);
	}
	return alive;
}

static int handle_client_event(int fd, uint32_t mask, void *data) {
	struct ipc_client *client = data;
	if (mask & (WL_EVENT_ERROR | WL_EVENT_HANGUP)) {
		client_destroy(client);
		return 0;
	}
	if (mask & WL_EVENT_WRITABLE) {
		if (!client_flush(client)) {
			return 0;
		}
	}
	if (!(mask & WL_EVENT_READABLE)) {
		return 0;
	}
	char buf[4096];
	ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		client_destroy(client);
		return 0;
	}
	if (n < 0) {
		return 0;
	}
	char *grown = realloc(client->in, client->in_len + n + 1);
	if (!grown) {
		client_destroy(client);
		return 0;
	}
	client->in = grown;
	memcpy(client->in + client->in_len, buf, n);
	client->in_len += n;
	client->in[client->in_len] = '\0';

	char *start = client->in;
	char *nl;
	while ((nl = memchr(start, '\n', client->in_len - (start - client->in)))) {
		*nl = '\0';
		/* An empty line asks nothing and gets nothing, like a shell's. */
		if (nl > start && memchr(start, '\0', (size_t)(nl - start))) {
			/* Read as a C string, the request would end early, unseen. */
			struct json_object *reply = reply_error("request contains a NUL byte");
			bool alive = client_send(client, reply);
			json_object_put(reply);
			if (!alive) {
				return 0;
			}
		} else if (nl > start && !handle_request(client, start)) {
			return 0;
		}
		start = nl + 1;
	}
	size_t rest = client->in_len - (start - client->in);
	memmove(client->in, start, rest);
	client->in_len = rest;
	if (rest > IPC_MAX_REQUEST) {
		struct json_object *reply = reply_error("request longer than %d bytes",
			IPC_MAX_REQUEST);
		client->close_after_flush = true;
		client->in_len = 0;
		client_send(client, reply);
		json_object_put(reply);
	}
	return 0;
}

static int handle_listen(int fd, uint32_t mask, void *data) {
	struct qw_ipc *ipc = data;
	int client_fd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (client_fd < 0) {
		wlr_log_errno(WLR_ERROR, "IPC accept failed");
		return 0;
	}
	struct ipc_client *client = calloc(1, sizeof(*client));
	if (!client) {
		close(client_fd);
		return 0;
	}
	client->ipc = ipc;
	client->fd = client_fd;
	struct ucred cred;
	socklen_t cred_len = sizeof(cred);
	client->peer_pid = getsockopt(client_fd, SOL_SOCKET, SO_PEERCRED, &cred,
		&cred_len) == 0 ? cred.pid : -1;
	client->source = wl_event_loop_add_fd(ipc->server->event_loop, client_fd,
		WL_EVENT_READABLE, handle_client_event, client);
	if (!client->source) {
		close(client_fd);
		free(client);
		return 0;
	}
	wl_list_insert(&ipc->clients, &client->link);
	return 0;
}

struct qw_ipc *ipc_create(struct qw_server *server, const char *path) {
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(addr.sun_path)) {
		wlr_log(WLR_ERROR, "IPC socket path too long: %s", path);
		return NULL;
	}
	strcpy(addr.sun_path, path);
	struct qw_ipc *ipc = calloc(1, sizeof(*ipc));
	if (!ipc) {
		return NULL;
	}
	ipc->server = server;
	wl_list_init(&ipc->clients);
	ipc->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ipc->fd < 0) {
		wlr_log_errno(WLR_ERROR, "IPC socket");
		goto err;
	}
	unlink(path);
	/* Create the socket with 0600 from the start: no window in which
	 * another user could connect. */
	mode_t old = umask(0177);
	int ret = bind(ipc->fd, (struct sockaddr *)&addr, sizeof(addr));
	umask(old);
	if (ret < 0 || listen(ipc->fd, 16) < 0) {
		wlr_log_errno(WLR_ERROR, "IPC bind/listen on %s", path);
		goto err_fd;
	}
	ipc->path = strdup(path);
	ipc->source = wl_event_loop_add_fd(server->event_loop, ipc->fd,
		WL_EVENT_READABLE, handle_listen, ipc);
	if (!ipc->path || !ipc->source) {
		goto err_unlink;
	}
	return ipc;

err_unlink:
	unlink(path);
	free(ipc->path);
err_fd:
	close(ipc->fd);
err:
	free(ipc);
	return NULL;
}

void ipc_destroy(struct qw_ipc *ipc) {
	if (!ipc) {
		return;
	}
	struct ipc_client *client, *tmp;
	wl_list_for_each_safe(client, tmp, &ipc->clients, link) {
		/* Best effort: pending replies (such as exit's) go out first. */
		if (client_flush(client)) {
			client_destroy(client);
		}
	}
	wl_event_source_remove(ipc->source);
	close(ipc->fd);
	unlink(ipc->path);
	free(ipc->path);
	free(ipc);
}

static void broadcast(struct qw_server *server, struct json_object *event) {
	if (!server->ipc) {
		return;
	}
	struct ipc_client *client, *tmp;
	wl_list_for_each_safe(client, tmp, &server->ipc->clients, link) {
		if (client->subscribed) {
			client_send(client, event);
		}
	}
}

void ipc_notify_window(struct qw_server *server, struct qw_view *view,
		const char *change) {
	if (!server->ipc || wl_list_empty(&server->ipc->clients)) {
		return;
	}
	struct json_object *event = json_object_new_object();
	json_object_object_add(event, "event", json_object_new_string("window"));
	json_object_object_add(event, "change", json_object_new_string(change));
	json_object_object_add(event, "window", window_json(view));
	broadcast(server, event);
	json_object_put(event);
}

void ipc_notify_focus(struct qw_server *server, struct qw_view *view) {
	ipc_notify_window(server, view, "focus");
}

void ipc_notify_qos(struct qw_server *server, const struct qos_event *event) {
	if (!server->ipc || wl_list_empty(&server->ipc->clients)) {
		return;
	}
	static const char *const names[] = {
		[QOS_EVENT_ADMISSION_GRANTED] = "granted",
		[QOS_EVENT_ADMISSION_REFUSED] = "refused",
		[QOS_EVENT_OVERRUN] = "overrun",
		[QOS_EVENT_WATCHDOG] = "watchdog",
		[QOS_EVENT_ERROR] = "error",
		[QOS_EVENT_RT_DEMOTED] = "rt-demoted",
		[QOS_EVENT_RT_RESUMED] = "rt-resumed",
	};
	const char *change = (size_t)event->type < sizeof(names) / sizeof(names[0]) ?
		names[event->type] : NULL;
	if (!change) {
		return;
	}
	struct json_object *obj = json_object_new_object();
	json_object_object_add(obj, "event", json_object_new_string("qos"));
	json_object_object_add(obj, "change", json_object_new_string(change));
	json_object_object_add(obj, "reserve", text_json(event->reserve));
	json_object_object_add(obj, "pid", json_object_new_int(event->pid));
	json_object_object_add(obj, "used_us", json_object_new_int64(event->used_us));
	json_object_object_add(obj, "message", text_json(event->message));
	broadcast(server, obj);
	json_object_put(obj);
}
