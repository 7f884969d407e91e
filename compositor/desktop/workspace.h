/*
 * Numbered workspaces, QW_WORKSPACE_COUNT per output. Every window is on
 * one workspace of the output that shows most of it; each output shows one
 * of its workspaces. A window on a hidden workspace is out of sight: its
 * scene tree is disabled, it counts as hidden for the inactive-window rules
 * (inactive.h) and gets frame callbacks at scheduling's hidden-frame-rate.
 * Workspaces remember their number per output name, so an output that comes
 * back shows what it showed.
 *
 * A window moved (dragged) while shown joins the workspace shown where it
 * lands; focusing a window on a hidden workspace (taskbar, IPC, a granted
 * activation) shows that workspace.
 */
#ifndef QOSWAY_WORKSPACE_H
#define QOSWAY_WORKSPACE_H

#include <stdbool.h>

struct json_object;
struct qw_output;
struct qw_server;
struct qw_view;

bool workspace_init(struct qw_server *server);
void workspace_finish(struct qw_server *server);

/* The view mapped where it was placed: it joins the workspace shown there. */
void workspace_view_mapped(struct qw_view *view);
/* The view moved; a shown one joins the workspace shown where it now is. */
void workspace_view_moved(struct qw_view *view);
/* Whether the view's workspace is shown (true for a view on no output). */
bool workspace_view_shown(struct qw_view *view);
/* Before a hidden view is focused: show its workspace. */
void workspace_show_view(struct qw_view *view);

/* Show workspace number (1-based) on output; the focus follows. */
void workspace_switch(struct qw_server *server, struct qw_output *output, int number);
/* Move the view to workspace number of its output; the focus follows. */
void workspace_move_view(struct qw_view *view, int number);
/* The output the workspace bindings act on: the focused window's, else the cursor's. */
struct qw_output *workspace_current_output(struct qw_server *server);

/*
 * IPC: "workspaces" (list), "workspace" {number, output?} and
 * "move-to-workspace" {id, number}. NULL if command is none of these.
 */
struct json_object *workspace_ipc_command(struct qw_server *server, const char *command,
		struct json_object *req);

#endif
