/*
 * A connection to qosway's IPC socket (docs/ipc.md) for the clients that
 * are not qosctl: newline-delimited JSON, replies in request order, event
 * lines in between once subscribed.  Reading is non-blocking so that a
 * Wayland client can poll the socket beside its display; ipc_client_request
 * blocks, for command-line tools and headless runs.
 *
 * Replies are untrusted input: the json_* helpers read a missing key or a
 * value of another type as 0, "" or false instead of aborting.
 */
#ifndef QOSWAY_IPC_CLIENT_H
#define QOSWAY_IPC_CLIENT_H

#include <json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ipc_client;

/*
 * Connects to path, or to $QOSWAY_SOCK when path is NULL.  NULL on failure,
 * with the reason in err.
 */
struct ipc_client *ipc_client_connect(const char *path, char *err, size_t err_len);
/* Closes the connection; accepts NULL. */
void ipc_client_destroy(struct ipc_client *client);
int ipc_client_fd(const struct ipc_client *client);

/* Sends one request object (not consumed).  False when the socket failed. */
bool ipc_client_send(struct ipc_client *client, struct json_object *request);

/*
 * Reads what the socket has without blocking.  False on EOF or error (the
 * compositor went away); the lines already read stay available.
 */
bool ipc_client_read(struct ipc_client *client);

/* The next complete line as JSON (the caller puts it), or NULL if none yet. */
struct json_object *ipc_client_next(struct ipc_client *client);

/*
 * Sends request and waits up to timeout_ms for its reply.  Event lines that
 * arrive first go to on_event (which may be NULL; the object is put after
 * the call).  NULL on timeout or a broken connection, with the reason in err.
 */
struct json_object *ipc_client_request(struct ipc_client *client, struct json_object *request,
		int timeout_ms, void (*on_event)(void *data, struct json_object *event), void *data,
		char *err, size_t err_len);

/* A request object {"command": command}. */
struct json_object *ipc_client_command(const char *command);

/* Whether the line is an event (has "event"), not a reply. */
bool ipc_json_is_event(struct json_object *obj);
bool ipc_json_success(struct json_object *obj);
const char *ipc_json_string(struct json_object *obj, const char *key);
int64_t ipc_json_int(struct json_object *obj, const char *key);
bool ipc_json_bool(struct json_object *obj, const char *key);
/* obj[key] if it is an array, else NULL; ipc_json_length(NULL) is 0. */
struct json_object *ipc_json_array(struct json_object *obj, const char *key);
size_t ipc_json_length(struct json_object *array);

#endif
