#include <wlr/backend/headless.h>
#include <wlr/types/wlr_data_control_v1.h>
#include <wlr/types/wlr_gamma_control_v1.h>
#include <wlr/types/wlr_output.h>
#include <wlr/types/wlr_output_power_management_v1.h>
#include <wlr/types/wlr_xdg_foreign_registry.h>
#include <wlr/types/wlr_xdg_foreign_v1.h>
#include <wlr/types/wlr_xdg_foreign_v2.h>
#include <wlr/util/log.h>

#include "desktop/desktop_protocols.h"
#include "server.h"

static void handle_output_power_set_mode(struct wl_listener *listener, void *data) {
	struct qw_server *server = wl_container_of(listener, server, output_power.set_mode);
	struct wlr_output_power_v1_set_mode_event *event = data;
	bool on = event->mode == ZWLR_OUTPUT_POWER_V1_MODE_ON;
	struct wlr_output *output = event->output;
	if (output->enabled == on) {
		return;
	}
	/* wlroots 0.15's headless outputs pass the test of a disable but fail
	 * its commit: refuse before anything changes. */
	if (!on && wlr_output_is_headless(output)) {
		wlr_log(WLR_ERROR, "output power: %s stays on: headless outputs cannot be powered off",
				output->name);
		return;
	}
	wlr_output_enable(output, on);
	if (!wlr_output_commit(output)) {
		wlr_log(WLR_ERROR, "output power: %s refused to power %s", output->name, on ? "on" : "off");
		wlr_output_rollback(output);
		return;
	}
	/* Powered on again, it has nothing to show until the scene is drawn. */
	if (on) {
		wlr_output_schedule_frame(output);
	}
}

bool desktop_protocols_init(struct qw_server *server) {
	struct wl_display *display = server->wl_display;
	if (!wlr_data_control_manager_v1_create(display)) {
		wlr_log(WLR_ERROR, "cannot create the wlr-data-control global");
		return false;
	}
	if (!wlr_gamma_control_manager_v1_create(display)) {
		wlr_log(WLR_ERROR, "cannot create the wlr-gamma-control global");
		return false;
	}
	server->output_power.manager = wlr_output_power_manager_v1_create(display);
	if (!server->output_power.manager) {
		wlr_log(WLR_ERROR, "cannot create the wlr-output-power-management global");
		return false;
	}
	server->output_power.set_mode.notify = handle_output_power_set_mode;
	wl_signal_add(&server->output_power.manager->events.set_mode, &server->output_power.set_mode);
	struct wlr_xdg_foreign_registry *registry = wlr_xdg_foreign_registry_create(display);
	if (!registry || !wlr_xdg_foreign_v1_create(display, registry) ||
			!wlr_xdg_foreign_v2_create(display, registry)) {
		wlr_log(WLR_ERROR, "cannot create the xdg-foreign globals");
		return false;
	}
	return true;
}

void desktop_protocols_finish(struct qw_server *server) {
	if (server->output_power.set_mode.notify) {
		wl_list_remove(&server->output_power.set_mode.link);
		server->output_power.set_mode.notify = NULL;
	}
}
