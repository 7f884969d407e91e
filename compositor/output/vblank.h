/*
 * period=vblank reserves: their period follows the refresh of the output
 * their window is on, and each period starts at that output's presentation
 * (qos_manager_vblank). Outputs that show no such window cost one check.
 */
#ifndef QOSWAY_VBLANK_H
#define QOSWAY_VBLANK_H

#include <stdbool.h>

#include "server.h"

struct qw_output;
struct wlr_output_event_present;

/* Listens to server->events.qos_event: when reserves come, go or change,
 * which ones are period=vblank is read again. */
bool vblank_create(struct qw_server *server);
void vblank_destroy(struct qw_vblank *vblank);
/* The output showed a frame: the vblank reserves whose window is on it follow. */
void vblank_output_presented(struct qw_output *output,
		const struct wlr_output_event_present *event);

#endif
