/*
 * Touchscreens: touch points go to the surface under them (wl_touch), and
 * a tap on a titlebar button clicks it. The seat offers the touch
 * capability while a touch device exists.
 */
#ifndef QOSWAY_TOUCH_H
#define QOSWAY_TOUCH_H

#include <stdbool.h>

struct qw_server;
struct wlr_input_device;

bool touch_init(struct qw_server *server);
/* Forget every touch device; accepts a server whose init failed. */
void touch_finish(struct qw_server *server);
/* Forward this device's touch points until it is destroyed. */
void touch_add_device(struct qw_server *server, struct wlr_input_device *device);
/* Whether any touch device exists (for the seat's capabilities). */
bool touch_has_devices(struct qw_server *server);

#endif
