/*
 * Input methods (CJK typing): text-input v3 for the focused client,
 * input-method v2 for the one input method (fcitx5 and the like), relayed
 * between them. The input method's candidate window (its popup surface)
 * is shown under the text cursor of the focused client, above windows.
 * While the input method grabs the keyboard, keys go to it, not to the
 * focused client, except from its own virtual keyboard (the keys it
 * types back). A second input method is told it is unavailable.
 */
#ifndef QOSWAY_TEXT_INPUT_H
#define QOSWAY_TEXT_INPUT_H

#include <stdbool.h>
#include <stdint.h>

struct qw_server;
struct wlr_input_device;
struct wlr_keyboard_modifiers;

bool text_input_init(struct qw_server *server);
void text_input_finish(struct qw_server *server);

/* A key from `device`: true if the input method's grab took it. */
bool text_input_grab_key(struct qw_server *server, struct wlr_input_device *device,
		uint32_t time_msec, uint32_t keycode, uint32_t state);
/* Modifiers from `device`: true if the input method's grab took them. */
bool text_input_grab_modifiers(struct qw_server *server, struct wlr_input_device *device);

#endif
