#include <wlr/types/wlr_seat.h>
#include <wlr/types/wlr_surface.h>
#include <wlr/types/wlr_xdg_activation_v1.h>
#include <wlr/types/wlr_xdg_shell.h>
#include <wlr/util/log.h>

#include "desktop/activation.h"
#include "ipc/ipc.h"
#include "desktop/screen_lock.h"
#include "server.h"
#include "desktop/view.h"

static struct qw_view *focused_view(struct qw_server *server) {
	struct qw_view *view;
	wl_list_for_each(view, &server->views, link) {
		return view->mapped && view->deco.focused ? view : NULL;
	}
	return NULL;
}

void activation_set_urgent(struct qw_view *view, bool urgent) {
	if (view->deco.urgent == urgent) {
		return;
	}
	view->deco.urgent = urgent;
	decoration_set_focused(&view->deco, view->server, view->deco.focused);
	ipc_notify_window(view->server, view, urgent ? "urgent" : "changed");
}

/* Focus, or mark urgent when that would take the keyboard from the user. */
static void activate(struct qw_view *view, bool allowed, const char *why) {
	if (!view->mapped) {
		return;
	}
	if (allowed && !screen_lock_active(view->server)) {
		view_focus(view);
		return;
	}
	if (view->deco.focused) {
		return;
	}
	wlr_log(WLR_DEBUG, "window %u: activation refused (%s): marked urgent", view->id, why);
	activation_set_urgent(view, true);
}

/* Whether the token was made from the input of the client using the keyboard now. */
static const char *token_refusal(struct qw_server *server,
		struct wlr_xdg_activation_token_v1 *token) {
	if (!token->seat) {
		return "token made without an input serial";
	}
	if (!token->surface) {
		return "token made without a surface";
	}
	struct wlr_surface *focused = server->seat->keyboard_state.focused_surface;
	if (!focused) {
		return "nothing has the keyboard";
	}
	if (wl_resource_get_client(focused->resource) !=
			wl_resource_get_client(token->surface->resource)) {
		return "the token's client no longer has the keyboard";
	}
	return NULL;
}

static void handle_request_activate(struct wl_listener *listener, void *data) {
	struct qw_server *server = wl_container_of(listener, server, activation.request_activate);
	struct wlr_xdg_activation_v1_request_activate_event *event = data;
	if (!wlr_surface_is_xdg_surface(event->surface)) {
		return;
	}
	struct wlr_xdg_surface *xdg_surface = wlr_xdg_surface_from_wlr_surface(event->surface);
	if (!xdg_surface || xdg_surface->role != WLR_XDG_SURFACE_ROLE_TOPLEVEL || !xdg_surface->data) {
		return;
	}
	struct qw_node_desc *desc = node_desc_find(xdg_surface->data);
	if (!desc || !desc->view) {
		return;
	}
	const char *refusal = token_refusal(server, event->token);
	activate(desc->view, refusal == NULL, refusal ? refusal : "");
}

void activation_request_x11(struct qw_view *view) {
	struct qw_view *focused = focused_view(view->server);
	bool same_program = focused && focused->xwayland && view_get_pid(focused) > 0 &&
			view_get_pid(focused) == view_get_pid(view);
	activate(view, same_program || focused == view, "another program has the focus");
}

void activation_init(struct qw_server *server) {
	server->activation.request_activate.notify = handle_request_activate;
	wl_signal_add(&server->activation.manager->events.request_activate, &server->activation.request_activate);
}

void activation_finish(struct qw_server *server) {
	if (server->activation.request_activate.notify) {
		wl_list_remove(&server->activation.request_activate.link);
		server->activation.request_activate.notify = NULL;
	}
}
