/*
 * wlr-output-management-unstable-v1: clients such as wlr-randr and kanshi
 * see every output (its modes, position, scale, transform, whether it is
 * on) and ask for changes, which output_apply.h tests or applies as a whole.
 */
#ifndef QOSWAY_OUTPUT_MANAGEMENT_H
#define QOSWAY_OUTPUT_MANAGEMENT_H

#include <stdbool.h>

struct qw_server;

bool output_management_init(struct qw_server *server);
/* Tell clients the outputs as they are now, after any change. */
void output_management_update(struct qw_server *server);

#endif
