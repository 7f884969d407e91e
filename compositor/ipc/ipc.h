/*
 * JSON IPC on a unix socket (docs/ipc.md). Runs on the compositor's event
 * loop and never blocks it: replies are queued per client and a client that
 * stops reading is dropped once its queue passes a bound.
 */
#ifndef QOSWAY_IPC_H
#define QOSWAY_IPC_H

#include "server.h"

struct qw_view;

/* Listen on `path` (mode 0600). Returns NULL with a logged reason on failure. */
struct qw_ipc *ipc_create(struct qw_server *server, const char *path);
void ipc_destroy(struct qw_ipc *ipc);

/* Tell subscribed clients about a window ("new", "close", "title", ...). */
void ipc_notify_window(struct qw_server *server, struct qw_view *view, const char *change);
void ipc_notify_focus(struct qw_server *server, struct qw_view *view);

#endif
