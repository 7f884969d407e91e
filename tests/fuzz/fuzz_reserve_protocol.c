/*
 * qosway-reserve-v1 in-process (compositor/qos_bridge/reserve_protocol.c): a client
 * on a socketpair to the dry-run compositor's real wl_display
 * (dry_server.h) binds the global and sends the requests the input spells,
 * as wire messages, arguments as given (also invalid ones: unknown object
 * ids, enum values, names that are not UTF-8).  A protocol error ends the
 * connection and the next request starts another.  Rules checked: with no
 * QoS manager every definition and join is refused, so the process holds
 * nothing through the protocol (reserve_protocol_held_ppm, _placed);
 * ASan and UBSan watch the rest.
 */
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dry_server.h"
#include "fuzz.h"
#include "qos_bridge/reserve_protocol.h"

#define REGISTRY_ID 2
#define MANAGER_ID 3
#define FIRST_RESERVE_ID 4
#define RESERVE_IDS 8

struct conn {
	struct wl_client *client;
	int fd; /* the client's end */
	struct wl_listener destroy;
	bool gone;
};

struct msg {
	uint32_t words[1024];
	size_t n;
};

static void handle_client_destroy(struct wl_listener *listener, void *data) {
	struct conn *c = wl_container_of(listener, c, destroy);
	wl_list_remove(&c->destroy.link);
	c->client = NULL;
	c->gone = true;
}

static void put(struct msg *m, uint32_t v) {
	if (m->n < sizeof(m->words) / sizeof(m->words[0])) {
		m->words[m->n++] = v;
	}
}

/* A wire string: length with the NUL, bytes, padding to 4. */
static void put_string(struct msg *m, const char *s, size_t len) {
	put(m, (uint32_t)len + 1);
	uint32_t word = 0;
	for (size_t i = 0; i <= len; i++) {
		uint8_t byte = i < len ? (uint8_t)s[i] : 0;
		word |= (uint32_t)byte << (8 * (i % 4));
		if (i % 4 == 3 || i == len) {
			put(m, word);
			word = 0;
		}
	}
}

static void begin(struct msg *m, uint32_t id) {
	m->n = 0;
	put(m, id);
	put(m, 0);
}

static void send_msg(struct conn *c, struct msg *m, uint32_t opcode) {
	m->words[1] = (uint32_t)(m->n * 4) << 16 | opcode;
	const char *p = (const char *)m->words;
	size_t left = m->n * 4;
	while (left > 0) {
		ssize_t n = send(c->fd, p, left, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n <= 0) {
			return; /* full or gone: the message is dropped, as a dying client's */
		}
		p += n;
		left -= (size_t)n;
	}
}

/* Reads what the compositor sent; returns the name of the reserve global, or 0. */
static uint32_t drain(struct conn *c) {
	static uint8_t buf[1 << 16];
	uint32_t global = 0;
	ssize_t n = -1;
	size_t have = 0;
	while (c->fd >= 0 && (n = recv(c->fd, buf + have, sizeof(buf) - have, MSG_DONTWAIT)) != 0) {
		if (n < 0) {
			c->gone = c->gone || (errno != EAGAIN && errno != EINTR);
			break;
		}
		have += (size_t)n;
		size_t off = 0;
		while (have - off >= 8) {
			uint32_t hdr[2];
			memcpy(hdr, buf + off, 8);
			size_t size = hdr[1] >> 16;
			if (size < 8 || have - off < size) {
				break;
			}
			/* wl_registry.global: name, interface, version. */
			if (hdr[0] == REGISTRY_ID && (hdr[1] & 0xffff) == 0 && size >= 16) {
				uint32_t name, len;
				memcpy(&name, buf + off + 8, 4);
				memcpy(&len, buf + off + 12, 4);
				if (len <= size - 16 && len > 0 &&
						strncmp((const char *)buf + off + 16, "qosway_reserve_manager_v1", len) ==
								0) {
					global = name;
				}
			}
			off += size;
		}
		memmove(buf, buf + off, have - off);
		have -= off;
	}
	if (c->fd >= 0 && n == 0) {
		c->gone = true; /* closed after a protocol error */
	}
	return global;
}

static void disconnect(struct conn *c) {
	if (c->client) {
		wl_client_destroy(c->client);
	}
	if (c->fd >= 0) {
		close(c->fd);
		c->fd = -1;
	}
}

/* A new client bound to the global at version 2. */
static bool start(struct qw_server *server, struct conn *c) {
	int fds[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
		return false;
	}
	*c = (struct conn){ .fd = fds[1] };
	c->client = wl_client_create(server->wl_display, fds[0]);
	if (!c->client) {
		close(fds[0]);
		close(fds[1]);
		c->fd = -1;
		return false;
	}
	c->destroy.notify = handle_client_destroy;
	wl_client_add_destroy_listener(c->client, &c->destroy);
	struct msg m;
	begin(&m, 1);
	put(&m, REGISTRY_ID);
	send_msg(c, &m, 1); /* wl_display.get_registry */
	dry_server_dispatch(server);
	uint32_t global = drain(c);
	if (!global) {
		fprintf(stderr, "no qosway_reserve_manager_v1 global\n");
		abort();
	}
	static const char iface[] = "qosway_reserve_manager_v1";
	begin(&m, REGISTRY_ID);
	put(&m, global);
	put_string(&m, iface, sizeof(iface) - 1);
	put(&m, 2);
	put(&m, MANAGER_ID);
	send_msg(c, &m, 0); /* wl_registry.bind */
	dry_server_dispatch(server);
	drain(c);
	return !c->gone;
}

struct input {
	const uint8_t *p;
	size_t left;
};

static uint8_t byte(struct input *in) {
	if (!in->left) {
		return 0;
	}
	in->left--;
	return *in->p++;
}

static uint32_t word(struct input *in) {
	uint32_t v = 0;
	for (int i = 0; i < 4; i++) {
		v |= (uint32_t)byte(in) << (8 * i);
	}
	return v;
}

/* Small values most of the time: the ones the handlers tell apart. */
static uint32_t value(struct input *in) {
	uint8_t k = byte(in);
	return k < 128 ? k % 8 : k < 192 ? (uint32_t)k * 997 : word(in);
}

static void one_request(struct conn *c, struct input *in) {
	struct msg m;
	uint8_t op = byte(in);
	uint32_t id = FIRST_RESERVE_ID + byte(in) % RESERVE_IDS;
	switch (op % 12) {
	case 0: { /* get_reserve */
		char name[80];
		size_t len = byte(in) % 72;
		for (size_t i = 0; i < len; i++) {
			name[i] = (char)byte(in);
		}
		begin(&m, MANAGER_ID);
		put(&m, id);
		put_string(&m, name, len);
		send_msg(c, &m, 1);
		break;
	}
	case 1: /* set_params */
		begin(&m, id);
		for (int i = 0; i < 6; i++) {
			put(&m, i == 2 || i == 3 ? (byte(in) & 1 ? word(in) : 1000 * value(in)) : value(in));
		}
		send_msg(c, &m, 1);
		break;
	case 2: /* join */
	case 3: /* leave */
		begin(&m, id);
		put(&m, byte(in) & 1 ? (uint32_t)getpid() : value(in));
		send_msg(c, &m, op % 12 == 2 ? 2 : 3);
		break;
	case 4: /* set_feedback */
	case 5: /* set_adaptive */
	case 6: /* set_period_source */
	case 7: /* work_duration */
		begin(&m, id);
		put(&m, value(in));
		if (op % 12 == 5 || op % 12 == 7) {
			put(&m, byte(in) & 1 ? word(in) : 10000 * value(in));
		}
		if (op % 12 == 5) {
			put(&m, byte(in) & 1 ? word(in) : 10000 * value(in));
		}
		send_msg(c, &m, op % 12);
		break;
	case 8: /* destroy */
		begin(&m, id);
		send_msg(c, &m, 0);
		break;
	case 9: /* the manager's destroy */
		begin(&m, MANAGER_ID);
		send_msg(c, &m, 0);
		break;
	case 10: { /* a message of raw words to any object */
		begin(&m, byte(in) % 8);
		for (size_t n = byte(in) % 8; n > 0; n--) {
			put(&m, word(in));
		}
		send_msg(c, &m, byte(in) % 10);
		break;
	}
	default: /* the client goes away */
		disconnect(c);
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
	if (size > 4096) {
		return 0;
	}
	struct qw_server *server = dry_server_get();
	struct input in = { data, size };
	struct conn c = { .fd = -1, .gone = true };
	while (in.left > 0) {
		if (c.gone || c.fd < 0) {
			disconnect(&c);
			if (!start(server, &c)) {
				break;
			}
		}
		one_request(&c, &in);
		dry_server_dispatch(server);
		drain(&c);
		FUZZ_RULE(reserve_protocol_held_ppm(server, getpid(), "") == 0 &&
						!reserve_protocol_placed(server, getpid()),
				"a dry run holds a reserve");
	}
	disconnect(&c);
	dry_server_dispatch(server);
	return 0;
}
