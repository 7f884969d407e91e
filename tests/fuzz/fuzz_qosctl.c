/*
 * qosctl's command line (clients/qosctl.c, included whole so its static
 * build_request is reachable; its main() is renamed away), end to end:
 * the request it builds goes to the dry-run compositor's command handler
 * (dry_server.h).  The input is split at NUL bytes into the arguments
 * after "qosctl".  Rules checked: a request is one line of JSON naming the
 * command given, valid UTF-8 whenever the arguments that travel as text
 * are, and its reply has a boolean "success" (and, if false, an "error").
 */
#define main qosctl_main
#include "../../clients/qosctl.c"
#undef main

#include "dry_server.h"
#include "fuzz.h"
#include "ipc/ipc_commands.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
	if (size == 0 || size > 4096) {
		return 0;
	}
	char *text = fuzz_string(data, size);
	if (!text) {
		return 0;
	}
	char *argv[34];
	int argc = 0;
	for (size_t i = 0; i <= size && argc < 32; i += strlen(text + i) + 1) {
		argv[argc++] = text + i;
	}
	argv[argc] = NULL;
	struct qw_server *server = dry_server_get();
	/* main() refuses arguments that are not UTF-8 where they go as text. */
	int text_args = strcmp(argv[0], "exec") == 0 ? exec_command_start(argc, argv) : argc;
	bool text_ok = true;
	for (int k = 0; k < text_args; k++) {
		text_ok = text_ok && qos_utf8_valid(argv[k]);
	}
	struct fuzz_quiet quiet = fuzz_quiet_begin();
	struct json_object *req = text_ok ? build_request(argc, argv) : NULL;
	fuzz_quiet_end(quiet);
	if (req) {
		const char *line = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
		FUZZ_RULE(line && !strchr(line, '\n'), "the request is not one line");
		FUZZ_RULE(qos_utf8_valid(line), "text arguments gave a request that is not UTF-8");
		struct json_object *back = json_tokener_parse(line);
		struct json_object *cmd;
		FUZZ_RULE(back && json_object_object_get_ex(back, "command", &cmd) &&
						strcmp(json_object_get_string(cmd), argv[0]) == 0,
				"the request does not name '%s': %s", argv[0], line);
		json_object_put(back);
		bool subscribe = false, terminate = false;
		struct json_object *reply = ipc_command_handle(server, -1, line, &subscribe, &terminate);
		struct json_object *ok, *err;
		FUZZ_RULE(reply && json_object_object_get_ex(reply, "success", &ok) &&
						json_object_is_type(ok, json_type_boolean),
				"no boolean success for %s", line);
		FUZZ_RULE(json_object_get_boolean(ok) ||
						(json_object_object_get_ex(reply, "error", &err) &&
								json_object_get_string_len(err) > 0),
				"failure without an error for %s", line);
		json_object_put(reply);
		json_object_put(req);
		dry_server_dispatch(server);
	}
	free(text);
	return 0;
}
