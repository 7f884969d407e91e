/*
 * keyboard-shortcuts-inhibit: a virtual machine or remote desktop viewer
 * with keyboard focus gets every key, the compositor's bindings included,
 * except the bindings whose action is shortcuts-inhibit-toggle, which hand
 * the bindings back (and, pressed again, over again).
 */
#ifndef QOSWAY_SHORTCUTS_INHIBIT_H
#define QOSWAY_SHORTCUTS_INHIBIT_H

#include <stdbool.h>

struct qw_server;

bool shortcuts_inhibit_init(struct qw_server *server);
void shortcuts_inhibit_finish(struct qw_server *server);
/* The focused surface holds an active inhibitor: bindings pass to it. */
bool shortcuts_inhibit_active(struct qw_server *server);
/* Deactivate the focused surface's inhibitor, or activate it again. */
void shortcuts_inhibit_toggle(struct qw_server *server);

#endif
