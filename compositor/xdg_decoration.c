/*
 * xdg-decoration: every toplevel gets our frame, so we answer every mode
 * request with server-side. Clients without the protocol are framed anyway.
 */
#include <stdlib.h>
#include <wlr/types/wlr_xdg_decoration_v1.h>
#include <wlr/util/log.h>

#include "xdg_decoration.h"

struct xdg_decoration {
	struct wlr_xdg_toplevel_decoration_v1 *decoration;
	struct wl_listener request_mode;
	struct wl_listener destroy;
};

static void handle_request_mode(struct wl_listener *listener, void *data) {
	struct xdg_decoration *deco = wl_container_of(listener, deco, request_mode);
	wlr_xdg_toplevel_decoration_v1_set_mode(deco->decoration,
			WLR_XDG_TOPLEVEL_DECORATION_V1_MODE_SERVER_SIDE);
}

static void handle_destroy(struct wl_listener *listener, void *data) {
	struct xdg_decoration *deco = wl_container_of(listener, deco, destroy);
	wl_list_remove(&deco->request_mode.link);
	wl_list_remove(&deco->destroy.link);
	free(deco);
}

void xdg_decoration_handle_new(struct wl_listener *listener, void *data) {
	struct wlr_xdg_toplevel_decoration_v1 *decoration = data;
	struct xdg_decoration *deco = calloc(1, sizeof(*deco));
	if (!deco) {
		wlr_log(WLR_ERROR, "out of memory for a decoration");
		return;
	}
	deco->decoration = decoration;
	deco->request_mode.notify = handle_request_mode;
	wl_signal_add(&decoration->events.request_mode, &deco->request_mode);
	deco->destroy.notify = handle_destroy;
	wl_signal_add(&decoration->events.destroy, &deco->destroy);
	handle_request_mode(&deco->request_mode, decoration);
}
