/*
 * qosway-monitor's state, shared by its files: monitor-model.c turns IPC
 * replies and events into the model, monitor-draw.c lays the model out and
 * paints it with cairo and pango, monitor-edit.c is the reserve editor,
 * monitor.c runs the window (or one headless frame) and the IPC stream.
 */
#ifndef QOSWAY_MONITOR_H
#define QOSWAY_MONITOR_H

#include <cairo.h>
#include <json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define MON_MAX_RESERVES 32
#define MON_MAX_MEMBERS 16
#define MON_MAX_WINDOWS 256
#define MON_HISTORY 96
#define MON_NAME_LEN 64
#define MON_TITLE_LEN 96

struct mon_member {
	int pid, tid;
};

struct mon_reserve {
	char name[MON_NAME_LEN];
	char params[256]; /* qosrc keys, as the compositor formats them */
	char policy[16], fallback[16];
	uint64_t period_us, slice_us;
	uint64_t last_used_us, last_billed_us; /* the previous period: own + billed, billed */
	uint64_t overruns, periods;
	bool granted, automatic, in_fallback;
	struct mon_member members[MON_MAX_MEMBERS];
	size_t n_members; /* shown */
	size_t total_members; /* in the reserve */
	/* Use of the last period as a share of the period, one sample per refresh,
	 * oldest first. */
	float hist_own[MON_HISTORY], hist_billed[MON_HISTORY];
	size_t hist_len;
	uint64_t overruns_seen; /* overruns when the row last flashed */
	double overrun_at; /* monotonic seconds of the latest overrun, 0 if none seen */
};

struct mon_window {
	int pid;
	char title[MON_TITLE_LEN];
};

struct mon_model {
	struct mon_reserve reserves[MON_MAX_RESERVES];
	size_t n_reserves;
	size_t hidden_reserves; /* past MON_MAX_RESERVES */
	struct mon_window windows[MON_MAX_WINDOWS];
	size_t n_windows;
	bool have_capacity;
	int ncpus;
	uint64_t total_ppm, granted_ppm;
	int64_t watchdog_alarms;
	bool watchdog_cooldown;
	/* Why the QoS part cannot answer (the manager is not ready), or "". */
	char qos_error[256];
	/* The latest event worth a line at the bottom. */
	char status[256];
	bool status_bad;
	bool connected;
};

/* The reserve named name, or NULL. */
struct mon_reserve *mon_model_reserve(struct mon_model *model, const char *name);
/* A `reserves` reply: rows keep their history by name, one sample is added. */
void mon_model_set_reserves(struct mon_model *model, struct json_object *reply, double now);
void mon_model_set_capacity(struct mon_model *model, struct json_object *reply);
void mon_model_set_windows(struct mon_model *model, struct json_object *reply);
/* A subscribe event; true when it changes what is shown. */
bool mon_model_event(struct mon_model *model, struct json_object *event, double now);
/* The titles of pid's windows, joined with ", " into out ("" if none). */
void mon_model_titles(const struct mon_model *model, int pid, char *out, size_t len);

struct mon_rect {
	int x, y, width, height;
};

enum mon_field {
	MON_FIELD_POLICY,
	MON_FIELD_PERIOD,
	MON_FIELD_SLICE,
	MON_FIELD_FALLBACK,
	MON_FIELD_COUNT,
};

/* The reserve editor: the fields as text, the reserve's other keys kept. */
struct mon_editor {
	bool open;
	char reserve[MON_NAME_LEN];
	char base_params[256]; /* the params it was opened with */
	char fields[MON_FIELD_COUNT][32];
	enum mon_field focus;
	bool waiting; /* the request is out, no reply yet */
	char message[256]; /* the compositor's refusal or "applied" */
	bool message_bad;
};

struct mon_row_layout {
	size_t index; /* into the model's reserves */
	struct mon_rect row, name, bar, own, billed, history;
	int slice_x; /* -1 without a limit */
};

struct mon_layout {
	int width, height;
	struct mon_rect capacity_bar, capacity_granted;
	struct mon_row_layout rows[MON_MAX_RESERVES];
	size_t n_rows;
	bool dialog_open;
	struct mon_rect dialog, fields[MON_FIELD_COUNT], message, apply, cancel;
	struct mon_rect status;
};

struct mon_view {
	size_t selected; /* row index; n_reserves means none */
	size_t scroll; /* first row shown */
};

/* The size the window asks for, to show n reserves. */
void mon_draw_preferred_size(size_t n_reserves, int *width, int *height);
/* Where everything goes at width x height. */
void mon_draw_layout(const struct mon_model *model, const struct mon_view *view,
		const struct mon_editor *editor, int width, int height, struct mon_layout *layout);
/* Paints a frame laid out by mon_draw_layout. */
void mon_draw(cairo_t *cr, const struct mon_model *model, const struct mon_view *view,
		const struct mon_editor *editor, const struct mon_layout *layout, double now);
/* The layout and its colours as JSON, for tests and scripts. */
struct json_object *mon_layout_json(const struct mon_layout *layout, const struct mon_model *model);

/* Opens the editor on reserve r. */
void mon_editor_open(struct mon_editor *editor, const struct mon_reserve *r);
void mon_editor_close(struct mon_editor *editor);
/*
 * Sets a field by its key (policy, period, slice, fallback), as typing it
 * would.  False, with the reason in err, for an unknown key.
 */
bool mon_editor_set(struct mon_editor *editor, const char *key, const char *value, char *err,
		size_t err_len);
/* Typing: text appended to the focused field, or the last character removed. */
void mon_editor_type(struct mon_editor *editor, const char *text);
void mon_editor_backspace(struct mon_editor *editor);
/* Left/right on a policy field: the previous or next policy name. */
void mon_editor_cycle(struct mon_editor *editor, int step);
void mon_editor_focus_next(struct mon_editor *editor, int step);
/*
 * The `reserve` request the fields make, or NULL with the reason in the
 * editor's message (a field the compositor would refuse anyway).
 */
struct json_object *mon_editor_request(struct mon_editor *editor);
/* The compositor's reply to that request; true when it was applied. */
bool mon_editor_reply(struct mon_editor *editor, struct json_object *reply);

enum mon_reply {
	MON_REPLY_SUBSCRIBE,
	MON_REPLY_RESERVES,
	MON_REPLY_CAPACITY,
	MON_REPLY_WINDOWS,
	MON_REPLY_EDIT,
};

#define MON_MAX_PENDING 64
#define MON_MAX_SETS 8

struct mon_options {
	const char *socket;
	int interval_ms;
	const char *select; /* reserve selected at start */
	const char *png; /* render one frame into this file and exit */
	int png_width, png_height; /* 0: the preferred size */
	int samples; /* refreshes before the --png frame */
	const char *edit; /* open the editor on this reserve */
	const char *sets[MON_MAX_SETS]; /* KEY=VALUE typed into the editor */
	int n_sets;
	bool apply; /* apply the editor's fields at start */
	const char *layout_json; /* write each frame's layout here ("-": stdout) */
};

struct ipc_client;

struct monitor {
	struct mon_options opt;
	struct mon_model model;
	struct mon_view view;
	struct mon_editor editor;
	struct mon_layout layout;
	struct ipc_client *ipc;
	/* Replies come in request order: what each outstanding request was. */
	enum mon_reply pending[MON_MAX_PENDING];
	size_t pending_head, pending_len;
	bool running;
	bool dirty; /* the model or the view changed since the last frame */
	bool edit_refused; /* the last apply was refused */
};

double mon_now(void);
/* Asks for reserves, capacity and windows (skipped while replies are overdue). */
bool monitor_refresh(struct monitor *m);
/* Handles every complete line from the compositor; false when it is gone. */
bool monitor_read_ipc(struct monitor *m);
/* Sends the editor's request (or shows why it cannot be sent). */
void monitor_apply(struct monitor *m);
/* Input from the window: a key (xkb keysym, its text) and a left click. */
void monitor_key(struct monitor *m, uint32_t keysym, const char *text);
void monitor_click(struct monitor *m, int x, int y);
void monitor_scroll(struct monitor *m, int rows);
/* Lays out and paints a frame of width x height into cr, and writes the
 * layout where --layout-json asks. */
void monitor_paint(struct monitor *m, cairo_t *cr, int width, int height);

/* monitor-window.c: the xdg toplevel and the event loop; the exit status. */
int mon_window_run(struct monitor *m);

#endif
