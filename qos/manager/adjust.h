/*
 * qos/manager/adjust.h - reserves that change their own parameters: adaptation
 * (what adapt.c decides), idle release and display-synchronous periods,
 * each applied through admission like a user's change (adjust.c; the
 * public calls, qos_manager_report_work and qos_manager_vblank, are in
 * qos.h).  Layer 3 (manager).
 */
#ifndef QOS_ADJUST_H
#define QOS_ADJUST_H

#include "qos/policy/core.h"

/*
 * A released reserve's members are looked at this often (or once a
 * period, if longer) for a run that wakes it: a clock read per member,
 * where a look per period of a 20 ms reserve would wake the manager 50
 * times a second for a reserve that is idle.
 */
#define QOS_WAKE_POLL_US 50000u

/*
 * A period=vblank reserve's periods move onto the vblank grid only after
 * QOS_VBLANK_MOVE_AFTER vblanks in a row lay further from a boundary than
 * the tolerance: QOS_VBLANK_TOLERANCE_US, or an eighth of the period if
 * more.  A move restarts the period, and where the reported vblank times
 * jitter (a compositor starved by load stamps its presents late by a few
 * milliseconds) a move at every frame would leave no period complete, so
 * no use would be booked and adaptation would see nothing.
 */
#define QOS_VBLANK_TOLERANCE_US 200u
#define QOS_VBLANK_MOVE_AFTER 8u

/*
 * Looks at the periods every reserve completed since the last pass: feeds
 * adaptation its samples and applies what it decides, releases reserves
 * idle for their idle_periods, and asks admission again for released ones
 * whose members run.  Run from dispatch, never from the event callback;
 * nothing to do (a counter compared per reserve) when no period ended.
 */
void qos_adjust_pass(struct qos_manager *mgr);

/* The reserve's own parameters: while released, the ones it gave up running. */
const struct qos_params *qos_adjust_own_params(const struct qos_reserve *r);

/* Fills the adaptation and release fields of a reserve's info. */
void qos_adjust_info(const struct qos_reserve *r, struct qos_reserve_info *out);

#endif
