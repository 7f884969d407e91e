#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qos/rules.h"

struct qos_rules *qos_rules_create(void) {
	return calloc(1, sizeof(struct qos_rules));
}

void qos_rules_destroy(struct qos_rules *rules) {
	if (!rules) {
		return;
	}
	for (size_t i = 0; i < rules->n_rules; i++) {
		for (size_t k = 0; k < rules->rules[i].n_matches; k++) {
			free(rules->rules[i].matches[k].pattern);
		}
		free(rules->rules[i].matches);
	}
	free(rules->rules);
	free(rules->reserves);
	for (size_t i = 0; i < rules->n_files; i++) {
		free(rules->files[i]);
	}
	free(rules->files);
	free(rules);
}

/*
 * A rule naming a reserve no layer defines only works while a reserve of that
 * name exists (made through qosctl or the protocol); a misspelt name would
 * otherwise fail silently at every start of the program.
 */
static void warn_undefined(const struct qos_rules *rules, qos_rules_diag_fn diag, void *data) {
	for (size_t i = 0; diag && i < rules->n_rules; i++) {
		const struct qos_rule *r = &rules->rules[i];
		if (!r->reserve[0] || qos_rules_find_reserve(rules, r->reserve)) {
			continue;
		}
		char msg[PATH_MAX + 256], shown[sizeof(msg) + 1024];
		snprintf(msg, sizeof(msg),
				"%s:%d:%d: warning: reserve=%s names no reserve in "
				"any qosrc; the rule applies only while one of that name exists",
				r->file, r->line, r->reserve_col, r->reserve);
		qos_escape_controls(msg, shown, sizeof(shown));
		diag(data, shown);
	}
}

struct qos_rules *qos_rules_load(const char *const *paths, size_t n_paths, qos_rules_diag_fn diag,
		void *data) {
	struct qos_rules *rules = qos_rules_create();
	if (!rules) {
		return NULL;
	}
	size_t readable = 0;
	for (size_t i = 0; i < n_paths; i++) {
		if (access(paths[i], F_OK) != 0) {
			continue;
		}
		int r = qos_rules_parse_file(rules, paths[i], diag, data);
		if (r >= 0) {
			readable++;
		}
	}
	bool nothing_valid = rules->n_rules == 0 && rules->n_reserves == 0 && rules->n_errors > 0;
	if (readable == 0 || nothing_valid) {
		qos_rules_destroy(rules);
		return NULL;
	}
	warn_undefined(rules, diag, data);
	return rules;
}

size_t qos_rules_default_paths(const char *datadir, const char *sysconfdir, char *out[3]) {
	size_t n = 0;
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s/qosrc", datadir);
	if (!(out[n] = strdup(buf))) {
		goto err;
	}
	n++;
	snprintf(buf, sizeof(buf), "%s/qosrc", sysconfdir);
	if (!(out[n] = strdup(buf))) {
		goto err;
	}
	n++;
	const char *xdg = getenv("XDG_CONFIG_HOME");
	const char *home = getenv("HOME");
	/* The XDG base directory spec: a relative value is invalid and ignored. */
	if (xdg && xdg[0] == '/') {
		snprintf(buf, sizeof(buf), "%s/qosway/qosrc", xdg);
	} else if (home && *home) {
		snprintf(buf, sizeof(buf), "%s/.config/qosway/qosrc", home);
	} else {
		return n;
	}
	if (!(out[n] = strdup(buf))) {
		goto err;
	}
	n++;
	return n;
err:
	while (n > 0) {
		free(out[--n]);
	}
	return 0;
}

const struct qos_reserve_def *qos_rules_find_reserve(const struct qos_rules *rules,
		const char *name) {
	for (size_t i = 0; i < rules->n_reserves; i++) {
		if (strcmp(rules->reserves[i].name, name) == 0) {
			return &rules->reserves[i];
		}
	}
	return NULL;
}

static bool match_one(const struct qos_rule_match *m, const char *exe, const char *cmdline,
		const char *app_id) {
	switch (m->kind) {
	case QOS_MATCH_EXE:
		if (!exe) {
			return false;
		}
		if (!strchr(m->pattern, '/')) {
			const char *base = strrchr(exe, '/');
			return fnmatch(m->pattern, base ? base + 1 : exe, 0) == 0;
		}
		return fnmatch(m->pattern, exe, FNM_PATHNAME) == 0;
	case QOS_MATCH_CMDLINE:
		return cmdline && fnmatch(m->pattern, cmdline, 0) == 0;
	case QOS_MATCH_APP_ID:
		return app_id && fnmatch(m->pattern, app_id, 0) == 0;
	}
	return false;
}

static bool rule_matches(const struct qos_rule *r, const char *exe, const char *cmdline,
		const char *app_id) {
	for (size_t k = 0; k < r->n_matches; k++) {
		if (!match_one(&r->matches[k], exe, cmdline, app_id)) {
			return false;
		}
	}
	return true;
}

const struct qos_rule *qos_rules_match(const struct qos_rules *rules, const char *exe,
		const char *cmdline, const char *app_id) {
	/* Walk backwards: the last matching line is the most specific one. */
	for (size_t i = rules->n_rules; i-- > 0;) {
		const struct qos_rule *r = &rules->rules[i];
		if (r->places && rule_matches(r, exe, cmdline, app_id)) {
			return r;
		}
	}
	return NULL;
}

void qos_app_limits_init(struct qos_app_limits *limits) {
	*limits = (struct qos_app_limits){
		.allow = 1u << QOS_POLICY_QOS | 1u << QOS_POLICY_OTHER | 1u << QOS_POLICY_IDLE,
		.max_cpu_ppm = QOS_APP_MAX_CPU_DEFAULT_PPM,
	};
}

void qos_rules_app_limits(const struct qos_rules *rules, const char *exe, const char *cmdline,
		const char *app_id, struct qos_app_limits *out) {
	qos_app_limits_init(out);
	for (size_t i = 0; rules && i < rules->n_rules; i++) {
		const struct qos_rule *r = &rules->rules[i];
		if (!r->limits_set || !rule_matches(r, exe, cmdline, app_id)) {
			continue;
		}
		if (r->limits_set & QOS_APP_LIMIT_ALLOW) {
			out->allow = r->limits.allow;
		}
		if (r->limits_set & QOS_APP_LIMIT_MAX_CPU) {
			out->max_cpu_ppm = r->limits.max_cpu_ppm;
		}
		if (r->limits_set & QOS_APP_LIMIT_REDEFINE) {
			out->redefine = r->limits.redefine;
		}
		out->set |= r->limits_set;
	}
}
