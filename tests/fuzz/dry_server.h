/*
 * A compositor for the harnesses that feed the IPC and the
 * qosway-reserve-v1 global: a real wl_display and event loop, the real
 * scheduler, QoS link, protocol global and IPC socket, in a dry run
 * (server.h): handlers run, but nothing outside the process changes (no
 * cgroups, no scheduling classes, no signals, nothing spawned).  No
 * backend, outputs or windows.
 */
#ifndef QOSWAY_FUZZ_DRY_SERVER_H
#define QOSWAY_FUZZ_DRY_SERVER_H

#include "server.h"

/* The one server of the process, made on first use; aborts if it cannot be. */
struct qw_server *dry_server_get(void);
/* Runs what is ready on its event loop without waiting. */
void dry_server_dispatch(struct qw_server *server);

#endif
