/*
 * qosway compositor: shared server state.
 *
 * Scene tree (bottom to top), all children of server->scene:
 *
 *   trees.layers[BACKGROUND]  layer-shell surfaces
 *   trees.layers[BOTTOM]
 *   trees.views               one qw_view tree per toplevel, stacking order
 *     view->tree  (desc VIEW, at the frame's top-left corner; disabled
 *                  while unmapped or minimized)
 *       deco.tree             disabled unless the full frame shows
 *         grips[4]            transparent resize handles outside the border
 *         border[4]           rects, focused/unfocused colour
 *         titlebar tree       (desc TITLEBAR)
 *           bg rect
 *           title[2]          text buffer: focused / unfocused, one enabled
 *           button[i] tree    (desc BUTTON)
 *             state buffers   one per visual state, exactly one enabled
 *       surface tree          wlr_scene_xdg_surface (+ its popups); for an
 *                             X11 window a tree holding its surface while
 *                             mapped
 *       dim rect              over the content while paused
 *       titlebar tree         here instead, as the button strip, for a
 *                             window that draws its own decorations
 *   trees.layers[TOP]
 *   trees.fullscreen          a fullscreen view is reparented here
 *   trees.unmanaged           X11 override-redirect windows (menus,
 *                             tooltips) at their X position (xwayland.h)
 *   trees.layers[OVERLAY]
 *   reserve menu              while open (reserve_menu.h)
 *
 * Hit-testing walks from the node under the cursor up to the first node
 * carrying a struct qw_node_desc (node->data), so the scene graph itself is
 * the single source of truth for what is where.
 */
#ifndef QOSWAY_SERVER_H
#define QOSWAY_SERVER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <wayland-server-core.h>
#include <wlr/util/box.h>

#include "config/config.h"
#include "decoration/theme.h"
#include "desktop/idle_state.h"
#include "input/cursor_state.h"
#include "input/input_state.h"

struct qw_ipc;
struct qw_gestures;
struct qw_tablets;
struct qw_touch;
struct qw_pointer_constraints;
struct qw_shortcuts_inhibit;
struct qw_text_input_relay;
struct qw_output_management;
struct qw_scheduler;
struct qw_vblank;
struct qw_inactive;
struct qos_link;
struct wlr_scene_node;
struct qw_view;
struct qw_xwayland;
struct qw_screen_lock;
struct qw_session_lock_manager;
struct qw_dnd;
struct qw_workspaces;

enum qw_layer {
	QW_LAYER_BACKGROUND = 0,
	QW_LAYER_BOTTOM = 1,
	QW_LAYER_TOP = 2,
	QW_LAYER_OVERLAY = 3,
	QW_LAYER_COUNT,
};

enum qw_node_type {
	QW_NODE_VIEW,
	QW_NODE_TITLEBAR,
	QW_NODE_BUTTON,
	QW_NODE_GRIP,
	QW_NODE_LAYER_SURFACE,
	QW_NODE_MENU_ITEM, /* button = item index */
};

#define QW_NODE_DESC_MAGIC 0x71774e44u /* "qwND" */

/* Typed descriptor stored in wlr_scene_node.data of nodes we create. */
struct qw_node_desc {
	uint32_t magic;
	enum qw_node_type type;
	struct qw_view *view;
	int button; /* enum qw_button_kind, for QW_NODE_BUTTON */
};

struct qw_server {
	struct wl_display *wl_display;
	struct wl_event_loop *event_loop;
	struct {
		/* The QoS manager's events, a const struct qos_event * (qos/qos.h),
		 * emitted by qos_link.c; the IPC, the reserve protocol, vblank
		 * and the scheduler listen. */
		struct wl_signal qos_event;
	} events;
	struct qw_config config;
	struct qw_theme theme;
	const char *socket;
	bool headless;

	struct wlr_backend *backend;
	struct wlr_backend *headless_backend; /* NULL unless we add outputs */
	struct wlr_renderer *renderer;
	struct wlr_allocator *allocator;
	struct wlr_compositor *compositor;
	struct wlr_presentation *presentation;

	struct wlr_scene *scene;
	/* The trees the header comment draws (server.c makes them). */
	struct {
		struct wlr_scene_tree *layers[QW_LAYER_COUNT];
		struct wlr_scene_tree *views;
		struct wlr_scene_tree *fullscreen;
		struct wlr_scene_tree *unmanaged;
	} trees;

	struct wlr_output_layout *output_layout;
	struct wl_list outputs; /* qw_output.link */
	struct wl_listener new_output;
	struct qw_output_management *output_management; /* output_management.h */
	char *config_path; /* the config file read at start, read again on reload */

	struct {
		struct wlr_xdg_shell *shell;
		struct wl_listener new_surface;
	} xdg; /* xdg_shell.c */
	struct wl_list views; /* qw_view.link, most recently focused first */
	uint32_t next_view_id;
	unsigned int cascade_index;

	struct {
		struct wlr_layer_shell_v1 *manager;
		struct wl_listener new_surface;
	} layer_shell; /* layer_shell.c */
	struct {
		struct wlr_xdg_decoration_manager_v1 *xdg_manager;
		struct wl_listener new_toplevel_decoration;
		struct wlr_server_decoration_manager *server_manager;
		struct wl_listener new_server_decoration;
	} decorations; /* xdg_decoration.c, decoration.c */
	struct {
		struct wlr_xdg_activation_v1 *manager;
		struct wl_listener request_activate;
	} activation; /* activation.c */
	struct qw_idle_state idle; /* idle.c */
	struct wlr_foreign_toplevel_manager_v1 *foreign_toplevel_manager;

	/* X11 programs (xwayland.h); NULL while X11 is off. */
	struct qw_xwayland *xwayland;

	/* Input */
	struct wlr_seat *seat;
	struct qw_input_state input; /* seat.c, input_devices.c */
	struct qw_touch *touch; /* touch.h */
	struct qw_tablets *tablets; /* tablet.h */
	struct qw_gestures *gestures; /* gestures.h */
	struct wlr_cursor *cursor;
	struct wlr_xcursor_manager *xcursor_manager;
	struct qw_cursor_state pointer; /* cursor.c */
	/* Lock and confine, relative motion (pointer_constraints.h). */
	struct qw_pointer_constraints *pointer_constraints;
	/* Bindings handed to the focused client (shortcuts_inhibit.h). */
	struct qw_shortcuts_inhibit *shortcuts_inhibit;
	/* Input methods and their candidate windows (text_input.h). */
	struct qw_text_input_relay *text_input;
	struct qw_layer_surface *focused_layer; /* exclusive keyboard focus */
	struct qw_menu *menu; /* the open reserve menu, if any */

	struct qw_ipc *ipc;
	char *ipc_socket_path;

	/* Serves clients in reserve order and bills them (scheduler.h). */
	struct qw_scheduler *scheduler;

	/* The QoS manager and its rules, events and gate (qos_link.h). */
	struct qos_link *qos_link;
	/*
	 * Set before qos_link_create: the handlers of requests run, but nothing
	 * outside the process changes. There is no QoS manager (every QoS
	 * request is refused with the reason, as without cgroup access) and
	 * nothing is spawned. The fuzzing harnesses (tests/fuzz) run so.
	 */
	bool dry_run;
	struct {
		int fd; /* netlink process connector, -1 if none */
		struct wl_event_source *source;
	} proc_events; /* proc_events.c */
	struct reserve_protocol *reserve_protocol;
	/* period=vblank reserves follow their window's output (vblank.h). */
	struct qw_vblank *vblank;
	/* Windows out of sight and their processes' classes (inactive.h). */
	struct qw_inactive *inactive;

	/* Desktop features, each owned by its module. */
	struct {
		struct wlr_output_power_manager_v1 *manager;
		struct wl_listener set_mode;
	} output_power; /* desktop_protocols.c */
	struct qw_screen_lock *lock; /* screen_lock.h */
	struct qw_session_lock_manager *session_lock; /* session_lock.h */
	struct qw_dnd *dnd; /* dnd.h */
	struct qw_workspaces *workspaces; /* workspace.h */

	struct {
		struct wl_event_source *sigint, *sigterm, *sigchld, *sighup;
	} signals; /* server.c */
	int exit_code;
};

/* server.c */
bool server_init(struct qw_server *server);
/* The scene and its layer trees over server->output_layout (server_init's step). */
bool server_create_scene(struct qw_server *server);
void server_finish(struct qw_server *server);
/* Ask the event loop to stop; main() then tears everything down. */
void server_terminate(struct qw_server *server);

/* spawn.c: run `sh -c cmd` (or argv) detached, with the session env. */
pid_t server_spawn_shell(struct qw_server *server, const char *cmd);
pid_t server_spawn_argv(struct qw_server *server, char *const argv[]);
/*
 * Spawn with QoS settled before the program's first instruction: the child
 * waits until it has joined `reserve` (or, if NULL, whatever AutoQOS rule
 * matches the command), then execs. A refusal is reported in err and the
 * program runs without QoS; -1 only if it could not be started.
 */
pid_t server_spawn_argv_qos(struct qw_server *server, char *const argv[], const char *reserve,
		char *err, size_t err_len);

/* Find our descriptor for a scene node (walking up), or NULL. */
struct qw_node_desc *node_desc_find(struct wlr_scene_node *node);

#endif
