/*
 * The screen lock: while it holds, input of every kind (keyboard, pointer,
 * touch, virtual devices) reaches only the locker's surfaces, on every
 * output, and the compositor's own bindings, titlebar buttons and menus do
 * nothing. It is held by one of:
 *
 *  - ext-session-lock-v1 (session_lock.c): outputs are blanked and only
 *    lock surfaces are shown; a locker that dies leaves the session locked
 *    and a new locker may take over.
 *  - wlr-input-inhibitor: input goes to the inhibiting client alone, but
 *    nothing is blanked by us and the lock ends with the client, crash
 *    included (see docs/locking.md).
 *
 * Input is confined with seat grabs for keyboard, pointer and touch that
 * refuse focus to every other client; a grab another module starts while
 * locked is replaced by ours at once. QoS is not touched: paused windows
 * stay paused and real-time ones keep their reserves.
 */
#ifndef QOSWAY_SCREEN_LOCK_H
#define QOSWAY_SCREEN_LOCK_H

#include <stdbool.h>
#include <stdint.h>

struct qw_server;
struct qw_keyboard;
struct wl_client;
struct wlr_surface;
struct wlr_event_keyboard_key;
struct wlr_event_pointer_button;
struct wlr_scene_node;

bool screen_lock_init(struct qw_server *server);
void screen_lock_finish(struct qw_server *server);

/* Whether any lock holds (a dead locker's session lock included). */
bool screen_lock_active(struct qw_server *server);
/* While locked: whether surface may get input. Always true when unlocked. */
bool screen_lock_surface_allowed(struct qw_server *server, struct wlr_surface *surface);

/*
 * Input hooks for cursor.c and seat.c: while locked they deliver the event
 * to the locker (or nobody) and return true; the caller then does nothing
 * else with it. Unlocked they return false.
 */
bool screen_lock_pointer_motion(struct qw_server *server, uint32_t time_msec);
bool screen_lock_pointer_button(struct qw_server *server, struct wlr_event_pointer_button *event);
bool screen_lock_key(struct qw_server *server, struct qw_keyboard *keyboard,
		struct wlr_event_keyboard_key *event);

/* For session_lock.c: the lock is taken by client (hides every output). */
void screen_lock_session_begin(struct qw_server *server, struct wl_client *client);
/* The locker died: stay locked, with no client allowed until a new locker. */
void screen_lock_session_abandon(struct qw_server *server);
void screen_lock_session_end(struct qw_server *server);
/* The tree lock surfaces go in: above everything, while locked. */
struct wlr_scene_node *screen_lock_tree(struct qw_server *server);
/* Give the keyboard to a lock surface that mapped (if none has it). */
void screen_lock_focus(struct qw_server *server, struct wlr_surface *surface);

#endif
