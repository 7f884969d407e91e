/*
 * qosway-reserve-v1: QoS-aware clients ask for CPU reserves over their own
 * Wayland connection. Everything goes through the same QoS gate (qos_gate.h)
 * as the titlebar buttons and qosctl, so the three never disagree; this
 * file only translates requests and events. A client only ever affects its
 * own process: the pid comes from the connection's pidfd.
 */
#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <wlr/util/log.h>

#include "qos_bridge/client_identity.h"
#include "qos/proc.h"
#include "qos/qos.h"
#include "qos_bridge/qos_gate.h"
#include "qos_bridge/qos_link.h"
#include "qosway-reserve-v1-protocol.h"
#include "qos_bridge/reserve_protocol.h"

#define MANAGER_VERSION 2
#define PPM_MAX 1000000u
#define MAX_OBJECTS_PER_CLIENT 64
#define MAX_SET_PARAMS_PER_SECOND 10
#define MIN_FEEDBACK_MS 100

struct reserve_object {
	struct wl_resource *resource;
	struct qw_server *server;
	struct wl_list link; /* reserve_protocol.objects */
	pid_t pid; /* the client's process at connection */
	bool automatic; /* "" : the process's automatic reserve */
	char name[QOS_NAME_MAX + 1];
	bool have_params; /* pending parameters for a not yet created auto reserve */
	struct qos_params params;
	pid_t joined[16]; /* tids joined through this object; 0 = process */
	size_t n_joined;
	uint32_t feedback_ms;
	struct wl_event_source *feedback_timer;
	uint64_t last_periods; /* stats sent up to this period count */
	bool params_sent;
	uint32_t sent[6]; /* the last params event, to send changes only */
	/* Version 2 pending state, taken by every set_params from then on. */
	struct qos_adapt_params adapt;
	bool period_vblank;
};

struct reserve_protocol {
	struct qw_server *server;
	struct wl_global *global;
	struct wl_list objects; /* reserve_object.link */
	struct wl_listener display_destroy;
	struct wl_listener qos_event; /* server->events.qos_event */
};

static const struct qosway_reserve_manager_v1_interface manager_impl;
static const struct qosway_reserve_v1_interface reserve_impl;

static struct reserve_protocol *manager_from_resource(struct wl_resource *resource) {
	assert(wl_resource_instance_of(resource, &qosway_reserve_manager_v1_interface, &manager_impl));
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
	const struct qos_rules *rules = qos_link_rules(server);
	char buf[QOS_NAME_MAX + 1];
	const char *name = reserve_name(obj, buf, sizeof(buf));
	struct qos_reserve_info info;
	qos_params_init(out);
	if (qos_link_reserve_info(server, name, &info)) {
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

/* A refusal of the QoS gate, on the wire. */
static enum qosway_reserve_v1_refusal to_wire_refusal(enum qos_gate_refusal why) {
	return why == QOS_GATE_CAPACITY ? QOSWAY_RESERVE_V1_REFUSAL_CAPACITY
									: QOSWAY_RESERVE_V1_REFUSAL_FORBIDDEN;
}

/* Who asks through this object: the client's process, for itself. */
static struct qos_gate_asker asker_of(struct reserve_object *obj) {
	return (struct qos_gate_asker){ .who = QOS_GATE_APP, .pid = obj->pid };
}

/* The object's reserve as the gate names it: NULL for the automatic one. */
static const char *gate_name(struct reserve_object *obj) {
	return obj->automatic ? NULL : obj->name;
}

/* The name of the reserve o holds for process pid, if other than except; else NULL. */
static const char *held_name(struct reserve_object *o, pid_t pid, const char *except, char *buf,
		size_t len) {
	if (o->pid != pid || !(o->have_params || o->n_joined)) {
		return NULL;
	}
	const char *name = reserve_name(o, buf, len);
	return strcmp(name, except) != 0 ? name : NULL;
}

/*
 * The qos utilisation of reserve `name` as process pid holds it: the
 * manager's parameters once it exists, else the largest any of the
 * process's objects asked for (the first to join creates it).
 */
static uint64_t name_ppm(struct reserve_protocol *proto, pid_t pid, const char *name) {
	struct qos_reserve_info info;
	if (qos_link_reserve_info(proto->server, name, &info)) {
		return info.params.policy == QOS_POLICY_QOS ? qos_params_util_ppm(&info.params) : 0;
	}
	uint64_t most = 0;
	struct reserve_object *o;
	wl_list_for_each(o, &proto->objects, link) {
		char buf[QOS_NAME_MAX + 1];
		if (o->pid == pid && o->have_params && o->params.policy == QOS_POLICY_QOS &&
				strcmp(reserve_name(o, buf, sizeof(buf)), name) == 0 &&
				qos_params_util_ppm(&o->params) > most) {
			most = qos_params_util_ppm(&o->params);
		}
	}
	return most;
}

uint64_t reserve_protocol_held_ppm(struct qw_server *server, pid_t pid, const char *except) {
	struct reserve_protocol *proto = server->reserve_protocol;
	uint64_t sum = 0;
	struct reserve_object *o, *e;
	if (!proto) {
		return 0;
	}
	/* Every object of every connection of the process; each reserve is
	 * counted at its first object, however many hold it. */
	wl_list_for_each(o, &proto->objects, link) {
		char buf[QOS_NAME_MAX + 1], other_buf[QOS_NAME_MAX + 1];
		const char *name = held_name(o, pid, except, buf, sizeof(buf));
		if (!name) {
			continue;
		}
		bool counted = false;
		wl_list_for_each(e, &proto->objects, link) {
			if (e == o) {
				break;
			}
			const char *other = held_name(e, pid, except, other_buf, sizeof(other_buf));
			if (other && strcmp(other, name) == 0) {
				counted = true;
				break;
			}
		}
		if (!counted) {
			sum += name_ppm(proto, pid, name);
		}
	}
	return sum;
}

bool reserve_protocol_placed(struct qw_server *server, pid_t pid) {
	struct reserve_protocol *proto = server->reserve_protocol;
	struct reserve_object *o;
	if (!proto) {
		return false;
	}
	wl_list_for_each(o, &proto->objects, link) {
		if (o->pid == pid && o->n_joined > 0) {
			return true;
		}
	}
	return false;
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
		uint32_t policy, uint32_t fallback, uint32_t period_us, uint32_t slice_us, int32_t nice,
		uint32_t priority) {
	struct reserve_object *obj = object_from_resource(resource);
	if (!obj) {
		return;
	}
	struct qos_params p;
	qos_params_init(&p);
	bool rt = policy == QOSWAY_RESERVE_V1_POLICY_FIFO || policy == QOSWAY_RESERVE_V1_POLICY_RR;
	/* A vblank period is the display's; period_us only stands in until the
	 * first vblank, and may be left to the compositor. */
	if (obj->period_vblank && period_us == 0) {
		period_us = QOS_VBLANK_DEFAULT_US;
	}
	if (!from_wire(policy, &p.policy) || !from_wire(fallback, &p.fallback) ||
			slice_us > period_us || (period_us != 0 && (period_us < 100 || period_us > 10000000)) ||
			nice < -20 || nice > 19 || (rt && (priority < 1 || priority > 99))) {
		wl_resource_post_error(resource, QOSWAY_RESERVE_V1_ERROR_INVALID_PARAMS,
				"invalid parameters: policy %u, fallback %u, period %u us, slice %u us, "
				"nice %d, priority %u",
				policy, fallback, period_us, slice_us, nice, priority);
		return;
	}
	p.period_us = period_us;
	p.slice_us = slice_us;
	p.nice = nice;
	p.priority = rt ? (int)priority : 0;
	p.adapt = obj->adapt;
	p.period_vblank = obj->period_vblank;
	bool adapts = p.adapt.auto_slice || p.adapt.continuous;
	/* Both work per period; a frozen reserve has nothing to measure, and
	 * an idle one no share worth sizing. */
	if ((adapts || p.period_vblank) &&
			(p.policy == QOS_POLICY_PAUSE || p.period_us == 0 ||
					(adapts && p.policy == QOS_POLICY_IDLE))) {
		wl_resource_post_error(resource, QOSWAY_RESERVE_V1_ERROR_INVALID_ADAPT,
				"%s needs a period and a policy other than pause%s",
				adapts ? "adaptation" : "a vblank period", adapts ? " or idle" : "");
		return;
	}
	if (!rate_ok(obj)) {
		send_refused(obj, QOSWAY_RESERVE_V1_REFUSAL_RATE_LIMITED,
				"more than 10 set_params a second");
		return;
	}
	struct qw_server *server = obj->server;
	struct qos_gate_asker asker = asker_of(obj);
	enum qos_gate_refusal why;
	char err[256], buf[QOS_NAME_MAX + 1];
	struct qos_reserve_info info;
	if (obj->automatic &&
			!qos_link_reserve_info(server, reserve_name(obj, buf, sizeof(buf)), &info)) {
		/* Created with the process as its first member, on join(0). */
		if (!qos_gate_may_define(server, &asker, NULL, &p, &why, err, sizeof(err))) {
			send_refused(obj, to_wire_refusal(why), err);
			return;
		}
		obj->params = p;
		obj->have_params = true;
		send_params(obj);
		qosway_reserve_v1_send_granted(obj->resource);
		return;
	}
	if (!qos_gate_define(server, &asker, gate_name(obj), &p, &why, err, sizeof(err))) {
		send_refused(obj, to_wire_refusal(why), err);
		return;
	}
	obj->params = p;
	obj->have_params = true;
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
	char err[256];
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
	struct qos_gate_asker asker = asker_of(obj);
	enum qos_gate_refusal why;
	if (!qos_gate_join(obj->server, &asker, gate_name(obj), obj->pid, (pid_t)tid,
				obj->have_params ? &obj->params : NULL, &why, err, sizeof(err))) {
		send_refused(obj, to_wire_refusal(why), err);
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
	if (!obj || !qos_link_manager(obj->server)) {
		return;
	}
	struct qos_gate_asker asker = asker_of(obj);
	qos_gate_leave(obj->server, &asker, gate_name(obj), obj->pid, (pid_t)tid);
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
	const char *in = qos_link_reserve_of(obj->server, obj->pid);
	struct qos_reserve_info info;
	return in && qos_link_reserve_info(obj->server, in, &info) &&
			info.params.policy == QOS_POLICY_PAUSE;
}

static int handle_feedback_timer(void *data) {
	struct reserve_object *obj = data;
	char buf[QOS_NAME_MAX + 1];
	struct qos_reserve_info info;
	if (!object_frozen(obj) &&
			qos_link_reserve_info(obj->server, reserve_name(obj, buf, sizeof(buf)), &info)) {
		/* The last period's use, own and billed apart. */
		uint64_t period = info.params.period_us ? info.params.period_us : 1000000;
		uint64_t own = info.last_used_us > info.last_billed_us
				? info.last_used_us - info.last_billed_us
				: 0;
		qosway_reserve_v1_send_stats(obj->resource, (uint32_t)period, (uint32_t)own,
				(uint32_t)info.last_billed_us);
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
	obj->feedback_ms = interval_ms == 0     ? 0
			: interval_ms < MIN_FEEDBACK_MS ? MIN_FEEDBACK_MS
											: interval_ms;
	if (!obj->feedback_ms) {
		if (obj->feedback_timer) {
			wl_event_source_remove(obj->feedback_timer);
			obj->feedback_timer = NULL;
		}
		return;
	}
	if (!obj->feedback_timer) {
		obj->feedback_timer =
				wl_event_loop_add_timer(obj->server->event_loop, handle_feedback_timer, obj);
	}
	if (obj->feedback_timer) {
		wl_event_source_timer_update(obj->feedback_timer, obj->feedback_ms);
	}
}

static void handle_set_adaptive(struct wl_client *client, struct wl_resource *resource,
		uint32_t flags, uint32_t min_ppm, uint32_t max_ppm) {
	struct reserve_object *obj = object_from_resource(resource);
	if (!obj) {
		return;
	}
	const uint32_t known = QOSWAY_RESERVE_V1_ADAPT_AUTO_SLICE | QOSWAY_RESERVE_V1_ADAPT_CONTINUOUS;
	if ((flags & ~known) || min_ppm > PPM_MAX || max_ppm > PPM_MAX ||
			(max_ppm != 0 && min_ppm > max_ppm)) {
		wl_resource_post_error(resource, QOSWAY_RESERVE_V1_ERROR_INVALID_ADAPT,
				"invalid adaptation: flags 0x%x, min %u ppm, max %u ppm", flags, min_ppm, max_ppm);
		return;
	}
	obj->adapt = (struct qos_adapt_params){
		.auto_slice = flags & QOSWAY_RESERVE_V1_ADAPT_AUTO_SLICE,
		.continuous = flags & QOSWAY_RESERVE_V1_ADAPT_CONTINUOUS,
		.min_ppm = flags ? min_ppm : 0,
		.max_ppm = flags ? max_ppm : 0,
	};
}

static void handle_set_period_source(struct wl_client *client, struct wl_resource *resource,
		uint32_t source) {
	struct reserve_object *obj = object_from_resource(resource);
	if (!obj) {
		return;
	}
	if (source != QOSWAY_RESERVE_V1_PERIOD_SOURCE_FIXED &&
			source != QOSWAY_RESERVE_V1_PERIOD_SOURCE_VBLANK) {
		wl_resource_post_error(resource, QOSWAY_RESERVE_V1_ERROR_INVALID_ADAPT,
				"unknown period source %u", source);
		return;
	}
	obj->period_vblank = source == QOSWAY_RESERVE_V1_PERIOD_SOURCE_VBLANK;
}

static void handle_work_duration(struct wl_client *client, struct wl_resource *resource,
		uint32_t target_us, uint32_t actual_us) {
	struct reserve_object *obj = object_from_resource(resource);
	if (!obj) {
		return;
	}
	if (target_us == 0) {
		wl_resource_post_error(resource, QOSWAY_RESERVE_V1_ERROR_INVALID_WORK,
				"work_duration with target 0 us (actual %u us)", actual_us);
		return;
	}
	struct qos_manager *qos = qos_link_manager(obj->server);
	if (!qos || obj->n_joined == 0) {
		/* Only a member's work sizes a reserve: a client must not grow
		 * one (a user's, shared) it takes no part in. */
		return;
	}
	char buf[QOS_NAME_MAX + 1];
	/* A reserve that does not adapt has no use for it: not an error, since
	 * the user may have replaced the client's parameters meanwhile. */
	qos_manager_report_work(qos, reserve_name(obj, buf, sizeof(buf)), target_us, actual_us);
}

static void object_destroy(struct reserve_object *obj) {
	if (!obj) {
		return;
	}
	/* Everything joined through this object returns to the default class. */
	struct qos_gate_asker asker = asker_of(obj);
	for (size_t i = 0; i < obj->n_joined; i++) {
		qos_gate_leave(obj->server, &asker, gate_name(obj), obj->pid, obj->joined[i]);
	}
	if (obj->feedback_timer) {
		wl_event_source_remove(obj->feedback_timer);
	}
	struct client_identity *id = client_identity_find(wl_resource_get_client(obj->resource));
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
	.set_adaptive = handle_set_adaptive,
	.set_period_source = handle_set_period_source,
	.work_duration = handle_work_duration,
};

static void handle_get_reserve(struct wl_client *client, struct wl_resource *manager_resource,
		uint32_t id, const char *name) {
	struct reserve_protocol *proto = manager_from_resource(manager_resource);
	char err[256];
	if (name[0] && !qos_name_valid(name, err, sizeof(err))) {
		wl_resource_post_error(manager_resource, QOSWAY_RESERVE_MANAGER_V1_ERROR_INVALID_NAME, "%s",
				err);
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
	struct wl_resource *resource =
			wl_resource_create(client, &qosway_reserve_manager_v1_interface, version, id);
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

/* What the manager did to a reserve or a process an object speaks for. */
static void handle_qos_event(struct wl_listener *listener, void *data) {
	struct reserve_protocol *proto = wl_container_of(listener, proto, qos_event);
	const struct qos_event *event = data;
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
				/* The event's use is own plus billed; the wire has them apart. */
				struct qos_reserve_info info;
				uint64_t billed =
						qos_link_reserve_info(proto->server, name, &info) ? info.billed_us : 0;
				uint64_t own = event->used_us > billed ? event->used_us - billed : 0;
				qosway_reserve_v1_send_overrun(obj->resource, (uint32_t)own, (uint32_t)billed);
			}
			break;
		default:
			break;
		}
	}
}

static void handle_display_destroy(struct wl_listener *listener, void *data) {
	struct reserve_protocol *proto = wl_container_of(listener, proto, display_destroy);
	struct reserve_object *obj, *tmp;
	wl_list_for_each_safe(obj, tmp, &proto->objects, link) {
		object_destroy(obj);
	}
	wl_list_remove(&proto->display_destroy.link);
	wl_list_remove(&proto->qos_event.link);
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
	proto->global = wl_global_create(server->wl_display, &qosway_reserve_manager_v1_interface,
			MANAGER_VERSION, proto, manager_bind);
	if (!proto->global) {
		free(proto);
		return false;
	}
	wl_display_set_global_filter(server->wl_display, global_filter, proto);
	proto->display_destroy.notify = handle_display_destroy;
	wl_display_add_destroy_listener(server->wl_display, &proto->display_destroy);
	proto->qos_event.notify = handle_qos_event;
	wl_signal_add(&server->events.qos_event, &proto->qos_event);
	server->reserve_protocol = proto;
	return true;
}
