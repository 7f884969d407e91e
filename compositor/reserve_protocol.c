/*
 * qosway-reserve-v1: QoS-aware clients ask for CPU reserves over their own
 * Wayland connection. Everything goes through the same QoS manager as the
 * titlebar buttons and qosctl, so the three never disagree. A client only
 * ever affects its own process: the pid comes from the connection's pidfd.
 */
#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <wlr/util/log.h>

#include "client_identity.h"
#include "qos/proc.h"
#include "qos/qos.h"
#include "qos_link.h"
#include "qosway-reserve-v1-protocol.h"
#include "reserve_protocol.h"

#define MANAGER_VERSION 1
#define MAX_OBJECTS_PER_CLIENT 64
#define MAX_SET_PARAMS_PER_SECOND 10
#define MIN_FEEDBACK_MS 100
/* Per application, unless a qosrc rule for it says more (thesis 7.3). */
#define DEFAULT_APP_MAX_PPM 500000

struct reserve_object {
	struct wl_resource *resource;
	struct qw_server *server;
	struct wl_list link; /* reserve_protocol.objects */
	pid_t pid;           /* the client's process at connection */
	bool automatic;      /* "" : the process's automatic reserve */
	char name[QOS_NAME_MAX + 1];
	bool have_params;    /* pending parameters for a not yet created auto reserve */
	struct qos_params params;
	pid_t joined[16];    /* tids joined through this object; 0 = process */
	size_t n_joined;
	uint32_t feedback_ms;
	struct wl_event_source *feedback_timer;
	uint64_t last_periods; /* stats sent up to this period count */
	bool params_sent;
	uint32_t sent[6];      /* the last params event, to send changes only */
};

struct reserve_protocol {
	struct qw_server *server;
	struct wl_global *global;
	struct wl_list objects; /* reserve_object.link */
	struct wl_listener display_destroy;
};

static const struct qosway_reserve_manager_v1_interface manager_impl;
static const struct qosway_reserve_v1_interface reserve_impl;

static struct reserve_protocol *manager_from_resource(struct wl_resource *resource) {
	assert(wl_resource_instance_of(resource, &qosway_reserve_manager_v1_interface,
		&manager_impl));
	return wl_resource_get_user_data(resource);
}

/* NULL for an inert object (its reserve request failed or it was torn down). */
static struct reserve_object *object_from_resource(struct wl_resource *resource) {
	assert(wl_resource_instance_of(resource, &qosway_reserve_v1_interface, &reserve_impl));
	return wl_resource_get_user_data(resource);
}

static uint64_t now_ms(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static const char *reserve_name(struct reserve_object *obj, char *buf, size_t len) {
	if (!obj->automatic) {
		return obj->name;
	}
	snprintf(buf, len, QOS_AUTO_PREFIX "%d", (int)obj->pid);
	return buf;
}

static enum qosway_reserve_v1_policy to_wire(enum qos_policy p) {
	switch (p) {
	case QOS_POLICY_OTHER:
		return QOSWAY_RESERVE_V1_POLICY_OTHER;
	case QOS_POLICY_IDLE:
		return QOSWAY_RESERVE_V1_POLICY_IDLE;
	case QOS_POLICY_PAUSE:
		return QOSWAY_RESERVE_V1_POLICY_PAUSE;
	case QOS_POLICY_QOS:
		return QOSWAY_RESERVE_V1_POLICY_QOS;
	case QOS_POLICY_FIFO:
		return QOSWAY_RESERVE_V1_POLICY_FIFO;
	case QOS_POLICY_RR:
		return QOSWAY_RESERVE_V1_POLICY_RR;
	}
	return QOSWAY_RESERVE_V1_POLICY_OTHER;
}

static bool from_wire(uint32_t w, enum qos_policy *p) {
	static const enum qos_policy map[] = {
		[QOSWAY_RESERVE_V1_POLICY_OTHER] = QOS_POLICY_OTHER,
		[QOSWAY_RESERVE_V1_POLICY_IDLE] = QOS_POLICY_IDLE,
		[QOSWAY_RESERVE_V1_POLICY_PAUSE] = QOS_POLICY_PAUSE,
		[QOSWAY_RESERVE_V1_POLICY_QOS] = QOS_POLICY_QOS,
		[QOSWAY_RESERVE_V1_POLICY_FIFO] = QOS_POLICY_FIFO,
		[QOSWAY_RESERVE_V1_POLICY_RR] = QOS_POLICY_RR,
	};
	if (w >= sizeof(map) / sizeof(map[0])) {
		return false;
	}
	*p = map[w];
	return true;
}

/* The parameters this object's client should see now. */
static void current_params(struct reserve_object *obj, struct qos_params *out) {
	struct qw_server *server = obj->server;
	struct qos_manager *qos = qos_link_manager(server);
	const struct qos_rules *rules = qos_link_rules(server);
	char buf[QOS_NAME_MAX + 1];
	const char *name = reserve_name(obj, buf, sizeof(buf));
	struct qos_reserve_info info;
	qos_params_init(out);
	if (qos && qos_manager_reserve_info(qos, name, &info)) {
		*out = info.params;
	} else if (obj->have_params && obj->n_joined == 0) {
		/* Asked for but not created yet (an automatic reserve is created
		 * by join 0). Once it existed and is gone, the user took over. */
		*out = obj->params;
	} else if (!obj->automatic && rules) {
		const struct qos_reserve_def *def = qos_rules_find_reserve(rules, name);
		if (def) {
			*out = def->params;
		}
	}
}

/* params is an event about change: the same values are never sent twice. */
static void send_params(struct reserve_object *obj) {
	struct qos_params p;
	current_params(obj, &p);
	bool rt = qos_policy_is_rt(p.policy);
	uint32_t v[6] = { to_wire(p.policy), to_wire(p.fallback), (uint32_t)p.period_us,
		(uint32_t)p.slice_us, (uint32_t)p.nice, rt ? (uint32_t)p.priority : 0 };
	if (obj->params_sent && memcmp(v, obj->sent, sizeof(v)) == 0) {
		return;
	}
	memcpy(obj->sent, v, sizeof(v));
	obj->params_sent = true;
	qosway_reserve_v1_send_params(obj->resource, v[0], v[1], v[2], v[3], (int32_t)v[4], v[5]);
}

static void send_refused(struct reserve_object *obj, enum qosway_reserve_v1_refusal reason,
		const char *message) {
	qosway_reserve_v1_send_refused(obj->resource, reason, message ? message : "");
}

/* The manager's refusal, on the wire: capacity if admission control or the
 * kernel's bandwidth bound said no, else forbidden. */
static enum qosway_reserve_v1_refusal refusal_of(struct qw_server *server) {
	return qos_manager_last_refusal(qos_link_manager(server)) == QOS_REFUSAL_CAPACITY ?
		QOSWAY_RESERVE_V1_REFUSAL_CAPACITY : QOSWAY_RESERVE_V1_REFUSAL_FORBIDDEN;
}

/*
 * What qosrc says about this client's program: the rule that places it (NULL
 * if none) and what it may ask for itself.
 */
static const struct qos_rule *app_rule(struct reserve_object *obj,
		struct qos_app_limits *limits) {
	struct qw_server *server = obj->server;
	/* The app id is the client's own claim, as an exe path is the user's:
	 * a rule the user wrote for it is honoured either way. */
	return qos_link_match_rule(server, obj->pid, qos_link_app_id_of(server, obj->pid),
		limits);
}

/*
 * qos utilisation this client's process holds through the protocol in
 * reserves other than `except` (each reserve counted once): those it defined
 * and those it joined threads to, at their current parameters.
 */
static uint64_t app_held_ppm(struct reserve_object *obj, const char *except) {
	struct qos_manager *qos = qos_link_manager(obj->server);
	struct reserve_protocol *proto = obj->server->reserve_protocol;
	char seen[MAX_OBJECTS_PER_CLIENT][QOS_NAME_MAX + 1];
	size_t n_seen = 0;
	uint64_t sum = 0;
	struct reserve_object *o;
	wl_list_for_each(o, &proto->objects, link) {
		char buf[QOS_NAME_MAX + 1];
		const char *name = reserve_name(o, buf, sizeof(buf));
		if (o->pid != obj->pid || !(o->have_params || o->n_joined) ||
				strcmp(name, except) == 0) {
			continue;
		}
		struct qos_reserve_info info;
		const struct qos_params *p = qos && qos_manager_reserve_info(qos, name, &info) ?
			&info.params : o->have_params ? &o->params : NULL;
		if (!p || p->policy != QOS_POLICY_QOS) {
			continue;
		}
		bool dup = false;
		for (size_t i = 0; i < n_seen && !dup; i++) {
			dup = strcmp(seen[i], name) == 0;
		}
		if (dup || n_seen == MAX_OBJECTS_PER_CLIENT) {
			continue;
		}
		snprintf(seen[n_seen++], sizeof(seen[0]), "%s", name);
		sum += qos_params_util_ppm(p);
	}
	return sum;
}

/*
 * Per-application policy from qosrc (qos_rules_app_limits): by default qos,
 * other and idle, at most 50% of a CPU over all the app's reserves, and no
 * redefining the user's reserves. Unless allow= or max-cpu= say otherwise
 * for the app, the rule that places it also grants its own policy and
 * utilisation.
 */
static bool class_allowed(struct reserve_object *obj, const char *name,
		const struct qos_params *p, struct qos_app_limits *limits_out,
		char *why, size_t len) {
	struct qos_app_limits limits;
	const struct qos_rule *rule = app_rule(obj, &limits);
	struct qos_params granted;
	qos_params_init(&granted);
	if (rule && !(limits.set & (QOS_APP_LIMIT_ALLOW | QOS_APP_LIMIT_MAX_CPU))) {
		const struct qos_reserve_def *def = rule->reserve[0] ?
			qos_rules_find_reserve(qos_link_rules(obj->server), rule->reserve) : NULL;
		granted = def ? def->params : rule->params;
	}
	if (!(limits.allow & (1u << p->policy)) && granted.policy != p->policy) {
		snprintf(why, len, "policy %s needs a qosrc rule allowing it for this application",
			qos_policy_name(p->policy));
		return false;
	}
	uint64_t max_ppm = limits.max_cpu_ppm;
	if (granted.policy == QOS_POLICY_QOS && qos_params_util_ppm(&granted) > max_ppm) {
		max_ppm = qos_params_util_ppm(&granted);
	}
	uint64_t held = app_held_ppm(obj, name);
	if (p->policy == QOS_POLICY_QOS && held + qos_params_util_ppm(p) > max_ppm) {
		snprintf(why, len, "%.1f%% of a CPU (%.1f%% held already) is over this "
			"application's limit of %.1f%%", qos_params_util_ppm(p) / 10000.0,
			held / 10000.0, max_ppm / 10000.0);
		return false;
	}
	if (limits_out) {
		*limits_out = limits;
	}
	return true;
}

/* Whether a process other than pid is in the reserve name. */
static bool others_in(struct qw_server *server, const char *name, pid_t pid) {
	struct qos_member_info members[64];
	ssize_t n = qos_manager_members(qos_link_manager(server), name, members,
		sizeof(members) / sizeof(members[0]));
	if (n > (ssize_t)(sizeof(members) / sizeof(members[0]))) {
		return true; /* more than we looked at: assume so */
	}
	for (ssize_t i = 0; i < n; i++) {
		if (members[i].pid != pid) {
			return true;
		}
	}
	return false;
}

/*
 * Whether this client may (re)define the reserve name with p: the class is
 * allowed to the application (class_allowed), and the reserve is neither
 * the user's (qosrc), another process's automatic one, nor one that holds
 * other processes, whose scheduling it would change.
 */
static bool policy_allows(struct reserve_object *obj, const char *name,
		const struct qos_params *p, char *why, size_t len) {
	struct qos_app_limits limits;
	if (!class_allowed(obj, name, p, &limits, why, len)) {
		return false;
	}
	if (!obj->automatic && !limits.redefine && qos_link_rules(obj->server) &&
			qos_rules_find_reserve(qos_link_rules(obj->server), obj->name)) {
		snprintf(why, len, "reserve '%s' is defined by the user", obj->name);
		return false;
	}
	if (!obj->automatic && qos_name_is_auto(obj->name)) {
		snprintf(why, len, "'%s' is another process's automatic reserve", obj->name);
		return false;
	}
	if (!obj->automatic && others_in(obj->server, name, obj->pid)) {
		snprintf(why, len, "reserve '%s' holds other processes; only a reserve this "
			"process alone is in may be redefined", name);
		return false;
	}
	return true;
}

/* Would a reserve with these parameters be admitted now? */
static bool admissible(struct qw_server *server, const struct qos_params *p,
		char *err, size_t len) {
	if (p->policy != QOS_POLICY_QOS) {
		return true;
	}
	struct qos_manager_info info;
	qos_manager_get_info(qos_link_manager(server), &info);
	uint64_t need = qos_params_util_ppm(p);
	uint64_t free_ppm = info.capacity_ppm > info.granted_ppm ?
		info.capacity_ppm - info.granted_ppm : 0;
	if (need > free_ppm) {
		snprintf(err, len, "needs %.1f%% of a CPU; %.1f%% of the reservable capacity is left",
			need / 10000.0, free_ppm / 10000.0);
		return false;
	}
	return true;
}

static bool rate_ok(struct reserve_object *obj) {
	struct client_identity *id = client_identity_get(wl_resource_get_client(obj->resource));
	if (!id) {
		return true;
	}
	uint64_t now = now_ms();
	if (now - id->rate_window_start_ms >= 1000) {
		id->rate_window_start_ms = now;
		id->rate_count = 0;
	}
	return ++id->rate_count <= MAX_SET_PARAMS_PER_SECOND;
}

static void handle_set_params(struct wl_client *client, struct wl_resource *resource,
		uint32_t policy, uint32_t fallback, uint32_t period_us, uint32_t slice_us,
		int32_t nice, uint32_t priority) {
	struct reserve_object *obj = object_from_resource(resource);
	if (!obj) {
		return;
	}
	struct qos_params p;
	qos_params_init(&p);
	bool rt = policy == QOSWAY_RESERVE_V1_POLICY_FIFO || policy == QOSWAY_RESERVE_V1_POLICY_RR;
	if (!from_wire(policy, &p.policy) || !from_wire(fallback, &p.fallback) ||
			slice_us > period_us ||
			(period_us != 0 && (period_us < 100 || period_us > 10000000)) ||
			nice < -20 || nice > 19 || (rt && (priority < 1 || priority > 99))) {
		wl_resource_post_error(resource, QOSWAY_RESERVE_V1_ERROR_INVALID_PARAMS,
			"invalid parameters: policy %u, fallback %u, period %u us, slice %u us, "
			"nice %d, priority %u", policy, fallback, period_us, slice_us, nice, priority);
		return;
	}
	p.period_us = period_us;
	p.slice_us = slice_us;
	p.nice = nice;
	p.priority = rt ? (int)priority : 0;
	if (!rate_ok(obj)) {
		send_refused(obj, QOSWAY_RESERVE_V1_REFUSAL_RATE_LIMITED,
			"more than 10 set_params a second");
		return;
	}
	struct qw_server *server = obj->server;
	struct qos_manager *qos = qos_link_manager(server);
	char err[256];
	if (!qos) {
		send_refused(obj, QOSWAY_RESERVE_V1_REFUSAL_FORBIDDEN, qos_link_error(server));
		return;
	}
	char buf[QOS_NAME_MAX + 1];
	const char *name = reserve_name(obj, buf, sizeof(buf));
	if (!qos_params_normalize(&p, err, sizeof(err)) ||
			!policy_allows(obj, name, &p, err, sizeof(err))) {
		send_refused(obj, QOSWAY_RESERVE_V1_REFUSAL_FORBIDDEN, err);
		return;
	}
	struct qos_reserve_info info;
	bool exists = qos_manager_reserve_info(qos, name, &info);
	bool has_members = exists && info.n_members > 0;
	if (!has_members && !admissible(server, &p, err, sizeof(err))) {
		/* Admission is decided at the first join; tell now what it
		 * would say, and change nothing. */
		send_refused(obj, QOSWAY_RESERVE_V1_REFUSAL_CAPACITY, err);
		return;
	}
	if (obj->automatic && !exists) {
		/* Created with the process as its first member, on join(0). */
		obj->params = p;
		obj->have_params = true;
		send_params(obj);
		qosway_reserve_v1_send_granted(obj->resource);
		return;
	}
	if (!qos_reserve_set(qos, name, &p, true, true, err, sizeof(err))) {
		send_refused(obj, refusal_of(server), err);
		return;
	}
	obj->params = p;
	obj->have_params = true;
	qos_link_schedule_refresh(server);
	/* params goes to every object on this reserve from the manager event. */
	qosway_reserve_v1_send_granted(obj->resource);
}

static bool remember_join(struct reserve_object *obj, pid_t tid) {
	for (size_t i = 0; i < obj->n_joined; i++) {
		if (obj->joined[i] == tid) {
			return true;
		}
	}
	if (obj->n_joined == sizeof(obj->joined) / sizeof(obj->joined[0])) {
		return false;
	}
	obj->joined[obj->n_joined++] = tid;
	return true;
}

/* Whether remember_join will have room for tid. */
static bool join_room(struct reserve_object *obj, pid_t tid) {
	for (size_t i = 0; i < obj->n_joined; i++) {
		if (obj->joined[i] == tid) {
			return true;
		}
	}
	return obj->n_joined < sizeof(obj->joined) / sizeof(obj->joined[0]);
}

static void forget_join(struct reserve_object *obj, pid_t tid) {
	for (size_t i = 0; i < obj->n_joined; i++) {
		if (obj->joined[i] == tid) {
			obj->joined[i] = obj->joined[--obj->n_joined];
			return;
		}
	}
}

static void handle_join(struct wl_client *client, struct wl_resource *resource, uint32_t tid) {
	struct reserve_object *obj = object_from_resource(resource);
	if (!obj) {
		return;
	}
	if (tid != 0 && (tid > INT32_MAX || !qos_proc_has_thread(obj->pid, (pid_t)tid))) {
		wl_resource_post_error(resource, QOSWAY_RESERVE_V1_ERROR_INVALID_TID,
			"%u is not a thread of the client's process", tid);
		return;
	}
	struct qw_server *server = obj->server;
	struct qos_manager *qos = qos_link_manager(server);
	char err[256];
	if (!qos) {
		send_refused(obj, QOSWAY_RESERVE_V1_REFUSAL_FORBIDDEN, qos_link_error(server));
		return;
	}
	if (client_identity_pid(client_identity_get(client)) != obj->pid) {
		return; /* the process is gone: nothing to place */
	}
	if (!join_room(obj, (pid_t)tid)) {
		/* A thread not recorded here would not be released on destroy. */
		snprintf(err, sizeof(err), "at most %zu threads join through one reserve object",
			sizeof(obj->joined) / sizeof(obj->joined[0]));
		send_refused(obj, QOSWAY_RESERVE_V1_REFUSAL_FORBIDDEN, err);
		return;
	}
	char buf[QOS_NAME_MAX + 1];
	const char *name = reserve_name(obj, buf, sizeof(buf));
	struct qos_reserve_info info;
	bool exists = qos_manager_reserve_info(qos, name, &info);
	const struct qos_rules *rules = qos_link_rules(server);
	const struct qos_reserve_def *def = rules ? qos_rules_find_reserve(rules, name) : NULL;
	if (!obj->automatic) {
		/*
		 * Joining takes the reserve's class as it is, so the application
		 * must be allowed that class, as for set_params; and another
		 * process's automatic reserve is its own.
		 */
		if (qos_name_is_auto(name)) {
			snprintf(err, sizeof(err), "'%s' is another process's automatic reserve",
				name);
			send_refused(obj, QOSWAY_RESERVE_V1_REFUSAL_FORBIDDEN, err);
			return;
		}
		if ((exists || def) && !class_allowed(obj, name, exists ? &info.params :
				&def->params, NULL, err, sizeof(err))) {
			send_refused(obj, QOSWAY_RESERVE_V1_REFUSAL_FORBIDDEN, err);
			return;
		}
	}
	bool ok;
	if (obj->automatic && !exists) {
		if (tid != 0 || !obj->have_params) {
			send_refused(obj, QOSWAY_RESERVE_V1_REFUSAL_FORBIDDEN, tid != 0 ?
				"the automatic reserve starts with the whole process (join 0)" :
				"set_params first");
			return;
		}
		ok = qos_manager_set_class(qos, obj->pid, &obj->params, err, sizeof(err));
	} else if (!exists && !def) {
		send_refused(obj, QOSWAY_RESERVE_V1_REFUSAL_FORBIDDEN,
			"no such reserve: set_params defines it");
		return;
	} else {
		ok = qos_manager_join(qos, name, obj->pid, (pid_t)tid, err, sizeof(err));
	}
	qos_link_schedule_refresh(server);
	if (!ok) {
		send_refused(obj, refusal_of(server), err);
		return;
	}
	remember_join(obj, (pid_t)tid);
	qosway_reserve_v1_send_granted(obj->resource);
}

/* Whether tid was joined through this object and is still recorded. */
static bool joined_here(struct reserve_object *obj, pid_t tid) {
	for (size_t i = 0; i < obj->n_joined; i++) {
		if (obj->joined[i] == tid) {
			return true;
		}
	}
	return false;
}

static void handle_leave(struct wl_client *client, struct wl_resource *resource, uint32_t tid) {
	struct reserve_object *obj = object_from_resource(resource);
	struct qos_manager *qos = obj ? qos_link_manager(obj->server) : NULL;
	if (!qos) {
		return;
	}
	char buf[QOS_NAME_MAX + 1];
	const char *name = reserve_name(obj, buf, sizeof(buf));
	const char *in = qos_manager_reserve_of(qos, obj->pid, (pid_t)tid);
	/* Only what sits in this object's reserve: never another app's. */
	if (in && strcmp(in, name) == 0) {
		qos_manager_leave(qos, obj->pid, (pid_t)tid);
		qos_link_schedule_refresh(obj->server);
	}
	forget_join(obj, (pid_t)tid);
}

/*
 * Whether the client's process is paused (frozen).  It cannot read, and
 * every event adds to a socket buffer that disconnects it once full
 * (libwayland 1.21), so the periodic ones are not sent until it thaws.
 */
static bool object_frozen(struct reserve_object *obj) {
	struct client_identity *id = client_identity_find(wl_resource_get_client(obj->resource));
	if (id && id->paused) {
		return true;
	}
	struct qw_server *server = obj->server;
	struct qos_manager *qos = qos_link_manager(server);
	const char *in = qos ? qos_manager_reserve_of(qos, obj->pid, 0) : NULL;
	struct qos_reserve_info info;
	return in && qos_manager_reserve_info(qos, in, &info) &&
		info.params.policy == QOS_POLICY_PAUSE;
}

static int handle_feedback_timer(void *data) {
	struct reserve_object *obj = data;
	struct qw_server *server = obj->server;
	struct qos_manager *qos = qos_link_manager(server);
	char buf[QOS_NAME_MAX + 1];
	struct qos_reserve_info info;
	if (qos && !object_frozen(obj) &&
			qos_manager_reserve_info(qos, reserve_name(obj, buf, sizeof(buf)), &info)) {
		uint64_t period = info.params.period_us ? info.params.period_us : 1000000;
		qosway_reserve_v1_send_stats(obj->resource, (uint32_t)period,
			(uint32_t)info.last_used_us, (uint32_t)info.billed_us);
	}
	wl_event_source_timer_update(obj->feedback_timer, obj->feedback_ms);
	return 0;
}

static void handle_set_feedback(struct wl_client *client, struct wl_resource *resource,
		uint32_t interval_ms) {
	struct reserve_object *obj = object_from_resource(resource);
	if (!obj) {
		return;
	}
	obj->feedback_ms = interval_ms == 0 ? 0 :
		interval_ms < MIN_FEEDBACK_MS ? MIN_FEEDBACK_MS : interval_ms;
	if (!obj->feedback_ms) {
		if (obj->feedback_timer) {
			wl_event_source_remove(obj->feedback_timer);
			obj->feedback_timer = NULL;
		}
		return;
	}
	if (!obj->feedback_timer) {
		obj->feedback_timer = wl_event_loop_add_timer(obj->server->event_loop,
			handle_feedback_timer, obj);
	}
	if (obj->feedback_timer) {
		wl_event_source_timer_update(obj->feedback_timer, obj->feedback_ms);
	}
}

static void object_destroy(struct reserve_object *obj) {
	if (!obj) {
		return;
	}
	/* Everything joined through this object returns to the default class. */
	struct qw_server *server = obj->server;
	struct qos_manager *qos = qos_link_manager(server);
	char buf[QOS_NAME_MAX + 1];
	const char *name = reserve_name(obj, buf, sizeof(buf));
	for (size_t i = 0; qos && i < obj->n_joined; i++) {
		const char *in = qos_manager_reserve_of(qos, obj->pid, obj->joined[i]);
		if (in && strcmp(in, name) == 0) {
			qos_manager_leave(qos, obj->pid, obj->joined[i]);
		}
	}
	if (obj->n_joined) {
		qos_link_schedule_refresh(server);
	}
	if (obj->feedback_timer) {
		wl_event_source_remove(obj->feedback_timer);
	}
	struct client_identity *id =
		client_identity_find(wl_resource_get_client(obj->resource));
	if (id && id->reserve_objects > 0) {
		id->reserve_objects--;
	}
	wl_list_remove(&obj->link);
	wl_resource_set_user_data(obj->resource, NULL);
	free(obj);
}

static void handle_resource_destroy(struct wl_resource *resource) {
	object_destroy(object_from_resource(resource));
}

static void handle_destroy(struct wl_client *client, struct wl_resource *resource) {
	wl_resource_destroy(resource);
}

static const struct qosway_reserve_v1_interface reserve_impl = {
	.destroy = handle_destroy,
	.set_params = handle_set_params,
	.join = handle_join,
	.leave = handle_leave,
	.set_feedback = handle_set_feedback,
};

static void handle_get_reserve(struct wl_client *client, struct wl_resource *manager_resource,
		uint32_t id, const char *name) {
	struct reserve_protocol *proto = manager_from_resource(manager_resource);
	char err[256];
	if (name[0] && !qos_name_valid(name, err, sizeof(err))) {
		wl_resource_post_error(manager_resource, QOSWAY_RESERVE_MANAGER_V1_ERROR_INVALID_NAME,
			"%s", err);
		return;
	}
	struct wl_resource *resource = wl_resource_create(client, &qosway_reserve_v1_interface,
		wl_resource_get_version(manager_resource), id);
	if (!resource) {
		wl_client_post_no_memory(client);
		return;
	}
	wl_resource_set_implementation(resource, &reserve_impl, NULL, handle_resource_destroy);
	struct client_identity *identity = client_identity_get(client);
	if (identity && identity->reserve_objects >= MAX_OBJECTS_PER_CLIENT) {
		wl_resource_post_error(resource, QOSWAY_RESERVE_V1_ERROR_TOO_MANY_OBJECTS,
			"more than %d reserve objects", MAX_OBJECTS_PER_CLIENT);
		return;
	}
	pid_t pid = client_identity_pid(identity);
	struct reserve_object *obj = pid > 0 ? calloc(1, sizeof(*obj)) : NULL;
	if (!obj) {
		/* Unidentifiable or out of memory: an inert object that only
		 * answers with a refusal. */
		qosway_reserve_v1_send_refused(resource, QOSWAY_RESERVE_V1_REFUSAL_FORBIDDEN,
			"the client's process cannot be identified");
		return;
	}
	obj->resource = resource;
	obj->server = proto->server;
	obj->pid = pid;
	obj->automatic = name[0] == '\0';
	snprintf(obj->name, sizeof(obj->name), "%s", name);
	wl_list_insert(&proto->objects, &obj->link);
	identity->reserve_objects++;
	wl_resource_set_user_data(resource, obj);
	send_params(obj);
}

static void handle_manager_destroy(struct wl_client *client, struct wl_resource *resource) {
	wl_resource_destroy(resource);
}

static const struct qosway_reserve_manager_v1_interface manager_impl = {
	.destroy = handle_manager_destroy,
	.get_reserve = handle_get_reserve,
};

static void manager_bind(struct wl_client *client, void *data, uint32_t version, uint32_t id) {
	struct reserve_protocol *proto = data;
	struct wl_resource *resource = wl_resource_create(client,
		&qosway_reserve_manager_v1_interface, version, id);
	if (!resource) {
		wl_client_post_no_memory(client);
		return;
	}
	wl_resource_set_implementation(resource, &manager_impl, proto, NULL);
}

/* Today every client sees the global; a sandboxing policy hooks in here. */
static bool global_filter(const struct wl_client *client, const struct wl_global *global,
		void *data) {
	return true;
}

static void handle_display_destroy(struct wl_listener *listener, void *data) {
	struct reserve_protocol *proto = wl_container_of(listener, proto, display_destroy);
	struct reserve_object *obj, *tmp;
	wl_list_for_each_safe(obj, tmp, &proto->objects, link) {
		object_destroy(obj);
	}
	wl_list_remove(&proto->display_destroy.link);
	wl_global_destroy(proto->global);
	proto->server->reserve_protocol = NULL;
	free(proto);
}

bool reserve_protocol_create(struct qw_server *server) {
	struct reserve_protocol *proto = calloc(1, sizeof(*proto));
	if (!proto) {
		return false;
	}
	proto->server = server;
	wl_list_init(&proto->objects);
	proto->global = wl_global_create(server->wl_display,
		&qosway_reserve_manager_v1_interface, MANAGER_VERSION, proto, manager_bind);
	if (!proto->global) {
		free(proto);
		return false;
	}
	wl_display_set_global_filter(server->wl_display, global_filter, proto);
	proto->display_destroy.notify = handle_display_destroy;
	wl_display_add_destroy_listener(server->wl_display, &proto->display_destroy);
	server->reserve_protocol = proto;
	return true;
}

void reserve_protocol_notify(struct qw_server *server, const struct qos_event *event) {
	struct qos_manager *qos = qos_link_manager(server);
	struct reserve_protocol *proto = server->reserve_protocol;
	if (!proto) {
		return;
	}
	struct reserve_object *obj;
	wl_list_for_each(obj, &proto->objects, link) {
		char buf[QOS_NAME_MAX + 1];
		const char *name = reserve_name(obj, buf, sizeof(buf));
		bool same_reserve = event->reserve && strcmp(event->reserve, name) == 0;
		bool same_process = event->pid == obj->pid;
		switch (event->type) {
		case QOS_EVENT_PARAMS_CHANGED:
			if (same_reserve) {
				send_params(obj);
			}
			break;
		case QOS_EVENT_MEMBER_JOINED:
		case QOS_EVENT_MEMBER_LEFT:
			/* The user (button, qosctl) moved the app elsewhere: it
			 * should know, and what it joined is no longer its own. */
			if (same_process && !same_reserve) {
				send_params(obj);
			} else if (same_process && event->type == QOS_EVENT_MEMBER_LEFT &&
					!joined_here(obj, event->tid)) {
				send_params(obj);
			}
			break;
		case QOS_EVENT_RESERVE_DELETED:
			if (same_reserve) {
				obj->n_joined = 0;
				obj->have_params = false;
				send_params(obj);
			}
			break;
		case QOS_EVENT_OVERRUN:
			if (same_reserve && !object_frozen(obj)) {
				struct qos_reserve_info info;
				uint64_t billed = qos && qos_manager_reserve_info(qos, name, &info) ?
					info.billed_us : 0;
				qosway_reserve_v1_send_overrun(obj->resource, (uint32_t)event->used_us,
					(uint32_t)billed);
			}
			break;
		default:
			break;
		}
	}
}
