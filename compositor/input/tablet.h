/*
 * Drawing tablets (zwp_tablet_manager_v2): each tablet tool and pad
 * device becomes a tablet or pad of the seat, and a tool's proximity,
 * motion and tip go to the surface under it. No pointer emulation.
 */
#ifndef QOSWAY_TABLET_H
#define QOSWAY_TABLET_H

#include <stdbool.h>

struct qw_server;
struct wlr_input_device;

/* Create the global. */
bool tablet_init(struct qw_server *server);
/* Forget every tablet; accepts a server whose init failed. */
void tablet_finish(struct qw_server *server);
/* A WLR_INPUT_DEVICE_TABLET_TOOL or _TABLET_PAD device appeared. */
void tablet_add_device(struct qw_server *server, struct wlr_input_device *device);

#endif
