/*
 * Inactive windows, seen from the display: a window minimised, entirely
 * covered by opaque windows above it, or on no output for longer than
 * `inactive-timeout` is inactive until it shows again or gets the focus.
 * With `inactive-class idle|normal` the process of a window whose windows
 * are all inactive is moved to that class through the QoS gate (so its
 * refusals hold), and back to the class it had once one shows again.
 *
 * Processes someone chose a class for are left alone: those the user
 * placed (titlebar buttons, menu, qosctl) and those that placed themselves
 * through qosway-reserve-v1. A user's change to a moved process ends the
 * move: it is not undone later. A move only ever lowers a class, so a
 * paused or idle process stays as it is.
 */
#ifndef QOSWAY_INACTIVE_H
#define QOSWAY_INACTIVE_H

#include <stdbool.h>
#include <sys/types.h>

#include "server.h"

struct qw_view;

bool inactive_create(struct qw_server *server);
void inactive_destroy(struct qw_inactive *inactive);
/* The window got the focus (or was unminimised): it is active at once. */
void inactive_view_active(struct qw_view *view);
/* The user chose pid's class or reserve: never move it, and forget a move. */
void inactive_user_placed(struct qw_server *server, pid_t pid);

#endif
