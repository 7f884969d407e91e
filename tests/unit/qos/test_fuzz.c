/*
 * Seeded mutations of valid input fed to the parsers of what users and other
 * processes write: AutoQOS rule files, the value syntax they share with the
 * control socket, and the crash journal read back from cgroup xattrs.
 *
 * Whatever the bytes, a parser must not crash or read out of bounds (the
 * sanitizer build runs this too); a refusal names the line and column it is
 * about in printable text; a bad line costs only itself; and whatever is
 * accepted is valid and reads back the same after formatting.
 *
 * QOS_FUZZ_ITERATIONS and QOS_FUZZ_SEED run it longer or differently; a
 * failure prints the seed and the input, escaped.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "mutate.h"
#include "qos/kernel/journal.h"
#include "qos/params.h"
#include "qos/rules.h"

#define FILE_NAME "fz"

struct diags {
	char msg[64][600];
	int n;
};

static void collect(void *data, const char *message) {
	struct diags *d = data;
	if (d->n < 64) {
		snprintf(d->msg[d->n], sizeof(d->msg[0]), "%s", message);
	}
	d->n++;
}

/* Length of line number `line` (1-based) of text, or -1 past the end. */
static long line_length(const char *text, long line) {
	const char *p = text;
	for (long l = 1; l < line; l++) {
		p = strchr(p, '\n');
		if (!p) {
			return -1;
		}
		p++;
	}
	const char *nl = strchr(p, '\n');
	return nl ? nl - p : (long)strlen(p);
}

static void check_diagnostic(const char *text, long lines, const char *msg) {
	char *end;
	size_t prefix = strlen(FILE_NAME ":");
	CHECK(strncmp(msg, FILE_NAME ":", prefix) == 0);
	long line = strtol(msg + prefix, &end, 10);
	CHECK(*end == ':' && line >= 1 && line <= lines);
	long col = strtol(end + 1, &end, 10);
	CHECK(*end == ':' && end[1] == ' ' && end[2] != '\0');
	/* A column may point just past the last byte (what is missing goes there). */
	long width = line_length(text, line);
	CHECK(col >= 1 && col <= width + 1);
	for (const char *c = msg; *c; c++) {
		CHECK((unsigned char)*c >= 0x20 && *c != 0x7f);
	}
}

/* What formatting gives back when parsed as a reserve line: the same parameters. */
static void check_round_trip(const char *name, const struct qos_params *p) {
	char fmt[256], line[400];
	qos_params_format(p, fmt, sizeof(fmt));
	snprintf(line, sizeof(line), "reserve %s %s\n", name, fmt);
	struct diags d = { 0 };
	struct qos_rules *r = qos_rules_create();
	CHECK(qos_rules_parse_string(r, FILE_NAME, line, collect, &d) == 0);
	const struct qos_reserve_def *def = qos_rules_find_reserve(r, name);
	/* period=vblank reads back as a 60 Hz frame, with the same share of it. */
	struct qos_params want = *p;
	qos_params_vblank_standin(&want);
	CHECK(def && qos_params_equal(&def->params, &want));
	if (d.n || !def || !qos_params_equal(&def->params, &want)) {
		print_escaped("formatted", line, strlen(line));
		for (int i = 0; i < d.n && i < 64; i++) {
			fprintf(stderr, "  %s\n", d.msg[i]);
		}
	}
	qos_rules_destroy(r);
}

static void check_accepted(const struct qos_rules *r) {
	char err[160];
	for (size_t i = 0; i < r->n_reserves; i++) {
		const struct qos_reserve_def *d = &r->reserves[i];
		struct qos_params p = d->params;
		CHECK(qos_name_valid(d->name, err, sizeof(err)) && !qos_name_is_auto(d->name));
		CHECK(qos_params_normalize(&p, err, sizeof(err)) && qos_params_equal(&p, &d->params));
		check_round_trip(d->name, &d->params);
	}
	for (size_t i = 0; i < r->n_rules; i++) {
		const struct qos_rule *rule = &r->rules[i];
		CHECK(rule->n_matches >= 1);
		for (size_t k = 0; k < rule->n_matches; k++) {
			CHECK(rule->matches[k].pattern && rule->matches[k].pattern[0]);
		}
		if (rule->reserve[0]) {
			CHECK(qos_name_valid(rule->reserve, err, sizeof(err)));
		} else if (rule->places) {
			struct qos_params p = rule->params;
			CHECK(qos_params_normalize(&p, err, sizeof(err)) &&
					qos_params_equal(&p, &rule->params));
		}
		/* Matching the patterns against the text they came from must not trip. */
		const char *pat = rule->matches[0].pattern;
		(void)qos_rules_match(r, pat, pat, pat);
		struct qos_app_limits limits;
		qos_rules_app_limits(r, pat, pat, pat, &limits);
		CHECK(limits.allow & (1u << QOS_POLICY_OTHER));
	}
}

#define SENTINEL "reserve fuzz-sentinel policy=qos period=20ms slice=5ms fallback=pause\n"

static void fuzz_rules(uint64_t seed, int iterations) {
	static const char *const extra[] = {
		"rule exe=/usr/bin/mpv app_id=\"mpv\" reserve=video inherit=yes\n",
		"rule app_id=org.foo allow=qos,fifo max-cpu=80% redefine=yes\n",
		"reserve video policy=qos period=20ms slice=6ms fallback=pause # video\n",
		"rule cmdline=\"foo --x \\\"y\\\"\" policy=rr priority=10 period=10ms cpu=50%\n",
		"reserve bg policy=idle nice=10 inherit=no\n",
	};
	char corpus[64][256];
	size_t n_corpus = 0;
	FILE *f = fopen(QOSWAY_SOURCE_CONFIG "/qosrc", "r");
	CHECK(f != NULL);
	while (f && n_corpus < 48 && fgets(corpus[n_corpus], sizeof(corpus[0]), f)) {
		if (corpus[n_corpus][0] != '#' && corpus[n_corpus][0] != '\n') {
			n_corpus++;
		}
	}
	if (f) {
		fclose(f);
	}
	for (size_t i = 0; i < sizeof(extra) / sizeof(extra[0]); i++) {
		snprintf(corpus[n_corpus++], sizeof(corpus[0]), "%s", extra[i]);
	}

	static char text[TEXT_MAX + sizeof(SENTINEL) + 2];
	static struct diags d;
	for (int it = 0; it < iterations; it++) {
		size_t len = 0;
		text[0] = '\0';
		for (size_t k = 1 + below(5); k > 0; k--) {
			const char *line = corpus[below(n_corpus)];
			if (len + strlen(line) < TEXT_MAX) {
				memcpy(text + len, line, strlen(line) + 1);
				len += strlen(line);
			}
		}
		for (size_t k = 1 + below(8); k > 0; k--) {
			mutate(text, &len, false);
		}
		/* Whatever the garbage above, the next line loads. */
		if (len && text[len - 1] != '\n') {
			text[len++] = '\n';
		}
		memcpy(text + len, SENTINEL, sizeof(SENTINEL));
		long lines = 0;
		for (const char *c = text; *c; c++) {
			lines += *c == '\n';
		}

		int before = check_failures;
		memset(&d, 0, sizeof(d));
		struct qos_rules *r = qos_rules_create();
		int errors = qos_rules_parse_string(r, FILE_NAME, text, collect, &d);
		CHECK(errors >= 0 && errors == d.n);
		for (int i = 0; i < d.n && i < 64; i++) {
			check_diagnostic(text, lines, d.msg[i]);
		}
		const struct qos_reserve_def *s = qos_rules_find_reserve(r, "fuzz-sentinel");
		CHECK(s && s->line == lines && s->params.policy == QOS_POLICY_QOS &&
				s->params.period_us == 20000 && s->params.slice_us == 5000 &&
				s->params.fallback == QOS_POLICY_PAUSE);
		check_accepted(r);
		qos_rules_destroy(r);
		if (failed_before(before, "rules", text, strlen(text), seed, it)) {
			for (int i = 0; i < d.n && i < 64; i++) {
				print_escaped("  diagnostic", d.msg[i], strlen(d.msg[i]));
			}
			return;
		}
	}
}

/*
 * Values: a duration is digits with an optional fraction and unit, a share
 * digits with an optional fraction and '%'; nothing else is accepted, in any
 * locale, and the value is the decimal's, rounded to a microsecond or to a
 * part per million of a CPU.
 */
static bool decimal(const char *s, long double *v, const char **rest) {
	size_t i = strspn(s, "0123456789");
	if (i == 0) {
		return false;
	}
	if (s[i] == '.') {
		size_t f = strspn(s + i + 1, "0123456789");
		if (f == 0) {
			return false;
		}
		i += 1 + f;
	}
	char num[32];
	if (i >= sizeof(num)) {
		return false;
	}
	memcpy(num, s, i);
	num[i] = '\0';
	*v = strtold(num, NULL);
	*rest = s + i;
	return true;
}

static void fuzz_values(uint64_t seed, int iterations) {
	static const char alphabet[] = "0123456789012345678901234567890123456789.usm%exXpP+- ,";
	char s[24];
	for (int it = 0; it < iterations; it++) {
		size_t n = 1 + below(sizeof(s) - 2);
		for (size_t i = 0; i < n; i++) {
			s[i] = alphabet[below(sizeof(alphabet) - 1)];
		}
		s[n] = '\0';
		int before = check_failures;
		long double v;
		const char *rest;
		bool num = decimal(s, &v, &rest);

		uint64_t us = 0;
		bool dur = qos_parse_duration_us(s, &us);
		long double mult = !num                 ? 0
				: !*rest || !strcmp(rest, "us") ? 1
				: !strcmp(rest, "ms")           ? 1e3L
				: !strcmp(rest, "s")            ? 1e6L
												: 0;
		long double want = v * mult;
		/* Refused when it rounds to more than an hour. */
		bool valid = mult > 0 && want < 3600e6L + 0.5L;
		CHECK(dur == valid);
		CHECK(!dur || ((long double)us >= want - 0.5001L && (long double)us <= want + 0.5001L));

		uint64_t ppm = 0;
		bool pct = qos_parse_percent_ppm(s, &ppm);
		want = v * 1e4L;
		/* ... or to more than 64 CPUs. */
		valid = num && (!*rest || !strcmp(rest, "%")) && want < 64e6L + 0.5L;
		CHECK(pct == valid);
		CHECK(!pct || ((long double)ppm >= want - 0.5001L && (long double)ppm <= want + 0.5001L));
		if (failed_before(before, "value", s, n, seed, it)) {
			return;
		}
	}
}

/* Adaptation keys, some of the time; normalize sorts out the invalid mixes. */
static void random_adapt(struct qos_params *p) {
	if (rnd() % 2) {
		return;
	}
	p->adapt.auto_slice = rnd() % 2;
	p->adapt.continuous = rnd() % 2;
	p->adapt.min_ppm = rnd() % 3 ? 0 : 1 + below(400000);
	p->adapt.max_ppm = rnd() % 3 ? 0 : 1 + below(1000000);
	p->period_vblank = rnd() % 2;
	p->idle_periods = rnd() % 3 ? 0 : (uint32_t)below(1000);
}

/* Random valid parameters survive qos_params_format and the parser. */
static void fuzz_params_format(uint64_t seed, int iterations) {
	static const uint64_t periods[] = { 1000, 1001, 1500, 2000, QOS_VBLANK_DEFAULT_US, 20000, 33333,
		50000, 100000, 999999, 1000000, 1000001, 2500000, 10000000 };
	for (int it = 0; it < iterations; it++) {
		struct qos_params p;
		qos_params_init(&p);
		p.policy = (enum qos_policy)below(QOS_POLICY_PAUSE + 1);
		p.fallback = (enum qos_policy)below(QOS_POLICY_PAUSE + 1);
		if (rnd() % 4) {
			p.period_us = periods[below(sizeof(periods) / sizeof(periods[0]))];
			p.slice_us = 1 + below(p.period_us);
		}
		p.nice = (int)below(40) - 20;
		p.priority = 1 + (int)below(99);
		p.inherit = rnd() % 2;
		random_adapt(&p);
		char err[160];
		if (!qos_params_normalize(&p, err, sizeof(err))) {
			continue;
		}
		int before = check_failures;
		check_round_trip("fuzz", &p);
		char fmt[256];
		qos_params_format(&p, fmt, sizeof(fmt));
		if (failed_before(before, "params", fmt, strlen(fmt), seed, it)) {
			return;
		}
	}
}

static bool path_clean(const char *path, bool may_be_empty) {
	if (!path[0]) {
		return may_be_empty;
	}
	if (path[0] != '/') {
		return false;
	}
	for (const char *c = path; c; c = strchr(c + 1, '/')) {
		size_t part = strcspn(c + 1, "/");
		if ((part == 1 && c[1] == '.') || (part == 2 && !strncmp(c + 1, "..", 2))) {
			return false;
		}
	}
	return true;
}

static void fuzz_journal(uint64_t seed, int iterations) {
	static const char *const paths[] = { "/", "/user.slice/app-foo.scope", "/a/b/c", "/qosway-0/r0",
		"/x..y/.z" };
	char buf[TEXT_MAX + 1];
	for (int it = 0; it < iterations; it++) {
		struct qos_journal_entry e = {
			.start_time = 1 + rnd() % 1000000000u,
			.nice = (int)below(40) - 20,
			.rt_soft = rnd() % 3 ? rnd() % 1000000 : UINT64_MAX,
		};
		e.rt_hard = rnd() % 2 ? e.rt_soft : UINT64_MAX;
		snprintf(e.v2, sizeof(e.v2), "%s", paths[below(5)]);
		snprintf(e.cpu, sizeof(e.cpu), "%s", rnd() % 4 ? paths[below(5)] : "");
		size_t len = qos_journal_format(&e, buf, sizeof(buf));
		CHECK(len > 0);
		struct qos_journal_entry back;
		CHECK(qos_journal_parse(buf, len, &back) && memcmp(&back, &e, sizeof(e)) == 0);

		for (size_t k = 1 + below(6); k > 0; k--) {
			mutate(buf, &len, true);
		}
		int before = check_failures;
		/* Parsed by length: a NUL a mutation put in is just another byte. */
		if (qos_journal_parse(buf, len, &back)) {
			CHECK(back.start_time > 0 && back.nice >= -20 && back.nice <= 19);
			CHECK(back.rt_soft <= back.rt_hard);
			CHECK(path_clean(back.v2, false) && path_clean(back.cpu, true));
			char again[TEXT_MAX + 1];
			struct qos_journal_entry twice;
			size_t n = qos_journal_format(&back, again, sizeof(again));
			CHECK(n > 0 && qos_journal_parse(again, n, &twice) &&
					memcmp(&twice, &back, sizeof(back)) == 0);
		}
		if (failed_before(before, "journal", buf, len, seed, it)) {
			return;
		}
	}
}

int main(void) {
	const char *env = getenv("QOS_FUZZ_ITERATIONS");
	int iterations = env ? atoi(env) : 100000;
	env = getenv("QOS_FUZZ_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : 0x9e3779b97f4a7c15ULL;
	rng_state = seed ? seed : 1;
	fuzz_rules(seed, iterations);
	fuzz_values(seed, iterations * 5);
	fuzz_params_format(seed, iterations);
	fuzz_journal(seed, iterations);
	return check_report("test_fuzz");
}
