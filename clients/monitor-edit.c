#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ipc-client.h"
#include "monitor.h"

static const char *const policies[] = { "qos", "fifo", "rr", "other", "idle", "pause" };
#define N_POLICIES (sizeof(policies) / sizeof(policies[0]))

static const char *const field_keys[MON_FIELD_COUNT] = {
	[MON_FIELD_POLICY] = "policy",
	[MON_FIELD_PERIOD] = "period",
	[MON_FIELD_SLICE] = "slice",
	[MON_FIELD_FALLBACK] = "fallback",
};

static void format_duration(char *out, size_t len, uint64_t us) {
	if (us == 0) {
		out[0] = '\0';
	} else if (us % 1000000 == 0) {
		snprintf(out, len, "%" PRIu64 "s", us / 1000000);
	} else if (us % 1000 == 0) {
		snprintf(out, len, "%" PRIu64 "ms", us / 1000);
	} else {
		snprintf(out, len, "%" PRIu64 "us", us);
	}
}

void mon_editor_open(struct mon_editor *editor, const struct mon_reserve *r) {
	*editor = (struct mon_editor){ .open = true, .focus = MON_FIELD_SLICE };
	snprintf(editor->reserve, sizeof(editor->reserve), "%s", r->name);
	snprintf(editor->base_params, sizeof(editor->base_params), "%s", r->params);
	snprintf(editor->fields[MON_FIELD_POLICY], sizeof(editor->fields[0]), "%s", r->policy);
	format_duration(editor->fields[MON_FIELD_PERIOD], sizeof(editor->fields[0]), r->period_us);
	format_duration(editor->fields[MON_FIELD_SLICE], sizeof(editor->fields[0]), r->slice_us);
	if (r->period_us && r->slice_us) {
		snprintf(editor->fields[MON_FIELD_FALLBACK], sizeof(editor->fields[0]), "%s", r->fallback);
	}
}

void mon_editor_close(struct mon_editor *editor) {
	editor->open = false;
	editor->waiting = false;
}

bool mon_editor_set(struct mon_editor *editor, const char *key, const char *value, char *err,
		size_t err_len) {
	for (int f = 0; f < MON_FIELD_COUNT; f++) {
		if (strcmp(key, field_keys[f]) == 0) {
			if (strlen(value) >= sizeof(editor->fields[f])) {
				snprintf(err, err_len, "%s: value too long", key);
				return false;
			}
			snprintf(editor->fields[f], sizeof(editor->fields[f]), "%s", value);
			editor->focus = (enum mon_field)f;
			return true;
		}
	}
	snprintf(err, err_len, "unknown field '%s': want policy, period, slice or fallback", key);
	return false;
}

void mon_editor_type(struct mon_editor *editor, const char *text) {
	char *field = editor->fields[editor->focus];
	size_t len = strlen(field);
	for (const char *p = text; *p && len + 1 < sizeof(editor->fields[0]); p++) {
		/* Durations, percentages and policy names: nothing else is typed. */
		if ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || *p == '.' || *p == '%') {
			field[len++] = *p;
		}
	}
	field[len] = '\0';
}

void mon_editor_backspace(struct mon_editor *editor) {
	char *field = editor->fields[editor->focus];
	size_t len = strlen(field);
	if (len > 0) {
		field[len - 1] = '\0';
	}
}

void mon_editor_cycle(struct mon_editor *editor, int step) {
	if (editor->focus != MON_FIELD_POLICY && editor->focus != MON_FIELD_FALLBACK) {
		return;
	}
	char *field = editor->fields[editor->focus];
	size_t at = 0;
	for (size_t i = 0; i < N_POLICIES; i++) {
		if (strcmp(field, policies[i]) == 0) {
			at = i;
			break;
		}
	}
	at = (at + N_POLICIES + (size_t)(step % (int)N_POLICIES + (int)N_POLICIES)) % N_POLICIES;
	snprintf(field, sizeof(editor->fields[0]), "%s", policies[at]);
}

void mon_editor_focus_next(struct mon_editor *editor, int step) {
	editor->focus =
			(enum mon_field)(((int)editor->focus + step + MON_FIELD_COUNT) % MON_FIELD_COUNT);
}

/* Whether a token of the reserve's params is one the editor sets itself. */
static bool edited_key(const char *token, bool keep_priority) {
	static const char *const keys[] = { "policy=", "period=", "slice=", "fallback=", "cpu=" };
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (strncmp(token, keys[i], strlen(keys[i])) == 0) {
			return true;
		}
	}
	return !keep_priority && strncmp(token, "priority=", 9) == 0;
}

static void refuse(struct mon_editor *editor, const char *message) {
	snprintf(editor->message, sizeof(editor->message), "%s", message);
	editor->message_bad = true;
}

struct json_object *mon_editor_request(struct mon_editor *editor) {
	const char *policy = editor->fields[MON_FIELD_POLICY];
	const char *period = editor->fields[MON_FIELD_PERIOD];
	const char *slice = editor->fields[MON_FIELD_SLICE];
	const char *fallback = editor->fields[MON_FIELD_FALLBACK];
	if (!policy[0]) {
		refuse(editor, "policy: give one of qos, fifo, rr, other, idle, pause");
		return NULL;
	}
	if (!period[0] != !slice[0]) {
		refuse(editor,
				period[0] ? "slice: a period needs a slice (or clear both)"
						  : "period: a slice needs a period (or clear both)");
		return NULL;
	}
	bool keep_priority = strcmp(policy, "fifo") == 0 || strcmp(policy, "rr") == 0;
	char params[512];
	size_t off = (size_t)snprintf(params, sizeof(params), "policy=%s", policy);
	if (period[0]) {
		off += (size_t)snprintf(params + off, sizeof(params) - off, " period=%s slice=%s", period,
				slice);
		if (fallback[0]) {
			off += (size_t)snprintf(params + off, sizeof(params) - off, " fallback=%s", fallback);
		}
	}
	/* The keys the editor does not show (nice, inherit, ...) stay as they are. */
	char base[sizeof(editor->base_params)];
	snprintf(base, sizeof(base), "%s", editor->base_params);
	char *save = NULL;
	for (char *tok = strtok_r(base, " ", &save); tok && off < sizeof(params);
			tok = strtok_r(NULL, " ", &save)) {
		if (!edited_key(tok, keep_priority)) {
			off += (size_t)snprintf(params + off, sizeof(params) - off, " %s", tok);
		}
	}
	struct json_object *req = ipc_client_command("reserve");
	json_object_object_add(req, "name", json_object_new_string(editor->reserve));
	json_object_object_add(req, "params", json_object_new_string(params));
	editor->waiting = true;
	snprintf(editor->message, sizeof(editor->message), "applying...");
	editor->message_bad = false;
	return req;
}

bool mon_editor_reply(struct mon_editor *editor, struct json_object *reply) {
	editor->waiting = false;
	if (reply && ipc_json_success(reply)) {
		snprintf(editor->message, sizeof(editor->message), "applied");
		editor->message_bad = false;
		return true;
	}
	const char *error = reply ? ipc_json_string(reply, "error") : "";
	refuse(editor, error[0] ? error : "no reply from the compositor");
	return false;
}
