/*
 * A view is one toplevel window with its server-side frame: an xdg toplevel,
 * or an X11 window through Xwayland (xwayland.h). Positions are in layout
 * coordinates; (x, y) is the top-left of the client's content (its xdg
 * geometry, or the X window), the frame extends around it.
 */
#ifndef QOSWAY_VIEW_H
#define QOSWAY_VIEW_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <wayland-server-core.h>
#include <wlr/util/box.h>

#include "decoration/decoration.h"
#include "qos_bridge/qos_class.h"
#include "server.h"

struct wlr_surface;
struct qw_xwayland_view;

struct client_identity;

/*
 * What each shell does its own way: xdg_shell.c for Wayland toplevels,
 * xwayland.c for X11 windows. The view code calls only these, never the
 * shell's objects. Optional members may be NULL.
 */
struct qw_view_impl {
	/* The client's identity (a pidfd taken at connection); optional. */
	struct client_identity *(*get_identity)(const struct qw_view *view);
	pid_t (*get_pid)(const struct qw_view *view); /* -1 if unknown or gone */
	const char *(*get_title)(const struct qw_view *view);
	const char *(*get_app_id)(const struct qw_view *view);
	struct wlr_surface *(*get_surface)(const struct qw_view *view);
	/* Whether surface (focused, say) is the window's own. */
	bool (*owns_surface)(const struct qw_view *view, struct wlr_surface *surface);
	void (*ping)(struct qw_view *view);
	void (*set_resizing)(struct qw_view *view, bool resizing); /* optional */
	/* Ask for want_width x want_height. */
	void (*request_size)(struct qw_view *view);
	/* Send size, activation, maximized and fullscreen as they are now. */
	void (*configure)(struct qw_view *view);
	/* Answer a request that changes nothing, so the client is not left
	 * waiting. */
	void (*schedule_configure)(struct qw_view *view);
	void (*close)(struct qw_view *view);
	/* The frame moved or its content was resized by us (optional: a
	 * client that must know where it is). */
	void (*moved)(struct qw_view *view);
};

struct qw_view {
	struct wl_list link; /* qw_server.views */
	struct qw_server *server;
	const struct qw_view_impl *impl;
	uint32_t id;
	/* Both NULL for an X11 window, which has xwayland instead. */
	struct wlr_xdg_surface *xdg_surface;
	struct wlr_xdg_toplevel *toplevel;
	struct qw_xwayland_view *xwayland;

	struct wlr_scene_tree *tree; /* frame origin */
	struct wlr_scene_node *surface_node;
	struct qw_node_desc desc;
	struct qw_decoration deco;

	int x, y; /* content position */
	int width, height; /* content size, from the committed geometry */
	bool mapped;
	bool maximized, fullscreen;
	/* Hidden until a taskbar, `qosctl focus` or a focus change restores it. */
	bool minimized;
	struct wlr_box saved; /* content box before maximize/fullscreen */
	int want_width, want_height; /* size last asked of the client, 0: its own */
	bool configure_held; /* state changed while paused, not yet sent */
	enum qw_class class;
	/* Real-time was granted, given back while idle, and refused on waking:
	 * the button says so until the capacity fits again. */
	bool held_back;
	/* Its workspace on the output showing most of it (workspace.h); 0 until mapped. */
	int workspace;
	/* Out of sight (inactive.h): since when (monotonic ms, 0 while
	 * shown), the same as wall-clock seconds for IPC, and whether that
	 * has lasted past inactive-timeout. */
	uint64_t hidden_since_ms;
	int64_t inactive_since;
	bool inactive;

	struct wl_listener map;
	struct wl_listener unmap;
	struct wl_listener destroy;
	struct wl_listener commit;
	struct wl_listener request_move;
	struct wl_listener request_resize;
	struct wl_listener request_maximize;
	struct wl_listener request_fullscreen;
	struct wl_listener set_title;
	struct wl_listener set_app_id;
	/* The client's destroy signal: its identity is gone from then on. */
	struct wl_listener client_destroy;
	bool client_gone;

	/* The window as taskbars see it (foreign_toplevel.h), while mapped. */
	struct wlr_foreign_toplevel_handle_v1 *ftl;
	struct wl_listener ftl_request_activate;
	struct wl_listener ftl_request_maximize;
	struct wl_listener ftl_request_minimize;
	struct wl_listener ftl_request_fullscreen;
	struct wl_listener ftl_request_close;
};

/*
 * For the shells (xdg here, X11 in xwayland.c). view_init() makes the view's
 * tree and frame; the shell then adds its surface node and calls
 * decoration_init_overlay(). view_finish() undoes view_init() and frees
 * nothing else.
 */
bool view_init(struct qw_view *view, struct qw_server *server);
void view_finish(struct qw_view *view);
/* The content is mapped at width x height: place, focus, AutoQOS, announce. */
void view_map(struct qw_view *view, bool fullscreen, bool maximized);
void view_unmap(struct qw_view *view);
/* The client committed a new content size. */
void view_update_size(struct qw_view *view, int width, int height);
/* The process became known or changed its app id: AutoQOS, unless it was
 * started into a reserve already. */
void view_apply_rules(struct qw_view *view);

void view_focus(struct qw_view *view);
void view_close(struct qw_view *view);
void view_move_to(struct qw_view *view, int x, int y);
/* Ask the client for a new content size at a new position. */
void view_set_geometry(struct qw_view *view, int x, int y, int width, int height);
void view_set_maximized(struct qw_view *view, bool maximized);
void view_set_fullscreen(struct qw_view *view, bool fullscreen);
/* Hide the window and focus the next one; view_focus() shows it again. */
void view_set_minimized(struct qw_view *view, bool minimized);
/* Send the client its size and states, or hold them while it is paused. */
void view_send_configure(struct qw_view *view);

/* The frame box (content + titlebar + border) in layout coordinates. */
struct wlr_box view_frame_box(const struct qw_view *view);
struct wlr_box view_titlebar_box(const struct qw_view *view);
bool view_button_box(const struct qw_view *view, enum qw_button_kind kind, struct wlr_box *box);

/* Title and app id (for an X11 window its WM_CLASS class); NULL if unset. */
const char *view_title(const struct qw_view *view);
const char *view_app_id(const struct qw_view *view);
/* The window's main surface, NULL while it has none. */
struct wlr_surface *view_surface(const struct qw_view *view);
/*
 * The Wayland client that draws the window, NULL once it is gone. For an X11
 * window that is Xwayland: the scheduler serves and bills every X11 window as
 * part of Xwayland's client, while QoS classes act on the X11 program itself.
 */
struct wl_client *view_client(const struct qw_view *view);
void view_ping(struct qw_view *view);
void view_set_resizing(struct qw_view *view, bool resizing);
/* Ask the client for want_width x want_height. */
void view_request_size(struct qw_view *view);

/* The window's process: for an X11 window the one the X server saw connect. */
pid_t view_get_pid(const struct qw_view *view);
/* The Wayland client's identity; NULL for an X11 window (it is Xwayland's). */
struct client_identity *view_identity(const struct qw_view *view);
/* The client is frozen: send it nothing that could fill its socket. */
bool view_is_paused(const struct qw_view *view);
const char *qos_class_name(enum qw_class class);

/*
 * A user (button, keybinding, IPC) asks for `class` for the window's process.
 * The QoS manager decides; only what it confirmed reaches view_set_class().
 * A refusal shows on the titlebar and returns false with the reason.
 */
bool view_request_class(struct qw_view *view, enum qw_class class, char *err, size_t err_len);
bool qos_class_from_name(const char *name, enum qw_class *class);
/* Record a confirmed class and update every image that shows it. */
void view_set_class(struct qw_view *view, enum qw_class class);
/* Record whether its reserve is held back (qos_link_held_back). */
void view_set_held_back(struct qw_view *view, bool held_back);

struct qw_view *view_from_id(struct qw_server *server, uint32_t id);
struct qw_view *view_at(struct qw_server *server, double lx, double ly,
		struct wlr_surface **surface, double *sx, double *sy, struct qw_node_desc **desc);

#endif
