/*
 * qos/reserve/rtguard.h - real-time threads that never sleep are moved to other
 * before RLIMIT_RTTIME kills them, and back once they sleep.
 * Layer 1 (reserve).
 */
#ifndef QOS_RTGUARD_H
#define QOS_RTGUARD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct qos_manager;
struct qos_member;
struct qos_reserve;
struct qos_rtguard;

/* A reserve's guard: its real-time threads watched for RLIMIT_RTTIME. */
struct qos_reserve_rtguard {
	struct qos_rtguard *guard; /* allocated on the first watched thread */
	uint64_t retry_us; /* the guard looks for a moved-out thread asleep again; 0: no */
};

void qos_rtguard_pass(struct qos_reserve *r);
/*
 * The reserve's real-time threads are about to leave for its fallback
 * (to_rt false: call before switching them) or are back (true: after).
 */
void qos_rtguard_switch(struct qos_reserve *r, bool to_rt);
bool qos_rtguard_demoted(const struct qos_reserve *r, pid_t tid);
/* At r->rtg.retry_us: moved-out threads that sleep are made real-time while asleep. */
void qos_rtguard_retry(struct qos_reserve *r, uint64_t now_us);
/* Whether tid, about to be made fifo/rr by r, must stay other (see rtguard.c). */
bool qos_rtguard_hold(struct qos_reserve *r, pid_t pid, pid_t tid);
void qos_rtguard_destroy(struct qos_reserve *r);
/* m leaves r: its threads' estimates are carried at the manager (rtguard.c). */
void qos_rtguard_forget_member(struct qos_reserve *r, const struct qos_member *m);
/* Once a pass: carried estimates of threads gone are dropped, the others brought up to date. */
void qos_rtguard_prune(struct qos_manager *mgr);
void qos_rtguard_finish(struct qos_manager *mgr);
/*
 * Gives a leaving process back the RLIMIT_RTTIME it had before we bounded
 * it.  Raising a hard limit takes CAP_SYS_RESOURCE: without it the bound
 * stays (a limit, never a grant), and an error event says so.
 */
void qos_rtguard_restore_limit(struct qos_manager *mgr, const char *reserve, pid_t pid,
		uint64_t soft, uint64_t hard);

#endif
