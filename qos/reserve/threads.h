/*
 * qos/reserve/threads.h - member threads listed once per housekeeping pass.
 * Layer 1 (reserve).
 */
#ifndef QOS_THREADS_H
#define QOS_THREADS_H

#include "qos/reserve/reserve.h"

/*
 * Calls fn (when not NULL) for every thread of member m (its one thread for
 * a thread member) and returns how many, or -1 when the process is gone.
 * Between qos_threads_keep(mgr, true) and (mgr, false), a process is listed
 * once and the listing reused (threads.c).
 */
int qos_threads_for_each(struct qos_manager *mgr, struct qos_member *m,
		void (*fn)(pid_t tid, void *data), void *data);
/* Closes the task directory the listings keep open for m; before freeing it. */
void qos_threads_close_task_dir(struct qos_manager *mgr, struct qos_member *m);
/* Between (mgr, true) and (mgr, false) each process is listed once per pass. */
void qos_threads_keep(struct qos_manager *mgr, bool keep);
void qos_threads_finish(struct qos_manager *mgr);

#endif
