/*
 * Activation without theft. A window asking for the focus
 * (xdg_activation_v1, or an X11 _NET_ACTIVE_WINDOW) gets it only when the
 * request comes from what the user is using:
 *
 *  - xdg-activation: the token was made with an input serial of the seat
 *    (wlroots checked it was the client's and that the token's surface had
 *    the keyboard) and the client that made it still has the keyboard;
 *  - X11: the focused window belongs to the same X11 program.
 *
 * Anything else marks the window urgent instead: its titlebar and border
 * turn the titlebar-urgent colour and IPC reports `urgent` until it gets
 * the focus. An X11 window's urgency hint marks it too.
 */
#ifndef QOSWAY_ACTIVATION_H
#define QOSWAY_ACTIVATION_H

#include <stdbool.h>

struct qw_server;
struct qw_view;

void activation_init(struct qw_server *server);
void activation_finish(struct qw_server *server);
/* Mark or clear; focusing a window clears it (view_focus). */
void activation_set_urgent(struct qw_view *view, bool urgent);
/* An X11 window asked for the focus. */
void activation_request_x11(struct qw_view *view);

#endif
