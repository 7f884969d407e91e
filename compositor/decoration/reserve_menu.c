#include <limits.h>
#include <pango/pangocairo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wlr/types/wlr_buffer.h>
#include <wlr/types/wlr_scene.h>
#include <wlr/util/log.h>

#include "decoration/cairo_buffer.h"
#include "qos/qos.h"
#include "qos_bridge/qos_gate.h"
#include "qos_bridge/qos_link.h"
#include "decoration/reserve_menu.h"
#include "decoration/theme.h"
#include "desktop/view.h"

#define ITEM_PADDING 8
#define MONITOR_COMMAND "qosway-monitor"
#define MAX_ITEMS 32

struct qw_menu_item {
	char reserve[QOS_NAME_MAX + 1];
	bool monitor; /* the last item: starts qosway-monitor instead */
	struct wlr_scene_tree *tree;
	struct wlr_scene_buffer *normal, *hover;
	struct qw_node_desc desc;
};

struct qw_menu {
	struct qw_view *view;
	struct wlr_scene_tree *tree;
	struct qw_menu_item items[MAX_ITEMS];
	size_t count;
	int hovered;
};

static struct wlr_buffer *render_item(const struct qw_config *config, const char *text, int width,
		int height, bool hover) {
	cairo_t *cr;
	struct wlr_buffer *buffer = cairo_buffer_create(width, height, &cr);
	if (!buffer) {
		return NULL;
	}
	const float *bg = config->colors[hover ? QW_COLOR_BUTTON_HOVER : QW_COLOR_TITLEBAR_UNFOCUSED];
	cairo_set_source_rgba(cr, bg[0], bg[1], bg[2], 1.0);
	cairo_paint(cr);
	PangoLayout *layout = theme_text_layout(cr, config, text, 0);
	int tw, th;
	pango_layout_get_pixel_size(layout, &tw, &th);
	const float *fg = config->colors[QW_COLOR_TEXT_FOCUSED];
	cairo_set_source_rgba(cr, fg[0], fg[1], fg[2], fg[3]);
	cairo_move_to(cr, ITEM_PADDING, (height - th) / 2.0);
	pango_cairo_show_layout(cr, layout);
	g_object_unref(layout);
	cairo_destroy(cr);
	return buffer;
}

static int text_width(const struct qw_config *config, const char *text) {
	int w, h;
	theme_text_size(config, text, 0, &w, &h);
	return w;
}

static void item_label(const struct qos_reserve_info *info, char *out, size_t len) {
	if (info->params.period_us && info->params.slice_us) {
		snprintf(out, len, "%s  (%s %.0f%% / %llu ms)", info->name,
				qos_policy_name(info->params.policy),
				100.0 * (double)info->params.slice_us / (double)info->params.period_us,
				(unsigned long long)(info->params.period_us / 1000));
	} else {
		snprintf(out, len, "%s  (%s)", info->name, qos_policy_name(info->params.policy));
	}
}

bool reserve_menu_is_open(struct qw_server *server) {
	return server->menu != NULL;
}

void reserve_menu_close(struct qw_server *server) {
	struct qw_menu *menu = server->menu;
	if (!menu) {
		return;
	}
	wlr_scene_node_destroy(&menu->tree->node);
	free(menu);
	server->menu = NULL;
}

bool reserve_menu_open(struct qw_server *server, struct qw_view *view, int x, int y) {
	reserve_menu_close(server);
	struct qos_manager *qos = qos_link_manager(server);
	const struct qos_rules *rules = qos_link_rules(server);
	char reason[300];
	if (!qos_link_ready(server, reason, sizeof(reason))) {
		decoration_show_refusal(&view->deco, view, QW_CLASS_REALTIME, reason);
		return false;
	}
	struct qw_menu *menu = calloc(1, sizeof(*menu));
	if (!menu) {
		return false;
	}
	menu->view = view;
	menu->hovered = -1;
	char labels[MAX_ITEMS][160];
	int width = 0;
	/* Reserves that exist, then those qosrc defines (created on first use). */
	size_t n = qos_manager_reserve_count(qos);
	size_t defs = rules ? rules->n_reserves : 0;
	for (size_t i = 0; i < n + defs && menu->count < MAX_ITEMS; i++) {
		struct qos_reserve_info info = { 0 };
		if (i < n) {
			if (!qos_manager_reserve_at(qos, i, &info) || info.is_auto) {
				continue;
			}
		} else {
			const struct qos_reserve_def *def = &rules->reserves[i - n];
			struct qos_reserve_info existing;
			if (qos_manager_reserve_info(qos, def->name, &existing)) {
				continue;
			}
			snprintf(info.name, sizeof(info.name), "%s", def->name);
			info.params = def->params;
		}
		struct qw_menu_item *item = &menu->items[menu->count];
		snprintf(item->reserve, sizeof(item->reserve), "%s", info.name);
		item_label(&info, labels[menu->count], sizeof(labels[0]));
		int w = text_width(&server->config, labels[menu->count]);
		width = w > width ? w : width;
		menu->count++;
	}
	/* The way to see what the reserves do, and to change them. */
	if (menu->count == MAX_ITEMS) {
		menu->count--;
	}
	menu->items[menu->count].monitor = true;
	snprintf(labels[menu->count], sizeof(labels[0]), "Monitor\u2026");
	int mw = text_width(&server->config, labels[menu->count]);
	width = mw > width ? mw : width;
	menu->count++;
	width += 2 * ITEM_PADDING;
	int height = server->config.titlebar_height;
	/* Above every layer: it belongs to the user's pointer, not to a window. */
	menu->tree = wlr_scene_tree_create(&server->scene->node);
	if (!menu->tree) {
		free(menu);
		return false;
	}
	wlr_scene_node_set_position(&menu->tree->node, x, y);
	for (size_t i = 0; i < menu->count; i++) {
		struct qw_menu_item *item = &menu->items[i];
		item->tree = wlr_scene_tree_create(&menu->tree->node);
		struct wlr_buffer *normal = render_item(&server->config, labels[i], width, height, false);
		struct wlr_buffer *hover = render_item(&server->config, labels[i], width, height, true);
		if (item->tree && normal && hover) {
			item->normal = wlr_scene_buffer_create(&item->tree->node, normal);
			item->hover = wlr_scene_buffer_create(&item->tree->node, hover);
		}
		if (normal) {
			wlr_buffer_drop(normal);
		}
		if (hover) {
			wlr_buffer_drop(hover);
		}
		if (!item->normal || !item->hover) {
			server->menu = menu;
			reserve_menu_close(server);
			return false;
		}
		wlr_scene_node_set_enabled(&item->hover->node, false);
		wlr_scene_node_set_position(&item->tree->node, 0, (int)i * height);
		item->desc = (struct qw_node_desc){
			.magic = QW_NODE_DESC_MAGIC,
			.type = QW_NODE_MENU_ITEM,
			.view = view,
			.button = (int)i,
		};
		item->tree->node.data = &item->desc;
	}
	server->menu = menu;
	return true;
}

static void set_hovered(struct qw_menu *menu, int index) {
	if (menu->hovered == index) {
		return;
	}
	if (menu->hovered >= 0) {
		struct qw_menu_item *old = &menu->items[menu->hovered];
		wlr_scene_node_set_enabled(&old->hover->node, false);
		wlr_scene_node_set_enabled(&old->normal->node, true);
	}
	if (index >= 0) {
		struct qw_menu_item *item = &menu->items[index];
		wlr_scene_node_set_enabled(&item->normal->node, false);
		wlr_scene_node_set_enabled(&item->hover->node, true);
	}
	menu->hovered = index;
}

void reserve_menu_hover(struct qw_server *server, struct qw_node_desc *desc) {
	if (!server->menu) {
		return;
	}
	set_hovered(server->menu, desc && desc->type == QW_NODE_MENU_ITEM ? desc->button : -1);
}

/* Whether name is an executable file in $PATH. */
static bool in_path(const char *name) {
	const char *path = getenv("PATH");
	char *copy = path ? strdup(path) : NULL;
	bool found = false;
	char *save = NULL;
	for (char *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir && !found;
			dir = strtok_r(NULL, ":", &save)) {
		char candidate[PATH_MAX];
		snprintf(candidate, sizeof(candidate), "%s/%s", dir, name);
		found = access(candidate, X_OK) == 0;
	}
	free(copy);
	return found;
}

/* qosway-monitor, with the window's reserve selected if it has one. */
static void start_monitor(struct qw_server *server, struct qw_view *view) {
	if (!in_path(MONITOR_COMMAND)) {
		decoration_show_refusal(&view->deco, view, QW_CLASS_REALTIME,
				MONITOR_COMMAND " is not in PATH");
		return;
	}
	char reserve[QOS_NAME_MAX + 1] = "";
	pid_t pid = view_get_pid(view);
	const char *name = pid > 0 ? qos_manager_reserve_of(qos_link_manager(server), pid, 0) : NULL;
	if (name) {
		snprintf(reserve, sizeof(reserve), "%s", name);
	}
	char *argv[] = { MONITOR_COMMAND, reserve[0] ? "--select" : NULL, reserve, NULL };
	if (server_spawn_argv(server, argv) < 0) {
		decoration_show_refusal(&view->deco, view, QW_CLASS_REALTIME,
				"cannot start " MONITOR_COMMAND);
	}
}

void reserve_menu_press(struct qw_server *server, struct qw_node_desc *desc) {
	struct qw_menu *menu = server->menu;
	if (!menu) {
		return;
	}
	if (!desc || desc->type != QW_NODE_MENU_ITEM || desc->button < 0 ||
			(size_t)desc->button >= menu->count) {
		reserve_menu_close(server);
		return;
	}
	struct qw_view *view = menu->view;
	bool monitor = menu->items[desc->button].monitor;
	char reserve[QOS_NAME_MAX + 1];
	snprintf(reserve, sizeof(reserve), "%s", menu->items[desc->button].reserve);
	reserve_menu_close(server);
	if (monitor) {
		start_monitor(server, view);
		return;
	}
	char err[256];
	/* The user, through the menu: no process asks. */
	struct qos_gate_asker asker = { .who = QOS_GATE_USER, .pid = -1 };
	pid_t pid = view_get_pid(view);
	if (pid <= 0) {
		snprintf(err, sizeof(err), "the window's process is gone");
		decoration_show_refusal(&view->deco, view, QW_CLASS_REALTIME, err);
	} else if (!qos_gate_join(server, &asker, reserve, pid, 0, NULL, NULL, err, sizeof(err))) {
		decoration_show_refusal(&view->deco, view, QW_CLASS_REALTIME, err);
	}
	qos_link_schedule_refresh(server);
}

void reserve_menu_view_gone(struct qw_server *server, struct qw_view *view) {
	if (server->menu && server->menu->view == view) {
		reserve_menu_close(server);
	}
}
