/*
 * The reserve menu: right-click on a QoS titlebar button lists the named
 * reserves; picking one moves the window's process into it. The last item,
 * "Monitor...", starts qosway-monitor (from PATH) with the window's reserve
 * selected. Drawn
 * server-side; one buffer per item and visual state (normal, hover), built
 * when the menu opens.
 *
 *   menu tree (above every layer, desc-less)
 *     item[i] tree (desc MENU_ITEM, button = i)
 *       normal buffer / hover buffer   exactly one enabled
 */
#ifndef QOSWAY_RESERVE_MENU_H
#define QOSWAY_RESERVE_MENU_H

#include <stdbool.h>
#include <stdint.h>

#include "server.h"

struct qw_view;

/* Open the menu for `view` at layout position (x, y); replaces an open one. */
bool reserve_menu_open(struct qw_server *server, struct qw_view *view, int x, int y);
void reserve_menu_close(struct qw_server *server);
bool reserve_menu_is_open(struct qw_server *server);
/* Pointer moved: highlight the item under it. */
void reserve_menu_hover(struct qw_server *server, struct qw_node_desc *desc);
/* A press while open: picks the item under the pointer, or closes the menu. */
void reserve_menu_press(struct qw_server *server, struct qw_node_desc *desc);
/* The view is going away: a menu for it must not outlive it. */
void reserve_menu_view_gone(struct qw_server *server, struct qw_view *view);

#endif
