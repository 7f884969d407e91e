/*
 * Plugging and unplugging virtual (headless) outputs at run time, for tests
 * and for sessions without a display: the IPC commands `output-add` and
 * `output-remove` (ipc_commands.c). Real outputs are never touched.
 */
#ifndef QOSWAY_OUTPUT_HEADLESS_H
#define QOSWAY_OUTPUT_HEADLESS_H

#include <stdbool.h>
#include <stddef.h>

struct qw_server;

/* A new headless output of that size; its name is written to name_out. */
bool output_headless_add(struct qw_server *server, int width, int height, char *name_out,
		size_t name_len, char *err, size_t err_len);
/* Destroy the headless output called `name`, as if it were unplugged. */
bool output_headless_remove(struct qw_server *server, const char *name, char *err, size_t err_len);

#endif
