/*
 * The division of a qos reserve's slice among its threads by use
 * (qos/policy/split_rules.h).  Pure: figures in, figures out.
 */
#include "qos/policy/split_rules.h"

void qos_split_rules_sample(struct qos_split_thread *t, uint64_t used_ns, bool asleep) {
	t->last_used_ns = used_ns;
	bool ran = used_ns >= QOS_SPLIT_RAN_NS;
	if (t->parked) {
		/* It ran at the fallback class: it woke, and asks for what it ran. */
		if (!ran) {
			return;
		}
		t->parked = false;
		t->idle = 0;
		t->throttled = false;
		t->n_used = 0;
		t->head = 0;
	} else {
		t->throttled = t->runtime_ns && used_ns * 100 >= t->runtime_ns * QOS_SPLIT_FULL_PCT;
		t->idle = ran ? 0 : t->idle + (t->idle < UINT32_MAX);
	}
	t->used[t->head] = used_ns;
	t->head = (t->head + 1) % QOS_SPLIT_HISTORY;
	if (t->n_used < QOS_SPLIT_HISTORY) {
		t->n_used++;
	}
	if (t->idle >= QOS_SPLIT_PARK_PERIODS && asleep && !t->throttled) {
		t->parked = true;
	}
}

uint64_t qos_split_rules_demand(const struct qos_split_thread *t, uint64_t period_ns) {
	if (t->parked) {
		return 0;
	}
	uint64_t sum = 0;
	for (unsigned i = 0; i < t->n_used; i++) {
		sum += t->used[i];
	}
	uint64_t mean = t->n_used ? sum / t->n_used : 0;
	uint64_t d = mean * (100 + QOS_SPLIT_MARGIN_PCT) / 100 +
			period_ns * QOS_SPLIT_HEADROOM_PPM / 1000000u;
	if (t->throttled) {
		uint64_t more = t->runtime_ns * (100 + QOS_SPLIT_THROTTLED_PCT) / 100;
		if (more > d) {
			d = more;
		}
	}
	if (d > period_ns) {
		d = period_ns; /* one thread runs on one CPU at a time */
	}
	return d < QOS_SPLIT_MIN_NS ? QOS_SPLIT_MIN_NS : d;
}

/* The level at which sum(min(d, level)) reaches slice (d sums past it). */
static uint64_t water_level(const struct qos_split_thread *t, size_t n, uint64_t slice) {
	uint64_t lo = 0, hi = slice;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo + 1) / 2, sum = 0;
		for (size_t i = 0; i < n; i++) {
			sum += t[i].want_ns < mid ? t[i].want_ns : mid;
		}
		if (sum <= slice) {
			lo = mid;
		} else {
			hi = mid - 1;
		}
	}
	return lo;
}

static bool within(uint64_t a, uint64_t b) {
	uint64_t diff = a > b ? a - b : b - a;
	return diff * 100 <= b * QOS_SPLIT_CHANGE_PCT;
}

bool qos_split_rules_plan(struct qos_split_thread *t, size_t n, uint64_t slice_ns,
		uint64_t period_ns) {
	uint64_t total = 0;
	size_t active = 0;
	for (size_t i = 0; i < n; i++) {
		t[i].want_ns = qos_split_rules_demand(&t[i], period_ns);
		total += t[i].want_ns;
		active += !t[i].parked;
	}
	if (!active) {
		return false;
	}
	/* The kernel's floor can itself be more than a tiny slice holds. */
	if (active * QOS_SPLIT_MIN_NS > slice_ns) {
		for (size_t i = 0; i < n; i++) {
			t[i].want_ns = t[i].parked ? 0 : slice_ns / active;
		}
		return true;
	}
	bool starved = total > slice_ns;
	if (starved) {
		uint64_t level = water_level(t, n, slice_ns);
		for (size_t i = 0; i < n; i++) {
			if (t[i].want_ns > level) {
				t[i].want_ns = level;
			}
			if (!t[i].parked && t[i].want_ns < QOS_SPLIT_MIN_NS) {
				t[i].want_ns = QOS_SPLIT_MIN_NS;
			}
		}
	} else if (total) {
		/* What is left goes where the use is, as room for its bursts. */
		uint64_t spare = slice_ns - total;
		for (size_t i = 0; i < n; i++) {
			t[i].want_ns += (uint64_t)((double)spare * (double)t[i].want_ns / (double)total);
			/* A slice of several CPUs still gives no thread more than
			 * one: the kernel takes no runtime past the period. */
			if (t[i].want_ns > period_ns) {
				t[i].want_ns = period_ns;
			}
		}
	}
	/* Hysteresis: keep a runtime the plan moves only a little, unless the
	 * kept ones take the sum past the slice (the exact plan fits it). */
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t w = t[i].want_ns;
		if (t[i].runtime_ns && w && within(w, t[i].runtime_ns)) {
			w = t[i].runtime_ns;
		}
		sum += w;
	}
	if (sum <= slice_ns) {
		for (size_t i = 0; i < n; i++) {
			if (t[i].runtime_ns && t[i].want_ns && within(t[i].want_ns, t[i].runtime_ns)) {
				t[i].want_ns = t[i].runtime_ns;
			}
		}
	}
	return starved;
}

uint64_t qos_split_rules_planned(const struct qos_split_thread *t, size_t n) {
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++) {
		sum += t[i].want_ns;
	}
	return sum;
}
