/*
 * The IPC socket: framing (compositor/ipc/ipc.c) and every command
 * (ipc_commands.c), through a real connection to a dry-run compositor
 * (dry_server.h).  The input is sent as it is (one starting with byte 0xfe:
 * the rest repeated past the 64 KiB a request may have, so small inputs
 * reach the over-long path), then a newline and a last
 * {"command":"version"}.  Rules checked: every line that comes back is one
 * JSON object; a reply has a boolean "success", and a failed one a
 * non-empty one-line "error"; an event has a string "event"; the replies
 * end with the version's, unless the compositor closed the connection
 * after an over-long request.
 */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "dry_server.h"
#include "fuzz.h"

static const char last_request[] = "\n{\"command\":\"version\"}\n";

struct reader {
	char *buf;
	size_t len;
	bool closed, saw_last;
	size_t replies;
};

static void check_line(struct reader *r, const char *line, size_t len) {
	struct json_tokener *tok = json_tokener_new();
	struct json_object *obj = tok ? json_tokener_parse_ex(tok, line, (int)len) : NULL;
	FUZZ_RULE(obj && json_tokener_get_error(tok) == json_tokener_success &&
					json_tokener_get_parse_end(tok) == len &&
					json_object_is_type(obj, json_type_object),
			"not one JSON object: %.*s", (int)len, line);
	struct json_object *v;
	if (json_object_object_get_ex(obj, "event", &v)) {
		FUZZ_RULE(json_object_is_type(v, json_type_string), "event without a name: %s", line);
	} else {
		r->replies++;
		FUZZ_RULE(json_object_object_get_ex(obj, "success", &v) &&
						json_object_is_type(v, json_type_boolean),
				"reply without a boolean success: %s", line);
		if (!json_object_get_boolean(v)) {
			struct json_object *e;
			FUZZ_RULE(json_object_object_get_ex(obj, "error", &e) &&
							json_object_is_type(e, json_type_string) &&
							json_object_get_string_len(e) > 0 &&
							!strchr(json_object_get_string(e), '\n'),
					"failure without a one-line error: %s", line);
		}
		struct json_object *ver;
		r->saw_last = json_object_object_get_ex(obj, "version", &ver);
	}
	json_object_put(obj);
	json_tokener_free(tok);
}

static void read_replies(int fd, struct reader *r) {
	char chunk[65536];
	for (;;) {
		ssize_t n = recv(fd, chunk, sizeof(chunk), MSG_DONTWAIT);
		if (n == 0) {
			r->closed = true;
			return;
		}
		if (n < 0) {
			r->closed = errno != EAGAIN && errno != EINTR;
			return;
		}
		char *grown = realloc(r->buf, r->len + (size_t)n);
		if (!grown) {
			abort();
		}
		r->buf = grown;
		memcpy(r->buf + r->len, chunk, (size_t)n);
		r->len += (size_t)n;
		char *nl, *start = r->buf;
		while ((nl = memchr(start, '\n', r->len - (size_t)(start - r->buf)))) {
			check_line(r, start, (size_t)(nl - start));
			start = nl + 1;
		}
		r->len -= (size_t)(start - r->buf);
		memmove(r->buf, start, r->len);
	}
}

/* Sends what fits now; returns how much was sent. */
static size_t send_some(int fd, const char *data, size_t len) {
	ssize_t n = send(fd, data, len, MSG_DONTWAIT | MSG_NOSIGNAL);
	return n > 0 ? (size_t)n : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
	if (size > 16384) {
		return 0;
	}
	struct qw_server *server = dry_server_get();
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", server->ipc_socket_path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
		fprintf(stderr, "cannot connect to the IPC socket: %s\n", strerror(errno));
		abort();
	}
	size_t body = size;
	if (size > 1 && data[0] == 0xfe) {
		data++;
		size--;
		body = size * (66000 / size + 1);
	}
	size_t total = body + sizeof(last_request) - 1;
	char *out = malloc(total);
	if (!out) {
		abort();
	}
	for (size_t off = 0; off < body; off += size) {
		memcpy(out + off, data, size);
	}
	memcpy(out + body, last_request, sizeof(last_request) - 1);
	struct reader r = { 0 };
	size_t sent = 0;
	/* Until the version's reply or the compositor closes; a bound on the
	 * rounds makes a request that is never answered a finding too. */
	for (int round = 0; round < 100000 && !r.saw_last && !r.closed; round++) {
		if (sent < total) {
			sent += send_some(fd, out + sent, total - sent);
		}
		dry_server_dispatch(server);
		read_replies(fd, &r);
		if (!r.saw_last && !r.closed && sent == total) {
			struct pollfd pfd = { .fd = fd, .events = POLLIN };
			poll(&pfd, 1, 0);
		}
	}
	FUZZ_RULE(r.saw_last || r.closed, "no reply to the last request (%zu replies)", r.replies);
	close(fd);
	/* The compositor sees the hang-up and forgets the connection. */
	dry_server_dispatch(server);
	free(out);
	free(r.buf);
	return 0;
}
