/*
 * Pointer constraints (lock and confine) and relative pointer motion, for
 * games, 3D viewers and remote desktops.
 *
 * A constraint is active while its surface has keyboard focus. Locked: the
 * cursor stays where it is and only relative motion reaches the client;
 * when the lock ends the cursor moves to the client's position hint.
 * Confined: the cursor cannot leave the constraint's region (intersected
 * with the surface's input region). Relative motion goes to every client
 * that asked for it with each pointer motion, constrained or not.
 */
#ifndef QOSWAY_POINTER_CONSTRAINTS_H
#define QOSWAY_POINTER_CONSTRAINTS_H

#include <stdbool.h>
#include <stdint.h>

struct qw_server;
struct wlr_input_device;

bool pointer_constraints_init(struct qw_server *server);
void pointer_constraints_finish(struct qw_server *server);

/*
 * A pointer moved by (*dx, *dy) layout pixels: send relative motion, then
 * shrink the motion to what the active constraint allows (0, 0 while
 * locked). Call before moving the cursor.
 */
void pointer_constraints_motion(struct qw_server *server, uint32_t time_msec, double *dx,
		double *dy, double dx_unaccel, double dy_unaccel);

/* "locked" or "confined" while a constraint is active, else NULL. */
const char *pointer_constraints_active_type(struct qw_server *server);

#endif
