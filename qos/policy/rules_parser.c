#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qos/rules.h"

#define MAX_TOKENS 32

struct token {
	char *key; /* NULL for a bare word */
	char *value; /* the word itself when key is NULL */
	int col; /* 1-based column of the token */
	int vcol; /* 1-based column of the value */
};

struct line_ctx {
	const char *file;
	int line;
	qos_rules_diag_fn diag;
	void *data;
};

static void report(const struct line_ctx *ctx, int col, const char *fmt, ...)
		__attribute__((format(printf, 3, 4)));

static void report(const struct line_ctx *ctx, int col, const char *fmt, ...) {
	if (!ctx->diag) {
		return;
	}
	/* Room for a whole path in a file-level message; escapes past the end are cut. */
	char msg[PATH_MAX + 256], shown[sizeof(msg) + 1024];
	int n = snprintf(msg, sizeof(msg), "%s:%d:%d: ", ctx->file, ctx->line, col);
	va_list ap;
	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof(msg)) {
		vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	}
	va_end(ap);
	qos_escape_controls(msg, shown, sizeof(shown));
	ctx->diag(ctx->data, shown);
}

/*
 * Splits one line in place into tokens.  buf is a writable copy of the line;
 * quoted values are unescaped into the same storage, which is safe because
 * unescaping only ever shortens them.
 */
static int tokenize(const struct line_ctx *ctx, char *buf, struct token *tok, int *ntok) {
	char *p = buf;
	*ntok = 0;
	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == '\r') {
			p++;
		}
		if (*p == '\0' || *p == '#') {
			return 0;
		}
		if (*ntok == MAX_TOKENS) {
			report(ctx, (int)(p - buf) + 1, "too many items on one line (at most %d)", MAX_TOKENS);
			return -1;
		}
		struct token *t = &tok[(*ntok)++];
		t->col = (int)(p - buf) + 1;
		t->key = NULL;
		char *start = p;
		while (*p && *p != '=' && *p != ' ' && *p != '\t' && *p != '"' && *p != '\r') {
			p++;
		}
		if (*p == '"' && p != start) {
			report(ctx, (int)(p - buf) + 1, "unexpected '\"' in a key or word");
			return -1;
		}
		if (*p == '=') {
			*p++ = '\0';
			t->key = start;
			if (*start == '\0') {
				report(ctx, t->col, "missing key before '='");
				return -1;
			}
			start = p;
		}
		t->vcol = (int)(start - buf) + 1;
		/* A quoted value, or a quoted word: a reserve name with spaces. */
		if (*p == '"' && p == start) {
			char *out = ++p;
			t->value = out;
			for (;;) {
				if (*p == '\0' || *p == '\r') {
					report(ctx, t->vcol, "unterminated quoted value");
					return -1;
				}
				if (*p == '"') {
					break;
				}
				if (*p == '\\' && (p[1] == '"' || p[1] == '\\')) {
					p++;
				}
				*out++ = *p++;
			}
			p++;
			if (*p != '\0' && *p != ' ' && *p != '\t' && *p != '\r') {
				report(ctx, (int)(p - buf) + 1, "expected a space after the quoted value");
				return -1;
			}
			*out = '\0';
			/* out may trail p by the removed escapes; p still points past the quote. */
			if (*p) {
				p++;
			}
			continue;
		}
		t->value = start;
		while (*p && *p != ' ' && *p != '\t' && *p != '\r') {
			if (*p == '"' || (t->key && *p == '=')) {
				report(ctx, (int)(p - buf) + 1, "unexpected '%c' in a value", *p);
				return -1;
			}
			p++;
		}
		if (*p) {
			*p++ = '\0';
		}
		if (t->key && *t->value == '\0') {
			report(ctx, t->vcol, "missing value after '%s='", t->key);
			return -1;
		}
	}
}

enum key_id {
	K_POLICY,
	K_FALLBACK,
	K_PERIOD,
	K_SLICE,
	K_CPU,
	K_NICE,
	K_PRIORITY,
	K_RESERVE,
	K_AUTO,
	K_INHERIT,
	K_ALLOW,
	K_MAX_CPU,
	K_REDEFINE,
	K_ADAPT,
	K_CPU_MIN,
	K_CPU_MAX,
	K_IDLE_RELEASE,
	K_COUNT
};

struct settings {
	struct qos_params params;
	uint64_t cpu_ppm;
	int idle_periods;
	bool has_cpu, has_slice, has_period, has_policy_keys;
	bool has_reserve, has_auto;
	char reserve[QOS_NAME_MAX + 1];
	bool auto_apply;
	struct qos_app_limits limits;
	unsigned limits_set;
	unsigned seen; /* bit per key, to catch duplicates */
	int col[K_COUNT]; /* where each key was given, for messages about it */
};

static const char *const key_names[K_COUNT] = {
	"policy",
	"fallback",
	"period",
	"slice",
	"cpu",
	"nice",
	"priority",
	"reserve",
	"auto",
	"inherit",
	"allow",
	"max-cpu",
	"redefine",
	"adapt",
	"cpu-min",
	"cpu-max",
	"idle-release",
};

/* allow=qos,fifo: a comma-separated list of policy names. */
static bool parse_policy_list(const char *v, unsigned *out) {
	unsigned mask = 1u << QOS_POLICY_OTHER; /* going back to normal is always allowed */
	const char *p = v;
	for (;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		char name[16];
		enum qos_policy policy;
		if (len == 0 || len >= sizeof(name)) {
			return false;
		}
		memcpy(name, p, len);
		name[len] = '\0';
		if (!qos_policy_from_name(name, &policy)) {
			return false;
		}
		mask |= 1u << policy;
		if (!comma) {
			break;
		}
		p = comma + 1;
	}
	*out = mask;
	return true;
}

static bool parse_int(const char *s, int lo, int hi, int *out) {
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		return false;
	}
	*out = (int)v;
	return true;
}

/*
 * Applies one key=value; is_rule allows reserve= and auto=.  One branch per
 * key, kept in one function so that the keys read as the table they are.
 */
static bool apply_key(const struct line_ctx *ctx, struct settings *s, const struct token *t,
		bool is_rule) {
	int id = -1;
	for (int i = 0; i < K_COUNT; i++) {
		if (strcmp(t->key, key_names[i]) == 0) {
			id = i;
		}
	}
	bool rule_only =
			id == K_RESERVE || id == K_AUTO || id == K_ALLOW || id == K_MAX_CPU || id == K_REDEFINE;
	if (id < 0 || (!is_rule && rule_only)) {
		report(ctx, t->col, "unknown key '%s'", t->key);
		return false;
	}
	if (s->seen & (1u << id)) {
		report(ctx, t->col, "'%s' given twice", t->key);
		return false;
	}
	s->seen |= 1u << id;
	s->col[id] = t->col;
	const char *v = t->value;
	bool ok = true;
	const char *what = "";
	switch ((enum key_id)id) {
	case K_POLICY:
	case K_FALLBACK:
		ok = qos_policy_from_name(v, id == K_POLICY ? &s->params.policy : &s->params.fallback);
		what = "a policy (qos, fifo, rr, other, idle, pause)";
		s->has_policy_keys = true;
		break;
	case K_PERIOD:
		s->params.period_vblank = strcmp(v, "vblank") == 0;
		if (s->params.period_vblank) {
			s->params.period_us = QOS_VBLANK_DEFAULT_US;
		} else {
			ok = qos_parse_duration_us(v, &s->params.period_us) && s->params.period_us > 0;
		}
		what = "a duration such as 20ms, or vblank";
		s->has_period = s->has_policy_keys = true;
		break;
	case K_SLICE:
		ok = qos_parse_duration_us(v, &s->params.slice_us) && s->params.slice_us > 0;
		what = "a duration such as 5ms";
		s->has_slice = s->has_policy_keys = true;
		break;
	case K_CPU:
		s->params.adapt.auto_slice = strcmp(v, "auto") == 0;
		if (!s->params.adapt.auto_slice) {
			ok = qos_parse_percent_ppm(v, &s->cpu_ppm) && s->cpu_ppm > 0;
		}
		what = "a percentage of one CPU such as 25%, or auto";
		s->has_cpu = !s->params.adapt.auto_slice;
		s->has_policy_keys = true;
		break;
	case K_ADAPT:
		ok = qos_parse_bool(v, &s->params.adapt.continuous);
		what = "yes or no";
		s->has_policy_keys = true;
		break;
	case K_CPU_MIN:
	case K_CPU_MAX: {
		uint64_t *bound = id == K_CPU_MIN ? &s->params.adapt.min_ppm : &s->params.adapt.max_ppm;
		ok = qos_parse_percent_ppm(v, bound) && *bound > 0;
		what = "a percentage of one CPU such as 25%";
		s->has_policy_keys = true;
		break;
	}
	case K_IDLE_RELEASE:
		ok = parse_int(v, 0, QOS_IDLE_RELEASE_MAX, &s->idle_periods);
		s->params.idle_periods = ok ? (uint32_t)s->idle_periods : 0;
		what = "a number of periods in 0..1000000";
		s->has_policy_keys = true;
		break;
	case K_NICE:
		ok = parse_int(v, -20, 19, &s->params.nice);
		what = "a nice value in -20..19";
		s->has_policy_keys = true;
		break;
	case K_PRIORITY:
		ok = parse_int(v, 1, 99, &s->params.priority);
		what = "a static priority in 1..99";
		s->has_policy_keys = true;
		break;
	case K_INHERIT:
		ok = qos_parse_bool(v, &s->params.inherit);
		what = "yes or no";
		break;
	case K_AUTO:
		ok = qos_parse_bool(v, &s->auto_apply);
		what = "yes or no";
		s->has_auto = true;
		break;
	case K_ALLOW:
		ok = parse_policy_list(v, &s->limits.allow);
		what = "a list of policies such as qos,fifo";
		s->limits_set |= QOS_APP_LIMIT_ALLOW;
		break;
	case K_MAX_CPU:
		ok = qos_parse_percent_ppm(v, &s->limits.max_cpu_ppm);
		what = "a percentage of one CPU such as 80%";
		s->limits_set |= QOS_APP_LIMIT_MAX_CPU;
		break;
	case K_REDEFINE:
		ok = qos_parse_bool(v, &s->limits.redefine);
		what = "yes or no";
		s->limits_set |= QOS_APP_LIMIT_REDEFINE;
		break;
	case K_RESERVE: {
		char err[128];
		if (!qos_name_valid(v, err, sizeof(err))) {
			report(ctx, t->vcol, "%s", err);
			return false;
		}
		if (qos_name_is_auto(v)) {
			report(ctx, t->vcol, "'%s' is an automatic reserve name", v);
			return false;
		}
		snprintf(s->reserve, sizeof(s->reserve), "%s", v);
		s->has_reserve = true;
		break;
	}
	case K_COUNT:
		break;
	}
	if (!ok) {
		report(ctx, t->vcol, "bad value '%s' for %s: expected %s", v, t->key, what);
	}
	return ok;
}

/* Column of the first of the keys given, or the line's default col. */
static int key_col(const struct settings *s, int col, int a, int b) {
	if (s->seen & (1u << a)) {
		return s->col[a];
	}
	if (b >= 0 && (s->seen & (1u << b))) {
		return s->col[b];
	}
	return col;
}

static int param_col(const struct settings *s, int col, enum qos_param_key key) {
	switch (key) {
	case QOS_PARAM_FALLBACK:
		return key_col(s, col, K_FALLBACK, K_POLICY);
	case QOS_PARAM_PERIOD:
		return key_col(s, col, K_PERIOD, -1);
	case QOS_PARAM_SLICE:
		return key_col(s, col, K_SLICE, K_CPU);
	case QOS_PARAM_NICE:
		return key_col(s, col, K_NICE, -1);
	case QOS_PARAM_PRIORITY:
		return key_col(s, col, K_PRIORITY, K_POLICY);
	case QOS_PARAM_AUTO:
		return key_col(s, col, K_CPU, K_POLICY);
	case QOS_PARAM_ADAPT:
		return key_col(s, col, K_ADAPT, K_POLICY);
	case QOS_PARAM_CPU_MIN:
		return key_col(s, col, K_CPU_MIN, -1);
	case QOS_PARAM_CPU_MAX:
		return key_col(s, col, K_CPU_MAX, -1);
	case QOS_PARAM_IDLE_RELEASE:
		return key_col(s, col, K_IDLE_RELEASE, -1);
	case QOS_PARAM_POLICY:
		break;
	}
	return key_col(s, col, K_POLICY, -1);
}

/*
 * Turns cpu= into a slice and checks the whole parameter set; messages point
 * at the key concerned, or at col when the line gave none.
 */
static bool finish_params(const struct line_ctx *ctx, struct settings *s, int col) {
	if (s->has_cpu && s->has_slice) {
		report(ctx, s->col[K_CPU] > s->col[K_SLICE] ? s->col[K_CPU] : s->col[K_SLICE],
				"give either cpu= or slice=, not both");
		return false;
	}
	bool auto_slice = s->params.adapt.auto_slice;
	if ((s->has_cpu || s->has_slice || auto_slice) && !s->has_period) {
		report(ctx, key_col(s, col, K_CPU, K_SLICE), "%s needs a period=",
				s->has_slice         ? "slice="
						: auto_slice ? "cpu=auto"
									 : "cpu=");
		return false;
	}
	if (s->has_period && !s->has_cpu && !s->has_slice && !auto_slice) {
		report(ctx, s->col[K_PERIOD], "period= needs a cpu= (or cpu=auto) or slice=");
		return false;
	}
	bool given_fallback = s->seen & (1u << K_FALLBACK);
	if (given_fallback && !s->has_period) {
		/*
		 * Without a limit nothing ever falls back, and fifo/rr's safety
		 * limit falls back to other: say so rather than drop the key.
		 */
		bool rt = s->params.policy == QOS_POLICY_FIFO || s->params.policy == QOS_POLICY_RR;
		if (!rt) {
			report(ctx, s->col[K_FALLBACK], "fallback= needs a limit: period= with cpu= or slice=");
			return false;
		}
		if (s->params.fallback != QOS_POLICY_OTHER) {
			report(ctx, s->col[K_FALLBACK],
					"the safety limit of %s falls back to "
					"other; give period= and cpu= or slice= for another fallback",
					qos_policy_name(s->params.policy));
			return false;
		}
	}
	/* A limit on other or idle without fallback= is a ceiling (Table 3.2). */
	if (s->has_period && !given_fallback &&
			(s->params.policy == QOS_POLICY_OTHER || s->params.policy == QOS_POLICY_IDLE)) {
		s->params.fallback = QOS_POLICY_PAUSE;
	}
	if (s->has_cpu) {
		s->params.slice_us = (s->params.period_us * s->cpu_ppm + 500000) / 1000000;
		if (s->params.slice_us == 0) {
			report(ctx, s->col[K_CPU], "cpu= gives less than 1us of this period=");
			return false;
		}
	}
	char err[160];
	enum qos_param_key key;
	if (!qos_params_check(&s->params, &key, err, sizeof(err))) {
		report(ctx, param_col(s, col, key), "%s", err);
		return false;
	}
	return true;
}

static char *intern_file(struct qos_rules *rules, const char *file) {
	for (size_t i = 0; i < rules->n_files; i++) {
		if (strcmp(rules->files[i], file) == 0) {
			return rules->files[i];
		}
	}
	char **f = realloc(rules->files, (rules->n_files + 1) * sizeof(*f));
	if (!f) {
		return NULL;
	}
	rules->files = f;
	char *copy = strdup(file);
	if (!copy) {
		return NULL;
	}
	rules->files[rules->n_files++] = copy;
	return copy;
}

static int add_reserve(struct qos_rules *rules, const char *file, int line, const char *name,
		const struct qos_params *params) {
	for (size_t i = 0; i < rules->n_reserves; i++) {
		struct qos_reserve_def *d = &rules->reserves[i];
		if (strcmp(d->name, name) == 0) {
			/* A later layer redefines the reserve. */
			d->params = *params;
			d->file = file;
			d->line = line;
			return 0;
		}
	}
	struct qos_reserve_def *r = realloc(rules->reserves, (rules->n_reserves + 1) * sizeof(*r));
	if (!r) {
		return -1;
	}
	rules->reserves = r;
	struct qos_reserve_def *d = &r[rules->n_reserves++];
	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", name);
	d->params = *params;
	d->file = file;
	d->line = line;
	return 0;
}

/*
 * Returns 1 when the line was accepted, 0 when skipped, -1 on allocation
 * failure.  One branch per kind of qosrc line, kept in one function so that
 * the grammar reads top to bottom.
 */
static int parse_line(struct qos_rules *rules, const struct line_ctx *ctx, const char *file,
		char *buf) {
	struct token tok[MAX_TOKENS];
	int ntok;
	if (tokenize(ctx, buf, tok, &ntok) < 0) {
		return 0;
	}
	if (ntok == 0) {
		return 1;
	}
	if (tok[0].key) {
		report(ctx, tok[0].col, "expected 'reserve' or 'rule' at the start of the line");
		return 0;
	}
	struct settings s = { 0 };
	qos_params_init(&s.params);
	s.auto_apply = true;

	if (strcmp(tok[0].value, "reserve") == 0) {
		if (ntok < 2 || tok[1].key) {
			report(ctx, ntok < 2 ? tok[0].col + 7 : tok[1].col,
					"expected a reserve name after 'reserve'");
			return 0;
		}
		char err[128];
		if (!qos_name_valid(tok[1].value, err, sizeof(err))) {
			report(ctx, tok[1].col, "%s", err);
			return 0;
		}
		if (qos_name_is_auto(tok[1].value)) {
			report(ctx, tok[1].col,
					"names starting with '%s' are kept for automatic "
					"reserves",
					QOS_AUTO_PREFIX);
			return 0;
		}
		for (int i = 2; i < ntok; i++) {
			if (!tok[i].key) {
				report(ctx, tok[i].col, "expected key=value, found '%s'", tok[i].value);
				return 0;
			}
			if (!apply_key(ctx, &s, &tok[i], false)) {
				return 0;
			}
		}
		if (!finish_params(ctx, &s, tok[1].col)) {
			return 0;
		}
		return add_reserve(rules, file, ctx->line, tok[1].value, &s.params) < 0 ? -1 : 1;
	}

	if (strcmp(tok[0].value, "rule") != 0) {
		report(ctx, tok[0].col, "unknown item '%s': expected 'reserve' or 'rule'", tok[0].value);
		return 0;
	}
	struct qos_rule rule = { 0 };
	struct qos_rule_match m[MAX_TOKENS];
	size_t nm = 0;
	int i = 1;
	for (; i < ntok && tok[i].key; i++) {
		enum qos_match_kind kind;
		if (strcmp(tok[i].key, "exe") == 0) {
			kind = QOS_MATCH_EXE;
		} else if (strcmp(tok[i].key, "cmdline") == 0) {
			kind = QOS_MATCH_CMDLINE;
		} else if (strcmp(tok[i].key, "app_id") == 0) {
			kind = QOS_MATCH_APP_ID;
		} else {
			break;
		}
		if (!tok[i].value[0]) {
			/* Only a quoted "" gets here; no program has an empty exe or app id. */
			report(ctx, tok[i].vcol, "empty pattern for %s=", tok[i].key);
			return 0;
		}
		m[nm].kind = kind;
		m[nm].pattern = tok[i].value;
		nm++;
	}
	if (nm == 0) {
		report(ctx, i < ntok ? tok[i].col : tok[0].col,
				"a rule needs at least one of exe=, cmdline=, app_id= first");
		return 0;
	}
	for (; i < ntok; i++) {
		if (!tok[i].key) {
			report(ctx, tok[i].col, "expected key=value, found '%s'", tok[i].value);
			return 0;
		}
		if (!strcmp(tok[i].key, "exe") || !strcmp(tok[i].key, "cmdline") ||
				!strcmp(tok[i].key, "app_id")) {
			report(ctx, tok[i].col, "matches must come before the settings");
			return 0;
		}
		if (!apply_key(ctx, &s, &tok[i], true)) {
			return 0;
		}
	}
	if (s.has_reserve && s.has_policy_keys) {
		report(ctx, s.col[K_RESERVE], "a rule names a reserve or gives parameters, not both");
		return 0;
	}
	bool places = s.has_reserve || s.has_policy_keys;
	if (!places && !s.limits_set) {
		report(ctx, tok[0].col,
				"a rule needs reserve=, scheduling parameters or app limits (allow=, "
				"max-cpu=, redefine=)");
		return 0;
	}
	if (!places && (s.has_auto || (s.seen & (1u << K_INHERIT)))) {
		report(ctx, s.has_auto ? s.col[K_AUTO] : s.col[K_INHERIT],
				"auto= and inherit= need reserve= or scheduling parameters");
		return 0;
	}
	if (!s.has_reserve && places && !finish_params(ctx, &s, tok[1].col)) {
		return 0;
	}

	rule.params = s.params;
	rule.auto_apply = s.auto_apply;
	rule.places = places;
	rule.limits = s.limits;
	rule.limits_set = s.limits_set;
	snprintf(rule.reserve, sizeof(rule.reserve), "%s", s.has_reserve ? s.reserve : "");
	rule.file = file;
	rule.line = ctx->line;
	rule.reserve_col = s.has_reserve ? s.col[K_RESERVE] : 0;
	rule.matches = calloc(nm, sizeof(*rule.matches));
	if (!rule.matches) {
		return -1;
	}
	rule.n_matches = nm;
	for (size_t k = 0; k < nm; k++) {
		rule.matches[k].kind = m[k].kind;
		rule.matches[k].pattern = strdup(m[k].pattern);
		if (!rule.matches[k].pattern) {
			goto err_matches;
		}
	}
	struct qos_rule *r = realloc(rules->rules, (rules->n_rules + 1) * sizeof(*r));
	if (!r) {
		goto err_matches;
	}
	rules->rules = r;
	r[rules->n_rules++] = rule;
	return 1;

err_matches:
	for (size_t k = 0; k < nm; k++) {
		free(rule.matches[k].pattern);
	}
	free(rule.matches);
	return -1;
}

/* Parses len bytes of text; a line holding a NUL byte is reported and skipped. */
static int parse_text(struct qos_rules *rules, const char *filename, const char *text, size_t len,
		qos_rules_diag_fn diag, void *data) {
	const char *file = intern_file(rules, filename);
	if (!file) {
		return -1;
	}
	struct line_ctx ctx = { .file = file, .diag = diag, .data = data };
	int errors = 0;
	const char *p = text, *end = text + len;
	while (p < end) {
		ctx.line++;
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		const char *nul = memchr(p, '\0', n);
		int r;
		if (nul) {
			report(&ctx, (int)(nul - p) + 1, "NUL byte in the line");
			r = 0;
		} else {
			char *buf = strndup(p, n);
			if (!buf) {
				return -1;
			}
			r = parse_line(rules, &ctx, file, buf);
			free(buf);
		}
		if (r < 0) {
			return -1;
		}
		if (r == 0) {
			errors++;
		}
		p += n;
		if (p < end) {
			p++; /* the newline */
		}
	}
	rules->n_errors += (size_t)errors;
	return errors;
}

int qos_rules_parse_string(struct qos_rules *rules, const char *filename, const char *text,
		qos_rules_diag_fn diag, void *data) {
	return parse_text(rules, filename, text, strlen(text), diag, data);
}

/* A diagnostic about the whole file: "path:0:0: message". */
static void report_file(qos_rules_diag_fn diag, void *data, const char *path, const char *what,
		int err) {
	if (!diag) {
		return;
	}
	struct line_ctx ctx = { .file = path, .diag = diag, .data = data };
	if (err) {
		report(&ctx, 0, "%s: %s", what, strerror(err));
	} else {
		report(&ctx, 0, "%s", what);
	}
}

#define FILE_MAX (8u << 20)

int qos_rules_parse_file(struct qos_rules *rules, const char *path, qos_rules_diag_fn diag,
		void *data) {
	FILE *f = fopen(path, "re");
	if (!f) {
		report_file(diag, data, path, "cannot open", errno);
		return -1;
	}
	char *text = NULL;
	size_t cap = 0, len = 0;
	int err = 0;
	for (;;) {
		if (len == cap) {
			if (cap >= FILE_MAX && fgetc(f) != EOF) {
				/* Not a rules file (a log, an image): none of it, rather than a
				 * cut last line. */
				report_file(diag, data, path, "larger than 8 MiB; not loaded", 0);
				free(text);
				fclose(f);
				return -1;
			}
			if (cap >= FILE_MAX) {
				err = ferror(f) ? EIO : 0;
				break;
			}
			cap = cap ? cap * 2 : 8192;
			char *t = realloc(text, cap + 1);
			if (!t) {
				free(text);
				fclose(f);
				return -1;
			}
			text = t;
		}
		errno = 0;
		size_t n = fread(text + len, 1, cap - len, f);
		len += n;
		if (n == 0) {
			err = ferror(f) ? (errno ? errno : EIO) : 0;
			break;
		}
	}
	fclose(f);
	if (err) {
		report_file(diag, data, path, "cannot read", err);
		free(text);
		return -1;
	}
	int r = parse_text(rules, path, text, len, diag, data);
	free(text);
	return r;
}
