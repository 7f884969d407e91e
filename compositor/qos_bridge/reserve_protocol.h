/* The qosway-reserve-v1 global (protocols/qosway-reserve-v1.xml). */
#ifndef QOSWAY_RESERVE_PROTOCOL_H
#define QOSWAY_RESERVE_PROTOCOL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "server.h"

/* Advertise the global; it goes away with the display. */
bool reserve_protocol_create(struct qw_server *server);
/*
 * The qos utilisation (ppm of a CPU) process pid holds through the protocol
 * in reserves other than `except` (each counted once): those it defined and
 * those it joined threads to, at their current parameters.
 */
uint64_t reserve_protocol_held_ppm(struct qw_server *server, pid_t pid, const char *except);
/* Whether process pid put itself (or a thread) in a reserve through the protocol. */
bool reserve_protocol_placed(struct qw_server *server, pid_t pid);

#endif
