/*
 * The compositor as a slave scheduler (Ingram, thesis 5.4): the kernel is the
 * master that runs the clients by their reserves; the single-threaded
 * compositor serves their requests in the same order, bills what it spends
 * on each back to that client's reserve, and borrows a real-time priority
 * only while it works for a real-time client.
 *
 *   client fds ──▶ scheduler_run: poll; a real-time client readable?
 *                    │  yes: others' sources gated, dispatch, boosted
 *                    ▼
 *   wl_event_loop_dispatch ──▶ protocol logger: request of client C
 *                    │            └─ accounting: the time from here is C's
 *                    ▼
 *   request handlers ──▶ wl_surface.commit ──▶ best effort, under load: held
 *                    │                            (released at paced frames)
 *                    ▼
 *   output frame ──▶ render ──▶ time split over the clients by damaged,
 *                    │           visible area (decorations: their window's)
 *                    ▼
 *   frame callbacks: real-time clients first, flushed at once; best
 *                    │ effort at a divisor of the refresh; covered or
 *                    │ off-screen at hidden-frame-rate; exhausted none
 *                    ▼
 *   bill: a client's time, every 500 us of it or at each output frame, to
 *         its reserve (qos_manager_bill_pid) or its own cgroup's CPU limit
 *                    │
 *   QoS events (overrun, restored, membership) ──▶ each client's class:
 *         real-time, best effort, exhausted (not served until its period
 *         ends but for a minimum rate: pings, input and destruction work)
 *
 * docs/scheduler.md has the design, the libwayland workaround behind the
 * gating and its limits, and the measurements.
 */
#ifndef QOSWAY_SCHEDULER_H
#define QOSWAY_SCHEDULER_H

#include <stdbool.h>
#include <sys/types.h>
#include <stdint.h>
#include <time.h>

struct json_object;
struct qw_output;
struct qw_server;
struct qw_scheduler;
struct render_report;
struct wl_client;

/*
 * Created before any client can connect; the switches come from
 * server->config.scheduling. NULL only without memory.
 */
struct qw_scheduler *scheduler_create(struct qw_server *server);
void scheduler_destroy(struct qw_scheduler *sched);

/* Runs the event loop until scheduler_stop(); stands for wl_display_run(). */
void scheduler_run(struct qw_scheduler *sched);
/* Ends scheduler_run() at the end of the current iteration. */
void scheduler_stop(struct qw_scheduler *sched);

/*
 * What follows is the compositor's own work (an input, IPC, timer or output
 * handler): it is not charged to the client served last. NULL-safe.
 */
void scheduler_own(struct qw_scheduler *sched);
/* The same for the QoS manager's work (its fd, its timers), told apart. */
void scheduler_own_qos(struct qw_scheduler *sched);

/*
 * The output's frame event. With serve-by-reserve on, the frame is drawn
 * just after the event returns (the headless backend times its next tick
 * from the end of this handler, so drawing inside it would stretch every
 * frame by the render time); otherwise at once, as wl_display_run users do.
 */
void scheduler_output_frame(struct qw_scheduler *sched, struct qw_output *output);
/* The output is going away: forget any frame planned for it. */
void scheduler_output_destroyed(struct qw_scheduler *sched, struct qw_output *output);

/* The client's process may have changed reserve; look again before serving. */
void scheduler_refresh_classes(struct qw_scheduler *sched);

/*
 * In a child between fork and exec: undo what the boost set for the
 * compositor's process (its RLIMIT_RTTIME bound) and leave its cgroup for
 * the one it came from. System calls only.
 */
void scheduler_prepare_child(const struct qw_scheduler *sched);

/*
 * Once the QoS manager is up: the compositor's process into its own cgroup
 * with the configured CPU weight (scheduling server-weight), where the
 * manager can; the manager puts it back when it is destroyed (NULL-safe).
 */
void scheduler_weight_start(struct qw_scheduler *sched);

/*
 * What the compositor's libraries forked (Xwayland, which wlroots double-
 * forks) leaves the compositor's cgroup for the one the compositor came
 * from (NULL-safe).
 */
void scheduler_children_started(struct qw_scheduler *sched);

/* Whether the main thread may be boosted to real-time (NULL-safe). */
bool scheduler_boost_available(const struct qw_scheduler *sched);

/* IPC: every connected client ("clients") and the scheduler's state ("scheduler"). */
struct json_object *scheduler_json_clients(struct qw_scheduler *sched);
struct json_object *scheduler_json(struct qw_scheduler *sched);

/*
 * For `qosctl windows` and `top`: the compositor's CPU time spent for the
 * client so far, and as a share of one CPU over about the last second.
 */
uint64_t scheduler_client_server_us(struct qw_scheduler *sched, struct wl_client *client,
		double *percent);

#endif
