/* What the IPC shows of the scheduler: its clients and its own state. */
#include <json.h>
#include <wlr/types/wlr_xdg_shell.h>

#include "scheduler/scheduler_internal.h"
#include "server.h"
#include "desktop/view.h"

static const char *client_app_id(struct qw_server *server, struct wl_client *client) {
	struct qw_view *view;
	wl_list_for_each(view, &server->views, link) {
		if (view_client(view) == client && view_app_id(view)) {
			return view_app_id(view);
		}
	}
	return NULL;
}

struct json_object *scheduler_json_clients(struct qw_scheduler *sched) {
	struct json_object *list = json_object_new_array();
	uint64_t now = sched_now_ns();
	struct sched_client *c;
	/* What is not charged yet goes to its owners first. */
	sched_settle(sched);
	wl_list_for_each(c, &sched->clients, link) {
		struct json_object *o = json_object_new_object();
		json_object_object_add(o, "pid", json_object_new_int(c->pid));
		const char *app_id = client_app_id(sched->server, c->client);
		json_object_object_add(o, "app_id", app_id ? json_object_new_string(app_id) : NULL);
		json_object_object_add(o, "reserve",
				c->reserve[0] ? json_object_new_string(c->reserve) : NULL);
		json_object_object_add(o, "server_cpu_us",
				json_object_new_int64((int64_t)(c->server_ns / 1000)));
		json_object_object_add(o, "billed_us",
				json_object_new_int64((int64_t)(c->billed_ns / 1000)));
		json_object_object_add(o, "billed_to",
				c->reserve[0]      ? json_object_new_string("reserve")
						: c->limit ? json_object_new_string("cgroup")
								   : NULL);
		json_object_object_add(o, "realtime", json_object_new_boolean(c->realtime));
		json_object_object_add(o, "exhausted",
				json_object_new_boolean(sched_client_exhausted(c, now)));
		json_object_object_add(o, "gated", json_object_new_boolean(c->gated));
		json_object_array_add(list, o);
	}
	return list;
}

uint64_t scheduler_client_server_us(struct qw_scheduler *sched, struct wl_client *client,
		double *percent) {
	struct sched_client *c = sched ? sched_client_of(sched, client) : NULL;
	*percent = 0.0;
	if (!c) {
		return 0;
	}
	sched_settle(sched);
	uint64_t now = sched_now_ns();
	if (!c->sample_ns) {
		c->sample_ns = now;
		c->sample_server_ns = c->server_ns;
	} else if (now - c->sample_ns >= 900000000ull) {
		c->server_percent =
				100.0 * (double)(c->server_ns - c->sample_server_ns) / (double)(now - c->sample_ns);
		c->sample_ns = now;
		c->sample_server_ns = c->server_ns;
	}
	*percent = c->server_percent;
	return c->server_ns / 1000;
}

struct json_object *scheduler_json(struct qw_scheduler *sched) {
	struct json_object *o = json_object_new_object();
	sched_settle(sched);
	uint64_t clients_ns = sched->gone_ns;
	struct sched_client *c;
	size_t n = 0, exhausted = 0, gated = 0;
	uint64_t now = sched_now_ns();
	wl_list_for_each(c, &sched->clients, link) {
		clients_ns += c->server_ns;
		n++;
		exhausted += sched_client_exhausted(c, now);
		gated += c->gated;
	}
	const struct qw_config *config = &sched->server->config;
	json_object_object_add(o, "serve_by_reserve", json_object_new_boolean(sched->serve));
	json_object_object_add(o, "bill", json_object_new_boolean(sched->bill));
	json_object_object_add(o, "boost", json_object_new_boolean(config->scheduling.boost));
	json_object_object_add(o, "boost_available", json_object_new_boolean(sched->boost.available));
	json_object_object_add(o, "boost_note",
			sched->boost.note[0] ? json_object_new_string(sched->boost.note) : NULL);
	json_object_object_add(o, "boosted", json_object_new_boolean(sched->boost.active));
	json_object_object_add(o, "server_weight", json_object_new_int((int)sched->server_weight));
	json_object_object_add(o, "server_weight_note",
			sched->weight_note[0] ? json_object_new_string(sched->weight_note) : NULL);
	uint64_t boosted_ns =
			sched->boost.active_ns + (sched->boost.active ? now - sched->boost.since_ns : 0);
	json_object_object_add(o, "boosts", json_object_new_int64((int64_t)sched->boost.count));
	json_object_object_add(o, "boosted_us", json_object_new_int64((int64_t)(boosted_ns / 1000)));
	json_object_object_add(o, "boost_revocations",
			json_object_new_int64((int64_t)sched->boost.revocations));
	json_object_object_add(o, "hidden_frame_rate",
			json_object_new_int((int)config->scheduling.hidden_frame_rate));
	json_object_object_add(o, "gating", json_object_new_boolean(sched->gating));
	json_object_object_add(o, "accounting", json_object_new_boolean(sched->accounting));
	json_object_object_add(o, "cpu_us",
			json_object_new_int64((int64_t)((clients_ns + sched->own_ns + sched->next_ns) / 1000)));
	json_object_object_add(o, "clients_us", json_object_new_int64((int64_t)(clients_ns / 1000)));
	json_object_object_add(o, "own_us",
			json_object_new_int64((int64_t)((sched->own_ns + sched->next_ns) / 1000)));
	json_object_object_add(o, "qos_us", json_object_new_int64((int64_t)(sched->qos_ns / 1000)));
	json_object_object_add(o, "books_us", json_object_new_int64((int64_t)(sched->books_ns / 1000)));
	json_object_object_add(o, "bills_us", json_object_new_int64((int64_t)(sched->bills_ns / 1000)));
	json_object_object_add(o, "bills", json_object_new_int64((int64_t)sched->bills));
	json_object_object_add(o, "thread_cpu_us",
			json_object_new_int64((int64_t)(sched_thread_ns() / 1000)));
	json_object_object_add(o, "clients", json_object_new_int((int)n));
	json_object_object_add(o, "realtime_clients", json_object_new_int((int)sched->n_realtime));
	json_object_object_add(o, "exhausted_clients", json_object_new_int((int)exhausted));
	json_object_object_add(o, "gated_clients", json_object_new_int((int)gated));
	json_object_object_add(o, "best_effort_divisor", json_object_new_int((int)sched->divisor));
	json_object_object_add(o, "holding_commits", json_object_new_boolean(sched->hold));
	json_object_object_add(o, "realtime_phases", json_object_new_int64((int64_t)sched->rt_phases));
	json_object_object_add(o, "frames", json_object_new_int64((int64_t)sched->frames));
	json_object_object_add(o, "iterations", json_object_new_int64((int64_t)sched->iterations));
	return o;
}
