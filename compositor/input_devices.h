/*
 * Every input device the seat has (backend, virtual keyboards and
 * pointers), for the seat's capabilities and the IPC's "inputs" reply.
 */
#ifndef QOSWAY_INPUT_DEVICES_H
#define QOSWAY_INPUT_DEVICES_H

#include <stdbool.h>
#include <stdint.h>

struct json_object;
struct qw_server;
struct wlr_input_device;

void input_devices_init(struct qw_server *server);
/* Forget every device (their destroy listeners go too). */
void input_devices_finish(struct qw_server *server);
/* Track a device until it is destroyed; virtual ones came from a client. */
void input_devices_add(struct qw_server *server, struct wlr_input_device *device,
		bool virtual_device);
/* How many tracked devices have this WLR_INPUT_DEVICE_* type. */
size_t input_devices_count(struct qw_server *server, int type);
/* {"devices": [...], "seat": {...}} for the IPC; works with no seat. */
struct json_object *input_devices_json(struct qw_server *server);

#endif
