/*
 * Testing aid: raise touch, gesture and tablet events on a device of the
 * headless backend, through the device's own wlroots signals, so that
 * they take the same path as a real device's. Used by the IPC commands
 * input-touch, input-gesture and input-tablet (docs/ipc.md).
 */
#ifndef QOSWAY_INPUT_EMIT_H
#define QOSWAY_INPUT_EMIT_H

#include <stdbool.h>
#include <stddef.h>

struct json_object;
struct qw_server;

/*
 * Check the whole request {"device": id, "event": name, ...} and raise
 * its event. False with err naming what is wrong; then nothing happened.
 * kind is "touch", "gesture" or "tablet".
 */
bool input_emit(struct qw_server *server, const char *kind, struct json_object *req, char *err,
		size_t err_len);

#endif
