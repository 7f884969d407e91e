/*
 * The IPC's requests (docs/ipc.md), answered as JSON objects, apart from
 * the socket that carries them (ipc.c).
 */
#ifndef QOSWAY_IPC_COMMANDS_H
#define QOSWAY_IPC_COMMANDS_H

#include <stdbool.h>
#include <sys/types.h>

#include "server.h"

struct json_object;
struct qw_view;

/*
 * Answers one request line from a client whose process is peer_pid (-1 when
 * unknown; a client never pauses itself).  Never NULL: bad requests get an
 * error reply.  Sets *subscribe for "subscribe" and *terminate for "exit",
 * which the caller carries out once the reply is queued.
 */
struct json_object *ipc_command_handle(struct qw_server *server, pid_t peer_pid, const char *line,
		bool *subscribe, bool *terminate);

/* {"success": false, "error": ...}, the message made valid UTF-8. */
struct json_object *ipc_reply_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A JSON string of s made valid UTF-8 (clients' titles come unchecked); NULL for NULL. */
struct json_object *ipc_json_text(const char *s);
/* A window as the "windows" reply and window events describe it. */
struct json_object *ipc_json_window(struct qw_view *view);

#endif
