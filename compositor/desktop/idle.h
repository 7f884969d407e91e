/*
 * User activity and idle inhibition for the org_kde_kwin_idle timers
 * (swayidle and friends).
 *
 * Every kind of input the seat handles (keyboards, pointers, touch, and the
 * virtual keyboards and pointers of input tools) counts as activity. An
 * idle-inhibit inhibitor holds every timer off while its surface can be
 * seen: mapped, not minimized, and its client not paused by the QoS
 * manager (a frozen video player is not being watched).
 */
#ifndef QOSWAY_IDLE_H
#define QOSWAY_IDLE_H

#include <stdbool.h>

struct qw_server;

/* Follow idle inhibitors and touch devices. */
void idle_init(struct qw_server *server);
void idle_finish(struct qw_server *server);
/* The user did something: restart every idle timer. */
void idle_notify_activity(struct qw_server *server);
/* A surface was shown, hidden, paused or resumed: recount inhibitors. */
void idle_update_inhibit(struct qw_server *server);

#endif
