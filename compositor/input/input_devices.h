/*
 * Every input device the seat has (backend, virtual keyboards and
 * pointers), for the seat's capabilities and the IPC's "inputs" reply.
 */
#ifndef QOSWAY_INPUT_DEVICES_H
#define QOSWAY_INPUT_DEVICES_H

#include <stdbool.h>
#include <stddef.h>
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
/* The device with this id (the IPC's "inputs" shows ids), or NULL. */
struct wlr_input_device *input_devices_find(struct qw_server *server, uint32_t id);
/* How many tracked devices have this WLR_INPUT_DEVICE_* type. */
size_t input_devices_count(struct qw_server *server, int type);
/* {"devices": [...], "seat": {...}} for the IPC; works with no seat. */
struct json_object *input_devices_json(struct qw_server *server);

/*
 * Read the config file again and apply its input settings to every
 * device; a file with any bad line changes nothing (err says why).
 */
bool input_devices_reload(struct qw_server *server, char *err, size_t err_len);

/*
 * A device of the headless backend ("keyboard", "pointer", "touch",
 * "tablet-tool" or "tablet-pad", named "headless"): it takes the config's
 * settings like any other, for tests and sessions without real input.
 * Sets id to its id; false with err if it cannot be added.
 */
bool input_devices_add_headless(struct qw_server *server, const char *type, uint32_t *id, char *err,
		size_t err_len);

#endif
