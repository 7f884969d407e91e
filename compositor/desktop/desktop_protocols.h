/*
 * Globals that need little or no policy from us: clipboard managers
 * (wlr-data-control), night-light tools (wlr-gamma-control), screen
 * blanking (wlr-output-power-management) and dialogs of one program placed
 * over another's window (xdg-foreign v1 and v2).
 */
#ifndef QOSWAY_DESKTOP_PROTOCOLS_H
#define QOSWAY_DESKTOP_PROTOCOLS_H

#include <stdbool.h>

struct qw_server;

/* Create the globals; false, after logging which, if one could not be made. */
bool desktop_protocols_init(struct qw_server *server);
void desktop_protocols_finish(struct qw_server *server);

#endif
