/*
 * The qosrc parser (qos/policy/rules_parser.c), on whole files.  Rules checked:
 * every diagnostic is "fuzz:LINE:COL: message" without control bytes; what
 * it accepts is canonical and formats back to the same reserve; a line it
 * refuses changes nothing (parsed on top of a base file, the rule set is
 * then the base's); matching against the patterns themselves is safe.
 */
#include "fuzz.h"
#include "qos/params.h"
#include "qos/rules.h"

/* A small real file: reserves and rules a refused line could disturb. */
static const char base_text[] = "reserve ui policy=qos period=50ms cpu=5% fallback=other\n"
								"reserve idle policy=idle\n"
								"rule cmdline=\"*\" reserve=ui auto=no inherit=yes\n"
								"rule app_id=game policy=qos period=vblank cpu=auto adapt=yes "
								"cpu-max=60% max-cpu=70%\n";

struct diags {
	size_t n;
};

static void check_diag(void *data, const char *message) {
	struct diags *d = data;
	d->n++;
	FUZZ_RULE(strncmp(message, "fuzz:", 5) == 0 || strncmp(message, "base:", 5) == 0,
			"diagnostic without its file: %s", message);
	for (const char *c = message; *c; c++) {
		FUZZ_RULE((unsigned char)*c >= 0x20 && *c != 0x7f, "control byte in a diagnostic");
	}
}

static bool same_str(const char *a, const char *b) {
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool same_rule(const struct qos_rule *a, const struct qos_rule *b) {
	if (a->n_matches != b->n_matches || strcmp(a->reserve, b->reserve) != 0 ||
			!qos_params_equal(&a->params, &b->params) || a->auto_apply != b->auto_apply ||
			a->places != b->places || a->limits_set != b->limits_set ||
			a->limits.allow != b->limits.allow || a->limits.max_cpu_ppm != b->limits.max_cpu_ppm ||
			a->limits.redefine != b->limits.redefine) {
		return false;
	}
	for (size_t i = 0; i < a->n_matches; i++) {
		if (a->matches[i].kind != b->matches[i].kind ||
				!same_str(a->matches[i].pattern, b->matches[i].pattern)) {
			return false;
		}
	}
	return true;
}

static bool same_rules(const struct qos_rules *a, const struct qos_rules *b) {
	if (a->n_reserves != b->n_reserves || a->n_rules != b->n_rules) {
		return false;
	}
	for (size_t i = 0; i < a->n_reserves; i++) {
		if (strcmp(a->reserves[i].name, b->reserves[i].name) != 0 ||
				!qos_params_equal(&a->reserves[i].params, &b->reserves[i].params)) {
			return false;
		}
	}
	for (size_t i = 0; i < a->n_rules; i++) {
		if (!same_rule(&a->rules[i], &b->rules[i])) {
			return false;
		}
	}
	return true;
}

static void check_params(const struct qos_params *p) {
	char err[256], fmt[512], line[600];
	struct qos_params again = *p;
	qos_params_format(p, fmt, sizeof(fmt));
	FUZZ_RULE(qos_params_normalize(&again, err, sizeof(err)) && qos_params_equal(&again, p),
			"accepted parameters are not canonical: %s", fmt);
	snprintf(line, sizeof(line), "reserve r %s\n", fmt);
	struct qos_rules *r = qos_rules_create();
	if (!r) {
		return;
	}
	struct diags d = { 0 };
	struct qos_params want = *p;
	qos_params_vblank_standin(&want);
	int bad = qos_rules_parse_string(r, "fuzz", line, check_diag, &d);
	FUZZ_RULE(bad == 0 && r->n_reserves == 1 && qos_params_equal(&r->reserves[0].params, &want),
			"formatted parameters do not read back: %s", fmt);
	qos_rules_destroy(r);
}

static void check_accepted(const struct qos_rules *r) {
	char err[256];
	for (size_t i = 0; i < r->n_reserves; i++) {
		FUZZ_RULE(qos_name_valid(r->reserves[i].name, err, sizeof(err)) &&
						!qos_name_is_auto(r->reserves[i].name),
				"bad reserve name accepted");
		check_params(&r->reserves[i].params);
	}
	for (size_t i = 0; i < r->n_rules; i++) {
		const struct qos_rule *rule = &r->rules[i];
		FUZZ_RULE(rule->n_matches >= 1, "rule without a match");
		for (size_t k = 0; k < rule->n_matches; k++) {
			FUZZ_RULE(rule->matches[k].pattern && rule->matches[k].pattern[0], "empty pattern");
		}
		if (rule->reserve[0]) {
			FUZZ_RULE(qos_name_valid(rule->reserve, err, sizeof(err)), "bad reserve= taken");
		} else if (rule->places) {
			check_params(&rule->params);
		}
		const char *pat = rule->matches[0].pattern;
		(void)qos_rules_match(r, pat, pat, pat);
		struct qos_app_limits limits;
		qos_rules_app_limits(r, pat, pat, pat, &limits);
	}
}

/* Each line on top of the base: refused, it leaves the base as it was. */
static void check_lines(const char *text) {
	struct qos_rules *base = qos_rules_create();
	if (!base) {
		return;
	}
	struct diags d = { 0 };
	int bad = qos_rules_parse_string(base, "base", base_text, check_diag, &d);
	FUZZ_RULE(bad == 0, "the base file has %d bad lines", bad);
	const char *p = text;
	for (int n = 0; *p && n < 16; n++) {
		size_t len = strcspn(p, "\n");
		char *line = strndup(p, len);
		struct qos_rules *r = qos_rules_create();
		if (line && r && qos_rules_parse_string(r, "base", base_text, check_diag, &d) == 0) {
			if (qos_rules_parse_string(r, "fuzz", line, check_diag, &d) > 0) {
				FUZZ_RULE(same_rules(r, base), "refused line changed the rules: %s", line);
			}
		}
		qos_rules_destroy(r);
		free(line);
		p += len + (p[len] == '\n');
	}
	qos_rules_destroy(base);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
	if (size > 8192) {
		return 0;
	}
	char *text = fuzz_string(data, size);
	struct qos_rules *r = qos_rules_create();
	if (text && r) {
		struct diags d = { 0 };
		int bad = qos_rules_parse_string(r, "fuzz", text, check_diag, &d);
		FUZZ_RULE(bad >= 0 && (size_t)bad <= d.n, "%d bad lines, %zu diagnostics", bad, d.n);
		check_accepted(r);
		check_lines(text);
	}
	qos_rules_destroy(r);
	free(text);
	return 0;
}
