/*
 * qos/adjust.h - reserves that change their own parameters: adaptation
 * (what adapt.c decides), idle release and display-synchronous periods,
 * each applied through admission like a user's change (adjust.c; the
 * public calls, qos_manager_report_work and qos_manager_vblank, are in
 * qos.h).  Layer 3 (manager).
 */
#ifndef QOS_ADJUST_H
#define QOS_ADJUST_H

#include "qos/core.h"

/*
 * A released reserve's members are looked at this often (or once a
 * period, if longer) for a run that wakes it: a clock read per member,
 * where a look per period of a 20 ms reserve would wake the manager 50
 * times a second for a reserve that is idle.
 */
#define QOS_WAKE_POLL_US 50000u

/* Phase errors up to this leave a period=vblank reserve's periods where they are. */
#define QOS_VBLANK_TOLERANCE_US 200u

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
