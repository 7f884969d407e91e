/*
 * The scheduler's parts (scheduler.h), each in a file of its own:
 *   scheduler.c          clients, their classes, the loop
 *   scheduler_ipc.c      what IPC shows of them
 *   scheduler_account.c  whose time the main thread spends (the books)
 *   scheduler_bill.c     billing it to reserves and cgroup limits
 *   scheduler_gate.c     holding a client's requests back (libwayland sources)
 *   scheduler_boost.c    the main thread's borrowed real-time priority
 *   scheduler_frame.c    frames: drawing, callbacks in order, held commits
 */
#ifndef QOSWAY_SCHEDULER_INTERNAL_H
#define QOSWAY_SCHEDULER_INTERNAL_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <wayland-server-core.h>

#include "qos/cglimit.h"
#include "qos/params.h"
#include "scheduler/scheduler.h"

/* Bill a client's time once this much of it is unbilled (thesis 5.4.5). */
#define SCHED_BILL_EVERY_NS 500000ull
/* An exhausted client is still served this often: pings, input, destruction. */
#define SCHED_MIN_SERVICE_NS 100000000ull
/* Best-effort work per frame the compositor allows itself before pacing. */
#define SCHED_BE_BUDGET_SHARE 0.5
/* A real-time client that got its frame callback and has not committed
 * within this long no longer keeps the compositor boosted. */
#define SCHED_AWAIT_MAX_NS 50000000ull

/* Slots of the table from wl_client to sched_client. */
#define SCHED_CLIENT_SLOTS 256

/* Whom the main thread's time goes to. */
enum sched_owner {
	SCHED_OWNER_SELF, /* the compositor itself */
	SCHED_OWNER_QOS, /* ... its QoS manager policing reserves, in particular */
	SCHED_OWNER_NEXT, /* loop bookkeeping, charged to the next one served */
	SCHED_OWNER_CLIENT, /* sched->owner_client */
};

/* A stretch of the main thread's wall time for one owner (scheduler_account.c). */
struct sched_segment {
	enum sched_owner owner;
	struct sched_client *client;
	uint64_t wall_ns;
};

/* A cgroup CPU limit shared by the clients in it, and its running window. */
struct sched_limit {
	struct wl_list link; /* qw_scheduler.limits */
	int refs;
	struct qos_cglimit cg;
	uint64_t window_end_ns; /* CLOCK_MONOTONIC */
	uint64_t usage_start_us; /* the group's own CPU time at the window's start */
	uint64_t server_us; /* compositor time charged in this window */
	uint64_t debt_us; /* own + server past the last window's quota */
	bool exhausted; /* until window_end_ns */
};

struct sched_client {
	struct wl_list link; /* qw_scheduler.clients */
	struct qw_scheduler *sched;
	struct wl_client *client;
	struct wl_listener destroy;
	pid_t pid;
	int fd;

	/* Accounting, CPU nanoseconds of the compositor's main thread. */
	uint64_t server_ns;
	uint64_t billed_ns;
	uint64_t unbilled_ns;
	uint64_t batch_events; /* events queued for it in the open batch */
	uint32_t flush_events; /* events queued for it since the last flush */
	uint64_t damage_px; /* damage its commits brought since the last frame */
	uint64_t sample_ns, sample_server_ns; /* for the share over the last second */
	double server_percent;

	/* Its class, as the QoS manager has it (sched_classify). */
	bool realtime;
	int rt_priority; /* fifo/rr; 0 for qos and best effort */
	char reserve[QOS_NAME_MAX + 1]; /* "" when in none */
	uint64_t period_ns; /* its reserve's period */
	uint64_t exhausted_until_ns; /* its reserve used its slice: till the restore,
	                              * the period's end at the most */
	struct sched_limit *limit; /* its own cgroup's limit when in no reserve */
	uint64_t limit_looked_ns;

	/* Gating (scheduler_gate.c). */
	struct wl_event_source *source; /* libwayland's, verified; NULL if unknown */
	bool gated;
	uint64_t min_served_ns; /* last time it was served while exhausted */
	short revents; /* of the last poll */

	/* Real-time frame cycle: callback sent, next commit not on screen yet. */
	bool awaiting;
	bool committed;
	uint64_t awaiting_ns;
};

struct sched_boost {
	bool available; /* SCHED_FIFO was allowed at start */
	bool active; /* the main thread is SCHED_FIFO now */
	int priority;
	pid_t tid;
	uint64_t count, active_ns, since_ns;
	uint64_t revocations;
	uint64_t paused_until_ns; /* after SIGXCPU: no boost until then */
	bool have_rttime;
	struct rlimit saved_rttime; /* children get it back (spawn.c) */
	char note[160]; /* why it is off, for the log and IPC */
};

/* A best-effort surface whose next commit is held (scheduler_frame.c). */
struct sched_hold {
	struct wl_list link; /* qw_scheduler.holds */
	struct qw_scheduler *sched;
	struct wlr_surface *surface;
	uint32_t seq;
	bool locked;
	struct wl_listener commit;
	struct wl_listener destroy;
};

struct qw_scheduler {
	struct qw_server *server;
	bool serve, bill, accounting, stop;
	struct wl_list clients; /* sched_client.link */
	struct wl_list limits; /* sched_limit.link */
	struct wl_listener client_created;
	struct wl_listener qos_event; /* server->events.qos_event */
	struct wl_protocol_logger *logger;
	struct wl_listener new_surface;
	FILE *trace; /* QOSWAY_SCHED_TRACE: one line per decision, for tests */

	/* Accounting. */
	enum sched_owner owner;
	struct sched_client *owner_client;
	uint64_t segment_ns; /* monotonic time the current segment began; 0: asleep */
	uint64_t segments_wall_ns; /* their length in all */
	bool billable_pending; /* one of them is a client's with a reserve or limit */
	uint64_t cpu_ns; /* main thread CPU time at the last settle */
	struct sched_segment *segments; /* since the last settle */
	size_t n_segments, cap_segments;
	uint64_t next_ns; /* bookkeeping waiting for the next client served */
	uint64_t own_ns;
	uint64_t gone_ns, gone_billed_ns; /* of clients since disconnected */
	uint64_t qos_ns; /* the QoS manager's part of own_ns */
	int batch_depth;
	enum sched_owner batch_owner; /* before the batch, and after it */
	struct sched_client *batch_owner_client;
	bool flush_pending;
	uint64_t books_ops, books_ns; /* the books' own cost (sampled) */
	uint64_t clock_read_ns; /* what a monotonic clock read costs */
	uint64_t bills_ns, bills; /* billing's */
	struct sched_client *by_client[SCHED_CLIENT_SLOTS]; /* sched_client_of's table */

	/* Classes. */
	bool classes_dirty;
	uint64_t classified_ns;
	size_t n_realtime;

	/* Gating and the poll set. */
	bool gating; /* every client's source found and verified so far */
	struct pollfd *pfd;
	struct sched_client **pcl;
	size_t pcap;
	uint64_t rt_phases, gated_dispatches, iterations;

	struct sched_boost boost;
	unsigned int server_weight; /* its cgroup's weight, 0 when not in one */
	char weight_note[256]; /* why not, for IPC */

	/* Frames. */
	uint64_t be_budget_ns; /* 0: SCHED_BE_BUDGET_SHARE of the refresh period */
	unsigned int divisor; /* best effort gets callbacks every divisor-th frame */
	uint64_t be_cost_ns; /* best-effort time in the current window */
	uint64_t be_last_ns; /* be total at the window's start */
	unsigned int window_frames, be_frames;
	uint64_t rt_drawn_ns; /* last frame callback to a real-time client */
	uint64_t frames;
	bool hold; /* best-effort commits are held */
	struct wl_list holds; /* sched_hold.link */
	struct wl_event_source *hidden_timer;
	uint64_t hidden_sent_ns;
};

/* scheduler.c */
struct sched_client *sched_client_of(struct qw_scheduler *sched, struct wl_client *client);
void sched_classify_all(struct qw_scheduler *sched);
uint64_t sched_now_ns(void);
/* Whether the client may be served now (not exhausted), as gating sees it. */
bool sched_client_exhausted(const struct sched_client *c, uint64_t now);
void sched_trace(struct qw_scheduler *sched, const char *fmt, ...)
		__attribute__((format(printf, 2, 3)));

/* scheduler_account.c */
bool sched_account_init(struct qw_scheduler *sched);
void sched_account_finish(struct qw_scheduler *sched);
/* CPU time of the calling thread (a system call). */
uint64_t sched_thread_ns(void);
/* From now on the main thread works for owner (c: the client). */
void sched_switch(struct qw_scheduler *sched, enum sched_owner owner, struct sched_client *c);
/* Charges the segments with the CPU time really used since the last time. */
void sched_settle(struct qw_scheduler *sched);
/* Before sleeping: the clock stops (and the books settle every few ms)... */
void sched_pause(struct qw_scheduler *sched);
/* ... and after: the current segment starts now. */
void sched_resume(struct qw_scheduler *sched);
/* Settles whatever names c, which is going away. */
void sched_forget(struct qw_scheduler *sched, struct sched_client *c);
void sched_batch_begin(struct qw_scheduler *sched);
void sched_batch_end(struct qw_scheduler *sched);
void sched_flush_clients(struct qw_scheduler *sched);
/* Splits the time since sched_switch(SELF) by the damage clients brought. */
void sched_account_render(struct qw_scheduler *sched, const struct render_report *report);

/* scheduler_bill.c */
/* Bills what is due (force: everything unbilled, at each output frame). */
void sched_bill(struct qw_scheduler *sched, bool force);
/* A client's last bill, as it goes. */
void sched_client_account_gone(struct qw_scheduler *sched, struct sched_client *c);
/* The client's own cgroup limit, looked up again at most once a second. */
void sched_limit_update(struct qw_scheduler *sched, struct sched_client *c, uint64_t now);
void sched_limit_unref(struct qw_scheduler *sched, struct sched_limit *limit);
/* Window ends of cgroup limits: an exhausted one is served again. */
void sched_limits_tick(struct qw_scheduler *sched, uint64_t now);

/* scheduler_gate.c */
void sched_gate_find_source(struct qw_scheduler *sched, struct sched_client *c);
void sched_gate(struct sched_client *c, bool gated);
/* Gate the exhausted, open them at the minimum service rate; returns the
 * next time one of them is due (0: none). */
uint64_t sched_gate_exhausted(struct qw_scheduler *sched, uint64_t now);

/* scheduler_boost.c */
void sched_boost_init(struct qw_scheduler *sched);
void sched_boost_finish(struct qw_scheduler *sched);
void sched_boost_set(struct qw_scheduler *sched, bool on);
/*
 * Whether real-time work is pending: a frame of a real-time client in
 * flight. *until (if not NULL) is lowered to when that could lapse.
 */
bool sched_rt_pending(struct qw_scheduler *sched, uint64_t now, uint64_t *until);
void sched_boost_poll_revoked(struct qw_scheduler *sched);

/* scheduler_weight.c */
/* In a child between fork and exec: back into the compositor's first cgroup. */
void sched_weight_prepare_child(const struct qw_scheduler *sched);

/* scheduler_frame.c */
bool sched_frame_init(struct qw_scheduler *sched);
void sched_frame_finish(struct qw_scheduler *sched);
void sched_frame_draw(struct qw_scheduler *sched, struct qw_output *output);

#endif
