/* Unit tests for the compositor's configuration parser. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wlr/types/wlr_keyboard.h>

#include "config/config.h"
#include "config/output_config.h"
#include "check.h"
#include "mutate.h"
#include "qos/params.h"

static bool apply(struct qw_config *c, const char *line, char *msg) {
	return config_apply_line(c, line, msg, 256);
}

static const struct qw_binding *find_binding(struct qw_config *c, uint32_t mods, xkb_keysym_t sym) {
	for (size_t i = 0; i < c->binding_count; i++) {
		if (c->bindings[i].modifiers == mods && c->bindings[i].keysym == sym) {
			return &c->bindings[i];
		}
	}
	return NULL;
}

static void test_defaults(void) {
	struct qw_config c;
	config_init_defaults(&c);
	CHECK(c.output_width == 1920 && c.output_height == 1080);
	CHECK(c.output_refresh_mhz == 60000);
	CHECK(strcmp(c.terminal, "foot") == 0);
	CHECK(c.button_count == 4);
	CHECK(c.buttons[0] == QW_BUTTON_REALTIME && c.buttons[3] == QW_BUTTON_CLOSE);
	const struct qw_binding *b = find_binding(&c, WLR_MODIFIER_LOGO, XKB_KEY_Return);
	CHECK(b && b->action == QW_ACTION_TERMINAL);
	b = find_binding(&c, WLR_MODIFIER_LOGO | WLR_MODIFIER_SHIFT, XKB_KEY_e);
	CHECK(b && b->action == QW_ACTION_EXIT);
	CHECK(find_binding(&c, WLR_MODIFIER_LOGO, XKB_KEY_q) != NULL);
	CHECK(find_binding(&c, WLR_MODIFIER_LOGO, XKB_KEY_Tab) != NULL);
	b = find_binding(&c, WLR_MODIFIER_LOGO, XKB_KEY_3);
	CHECK(b && b->action == QW_ACTION_WORKSPACE && strcmp(b->arg, "3") == 0);
	b = find_binding(&c, WLR_MODIFIER_LOGO | WLR_MODIFIER_SHIFT, XKB_KEY_0);
	CHECK(b && b->action == QW_ACTION_MOVE_TO_WORKSPACE && strcmp(b->arg, "10") == 0);
	config_finish(&c);
}

static void test_valid_lines(void) {
	struct qw_config c;
	char msg[256] = "";
	config_init_defaults(&c);
	CHECK(apply(&c, "", msg));
	CHECK(apply(&c, "   # a comment", msg));
	CHECK(apply(&c, "output-mode 1280x720@75", msg));
	CHECK(c.output_width == 1280 && c.output_height == 720 && c.output_refresh_mhz == 75000);
	CHECK(apply(&c, "output-mode 800x600", msg));
	CHECK(c.output_refresh_mhz == 60000);
	CHECK(apply(&c, "output-mode 2560x1440@59.951Hz", msg));
	CHECK(c.output_width == 2560 && c.output_refresh_mhz == 59951);
	CHECK(apply(&c, "output-mode 64x64@1000", msg) && c.output_refresh_mhz == 1000000);
	CHECK(apply(&c, "terminal foot -e htop  # trailing comment", msg));
	CHECK(strcmp(c.terminal, "foot -e htop") == 0);
	CHECK(apply(&c, "font Monospace Bold 12", msg));
	CHECK(strcmp(c.font, "Monospace Bold 12") == 0);
	/* The real-time button's standard reserve: sized to the program by default. */
	CHECK(c.realtime_cpu_ppm == 0 && c.realtime_period_us == 0 && c.realtime_idle_release == 120);
	CHECK(apply(&c, "realtime-cpu 30%", msg) && c.realtime_cpu_ppm == 300000);
	CHECK(apply(&c, "realtime-cpu auto", msg) && c.realtime_cpu_ppm == 0);
	CHECK(apply(&c, "realtime-period 10ms", msg) && c.realtime_period_us == 10000);
	CHECK(apply(&c, "realtime-period vblank", msg) && c.realtime_period_us == 0);
	CHECK(apply(&c, "realtime-idle-release 0", msg) && c.realtime_idle_release == 0);
	CHECK(apply(&c, "titlebar-height 30", msg) && c.titlebar_height == 30);
	CHECK(apply(&c, "border-width 0", msg) && c.border_width == 0);
	CHECK(apply(&c, "color titlebar-focused #ff0000", msg));
	CHECK(c.colors[QW_COLOR_TITLEBAR_FOCUSED][0] == 1.0f &&
			c.colors[QW_COLOR_TITLEBAR_FOCUSED][1] == 0.0f);
	CHECK(apply(&c, "color button-on #00ff0080", msg));
	CHECK(c.colors[QW_COLOR_BUTTON_ON][3] > 0.49f && c.colors[QW_COLOR_BUTTON_ON][3] < 0.51f);
	CHECK(apply(&c, "buttons close pause", msg));
	CHECK(c.button_count == 2 && c.buttons[0] == QW_BUTTON_CLOSE);
	CHECK(apply(&c, "bind Super+Shift+Return exec foot -e top", msg));
	const struct qw_binding *b =
			find_binding(&c, WLR_MODIFIER_LOGO | WLR_MODIFIER_SHIFT, XKB_KEY_Return);
	CHECK(b && b->action == QW_ACTION_EXEC && strcmp(b->arg, "foot -e top") == 0);
	/* A later binding of the same keys replaces the earlier one. */
	size_t n = c.binding_count;
	CHECK(apply(&c, "bind Super+Q maximize", msg));
	CHECK(c.binding_count == n);
	b = find_binding(&c, WLR_MODIFIER_LOGO, XKB_KEY_q);
	CHECK(b && b->action == QW_ACTION_MAXIMIZE);
	config_finish(&c);
}

static bool same_str(const char *a, const char *b) {
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool same_outputs(const struct qw_config *a, const struct qw_config *b) {
	if (a->output_count != b->output_count || !same_str(a->output_block, b->output_block)) {
		return false;
	}
	for (size_t i = 0; i < a->output_count; i++) {
		const struct qw_output_config *x = &a->outputs[i], *y = &b->outputs[i];
		if (!same_str(x->name, y->name) || x->has_mode != y->has_mode || x->width != y->width ||
				x->height != y->height || x->refresh_mhz != y->refresh_mhz ||
				x->has_position != y->has_position || x->x != y->x || x->y != y->y ||
				x->scale != y->scale || x->transform != y->transform || x->enabled != y->enabled) {
			return false;
		}
	}
	return true;
}

static bool same_bindings(const struct qw_config *a, const struct qw_config *b) {
	if (a->binding_count != b->binding_count) {
		return false;
	}
	for (size_t i = 0; i < a->binding_count; i++) {
		const struct qw_binding *x = &a->bindings[i], *y = &b->bindings[i];
		if (x->modifiers != y->modifiers || x->keysym != y->keysym || x->action != y->action ||
				!same_str(x->arg, y->arg)) {
			return false;
		}
	}
	return true;
}

/* Every setting a line can change, compared (error_count aside). */
static bool same_settings(const struct qw_config *a, const struct qw_config *b) {
	return same_bindings(a, b) && a->csd_buttons == b->csd_buttons && a->xwayland == b->xwayland &&
			a->taskbar_class == b->taskbar_class && a->qos_other_users == b->qos_other_users &&
			a->inactive_timeout_s == b->inactive_timeout_s &&
			a->inactive_class == b->inactive_class && a->output_width == b->output_width &&
			a->output_height == b->output_height &&
			a->output_refresh_mhz == b->output_refresh_mhz && same_str(a->terminal, b->terminal) &&
			same_str(a->font, b->font) && a->titlebar_height == b->titlebar_height &&
			a->border_width == b->border_width && a->cascade_step == b->cascade_step &&
			a->button_count == b->button_count &&
			memcmp(a->buttons, b->buttons, sizeof(a->buttons)) == 0 &&
			memcmp(a->colors, b->colors, sizeof(a->colors)) == 0 &&
			a->binding_count == b->binding_count && a->realtime_cpu_ppm == b->realtime_cpu_ppm &&
			a->realtime_period_us == b->realtime_period_us &&
			a->realtime_fallback == b->realtime_fallback &&
			a->realtime_idle_release == b->realtime_idle_release &&
			a->qos_reserved_ppm == b->qos_reserved_ppm &&
			memcmp(&a->scheduling, &b->scheduling, sizeof(a->scheduling)) == 0 &&
			a->in_scheduling_block == b->in_scheduling_block && same_outputs(a, b);
}

static void test_invalid_lines(void) {
	static const struct {
		const char *line;
		const char *expect; /* substring of the message */
	} cases[] = {
		{ "bogus 1", "unknown setting 'bogus'" },
		{ "output-mode 1920", "output-mode wants" },
		{ "output-mode 10x10", "output-mode wants" },
		{ "output-mode 1920x1080@abc", "output-mode wants" },
		/* sscanf and strtod took these; "@nan" gave a refresh rate of INT_MIN */
		{ "output-mode 1920x1080@nan", "output-mode wants" },
		{ "output-mode 1920x1080@6e1", "output-mode wants" },
		{ "output-mode +1920x1080", "output-mode wants" },
		{ "output-mode 1920x+1080", "output-mode wants" },
		{ "output-mode 1920.5x1080", "output-mode wants" },
		{ "output-mode 4294969216x1080", "output-mode wants" },
		{ "output-mode 1920x1080@1000.0005", "output-mode wants" },
		{ "output-mode 1920x1080@0.999", "output-mode wants" },
		{ "titlebar-height 5", "from 12 to 128" },
		{ "titlebar-height x", "from 12 to 128" },
		{ "border-width -1", "from 0 to 32" },
		{ "color titlebar-focused red", "bad colour" },
		{ "color nosuch #ffffff", "unknown colour name" },
		{ "color titlebar-focused", "usage: color" },
		{ "buttons realtime sparkle", "unknown button 'sparkle'" },
		{ "buttons close close", "listed twice" },
		{ "realtime-cpu automatic", "realtime-cpu wants auto or a share" },
		{ "realtime-period vsync", "realtime-period wants vblank or 1ms" },
		{ "realtime-idle-release -1", "realtime-idle-release wants a number" },
		{ "realtime-idle-release 10 20", "realtime-idle-release wants a number" },
		{ "bind Hyper+x exit", "unknown modifier 'Hyper'" },
		{ "bind Super+NoSuchKey exit", "unknown key" },
		{ "bind Super+x", "usage: bind" },
		{ "bind Super+x exec", "needs a command" },
		{ "bind Super+x exit now", "takes no arguments" },
		{ "bind Super+x dance", "unknown action 'dance'" },
		{ "terminal", "needs a value" },
		{ "scheduling", "scheduling wants on, off" },
		{ "scheduling fast", "unknown scheduling setting 'fast'" },
		{ "scheduling boost", "scheduling boost wants on or off" },
		{ "scheduling boost maybe", "scheduling boost wants on or off" },
		{ "scheduling bill on off", "takes one value" },
		{ "scheduling off now", "takes nothing after it" },
		{ "scheduling hidden-frame-rate 0", "hidden-frame-rate wants 1 to 1000" },
		{ "scheduling hidden-frame-rate 10x", "hidden-frame-rate wants 1 to 1000" },
		{ "scheduling { serve-by-reserve off", "text after '{'" },
		{ "}", "unknown setting '}'" },
		/* A value followed by junk: the value must not be taken either. */
		{ "titlebar-height 40 junk", "from 12 to 128" },
		{ "border-width 5 junk", "from 0 to 32" },
		{ "cascade-step 64 junk", "from 0 to 512" },
		{ "taskbar-class on junk", "taskbar-class wants on or off" },
		{ "qos-other-users on junk", "qos-other-users wants on or off" },
		{ "output-mode 1280x720@75 junk", "output-mode wants" },
		{ "csd-buttons none junk", "csd-buttons wants" },
		{ "xwayland disable junk", "xwayland wants" },
		{ "inactive-timeout 20 junk", "inactive-timeout wants" },
		{ "inactive-class idle junk", "inactive-class wants" },
		{ "realtime-cpu 50% junk", "realtime-cpu wants" },
		{ "realtime-period 10ms junk", "realtime-period wants" },
		{ "realtime-fallback idle junk", "realtime-fallback wants" },
		{ "qos-reserved 20% junk", "qos-reserved wants" },
		{ "color titlebar-focused #ff0000 junk", "usage: color" },
		{ "scheduling boost off junk", "takes one value" },
		{ "output HEADLESS-1 scale 2 junk", "output scale wants" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct qw_config c;
		char msg[256] = "";
		config_init_defaults(&c);
		bool ok = apply(&c, cases[i].line, msg);
		if (ok || !strstr(msg, cases[i].expect)) {
			fprintf(stderr, "line '%s': ok=%d msg='%s', want '%s'\n", cases[i].line, ok, msg,
					cases[i].expect);
			check_failures++;
		}
		/* A rejected line leaves the defaults untouched, in part neither. */
		struct qw_config d;
		config_init_defaults(&d);
		CHECK(same_settings(&c, &d));
		config_finish(&d);
		config_finish(&c);
	}
}

static void test_outputs(void) {
	struct qw_config c;
	char msg[256];
	config_init_defaults(&c);
	CHECK(apply(&c, "output HEADLESS-1 {", msg));
	CHECK(apply(&c, "mode 1280x720@30", msg));
	CHECK(apply(&c, "position 100,-50", msg));
	CHECK(apply(&c, "scale 1.5", msg));
	CHECK(apply(&c, "transform flipped-90", msg));
	CHECK(apply(&c, "disable", msg));
	CHECK(apply(&c, "}", msg));
	CHECK(apply(&c, "output DP-2 position 1920 0", msg));
	CHECK(apply(&c, "output DP-2 enable", msg));
	const struct qw_output_config *oc = output_config_find(&c, "HEADLESS-1");
	CHECK(oc && oc->has_mode && oc->width == 1280 && oc->height == 720);
	CHECK(oc && oc->refresh_mhz == 30000 && oc->has_position && oc->x == 100 && oc->y == -50);
	CHECK(oc && oc->scale == 1.5f && oc->transform == 5 && oc->enabled == 0);
	oc = output_config_find(&c, "DP-2");
	CHECK(oc && oc->has_position && oc->x == 1920 && oc->y == 0 && oc->enabled == 1);
	CHECK(oc && !oc->has_mode && oc->scale == 0 && oc->transform == -1);
	CHECK(!output_config_find(&c, "DP-3"));
	/* Later settings override key by key; a bad one changes nothing. */
	CHECK(apply(&c, "output HEADLESS-1 scale 2", msg));
	CHECK(!apply(&c, "output HEADLESS-1 scale 0.1", msg) && strstr(msg, "output scale wants"));
	CHECK(!apply(&c, "output HEADLESS-1 scale 9", msg) && strstr(msg, "output scale wants"));
	CHECK(!apply(&c, "output HEADLESS-1 transform 45", msg) &&
			strstr(msg, "output transform wants"));
	CHECK(!apply(&c, "output HEADLESS-1 mode big", msg) && strstr(msg, "output mode wants"));
	CHECK(!apply(&c, "output HEADLESS-1 position 1,2,3", msg) &&
			strstr(msg, "output position wants"));
	CHECK(!apply(&c, "output HEADLESS-1 position 1.5,2", msg));
	CHECK(!apply(&c, "output HEADLESS-1 disable now", msg) && strstr(msg, "takes nothing"));
	CHECK(!apply(&c, "output HEADLESS-1 rotate 90", msg) &&
			strstr(msg, "unknown output setting 'rotate'"));
	CHECK(!apply(&c, "output HEADLESS-1", msg) && strstr(msg, "wants a setting"));
	CHECK(!apply(&c, "output", msg) && strstr(msg, "connector name"));
	CHECK(!apply(&c, "output { mode 1x1", msg) && strstr(msg, "connector name"));
	CHECK(!apply(&c, "output X { mode 1920x1080", msg) && strstr(msg, "text after '{'"));
	CHECK(!output_config_find(&c, "X"));
	oc = output_config_find(&c, "HEADLESS-1");
	CHECK(oc && oc->scale == 2.0f && oc->transform == 5 && oc->width == 1280);
	CHECK(strcmp(output_transform_name(5), "flipped-90") == 0);
	CHECK(strcmp(output_transform_name(99), "?") == 0);
	config_finish(&c);
}

static void test_file_errors(void) {
	const char *dir = getenv("QOSWAY_TEST_TMP");
	char path[4096];
	snprintf(path, sizeof(path), "%s/test-config-%d", dir ? dir : "/tmp", (int)getpid());
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	if (!f) {
		return;
	}
	fputs("# test\ntitlebar-height 40\nnot-a-setting\nborder-width 99\nfont Serif 9\n", f);
	fclose(f);
	char *out = NULL;
	size_t out_len = 0;
	FILE *err = open_memstream(&out, &out_len);
	struct qw_config c;
	config_init_defaults(&c);
	CHECK(config_load_file(&c, path, err));
	fclose(err);
	CHECK(c.titlebar_height == 40);
	CHECK(strcmp(c.font, "Serif 9") == 0);
	CHECK(c.border_width == 2);
	CHECK(c.error_count == 2);
	char want[4200];
	snprintf(want, sizeof(want), "%s:3: unknown setting 'not-a-setting'", path);
	CHECK(out && strstr(out, want));
	snprintf(want, sizeof(want), "%s:4: border-width wants", path);
	CHECK(out && strstr(out, want));
	free(out);
	config_finish(&c);
	remove(path);

	config_init_defaults(&c);
	err = fopen("/dev/null", "w");
	CHECK(!config_load_file(&c, "/nonexistent/qosway.conf", err));
	fclose(err);
	config_finish(&c);

	/* A NUL byte costs its line, not silently the rest of it; control bytes
	 * are shown escaped; a directory is refused by name. */
	static const char damaged[] = "titlebar-height 40\0 junk\nfont \x1b]0;x\x07\n"
								  "bind Super+\x1b exit\nborder-width 5\n";
	f = fopen(path, "w");
	CHECK(f && fwrite(damaged, 1, sizeof(damaged) - 1, f) == sizeof(damaged) - 1);
	if (f) {
		fclose(f);
	}
	out = NULL;
	err = open_memstream(&out, &out_len);
	config_init_defaults(&c);
	CHECK(config_load_file(&c, path, err));
	fclose(err);
	CHECK(c.titlebar_height == 26 && c.border_width == 5 && c.error_count == 2);
	snprintf(want, sizeof(want), "%s:1: NUL byte in the line", path);
	CHECK(out && strstr(out, want));
	snprintf(want, sizeof(want), "%s:3: unknown key '\\x1b'", path);
	CHECK(out && strstr(out, want));
	for (const char *o = out; o && *o; o++) {
		CHECK(*o == '\n' || ((unsigned char)*o >= 0x20 && *o != 0x7f));
	}
	free(out);
	/* The font is free text: what it holds is the user's, kept as given. */
	CHECK(strcmp(c.font, "\x1b]0;x\x07") == 0);
	config_finish(&c);
	remove(path);

	out = NULL;
	err = open_memstream(&out, &out_len);
	config_init_defaults(&c);
	CHECK(!config_load_file(&c, dir ? dir : "/tmp", err));
	fclose(err);
	CHECK(out && strstr(out, ": cannot read: Is a directory"));
	free(out);
	config_finish(&c);
}

/* Whatever a line holds, the settings stay within what the compositor can use. */
static void check_sane(const struct qw_config *c) {
	CHECK(c->output_width >= 64 && c->output_width <= 16384);
	CHECK(c->output_height >= 64 && c->output_height <= 16384);
	CHECK(c->output_refresh_mhz >= 1000 && c->output_refresh_mhz <= 1000000);
	CHECK(c->terminal && c->terminal[0] && c->font && c->font[0]);
	CHECK(c->titlebar_height >= 12 && c->titlebar_height <= 128);
	CHECK(c->border_width >= 0 && c->border_width <= 32);
	CHECK(c->cascade_step >= 0 && c->cascade_step <= 512);
	CHECK(c->button_count <= QW_BUTTON_KIND_COUNT);
	for (size_t i = 0; i < c->button_count; i++) {
		CHECK(c->buttons[i] < QW_BUTTON_KIND_COUNT);
		for (size_t j = 0; j < i; j++) {
			CHECK(c->buttons[i] != c->buttons[j]);
		}
	}
	for (int i = 0; i < QW_COLOR_COUNT; i++) {
		for (int k = 0; k < 4; k++) {
			CHECK(c->colors[i][k] >= 0.0f && c->colors[i][k] <= 1.0f);
		}
	}
	for (size_t i = 0; i < c->binding_count; i++) {
		const struct qw_binding *b = &c->bindings[i];
		CHECK(b->keysym != XKB_KEY_NoSymbol && b->action <= QW_ACTION_MOVE_TO_WORKSPACE);
		CHECK(b->action != QW_ACTION_EXEC || (b->arg && b->arg[0]));
		if (b->action == QW_ACTION_WORKSPACE || b->action == QW_ACTION_MOVE_TO_WORKSPACE) {
			CHECK(b->arg && atoi(b->arg) >= 1 && atoi(b->arg) <= QW_WORKSPACE_COUNT);
		}
		for (size_t j = 0; j < i; j++) {
			CHECK(b->modifiers != c->bindings[j].modifiers || b->keysym != c->bindings[j].keysym);
		}
	}
	/* 0: auto, sized to the program; 0: vblank, its window's refresh. */
	CHECK(c->realtime_cpu_ppm <= 1000000);
	CHECK(c->realtime_period_us == 0 ||
			(c->realtime_period_us >= 1000 && c->realtime_period_us <= 10000000));
	CHECK(c->realtime_idle_release <= 100000);
	CHECK(c->realtime_fallback == QOS_POLICY_OTHER || c->realtime_fallback == QOS_POLICY_IDLE ||
			c->realtime_fallback == QOS_POLICY_PAUSE);
	CHECK(c->qos_reserved_ppm >= 50000 && c->qos_reserved_ppm <= 1000000);
}

/*
 * Seeded mutations of the shipped config's lines: no crash (the ASan build
 * runs this too), every refusal says why, and the
 * settings stay sane.  QOS_FUZZ_ITERATIONS and QOS_FUZZ_SEED as in test_fuzz.
 */
static void test_fuzz_lines(void) {
	char corpus[64][256];
	size_t n_corpus = 0;
	FILE *f = fopen(QOSWAY_SOURCE_CONFIG "/config", "r");
	CHECK(f != NULL);
	while (f && n_corpus < 64 && fgets(corpus[n_corpus], sizeof(corpus[0]), f)) {
		corpus[n_corpus][strcspn(corpus[n_corpus], "\n")] = '\0';
		if (corpus[n_corpus][0] && corpus[n_corpus][0] != '#') {
			n_corpus++;
		}
	}
	if (f) {
		fclose(f);
	}
	CHECK(n_corpus > 20);
	const char *env = getenv("QOS_FUZZ_ITERATIONS");
	int iterations = env ? atoi(env) : 100000;
	env = getenv("QOS_FUZZ_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : 0x9e3779b97f4a7c15ULL;
	rng_state = seed ? seed : 1;
	struct qw_config c;
	config_init_defaults(&c);
	static char line[TEXT_MAX + 1];
	for (int it = 0; it < iterations && n_corpus; it++) {
		size_t len = (size_t)snprintf(line, sizeof(line), "%s", corpus[below(n_corpus)]);
		for (size_t k = 1 + below(4); k > 0; k--) {
			mutate(line, &len, false);
		}
		/* config_load_file hands over one line at a time. */
		line[strcspn(line, "\n")] = '\0';
		int before = check_failures;
		char msg[256] = "";
		if (!config_apply_line(&c, line, msg, sizeof(msg))) {
			CHECK(msg[0] != '\0');
		}
		check_sane(&c);
		if (failed_before(before, "config line", line, strlen(line), seed, it)) {
			fprintf(stderr, "message: %s\n", msg);
			break;
		}
		if (it % 1000 == 999) {
			/* Bindings pile up otherwise, and a fresh start covers the defaults. */
			config_finish(&c);
			config_init_defaults(&c);
		}
	}
	config_finish(&c);
}

static void test_scheduling(void) {
	struct qw_config c;
	char msg[256] = "";
	config_init_defaults(&c);
	CHECK(c.scheduling.serve_by_reserve && c.scheduling.bill && c.scheduling.boost);
	CHECK(c.scheduling.hidden_frame_rate == 10);
	CHECK(apply(&c, "scheduling off", msg));
	CHECK(!c.scheduling.serve_by_reserve && !c.scheduling.bill && !c.scheduling.boost);
	CHECK(apply(&c, "scheduling bill on", msg) && c.scheduling.bill);
	CHECK(!c.scheduling.serve_by_reserve && !c.scheduling.boost);
	CHECK(apply(&c, "scheduling on  # all of it", msg));
	CHECK(c.scheduling.serve_by_reserve && c.scheduling.bill && c.scheduling.boost);
	/* The block form: the same words, one a line, until "}". */
	CHECK(apply(&c, "scheduling {", msg) && c.in_scheduling_block);
	CHECK(apply(&c, "  boost off", msg) && !c.scheduling.boost);
	CHECK(!apply(&c, "  boost sideways", msg) && strstr(msg, "boost wants on or off"));
	CHECK(apply(&c, "", msg) && apply(&c, "# inside", msg) && c.in_scheduling_block);
	CHECK(apply(&c, "  hidden-frame-rate 4", msg) && c.scheduling.hidden_frame_rate == 4);
	CHECK(!apply(&c, "  output-mode 800x600", msg) &&
			strstr(msg, "unknown scheduling setting 'output-mode'"));
	CHECK(apply(&c, "}", msg) && !c.in_scheduling_block);
	CHECK(apply(&c, "output-mode 800x600", msg) && c.output_width == 800);
	config_finish(&c);

	/* A block left open is reported at the line that opened it. */
	const char *dir = getenv("QOSWAY_TEST_TMP");
	char path[4096];
	snprintf(path, sizeof(path), "%s/test-config-sched-%d", dir ? dir : "/tmp", (int)getpid());
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	if (!f) {
		return;
	}
	fputs("scheduling bill off\nscheduling {\n boost off\n", f);
	fclose(f);
	char *out = NULL;
	size_t out_len = 0;
	FILE *err = open_memstream(&out, &out_len);
	config_init_defaults(&c);
	CHECK(config_load_file(&c, path, err));
	fclose(err);
	char want[4200];
	snprintf(want, sizeof(want), "%s:2: this scheduling block is not closed", path);
	CHECK(out && strstr(out, want));
	CHECK(c.error_count == 1 && !c.in_scheduling_block);
	CHECK(!c.scheduling.bill && !c.scheduling.boost && c.scheduling.serve_by_reserve);
	free(out);
	config_finish(&c);
	remove(path);
}

static void test_xwayland(void) {
	struct qw_config c;
	char msg[256] = "";
	config_init_defaults(&c);
	CHECK(c.xwayland == QW_XWAYLAND_LAZY);
	CHECK(apply(&c, "xwayland disable", msg) && c.xwayland == QW_XWAYLAND_DISABLE);
	CHECK(apply(&c, "xwayland enable", msg) && c.xwayland == QW_XWAYLAND_ENABLE);
	CHECK(apply(&c, "xwayland lazy", msg) && c.xwayland == QW_XWAYLAND_LAZY);
	const char *bad[] = { "xwayland", "xwayland on", "xwayland lazy now", "xwayland LAZY" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		msg[0] = '\0';
		CHECK(!apply(&c, bad[i], msg));
		CHECK(strstr(msg, "xwayland") != NULL);
		CHECK(c.xwayland == QW_XWAYLAND_LAZY);
	}
	config_finish(&c);
}

int main(void) {
	test_defaults();
	test_xwayland();
	test_scheduling();
	test_valid_lines();
	test_invalid_lines();
	test_outputs();
	test_file_errors();
	test_fuzz_lines();
	return check_report("config");
}
