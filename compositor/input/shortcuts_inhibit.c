#include <stdlib.h>
#include <wlr/types/wlr_keyboard_shortcuts_inhibit_v1.h>
#include <wlr/types/wlr_seat.h>
#include <wlr/util/log.h>

#include "server.h"
#include "input/shortcuts_inhibit.h"

struct qw_shortcuts_inhibit {
	struct qw_server *server;
	struct wlr_keyboard_shortcuts_inhibit_manager_v1 *manager;
	struct wl_listener new_inhibitor;
	struct wl_listener focus_change;
};

/* The inhibitor wlroots keeps for the focused surface on our seat, if any. */
static struct wlr_keyboard_shortcuts_inhibitor_v1 *focused_inhibitor(
		struct qw_shortcuts_inhibit *si) {
	struct wlr_seat *seat = si->server->seat;
	struct wlr_surface *focused = seat->keyboard_state.focused_surface;
	struct wlr_keyboard_shortcuts_inhibitor_v1 *inhibitor;
	wl_list_for_each(inhibitor, &si->manager->inhibitors, link) {
		if (focused && inhibitor->surface == focused && inhibitor->seat == seat) {
			return inhibitor;
		}
	}
	return NULL;
}

static void handle_new_inhibitor(struct wl_listener *listener, void *data) {
	struct qw_shortcuts_inhibit *si = wl_container_of(listener, si, new_inhibitor);
	struct wlr_keyboard_shortcuts_inhibitor_v1 *inhibitor = data;
	if (inhibitor == focused_inhibitor(si)) {
		wlr_keyboard_shortcuts_inhibitor_v1_activate(inhibitor);
	}
}

/* Only the focused surface's inhibitor is active, and it is as soon as the
 * surface gets focus (a toggle lasts until focus moves). */
static void handle_focus_change(struct wl_listener *listener, void *data) {
	struct qw_shortcuts_inhibit *si = wl_container_of(listener, si, focus_change);
	struct wlr_seat_keyboard_focus_change_event *event = data;
	struct wlr_keyboard_shortcuts_inhibitor_v1 *inhibitor;
	wl_list_for_each(inhibitor, &si->manager->inhibitors, link) {
		if (inhibitor->seat != si->server->seat) {
			continue;
		}
		if (inhibitor->surface == event->new_surface) {
			if (!inhibitor->active) {
				wlr_keyboard_shortcuts_inhibitor_v1_activate(inhibitor);
			}
		} else if (inhibitor->active) {
			wlr_keyboard_shortcuts_inhibitor_v1_deactivate(inhibitor);
		}
	}
}

bool shortcuts_inhibit_active(struct qw_server *server) {
	struct qw_shortcuts_inhibit *si = server->shortcuts_inhibit;
	struct wlr_keyboard_shortcuts_inhibitor_v1 *inhibitor = si ? focused_inhibitor(si) : NULL;
	return inhibitor && inhibitor->active;
}

void shortcuts_inhibit_toggle(struct qw_server *server) {
	struct qw_shortcuts_inhibit *si = server->shortcuts_inhibit;
	struct wlr_keyboard_shortcuts_inhibitor_v1 *inhibitor = si ? focused_inhibitor(si) : NULL;
	if (!inhibitor) {
		return;
	}
	if (inhibitor->active) {
		wlr_keyboard_shortcuts_inhibitor_v1_deactivate(inhibitor);
	} else {
		wlr_keyboard_shortcuts_inhibitor_v1_activate(inhibitor);
	}
}

bool shortcuts_inhibit_init(struct qw_server *server) {
	struct qw_shortcuts_inhibit *si = calloc(1, sizeof(*si));
	if (!si) {
		return false;
	}
	si->server = server;
	si->manager = wlr_keyboard_shortcuts_inhibit_v1_create(server->wl_display);
	if (!si->manager) {
		wlr_log(WLR_ERROR, "cannot create the keyboard-shortcuts-inhibit global");
		free(si);
		return false;
	}
	si->new_inhibitor.notify = handle_new_inhibitor;
	wl_signal_add(&si->manager->events.new_inhibitor, &si->new_inhibitor);
	si->focus_change.notify = handle_focus_change;
	wl_signal_add(&server->seat->keyboard_state.events.focus_change, &si->focus_change);
	server->shortcuts_inhibit = si;
	return true;
}

void shortcuts_inhibit_finish(struct qw_server *server) {
	struct qw_shortcuts_inhibit *si = server ? server->shortcuts_inhibit : NULL;
	if (!si) {
		return;
	}
	wl_list_remove(&si->new_inhibitor.link);
	wl_list_remove(&si->focus_change.link);
	server->shortcuts_inhibit = NULL;
	free(si);
}
