/*
 * The QoS class of a window's process, as the manager confirmed it: the
 * one thing the titlebar buttons show. view_request_class() is the single
 * entry point for changing it; qos_link_class_of() reads it back.
 */
#ifndef QOSWAY_QOS_BRIDGE_QOS_CLASS_H
#define QOSWAY_QOS_BRIDGE_QOS_CLASS_H

#include <stdbool.h>

enum qw_class {
	QW_CLASS_NORMAL,
	QW_CLASS_REALTIME, /* a guaranteed reserve (policy qos) */
	QW_CLASS_IDLE,
	QW_CLASS_PAUSED,
	QW_CLASS_FIFO, /* fifo/rr with a safety limit; shown as real-time */
	QW_CLASS_NICE, /* other at nice 10; shown as idle */
	QW_CLASS_COUNT,
};

/* "normal", "realtime", "idle", "paused", "fifo", "nice"; "?" if out of range. */
const char *qos_class_name(enum qw_class class);
/* The class named so (as qos_class_name spells it); false if none. */
bool qos_class_from_name(const char *name, enum qw_class *class);

#endif
