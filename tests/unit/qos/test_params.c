#include "check.h"
#include "qos/policy/admission.h"
#include "qos/params.h"
#include "qos/rules.h"

static void test_names(void) {
	char err[128];
	CHECK(qos_name_valid("ui", err, sizeof(err)));
	CHECK(qos_name_valid("video player (mpv)", err, sizeof(err)));
	char max[QOS_NAME_MAX + 2];
	memset(max, 'a', QOS_NAME_MAX);
	max[QOS_NAME_MAX] = '\0';
	CHECK(qos_name_valid(max, err, sizeof(err)));
	max[QOS_NAME_MAX] = 'a';
	max[QOS_NAME_MAX + 1] = '\0';
	CHECK(!qos_name_valid(max, err, sizeof(err)));
	CHECK(strstr(err, "63") != NULL);
	CHECK(!qos_name_valid("", err, sizeof(err)));
	CHECK(!qos_name_valid("a/b", err, sizeof(err)));
	CHECK(strstr(err, "'/'") != NULL);
	CHECK(!qos_name_valid("tab\there", err, sizeof(err)));
	CHECK(!qos_name_valid("del\x7f", err, sizeof(err)));
	/* C1 controls: U+0085 (next line) and U+009B (CSI); U+00A0 and é are fine. */
	CHECK(!qos_name_valid("a\xc2\x85"
						  "b",
			err, sizeof(err)));
	CHECK(!qos_name_valid("x\xc2\x9b"
						  "2J",
			err, sizeof(err)));
	CHECK(qos_name_valid("a\xc2\xa0"
						 "b",
			err, sizeof(err)));
	CHECK(qos_name_valid("caf\xc3\xa9", err, sizeof(err)));
	char shown[64];
	qos_escape_controls("x\xc2\x9b"
						"2J\x1b"
						"caf\xc3\xa9",
			shown, sizeof(shown));
	CHECK(strcmp(shown,
				  "x\\xc2\\x9b2J\\x1b"
				  "caf\xc3\xa9") == 0);
	CHECK(!qos_name_valid("..", err, sizeof(err)));
	/* Hidden groups are passed over by reconcile and the guardian. */
	CHECK(!qos_name_valid(".x", err, sizeof(err)));
	CHECK(strstr(err, "'.'") != NULL);
	CHECK(qos_name_valid("x.", err, sizeof(err)));
	/* UTF-8, as JSON and Wayland strings need: no stray, cut, overlong or
	 * surrogate sequences. */
	CHECK(qos_name_valid("vid\xc3\xa9o \xe6\x98\xa0\xe5\x83\x8f \xf0\x9f\x8e\xac", err,
			sizeof(err)));
	CHECK(!qos_name_valid("\xff", err, sizeof(err)));
	CHECK(strcmp(err, "reserve names must be valid UTF-8") == 0);
	CHECK(!qos_name_valid("cut\xc3", err, sizeof(err)));
	CHECK(!qos_name_valid("\xe6\x98", err, sizeof(err)));
	CHECK(!qos_name_valid("\xc0\xaf", err, sizeof(err)));
	CHECK(!qos_name_valid("\xe0\x80\xaf", err, sizeof(err)));
	CHECK(!qos_name_valid("\xed\xa0\x80", err, sizeof(err)));
	CHECK(!qos_name_valid("\xf4\x90\x80\x80", err, sizeof(err)));
	CHECK(!qos_name_valid("\x80x", err, sizeof(err)));
	CHECK(qos_name_is_auto("auto-123"));
	CHECK(!qos_name_is_auto("autopilot"));
}

static void test_values(void) {
	uint64_t v;
	CHECK(qos_parse_duration_us("20ms", &v) && v == 20000);
	CHECK(qos_parse_duration_us("1s", &v) && v == 1000000);
	CHECK(qos_parse_duration_us("250us", &v) && v == 250);
	CHECK(qos_parse_duration_us("1.5ms", &v) && v == 1500);
	CHECK(qos_parse_duration_us("700", &v) && v == 700);
	CHECK(!qos_parse_duration_us("20 ms", &v));
	CHECK(!qos_parse_duration_us("-1ms", &v));
	CHECK(!qos_parse_duration_us("ms", &v));
	CHECK(!qos_parse_duration_us("5min", &v));
	/* Exact decimals, half up; no exponent, hex or bare point (strtod took them). */
	CHECK(qos_parse_duration_us("1.0005ms", &v) && v == 1001);
	CHECK(qos_parse_duration_us("1.00049ms", &v) && v == 1000);
	CHECK(qos_parse_duration_us("0.25s", &v) && v == 250000);
	CHECK(qos_parse_duration_us("3600s", &v) && v == 3600000000u);
	CHECK(!qos_parse_duration_us("3600.0000005s", &v));
	CHECK(!qos_parse_duration_us("1e3", &v));
	CHECK(!qos_parse_duration_us("0x10ms", &v));
	CHECK(!qos_parse_duration_us("1.ms", &v));
	CHECK(!qos_parse_duration_us("1,5ms", &v));
	CHECK(!qos_parse_duration_us("99999999999999999999999", &v));
	CHECK(qos_parse_percent_ppm("0.00005%", &v) && v == 1);
	CHECK(qos_parse_percent_ppm("6400%", &v) && v == 64000000);
	CHECK(!qos_parse_percent_ppm("6400.00005", &v));
	CHECK(!qos_parse_percent_ppm("1e2%", &v));
	CHECK(qos_parse_percent_ppm("30%", &v) && v == 300000);
	CHECK(qos_parse_percent_ppm("12.5", &v) && v == 125000);
	CHECK(!qos_parse_percent_ppm("30%%", &v));
	CHECK(!qos_parse_percent_ppm("x", &v));
	bool b;
	CHECK(qos_parse_bool("yes", &b) && b);
	CHECK(qos_parse_bool("0", &b) && !b);
	CHECK(!qos_parse_bool("maybe", &b));
	enum qos_policy pol;
	CHECK(qos_policy_from_name("pause", &pol) && pol == QOS_POLICY_PAUSE);
	CHECK(!qos_policy_from_name("deadline", &pol));
}

static void test_normalize(void) {
	char err[128];
	struct qos_params p;
	qos_params_init(&p);
	p.policy = QOS_POLICY_FIFO;
	p.priority = 30;
	CHECK(qos_params_normalize(&p, err, sizeof(err)));
	/* Unlimited fifo gets the thesis' <safe> limit. */
	CHECK_EQ_U(p.period_us, 50000);
	CHECK_EQ_U(p.slice_us, 45000);
	CHECK(p.fallback == QOS_POLICY_OTHER);
	/* So does unlimited rr: no static-priority task may run unbounded. */
	qos_params_init(&p);
	p.policy = QOS_POLICY_RR;
	p.priority = 30;
	CHECK(qos_params_normalize(&p, err, sizeof(err)));
	CHECK_EQ_U(p.period_us, 50000);
	CHECK_EQ_U(p.slice_us, 45000);
	CHECK(p.fallback == QOS_POLICY_OTHER);

	qos_params_init(&p);
	p.policy = QOS_POLICY_QOS;
	CHECK(!qos_params_normalize(&p, err, sizeof(err)));
	CHECK(strstr(err, "period") != NULL);

	qos_params_init(&p);
	p.period_us = 20000;
	CHECK(!qos_params_normalize(&p, err, sizeof(err)));

	qos_params_init(&p);
	p.policy = QOS_POLICY_FIFO;
	p.priority = 0;
	CHECK(!qos_params_normalize(&p, err, sizeof(err)));

	qos_params_init(&p);
	p.policy = QOS_POLICY_QOS;
	p.period_us = 20000;
	p.slice_us = 6000;
	p.fallback = QOS_POLICY_PAUSE;
	CHECK(qos_params_normalize(&p, err, sizeof(err)));
	CHECK_EQ_U(qos_params_util_ppm(&p), 300000);

	/* Without a limit the fallback is meaningless and collapses to the policy. */
	qos_params_init(&p);
	p.policy = QOS_POLICY_IDLE;
	p.fallback = QOS_POLICY_PAUSE;
	CHECK(qos_params_normalize(&p, err, sizeof(err)));
	CHECK(p.fallback == QOS_POLICY_IDLE);

	/* A fallback only takes: never a real-time or qos one past the limit. */
	static const enum qos_policy granting[] = {
		QOS_POLICY_QOS,
		QOS_POLICY_FIFO,
		QOS_POLICY_RR,
	};
	for (size_t i = 0; i < sizeof(granting) / sizeof(granting[0]); i++) {
		qos_params_init(&p);
		p.policy = QOS_POLICY_OTHER;
		p.period_us = 10000;
		p.slice_us = 9000;
		p.fallback = granting[i];
		CHECK(!qos_params_normalize(&p, err, sizeof(err)));
		CHECK(strstr(err, "fallback") != NULL);
		CHECK(strstr(err, qos_policy_name(granting[i])) != NULL);
	}
	qos_params_init(&p);
	p.policy = QOS_POLICY_FIFO;
	p.priority = 10;
	p.period_us = 10000;
	p.slice_us = 5000;
	p.fallback = QOS_POLICY_RR;
	CHECK(!qos_params_normalize(&p, err, sizeof(err)));
	/* The policy itself as its fallback is no limit: fifo would run unbounded. */
	p.fallback = QOS_POLICY_FIFO;
	CHECK(!qos_params_normalize(&p, err, sizeof(err)));
	p.fallback = QOS_POLICY_IDLE;
	CHECK(qos_params_normalize(&p, err, sizeof(err)));

	/* Below real time the order is other > idle > pause, and pause takes no limit. */
	static const struct {
		enum qos_policy policy, fallback;
		bool ok;
	} order[] = {
		{ QOS_POLICY_OTHER, QOS_POLICY_IDLE, true },
		{ QOS_POLICY_OTHER, QOS_POLICY_PAUSE, true },
		{ QOS_POLICY_OTHER, QOS_POLICY_OTHER, false },
		{ QOS_POLICY_IDLE, QOS_POLICY_PAUSE, true },
		{ QOS_POLICY_IDLE, QOS_POLICY_OTHER, false },
		{ QOS_POLICY_IDLE, QOS_POLICY_IDLE, false },
		{ QOS_POLICY_PAUSE, QOS_POLICY_PAUSE, false },
		{ QOS_POLICY_PAUSE, QOS_POLICY_OTHER, false },
		{ QOS_POLICY_QOS, QOS_POLICY_QOS, false },
		{ QOS_POLICY_QOS, QOS_POLICY_IDLE, true },
	};
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		qos_params_init(&p);
		p.policy = order[i].policy;
		p.fallback = order[i].fallback;
		p.period_us = 50000;
		p.slice_us = 5000;
		enum qos_param_key key = QOS_PARAM_NICE;
		char e[160] = "";
		bool ok = qos_params_check(&p, &key, e, sizeof(e));
		if (ok != order[i].ok) {
			fprintf(stderr, "%s -> %s: %s\n", qos_policy_name(order[i].policy),
					qos_policy_name(order[i].fallback), e);
		}
		CHECK(ok == order[i].ok);
		if (!ok) {
			CHECK(key ==
					(order[i].policy == QOS_POLICY_PAUSE ? QOS_PARAM_PERIOD : QOS_PARAM_FALLBACK));
		}
	}
}

static void test_kernel_ceiling(void) {
	struct qos_params p;
	qos_params_init(&p);
	p.policy = QOS_POLICY_OTHER;
	p.fallback = QOS_POLICY_PAUSE;
	p.period_us = 100000;
	p.slice_us = 20000;
	CHECK(qos_params_kernel_ceiling(&p));
	p.policy = QOS_POLICY_IDLE;
	CHECK(qos_params_kernel_ceiling(&p));
	/* CFS bandwidth control's bounds: quota >= 1 ms, period 1 ms..1 s */
	p.slice_us = 999;
	CHECK(!qos_params_kernel_ceiling(&p));
	p.slice_us = 1000;
	CHECK(qos_params_kernel_ceiling(&p));
	p.period_us = 1000001;
	CHECK(!qos_params_kernel_ceiling(&p));
	p.period_us = 1000000;
	CHECK(qos_params_kernel_ceiling(&p));
	/* not a ceiling at all */
	p.fallback = QOS_POLICY_IDLE;
	CHECK(!qos_params_kernel_ceiling(&p));
	p.fallback = QOS_POLICY_PAUSE;
	p.policy = QOS_POLICY_QOS;
	CHECK(!qos_params_kernel_ceiling(&p));
	p.policy = QOS_POLICY_OTHER;
	p.slice_us = 0;
	CHECK(!qos_params_kernel_ceiling(&p));
}

static void test_admission(void) {
	char why[256];
	struct qos_admission a;
	qos_admission_init(&a, 2, QOS_RSVD_DEFAULT_PPM);
	CHECK_EQ_U(qos_admission_capacity_ppm(&a), 1800000);
	CHECK(qos_admission_request(&a, 900000, why, sizeof(why)));
	CHECK(qos_admission_request(&a, 600000, why, sizeof(why)));
	CHECK(qos_admission_request(&a, 300000, why, sizeof(why)));
	CHECK_EQ_U(a.granted_ppm, 1800000);
	/* Full: the next contract is refused, and the earlier ones are untouched. */
	CHECK(!qos_admission_request(&a, 1, why, sizeof(why)));
	CHECK(strstr(why, "0.0% of the 180.0%") != NULL);
	CHECK_EQ_U(a.granted_ppm, 1800000);
	qos_admission_release(&a, 600000);
	CHECK(!qos_admission_request(&a, 700000, why, sizeof(why)));
	CHECK(strstr(why, "needs 70.0%") != NULL && strstr(why, "60.0%") != NULL);
	CHECK(qos_admission_request(&a, 600000, why, sizeof(why)));
	/* Resizing: shrinking always works, growing only into free capacity. */
	CHECK(qos_admission_resize(&a, 600000, 500000, why, sizeof(why)));
	CHECK(!qos_admission_resize(&a, 500000, 700000, why, sizeof(why)));
	CHECK_EQ_U(a.granted_ppm, 1700000);
	CHECK(qos_admission_resize(&a, 500000, 600000, why, sizeof(why)));

	/* rsvd is configurable; a single contract can never exceed the machine. */
	qos_admission_init(&a, 1, 310000);
	CHECK_EQ_U(qos_admission_capacity_ppm(&a), 690000);
	CHECK(!qos_admission_request(&a, 700000, why, sizeof(why)));
	CHECK(qos_admission_request(&a, 690000, why, sizeof(why)));
	qos_admission_init(&a, 4, 0);
	CHECK(!qos_admission_request(&a, 4000001, why, sizeof(why)));
}

/* Adaptive parameters as a library caller (IPC, the protocol) gives them. */
static void test_adapt_normalize(void) {
	char err[160];
	enum qos_param_key key;
	struct qos_params p;
	qos_params_init(&p);
	p.policy = QOS_POLICY_QOS;
	p.period_us = 20000;
	p.adapt.auto_slice = true;
	CHECK(qos_params_check(&p, &key, err, sizeof(err)));
	CHECK_EQ_U(p.slice_us, 10000);
	p.slice_us = 0;
	p.adapt.max_ppm = 250000;
	CHECK(qos_params_check(&p, &key, err, sizeof(err)));
	CHECK_EQ_U(p.slice_us, 5000);

	qos_params_init(&p);
	p.policy = QOS_POLICY_QOS;
	p.period_vblank = true;
	p.adapt.auto_slice = true;
	CHECK(qos_params_check(&p, &key, err, sizeof(err)));
	CHECK_EQ_U(p.period_us, QOS_VBLANK_DEFAULT_US);
	CHECK_EQ_U(p.slice_us, QOS_VBLANK_DEFAULT_US / 2);

	qos_params_init(&p);
	p.policy = QOS_POLICY_IDLE;
	p.period_us = 20000;
	p.adapt.auto_slice = true;
	p.fallback = QOS_POLICY_PAUSE;
	CHECK(!qos_params_check(&p, &key, err, sizeof(err)));
	CHECK(key == QOS_PARAM_AUTO && strstr(err, "cpu=auto") && strstr(err, "idle"));

	qos_params_init(&p);
	p.policy = QOS_POLICY_QOS;
	p.period_us = 20000;
	p.slice_us = 4000;
	p.adapt.continuous = true;
	p.adapt.min_ppm = 300000;
	p.adapt.max_ppm = 200000;
	CHECK(!qos_params_check(&p, &key, err, sizeof(err)));
	CHECK(key == QOS_PARAM_CPU_MIN && strstr(err, "cpu-min exceeds cpu-max"));
	p.adapt.min_ppm = 0;
	p.adapt.max_ppm = 2000000;
	CHECK(!qos_params_check(&p, &key, err, sizeof(err)));
	CHECK(key == QOS_PARAM_CPU_MAX);
	p.adapt.max_ppm = 0;
	/* What a qosrc line could not say is refused: it would not read back. */
	p.policy = QOS_POLICY_QOS;
	p.idle_periods = QOS_IDLE_RELEASE_MAX + 1;
	CHECK(!qos_params_check(&p, &key, err, sizeof(err)));
	CHECK(key == QOS_PARAM_IDLE_RELEASE && strstr(err, "at most 1000000"));
	p.policy = QOS_POLICY_FIFO;
	p.idle_periods = 10;
	CHECK(!qos_params_check(&p, &key, err, sizeof(err)));
	CHECK(key == QOS_PARAM_IDLE_RELEASE && strstr(err, "idle-release"));

	/* Formatted, the keys come back as the parser takes them. */
	qos_params_init(&p);
	p.policy = QOS_POLICY_QOS;
	p.period_vblank = true;
	p.adapt.auto_slice = p.adapt.continuous = true;
	p.adapt.min_ppm = 12500;
	p.adapt.max_ppm = 500000;
	p.idle_periods = 30;
	CHECK(qos_params_normalize(&p, err, sizeof(err)));
	char buf[256];
	qos_params_format(&p, buf, sizeof(buf));
	CHECK_STR(buf,
			"policy=qos period=vblank slice=8333us fallback=other nice=0 inherit=no cpu=auto "
			"adapt=yes cpu-min=1.25% cpu-max=50% idle-release=30");

	/* What adaptation and the output changed is no redefinition; the rest is. */
	struct qos_params now = p;
	now.period_us = 6944;
	now.slice_us = 1234;
	CHECK(qos_params_as_defined(&now, &p) && !qos_params_equal(&now, &p));
	now.nice = 3;
	CHECK(!qos_params_as_defined(&now, &p));
	now = p;
	now.adapt.auto_slice = now.adapt.continuous = now.period_vblank = false;
	struct qos_params def = now;
	now.slice_us = 1234;
	CHECK(!qos_params_as_defined(&now, &def));
}

static void print_diag(void *data, const char *message) {
	(void)data;
	fprintf(stderr, "  %s\n", message);
}

/* p formatted as a qosrc reserve line reads back as p at its 60 Hz stand-in. */
static bool reads_back(const struct qos_params *p) {
	char fmt[256], line[320];
	qos_params_format(p, fmt, sizeof(fmt));
	snprintf(line, sizeof(line), "reserve r %s\n", fmt);
	struct qos_rules *rules = qos_rules_create();
	bool ok = rules && qos_rules_parse_string(rules, "test", line, print_diag, NULL) == 0;
	const struct qos_reserve_def *def = ok ? qos_rules_find_reserve(rules, "r") : NULL;
	struct qos_params want = *p;
	qos_params_vblank_standin(&want);
	ok = def && qos_params_equal(&def->params, &want);
	if (!ok) {
		fprintf(stderr, "does not read back: %s", line);
	}
	qos_rules_destroy(rules);
	return ok;
}

/*
 * A period=vblank reserve's period is the display's: defined at a client's
 * stand-in period (up to 10s), it is written as its share of the 60 Hz frame
 * the line reads back as, and its adaptation bounds must hold at the
 * shortest refresh period it may follow.
 */
static void test_vblank_format(void) {
	static const struct {
		enum qos_policy policy, fallback;
		uint64_t period_us, slice_us;
	} cases[] = {
		{ QOS_POLICY_QOS, QOS_POLICY_OTHER, 10000000, 5000000 }, /* half: 8333us */
		{ QOS_POLICY_FIFO, QOS_POLICY_OTHER, 10000000, 9999999 }, /* below 100% */
		{ QOS_POLICY_OTHER, QOS_POLICY_IDLE, 10000000, 10000000 }, /* one CPU */
		{ QOS_POLICY_OTHER, QOS_POLICY_PAUSE, 10000000, 1 }, /* at least 1us */
		{ QOS_POLICY_QOS, QOS_POLICY_PAUSE, 6944, 3472 },
		{ QOS_POLICY_RR, QOS_POLICY_IDLE, 1000, 999 },
	};
	char err[160];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct qos_params p;
		qos_params_init(&p);
		p.policy = cases[i].policy;
		p.fallback = cases[i].fallback;
		p.priority = 10;
		p.period_us = cases[i].period_us;
		p.slice_us = cases[i].slice_us;
		p.period_vblank = true;
		CHECK(qos_params_normalize(&p, err, sizeof(err)));
		CHECK(reads_back(&p));
		struct qos_params standin = p;
		qos_params_vblank_standin(&standin);
		CHECK(standin.period_us == QOS_VBLANK_DEFAULT_US && standin.slice_us >= 1);
		CHECK(qos_params_normalize(&standin, err, sizeof(err)));
	}
	struct qos_params p;
	qos_params_init(&p);
	p.policy = QOS_POLICY_QOS;
	p.period_us = 10000000;
	p.slice_us = 5000000;
	p.period_vblank = true;
	qos_params_normalize(&p, err, sizeof(err));
	char buf[256];
	qos_params_format(&p, buf, sizeof(buf));
	CHECK_STR(buf, "policy=qos period=vblank slice=8333us fallback=other nice=0 inherit=no");

	/* 0.001% is 100us of a 10s period but nothing of a 1ms refresh period. */
	p.adapt.continuous = true;
	p.adapt.min_ppm = 10;
	enum qos_param_key key;
	CHECK(!qos_params_check(&p, &key, err, sizeof(err)));
	CHECK(key == QOS_PARAM_CPU_MIN && strstr(err, "cpu-min gives less than 1us of a 1ms vblank"));
	p.adapt.min_ppm = 0;
	p.adapt.max_ppm = 499;
	CHECK(!qos_params_check(&p, &key, err, sizeof(err)));
	CHECK(key == QOS_PARAM_CPU_MAX && strstr(err, "cpu-max gives less than 1us of a 1ms vblank"));
	p.adapt.max_ppm = 500;
	CHECK(qos_params_check(&p, &key, err, sizeof(err)));
	CHECK(reads_back(&p));
	/* Without vblank the bound is checked at the reserve's own period. */
	p.period_vblank = false;
	p.adapt.max_ppm = 1;
	CHECK(qos_params_check(&p, &key, err, sizeof(err)));
	CHECK(reads_back(&p));
}

int main(void) {
	test_adapt_normalize();
	test_names();
	test_values();
	test_kernel_ceiling();
	test_normalize();
	test_admission();
	test_vblank_format();
	return check_report("test_params");
}
