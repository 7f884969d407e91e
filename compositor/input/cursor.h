/* Pointer handling: focus under the cursor, titlebar buttons, move/resize. */
#ifndef QOSWAY_CURSOR_H
#define QOSWAY_CURSOR_H

#include <stdbool.h>
#include <stdint.h>

#include "server.h"

struct qw_view;

bool cursor_init(struct qw_server *server);
void cursor_finish(struct qw_server *server);
/* Start an interactive move or resize of `view` from the cursor position. */
void view_begin_interactive(struct qw_view *view, enum qw_cursor_mode mode, uint32_t edges);
/* Act as a click on a titlebar button (enum qw_button_kind) would. */
void cursor_click_button(struct qw_view *view, int kind);
/* Re-evaluate what is under the cursor (after the scene changed). */
void cursor_rebase(struct qw_server *server, uint32_t time_msec);

#endif
