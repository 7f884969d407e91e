#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ipc-client.h"

/* The compositor bounds a client's queue at 4 MiB; no line is longer. */
#define MAX_LINE (4u << 20)

struct ipc_client {
	int fd;
	char *buf;
	size_t len, cap;
};

struct ipc_client *ipc_client_connect(const char *path, char *err, size_t err_len) {
	if (!path) {
		path = getenv("QOSWAY_SOCK");
	}
	if (!path || !*path) {
		snprintf(err, err_len, "QOSWAY_SOCK is not set and no socket was given");
		return NULL;
	}
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(addr.sun_path)) {
		snprintf(err, err_len, "socket path too long: %s", path);
		return NULL;
	}
	memcpy(addr.sun_path, path, strlen(path) + 1);
	struct ipc_client *client = calloc(1, sizeof(*client));
	if (!client) {
		snprintf(err, err_len, "out of memory");
		return NULL;
	}
	client->cap = 65536;
	client->buf = malloc(client->cap);
	client->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (!client->buf || client->fd < 0) {
		snprintf(err, err_len, "cannot create a socket: %s",
				client->buf ? strerror(errno) : "out of memory");
		goto fail;
	}
	/* A unix socket connects at once or not at all, even non-blocking. */
	if (connect(client->fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		snprintf(err, err_len, "cannot connect to %s: %s", path, strerror(errno));
		goto fail;
	}
	return client;
fail:
	ipc_client_destroy(client);
	return NULL;
}

void ipc_client_destroy(struct ipc_client *client) {
	if (!client) {
		return;
	}
	if (client->fd >= 0) {
		close(client->fd);
	}
	free(client->buf);
	free(client);
}

int ipc_client_fd(const struct ipc_client *client) {
	return client->fd;
}

bool ipc_client_send(struct ipc_client *client, struct json_object *request) {
	const char *text = json_object_to_json_string_ext(request, JSON_C_TO_STRING_PLAIN);
	size_t len = strlen(text);
	char *line = malloc(len + 2);
	if (!line) {
		return false;
	}
	memcpy(line, text, len);
	line[len++] = '\n';
	size_t off = 0;
	bool ok = true;
	while (off < len) {
		ssize_t n = send(client->fd, line + off, len - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n < 0 && errno == EAGAIN) {
			/* Requests are short; the compositor reads them promptly. */
			struct pollfd pfd = { .fd = client->fd, .events = POLLOUT };
			if (poll(&pfd, 1, 1000) > 0) {
				continue;
			}
		}
		if (n <= 0) {
			ok = false;
			break;
		}
		off += (size_t)n;
	}
	free(line);
	return ok;
}

bool ipc_client_read(struct ipc_client *client) {
	for (;;) {
		if (client->len == client->cap) {
			if (client->cap >= MAX_LINE) {
				return false; /* not the compositor we know */
			}
			char *grown = realloc(client->buf, client->cap * 2);
			if (!grown) {
				return false;
			}
			client->buf = grown;
			client->cap *= 2;
		}
		ssize_t n = recv(client->fd, client->buf + client->len, client->cap - client->len, 0);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n < 0 && errno == EAGAIN) {
			return true;
		}
		if (n <= 0) {
			return false;
		}
		client->len += (size_t)n;
	}
}

struct json_object *ipc_client_next(struct ipc_client *client) {
	for (;;) {
		char *nl = memchr(client->buf, '\n', client->len);
		if (!nl) {
			return NULL;
		}
		*nl = '\0';
		struct json_object *obj = json_tokener_parse(client->buf);
		size_t used = (size_t)(nl - client->buf) + 1;
		memmove(client->buf, nl + 1, client->len - used);
		client->len -= used;
		/* A line that is not a JSON object is skipped, not trusted. */
		if (obj && json_object_is_type(obj, json_type_object)) {
			return obj;
		}
		json_object_put(obj);
	}
}

static int64_t now_ms(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct json_object *ipc_client_request(struct ipc_client *client, struct json_object *request,
		int timeout_ms, void (*on_event)(void *data, struct json_object *event), void *data,
		char *err, size_t err_len) {
	if (!ipc_client_send(client, request)) {
		snprintf(err, err_len, "cannot send to the compositor: %s", strerror(errno));
		return NULL;
	}
	int64_t deadline = now_ms() + timeout_ms;
	for (;;) {
		struct json_object *obj;
		while ((obj = ipc_client_next(client))) {
			if (!ipc_json_is_event(obj)) {
				return obj;
			}
			if (on_event) {
				on_event(data, obj);
			}
			json_object_put(obj);
		}
		int64_t left = deadline - now_ms();
		if (left <= 0) {
			snprintf(err, err_len, "no reply from the compositor within %d ms", timeout_ms);
			return NULL;
		}
		struct pollfd pfd = { .fd = client->fd, .events = POLLIN };
		if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR) {
			snprintf(err, err_len, "poll: %s", strerror(errno));
			return NULL;
		}
		if (!ipc_client_read(client)) {
			snprintf(err, err_len, "the compositor closed the connection");
			return NULL;
		}
	}
}

struct json_object *ipc_client_command(const char *command) {
	struct json_object *req = json_object_new_object();
	if (req) {
		json_object_object_add(req, "command", json_object_new_string(command));
	}
	return req;
}

bool ipc_json_is_event(struct json_object *obj) {
	return json_object_object_get_ex(obj, "event", NULL);
}

bool ipc_json_success(struct json_object *obj) {
	return ipc_json_bool(obj, "success");
}

const char *ipc_json_string(struct json_object *obj, const char *key) {
	struct json_object *v;
	if (!obj || !json_object_object_get_ex(obj, key, &v) ||
			!json_object_is_type(v, json_type_string)) {
		return "";
	}
	return json_object_get_string(v);
}

int64_t ipc_json_int(struct json_object *obj, const char *key) {
	struct json_object *v;
	if (!obj || !json_object_object_get_ex(obj, key, &v) ||
			!(json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double))) {
		return 0;
	}
	return json_object_get_int64(v);
}

bool ipc_json_bool(struct json_object *obj, const char *key) {
	struct json_object *v;
	return obj && json_object_object_get_ex(obj, key, &v) &&
			json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}

struct json_object *ipc_json_array(struct json_object *obj, const char *key) {
	struct json_object *v;
	return obj && json_object_object_get_ex(obj, key, &v) && json_object_is_type(v, json_type_array)
			? v
			: NULL;
}

size_t ipc_json_length(struct json_object *array) {
	return array ? json_object_array_length(array) : 0;
}
