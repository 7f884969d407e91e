/*
 * AutoQOS for programs started outside the compositor (from a terminal, a
 * script): the kernel's process-event connector (netlink, CN_IDX_PROC)
 * reports every exec, and the user's own processes are matched against the
 * qosrc rules right then - the modern form of the thesis's autoqosd.
 */
#ifndef QOSWAY_PROC_EVENTS_H
#define QOSWAY_PROC_EVENTS_H

#include <stdbool.h>

#include "server.h"

/* Subscribe; false (logged) if the kernel offers no connector. */
bool proc_events_init(struct qw_server *server);
void proc_events_finish(struct qw_server *server);

#endif
