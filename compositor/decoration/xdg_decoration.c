/*
 * Decoration negotiation. A client that draws its own decorations says so
 * with xdg-decoration (client_side) or, like GTK 3, with KDE's
 * server-decoration protocol (mode client); `csd-buttons` then decides what
 * we add (decoration.h), as for a toplevel that maps without a decoration
 * object of either protocol but with a window geometry inset from its
 * surface: such clients (weston's toytoolkit) draw a frame and shadow of
 * their own, and our full frame would be a second titlebar. GTK 4 asks for
 * client mode before its surface has a role; the mode it asked for is
 * applied when the toplevel maps.
 * Everyone else, a client that asks for server-side decorations or leaves
 * the choice to us included, gets our full frame.
 */
#include <stdlib.h>
#include <wlr/types/wlr_server_decoration.h>
#include <wlr/types/wlr_xdg_decoration_v1.h>
#include <wlr/types/wlr_xdg_shell.h>
#include <wlr/util/log.h>

#include "decoration/decoration.h"
#include "server.h"
#include "desktop/view.h"
#include "decoration/xdg_decoration.h"

struct xdg_decoration {
	struct qw_server *server;
	struct wlr_xdg_toplevel_decoration_v1 *decoration;
	struct wl_listener request_mode;
	struct wl_listener destroy;
};

struct kde_decoration {
	struct wlr_server_decoration *decoration;
	struct wl_listener mode;
	struct wl_listener destroy;
};

static struct qw_view *view_of_surface(struct wlr_surface *surface) {
	if (!surface || !wlr_surface_is_xdg_surface(surface)) {
		return NULL;
	}
	struct wlr_xdg_surface *xdg = wlr_xdg_surface_from_wlr_surface(surface);
	if (!xdg || xdg->role != WLR_XDG_SURFACE_ROLE_TOPLEVEL || !xdg->data) {
		return NULL;
	}
	struct qw_node_desc *desc = node_desc_find(xdg->data);
	return desc ? desc->view : NULL;
}

static void handle_request_mode(struct wl_listener *listener, void *data) {
	struct xdg_decoration *deco = wl_container_of(listener, deco, request_mode);
	bool client_side =
			deco->decoration->requested_mode == WLR_XDG_TOPLEVEL_DECORATION_V1_MODE_CLIENT_SIDE &&
			deco->server->config.csd_buttons != QW_CSD_BUTTONS_TITLEBAR;
	wlr_xdg_toplevel_decoration_v1_set_mode(deco->decoration,
			client_side ? WLR_XDG_TOPLEVEL_DECORATION_V1_MODE_CLIENT_SIDE
						: WLR_XDG_TOPLEVEL_DECORATION_V1_MODE_SERVER_SIDE);
	struct qw_view *view = view_of_surface(deco->decoration->surface->surface);
	if (view) {
		decoration_set_client_side(&view->deco, view, client_side);
	}
}

static void handle_destroy(struct wl_listener *listener, void *data) {
	struct xdg_decoration *deco = wl_container_of(listener, deco, destroy);
	wl_list_remove(&deco->request_mode.link);
	wl_list_remove(&deco->destroy.link);
	free(deco);
}

void xdg_decoration_handle_new(struct wl_listener *listener, void *data) {
	struct qw_server *server = wl_container_of(listener, server, decorations.new_toplevel_decoration);
	struct wlr_xdg_toplevel_decoration_v1 *decoration = data;
	struct xdg_decoration *deco = calloc(1, sizeof(*deco));
	if (!deco) {
		wlr_log(WLR_ERROR, "out of memory for a decoration");
		return;
	}
	deco->server = server;
	deco->decoration = decoration;
	deco->request_mode.notify = handle_request_mode;
	wl_signal_add(&decoration->events.request_mode, &deco->request_mode);
	deco->destroy.notify = handle_destroy;
	wl_signal_add(&decoration->events.destroy, &deco->destroy);
	handle_request_mode(&deco->request_mode, decoration);
}

static void handle_kde_mode(struct wl_listener *listener, void *data) {
	struct kde_decoration *deco = wl_container_of(listener, deco, mode);
	struct qw_view *view = view_of_surface(deco->decoration->surface);
	if (view) {
		decoration_set_client_side(&view->deco, view,
				deco->decoration->mode == WLR_SERVER_DECORATION_MANAGER_MODE_CLIENT);
	}
}

static void handle_kde_destroy(struct wl_listener *listener, void *data) {
	struct kde_decoration *deco = wl_container_of(listener, deco, destroy);
	wl_list_remove(&deco->mode.link);
	wl_list_remove(&deco->destroy.link);
	free(deco);
}

void xdg_decoration_handle_new_kde(struct wl_listener *listener, void *data) {
	struct wlr_server_decoration *decoration = data;
	struct kde_decoration *deco = calloc(1, sizeof(*deco));
	if (!deco) {
		wlr_log(WLR_ERROR, "out of memory for a decoration");
		return;
	}
	deco->decoration = decoration;
	deco->mode.notify = handle_kde_mode;
	wl_signal_add(&decoration->events.mode, &deco->mode);
	deco->destroy.notify = handle_kde_destroy;
	wl_signal_add(&decoration->events.destroy, &deco->destroy);
	handle_kde_mode(&deco->mode, decoration);
}

void xdg_decoration_map_default(struct qw_view *view) {
	struct qw_server *server = view->server;
	struct wlr_xdg_toplevel_decoration_v1 *xdg;
	wl_list_for_each(xdg, &server->decorations.xdg_manager->decorations, link) {
		if (xdg->surface == view->xdg_surface) {
			return;
		}
	}
	struct wlr_server_decoration *kde;
	wl_list_for_each(kde, &server->decorations.server_manager->decorations, link) {
		if (kde->surface == view->xdg_surface->surface) {
			/* GTK 4 asks before its surface is a toplevel, when there
			 * was no view to tell: the mode applies from here. */
			decoration_set_client_side(&view->deco, view,
					kde->mode == WLR_SERVER_DECORATION_MANAGER_MODE_CLIENT);
			return;
		}
	}
	/*
	 * With no decoration object, a window geometry inset from the surface
	 * (room for a shadow) is what a client drawing its own frame declares;
	 * a plain surface (weston-simple-shm) draws none and needs ours.
	 */
	struct wlr_xdg_surface *xdg_surface = view->xdg_surface;
	struct wlr_box geo;
	wlr_xdg_surface_get_geometry(xdg_surface, &geo);
	bool inset = geo.x > 0 || geo.y > 0 || geo.width < xdg_surface->surface->current.width ||
			geo.height < xdg_surface->surface->current.height;
	decoration_set_client_side(&view->deco, view, inset);
}
