#include <stdlib.h>
#include <wlr/types/wlr_output.h>
#include <wlr/types/wlr_output_layout.h>
#include <wlr/types/wlr_output_management_v1.h>
#include <wlr/util/log.h>

#include "output/output.h"
#include "output/output_apply.h"
#include "output/output_management.h"

struct qw_output_management {
	struct qw_server *server;
	struct wlr_output_manager_v1 *manager;
	struct wl_listener apply;
	struct wl_listener test;
	struct wl_listener destroy;
};

void output_management_update(struct qw_server *server) {
	struct qw_output_management *om = server->output_management;
	if (!om) {
		return;
	}
	struct wlr_output_configuration_v1 *config = wlr_output_configuration_v1_create();
	if (!config) {
		return;
	}
	struct qw_output *output;
	wl_list_for_each(output, &server->outputs, link) {
		struct wlr_output_configuration_head_v1 *head =
				wlr_output_configuration_head_v1_create(config, output->wlr_output);
		if (!head) {
			wlr_output_configuration_v1_destroy(config);
			return;
		}
		struct wlr_box box = output_layout_box(output);
		head->state.x = box.x;
		head->state.y = box.y;
	}
	/* The manager takes the configuration over. */
	wlr_output_manager_v1_set_configuration(om->manager, config);
}

/* The client's configuration as output states; false for a head whose
 * output is gone or was never ours. */
static bool states_from_config(struct wlr_output_configuration_v1 *config,
		struct output_state *states, size_t *count) {
	struct wlr_output_configuration_head_v1 *head;
	size_t n = 0;
	wl_list_for_each(head, &config->heads, link) {
		struct qw_output *output = head->state.output ? head->state.output->data : NULL;
		if (!output) {
			return false;
		}
		struct output_state *s = &states[n++];
		output_state_current(output, s);
		s->enabled = head->state.enabled;
		if (!head->state.enabled) {
			continue;
		}
		s->mode = head->state.mode;
		if (!s->mode) {
			s->width = head->state.custom_mode.width;
			s->height = head->state.custom_mode.height;
			s->refresh_mhz = head->state.custom_mode.refresh;
		}
		s->has_position = true;
		s->x = head->state.x;
		s->y = head->state.y;
		s->scale = head->state.scale;
		s->transform = head->state.transform;
	}
	*count = n;
	return true;
}

static void handle_request(struct qw_output_management *om,
		struct wlr_output_configuration_v1 *config, bool test_only) {
	struct qw_server *server = om->server;
	size_t n = (size_t)wl_list_length(&config->heads);
	struct output_state *states = calloc(n ? n : 1, sizeof(*states));
	char err[256] = "unknown output";
	size_t count = 0;
	bool ok = states && states_from_config(config, states, &count) &&
			output_apply_states(server, states, count, test_only, err, sizeof(err));
	if (ok) {
		wlr_output_configuration_v1_send_succeeded(config);
	} else {
		wlr_log(WLR_INFO, "output configuration %s failed: %s", test_only ? "test" : "apply", err);
		wlr_output_configuration_v1_send_failed(config);
	}
	wlr_output_configuration_v1_destroy(config);
	free(states);
}

static void handle_apply(struct wl_listener *listener, void *data) {
	struct qw_output_management *om = wl_container_of(listener, om, apply);
	handle_request(om, data, false);
}

static void handle_test(struct wl_listener *listener, void *data) {
	struct qw_output_management *om = wl_container_of(listener, om, test);
	handle_request(om, data, true);
}

static void handle_destroy(struct wl_listener *listener, void *data) {
	struct qw_output_management *om = wl_container_of(listener, om, destroy);
	wl_list_remove(&om->apply.link);
	wl_list_remove(&om->test.link);
	wl_list_remove(&om->destroy.link);
	om->server->output_management = NULL;
	free(om);
}

bool output_management_init(struct qw_server *server) {
	struct qw_output_management *om = calloc(1, sizeof(*om));
	if (!om) {
		return false;
	}
	om->manager = wlr_output_manager_v1_create(server->wl_display);
	if (!om->manager) {
		free(om);
		return false;
	}
	om->server = server;
	om->apply.notify = handle_apply;
	wl_signal_add(&om->manager->events.apply, &om->apply);
	om->test.notify = handle_test;
	wl_signal_add(&om->manager->events.test, &om->test);
	om->destroy.notify = handle_destroy;
	wl_signal_add(&om->manager->events.destroy, &om->destroy);
	server->output_management = om;
	return true;
}
