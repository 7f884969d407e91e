/*
 * Who may ask the QoS manager for what: every request to change some
 * process's scheduling, from the user (titlebar buttons and menu, qosctl, a
 * qosrc reload) or from an application for itself (qosway-reserve-v1),
 * is decided here and then carried out here, so one set of rules holds
 * whichever way the request came. The callers only translate: a wire
 * request or an IPC command in, a refusal message or reason out. What the
 * compositor places by itself, by the user's rules (AutoQOS, the programs
 * it starts), is asked by no one and goes to the manager directly.
 *
 * The rules:
 *  - never pid 1, a kernel thread, the compositor's own scheduling or its
 *    QoS guard's, or a service the session depends on (seatd, logind, a
 *    display manager);
 *  - never a process the session runs the compositor under (its parent
 *    and theirs, up to pid 1): their class is the session's own;
 *  - only processes of the session's user (a session run by root may
 *    allow other users' with qos-other-users on);
 *  - nothing that can freeze the process asking;
 *  - a real-time reserve (SCHED_DEADLINE) or a negative nice only when the
 *    compositor has CAP_SYS_NICE, fifo and rr with it or within the
 *    target's RLIMIT_RTPRIO; refused before the kernel would be asked;
 *  - an application only for its own process, within what qosrc allows it
 *    (allow=, max-cpu=, redefine=; by default qos, other and idle, at most
 *    50% of a CPU over all its reserves), and never a reserve the user
 *    defined, another process's automatic reserve, or one holding other
 *    processes.
 */
#ifndef QOSWAY_QOS_GATE_H
#define QOSWAY_QOS_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "qos/params.h"
#include "server.h"
#include "desktop/view.h"

/* Who asks. */
enum qos_gate_who {
	QOS_GATE_USER, /* a titlebar button or menu, qosctl, a qosrc reload */
	QOS_GATE_APP, /* a process for itself, through qosway-reserve-v1 */
};

struct qos_gate_asker {
	enum qos_gate_who who;
	/* The process asking: qosctl's peer, or the application; -1 for none
	 * (a button, the menu, a reload). */
	pid_t pid;
	/* The compositor acts on its own, following a setting (inactive-class):
	 * the user's rules apply as for a click, but the change is not
	 * remembered as the user's choice for the process. */
	bool by_setting;
};

/* Why a request was refused, as far as the protocol tells a client. */
enum qos_gate_refusal {
	QOS_GATE_FORBIDDEN, /* policy, a bad request, no manager */
	QOS_GATE_CAPACITY, /* admission control or the kernel's bandwidth bound */
};

/*
 * The user asks for `class` for process pid (a window's, or qosctl's
 * target). False with the reason for the user in err.
 */
bool qos_gate_set_class(struct qw_server *server, const struct qos_gate_asker *asker, pid_t pid,
		enum qw_class class, char *err, size_t err_len);

/*
 * Whether asker may define (or redefine) reserve `name` with params, which
 * are normalized in place. An application names its automatic reserve with
 * NULL; it is refused now what admission control would refuse at the first
 * join. False with *why (when why is not NULL) and the reason in err.
 */
bool qos_gate_may_define(struct qw_server *server, const struct qos_gate_asker *asker,
		const char *name, struct qos_params *params, enum qos_gate_refusal *why, char *err,
		size_t err_len);

/* qos_gate_may_define, and then the manager defines it. An application's
 * automatic reserve is defined only once it exists (qos_gate_join). */
bool qos_gate_define(struct qw_server *server, const struct qos_gate_asker *asker, const char *name,
		struct qos_params *params, enum qos_gate_refusal *why, char *err, size_t err_len);

/*
 * Put process pid (its thread tid, or all of it for 0) into reserve `name`,
 * which an application gives as NULL for its automatic reserve: one that
 * does not exist yet is created with `pending`, the params its
 * qos_gate_may_define allowed (NULL if none), for the whole process only.
 * False with *why (when not NULL) and the reason in err.
 */
bool qos_gate_join(struct qw_server *server, const struct qos_gate_asker *asker, const char *name,
		pid_t pid, pid_t tid, const struct qos_params *pending, enum qos_gate_refusal *why,
		char *err, size_t err_len);

/*
 * Take pid's thread tid (0: the process) out of reserve `name` (NULL: the
 * asker's automatic reserve) if that is where it is: an application leaves
 * what it joined, never another placement. Whether it left.
 */
bool qos_gate_leave(struct qw_server *server, const struct qos_gate_asker *asker, const char *name,
		pid_t pid, pid_t tid);

/*
 * Whether any change to pid's scheduling may be made, by anyone (the user,
 * an application, AutoQOS): the rules above that do not depend on who asks
 * or what is asked. False with the reason in err.
 */
bool qos_gate_may_touch(struct qw_server *server, pid_t pid, char *err, size_t err_len);

/*
 * Whether the compositor can give params to process pid (0: none yet, a
 * reserve being defined): with CAP_SYS_NICE, anything; without it, fifo and
 * rr up to pid's RLIMIT_RTPRIO (as the kernel allows a process of the same
 * user), never a real-time reserve (SCHED_DEADLINE) or a negative nice.
 * False with the reason and the fixes in err.
 */
bool qos_gate_may_raise(const struct qos_params *params, pid_t pid, char *err, size_t err_len);

/*
 * The user takes thread tid of process pid out of the reserve it is in (as
 * a member of its own), after qos_gate_may_touch. False with the reason in
 * err, also when it is in none.
 */
bool qos_gate_leave_thread(struct qw_server *server, const struct qos_gate_asker *asker, pid_t pid,
		pid_t tid, char *err, size_t err_len);

/*
 * Whether a qosrc reload may give reserve `name`, as it is now, these
 * params: as qosctl reserve may, for every member.
 */
bool qos_gate_may_reload(struct qw_server *server, const char *name,
		const struct qos_params *params, char *err, size_t err_len);

#endif
