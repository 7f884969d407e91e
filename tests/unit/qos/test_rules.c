/* AutoQOS rule files: valid lines, every kind of invalid line, the thesis example. */
#include <stdio.h>
#include <unistd.h>

#include "check.h"
#include "qos/rules.h"

struct diags {
	char msg[16][256];
	int n;
};

static void collect(void *data, const char *message) {
	struct diags *d = data;
	if (d->n < 16) {
		snprintf(d->msg[d->n], sizeof(d->msg[0]), "%s", message);
	}
	d->n++;
}

/* Parses one line and returns its single diagnostic ("" when accepted). */
static const char *diag_for(const char *line) {
	static struct diags d;
	memset(&d, 0, sizeof(d));
	struct qos_rules *r = qos_rules_create();
	int errs = qos_rules_parse_string(r, "t", line, collect, &d);
	qos_rules_destroy(r);
	if (errs == 0 && d.n == 0) {
		return "";
	}
	if (errs != 1 || d.n != 1) {
		return "(several diagnostics)";
	}
	return d.msg[0];
}

/* Parses text that must load cleanly: no error, no diagnostic (printed if any). */
static struct qos_rules *parse_valid(const char *text) {
	struct diags d = { 0 };
	struct qos_rules *r = qos_rules_create();
	CHECK(qos_rules_parse_string(r, "t", text, collect, &d) == 0);
	CHECK(d.n == 0);
	for (int i = 0; i < d.n && i < 16; i++) {
		fprintf(stderr, "unexpected: %s\n", d.msg[i]);
	}
	return r;
}

static void test_valid(void) {
	const char *text =
			"# comment\n"
			"\n"
			"reserve video policy=qos period=20ms slice=6ms fallback=pause   # trailing\n"
			"reserve bg policy=idle nice=10\n"
			"rule exe=/usr/bin/mpv reserve=video inherit=yes\n"
			"rule exe=mpv* app_id=\"mpv\" reserve=bg auto=no\n"
			"rule cmdline=\"foo --x \\\"y\\\"\" policy=fifo priority=10 period=10ms cpu=50%\n"
			"reserve video policy=qos period=40ms cpu=25% fallback=other\n";
	struct qos_rules *r = parse_valid(text);
	CHECK_EQ_U(r->n_reserves, 2);
	CHECK_EQ_U(r->n_rules, 3);
	const struct qos_reserve_def *v = qos_rules_find_reserve(r, "video");
	CHECK(v != NULL);
	/* The later definition replaced the earlier one. */
	CHECK(v && v->params.period_us == 40000 && v->params.slice_us == 10000);
	CHECK(v && v->params.fallback == QOS_POLICY_OTHER && v->line == 8);
	const struct qos_reserve_def *bg = qos_rules_find_reserve(r, "bg");
	CHECK(bg && bg->params.policy == QOS_POLICY_IDLE && bg->params.nice == 10);

	const struct qos_rule *m = qos_rules_match(r, "/usr/bin/mpv", "mpv a.mkv", NULL);
	CHECK(m && strcmp(m->reserve, "video") == 0 && m->params.inherit && m->auto_apply);
	/* exe= without '/' matches the basename; all matches on the line must hold. */
	m = qos_rules_match(r, "/opt/mpv-git", "x", "mpv");
	CHECK(m && strcmp(m->reserve, "bg") == 0 && !m->auto_apply);
	CHECK(qos_rules_match(r, "/opt/mpv-git", "x", "other") == NULL);
	CHECK(qos_rules_match(r, "/opt/mpv-git", "x", NULL) == NULL);
	m = qos_rules_match(r, "/bin/foo", "foo --x \"y\"", NULL);
	CHECK(m && m->reserve[0] == '\0' && m->params.policy == QOS_POLICY_FIFO);
	CHECK(m && m->params.slice_us == 5000 && m->params.priority == 10);
	qos_rules_destroy(r);
}

static void test_invalid(void) {
	CHECK_STR(diag_for("reserve"), "t:1:8: expected a reserve name after 'reserve'");
	CHECK_STR(diag_for("frobnicate x"),
			"t:1:1: unknown item 'frobnicate': expected 'reserve' or 'rule'");
	CHECK_STR(diag_for("policy=qos"),
			"t:1:1: expected 'reserve' or 'rule' at the start of the line");
	CHECK_STR(diag_for("reserve a/b policy=idle"), "t:1:9: reserve names cannot contain '/'");
	CHECK_STR(diag_for("reserve auto-1 policy=idle"),
			"t:1:9: names starting with 'auto-' are kept for automatic reserves");
	CHECK_STR(diag_for("reserve x policy=turbo"),
			"t:1:18: bad value 'turbo' for policy: expected a policy (qos, fifo, rr, other, "
			"idle, pause)");
	CHECK_STR(diag_for("reserve x policy=qos period=20 slice=5parsecs"),
			"t:1:38: bad value '5parsecs' for slice: expected a duration such as 5ms");
	CHECK_STR(diag_for("reserve x colour=red"), "t:1:11: unknown key 'colour'");
	CHECK_STR(diag_for("rule exe=foo cmdline=\"\" reserve=x"),
			"t:1:22: empty pattern for cmdline=");
	CHECK_STR(diag_for("reserve x auto=yes"), "t:1:11: unknown key 'auto'");
	CHECK_STR(diag_for("reserve x nice=5 nice=6"), "t:1:18: 'nice' given twice");
	CHECK_STR(diag_for("reserve x nice=40"),
			"t:1:16: bad value '40' for nice: expected a nice value in -20..19");
	CHECK_STR(diag_for("reserve x policy=fifo priority=100"),
			"t:1:32: bad value '100' for priority: expected a static priority in 1..99");
	CHECK_STR(diag_for("reserve x policy=qos"), "t:1:11: policy qos needs a period and a slice");
	CHECK_STR(diag_for("reserve x period=10ms cpu=10% slice=1ms"),
			"t:1:31: give either cpu= or slice=, not both");
	CHECK_STR(diag_for("reserve x cpu=10%"), "t:1:11: cpu= needs a period=");
	CHECK_STR(diag_for("reserve x period=10ms"),
			"t:1:11: period= needs a cpu= (or cpu=auto) or slice=");
	CHECK_STR(diag_for("reserve x policy=qos period=10ms cpu=abc"),
			"t:1:38: bad value 'abc' for cpu: expected a percentage of one CPU such as 25%, or "
			"auto");
	CHECK_STR(diag_for("reserve x inherit=maybe"),
			"t:1:19: bad value 'maybe' for inherit: expected yes or no");
	CHECK_STR(diag_for("reserve x stray"), "t:1:11: expected key=value, found 'stray'");
	CHECK_STR(diag_for("reserve x =5"), "t:1:11: missing key before '='");
	CHECK_STR(diag_for("reserve x nice="), "t:1:16: missing value after 'nice='");
	CHECK_STR(diag_for("rule cmdline=\"abc policy=qos"), "t:1:14: unterminated quoted value");
	CHECK_STR(diag_for("rule cmdline=\"a\"b reserve=x"),
			"t:1:17: expected a space after the quoted value");
	CHECK_STR(diag_for("rule reserve=x"),
			"t:1:6: a rule needs at least one of exe=, cmdline=, app_id= first");
	CHECK_STR(diag_for("rule exe=a"),
			"t:1:1: a rule needs reserve=, scheduling parameters "
			"or app limits (allow=, max-cpu=, redefine=)");
	CHECK_STR(diag_for("rule exe=a allow=fifo,warp"),
			"t:1:18: bad value 'fifo,warp' for allow: expected a list of policies such as "
			"qos,fifo");
	CHECK_STR(diag_for("rule exe=a allow=qos,"),
			"t:1:18: bad value 'qos,' for allow: expected a list of policies such as qos,fifo");
	CHECK_STR(diag_for("rule exe=a max-cpu=lots"),
			"t:1:20: bad value 'lots' for max-cpu: expected a percentage of one CPU such as 80%");
	CHECK_STR(diag_for("rule exe=a redefine=perhaps"),
			"t:1:21: bad value 'perhaps' for redefine: expected yes or no");
	CHECK_STR(diag_for("reserve x max-cpu=10%"), "t:1:11: unknown key 'max-cpu'");
	CHECK_STR(diag_for("rule exe=a max-cpu=80% auto=yes"),
			"t:1:24: auto= and inherit= need reserve= or scheduling parameters");
	CHECK_STR(diag_for("rule exe=a reserve=x policy=idle"),
			"t:1:12: a rule names a reserve or gives parameters, not both");
	CHECK_STR(diag_for("reserve x period=1ms cpu=0.01%"),
			"t:1:22: cpu= gives less than 1us of this period=");
	CHECK_STR(diag_for("reserve x policy=other period=10ms slice=9ms fallback=fifo"),
			"t:1:46: fallback fifo does not take from policy other: past the limit members "
			"drop to idle or pause");
	CHECK_STR(diag_for("reserve .x policy=idle"), "t:1:9: reserve names cannot start with '.'");
	CHECK_STR(diag_for("reserve x policy=other fallback=pause"),
			"t:1:24: fallback= needs a limit: period= with cpu= or slice=");
	CHECK_STR(diag_for("reserve x policy=fifo priority=5 fallback=idle"),
			"t:1:34: the safety limit of fifo falls back to other; give period= and cpu= or "
			"slice= for another fallback");
	CHECK_STR(diag_for("reserve x policy=fifo priority=5 fallback=other"), "");
	CHECK_STR(diag_for("rule exe=a reserve=x exe=b"),
			"t:1:22: matches must come before the settings");
	CHECK_STR(diag_for("rule exe=a reserve=auto-5"),
			"t:1:20: 'auto-5' is an automatic reserve name");
	CHECK_STR(diag_for("rule exe=a policy=fifo priority=5 period=10ms cpu=100%"),
			"t:1:47: a fifo/rr limit must stay below 100%");
	CHECK_STR(diag_for("rule exe=a=b reserve=x"), "t:1:11: unexpected '=' in a value");
	/* Whole-line checks point at the key concerned. */
	CHECK_STR(diag_for("reserve x policy=qos period=20s cpu=5%"),
			"t:1:22: period must be between 1ms and 10s");
	CHECK_STR(diag_for("reserve x policy=qos period=20ms cpu=5% slice=1ms"),
			"t:1:41: give either cpu= or slice=, not both");
	/* A fallback must take from the policy, and an equal one is no limit. */
	CHECK_STR(diag_for("reserve x policy=idle period=50ms cpu=10% fallback=other"),
			"t:1:43: fallback other does not take from policy idle: past the limit members "
			"drop to pause");
	CHECK_STR(diag_for("reserve x policy=fifo priority=5 period=50ms cpu=50% fallback=fifo"),
			"t:1:54: fallback fifo does not take from policy fifo: past the limit members "
			"drop to other, idle or pause");
	CHECK_STR(diag_for("reserve x policy=qos period=50ms cpu=10% fallback=qos"),
			"t:1:42: fallback qos does not take from policy qos: past the limit members "
			"drop to other, idle or pause");
	CHECK_STR(diag_for("reserve x policy=pause period=50ms cpu=10%"),
			"t:1:24: a pause reserve takes no limit: its members never run");
	CHECK_STR(diag_for("reserve x policy=fifo priority=5 fallback=fifo"),
			"t:1:34: the safety limit of fifo falls back to other; give period= and cpu= or "
			"slice= for another fallback");
	/* C1 controls (here U+009B, a terminal's CSI) are control characters too. */
	CHECK_STR(diag_for("reserve x\xc2\x9b[2J policy=idle"),
			"t:1:9: reserve names cannot contain control characters");
	CHECK_STR(diag_for("reserve x policy=\xc2\x9b"
					   "2J"),
			"t:1:18: bad value '\\xc2\\x9b2J' for policy: expected a policy (qos, fifo, rr, "
			"other, idle, pause)");
	/* A quoted name: names may hold spaces, and a file can define them. */
	CHECK_STR(diag_for("reserve \"video player\" policy=idle"), "");
	CHECK_STR(diag_for("reserve \"\" policy=idle"), "t:1:9: reserve names are 1 to 63 bytes");

	/* A bad line is skipped with its position, and the rest of the file loads. */
	struct diags d = { 0 };
	struct qos_rules *r = qos_rules_create();
	int errs = qos_rules_parse_string(r, "f.rc",
			"reserve a policy=idle\n  reserve b policy=bogus\nreserve c policy=pause\n", collect,
			&d);
	CHECK(errs == 1 && d.n == 1);
	CHECK_STR(d.msg[0],
			"f.rc:2:20: bad value 'bogus' for policy: expected a policy (qos, "
			"fifo, rr, other, idle, pause)");
	CHECK_EQ_U(r->n_reserves, 2);
	CHECK(qos_rules_find_reserve(r, "c") != NULL);
	qos_rules_destroy(r);
}

/* A limit on other or idle without fallback= is a ceiling; qos and fifo drop to other. */
static void test_default_fallback(void) {
	struct qos_rules *r = parse_valid("reserve c policy=other period=50ms cpu=10%\n"
									  "reserve i policy=idle period=50ms cpu=10%\n"
									  "reserve q policy=qos period=50ms cpu=10%\n"
									  "reserve f policy=fifo priority=3 period=50ms cpu=10%\n");
	static const struct {
		const char *name;
		enum qos_policy fallback;
	} want[] = { { "c", QOS_POLICY_PAUSE }, { "i", QOS_POLICY_PAUSE }, { "q", QOS_POLICY_OTHER },
		{ "f", QOS_POLICY_OTHER } };
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct qos_reserve_def *d = qos_rules_find_reserve(r, want[i].name);
		CHECK(d && d->params.fallback == want[i].fallback);
	}
	qos_rules_destroy(r);
}

static void test_thesis_example(void) {
	struct diags d = { 0 };
	struct qos_rules *r = qos_rules_create();
	int errs = qos_rules_parse_file(r, QOSWAY_SOURCE_CONFIG "/qosrc", collect, &d);
	CHECK(errs == 0);
	for (int i = 0; i < d.n && i < 16; i++) {
		fprintf(stderr, "unexpected: %s\n", d.msg[i]);
	}
	static const struct {
		const char *name;
		enum qos_policy policy, fallback;
		uint64_t period, slice;
	} want[] = {
		{ "default", QOS_POLICY_QOS, QOS_POLICY_OTHER, 50000, 25000 },
		{ "ui", QOS_POLICY_QOS, QOS_POLICY_OTHER, 50000, 2500 },
		{ "idle", QOS_POLICY_IDLE, QOS_POLICY_IDLE, 0, 0 },
		{ "pause", QOS_POLICY_PAUSE, QOS_POLICY_PAUSE, 0, 0 },
		{ "fifo", QOS_POLICY_FIFO, QOS_POLICY_OTHER, 50000, 45000 },
		{ "safe", QOS_POLICY_FIFO, QOS_POLICY_OTHER, 50000, 45000 },
		{ "ceiling", QOS_POLICY_OTHER, QOS_POLICY_PAUSE, 50000, 37500 },
	};
	CHECK_EQ_U(r->n_reserves, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct qos_reserve_def *def = qos_rules_find_reserve(r, want[i].name);
		CHECK(def != NULL);
		if (!def) {
			continue;
		}
		CHECK(def->params.policy == want[i].policy);
		CHECK(def->params.fallback == want[i].fallback);
		CHECK_EQ_U(def->params.period_us, want[i].period);
		CHECK_EQ_U(def->params.slice_us, want[i].slice);
	}
	const struct qos_reserve_def *fifo = qos_rules_find_reserve(r, "fifo");
	CHECK(fifo && fifo->params.priority == 30);

	/*
	 * Every field of every program rule: a wrong policy, share, fallback or
	 * flag in config/qosrc must fail here, not only a missing line.
	 */
	static const struct {
		const char *exe, *cmdline;
		const char *reserve;
		enum qos_policy policy, fallback;
		uint64_t period, slice;
		int nice, priority;
		bool auto_apply, inherit;
	} rules[] = {
		{ "/usr/bin/xmms", "xmms song.mp3", "", QOS_POLICY_QOS, QOS_POLICY_PAUSE, 50000, 25000, 0,
				1, true, true },
		{ NULL, "kmp3", "", QOS_POLICY_QOS, QOS_POLICY_OTHER, 50000, 12500, 0, 1, true, true },
		{ NULL, "xanim", "", QOS_POLICY_FIFO, QOS_POLICY_OTHER, 50000, 25000, 0, 30, true, true },
		{ NULL, "/opt/realplayer/realplay x.rm", "", QOS_POLICY_OTHER, QOS_POLICY_IDLE, 50000,
				45000, -20, 1, true, true },
		{ NULL, "xlock", "", QOS_POLICY_OTHER, QOS_POLICY_IDLE, 100000, 10000, 0, 1, true, true },
		{ NULL, "krecord", "fifo", 0, 0, 0, 0, 0, 0, true, true },
		{ NULL, "kmedia", "fifo", 0, 0, 0, 0, 0, 0, true, true },
	};
	/* No catch-all: the real-time button sizes a reserve to anything else. */
	CHECK(qos_rules_match(r, NULL, "xterm -e vi", NULL) == NULL);
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		const struct qos_rule *m = qos_rules_match(r, rules[i].exe, rules[i].cmdline, NULL);
		CHECK(m != NULL);
		if (!m) {
			continue;
		}
		if (strcmp(m->reserve, rules[i].reserve) != 0 || m->auto_apply != rules[i].auto_apply ||
				m->params.inherit != rules[i].inherit) {
			fprintf(stderr, "rule for '%s': reserve '%s' auto %d inherit %d\n", rules[i].cmdline,
					m->reserve, m->auto_apply, m->params.inherit);
		}
		CHECK(strcmp(m->reserve, rules[i].reserve) == 0);
		CHECK(m->auto_apply == rules[i].auto_apply);
		CHECK(m->params.inherit == rules[i].inherit);
		if (rules[i].reserve[0]) {
			continue;
		}
		const struct qos_params *p = &m->params;
		if (p->policy != rules[i].policy || p->fallback != rules[i].fallback ||
				p->period_us != rules[i].period || p->slice_us != rules[i].slice ||
				p->nice != rules[i].nice || p->priority != rules[i].priority) {
			fprintf(stderr, "rule for '%s': %s/%s %llu/%llu nice %d priority %d\n",
					rules[i].cmdline, qos_policy_name(p->policy), qos_policy_name(p->fallback),
					(unsigned long long)p->period_us, (unsigned long long)p->slice_us, p->nice,
					p->priority);
		}
		CHECK(p->policy == rules[i].policy);
		CHECK(p->fallback == rules[i].fallback);
		CHECK_EQ_U(p->period_us, rules[i].period);
		CHECK_EQ_U(p->slice_us, rules[i].slice);
		CHECK(p->nice == rules[i].nice);
		CHECK(p->priority == rules[i].priority);
	}
	qos_rules_destroy(r);
}

static void write_file(const char *path, const char *text) {
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void test_layering(void) {
	char dir[] = "/tmp/qos-rules-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char sys[64], etc[64], user[64], missing[64];
	snprintf(sys, sizeof(sys), "%s/sys", dir);
	snprintf(etc, sizeof(etc), "%s/etc", dir);
	snprintf(user, sizeof(user), "%s/user", dir);
	snprintf(missing, sizeof(missing), "%s/none", dir);
	write_file(sys,
			"reserve ui policy=qos period=50ms cpu=5% fallback=other\n"
			"rule exe=* reserve=ui\n"
			"rule exe=mpv reserve=\"video player\"\n"
			"rule exe=vlc reserve=vidoe\n");
	write_file(etc,
			"reserve ui policy=qos period=20ms cpu=10% fallback=pause\n"
			"reserve \"video player\" policy=idle\n");
	write_file(user, "rule exe=foot policy=other nice=-5\nbroken line\n");
	const char *paths[] = { sys, missing, etc, user };
	struct diags d = { 0 };
	struct qos_rules *r = qos_rules_load(paths, 4, collect, &d);
	CHECK(r != NULL);
	/* The bad line, then (after every layer) the rule whose reserve none defines:
	 * a warning, which skips nothing. */
	CHECK(d.n == 2);
	CHECK(strstr(d.msg[0], "/user:2:1: unknown item 'broken'") != NULL);
	CHECK(strstr(d.msg[1], "/sys:4:14: warning: reserve=vidoe names no reserve") != NULL);
	if (r) {
		CHECK_EQ_U(r->n_errors, 1);
		const struct qos_reserve_def *vp = qos_rules_find_reserve(r, "video player");
		CHECK(vp && vp->params.policy == QOS_POLICY_IDLE);
		const struct qos_rule *mpv = qos_rules_match(r, "/usr/bin/mpv", NULL, NULL);
		CHECK(mpv && strcmp(mpv->reserve, "video player") == 0);
		const struct qos_reserve_def *ui = qos_rules_find_reserve(r, "ui");
		CHECK(ui && ui->params.period_us == 20000 && ui->params.slice_us == 2000);
		const struct qos_rule *m = qos_rules_match(r, "/usr/bin/foot", NULL, NULL);
		CHECK(m && m->params.nice == -5);
		m = qos_rules_match(r, "/usr/bin/xterm", NULL, NULL);
		CHECK(m && strcmp(m->reserve, "ui") == 0);
	}
	/* A reload where nothing is valid fails, so the caller keeps r. */
	write_file(user, "garbage\nmore garbage\n");
	const char *bad[] = { user, missing };
	memset(&d, 0, sizeof(d));
	CHECK(qos_rules_load(bad, 2, collect, &d) == NULL);
	CHECK(d.n == 2);
	const char *none[] = { missing };
	CHECK(qos_rules_load(none, 1, collect, &d) == NULL);
	qos_rules_destroy(r);

	char *def[3];
	setenv("XDG_CONFIG_HOME", "/x/cfg", 1);
	size_t n = qos_rules_default_paths("/usr/share/qosway", "/opt/etc/qosway", def);
	CHECK_EQ_U(n, 3);
	if (n == 3) {
		CHECK_STR(def[0], "/usr/share/qosway/qosrc");
		CHECK_STR(def[1], "/opt/etc/qosway/qosrc");
		CHECK_STR(def[2], "/x/cfg/qosway/qosrc");
	}
	while (n > 0) {
		free(def[--n]);
	}
	/* Empty or relative XDG_CONFIG_HOME is ignored for $HOME/.config; no HOME, no user file. */
	static const char *const ignored[] = { "", "relative/cfg" };
	for (size_t i = 0; i < 2; i++) {
		setenv("XDG_CONFIG_HOME", ignored[i], 1);
		setenv("HOME", "/home/u", 1);
		n = qos_rules_default_paths("/d", "/e", def);
		CHECK_EQ_U(n, 3);
		if (n == 3) {
			CHECK_STR(def[2], "/home/u/.config/qosway/qosrc");
		}
		while (n > 0) {
			free(def[--n]);
		}
	}
	unsetenv("HOME");
	CHECK_EQ_U((n = qos_rules_default_paths("/d", "/e", def)), 2);
	while (n > 0) {
		free(def[--n]);
	}
	unlink(sys);
	unlink(etc);
	unlink(user);
	rmdir(dir);
}

/*
 * Damage a file can carry: a NUL byte costs only its line, control bytes are
 * shown escaped, and what cannot be read whole is refused by name.
 */
static void test_file_damage(void) {
	char dir[] = "/tmp/qos-rules-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char path[64];
	snprintf(path, sizeof(path), "%s/qosrc", dir);
	static const char text[] = "reserve a policy=idle\n"
							   "reserve b policy=\0idle\n"
							   "reserve c policy=\x1b[2J\n"
							   "reserve d policy=pause\n";
	FILE *f = fopen(path, "w");
	CHECK(f && fwrite(text, 1, sizeof(text) - 1, f) == sizeof(text) - 1);
	if (f) {
		fclose(f);
	}
	struct diags d = { 0 };
	struct qos_rules *r = qos_rules_create();
	CHECK(qos_rules_parse_file(r, path, collect, &d) == 2);
	CHECK(d.n == 2);
	CHECK(strstr(d.msg[0], "/qosrc:2:18: NUL byte in the line") != NULL);
	CHECK(strstr(d.msg[1], "/qosrc:3:18: bad value '\\x1b[2J' for policy") != NULL);
	CHECK(qos_rules_find_reserve(r, "a") && qos_rules_find_reserve(r, "d"));
	CHECK(!qos_rules_find_reserve(r, "b") && !qos_rules_find_reserve(r, "c"));
	qos_rules_destroy(r);

	/* A directory opens but cannot be read. */
	memset(&d, 0, sizeof(d));
	r = qos_rules_create();
	CHECK(qos_rules_parse_file(r, dir, collect, &d) == -1);
	CHECK(d.n == 1 && strstr(d.msg[0], ":0:0: cannot read: Is a directory") != NULL);
	qos_rules_destroy(r);

	/* Over 8 MiB: none of it, not a prefix cut mid-line. */
	f = fopen(path, "w");
	CHECK(f != NULL);
	for (int i = 0; f && i < (8 << 20) / 20 + 1; i++) {
		fputs("reserve x policy=idle\n", f);
	}
	if (f) {
		fclose(f);
	}
	memset(&d, 0, sizeof(d));
	r = qos_rules_create();
	CHECK(qos_rules_parse_file(r, path, collect, &d) == -1);
	CHECK(d.n == 1 && strstr(d.msg[0], "/qosrc:0:0: larger than 8 MiB; not loaded"));
	CHECK(r->n_reserves == 0);
	qos_rules_destroy(r);

	/* Exactly at the bound still loads. */
	f = fopen(path, "w");
	CHECK(f != NULL);
	static const char line[] = "reserve x policy=idle #..........................\n";
	size_t n = sizeof(line) - 1, written = 0;
	for (; f && written + n <= (8u << 20); written += n) {
		fputs(line, f);
	}
	for (; f && written < (8u << 20); written++) {
		fputc('\n', f);
	}
	if (f) {
		fclose(f);
	}
	memset(&d, 0, sizeof(d));
	r = qos_rules_create();
	CHECK(qos_rules_parse_file(r, path, collect, &d) == 0 && d.n == 0);
	CHECK(qos_rules_find_reserve(r, "x") != NULL);
	qos_rules_destroy(r);

	unlink(path);
	rmdir(dir);
}

/* Per-app protocol limits: defaults, per-key layering, no shadowing of placement. */
static void test_app_limits(void) {
	const char *text = "rule exe=/usr/bin/mpv policy=qos period=20ms cpu=30%\n"
					   "rule exe=mpv allow=qos,fifo,pause max-cpu=80%\n"
					   "rule cmdline=\"mpv --quiet*\" redefine=yes\n"
					   "rule exe=greedy allow=idle max-cpu=0\n";
	struct qos_rules *r = parse_valid(text);
	struct qos_app_limits l;
	qos_rules_app_limits(NULL, "/usr/bin/foot", NULL, NULL, &l);
	CHECK(l.max_cpu_ppm == 500000 && !l.redefine);
	CHECK(l.allow == (1u << QOS_POLICY_QOS | 1u << QOS_POLICY_OTHER | 1u << QOS_POLICY_IDLE));
	qos_rules_app_limits(r, "/usr/bin/mpv", "mpv a.mkv", NULL, &l);
	CHECK(l.max_cpu_ppm == 800000 && !l.redefine);
	CHECK(l.allow ==
			(1u << QOS_POLICY_QOS | 1u << QOS_POLICY_FIFO | 1u << QOS_POLICY_PAUSE |
					1u << QOS_POLICY_OTHER));
	/* A later rule overrides only the keys it gives. */
	qos_rules_app_limits(r, "/usr/bin/mpv", "mpv --quiet a.mkv", NULL, &l);
	CHECK(l.max_cpu_ppm == 800000 && l.redefine && (l.allow & (1u << QOS_POLICY_FIFO)));
	/* other can never be taken away. */
	qos_rules_app_limits(r, "/opt/greedy", "greedy", NULL, &l);
	CHECK(l.max_cpu_ppm == 0 && l.allow == (1u << QOS_POLICY_IDLE | 1u << QOS_POLICY_OTHER));
	/* Limits-only rules never shadow the rule that places the program. */
	const struct qos_rule *m = qos_rules_match(r, "/usr/bin/mpv", "mpv --quiet x", NULL);
	CHECK(m && m->line == 1 && m->params.policy == QOS_POLICY_QOS);
	CHECK(qos_rules_match(r, "/opt/greedy", "greedy", NULL) == NULL);
	qos_rules_destroy(r);
}

/* The adaptation, idle-release and vblank keys, and every refusal of them. */
static void test_adapt_keys(void) {
	struct qos_rules *r = parse_valid(
			"reserve a policy=qos period=20ms cpu=auto\n"
			"reserve b policy=qos period=vblank cpu=auto adapt=yes cpu-min=5% cpu-max=40%\n"
			"reserve c policy=qos period=10ms slice=2ms adapt=yes idle-release=50\n"
			"reserve d policy=other period=100ms cpu=auto slice=30ms\n"
			"rule app_id=game policy=qos period=vblank cpu=auto adapt=yes cpu-max=60% "
			"idle-release=120\n");
	const struct qos_reserve_def *a = qos_rules_find_reserve(r, "a");
	CHECK(a && a->params.adapt.auto_slice && !a->params.adapt.continuous);
	CHECK(a && a->params.slice_us == 10000); /* provisional: half the period */
	const struct qos_reserve_def *b = qos_rules_find_reserve(r, "b");
	CHECK(b && b->params.period_vblank && b->params.period_us == QOS_VBLANK_DEFAULT_US);
	CHECK(b && b->params.adapt.min_ppm == 50000 && b->params.adapt.max_ppm == 400000);
	CHECK(b && b->params.slice_us == 6667); /* capped by cpu-max */
	const struct qos_reserve_def *c = qos_rules_find_reserve(r, "c");
	CHECK(c && c->params.adapt.continuous && c->params.idle_periods == 50);
	const struct qos_reserve_def *d = qos_rules_find_reserve(r, "d");
	CHECK(d && d->params.slice_us == 30000 && d->params.fallback == QOS_POLICY_PAUSE);
	qos_rules_destroy(r);

	CHECK_STR(diag_for("reserve x policy=idle period=20ms cpu=auto"),
			"t:1:35: cpu=auto does not apply to policy idle: it has no share worth sizing");
	CHECK_STR(diag_for("reserve x policy=pause adapt=yes"),
			"t:1:24: adapt=yes does not apply to policy pause: it has no share worth sizing");
	CHECK_STR(diag_for("reserve x policy=qos cpu=auto"), "t:1:22: cpu=auto needs a period=");
	CHECK_STR(diag_for("reserve x policy=other adapt=yes"), "t:1:24: adapt=yes needs a period");
	CHECK_STR(diag_for("reserve x policy=qos period=20ms cpu=auto cpu-min=50% cpu-max=20%"),
			"t:1:43: cpu-min exceeds cpu-max");
	CHECK_STR(diag_for("reserve x policy=qos period=20ms cpu=auto cpu-max=150%"),
			"t:1:43: cpu-max must stay within the period (one CPU)");
	CHECK_STR(diag_for("reserve x policy=fifo period=20ms cpu=auto cpu-max=100%"),
			"t:1:44: cpu-max must stay below the period (one CPU)");
	CHECK_STR(diag_for("reserve x policy=qos period=1ms cpu=auto cpu-min=0.01%"),
			"t:1:42: cpu-min gives less than 1us of the period");
	CHECK_STR(diag_for("reserve x policy=qos period=20ms slice=5ms cpu-min=10%"),
			"t:1:44: cpu-min bounds adaptation: it needs cpu=auto or adapt=yes");
	CHECK_STR(diag_for("reserve x policy=qos period=20ms cpu=auto cpu-max=lots"),
			"t:1:51: bad value 'lots' for cpu-max: expected a percentage of one CPU such as 25%");
	CHECK_STR(diag_for("reserve x policy=qos period=20ms cpu=auto cpu-min=0%"),
			"t:1:51: bad value '0%' for cpu-min: expected a percentage of one CPU such as 25%");
	CHECK_STR(diag_for("reserve x policy=other period=20ms cpu=10% idle-release=5"),
			"t:1:44: idle-release gives back admitted capacity: policy qos only");
	CHECK_STR(diag_for("reserve x policy=qos period=20ms cpu=10% fallback=pause idle-release=5"),
			"t:1:57: idle-release needs a fallback other than pause: released members run at "
			"it, and frozen ones could never be seen waking");
	CHECK_STR(diag_for("reserve x policy=qos period=20ms cpu=10% idle-release=-1"),
			"t:1:55: bad value '-1' for idle-release: expected a number of periods in "
			"0..1000000");
	CHECK_STR(diag_for("reserve x policy=qos period=20ms cpu=10% adapt=sometimes"),
			"t:1:48: bad value 'sometimes' for adapt: expected yes or no");
	CHECK_STR(diag_for("reserve x policy=qos period=never cpu=10%"),
			"t:1:29: bad value 'never' for period: expected a duration such as 20ms, or vblank");
	CHECK_STR(diag_for("reserve x policy=qos period=vblank"),
			"t:1:22: period= needs a cpu= (or cpu=auto) or slice=");
	CHECK_STR(diag_for("reserve x policy=qos period=20ms cpu=auto cpu=auto"),
			"t:1:43: 'cpu' given twice");
}

int main(void) {
	test_adapt_keys();
	test_app_limits();
	test_valid();
	test_invalid();
	test_default_fallback();
	test_thesis_example();
	test_layering();
	test_file_damage();
	return check_report("test_rules");
}
