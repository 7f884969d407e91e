/*
 * qos/member/member.h - members joining, leaving and exiting, children adopted
 * or sent back, and where a leaving task goes home to (member.c).
 * Layer 2 (member): may use layers 0 and 1.
 */
#ifndef QOS_MEMBER_H
#define QOS_MEMBER_H

#include "qos/reserve/reserve.h"

void qos_member_remove(struct qos_member *m, bool alive, bool exited);
/* A thread member whose exit no pidfd tells (exit_polled) that is gone, or NULL. */
struct qos_member *qos_member_find_exited(struct qos_manager *mgr);
/*
 * Gives m's process the RLIMIT_RTTIME bound when m's reserve is fifo or rr
 * and it has none yet (at join, adoption, and a change into fifo/rr): a
 * thread that never sleeps is stopped by the kernel even with no manager.
 * The bound stays until m leaves.
 */
void qos_member_bound_rttime(struct qos_member *m);
/* Whether pid can be given an RLIMIT_RTTIME bound, which p's class needs; else err. */
bool qos_member_rttime_boundable(struct qos_manager *mgr, const struct qos_params *p, pid_t pid,
		char *err, size_t err_len);
/*
 * Whether a reserve with params p can hold single threads (the rest of their
 * process outside it); false with the reason in err.
 */
bool qos_member_fits_threads(const struct qos_manager *mgr, const struct qos_params *p, char *err,
		size_t err_len);
/*
 * Sends a task back to the groups it came from (v2, cpu).  Where they are
 * gone (a transient scope removed once it emptied), it goes to the top of
 * the tree instead, with an error event naming reserve: it must not stay in
 * a reserve's group, which may be frozen, once it has left.
 */
void qos_member_send_home(struct qos_manager *mgr, const char *reserve, pid_t pid, pid_t tid,
		bool whole_process, const char *v2, const char *cpu);
void qos_member_release_threads(struct qos_reserve *r, struct qos_member *m, pid_t pid,
		const struct qos_sched *orig);
void qos_member_restore_sched(struct qos_reserve *r, struct qos_member *m, pid_t pid,
		const struct qos_sched *orig);
/*
 * The class a thread of m had before m joined: its own, or m's for a thread
 * started since (*known false, when known is not NULL).
 */
const struct qos_sched *qos_member_orig_of(const struct qos_member *m, pid_t tid, bool *known);
/* Adopts the members' new children (inherit) or sends them back. */
void qos_member_adopt_children(struct qos_reserve *r);

#endif
