/*
 * qosctl: command-line client for the qosway IPC (docs/ipc.md).
 * Exit status: 0 on success, 1 when the compositor refused the request,
 * 2 on bad usage, 3 when the compositor cannot be reached.
 */
#include <errno.h>
#include <glib.h>
#include <json.h>
#include <limits.h>
#include <locale.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <wchar.h>

#include "qos/params.h"

/* The options before COMMAND. */
struct options {
	const char *sock;
	bool json;
};

/*
 * One row per command: `qosctl help` lists the rows in order, and main()
 * runs a command through its row alone, so a new command is a row and its
 * builder (or runner).
 */
struct command {
	const char *name;
	const char *args;
	const char *help; /* lines after the first start with '\n' */
	/* Adds the arguments after argv[0] (the name) to the request; false,
	 * after saying why, on bad usage.  NULL: no request of its own. */
	bool (*build)(struct json_object *req, int argc, char **argv);
	/* Prints a successful reply (unless --json); NULL prints nothing. */
	void (*print)(struct json_object *reply);
	/* Runs a command that is more than one request and its reply; NULL
	 * sends build's request and prints the reply with print. */
	int (*run)(const struct command *cmd, const struct options *opts, int argc, char **argv);
	/* How many words from argv[0] on travel as text; NULL: all. */
	int (*text_words)(int argc, char **argv);
};

static void print_usage(FILE *out);
static const struct command *find_command(const char *name);

struct conn {
	int fd;
	char buf[65536];
	size_t len;
};

static int die_usage(const char *fmt, const char *arg) {
	fprintf(stderr, "qosctl: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	print_usage(stderr);
	return 2;
}

static bool conn_open(struct conn *c, const char *path) {
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(addr.sun_path)) {
		fprintf(stderr, "qosctl: socket path too long: %s\n", path);
		return false;
	}
	strcpy(addr.sun_path, path);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		fprintf(stderr, "qosctl: cannot connect to %s: %s\n", path, strerror(errno));
		return false;
	}
	c->len = 0;
	return true;
}

static bool conn_send(struct conn *c, const char *line) {
	size_t len = strlen(line), off = 0;
	while (off < len) {
		ssize_t n = send(c->fd, line + off, len - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n <= 0) {
			fprintf(stderr, "qosctl: write failed: %s\n", strerror(errno));
			return false;
		}
		off += n;
	}
	if (len == 0 || line[len - 1] != '\n') {
		return conn_send(c, "\n");
	}
	return true;
}

/* Read one reply line into a newly allocated string (NULL on EOF/error). */
static char *conn_read_line(struct conn *c) {
	for (;;) {
		char *nl = memchr(c->buf, '\n', c->len);
		if (nl) {
			size_t n = nl - c->buf;
			char *line = strndup(c->buf, n);
			memmove(c->buf, nl + 1, c->len - n - 1);
			c->len -= n + 1;
			return line;
		}
		if (c->len == sizeof(c->buf)) {
			/* Replies can be long (many windows): grow via a heap copy. */
			size_t cap = c->len * 2;
			char *big = malloc(cap);
			if (!big) {
				return NULL;
			}
			memcpy(big, c->buf, c->len);
			size_t len = c->len;
			for (;;) {
				if (len == cap) {
					cap *= 2;
					char *grown = realloc(big, cap);
					if (!grown) {
						free(big);
						return NULL;
					}
					big = grown;
				}
				ssize_t n = recv(c->fd, big + len, cap - len, 0);
				if (n <= 0) {
					free(big);
					return NULL;
				}
				char *end = memchr(big + len, '\n', n);
				len += n;
				if (end) {
					*end = '\0';
					/* Anything after the line is discarded: one request,
					 * one reply. */
					c->len = 0;
					return big;
				}
			}
		}
		ssize_t n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n <= 0) {
			return NULL;
		}
		c->len += n;
	}
}

static bool parse_id(const char *s, long long *out) {
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || *end || end == s || v <= 0 || v > UINT32_MAX) {
		return false;
	}
	*out = v;
	return true;
}

/*
 * s as it may be printed to a terminal: any client picks its own title and
 * app id, and an escape sequence in one (set the terminal's title, write its
 * clipboard) must not act on the terminal of whoever lists the windows.  C0
 * and C1 controls and DEL become '?'.  The result lives until the 8th call
 * after, enough for one printf; text past 1 KiB is cut at a character.
 * NULL (a JSON null) shows as "-".
 */
static const char *shown(const char *s) {
	if (!s) {
		return "-";
	}
	static char bufs[8][1024];
	static unsigned next;
	char *out = bufs[next++ % 8];
	size_t n = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p && n + 1 < sizeof(bufs[0]); p++) {
		if (*p < 0x20 || *p == 0x7f) {
			out[n++] = '?';
		} else if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
			out[n++] = '?';
			p++;
		} else {
			out[n++] = (char)*p;
		}
	}
	/* Cut mid-character: drop the partial sequence. */
	if (n + 1 >= sizeof(bufs[0])) {
		size_t start = n;
		while (start > 0 && ((unsigned char)out[start - 1] & 0xc0) == 0x80) {
			start--;
		}
		if (start > 0 && (unsigned char)out[start - 1] >= 0xc0) {
			n = start - 1;
		}
	}
	out[n] = '\0';
	return out;
}

static const char *str_field(struct json_object *obj, const char *key) {
	struct json_object *v;
	if (!json_object_object_get_ex(obj, key, &v) || !v) {
		return "-";
	}
	return shown(json_object_get_string(v));
}

/* The next character of UTF-8 text s (valid: the compositor sends only that). */
static size_t next_char(const char *s, wchar_t *wc) {
	const unsigned char *p = (const unsigned char *)s;
	size_t len = *p < 0x80 ? 1 : *p < 0xe0 ? 2 : *p < 0xf0 ? 3 : 4;
	uint32_t cp = len == 1 ? *p : *p & (0x3f >> (len - 1));
	size_t i = 1;
	for (; i < len && (p[i] & 0xc0) == 0x80; i++) {
		cp = cp << 6 | (p[i] & 0x3f);
	}
	*wc = (wchar_t)cp;
	return i;
}

/* Terminal columns a character takes: wide East Asian ones two, marks none. */
static int columns_of(wchar_t wc) {
	int w = wcwidth(wc);
	return w < 0 ? 1 : w;
}

/*
 * A table cell: s cut to at most width terminal columns (never inside a
 * character, and before a wide character that would cross the edge) and
 * padded with spaces to width, where printf's "%-20.20s" counts bytes.
 * Widths come from the C.UTF-8 locale main() sets for LC_CTYPE.
 */
static const char *cell(const char *s, int width) {
	static char bufs[4][256];
	static unsigned next;
	char *out = bufs[next++ % 4];
	size_t n = 0;
	int cols = 0;
	for (const char *p = s; *p;) {
		wchar_t wc;
		size_t len = next_char(p, &wc);
		int w = columns_of(wc);
		if (cols + w > width || n + len + (size_t)(width - cols) >= sizeof(bufs[0])) {
			break;
		}
		memcpy(out + n, p, len);
		n += len;
		p += len;
		cols += w;
	}
	for (; cols < width && n + 1 < sizeof(bufs[0]); cols++) {
		out[n++] = ' ';
	}
	out[n] = '\0';
	return out;
}

/*
 * Replies are read as untrusted input, like everything else: another program
 * may listen on the socket, or a compositor of another version.  A missing
 * key or a value of another JSON type reads as 0, "-" or an empty list, and
 * json-c's array calls (which abort on anything but an array) only ever see
 * arrays.
 */
static int int_field(struct json_object *obj, const char *key) {
	struct json_object *v;
	return json_object_object_get_ex(obj, key, &v) ? json_object_get_int(v) : 0;
}

static double double_field(struct json_object *obj, const char *key) {
	struct json_object *v;
	double d = json_object_object_get_ex(obj, key, &v) ? json_object_get_double(v) : 0.0;
	return d == d ? d : 0.0;
}

/* A count or a time, as a whole number (clamped, where a cast would overflow). */
static long long count_field(struct json_object *obj, const char *key) {
	double d = double_field(obj, key);
	return d > 1e18 ? (long long)1e18 : d < -1e18 ? (long long)-1e18 : (long long)d;
}

/* obj[key] if it is an array, else NULL. */
static struct json_object *array_field(struct json_object *obj, const char *key) {
	struct json_object *v;
	return json_object_object_get_ex(obj, key, &v) && json_object_is_type(v, json_type_array)
			? v
			: NULL;
}

static size_t array_length(struct json_object *array) {
	return array ? json_object_array_length(array) : 0;
}

static bool bool_field(struct json_object *obj, const char *key) {
	struct json_object *v;
	return json_object_object_get_ex(obj, key, &v) && json_object_get_boolean(v);
}

static void print_windows(struct json_object *reply) {
	struct json_object *list = array_field(reply, "windows");
	printf("%-5s %-9s %-16s %6s %6s %-3s %-8s %-20s %-20s %s\n", "ID", "CLASS", "RESERVE", "CPU%",
			"SRV%", "FOC", "PID", "APP_ID", "GEOMETRY", "TITLE");
	for (size_t i = 0; i < array_length(list); i++) {
		struct json_object *w = json_object_array_get_idx(list, i);
		struct json_object *geo;
		json_object_object_get_ex(w, "geometry", &geo);
		char geometry[64];
		snprintf(geometry, sizeof(geometry), "%dx%d+%d+%d", int_field(geo, "width"),
				int_field(geo, "height"), int_field(geo, "x"), int_field(geo, "y"));
		/* "!": real-time given back while idle and refused on waking. */
		char class[16];
		snprintf(class, sizeof(class), "%s%s", str_field(w, "class"),
				bool_field(w, "held_back") ? "!" : "");
		printf("%-5d %-9s %s %6.1f %6.1f %-3s %-8d %s %-20s %s\n", int_field(w, "id"), class,
				cell(str_field(w, "reserve"), 16), double_field(w, "cpu_percent"),
				double_field(w, "server_cpu_percent"), bool_field(w, "focused") ? "*" : "",
				int_field(w, "pid"), cell(str_field(w, "app_id"), 20), geometry,
				str_field(w, "title"));
	}
}

static void print_reserves(struct json_object *reply) {
	struct json_object *list = array_field(reply, "reserves");
	printf("%-20s %-8s %-4s %10s %10s %10s %-9s %s\n", "RESERVE", "POLICY", "OK", "USED_US",
			"BILLED_US", "LAST_US", "MEMBERS", "PARAMS");
	for (size_t i = 0; i < array_length(list); i++) {
		struct json_object *r = json_object_array_get_idx(list, i);
		struct json_object *members = array_field(r, "members");
		char pids[64] = "";
		size_t off = 0;
		for (size_t m = 0; m < array_length(members) && off < 50; m++) {
			off += snprintf(pids + off, sizeof(pids) - off, "%s%d", m ? "," : "",
					int_field(json_object_array_get_idx(members, m), "pid"));
		}
		const char *policy = str_field(r, "policy");
		bool is_qos = strcmp(policy, "qos") == 0;
		printf("%s %-8s %-4s %10lld %10lld %10lld %-9s %s\n", cell(str_field(r, "name"), 20),
				policy, is_qos ? (bool_field(r, "granted") ? "yes" : "no") : "-",
				count_field(r, "used_us"), count_field(r, "billed_us"),
				count_field(r, "last_used_us"), pids[0] ? pids : "-", str_field(r, "params"));
	}
}

static void print_clients(struct json_object *reply) {
	struct json_object *list = array_field(reply, "clients");
	printf("%-8s %-3s %-3s %-16s %12s %12s %s\n", "PID", "RT", "EXH", "RESERVE", "SERVER_MS",
			"BILLED_MS", "APP_ID");
	for (size_t i = 0; i < array_length(list); i++) {
		struct json_object *c = json_object_array_get_idx(list, i);
		printf("%-8d %-3s %-3s %s %12.1f %12.1f %s\n", int_field(c, "pid"),
				bool_field(c, "realtime") ? "*" : "", bool_field(c, "exhausted") ? "*" : "",
				cell(str_field(c, "reserve"), 16), count_field(c, "server_cpu_us") / 1000.0,
				count_field(c, "billed_us") / 1000.0, str_field(c, "app_id"));
	}
}

static void print_scheduler(struct json_object *reply) {
	const char *note = str_field(reply, "boost_note");
	bool has_note = strcmp(note, "-") != 0;
	printf("serve-by-reserve %s, bill %s, boost %s%s%s\n",
			bool_field(reply, "serve_by_reserve") ? "on" : "off",
			bool_field(reply, "bill") ? "on" : "off",
			bool_field(reply, "boost") && bool_field(reply, "boost_available") ? "on" : "off",
			has_note ? ": " : "", has_note ? note : "");
	long long cpu = count_field(reply, "cpu_us");
	long long clients = count_field(reply, "clients_us");
	printf("compositor CPU %.1f ms: clients %.1f ms (%.1f%%), itself %.1f ms\n", cpu / 1000.0,
			clients / 1000.0, cpu ? 100.0 * (double)clients / (double)cpu : 0.0,
			count_field(reply, "own_us") / 1000.0);
	printf("clients %d (real-time %d, exhausted %d), boosted %.1f ms in %lld boosts, "
		   "best effort every %d frame(s)%s\n",
			int_field(reply, "clients"), int_field(reply, "realtime_clients"),
			int_field(reply, "exhausted_clients"), count_field(reply, "boosted_us") / 1000.0,
			count_field(reply, "boosts"), int_field(reply, "best_effort_divisor"),
			bool_field(reply, "holding_commits") ? ", commits held" : "");
}

static void print_capacity(struct json_object *reply) {
	printf("granted %.1f%% of %.1f%% (%d CPUs, %.1f%% of each kept back)\n",
			double_field(reply, "granted_ppm") / 10000.0,
			double_field(reply, "total_ppm") / 10000.0, int_field(reply, "ncpus"),
			double_field(reply, "rsvd_ppm") / 10000.0);
}

static void print_outputs(struct json_object *reply) {
	struct json_object *list = array_field(reply, "outputs");
	for (size_t i = 0; i < array_length(list); i++) {
		struct json_object *o = json_object_array_get_idx(list, i);
		printf("%s: %dx%d@%.3fHz at %d,%d scale %s (%s %s)\n", str_field(o, "name"),
				int_field(o, "width"), int_field(o, "height"), int_field(o, "refresh_mhz") / 1000.0,
				int_field(o, "x"), int_field(o, "y"), str_field(o, "scale"), str_field(o, "make"),
				str_field(o, "model"));
	}
}

static void print_workspaces(struct json_object *reply) {
	struct json_object *list = array_field(reply, "outputs");
	for (size_t i = 0; i < array_length(list); i++) {
		struct json_object *o = json_object_array_get_idx(list, i);
		printf("%s: workspace %d shown\n", str_field(o, "output"), int_field(o, "shown"));
		struct json_object *ws = array_field(o, "workspaces");
		for (size_t j = 0; j < array_length(ws); j++) {
			struct json_object *w = json_object_array_get_idx(ws, j);
			struct json_object *ids = array_field(w, "windows");
			printf("  %d:", int_field(w, "number"));
			for (size_t k = 0; k < array_length(ids); k++) {
				printf(" %d", json_object_get_int(json_object_array_get_idx(ids, k)));
			}
			printf("\n");
		}
	}
}

static void print_inputs(struct json_object *reply) {
	struct json_object *list = array_field(reply, "devices");
	for (size_t i = 0; i < array_length(list); i++) {
		struct json_object *d = json_object_array_get_idx(list, i);
		printf("%-12s %s%s\n", str_field(d, "type"), str_field(d, "name"),
				bool_field(d, "virtual") ? " (virtual)" : "");
	}
	struct json_object *seat, *caps;
	if (json_object_object_get_ex(reply, "seat", &seat) &&
			json_object_object_get_ex(seat, "capabilities", &caps)) {
		printf("seat capabilities:");
		for (size_t i = 0; i < array_length(caps); i++) {
			printf(" %s", json_object_get_string(json_object_array_get_idx(caps, i)));
		}
		printf("\n");
	}
}

static void print_version(struct json_object *reply) {
	printf("qosway %s\n", str_field(reply, "version"));
}

static void print_started(struct json_object *reply) {
	printf("%d\n", int_field(reply, "pid"));
	struct json_object *refused;
	if (json_object_object_get_ex(reply, "refused", &refused)) {
		fprintf(stderr, "qosctl: started without the reserve: %s\n",
				shown(json_object_get_string(refused)));
	}
}

static void print_class(struct json_object *reply) {
	printf("pid %d: %s\n", int_field(reply, "pid"), str_field(reply, "class"));
}

static bool valid_target(const char *t) {
	long long id;
	if (strncmp(t, "pid:", 4) == 0 || strncmp(t, "tid:", 4) == 0) {
		return parse_id(t + 4, &id);
	}
	return parse_id(t, &id);
}

/* Where CMD starts in "exec [-r RESERVE] [--] CMD [ARG...]" (argc if missing). */
static int exec_command_start(int argc, char **argv) {
	int first = 1;
	if (first + 1 < argc && strcmp(argv[first], "-r") == 0) {
		first += 2;
	}
	if (first < argc && strcmp(argv[first], "--") == 0) {
		first++;
	}
	return first;
}

/*
 * exec's command words: as text when they all are, else every one in
 * base64 (a program or file name in another encoding, which a JSON string
 * cannot carry; docs/ipc.md).
 */
static void add_command(struct json_object *req, int argc, char **argv) {
	bool text = true;
	for (int i = 0; i < argc; i++) {
		text = text && qos_utf8_valid(argv[i]);
	}
	struct json_object *args = json_object_new_array();
	json_object_object_add(req, text ? "argv" : "argv_base64", args);
	for (int i = 0; i < argc; i++) {
		gchar *encoded = text ? NULL : g_base64_encode((const guchar *)argv[i], strlen(argv[i]));
		json_object_array_add(args, json_object_new_string(text ? argv[i] : encoded));
		g_free(encoded);
	}
}

/* "usage: qosctl NAME ARGS" from the command's row; always false. */
static bool usage_error(const char *name) {
	fprintf(stderr, "qosctl: usage: qosctl %s %s\n", name, find_command(name)->args);
	return false;
}

static bool build_no_args(struct json_object *req, int argc, char **argv) {
	if (argc != 1) {
		fprintf(stderr, "qosctl: '%s' takes no arguments\n", argv[0]);
		return false;
	}
	return true;
}

static bool add_window_id(struct json_object *req, const char *arg) {
	long long id;
	if (!parse_id(arg, &id)) {
		fprintf(stderr, "qosctl: invalid window id '%s'\n", arg);
		return false;
	}
	json_object_object_add(req, "id", json_object_new_int64(id));
	return true;
}

static bool build_window(struct json_object *req, int argc, char **argv) {
	if (argc != 2) {
		return usage_error(argv[0]);
	}
	return add_window_id(req, argv[1]);
}

/* set and join: TARGET, then the class or reserve under key. */
static bool build_target(struct json_object *req, int argc, char **argv, const char *key) {
	if (argc != 3) {
		return usage_error(argv[0]);
	}
	if (!valid_target(argv[1])) {
		fprintf(stderr, "qosctl: invalid target '%s': want a window id, pid:N or tid:N\n", argv[1]);
		return false;
	}
	json_object_object_add(req, "target", json_object_new_string(argv[1]));
	json_object_object_add(req, key, json_object_new_string(argv[2]));
	return true;
}

static bool build_set(struct json_object *req, int argc, char **argv) {
	return build_target(req, argc, argv, "class");
}

static bool build_join(struct json_object *req, int argc, char **argv) {
	return build_target(req, argc, argv, "reserve");
}

/* The KEY=VALUE words go as one string, the way a qosrc line holds them. */
static bool build_reserve(struct json_object *req, int argc, char **argv) {
	if (argc < 2) {
		return usage_error(argv[0]);
	}
	char params[4096] = "";
	size_t off = 0;
	for (int i = 2; i < argc; i++) {
		if (!strchr(argv[i], '=')) {
			fprintf(stderr, "qosctl: '%s' is not KEY=VALUE\n", argv[i]);
			return false;
		}
		int n = snprintf(params + off, sizeof(params) - off, "%s%s", i > 2 ? " " : "", argv[i]);
		if (n < 0 || (size_t)n >= sizeof(params) - off) {
			fprintf(stderr, "qosctl: parameters too long\n");
			return false;
		}
		off += n;
	}
	json_object_object_add(req, "name", json_object_new_string(argv[1]));
	json_object_object_add(req, "params", json_object_new_string(params));
	return true;
}

static bool build_exec(struct json_object *req, int argc, char **argv) {
	int first = exec_command_start(argc, argv);
	if (first > 1 && strcmp(argv[1], "-r") == 0) {
		json_object_object_add(req, "reserve", json_object_new_string(argv[2]));
	}
	if (first >= argc) {
		fprintf(stderr, "qosctl: usage: qosctl exec -- CMD [ARGS...]\n");
		return false;
	}
	add_command(req, argc - first, argv + first);
	return true;
}

static bool add_workspace_number(struct json_object *req, const char *arg) {
	long long number;
	if (!parse_id(arg, &number)) {
		fprintf(stderr, "qosctl: invalid workspace number '%s'\n", arg);
		return false;
	}
	json_object_object_add(req, "number", json_object_new_int64(number));
	return true;
}

static bool build_workspace(struct json_object *req, int argc, char **argv) {
	if (argc != 2) {
		return usage_error(argv[0]);
	}
	return add_workspace_number(req, argv[1]);
}

static bool build_move_to_workspace(struct json_object *req, int argc, char **argv) {
	if (argc != 3) {
		return usage_error(argv[0]);
	}
	return add_window_id(req, argv[1]) && add_workspace_number(req, argv[2]);
}

/* Build the request for argv; returns NULL (after printing why) on bad usage. */
static struct json_object *build_request(int argc, char **argv) {
	const struct command *cmd = find_command(argv[0]);
	if (!cmd || !cmd->build) {
		fprintf(stderr, "qosctl: unknown command '%s'\n", argv[0]);
		return NULL;
	}
	struct json_object *req = json_object_new_object();
	json_object_object_add(req, "command", json_object_new_string(cmd->name));
	if (!cmd->build(req, argc, argv)) {
		json_object_put(req);
		return NULL;
	}
	return req;
}

static int run_subscribe(struct conn *c) {
	/* The first line is the subscribe reply; events follow until EOF. */
	char *line;
	bool first = true;
	while ((line = conn_read_line(c))) {
		if (first) {
			first = false;
			struct json_object *reply = json_tokener_parse(line);
			struct json_object *ok;
			bool success = reply && json_object_object_get_ex(reply, "success", &ok) &&
					json_object_get_boolean(ok);
			json_object_put(reply);
			if (!success) {
				fprintf(stderr, "qosctl: subscribe failed: %s\n", shown(line));
				free(line);
				return 1;
			}
		} else {
			/* Printed as json-c writes it: whatever came, the terminal or
			 * the reader gets one line of JSON, control bytes escaped. */
			struct json_object *event = json_tokener_parse(line);
			if (event) {
				printf("%s\n",
						json_object_to_json_string_ext(event,
								JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
				fflush(stdout);
			} else {
				fprintf(stderr, "qosctl: malformed event: %s\n", shown(line));
			}
			json_object_put(event);
		}
		free(line);
	}
	return 0;
}

/* One request on an open connection; NULL (after a message) on failure. */
static struct json_object *request(struct conn *c, const char *line) {
	if (!conn_send(c, line)) {
		return NULL;
	}
	char *text = conn_read_line(c);
	if (!text) {
		fprintf(stderr, "qosctl: no reply from the compositor\n");
		return NULL;
	}
	struct json_object *reply = json_tokener_parse(text);
	if (!reply) {
		fprintf(stderr, "qosctl: malformed reply: %s\n", shown(text));
	}
	free(text);
	return reply;
}

/* Like the thesis's viewp in top mode: windows and reserves, refreshed. */
static int run_top(const char *sock, int iterations) {
	struct conn *c = calloc(1, sizeof(*c));
	if (!c || !conn_open(c, sock)) {
		free(c);
		return 3;
	}
	int status = 0;
	for (int n = 0; iterations <= 0 || n < iterations; n++) {
		struct json_object *windows = request(c, "{\"command\":\"windows\"}");
		struct json_object *reserves = request(c, "{\"command\":\"reserves\"}");
		struct json_object *capacity = request(c, "{\"command\":\"capacity\"}");
		if (!windows) {
			json_object_put(reserves);
			json_object_put(capacity);
			status = 3;
			break;
		}
		if (isatty(STDOUT_FILENO)) {
			fputs("\033[H\033[2J", stdout);
		}
		print_windows(windows);
		putchar('\n');
		struct json_object *ok;
		if (reserves && json_object_object_get_ex(reserves, "success", &ok) &&
				json_object_get_boolean(ok)) {
			print_reserves(reserves);
			if (capacity) {
				print_capacity(capacity);
			}
		} else {
			printf("QoS: %s\n", reserves ? str_field(reserves, "error") : "no reply");
		}
		fflush(stdout);
		json_object_put(windows);
		json_object_put(reserves);
		json_object_put(capacity);
		if (iterations <= 0 || n + 1 < iterations) {
			sleep(1);
		}
	}
	close(c->fd);
	free(c);
	return status;
}

/* Connects and sends line (which it frees); NULL after saying why. */
static struct conn *connect_and_send(const struct options *opts, char *line) {
	if (!opts->sock || !*opts->sock) {
		fprintf(stderr, "qosctl: QOSWAY_SOCK is not set and no -s SOCKET given\n");
		free(line);
		return NULL;
	}
	struct conn *c = calloc(1, sizeof(*c));
	if (!c || !conn_open(c, opts->sock) || !conn_send(c, line)) {
		free(line);
		free(c);
		return NULL;
	}
	free(line);
	return c;
}

/* The reply as --json or print shows it; the exit status it gives. */
static int print_reply(const struct options *opts, struct json_object *reply,
		void (*print)(struct json_object *reply)) {
	struct json_object *ok, *err;
	json_object_object_get_ex(reply, "success", &ok);
	bool success = json_object_get_boolean(ok);
	if (opts->json) {
		printf("%s\n",
				json_object_to_json_string_ext(reply,
						JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
								JSON_C_TO_STRING_NOSLASHESCAPE));
	} else if (success && print) {
		print(reply);
	}
	if (!success) {
		fprintf(stderr, "qosctl: %s\n",
				json_object_object_get_ex(reply, "error", &err) ? shown(json_object_get_string(err))
																: "request failed");
	}
	return success ? 0 : 1;
}

/* Sends line (which it frees), reads the one reply and prints it. */
static int send_and_print(const struct options *opts, char *line,
		void (*print)(struct json_object *reply)) {
	struct conn *c = connect_and_send(opts, line);
	if (!c) {
		return 3;
	}
	char *reply_text = conn_read_line(c);
	close(c->fd);
	free(c);
	if (!reply_text) {
		fprintf(stderr, "qosctl: no reply from the compositor\n");
		return 3;
	}
	struct json_object *reply = json_tokener_parse(reply_text);
	int status = 3;
	if (!reply || !json_object_object_get_ex(reply, "success", NULL)) {
		fprintf(stderr, "qosctl: malformed reply: %s\n", shown(reply_text));
	} else {
		status = print_reply(opts, reply, print);
	}
	json_object_put(reply);
	free(reply_text);
	return status;
}

/* argv's request as one line in *line; else the exit status (2 bad usage). */
static int request_line(int argc, char **argv, char **line) {
	struct json_object *req = build_request(argc, argv);
	if (!req) {
		return 2;
	}
	*line = strdup(json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN));
	json_object_put(req);
	return *line ? 0 : 1;
}

/* Most commands: one request built from the arguments, one reply printed. */
static int run_request(const struct command *cmd, const struct options *opts, int argc,
		char **argv) {
	char *line = NULL;
	int status = request_line(argc, argv, &line);
	if (status != 0) {
		return status;
	}
	return send_and_print(opts, line, cmd->print);
}

static int run_raw(const struct command *cmd, const struct options *opts, int argc, char **argv) {
	if (argc != 2) {
		return die_usage("%s", "usage: qosctl raw JSON");
	}
	char *line = strdup(argv[1]);
	if (!line) {
		return 1;
	}
	return send_and_print(opts, line, cmd->print);
}

static int run_subscribe_command(const struct command *cmd, const struct options *opts, int argc,
		char **argv) {
	char *line = NULL;
	int status = request_line(argc, argv, &line);
	if (status != 0) {
		return status;
	}
	struct conn *c = connect_and_send(opts, line);
	if (!c) {
		return 3;
	}
	status = run_subscribe(c);
	close(c->fd);
	free(c);
	return status;
}

static int run_top_command(const struct command *cmd, const struct options *opts, int argc,
		char **argv) {
	int iterations = 0;
	if (argc == 3 && strcmp(argv[1], "-n") == 0) {
		long long n;
		if (!parse_id(argv[2], &n)) {
			return die_usage("bad count '%s'", argv[2]);
		}
		iterations = (int)n;
	} else if (argc != 1) {
		return die_usage("%s", "usage: qosctl top [-n COUNT]");
	}
	if (!opts->sock || !*opts->sock) {
		fprintf(stderr, "qosctl: QOSWAY_SOCK is not set and no -s SOCKET given\n");
		return 3;
	}
	return run_top(opts->sock, iterations);
}

static int run_help(const struct command *cmd, const struct options *opts, int argc, char **argv) {
	print_usage(stdout);
	return 0;
}

/* help sends nothing, so whatever follows it may be any bytes. */
static int no_text_words(int argc, char **argv) {
	return 0;
}

/* Every command, in the order `qosctl help` lists them. */
static const struct command commands[] = {
	{ "windows", "", "list windows", build_no_args, print_windows },
	{ "outputs", "", "list outputs", build_no_args, print_outputs },
	{ "inputs", "", "list input devices and the seat's capabilities", build_no_args, print_inputs },
	{ "focus", "ID", "focus a window", build_window },
	{ "close", "ID", "ask a window to close", build_window },
	{ "workspaces", "", "list each output's workspaces and their windows", build_no_args,
			print_workspaces },
	{ "workspace", "N", "show workspace N (1-10) of the focused window's output", build_workspace },
	{ "move-to-workspace", "ID N", "move a window to workspace N of its output",
			build_move_to_workspace },
	{ "exec", "[-r RESERVE] -- CMD [ARG...]", "start a program in the session (in RESERVE)",
			build_exec, print_started, .text_words = exec_command_start },
	{ "set", "TARGET CLASS", "CLASS: realtime, fifo, idle, nice, paused, normal", build_set,
			print_class },
	{ "join", "TARGET RESERVE", "move a window's process into a reserve", build_join },
	{ "reserve", "NAME KEY=VALUE...", "create or modify a reserve (qosrc keys)", build_reserve },
	{ "reserves", "", "list reserves", build_no_args, print_reserves },
	{ "capacity", "", "granted and total real-time capacity", build_no_args, print_capacity },
	{ "clients", "",
			"Wayland clients: the compositor's CPU time spent\nfor each, and the part "
			"billed to its reserve",
			build_no_args, print_clients },
	{ "scheduler", "", "the compositor's scheduling state and CPU accounting", build_no_args,
			print_scheduler },
	{ "reload", "", "reload output settings and the qosrc files", build_no_args },
	{ "top", "[-n COUNT]", "refreshing view of windows and reserves", .run = run_top_command },
	{ "subscribe", "", "print window and QoS events as JSON lines", build_no_args,
			.run = run_subscribe_command },
	{ "version", "", "print the compositor's version", build_no_args, print_version },
	{ "exit", "", "end the session", build_no_args },
	{ "raw", "JSON", "send one raw request line", .run = run_raw },
	{ "help", "", "print this help", .run = run_help, .text_words = no_text_words },
};

#define HELP_COLUMN 23

static void print_usage(FILE *out) {
	fputs("Usage: qosctl [-s SOCKET] [--json] COMMAND [ARGS...]\n\nCommands:\n", out);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		const struct command *c = &commands[i];
		int used = fprintf(out, "  %s%s%s", c->name, c->args[0] ? " " : "", c->args);
		if (used >= HELP_COLUMN - 1) {
			fprintf(out, "\n%*s", HELP_COLUMN, "");
		} else {
			fprintf(out, "%*s", HELP_COLUMN - used, "");
		}
		for (const char *p = c->help; *p; p++) {
			fputc(*p, out);
			if (*p == '\n') {
				fprintf(out, "%*s", HELP_COLUMN, "");
			}
		}
		fputc('\n', out);
	}
	fputs("\nTARGET is a window id (see 'windows'), pid:N, or tid:N for one thread\n"
		  "(join tid:N RESERVE, and set tid:N normal to take it out).\n"
		  "The socket defaults to $QOSWAY_SOCK.\n",
			out);
}

static const struct command *find_command(const char *name) {
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(commands[i].name, name) == 0) {
			return &commands[i];
		}
	}
	return NULL;
}

/*
 * The options before COMMAND into opts; returns COMMAND's index, or -1
 * with the exit status in *status (after the usage, if asked for).
 */
static int parse_global_options(int argc, char **argv, struct options *opts, int *status) {
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "--json") == 0 || strcmp(argv[i], "-j") == 0) {
			opts->json = true;
		} else if (strcmp(argv[i], "-s") == 0 && i + 1 < argc) {
			opts->sock = argv[++i];
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			print_usage(stdout);
			*status = 0;
			return -1;
		} else {
			*status = die_usage("unknown option '%s'", argv[i]);
			return -1;
		}
	}
	if (i >= argc) {
		*status = die_usage("%s", "missing command");
		return -1;
	}
	return i;
}

/*
 * Requests are JSON, which carries text only: the compositor refuses other
 * bytes, so name the argument here (a reserve name in another encoding,
 * say).  exec's command words are sent in base64 instead.
 */
static bool text_words_valid(const struct command *cmd, int argc, char **argv, int first) {
	int end = cmd->text_words ? first + cmd->text_words(argc - first, argv + first) : argc;
	for (int k = first; k < end; k++) {
		if (!qos_utf8_valid(argv[k])) {
			fprintf(stderr, "qosctl: argument %d is not valid UTF-8; requests carry text only\n",
					k);
			return false;
		}
	}
	return true;
}

int main(int argc, char **argv) {
	/* Replies are UTF-8 whatever the user's locale; only cell widths need it. */
	setlocale(LC_CTYPE, "C.UTF-8");
	struct options opts = { .sock = getenv("QOSWAY_SOCK") };
	int status = 0;
	int i = parse_global_options(argc, argv, &opts, &status);
	if (i < 0) {
		return status;
	}
	const struct command *cmd = find_command(argv[i]);
	if (!cmd) {
		return die_usage("unknown command '%s'", argv[i]);
	}
	if (!text_words_valid(cmd, argc, argv, i)) {
		return 2;
	}
	return (cmd->run ? cmd->run : run_request)(cmd, &opts, argc - i, argv + i);
}
