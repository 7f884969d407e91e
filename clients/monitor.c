/*
 * qosway-monitor: the reserves of a running qosway, live.
 *
 * One row per reserve: a bar of its last period (own CPU time and the
 * compositor time billed to it, against the slice), its overruns, its
 * members with their windows' titles, and a history of that use; above
 * them the admission capacity.  Picking a row opens an editor for the
 * reserve's policy, period, slice and fallback, applied through the IPC;
 * a refusal (admission control says no) is shown in the editor.
 *
 * Everything comes from one IPC connection: subscribed, so window and QoS
 * events arrive as they happen, and polled for the books every interval.
 * --png draws one frame without a display, for documentation and tests.
 *
 * Exit status: 0, 1 when --apply was refused, 2 on bad usage, 3 when the
 * compositor cannot be reached.
 */
#include <cairo.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xkbcommon/xkbcommon-keysyms.h>

#include "ipc-client.h"
#include "monitor.h"
#include "qos/params.h"

#define IPC_TIMEOUT_MS 5000

static const char usage[] =
		"Usage: qosway-monitor [OPTIONS]\n"
		"\n"
		"  -s, --socket PATH      qosway's IPC socket (default $QOSWAY_SOCK)\n"
		"  -i, --interval TIME    refresh every TIME (default 500ms; 50ms..10s)\n"
		"      --select NAME      start with reserve NAME selected\n"
		"      --edit NAME        open the editor on reserve NAME\n"
		"      --set KEY=VALUE    type VALUE into the editor's field KEY: policy,\n"
		"                         period, slice or fallback (with --edit; repeatable)\n"
		"      --apply            apply the editor's fields at once, as Enter does\n"
		"      --png FILE         draw one frame into FILE (no display needed), exit\n"
		"      --size WxH         size of the --png frame (default: fits the rows)\n"
		"      --samples N        refresh N times before the --png frame, one\n"
		"                         interval apart, to fill the history (default 1)\n"
		"      --layout-json FILE write where rows, bars and the editor are drawn,\n"
		"                         as JSON, after every frame (- for stdout)\n"
		"  -h, --help             this text\n"
		"\n"
		"Keys: Up/Down select, Enter edit, q or Escape quit.  In the editor:\n"
		"Tab next field, Left/Right change a policy, Enter apply, Escape close.\n";

static int usage_error(const char *fmt, const char *arg) {
	fprintf(stderr, "qosway-monitor: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'qosway-monitor --help'.\n");
	return 2;
}

static bool parse_int(const char *s, long min, long max, long *out) {
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max) {
		return false;
	}
	*out = v;
	return true;
}

/* getopt values of the long options without a short one. */
enum {
	OPT_SELECT = 256,
	OPT_EDIT,
	OPT_SET,
	OPT_APPLY,
	OPT_PNG,
	OPT_SIZE,
	OPT_SAMPLES,
	OPT_LAYOUT,
};

/* Option c (with optarg) into opt: -1 to go on, else the exit status. */
static int parse_option(int c, char *argv[], struct mon_options *opt) {
	char err[160];
	uint64_t us;
	long n;
	int w, h;
	char tail;
	switch (c) {
	case 's':
		opt->socket = optarg;
		return -1;
	case 'i':
		if (!qos_parse_duration_us(optarg, &us) || us < 50000 || us > 10000000) {
			return usage_error("bad --interval '%s': want a time from 50ms to 10s", optarg);
		}
		opt->interval_ms = (int)(us / 1000);
		return -1;
	case OPT_SELECT:
	case OPT_EDIT:
		if (!qos_name_valid(optarg, err, sizeof(err))) {
			fprintf(stderr, "qosway-monitor: bad reserve name '%s': %s\n", optarg, err);
			return 2;
		}
		*(c == OPT_EDIT ? &opt->edit : &opt->select) = optarg;
		return -1;
	case OPT_SET:
		if (!strchr(optarg, '=')) {
			return usage_error("bad --set '%s': want KEY=VALUE, e.g. slice=5ms", optarg);
		}
		if (opt->n_sets == MON_MAX_SETS) {
			return usage_error("%s", "too many --set options");
		}
		opt->sets[opt->n_sets++] = optarg;
		return -1;
	case OPT_APPLY:
		opt->apply = true;
		return -1;
	case OPT_PNG:
		opt->png = optarg;
		return -1;
	case OPT_SIZE:
		if (sscanf(optarg, "%dx%d%c", &w, &h, &tail) != 2 || w < 320 || h < 200 || w > 4096 ||
				h > 4096) {
			return usage_error("bad --size '%s': want WxH from 320x200 to 4096x4096", optarg);
		}
		opt->png_width = w;
		opt->png_height = h;
		return -1;
	case OPT_SAMPLES:
		if (!parse_int(optarg, 1, 1000, &n)) {
			return usage_error("bad --samples '%s': want 1..1000", optarg);
		}
		opt->samples = (int)n;
		return -1;
	case OPT_LAYOUT:
		opt->layout_json = optarg;
		return -1;
	case 'h':
		fputs(usage, stdout);
		return 0;
	case ':':
		snprintf(err, sizeof(err), "option '%s' needs a value", argv[optind - 1]);
		return usage_error("%s", err);
	default:
		return usage_error("unknown option '%s'", argv[optind - 1]);
	}
}

/* Returns -1 to go on, else the exit status. */
static int parse_options(int argc, char *argv[], struct mon_options *opt) {
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "interval", required_argument, NULL, 'i' },
		{ "select", required_argument, NULL, OPT_SELECT },
		{ "edit", required_argument, NULL, OPT_EDIT },
		{ "set", required_argument, NULL, OPT_SET },
		{ "apply", no_argument, NULL, OPT_APPLY },
		{ "png", required_argument, NULL, OPT_PNG },
		{ "size", required_argument, NULL, OPT_SIZE },
		{ "samples", required_argument, NULL, OPT_SAMPLES },
		{ "layout-json", required_argument, NULL, OPT_LAYOUT },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	*opt = (struct mon_options){ .interval_ms = 500, .samples = 1 };
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, ":s:i:h", longopts, NULL)) != -1) {
		int status = parse_option(c, argv, opt);
		if (status != -1) {
			return status;
		}
	}
	if (optind < argc) {
		return usage_error("unexpected argument '%s'", argv[optind]);
	}
	if ((opt->n_sets || opt->apply) && !opt->edit) {
		return usage_error("%s", "--set and --apply need --edit NAME");
	}
	if ((opt->png_width || opt->samples > 1) && !opt->png) {
		return usage_error("%s", "--size and --samples are for --png");
	}
	return -1;
}

double mon_now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bool send_request(struct monitor *m, struct json_object *req, enum mon_reply kind) {
	if (!req || m->pending_len == MON_MAX_PENDING) {
		json_object_put(req);
		return false;
	}
	bool ok = ipc_client_send(m->ipc, req);
	json_object_put(req);
	if (ok) {
		m->pending[(m->pending_head + m->pending_len++) % MON_MAX_PENDING] = kind;
	}
	return ok;
}

bool monitor_refresh(struct monitor *m) {
	/* A compositor that stopped answering gets no pile of requests. */
	if (m->pending_len > 6) {
		return true;
	}
	return send_request(m, ipc_client_command("reserves"), MON_REPLY_RESERVES) &&
			send_request(m, ipc_client_command("capacity"), MON_REPLY_CAPACITY) &&
			send_request(m, ipc_client_command("windows"), MON_REPLY_WINDOWS);
}

static void clamp_selection(struct monitor *m) {
	size_t n = m->model.n_reserves;
	if (m->view.selected > n) {
		m->view.selected = n;
	}
	if (m->view.scroll >= n) {
		m->view.scroll = n ? n - 1 : 0;
	}
}

static void select_by_name(struct monitor *m, const char *name) {
	struct mon_reserve *r = mon_model_reserve(&m->model, name);
	if (r) {
		m->view.selected = (size_t)(r - m->model.reserves);
	}
}

static void handle_reply(struct monitor *m, enum mon_reply kind, struct json_object *reply) {
	char selected[MON_NAME_LEN] = "";
	switch (kind) {
	case MON_REPLY_SUBSCRIBE:
		if (!ipc_json_success(reply)) {
			snprintf(m->model.status, sizeof(m->model.status), "no live events: %s",
					ipc_json_string(reply, "error"));
			m->model.status_bad = true;
		}
		break;
	case MON_REPLY_RESERVES:
		/* Rows may come and go: the selection follows its reserve. */
		if (m->view.selected < m->model.n_reserves) {
			snprintf(selected, sizeof(selected), "%s", m->model.reserves[m->view.selected].name);
		}
		mon_model_set_reserves(&m->model, reply, mon_now());
		m->view.selected = m->model.n_reserves;
		select_by_name(m, selected[0] ? selected : (m->opt.select ? m->opt.select : ""));
		clamp_selection(m);
		break;
	case MON_REPLY_CAPACITY:
		mon_model_set_capacity(&m->model, reply);
		break;
	case MON_REPLY_WINDOWS:
		mon_model_set_windows(&m->model, reply);
		break;
	case MON_REPLY_EDIT:
		m->edit_refused = !mon_editor_reply(&m->editor, reply);
		/* Show the new parameters at once, not an interval later. */
		monitor_refresh(m);
		break;
	}
	m->dirty = true;
}

bool monitor_read_ipc(struct monitor *m) {
	bool alive = ipc_client_read(m->ipc);
	struct json_object *obj;
	while ((obj = ipc_client_next(m->ipc))) {
		if (ipc_json_is_event(obj)) {
			if (mon_model_event(&m->model, obj, mon_now())) {
				m->dirty = true;
			}
		} else if (m->pending_len > 0) {
			enum mon_reply kind = m->pending[m->pending_head];
			m->pending_head = (m->pending_head + 1) % MON_MAX_PENDING;
			m->pending_len--;
			handle_reply(m, kind, obj);
		}
		json_object_put(obj);
	}
	if (!alive && m->model.connected) {
		m->model.connected = false;
		snprintf(m->model.status, sizeof(m->model.status), "the compositor closed the connection");
		m->model.status_bad = true;
		m->dirty = true;
	}
	return alive;
}

void monitor_apply(struct monitor *m) {
	if (!m->editor.open || m->editor.waiting) {
		return;
	}
	struct json_object *req = mon_editor_request(&m->editor);
	if (req && !send_request(m, req, MON_REPLY_EDIT)) {
		mon_editor_reply(&m->editor, NULL);
	}
	m->dirty = true;
}

static void open_editor(struct monitor *m) {
	if (m->view.selected < m->model.n_reserves) {
		mon_editor_open(&m->editor, &m->model.reserves[m->view.selected]);
		m->dirty = true;
	}
}

static void move_selection(struct monitor *m, int step) {
	size_t n = m->model.n_reserves;
	if (n == 0) {
		return;
	}
	size_t sel = m->view.selected >= n ? 0 : m->view.selected;
	if (step < 0 && sel > 0) {
		sel--;
	} else if (step > 0 && sel + 1 < n) {
		sel++;
	}
	m->view.selected = sel;
	/* Keep the selected row on screen. */
	if (sel < m->view.scroll) {
		m->view.scroll = sel;
	} else if (m->layout.n_rows > 0 && sel >= m->view.scroll + m->layout.n_rows) {
		m->view.scroll = sel + 1 - m->layout.n_rows;
	}
	m->dirty = true;
}

void monitor_key(struct monitor *m, uint32_t keysym, const char *text) {
	struct mon_editor *e = &m->editor;
	m->dirty = true;
	if (e->open) {
		switch (keysym) {
		case XKB_KEY_Escape:
			mon_editor_close(e);
			break;
		case XKB_KEY_Return:
		case XKB_KEY_KP_Enter:
			monitor_apply(m);
			break;
		case XKB_KEY_Tab:
		case XKB_KEY_Down:
			mon_editor_focus_next(e, 1);
			break;
		case XKB_KEY_ISO_Left_Tab:
		case XKB_KEY_Up:
			mon_editor_focus_next(e, -1);
			break;
		case XKB_KEY_Left:
		case XKB_KEY_Right:
			mon_editor_cycle(e, keysym == XKB_KEY_Left ? -1 : 1);
			break;
		case XKB_KEY_BackSpace:
			mon_editor_backspace(e);
			break;
		default:
			if (text && text[0]) {
				mon_editor_type(e, text);
			}
		}
		return;
	}
	switch (keysym) {
	case XKB_KEY_Up:
	case XKB_KEY_Down:
		move_selection(m, keysym == XKB_KEY_Up ? -1 : 1);
		break;
	case XKB_KEY_Return:
	case XKB_KEY_KP_Enter:
		open_editor(m);
		break;
	case XKB_KEY_q:
	case XKB_KEY_Escape:
		m->running = false;
		break;
	}
}

static bool inside(const struct mon_rect *r, int x, int y) {
	return x >= r->x && y >= r->y && x < r->x + r->width && y < r->y + r->height;
}

void monitor_click(struct monitor *m, int x, int y) {
	const struct mon_layout *l = &m->layout;
	m->dirty = true;
	if (m->editor.open) {
		if (inside(&l->apply, x, y)) {
			monitor_apply(m);
		} else if (inside(&l->cancel, x, y) || !inside(&l->dialog, x, y)) {
			mon_editor_close(&m->editor);
		}
		for (int f = 0; f < MON_FIELD_COUNT; f++) {
			if (inside(&l->fields[f], x, y)) {
				if (m->editor.focus == (enum mon_field)f) {
					mon_editor_cycle(&m->editor, 1);
				}
				m->editor.focus = (enum mon_field)f;
			}
		}
		return;
	}
	for (size_t i = 0; i < l->n_rows; i++) {
		if (inside(&l->rows[i].row, x, y)) {
			m->view.selected = l->rows[i].index;
			open_editor(m);
			return;
		}
	}
}

void monitor_scroll(struct monitor *m, int rows) {
	size_t n = m->model.n_reserves;
	if (rows < 0 && m->view.scroll > 0) {
		m->view.scroll--;
	} else if (rows > 0 && m->view.scroll + m->layout.n_rows < n) {
		m->view.scroll++;
	}
	m->dirty = true;
}

static void write_layout(struct monitor *m) {
	const char *path = m->opt.layout_json;
	struct json_object *json = mon_layout_json(&m->layout, &m->model);
	const char *text = json_object_to_json_string_ext(json, JSON_C_TO_STRING_PLAIN);
	if (strcmp(path, "-") == 0) {
		printf("%s\n", text);
		fflush(stdout);
	} else {
		/* Written aside and renamed: a reader never sees half a file. */
		char tmp[4096];
		snprintf(tmp, sizeof(tmp), "%s.tmp", path);
		FILE *f = fopen(tmp, "w");
		if (!f || fprintf(f, "%s\n", text) < 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
			fprintf(stderr, "qosway-monitor: cannot write %s: %s\n", path, strerror(errno));
		}
	}
	json_object_put(json);
}

void monitor_paint(struct monitor *m, cairo_t *cr, int width, int height) {
	mon_draw_layout(&m->model, &m->view, &m->editor, width, height, &m->layout);
	mon_draw(cr, &m->model, &m->view, &m->editor, &m->layout, mon_now());
	if (m->opt.layout_json) {
		write_layout(m);
	}
	m->dirty = false;
}

/* Waits for every outstanding reply (headless runs). */
static bool settle(struct monitor *m) {
	while (m->pending_len > 0) {
		struct pollfd pfd = { .fd = ipc_client_fd(m->ipc), .events = POLLIN };
		int n = poll(&pfd, 1, IPC_TIMEOUT_MS);
		if (n == 0) {
			fprintf(stderr, "qosway-monitor: no reply from the compositor within %d ms\n",
					IPC_TIMEOUT_MS);
			return false;
		}
		if ((n < 0 && errno != EINTR) || !monitor_read_ipc(m)) {
			fprintf(stderr, "qosway-monitor: lost the connection to the compositor\n");
			return false;
		}
	}
	return true;
}

/* --edit: the editor opened and typed into, as a user would. */
static int start_editing(struct monitor *m) {
	struct mon_reserve *r = mon_model_reserve(&m->model, m->opt.edit);
	if (!r) {
		fprintf(stderr, "qosway-monitor: --edit: no reserve named '%s'%s%s\n", m->opt.edit,
				m->model.qos_error[0] ? ": " : "", m->model.qos_error);
		return 2;
	}
	m->view.selected = (size_t)(r - m->model.reserves);
	mon_editor_open(&m->editor, r);
	for (int i = 0; i < m->opt.n_sets; i++) {
		char key[32], err[128];
		const char *eq = strchr(m->opt.sets[i], '=');
		snprintf(key, sizeof(key), "%.*s", (int)(eq - m->opt.sets[i]), m->opt.sets[i]);
		if (!mon_editor_set(&m->editor, key, eq + 1, err, sizeof(err))) {
			fprintf(stderr, "qosway-monitor: bad --set '%s': %s\n", m->opt.sets[i], err);
			return 2;
		}
	}
	if (m->opt.apply) {
		monitor_apply(m);
	}
	return -1;
}

static int run_png(struct monitor *m) {
	for (int i = 0; i < m->opt.samples; i++) {
		if (i > 0) {
			struct timespec ts = { m->opt.interval_ms / 1000,
				(long)(m->opt.interval_ms % 1000) * 1000000L };
			nanosleep(&ts, NULL);
		}
		if (!monitor_refresh(m) || !settle(m)) {
			return 3;
		}
	}
	if (m->opt.edit) {
		int status = start_editing(m);
		if (status >= 0) {
			return status;
		}
		if (!settle(m)) {
			return 3;
		}
	}
	int width = m->opt.png_width, height = m->opt.png_height;
	if (!width) {
		mon_draw_preferred_size(m->model.n_reserves, &width, &height);
	}
	cairo_surface_t *surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, width, height);
	cairo_t *cr = cairo_create(surface);
	if (cairo_surface_status(surface) != CAIRO_STATUS_SUCCESS ||
			cairo_status(cr) != CAIRO_STATUS_SUCCESS) {
		fprintf(stderr, "qosway-monitor: cannot create a %dx%d image\n", width, height);
		cairo_destroy(cr);
		cairo_surface_destroy(surface);
		return 1;
	}
	monitor_paint(m, cr, width, height);
	cairo_destroy(cr);
	cairo_status_t st = cairo_surface_write_to_png(surface, m->opt.png);
	cairo_surface_destroy(surface);
	if (st != CAIRO_STATUS_SUCCESS) {
		fprintf(stderr, "qosway-monitor: cannot write %s: %s\n", m->opt.png,
				cairo_status_to_string(st));
		return 1;
	}
	if (m->editor.message[0] && m->editor.message_bad) {
		fprintf(stderr, "qosway-monitor: %s: %s\n", m->editor.reserve, m->editor.message);
	}
	return m->edit_refused || (m->opt.apply && m->editor.message_bad) ? 1 : 0;
}

int main(int argc, char *argv[]) {
	struct monitor *m = calloc(1, sizeof(*m));
	if (!m) {
		fprintf(stderr, "qosway-monitor: out of memory\n");
		return 1;
	}
	int status = parse_options(argc, argv, &m->opt);
	if (status >= 0) {
		free(m);
		return status;
	}
	char err[256];
	m->ipc = ipc_client_connect(m->opt.socket, err, sizeof(err));
	if (!m->ipc) {
		fprintf(stderr, "qosway-monitor: %s\n", err);
		free(m);
		return 3;
	}
	m->model.connected = true;
	m->view.selected = MON_MAX_RESERVES;
	if (!send_request(m, ipc_client_command("subscribe"), MON_REPLY_SUBSCRIBE)) {
		fprintf(stderr, "qosway-monitor: cannot send to the compositor\n");
		status = 3;
	} else if (m->opt.png) {
		status = run_png(m);
	} else {
		status = EXIT_SUCCESS;
		if (m->opt.edit) {
			status = monitor_refresh(m) && settle(m) ? start_editing(m) : 3;
		}
		if (status < 0 || status == EXIT_SUCCESS) {
			status = mon_window_run(m);
		}
	}
	ipc_client_destroy(m->ipc);
	free(m);
	return status;
}
