/*
 * Idle detection's state, owned by idle.c: the idle protocol, the
 * inhibitors and whether one is visible, and the touch devices watched for
 * activity.
 */
#ifndef QOSWAY_DESKTOP_IDLE_STATE_H
#define QOSWAY_DESKTOP_IDLE_STATE_H

#include <stdbool.h>
#include <wayland-server-core.h>

struct wlr_idle;
struct wlr_idle_inhibit_manager_v1;

struct qw_idle_state {
	struct wlr_idle *manager;
	struct wlr_idle_inhibit_manager_v1 *inhibit_manager;
	struct wl_listener new_inhibitor;
	struct wl_list inhibitors; /* qw_idle_inhibitor.link (idle.c) */
	bool inhibited; /* an inhibitor's surface is visible */
	struct wl_listener new_input; /* touch devices, for activity */
	struct wl_list touch_devices; /* qw_idle_touch.link (idle.c) */
};

#endif
