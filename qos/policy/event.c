/* Events to the embedder's callback, and the guard against re-entry from it. */
#include "qos/policy/event.h"

#include <stdarg.h>
#include <stdio.h>

void qos_event_emit(struct qos_events *ev, enum qos_event_type type, const char *reserve, pid_t pid,
		pid_t tid, uint64_t used_us, const char *fmt, ...) {
	if (!ev->fn) {
		return;
	}
	char msg[512];
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
	}
	struct qos_event e = {
		.type = type,
		.reserve = reserve,
		.pid = pid,
		.tid = tid,
		.used_us = used_us,
		.message = fmt ? msg : NULL,
	};
	ev->depth++;
	ev->fn(ev->data, &e);
	ev->depth--;
}

bool qos_event_refuse_reentry(struct qos_events *ev, char *err, size_t err_len) {
	if (!ev->depth) {
		return false;
	}
	if (err && err_len) {
		snprintf(err, err_len,
				"called from the QoS event callback, which may only query: "
				"defer the change to the event loop");
	}
	ev->last_refusal = QOS_REFUSAL_ERROR;
	return true;
}
