/*
 * Touchpad gestures (zwp_pointer_gestures_v1): swipes, pinches and holds
 * of the seat's pointers go to the client with pointer focus.
 */
#ifndef QOSWAY_GESTURES_H
#define QOSWAY_GESTURES_H

#include <stdbool.h>

struct qw_server;

/* Create the global and follow the cursor's gesture events. */
bool gestures_init(struct qw_server *server);
/* Stop following them; accepts a server whose init failed. */
void gestures_finish(struct qw_server *server);

#endif
