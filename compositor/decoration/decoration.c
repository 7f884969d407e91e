#include <stdio.h>
#include <stdlib.h>
#include <wlr/types/wlr_buffer.h>
#include <wlr/types/wlr_scene.h>
#include <wlr/types/wlr_xdg_shell.h>
#include <wlr/util/log.h>

#include "decoration/decoration.h"
#include "desktop/view.h"

/* Invisible resize handles reach this far outside the border. */
#define GRIP_SIZE 6

static const float transparent[4] = { 0, 0, 0, 0 };

static void set_desc(struct qw_node_desc *desc, struct wlr_scene_node *node, enum qw_node_type type,
		struct qw_view *view, int button) {
	*desc = (struct qw_node_desc){
		.magic = QW_NODE_DESC_MAGIC,
		.type = type,
		.view = view,
		.button = button,
	};
	node->data = desc;
}

/* The button that shows (and asks for) a class. */
static int button_for_class(int class) {
	switch (class) {
	case QW_CLASS_REALTIME:
	case QW_CLASS_FIFO:
		return QW_BUTTON_REALTIME;
	case QW_CLASS_IDLE:
	case QW_CLASS_NICE:
		return QW_BUTTON_IDLE;
	case QW_CLASS_PAUSED:
		return QW_BUTTON_PAUSE;
	default:
		return -1;
	}
}

static bool button_is_on(const struct qw_view *view, enum qw_button_kind kind) {
	return button_for_class(view->class) == (int)kind;
}

bool decoration_init(struct qw_decoration *deco, struct qw_view *view) {
	struct qw_server *server = view->server;
	const struct qw_config *config = &server->config;
	deco->tree = wlr_scene_tree_create(&view->tree->node);
	if (!deco->tree) {
		return false;
	}
	set_desc(&deco->grip_desc, &deco->tree->node, QW_NODE_GRIP, view, -1);
	for (int i = 0; i < 4; i++) {
		deco->grips[i] = wlr_scene_rect_create(&deco->tree->node, 1, 1, transparent);
		deco->border[i] = wlr_scene_rect_create(&deco->tree->node, 1, 1,
				config->colors[QW_COLOR_BORDER_UNFOCUSED]);
		if (!deco->grips[i] || !deco->border[i]) {
			return false;
		}
	}
	deco->titlebar = wlr_scene_tree_create(&deco->tree->node);
	if (!deco->titlebar) {
		return false;
	}
	set_desc(&deco->titlebar_desc, &deco->titlebar->node, QW_NODE_TITLEBAR, view, -1);
	deco->title_bg = wlr_scene_rect_create(&deco->titlebar->node, 1, config->titlebar_height,
			config->colors[QW_COLOR_TITLEBAR_UNFOCUSED]);
	if (!deco->title_bg) {
		return false;
	}
	for (size_t i = 0; i < config->button_count; i++) {
		enum qw_button_kind kind = config->buttons[i];
		struct qw_button *button = &deco->buttons[kind];
		button->kind = kind;
		button->present = true;
		button->tree = wlr_scene_tree_create(&deco->titlebar->node);
		if (!button->tree) {
			return false;
		}
		set_desc(&button->desc, &button->tree->node, QW_NODE_BUTTON, view, kind);
		for (int s = 0; s < QW_BUTTON_STATE_COUNT; s++) {
			/* Close has no on/off: its "on" slots reuse the off images. */
			int img =
					kind == QW_BUTTON_CLOSE && s >= QW_BUTTON_STATE_ON ? s - QW_BUTTON_STATE_ON : s;
			button->states[s] =
					wlr_scene_buffer_create(&button->tree->node, server->theme.buttons[kind][img]);
			if (!button->states[s]) {
				return false;
			}
			wlr_scene_node_set_enabled(&button->states[s]->node, s == QW_BUTTON_STATE_NORMAL);
		}
		button->shown = QW_BUTTON_STATE_NORMAL;
	}
	deco->visible = true;
	deco->refused_button = -1;
	return true;
}

bool decoration_init_overlay(struct qw_decoration *deco, struct qw_view *view) {
	deco->dim = wlr_scene_rect_create(&view->tree->node, 1, 1,
			view->server->config.colors[QW_COLOR_PAUSED_DIM]);
	if (!deco->dim) {
		return false;
	}
	wlr_scene_node_set_enabled(&deco->dim->node, false);
	return true;
}

void decoration_finish(struct qw_decoration *deco) {
	if (deco->message_timer) {
		wl_event_source_remove(deco->message_timer);
		deco->message_timer = NULL;
	}
	free(deco->message);
	deco->message = NULL;
}

int decoration_border(const struct qw_decoration *deco, const struct qw_server *server) {
	return deco->visible && deco->mode == QW_DECO_FULL ? server->config.border_width : 0;
}

int decoration_top(const struct qw_decoration *deco, const struct qw_server *server) {
	if (!deco->visible) {
		return 0;
	}
	switch (deco->mode) {
	case QW_DECO_FULL:
		return server->config.titlebar_height;
	case QW_DECO_STRIP:
		return server->theme.button_height;
	case QW_DECO_NONE:
		break;
	}
	return 0;
}

/* The strip carries the QoS buttons only: the client has its own close. */
static bool button_shown(const struct qw_decoration *deco, enum qw_button_kind kind) {
	return deco->mode == QW_DECO_FULL || kind != QW_BUTTON_CLOSE;
}

void decoration_set_client_side(struct qw_decoration *deco, struct qw_view *view,
		bool client_side) {
	struct qw_server *server = view->server;
	enum qw_deco_mode mode = QW_DECO_FULL;
	if (client_side && server->config.csd_buttons == QW_CSD_BUTTONS_STRIP) {
		mode = QW_DECO_STRIP;
	} else if (client_side && server->config.csd_buttons == QW_CSD_BUTTONS_NONE) {
		mode = QW_DECO_NONE;
	}
	if (mode == deco->mode) {
		return;
	}
	deco->mode = mode;
	/*
	 * The strip sits over the band where a client-side-decorated window
	 * draws its shadow and takes input for resizing, so it must be above
	 * the client's surface to be seen and clicked.
	 */
	if (mode == QW_DECO_STRIP) {
		wlr_scene_node_reparent(&deco->titlebar->node, &view->tree->node);
		wlr_scene_node_raise_to_top(&deco->titlebar->node);
	} else {
		wlr_scene_node_reparent(&deco->titlebar->node, &deco->tree->node);
	}
	for (int k = 0; k < QW_BUTTON_KIND_COUNT; k++) {
		struct qw_button *button = &deco->buttons[k];
		if (button->tree) {
			button->present = button_shown(deco, k);
			wlr_scene_node_set_enabled(&button->tree->node, button->present);
		}
	}
	if (view->mapped) {
		decoration_update_geometry(deco, view);
	}
}

void decoration_update_geometry(struct qw_decoration *deco, struct qw_view *view) {
	const struct qw_config *config = &view->server->config;
	const struct qw_theme *theme = &view->server->theme;
	int b = decoration_border(deco, view->server);
	int t = decoration_top(deco, view->server);
	int w = view->width, h = view->height;
	int fw = w + 2 * b, fh = h + t + 2 * b;

	wlr_scene_node_set_position(&view->tree->node, view->x - b, view->y - b - t);
	wlr_scene_node_set_position(view->surface_node, b, b + t);
	if (deco->dim) {
		wlr_scene_node_set_position(&deco->dim->node, b, b + t);
		wlr_scene_rect_set_size(deco->dim, w > 0 ? w : 1, h > 0 ? h : 1);
	}
	bool framed = deco->visible && deco->mode == QW_DECO_FULL;
	wlr_scene_node_set_enabled(&deco->tree->node, framed);
	wlr_scene_node_set_enabled(&deco->titlebar->node, deco->visible && deco->mode != QW_DECO_NONE);
	if (deco->visible && deco->mode == QW_DECO_STRIP) {
		int n = 0;
		for (size_t i = 0; i < config->button_count; i++) {
			n += button_shown(deco, config->buttons[i]);
		}
		deco->bar_width = n * theme->button_width;
		deco->bar_x = w > deco->bar_width ? w - deco->bar_width : 0;
		wlr_scene_node_set_position(&deco->titlebar->node, deco->bar_x, 0);
		wlr_scene_rect_set_size(deco->title_bg, deco->bar_width > 0 ? deco->bar_width : 1, t);
		int x = 0;
		for (size_t i = 0; i < config->button_count; i++) {
			struct qw_button *button = &deco->buttons[config->buttons[i]];
			if (button_shown(deco, button->kind)) {
				button->x = x;
				wlr_scene_node_set_position(&button->tree->node, x, 0);
				x += theme->button_width;
			}
		}
		for (int f = 0; f < 2; f++) {
			if (deco->title[f]) {
				wlr_scene_node_set_enabled(&deco->title[f]->node, false);
			}
		}
		return;
	}
	deco->bar_x = 0;
	deco->bar_width = w;
	if (!framed) {
		return;
	}

	const struct wlr_box grips[4] = {
		{ -GRIP_SIZE, -GRIP_SIZE, fw + 2 * GRIP_SIZE, GRIP_SIZE },
		{ -GRIP_SIZE, fh, fw + 2 * GRIP_SIZE, GRIP_SIZE },
		{ -GRIP_SIZE, 0, GRIP_SIZE, fh },
		{ fw, 0, GRIP_SIZE, fh },
	};
	const struct wlr_box borders[4] = {
		{ 0, 0, fw, b },
		{ 0, fh - b, fw, b },
		{ 0, b, b, fh - 2 * b },
		{ fw - b, b, b, fh - 2 * b },
	};
	for (int i = 0; i < 4; i++) {
		wlr_scene_node_set_position(&deco->grips[i]->node, grips[i].x, grips[i].y);
		wlr_scene_rect_set_size(deco->grips[i], grips[i].width, grips[i].height);
		wlr_scene_node_set_position(&deco->border[i]->node, borders[i].x, borders[i].y);
		wlr_scene_rect_set_size(deco->border[i], borders[i].width, borders[i].height);
		wlr_scene_node_set_enabled(&deco->border[i]->node, b > 0);
	}

	wlr_scene_node_set_position(&deco->titlebar->node, b, b);
	wlr_scene_rect_set_size(deco->title_bg, w, t);
	int x = w;
	for (int i = (int)config->button_count - 1; i >= 0; i--) {
		struct qw_button *button = &deco->buttons[config->buttons[i]];
		x -= theme->button_width;
		button->x = x;
		wlr_scene_node_set_position(&button->tree->node, x, 0);
	}
	int title_width = x - 2 * theme->title_padding;
	if (title_width != deco->title_width) {
		deco->title_width = title_width;
		decoration_update_title(deco, view);
	}
}

void decoration_update_title(struct qw_decoration *deco, struct qw_view *view) {
	const struct qw_config *config = &view->server->config;
	const char *title = view_title(view);
	char text[512];
	if (deco->message) {
		snprintf(text, sizeof(text), "%s", deco->message);
	} else if (view->class == QW_CLASS_PAUSED) {
		snprintf(text, sizeof(text), "paused \u2014 %s", title);
	} else {
		snprintf(text, sizeof(text), "%s", title);
	}
	for (int f = 0; f < 2; f++) {
		if (deco->title[f]) {
			wlr_scene_node_destroy(&deco->title[f]->node);
			deco->title[f] = NULL;
		}
		enum qw_color color = deco->message ? QW_COLOR_TEXT_WARNING
				: f == 1                    ? QW_COLOR_TEXT_FOCUSED
											: QW_COLOR_TEXT_UNFOCUSED;
		struct wlr_buffer *buffer =
				theme_render_title(config, text, deco->title_width, config->titlebar_height, color);
		if (!buffer) {
			continue; /* too narrow for any text */
		}
		deco->title[f] = wlr_scene_buffer_create(&deco->titlebar->node, buffer);
		/* The scene node holds its own reference. */
		wlr_buffer_drop(buffer);
		if (!deco->title[f]) {
			wlr_log(WLR_ERROR, "failed to create title node");
			continue;
		}
		/* Keep the text below the buttons in case they overlap. */
		wlr_scene_node_place_above(&deco->title[f]->node, &deco->title_bg->node);
		wlr_scene_node_set_position(&deco->title[f]->node, view->server->theme.title_padding, 0);
		wlr_scene_node_set_enabled(&deco->title[f]->node,
				(f == 1) == deco->focused && deco->mode == QW_DECO_FULL);
	}
}

void decoration_set_focused(struct qw_decoration *deco, struct qw_server *server, bool focused) {
	const struct qw_config *config = &server->config;
	deco->focused = focused;
	/* An urgent window shows it until it gets the focus. */
	bool urgent = deco->urgent && !focused;
	enum qw_color bg = focused ? QW_COLOR_TITLEBAR_FOCUSED : QW_COLOR_TITLEBAR_UNFOCUSED;
	enum qw_color border = focused ? QW_COLOR_BORDER_FOCUSED : QW_COLOR_BORDER_UNFOCUSED;
	wlr_scene_rect_set_color(deco->title_bg,
			config->colors[urgent ? QW_COLOR_TITLEBAR_URGENT : bg]);
	for (int i = 0; i < 4; i++) {
		wlr_scene_rect_set_color(deco->border[i],
				config->colors[urgent ? QW_COLOR_TITLEBAR_URGENT : border]);
	}
	for (int f = 0; f < 2; f++) {
		if (deco->title[f]) {
			wlr_scene_node_set_enabled(&deco->title[f]->node,
					(f == 1) == focused && deco->mode == QW_DECO_FULL);
		}
	}
}

void decoration_set_visible(struct qw_decoration *deco, bool visible) {
	deco->visible = visible;
}

void decoration_update_buttons(struct qw_decoration *deco, struct qw_view *view) {
	struct qw_server *server = view->server;
	for (int k = 0; k < QW_BUTTON_KIND_COUNT; k++) {
		struct qw_button *button = &deco->buttons[k];
		if (!button->present) {
			continue;
		}
		bool hover = server->pointer.hovered_view == view && server->pointer.hovered_button == k;
		bool pressed = hover && server->pointer.mode == QW_CURSOR_BUTTON &&
				server->pointer.grabbed_view == view && server->pointer.pressed_button == k;
		bool refused = deco->refused_button == k || (view->held_back && button_is_on(view, k));
		enum qw_button_state state = refused
				? QW_BUTTON_STATE_REFUSED
				: theme_button_state(button_is_on(view, k), hover, pressed);
		if (state == button->shown) {
			continue;
		}
		wlr_scene_node_set_enabled(&button->states[button->shown]->node, false);
		wlr_scene_node_set_enabled(&button->states[state]->node, true);
		button->shown = state;
	}
}

/* How long a refusal stays on the titlebar. */
#define REFUSAL_SHOW_MSEC 2000

static int handle_message_timeout(void *data) {
	struct qw_view *view = data;
	struct qw_decoration *deco = &view->deco;
	free(deco->message);
	deco->message = NULL;
	deco->refused_button = -1;
	decoration_update_title(deco, view);
	decoration_update_buttons(deco, view);
	return 0;
}

void decoration_show_refusal(struct qw_decoration *deco, struct qw_view *view, int class,
		const char *reason) {
	char *text = NULL;
	if (asprintf(&text, "refused: %s", reason) < 0) {
		return;
	}
	free(deco->message);
	deco->message = text;
	deco->refused_button = button_for_class(class);
	if (!deco->message_timer) {
		deco->message_timer =
				wl_event_loop_add_timer(view->server->event_loop, handle_message_timeout, view);
	}
	if (deco->message_timer) {
		wl_event_source_timer_update(deco->message_timer, REFUSAL_SHOW_MSEC);
	}
	decoration_update_title(deco, view);
	decoration_update_buttons(deco, view);
}

void decoration_update_paused(struct qw_decoration *deco, struct qw_view *view) {
	if (deco->dim) {
		wlr_scene_node_set_enabled(&deco->dim->node, view->class == QW_CLASS_PAUSED);
	}
	decoration_update_title(deco, view);
}
