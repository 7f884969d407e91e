/*
 * Server-side window frame: border, titlebar with title text and the QoS
 * buttons. All images come prebuilt from the theme except the title text,
 * which is re-rendered only when the title or the frame width changes.
 */
#ifndef QOSWAY_DECORATION_H
#define QOSWAY_DECORATION_H

#include <stdbool.h>

#include "config/config.h"
#include "server.h"
#include "decoration/theme.h"

struct qw_view;

struct qw_button {
	enum qw_button_kind kind;
	struct wlr_scene_tree *tree;
	struct wlr_scene_buffer *states[QW_BUTTON_STATE_COUNT];
	enum qw_button_state shown;
	struct qw_node_desc desc;
	int x; /* offset within the titlebar */
	bool present;
};

/* How much of our frame a window gets. */
enum qw_deco_mode {
	QW_DECO_FULL, /* border and titlebar */
	QW_DECO_STRIP, /* it draws its own: the QoS buttons on its top edge */
	QW_DECO_NONE, /* it draws its own, and we add nothing */
};

struct qw_decoration {
	struct wlr_scene_tree *tree;
	enum qw_deco_mode mode;
	/* The titlebar (or strip) spans bar_x .. bar_x + bar_width of the
	 * content's width. */
	int bar_x, bar_width;
	struct wlr_scene_rect *grips[4];
	struct wlr_scene_rect *border[4];
	struct wlr_scene_tree *titlebar;
	struct wlr_scene_rect *title_bg;
	struct wlr_scene_buffer *title[2]; /* [0] unfocused, [1] focused */
	int title_width; /* width the title buffers were rendered for */
	struct qw_button buttons[QW_BUTTON_KIND_COUNT];
	struct qw_node_desc titlebar_desc, grip_desc;
	bool focused;
	bool urgent; /* drawn in the urgent colour while unfocused */
	bool visible;
	/* Over the content while the window is paused (above the surface). */
	struct wlr_scene_rect *dim;
	/* A refusal from the QoS manager: its text replaces the title and the
	 * button that asked shows "refused", for a couple of seconds. */
	char *message;
	int refused_button; /* enum qw_button_kind, -1 if none */
	struct wl_event_source *message_timer;
};

bool decoration_init(struct qw_decoration *deco, struct qw_view *view);
/* The dimming layer must sit above the client surface: created after it. */
bool decoration_init_overlay(struct qw_decoration *deco, struct qw_view *view);
void decoration_finish(struct qw_decoration *deco);
/* Show a QoS refusal of a request for `class` with its reason. */
void decoration_show_refusal(struct qw_decoration *deco, struct qw_view *view, int class,
		const char *reason);
/* Follow the view's paused state: dimming and the title prefix. */
void decoration_update_paused(struct qw_decoration *deco, struct qw_view *view);
/* Lay the frame out around a content area of width x height. */
void decoration_update_geometry(struct qw_decoration *deco, struct qw_view *view);
void decoration_update_title(struct qw_decoration *deco, struct qw_view *view);
void decoration_set_focused(struct qw_decoration *deco, struct qw_server *server, bool focused);
void decoration_set_visible(struct qw_decoration *deco, bool visible);
/*
 * The client said whether it draws its own decorations; `csd-buttons`
 * picks the mode that gives it. Lays the frame out again.
 */
void decoration_set_client_side(struct qw_decoration *deco, struct qw_view *view, bool client_side);
/* Border width and height above the content, 0 while hidden. */
int decoration_border(const struct qw_decoration *deco, const struct qw_server *server);
int decoration_top(const struct qw_decoration *deco, const struct qw_server *server);
/* Show the right image for each button from the view's class and pointer state. */
void decoration_update_buttons(struct qw_decoration *deco, struct qw_view *view);

#endif
