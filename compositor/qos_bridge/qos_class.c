#include <string.h>

#include "qos_bridge/qos_class.h"

static const char *const class_names[QW_CLASS_COUNT] = {
	[QW_CLASS_NORMAL] = "normal",
	[QW_CLASS_REALTIME] = "realtime",
	[QW_CLASS_IDLE] = "idle",
	[QW_CLASS_PAUSED] = "paused",
	[QW_CLASS_FIFO] = "fifo",
	[QW_CLASS_NICE] = "nice",
};

const char *qos_class_name(enum qw_class class) {
	return class < QW_CLASS_COUNT ? class_names[class] : "?";
}

bool qos_class_from_name(const char *name, enum qw_class *class) {
	for (int i = 0; i < QW_CLASS_COUNT; i++) {
		if (strcmp(name, class_names[i]) == 0) {
			*class = i;
			return true;
		}
	}
	return false;
}
