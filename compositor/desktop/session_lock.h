/*
 * ext-session-lock-v1 (wayland-protocols staging), implemented here since
 * wlroots 0.15 has no helper for it. One lock at a time: a second locker
 * gets `finished`, unless the holder died, in which case it takes over.
 * Lock surfaces are shown one per output, over a blank (screen_lock.h).
 */
#ifndef QOSWAY_SESSION_LOCK_H
#define QOSWAY_SESSION_LOCK_H

#include <stdbool.h>

struct qw_server;

bool session_lock_init(struct qw_server *server);
void session_lock_finish(struct qw_server *server);

#endif
