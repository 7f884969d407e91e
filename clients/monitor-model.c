#include <stdio.h>
#include <string.h>

#include "ipc-client.h"
#include "monitor.h"

struct mon_reserve *mon_model_reserve(struct mon_model *model, const char *name) {
	for (size_t i = 0; i < model->n_reserves; i++) {
		if (strcmp(model->reserves[i].name, name) == 0) {
			return &model->reserves[i];
		}
	}
	return NULL;
}

static uint64_t nonneg(int64_t v) {
	return v > 0 ? (uint64_t)v : 0;
}

static void push_sample(struct mon_reserve *r) {
	float own = 0, billed = 0;
	if (r->period_us > 0) {
		uint64_t b = r->last_billed_us < r->last_used_us ? r->last_billed_us : r->last_used_us;
		own = (float)(r->last_used_us - b) / (float)r->period_us;
		billed = (float)b / (float)r->period_us;
	}
	if (r->hist_len == MON_HISTORY) {
		memmove(r->hist_own, r->hist_own + 1, (MON_HISTORY - 1) * sizeof(float));
		memmove(r->hist_billed, r->hist_billed + 1, (MON_HISTORY - 1) * sizeof(float));
		r->hist_len--;
	}
	r->hist_own[r->hist_len] = own;
	r->hist_billed[r->hist_len] = billed;
	r->hist_len++;
}

static void read_reserve(struct mon_reserve *r, struct json_object *obj) {
	snprintf(r->params, sizeof(r->params), "%s", ipc_json_string(obj, "params"));
	snprintf(r->policy, sizeof(r->policy), "%s", ipc_json_string(obj, "policy"));
	snprintf(r->fallback, sizeof(r->fallback), "%s", ipc_json_string(obj, "fallback"));
	r->period_us = nonneg(ipc_json_int(obj, "period_us"));
	r->slice_us = nonneg(ipc_json_int(obj, "slice_us"));
	r->last_used_us = nonneg(ipc_json_int(obj, "last_used_us"));
	r->last_billed_us = nonneg(ipc_json_int(obj, "last_billed_us"));
	r->overruns = nonneg(ipc_json_int(obj, "overruns"));
	r->periods = nonneg(ipc_json_int(obj, "periods"));
	r->granted = ipc_json_bool(obj, "granted");
	r->automatic = ipc_json_bool(obj, "automatic");
	r->in_fallback = ipc_json_bool(obj, "in_fallback");
	struct json_object *members = ipc_json_array(obj, "members");
	r->total_members = ipc_json_length(members);
	r->n_members = 0;
	for (size_t m = 0; m < r->total_members && r->n_members < MON_MAX_MEMBERS; m++) {
		struct json_object *mo = json_object_array_get_idx(members, m);
		r->members[r->n_members].pid = (int)ipc_json_int(mo, "pid");
		r->members[r->n_members].tid = (int)ipc_json_int(mo, "tid");
		r->n_members++;
	}
}

void mon_model_set_reserves(struct mon_model *model, struct json_object *reply, double now) {
	if (!ipc_json_success(reply)) {
		snprintf(model->qos_error, sizeof(model->qos_error), "%s", ipc_json_string(reply, "error"));
		model->n_reserves = 0;
		return;
	}
	model->qos_error[0] = '\0';
	struct json_object *list = ipc_json_array(reply, "reserves");
	size_t n = ipc_json_length(list);
	/* The new rows, in the compositor's order, each with its old history. */
	struct mon_reserve next[MON_MAX_RESERVES];
	size_t count = 0;
	for (size_t i = 0; i < n && count < MON_MAX_RESERVES; i++) {
		struct json_object *obj = json_object_array_get_idx(list, i);
		const char *name = ipc_json_string(obj, "name");
		if (!name[0]) {
			continue;
		}
		struct mon_reserve *old = mon_model_reserve(model, name);
		struct mon_reserve *r = &next[count++];
		if (old) {
			*r = *old;
		} else {
			memset(r, 0, sizeof(*r));
			snprintf(r->name, sizeof(r->name), "%s", name);
		}
		read_reserve(r, obj);
		if (old && r->overruns > old->overruns) {
			r->overrun_at = now;
		}
		push_sample(r);
	}
	memcpy(model->reserves, next, count * sizeof(next[0]));
	model->n_reserves = count;
	model->hidden_reserves = n > count ? n - count : 0;
}

void mon_model_set_capacity(struct mon_model *model, struct json_object *reply) {
	model->have_capacity = ipc_json_success(reply);
	if (!model->have_capacity) {
		return;
	}
	model->ncpus = (int)ipc_json_int(reply, "ncpus");
	model->total_ppm = nonneg(ipc_json_int(reply, "total_ppm"));
	model->granted_ppm = nonneg(ipc_json_int(reply, "granted_ppm"));
	model->watchdog_alarms = ipc_json_int(reply, "watchdog_alarms");
	model->watchdog_cooldown = ipc_json_bool(reply, "watchdog_cooldown");
}

void mon_model_set_windows(struct mon_model *model, struct json_object *reply) {
	if (!ipc_json_success(reply)) {
		return;
	}
	struct json_object *list = ipc_json_array(reply, "windows");
	model->n_windows = 0;
	for (size_t i = 0; i < ipc_json_length(list) && model->n_windows < MON_MAX_WINDOWS; i++) {
		struct json_object *w = json_object_array_get_idx(list, i);
		struct mon_window *mw = &model->windows[model->n_windows++];
		mw->pid = (int)ipc_json_int(w, "pid");
		snprintf(mw->title, sizeof(mw->title), "%s", ipc_json_string(w, "title"));
	}
}

/* The window object of a window event: title changes are applied at once. */
static void window_event(struct mon_model *model, const char *change, struct json_object *w) {
	int pid = (int)ipc_json_int(w, "pid");
	const char *title = ipc_json_string(w, "title");
	if (strcmp(change, "close") == 0) {
		/* Titles are per process here; the next `windows` reply is exact. */
		return;
	}
	for (size_t i = 0; i < model->n_windows; i++) {
		if (model->windows[i].pid == pid && strcmp(change, "title") == 0) {
			snprintf(model->windows[i].title, sizeof(model->windows[i].title), "%s", title);
			return;
		}
	}
	if (strcmp(change, "new") == 0 && model->n_windows < MON_MAX_WINDOWS) {
		struct mon_window *mw = &model->windows[model->n_windows++];
		mw->pid = pid;
		snprintf(mw->title, sizeof(mw->title), "%s", title);
	}
}

bool mon_model_event(struct mon_model *model, struct json_object *event, double now) {
	const char *type = ipc_json_string(event, "event");
	const char *change = ipc_json_string(event, "change");
	if (strcmp(type, "window") == 0) {
		struct json_object *w;
		if (json_object_object_get_ex(event, "window", &w)) {
			window_event(model, change, w);
		}
		return true;
	}
	if (strcmp(type, "qos") != 0) {
		return false;
	}
	const char *reserve = ipc_json_string(event, "reserve");
	const char *message = ipc_json_string(event, "message");
	if (strcmp(change, "overrun") == 0) {
		struct mon_reserve *r = mon_model_reserve(model, reserve);
		if (r) {
			r->overrun_at = now;
		}
	}
	/* Adaptation and idle release are the manager doing its job. */
	bool bad = strcmp(change, "granted") != 0 && strcmp(change, "rt-resumed") != 0 &&
			strcmp(change, "params") != 0 && strcmp(change, "released") != 0;
	int pid = (int)ipc_json_int(event, "pid");
	char who[32] = "";
	if (pid > 0) {
		snprintf(who, sizeof(who), " pid %d", pid);
	}
	snprintf(model->status, sizeof(model->status), "%s: %s%s%s%s", change,
			reserve[0] ? reserve : "-", who, message[0] ? ": " : "", message);
	model->status_bad = bad;
	return true;
}

void mon_model_titles(const struct mon_model *model, int pid, char *out, size_t len) {
	size_t off = 0;
	out[0] = '\0';
	for (size_t i = 0; i < model->n_windows && off + 1 < len; i++) {
		if (model->windows[i].pid != pid) {
			continue;
		}
		int n = snprintf(out + off, len - off, "%s%s", off ? ", " : "", model->windows[i].title);
		if (n < 0) {
			break;
		}
		off += (size_t)n < len - off ? (size_t)n : len - off - 1;
	}
}
