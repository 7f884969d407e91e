/*
 * The reserve parameters: value parsers (durations, percentages), the
 * key=value grammar a reserve line and IPC "reserve" share, normalisation
 * and formatting.  Rules checked: accepted parameters are canonical
 * (normalising them again changes nothing) and qos_params_format reads back
 * as the same reserve (a period=vblank one at its 60 Hz stand-in,
 * qos_params_vblank_standin).  The first input byte picks the mode: text
 * parsed as the keys of a reserve line, or raw bytes taken as parameters.
 */
#include "fuzz.h"
#include "qos/params.h"
#include "qos/rules.h"

static void ignore(void *data, const char *message) {
	(void)data;
	(void)message;
}

/* The parameters a "reserve x KEYS" line defines; false when it is refused. */
static bool parse_keys(const char *keys, struct qos_params *out) {
	size_t len = strlen(keys) + 16;
	char *line = malloc(len);
	struct qos_rules *rules = qos_rules_create();
	bool ok = false;
	if (line && rules) {
		snprintf(line, len, "reserve x %s\n", keys);
		ok = qos_rules_parse_string(rules, "fuzz", line, ignore, NULL) == 0 &&
				rules->n_reserves == 1;
		if (ok) {
			*out = rules->reserves[0].params;
		}
	}
	qos_rules_destroy(rules);
	free(line);
	return ok;
}

static void check_canonical(const struct qos_params *p, const char *what) {
	char err[256], fmt[512];
	struct qos_params again = *p;
	qos_params_format(p, fmt, sizeof(fmt));
	FUZZ_RULE(qos_params_normalize(&again, err, sizeof(err)), "%s: %s refused again: %s", what, fmt,
			err);
	FUZZ_RULE(qos_params_equal(&again, p), "%s: %s changed when normalised again", what, fmt);
}

static void check_round_trip(const struct qos_params *p) {
	char fmt[512], back_fmt[512];
	qos_params_format(p, fmt, sizeof(fmt));
	struct qos_params back, want = *p;
	qos_params_vblank_standin(&want);
	FUZZ_RULE(parse_keys(fmt, &back), "formatted parameters refused: %s", fmt);
	qos_params_format(&back, back_fmt, sizeof(back_fmt));
	FUZZ_RULE(qos_params_equal(&back, &want), "'%s' reads back as '%s'", fmt, back_fmt);
	check_canonical(&want, "stand-in");
}

static void check_values(const char *s) {
	uint64_t v;
	if (qos_parse_duration_us(s, &v)) {
		FUZZ_RULE(v <= 3600000000u, "duration '%s' is %llu us", s, (unsigned long long)v);
	}
	if (qos_parse_percent_ppm(s, &v)) {
		FUZZ_RULE(v <= 64000000u, "percentage '%s' is %llu ppm", s, (unsigned long long)v);
	}
	const char *end = qos_parse_decimal(s, 3, 1000000, &v);
	FUZZ_RULE(!end || (end > s && end <= s + strlen(s) && v <= 1000000), "decimal '%s'", s);
	char shown[128];
	qos_escape_controls(s, shown, sizeof(shown));
	for (const char *c = shown; *c; c++) {
		FUZZ_RULE((unsigned char)*c >= 0x20 && *c != 0x7f, "control byte left in '%s'", shown);
	}
	char err[128];
	if (qos_name_valid(s, err, sizeof(err))) {
		FUZZ_RULE(qos_utf8_valid(s) && strlen(s) <= QOS_NAME_MAX && !strchr(s, '/'),
				"bad name taken: '%s'", shown);
	}
}

/* Raw bytes as parameters, within the ranges each field's type allows. */
static void from_bytes(const uint8_t *data, size_t size) {
	uint8_t raw[48] = { 0 };
	memcpy(raw, data, size < sizeof(raw) ? size : sizeof(raw));
	uint32_t w[12];
	memcpy(w, raw, sizeof(w));
	struct qos_params p;
	qos_params_init(&p);
	p.policy = (enum qos_policy)(w[0] % 6);
	p.fallback = (enum qos_policy)(w[1] % 6);
	p.period_us = w[2] % 12000001;
	p.slice_us = w[3] & 0x80000000u ? w[3] % 700000001 : w[3] % 12000001;
	p.nice = (int)(w[4] % 41) - 20;
	p.priority = (int)(w[5] % 101);
	p.inherit = w[6] & 1;
	p.adapt.auto_slice = w[6] & 2;
	p.adapt.continuous = w[6] & 4;
	p.period_vblank = w[6] & 8;
	p.adapt.min_ppm = w[6] & 16 ? w[7] % 1100000 : 0;
	p.adapt.max_ppm = w[6] & 32 ? w[8] % 1100000 : 0;
	p.idle_periods = w[6] & 64 ? w[9] % 2000000 : 0;
	char err[256];
	if (qos_params_normalize(&p, err, sizeof(err))) {
		check_canonical(&p, "normalised");
		check_round_trip(&p);
	} else {
		FUZZ_RULE(err[0] != '\0', "refused without a reason");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
	if (size == 0 || size > 4096) {
		return 0;
	}
	if (data[0] == 0xff) {
		from_bytes(data + 1, size - 1);
		return 0;
	}
	char *s = fuzz_string(data, size);
	if (!s) {
		return 0;
	}
	check_values(s);
	struct qos_params p;
	/* One line: the grammar has no newlines inside a line. */
	if (!strchr(s, '\n') && parse_keys(s, &p)) {
		check_canonical(&p, "parsed");
		check_round_trip(&p);
	}
	free(s);
	return 0;
}
