/*
 * The IPC socket: clients, their request lines and queued replies, and the
 * events sent to subscribers.  What a request does is ipc_commands.c's.
 */
#include <errno.h>
#include <json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <wlr/util/log.h>

#include "ipc/ipc.h"
#include "ipc/ipc_commands.h"
#include "qos_bridge/qos_link.h"
#include "scheduler/scheduler.h"
#include "qos/qos.h"

/* A request line longer than this is refused rather than buffered. */
#define IPC_MAX_REQUEST (64 * 1024)
/* A client whose unread replies pass this is dropped, not waited for. */
#define IPC_MAX_QUEUED (4 * 1024 * 1024)
/* With the queue bound, this bounds what IPC may hold in memory at all. */
#define IPC_MAX_CLIENTS 64

struct qw_ipc {
	struct qw_server *server;
	int fd;
	char *path;
	struct wl_event_source *source;
	struct wl_list clients; /* ipc_client.link */
	int n_clients;
	struct wl_listener qos_event; /* server->events.qos_event */
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
	/* Its request lines are being handled (handle_client_event). */
	bool dispatching;
	/* Dropped while dispatching: freed once its requests return. */
	bool dead;
	pid_t peer_pid; /* never paused on its own request */
};

static void client_destroy(struct ipc_client *client) {
	client->ipc->n_clients--;
	wl_event_source_remove(client->source);
	close(client->fd);
	wl_list_remove(&client->link);
	free(client->in);
	free(client->out);
	free(client);
}

/*
 * Drops a client that failed or stopped reading.  A request's own events
 * (broadcast to subscribers) can drop the very client that sent it, so
 * while its requests run it is only marked, and handle_client_event frees
 * it when they return.
 */
static void client_drop(struct ipc_client *client) {
	if (client->dispatching) {
		client->dead = true;
		return;
	}
	client_destroy(client);
}

/* Returns false if the client was dropped. */
static bool client_flush(struct ipc_client *client) {
	if (client->dead) {
		return false;
	}
	while (client->out_len > 0) {
		ssize_t n = send(client->fd, client->out, client->out_len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR) {
				continue;
			}
			if (errno == EAGAIN) {
				break;
			}
			client_drop(client);
			return false;
		}
		memmove(client->out, client->out + n, client->out_len - n);
		client->out_len -= n;
	}
	if (client->out_len == 0 && client->close_after_flush) {
		client_drop(client);
		return false;
	}
	uint32_t mask = WL_EVENT_READABLE | (client->out_len ? WL_EVENT_WRITABLE : 0);
	wl_event_source_fd_update(client->source, mask);
	return true;
}

/* Queue one JSON line. Returns false if the client was dropped. */
static bool client_send(struct ipc_client *client, struct json_object *obj) {
	if (client->dead) {
		return false;
	}
	size_t len;
	const char *text = json_object_to_json_string_length(obj, JSON_C_TO_STRING_PLAIN, &len);
	if (client->out_len + len + 1 > IPC_MAX_QUEUED) {
		wlr_log(WLR_INFO, "IPC client stopped reading; dropping it");
		client_drop(client);
		return false;
	}
	if (client->out_len + len + 1 > client->out_cap) {
		size_t cap = (client->out_len + len + 1) * 2;
		char *grown = realloc(client->out, cap);
		if (!grown) {
			client_drop(client);
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

/* Handle one request; returns false if the client is gone. */
static bool handle_request(struct ipc_client *client, const char *line) {
	struct qw_server *server = client->ipc->server;
	bool subscribe = false, terminate = false;
	struct json_object *reply =
			ipc_command_handle(server, client->peer_pid, line, &subscribe, &terminate);
	if (subscribe) {
		client->subscribed = true;
	}
	bool alive = client_send(client, reply);
	json_object_put(reply);
	if (terminate) {
		server_terminate(server);
	}
	return alive;
}

/* Handles every complete line in client->in; false once the client is dropped. */
static bool handle_lines(struct ipc_client *client) {
	char *start = client->in;
	char *nl;
	while ((nl = memchr(start, '\n', client->in_len - (start - client->in)))) {
		*nl = '\0';
		/* An empty line asks nothing and gets nothing, like a shell's. */
		if (nl > start && memchr(start, '\0', (size_t)(nl - start))) {
			/* Read as a C string, the request would end early, unseen. */
			struct json_object *reply = ipc_reply_error("request contains a NUL byte");
			bool alive = client_send(client, reply);
			json_object_put(reply);
			if (!alive) {
				return false;
			}
		} else if (nl > start && !handle_request(client, start)) {
			return false;
		}
		start = nl + 1;
	}
	size_t rest = client->in_len - (start - client->in);
	memmove(client->in, start, rest);
	client->in_len = rest;
	if (rest > IPC_MAX_REQUEST) {
		struct json_object *reply =
				ipc_reply_error("request longer than %d bytes", IPC_MAX_REQUEST);
		client->close_after_flush = true;
		client->in_len = 0;
		bool alive = client_send(client, reply);
		json_object_put(reply);
		return alive;
	}
	return true;
}

static int handle_client_event(int fd, uint32_t mask, void *data) {
	struct ipc_client *client = data;
	scheduler_own(client->ipc->server->scheduler);
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

	client->dispatching = true;
	handle_lines(client);
	client->dispatching = false;
	if (client->dead) {
		client_destroy(client);
	}
	return 0;
}

static int handle_listen(int fd, uint32_t mask, void *data) {
	struct qw_ipc *ipc = data;
	scheduler_own(ipc->server->scheduler);
	int client_fd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (client_fd < 0) {
		wlr_log_errno(WLR_ERROR, "IPC accept failed");
		return 0;
	}
	if (ipc->n_clients >= IPC_MAX_CLIENTS) {
		char full[128];
		int len = snprintf(full, sizeof(full),
				"{\"success\":false,\"error\":\"too many "
				"IPC connections (at most %d); close some\"}\n",
				IPC_MAX_CLIENTS);
		/* Best effort: the socket is fresh, so its buffer has room. */
		ssize_t n = send(client_fd, full, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT);
		(void)n;
		close(client_fd);
		wlr_log(WLR_INFO, "IPC connection refused: %d already open", ipc->n_clients);
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
	client->peer_pid =
			getsockopt(client_fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) == 0 ? cred.pid : -1;
	client->source = wl_event_loop_add_fd(ipc->server->event_loop, client_fd, WL_EVENT_READABLE,
			handle_client_event, client);
	if (!client->source) {
		close(client_fd);
		free(client);
		return 0;
	}
	wl_list_insert(&ipc->clients, &client->link);
	ipc->n_clients++;
	return 0;
}

static void handle_qos_event(struct wl_listener *listener, void *data);

struct qw_ipc *ipc_create(struct qw_server *server, const char *path) {
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
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
	ipc->source = wl_event_loop_add_fd(server->event_loop, ipc->fd, WL_EVENT_READABLE,
			handle_listen, ipc);
	if (!ipc->path || !ipc->source) {
		goto err_unlink;
	}
	ipc->qos_event.notify = handle_qos_event;
	wl_signal_add(&server->events.qos_event, &ipc->qos_event);
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
	wl_list_remove(&ipc->qos_event.link);
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
		if (client->subscribed && !client->dead) {
			client_send(client, event);
		}
	}
}

void ipc_notify_window(struct qw_server *server, struct qw_view *view, const char *change) {
	if (!server->ipc || wl_list_empty(&server->ipc->clients)) {
		return;
	}
	struct json_object *event = json_object_new_object();
	json_object_object_add(event, "event", json_object_new_string("window"));
	json_object_object_add(event, "change", json_object_new_string(change));
	json_object_object_add(event, "window", ipc_json_window(view));
	broadcast(server, event);
	json_object_put(event);
}

void ipc_notify_focus(struct qw_server *server, struct qw_view *view) {
	ipc_notify_window(server, view, "focus");
}

/* Admission results, overruns, errors and the like, to subscribed clients. */
static void handle_qos_event(struct wl_listener *listener, void *data) {
	struct qw_ipc *ipc = wl_container_of(listener, ipc, qos_event);
	struct qw_server *server = ipc->server;
	const struct qos_event *event = data;
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
		[QOS_EVENT_PARAMS_CHANGED] = "params",
		[QOS_EVENT_RELEASED] = "released",
	};
	const char *change =
			(size_t)event->type < sizeof(names) / sizeof(names[0]) ? names[event->type] : NULL;
	if (!change) {
		return;
	}
	struct json_object *obj = json_object_new_object();
	json_object_object_add(obj, "event", json_object_new_string("qos"));
	json_object_object_add(obj, "change", json_object_new_string(change));
	json_object_object_add(obj, "reserve", ipc_json_text(event->reserve));
	json_object_object_add(obj, "pid", json_object_new_int(event->pid));
	json_object_object_add(obj, "used_us", json_object_new_int64(event->used_us));
	json_object_object_add(obj, "message", ipc_json_text(event->message));
	struct qos_reserve_info info;
	if (event->type == QOS_EVENT_PARAMS_CHANGED && event->reserve &&
			qos_link_reserve_info(server, event->reserve, &info)) {
		/* Adaptation and vblank periods change these with no one asking:
		 * a monitor shows them without polling. */
		json_object_object_add(obj, "period_us", json_object_new_int64(info.params.period_us));
		json_object_object_add(obj, "slice_us", json_object_new_int64(info.params.slice_us));
	}
	broadcast(server, obj);
	json_object_put(obj);
}
