/*
 * qos/rules.h - AutoQOS rule files (thesis 8.2) in a line-oriented form:
 *
 *   reserve NAME key=value ...
 *   rule MATCH... key=value ...
 *
 * MATCH is exe=GLOB (path glob; a pattern without '/' is matched against the
 * basename), cmdline=WILDCARD (shell wildcards over the space-joined argv) or
 * app_id=WILDCARD.  All matches of one rule must hold; the last matching rule
 * wins, so specific rules go after general ones.  Keys: policy, fallback,
 * period (units us/ms/s, or period=vblank: the refresh of the window's
 * output), slice, cpu (percent of one CPU instead of slice, or cpu=auto:
 * sized from the measured use), adapt=yes|no (the slice keeps following the
 * use), cpu-min and cpu-max (an adaptive slice's bounds, in percent),
 * idle-release=PERIODS (a qos guarantee given back after that many idle
 * periods), nice, priority, reserve=NAME, auto=yes|no, inherit=yes|no.
 * qosrc(5) says what each does.  Values may be double-quoted.  '#' starts a
 * comment.
 *
 * Rules also say what an application may ask for itself through the
 * qosway-reserve-v1 protocol: allow=POLICY,... (policies it may request;
 * default qos,other,idle; other is always allowed), max-cpu=PERCENT (the qos
 * utilisation all its reserves together may hold; default 50%) and
 * redefine=yes|no (whether it may change reserves defined in qosrc; default
 * no).  A rule may carry only these keys; it then grants permissions without
 * placing the program anywhere.
 *
 * Diagnostics are "file:line:col: message"; a bad line is skipped and the rest
 * of the file still loads.
 */
#ifndef QOS_RULES_H
#define QOS_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qos/params.h"

enum qos_match_kind {
	QOS_MATCH_EXE,
	QOS_MATCH_CMDLINE,
	QOS_MATCH_APP_ID,
};

struct qos_rule_match {
	enum qos_match_kind kind;
	char *pattern;
};

struct qos_reserve_def {
	char name[QOS_NAME_MAX + 1];
	struct qos_params params;
	const char *file; /* owned by the rule set */
	int line;
};

/* What an application may request itself (qosway-reserve-v1). */
struct qos_app_limits {
	unsigned allow; /* 1u << enum qos_policy, per policy it may request */
	uint64_t max_cpu_ppm; /* qos utilisation over all its reserves */
	bool redefine; /* may modify reserves defined in qosrc */
	unsigned set; /* enum qos_app_limit_key: given by some rule, not defaults */
};

#define QOS_APP_MAX_CPU_DEFAULT_PPM 500000u

enum qos_app_limit_key {
	QOS_APP_LIMIT_ALLOW = 1u << 0,
	QOS_APP_LIMIT_MAX_CPU = 1u << 1,
	QOS_APP_LIMIT_REDEFINE = 1u << 2,
};

struct qos_rule {
	struct qos_rule_match *matches;
	size_t n_matches;
	/* Either a named reserve ... */
	char reserve[QOS_NAME_MAX + 1];
	/* ... or inline parameters for the process's automatic reserve. */
	struct qos_params params;
	bool auto_apply; /* apply at start; otherwise only when asked for */
	bool places; /* has reserve= or parameters (else only app limits) */
	struct qos_app_limits limits;
	unsigned limits_set; /* enum qos_app_limit_key bits given on this line */
	const char *file;
	int line;
	int reserve_col; /* column of reserve=, for the load's warning about it */
};

struct qos_rules {
	struct qos_reserve_def *reserves;
	size_t n_reserves;
	struct qos_rule *rules;
	size_t n_rules;
	char **files; /* names referenced by reserves[].file and rules[].file */
	size_t n_files;
	size_t n_errors; /* lines skipped over all parses */
};

/* Receives one "file:line:col: message" diagnostic. */
typedef void (*qos_rules_diag_fn)(void *data, const char *message);

struct qos_rules *qos_rules_create(void);
void qos_rules_destroy(struct qos_rules *rules);

/*
 * Parses text as if it were the file `filename` and appends its items to rules
 * (later items override earlier ones).  Returns the number of lines skipped, or
 * -1 when memory ran out.
 */
int qos_rules_parse_string(struct qos_rules *rules, const char *filename, const char *text,
		qos_rules_diag_fn diag, void *data);

/* Same for a file; returns -1 (and reports it) when the file cannot be read. */
int qos_rules_parse_file(struct qos_rules *rules, const char *path, qos_rules_diag_fn diag,
		void *data);

/*
 * Loads the given files in order (missing files are skipped silently).  A rule
 * whose reserve= names no reserve any layer defines is loaded (the reserve may
 * be made at run time) with a "warning:" diagnostic, not counted as an error.
 * Returns NULL when nothing at all could be loaded - no readable file, or no valid line
 * in any of them while there were errors - so a reload can keep the old set.
 */
struct qos_rules *qos_rules_load(const char *const *paths, size_t n_paths, qos_rules_diag_fn diag,
		void *data);

/*
 * The standard layering: datadir/qosrc (shipped from config/qosrc), then
 * sysconfdir/qosrc (the system's, /etc/qosway for a /usr install), then
 * $XDG_CONFIG_HOME/qosway/qosrc (~/.config if unset).
 * Fills out[3] with malloc'd strings; returns the count, 0 on failure.
 */
size_t qos_rules_default_paths(const char *datadir, const char *sysconfdir, char *out[3]);

const struct qos_reserve_def *qos_rules_find_reserve(const struct qos_rules *rules,
		const char *name);

/*
 * The last rule that places the program (reserve= or parameters); rules that
 * only carry app limits are passed over.  Any argument may be NULL; a match
 * on a missing attribute never holds.
 */
const struct qos_rule *qos_rules_match(const struct qos_rules *rules, const char *exe,
		const char *cmdline, const char *app_id);

/* The defaults: qos, other and idle allowed, 50% of a CPU, no redefining. */
void qos_app_limits_init(struct qos_app_limits *limits);

/*
 * An application's limits: the defaults, then every matching rule in file
 * order, each overriding the keys it gives.  rules may be NULL.
 */
void qos_rules_app_limits(const struct qos_rules *rules, const char *exe, const char *cmdline,
		const char *app_id, struct qos_app_limits *out);

#endif
