/*
 * qos/policy/event.h - events to the embedder's callback, the guard against calls
 * made from inside it, and why the last refused call was refused.
 * Layer 0 (kernel and reporting): every other qos/ file may call it.
 */
#ifndef QOS_EVENT_H
#define QOS_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "qos/qos.h"

struct qos_events {
	qos_event_fn fn; /* NULL: nobody listens */
	void *data;
	unsigned depth; /* callbacks running now */
	enum qos_refusal last_refusal; /* qos_manager_last_refusal */
};

void qos_event_emit(struct qos_events *ev, enum qos_event_type type, const char *reserve, pid_t pid,
		pid_t tid, uint64_t used_us, const char *fmt, ...) __attribute__((format(printf, 7, 8)));

/*
 * True (err filled, when given) while the event callback runs: public calls
 * that change reserves or members refuse then (qos.h), since the call the
 * event came from is in the middle of walking them.
 */
bool qos_event_refuse_reentry(struct qos_events *ev, char *err, size_t err_len);

/* Whether an event callback is running now. */
static inline bool qos_event_busy(const struct qos_events *ev) {
	return ev->depth != 0;
}

#endif
