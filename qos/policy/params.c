#include "qos/params.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "qos/policy/adapt.h"

static const char *const policy_names[] = {
	[QOS_POLICY_OTHER] = "other",
	[QOS_POLICY_IDLE] = "idle",
	[QOS_POLICY_FIFO] = "fifo",
	[QOS_POLICY_RR] = "rr",
	[QOS_POLICY_QOS] = "qos",
	[QOS_POLICY_PAUSE] = "pause",
};

void qos_params_init(struct qos_params *p) {
	*p = (struct qos_params){
		.policy = QOS_POLICY_OTHER,
		.fallback = QOS_POLICY_OTHER,
		.priority = 1,
	};
}

const char *qos_policy_name(enum qos_policy policy) {
	if ((unsigned)policy >= sizeof(policy_names) / sizeof(policy_names[0])) {
		return "?";
	}
	return policy_names[policy];
}

bool qos_policy_from_name(const char *name, enum qos_policy *out) {
	for (size_t i = 0; i < sizeof(policy_names) / sizeof(policy_names[0]); i++) {
		if (strcmp(name, policy_names[i]) == 0) {
			*out = (enum qos_policy)i;
			return true;
		}
	}
	return false;
}

bool qos_policy_is_rt(enum qos_policy policy) {
	return policy == QOS_POLICY_FIFO || policy == QOS_POLICY_RR || policy == QOS_POLICY_QOS;
}

bool qos_params_adaptive(const struct qos_params *p) {
	return p->adapt.auto_slice || p->adapt.continuous;
}

bool qos_params_has_limit(const struct qos_params *p) {
	return p->period_us > 0 && p->slice_us > 0;
}

bool qos_params_kernel_ceiling(const struct qos_params *p) {
	return qos_params_has_limit(p) && p->fallback == QOS_POLICY_PAUSE &&
			(p->policy == QOS_POLICY_OTHER || p->policy == QOS_POLICY_IDLE) &&
			p->slice_us >= 1000 && p->period_us >= 1000 && p->period_us <= 1000000;
}

uint64_t qos_params_util_ppm(const struct qos_params *p) {
	if (!qos_params_has_limit(p)) {
		return 0;
	}
	return p->slice_us * 1000000u / p->period_us;
}

/* How much a policy gives its members; a fallback must give less. */
static int policy_rank(enum qos_policy policy) {
	switch (policy) {
	case QOS_POLICY_PAUSE:
		return 0;
	case QOS_POLICY_IDLE:
		return 1;
	case QOS_POLICY_OTHER:
		return 2;
	case QOS_POLICY_QOS:
	case QOS_POLICY_FIFO:
	case QOS_POLICY_RR:
		break;
	}
	return 3;
}

static const char *lower_policies(enum qos_policy policy) {
	switch (policy_rank(policy)) {
	case 1:
		return "pause";
	case 2:
		return "idle or pause";
	default:
		return "other, idle or pause";
	}
}

/* A share of one CPU as a slice of period_us, rounded to the microsecond. */
static uint64_t ppm_of_period(uint64_t ppm, uint64_t period_us) {
	return (period_us * ppm + 500000u) / 1000000u;
}

/*
 * What cpu=auto and period=vblank stand for before anything is measured:
 * a 60 Hz frame, and a slice of half the period (at most the upper bound),
 * generous so the first measurement is not cut short by the fallback.
 */
static void fill_provisional(struct qos_params *p) {
	if (p->period_vblank && p->period_us == 0) {
		p->period_us = QOS_VBLANK_DEFAULT_US;
	}
	if (!p->adapt.auto_slice || p->slice_us || !p->period_us) {
		return;
	}
	p->slice_us = qos_adapt_first_guess_us(p);
	uint64_t max = ppm_of_period(p->adapt.max_ppm, p->period_us);
	if (p->adapt.max_ppm && max < p->slice_us) {
		p->slice_us = max;
	}
	if (p->slice_us == 0) {
		p->slice_us = 1;
	}
}

static const char *adapt_key(const struct qos_params *p) {
	return p->adapt.auto_slice ? "cpu=auto" : "adapt=yes";
}

/* The adaptation keys against the rest; *key names the one refused. */
static bool check_adapt(const struct qos_params *p, enum qos_param_key *key, char *err,
		size_t err_len) {
	const struct qos_adapt_params *a = &p->adapt;
	bool adaptive = qos_params_adaptive(p);
	*key = a->auto_slice ? QOS_PARAM_AUTO : QOS_PARAM_ADAPT;
	if (adaptive && (p->policy == QOS_POLICY_PAUSE || p->policy == QOS_POLICY_IDLE)) {
		snprintf(err, err_len, "%s does not apply to policy %s: it has no share worth sizing",
				adapt_key(p), qos_policy_name(p->policy));
		return false;
	}
	if (adaptive && !qos_params_has_limit(p)) {
		snprintf(err, err_len, "%s needs a period", adapt_key(p));
		return false;
	}
	*key = a->min_ppm ? QOS_PARAM_CPU_MIN : QOS_PARAM_CPU_MAX;
	if ((a->min_ppm || a->max_ppm) && !adaptive) {
		snprintf(err, err_len, "%s bounds adaptation: it needs cpu=auto or adapt=yes",
				a->min_ppm ? "cpu-min" : "cpu-max");
		return false;
	}
	if (a->min_ppm && a->max_ppm && a->min_ppm > a->max_ppm) {
		snprintf(err, err_len, "cpu-min exceeds cpu-max");
		return false;
	}
	/* A vblank period may become any refresh period: the bounds must hold
	 * at the shortest, which they then hold at every other. */
	uint64_t shortest = p->period_vblank ? QOS_VBLANK_SHORTEST_US : p->period_us;
	const char *of = p->period_vblank ? "of a 1ms vblank period" : "of the period";
	if (a->min_ppm && ppm_of_period(a->min_ppm, shortest) == 0) {
		snprintf(err, err_len, "cpu-min gives less than 1us %s", of);
		return false;
	}
	*key = QOS_PARAM_CPU_MAX;
	bool rt_static = p->policy == QOS_POLICY_FIFO || p->policy == QOS_POLICY_RR;
	if (a->max_ppm && (a->max_ppm > (rt_static ? 999999u : 1000000u))) {
		snprintf(err, err_len, "cpu-max must stay %s the period (one CPU)",
				rt_static ? "below" : "within");
		return false;
	}
	if (a->max_ppm && ppm_of_period(a->max_ppm, shortest) == 0) {
		snprintf(err, err_len, "cpu-max gives less than 1us %s", of);
		return false;
	}
	*key = QOS_PARAM_IDLE_RELEASE;
	if (p->idle_periods > QOS_IDLE_RELEASE_MAX) {
		snprintf(err, err_len, "idle-release is at most %u periods", QOS_IDLE_RELEASE_MAX);
		return false;
	}
	if (p->idle_periods && p->policy != QOS_POLICY_QOS) {
		snprintf(err, err_len, "idle-release gives back admitted capacity: policy qos only");
		return false;
	}
	/* A released reserve's members run at the fallback, and must be seen waking. */
	if (p->idle_periods && p->fallback == QOS_POLICY_PAUSE) {
		snprintf(err, err_len,
				"idle-release needs a fallback other than pause: released members run at it, "
				"and frozen ones could never be seen waking");
		return false;
	}
	*key = QOS_PARAM_PERIOD;
	if (p->period_vblank && !qos_params_has_limit(p)) {
		snprintf(err, err_len, "period=vblank needs a slice");
		return false;
	}
	return true;
}

bool qos_params_check(struct qos_params *p, enum qos_param_key *key, char *err, size_t err_len) {
	enum qos_param_key unused;
	if (!key) {
		key = &unused;
	}
	*key = QOS_PARAM_POLICY;
	if ((unsigned)p->policy > QOS_POLICY_PAUSE || (unsigned)p->fallback > QOS_POLICY_PAUSE) {
		snprintf(err, err_len, "unknown policy");
		return false;
	}
	fill_provisional(p);
	if ((p->period_us == 0) != (p->slice_us == 0)) {
		*key = p->period_us ? QOS_PARAM_PERIOD : QOS_PARAM_SLICE;
		snprintf(err, err_len, "period and slice must be given together");
		return false;
	}
	if (p->slice_us > p->period_us * 64) {
		*key = QOS_PARAM_SLICE;
		snprintf(err, err_len, "slice exceeds 64 CPUs' worth of the period");
		return false;
	}
	if (p->period_us != 0 && (p->period_us < 1000 || p->period_us > 10000000)) {
		*key = QOS_PARAM_PERIOD;
		snprintf(err, err_len, "period must be between 1ms and 10s");
		return false;
	}
	if (p->nice < -20 || p->nice > 19) {
		*key = QOS_PARAM_NICE;
		snprintf(err, err_len, "nice must be in -20..19");
		return false;
	}
	if (p->policy == QOS_POLICY_QOS && !qos_params_has_limit(p)) {
		snprintf(err, err_len, "policy qos needs a period and a slice");
		return false;
	}
	if (p->policy == QOS_POLICY_FIFO || p->policy == QOS_POLICY_RR) {
		if (p->priority < 1 || p->priority > 99) {
			*key = QOS_PARAM_PRIORITY;
			snprintf(err, err_len, "priority must be in 1..99");
			return false;
		}
		/* The thesis' <safe>: no static-priority task may run unbounded. */
		if (!qos_params_has_limit(p)) {
			p->period_us = QOS_SAFE_PERIOD_US;
			p->slice_us = QOS_SAFE_SLICE_US;
			p->fallback = QOS_POLICY_OTHER;
		}
		if (p->slice_us >= p->period_us) {
			*key = QOS_PARAM_SLICE;
			snprintf(err, err_len, "a fifo/rr limit must stay below 100%%");
			return false;
		}
	}
	/*
	 * A fallback is where members go once past their limit, so it must take
	 * from them (thesis 3.5: the class "drops"; Table 3.2).  One that gives
	 * as much makes the limit a no-op, which for fifo/rr would be a
	 * static-priority reserve without the bound every one must carry; one
	 * that gives more hands out, past the limit and without admission,
	 * what the policy itself is admitted or bounded for.
	 */
	if (qos_params_has_limit(p) && policy_rank(p->fallback) >= policy_rank(p->policy)) {
		*key = p->policy == QOS_POLICY_PAUSE ? QOS_PARAM_PERIOD : QOS_PARAM_FALLBACK;
		if (p->policy == QOS_POLICY_PAUSE) {
			snprintf(err, err_len, "a pause reserve takes no limit: its members never run");
		} else {
			snprintf(err, err_len,
					"fallback %s does not take from policy %s: past the "
					"limit members drop to %s",
					qos_policy_name(p->fallback), qos_policy_name(p->policy),
					lower_policies(p->policy));
		}
		return false;
	}
	if (!check_adapt(p, key, err, err_len)) {
		return false;
	}
	if (!qos_params_has_limit(p)) {
		p->fallback = p->policy;
	}
	return true;
}

bool qos_params_normalize(struct qos_params *p, char *err, size_t err_len) {
	return qos_params_check(p, NULL, err, err_len);
}

bool qos_name_is_auto(const char *name) {
	return strncmp(name, QOS_AUTO_PREFIX, strlen(QOS_AUTO_PREFIX)) == 0;
}

/*
 * Length of the UTF-8 sequence at s, or 0 when it is not one: no overlong
 * forms, no surrogates, nothing past U+10FFFF.
 */
static size_t utf8_sequence(const unsigned char *s) {
	if (s[0] < 0x80) {
		return 1;
	}
	size_t n = s[0] >= 0xc2 && s[0] <= 0xdf ? 2
			: (s[0] & 0xf0) == 0xe0         ? 3
			: s[0] >= 0xf0 && s[0] <= 0xf4  ? 4
											: 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80) {
			return 0;
		}
	}
	if ((n == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0))) ||
			(n == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90)))) {
		return 0;
	}
	return n;
}

bool qos_utf8_valid(const char *s) {
	for (size_t len; *s; s += len) {
		if (!(len = utf8_sequence((const unsigned char *)s))) {
			return false;
		}
	}
	return true;
}

/* U+0080..U+009F in UTF-8: C1 controls, such as the CSI that starts a terminal escape. */
static bool is_c1(const char *s) {
	return (unsigned char)s[0] == 0xc2 && (unsigned char)s[1] >= 0x80 &&
			(unsigned char)s[1] <= 0x9f;
}

void qos_escape_controls(const char *in, char *out, size_t len) {
	size_t n = 0;
	for (; *in && n + 1 < len; in++) {
		unsigned char c = (unsigned char)*in;
		if (c >= 0x20 && c != 0x7f && !is_c1(in)) {
			out[n++] = (char)c;
		} else if (c == 0xc2 && n + 9 < len) {
			snprintf(out + n, len - n, "\\x%02x\\x%02x", c, (unsigned char)in[1]);
			n += 8;
			in++;
		} else if (c != 0xc2 && n + 5 < len) {
			snprintf(out + n, len - n, "\\x%02x", c);
			n += 4;
		} else {
			break;
		}
	}
	out[n] = '\0';
}

bool qos_name_valid(const char *name, char *err, size_t err_len) {
	size_t n = strlen(name);
	if (n == 0 || n > QOS_NAME_MAX) {
		snprintf(err, err_len, "reserve names are 1 to %d bytes", QOS_NAME_MAX);
		return false;
	}
	/*
	 * The name is the group's directory: "." and ".." are not one, and the
	 * scans of the manager's root (reconcile, the guardian) pass over
	 * hidden entries.
	 */
	if (name[0] == '.') {
		snprintf(err, err_len, "reserve names cannot start with '.'");
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];
		if (c == '/') {
			snprintf(err, err_len, "reserve names cannot contain '/'");
			return false;
		}
		if (c < 0x20 || c == 0x7f || is_c1(name + i)) {
			snprintf(err, err_len, "reserve names cannot contain control characters");
			return false;
		}
	}
	/* Names travel in JSON and Wayland strings, which are UTF-8. */
	if (!qos_utf8_valid(name)) {
		snprintf(err, err_len, "reserve names must be valid UTF-8");
		return false;
	}
	return true;
}

const char *qos_parse_decimal(const char *p, unsigned shift, uint64_t limit, uint64_t *out) {
	uint64_t v = 0;
	bool fraction = false;
	int dropped = -1; /* the first fraction digit past the precision kept */
	if (*p < '0' || *p > '9') {
		return NULL;
	}
	for (;; p++) {
		if (*p == '.' && !fraction) {
			if (p[1] < '0' || p[1] > '9') {
				return NULL;
			}
			fraction = true;
			continue;
		}
		if (*p < '0' || *p > '9') {
			break;
		}
		if (fraction && shift == 0) {
			if (dropped < 0) {
				dropped = *p - '0';
			}
			continue;
		}
		if (v > (UINT64_MAX - 9) / 10) {
			return NULL; /* past any limit, and v * 10 would wrap */
		}
		v = v * 10 + (uint64_t)(*p - '0');
		if (v > limit) {
			return NULL;
		}
		if (fraction) {
			shift--;
		}
	}
	for (; shift > 0; shift--) {
		if (v > UINT64_MAX / 10) {
			return NULL;
		}
		v *= 10;
		if (v > limit) {
			return NULL;
		}
	}
	if (dropped >= 5 && ++v > limit) {
		return NULL;
	}
	*out = v;
	return p;
}

#define DURATION_MAX_US 3600000000u /* an hour */
#define PERCENT_MAX_PPM 64000000u /* 64 CPUs */

bool qos_parse_duration_us(const char *s, uint64_t *out) {
	/* The unit comes after the number, so try each scale in turn. */
	static const struct {
		const char *unit;
		unsigned shift;
	} units[] = { { "", 0 }, { "us", 0 }, { "ms", 3 }, { "s", 6 } };
	uint64_t v;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		const char *end = qos_parse_decimal(s, units[i].shift, DURATION_MAX_US, &v);
		if (end && strcmp(end, units[i].unit) == 0) {
			*out = v;
			return true;
		}
	}
	return false;
}

bool qos_parse_percent_ppm(const char *s, uint64_t *out) {
	uint64_t v;
	const char *end = qos_parse_decimal(s, 4, PERCENT_MAX_PPM, &v);
	if (!end || (*end == '%' ? end[1] != '\0' : *end != '\0')) {
		return false;
	}
	*out = v;
	return true;
}

bool qos_parse_bool(const char *s, bool *out) {
	if (!strcmp(s, "yes") || !strcmp(s, "1") || !strcmp(s, "true")) {
		*out = true;
		return true;
	}
	if (!strcmp(s, "no") || !strcmp(s, "0") || !strcmp(s, "false")) {
		*out = false;
		return true;
	}
	return false;
}

static void format_duration(char *buf, size_t len, uint64_t us) {
	if (us % 1000000 == 0) {
		snprintf(buf, len, "%" PRIu64 "s", us / 1000000);
	} else if (us % 1000 == 0) {
		snprintf(buf, len, "%" PRIu64 "ms", us / 1000);
	} else {
		snprintf(buf, len, "%" PRIu64 "us", us);
	}
}

/* "25%", "12.5%", "0.0001%": what qos_parse_percent_ppm reads back exactly. */
static void format_percent(char *buf, size_t len, uint64_t ppm) {
	int n = snprintf(buf, len, "%" PRIu64 ".%04" PRIu64, ppm / 10000, ppm % 10000);
	while (n > 0 && (size_t)n < len && buf[n - 1] == '0') {
		buf[--n] = '\0';
	}
	if (n > 0 && (size_t)n < len && buf[n - 1] == '.') {
		buf[--n] = '\0';
	}
	snprintf(buf + n, len - (size_t)n, "%%");
}

/* The adaptation and idle-release keys that are set, each with a leading space. */
static void format_adapt(const struct qos_params *p, char *buf, size_t len) {
	char lo[48] = "", hi[48] = "", idle[32] = "";
	if (p->adapt.min_ppm) {
		char v[24];
		format_percent(v, sizeof(v), p->adapt.min_ppm);
		snprintf(lo, sizeof(lo), " cpu-min=%s", v);
	}
	if (p->adapt.max_ppm) {
		char v[24];
		format_percent(v, sizeof(v), p->adapt.max_ppm);
		snprintf(hi, sizeof(hi), " cpu-max=%s", v);
	}
	if (p->idle_periods) {
		snprintf(idle, sizeof(idle), " idle-release=%" PRIu32, p->idle_periods);
	}
	snprintf(buf, len, "%s%s%s%s%s", p->adapt.auto_slice ? " cpu=auto" : "",
			p->adapt.continuous ? " adapt=yes" : "", lo, hi, idle);
}

void qos_params_vblank_standin(struct qos_params *p) {
	if (!p->period_vblank || !qos_params_has_limit(p) || p->period_us == QOS_VBLANK_DEFAULT_US) {
		return;
	}
	/* As qos_manager_vblank scales it: the same share, rounded down, at least 1us. */
	uint64_t slice = p->slice_us * QOS_VBLANK_DEFAULT_US / p->period_us;
	p->slice_us = slice ? slice : 1;
	p->period_us = QOS_VBLANK_DEFAULT_US;
}

void qos_params_format(const struct qos_params *p_in, char *buf, size_t len) {
	/* Only keys the parser takes back: no "period=0s" for a reserve without a
	 * limit, no priority outside fifo/rr; "period=vblank" reads back as a
	 * 60 Hz frame, so the slice is written as its share of one. */
	struct qos_params standin = *p_in;
	qos_params_vblank_standin(&standin);
	const struct qos_params *p = &standin;
	char limit[96] = "", prio[24] = "", adapt[160];
	if (qos_params_has_limit(p)) {
		char per[32], sl[32];
		format_duration(per, sizeof(per), p->period_us);
		format_duration(sl, sizeof(sl), p->slice_us);
		snprintf(limit, sizeof(limit), " period=%s slice=%s fallback=%s",
				p->period_vblank ? "vblank" : per, sl, qos_policy_name(p->fallback));
	}
	if (p->policy == QOS_POLICY_FIFO || p->policy == QOS_POLICY_RR) {
		snprintf(prio, sizeof(prio), " priority=%d", p->priority);
	}
	format_adapt(p, adapt, sizeof(adapt));
	snprintf(buf, len, "policy=%s%s nice=%d%s inherit=%s%s", qos_policy_name(p->policy), limit,
			p->nice, prio, p->inherit ? "yes" : "no", adapt);
}

static bool same_adapt(const struct qos_adapt_params *a, const struct qos_adapt_params *b) {
	return a->auto_slice == b->auto_slice && a->continuous == b->continuous &&
			a->min_ppm == b->min_ppm && a->max_ppm == b->max_ppm;
}

bool qos_params_equal(const struct qos_params *a, const struct qos_params *b) {
	bool rt_static = a->policy == QOS_POLICY_FIFO || a->policy == QOS_POLICY_RR;
	return a->policy == b->policy && a->fallback == b->fallback && a->period_us == b->period_us &&
			a->slice_us == b->slice_us && a->nice == b->nice &&
			(!rt_static || a->priority == b->priority) && a->inherit == b->inherit &&
			same_adapt(&a->adapt, &b->adapt) && a->period_vblank == b->period_vblank &&
			a->idle_periods == b->idle_periods;
}

bool qos_params_as_defined(const struct qos_params *now, const struct qos_params *def) {
	struct qos_params p = *now;
	if (qos_params_adaptive(&p) || p.period_vblank) {
		p.slice_us = def->slice_us;
	}
	if (p.period_vblank) {
		p.period_us = def->period_us;
	}
	return qos_params_equal(&p, def);
}

bool qos_params_may_freeze(const struct qos_params *p) {
	return p->policy == QOS_POLICY_PAUSE ||
			(qos_params_has_limit(p) && p->fallback == QOS_POLICY_PAUSE);
}
