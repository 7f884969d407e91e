/*
 * qos-player's reserve: asks qosway-reserve-v1 for one (-r, -q) and reports
 * what the compositor answered on stderr.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "qos-player.h"

/* Policy names of qosway-reserve-v1, indexed by the wire value. */
static const char *const policy_names[] = {
	"other",
	"idle",
	"pause",
	"qos",
	"fifo",
	"rr",
};

static const char *reserve_label(const struct player *p) {
	return p->opt.reserve_name != NULL ? p->opt.reserve_name : "(automatic)";
}

bool player_policy_from_name(const char *name, uint32_t *policy) {
	for (size_t i = 0; i < sizeof(policy_names) / sizeof(policy_names[0]); i++) {
		if (strcmp(name, policy_names[i]) == 0) {
			*policy = (uint32_t)i;
			return true;
		}
	}
	return false;
}

/* Whether the options need version 2 of the protocol. */
static bool wants_v2(const struct options *opt) {
	return opt->adapt || opt->cpu_auto || opt->period_vblank || opt->report_work;
}

void player_bind_reserve_manager(struct player *p, struct wl_registry *registry, uint32_t name,
		uint32_t version) {
	if ((p->opt.reserve_name != NULL || p->opt.reserve_qos) && p->reserve_manager == NULL) {
		/* Version 1 where it is enough: the player stays a v1 client then. */
		p->reserve_version = wants_v2(&p->opt) && version >= 2 ? 2 : 1;
		p->reserve_manager = wl_registry_bind(registry, name, &qosway_reserve_manager_v1_interface,
				p->reserve_version);
	}
}

void player_reserve_finish(struct player *p) {
	if (p->reserve != NULL) {
		qosway_reserve_v1_destroy(p->reserve);
		p->reserve = NULL;
	}
	if (p->reserve_manager != NULL) {
		qosway_reserve_manager_v1_destroy(p->reserve_manager);
		p->reserve_manager = NULL;
	}
}

static const char *policy_name(uint32_t policy) {
	return policy < sizeof(policy_names) / sizeof(policy_names[0]) ? policy_names[policy]
																   : "unknown";
}

static void reserve_params(void *data, struct qosway_reserve_v1 *reserve, uint32_t policy,
		uint32_t fallback, uint32_t period_us, uint32_t slice_us, int32_t nice, uint32_t priority) {
	struct player *p = data;
	p->reserve_period_us = period_us;
	if (p->opt.period_vblank && period_us > 0) {
		/* A vblank period is the display's frame interval. */
		p->refresh_s = period_us / 1e6;
	}
	fprintf(stderr,
			"qos-player: reserve %s: params policy=%s fallback=%s "
			"period=%" PRIu32 "us slice=%" PRIu32 "us nice=%" PRId32 " priority=%" PRIu32 "\n",
			reserve_label(p), policy_name(policy), policy_name(fallback), period_us, slice_us, nice,
			priority);
}

static void reserve_granted(void *data, struct qosway_reserve_v1 *reserve) {
	struct player *p = data;
	p->reserve_state = RESERVE_GRANTED;
	fprintf(stderr, "qos-player: reserve %s: granted\n", reserve_label(p));
}

static void reserve_refused(void *data, struct qosway_reserve_v1 *reserve, uint32_t reason,
		const char *message) {
	struct player *p = data;
	static const char *const reasons[] = { "capacity", "forbidden", "rate_limited" };
	const char *why = reason < sizeof(reasons) / sizeof(reasons[0]) ? reasons[reason] : "unknown";
	p->reserve_state = RESERVE_REFUSED;
	snprintf(p->reserve_refusal, sizeof(p->reserve_refusal), "%s", why);
	fprintf(stderr, "qos-player: reserve %s: refused (%s): %s\n", reserve_label(p), why,
			message != NULL ? message : "");
}

static void reserve_overrun(void *data, struct qosway_reserve_v1 *reserve, uint32_t used_us,
		uint32_t billed_us) {
	(void)data;
	(void)reserve;
	(void)used_us;
	(void)billed_us;
}

static void reserve_stats(void *data, struct qosway_reserve_v1 *reserve, uint32_t period_us,
		uint32_t used_us, uint32_t billed_us) {
	(void)data;
	(void)reserve;
	(void)period_us;
	(void)used_us;
	(void)billed_us;
}

static const struct qosway_reserve_v1_listener reserve_listener = {
	.params = reserve_params,
	.granted = reserve_granted,
	.refused = reserve_refused,
	.overrun = reserve_overrun,
	.stats = reserve_stats,
};

/* Adaptation and the period source go before set_params, which takes them. */
static void request_v2(struct player *p) {
	if (!wants_v2(&p->opt)) {
		return;
	}
	if (p->reserve_version < 2) {
		fprintf(stderr,
				"qos-player: reserve %s: the compositor's reserve manager is version 1: "
				"--adapt, --cpu-auto, --period and --report-work do nothing\n",
				reserve_label(p));
		return;
	}
	uint32_t flags = (p->opt.adapt ? QOSWAY_RESERVE_V1_ADAPT_CONTINUOUS : 0) |
			(p->opt.cpu_auto ? QOSWAY_RESERVE_V1_ADAPT_AUTO_SLICE : 0);
	if (flags) {
		qosway_reserve_v1_set_adaptive(p->reserve, flags, p->opt.adapt_min_ppm,
				p->opt.adapt_max_ppm);
	}
	if (p->opt.period_vblank) {
		qosway_reserve_v1_set_period_source(p->reserve, QOSWAY_RESERVE_V1_PERIOD_SOURCE_VBLANK);
	}
}

void player_report_work(struct player *p, double actual_s) {
	if (!p->opt.report_work || p->reserve == NULL || p->reserve_version < 2) {
		return;
	}
	/* The budget is a frame: the display's interval, else the reserve's period. */
	double target_s = p->refresh_s > 0.0 ? p->refresh_s
			: p->reserve_period_us > 0   ? p->reserve_period_us / 1e6
										 : 1.0 / 60.0;
	uint32_t target_us = (uint32_t)(target_s * 1e6 + 0.5);
	uint32_t actual_us = actual_s > 4000.0 ? UINT32_MAX : (uint32_t)(actual_s * 1e6 + 0.5);
	qosway_reserve_v1_work_duration(p->reserve, target_us ? target_us : 1, actual_us);
	p->stats.work_reports++;
}

/*
 * The whole process joins: the named reserve (-r) or the automatic one, with
 * qos parameters first if -q gave them.
 */
void player_request_reserve(struct player *p) {
	if (p->opt.reserve_name == NULL && !p->opt.reserve_qos) {
		return;
	}
	if (p->reserve_manager != NULL) {
		p->reserve = qosway_reserve_manager_v1_get_reserve(p->reserve_manager,
				p->opt.reserve_name != NULL ? p->opt.reserve_name : "");
		qosway_reserve_v1_add_listener(p->reserve, &reserve_listener, p);
		request_v2(p);
		if (p->opt.reserve_qos) {
			qosway_reserve_v1_set_params(p->reserve, QOSWAY_RESERVE_V1_POLICY_QOS,
					p->opt.qos_fallback, p->opt.qos_period_us, p->opt.qos_slice_us, 0, 0);
		}
		qosway_reserve_v1_join(p->reserve, 0);
		p->reserve_state = RESERVE_PENDING;
		return;
	}
	p->reserve_state = RESERVE_UNSUPPORTED;
	fprintf(stderr,
			"qos-player: reserve %s: the compositor has no "
			"qosway_reserve_manager_v1, playing without a reserve\n",
			reserve_label(p));
}
