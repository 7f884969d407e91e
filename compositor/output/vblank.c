#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wlr/types/wlr_output.h>
#include <wlr/util/log.h>

#include "output/output.h"
#include "qos/qos.h"
#include "qos_bridge/qos_link.h"
#include "output/vblank.h"
#include "desktop/view.h"
#include "desktop/view_output.h"

/* More vblank reserves than this follow no display (logged once). */
#define VBLANK_MAX_RESERVES 32
#define VBLANK_MAX_MEMBERS 64

struct qw_vblank {
	struct qw_server *server;
	/* The period=vblank reserves, read again after any reserve changes:
	 * a present then costs nothing while there are none. */
	char names[VBLANK_MAX_RESERVES][QOS_NAME_MAX + 1];
	size_t n_names;
	bool stale;
	bool overflow_logged;
	struct wl_listener qos_event; /* server->events.qos_event */
};

/* Any change to the reserves may add or drop a period=vblank one. */
static void handle_qos_event(struct wl_listener *listener, void *data) {
	struct qw_vblank *vblank = wl_container_of(listener, vblank, qos_event);
	const struct qos_event *event = data;
	switch (event->type) {
	case QOS_EVENT_RESERVE_CREATED:
	case QOS_EVENT_RESERVE_DELETED:
	case QOS_EVENT_RESERVE_RENAMED:
	case QOS_EVENT_PARAMS_CHANGED:
		vblank->stale = true;
		break;
	default:
		break;
	}
}

bool vblank_create(struct qw_server *server) {
	struct qw_vblank *vblank = calloc(1, sizeof(*vblank));
	if (!vblank) {
		return false;
	}
	vblank->server = server;
	vblank->stale = true;
	vblank->qos_event.notify = handle_qos_event;
	wl_signal_add(&server->events.qos_event, &vblank->qos_event);
	server->vblank = vblank;
	return true;
}

void vblank_destroy(struct qw_vblank *vblank) {
	if (!vblank) {
		return;
	}
	wl_list_remove(&vblank->qos_event.link);
	vblank->server->vblank = NULL;
	free(vblank);
}

static void rescan(struct qw_vblank *vblank, struct qos_manager *qos) {
	vblank->n_names = 0;
	vblank->stale = false;
	size_t n = qos_manager_reserve_count(qos);
	for (size_t i = 0; i < n; i++) {
		struct qos_reserve_info info;
		if (!qos_manager_reserve_at(qos, i, &info) || !info.params.period_vblank) {
			continue;
		}
		if (vblank->n_names == VBLANK_MAX_RESERVES) {
			if (!vblank->overflow_logged) {
				wlr_log(WLR_ERROR, "more than %d period=vblank reserves: %s follows no display",
						VBLANK_MAX_RESERVES, info.name);
				vblank->overflow_logged = true;
			}
			continue;
		}
		snprintf(vblank->names[vblank->n_names++], sizeof(vblank->names[0]), "%s", info.name);
	}
}

/* The output the reserve's window is mostly on: the first window, in focus
 * order, of the first member that has one. */
static struct qw_output *reserve_output(struct qw_server *server, struct qos_manager *qos,
		const char *name) {
	struct qos_member_info members[VBLANK_MAX_MEMBERS];
	ssize_t count = qos_manager_members(qos, name, members, VBLANK_MAX_MEMBERS);
	for (ssize_t m = 0; m < count && m < VBLANK_MAX_MEMBERS; m++) {
		struct qw_view *view;
		wl_list_for_each(view, &server->views, link) {
			if (view->mapped && view_get_pid(view) == members[m].pid) {
				struct qw_output *output = view_main_output(view);
				if (output) {
					return output;
				}
			}
		}
	}
	return NULL;
}

void vblank_output_presented(struct qw_output *output,
		const struct wlr_output_event_present *event) {
	struct qw_server *server = output->server;
	struct qw_vblank *vblank = server->vblank;
	struct qos_manager *qos = qos_link_manager(server);
	if (!vblank || !qos || !event->presented || !event->when) {
		return;
	}
	if (vblank->stale) {
		rescan(vblank, qos);
	}
	if (vblank->n_names == 0) {
		return;
	}
	/* The backend's measured refresh, else the mode's. */
	uint64_t refresh_us = event->refresh > 0 ? (uint64_t)event->refresh / 1000
			: output->wlr_output->refresh > 0
			? 1000000000ull / (uint64_t)output->wlr_output->refresh
			: 0;
	if (refresh_us == 0) {
		return;
	}
	uint64_t when_us =
			(uint64_t)event->when->tv_sec * 1000000ull + (uint64_t)event->when->tv_nsec / 1000;
	for (size_t i = 0; i < vblank->n_names; i++) {
		if (reserve_output(server, qos, vblank->names[i]) != output) {
			continue;
		}
		char err[256];
		if (!qos_manager_vblank(qos, vblank->names[i], when_us, refresh_us, err, sizeof(err))) {
			/* A refused period keeps the old one; the manager reports it. */
			wlr_log(WLR_DEBUG, "vblank of %s for %s: %s", output->wlr_output->name,
					vblank->names[i], err);
		}
	}
}
