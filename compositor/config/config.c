#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wlr/types/wlr_keyboard.h>

#include "config/config.h"
#include "config/input_config.h"
#include "config/output_config.h"
#include "qos/params.h"

static const char *const button_names[QW_BUTTON_KIND_COUNT] = {
	[QW_BUTTON_REALTIME] = "realtime",
	[QW_BUTTON_IDLE] = "idle",
	[QW_BUTTON_PAUSE] = "pause",
	[QW_BUTTON_CLOSE] = "close",
};

static const char *const color_names[QW_COLOR_COUNT] = {
	[QW_COLOR_TITLEBAR_FOCUSED] = "titlebar-focused",
	[QW_COLOR_TITLEBAR_UNFOCUSED] = "titlebar-unfocused",
	[QW_COLOR_TEXT_FOCUSED] = "text-focused",
	[QW_COLOR_TEXT_UNFOCUSED] = "text-unfocused",
	[QW_COLOR_BORDER_FOCUSED] = "border-focused",
	[QW_COLOR_BORDER_UNFOCUSED] = "border-unfocused",
	[QW_COLOR_BUTTON_ICON] = "button-icon",
	[QW_COLOR_BUTTON_HOVER] = "button-hover",
	[QW_COLOR_BUTTON_PRESSED] = "button-pressed",
	[QW_COLOR_BUTTON_ON] = "button-on",
	[QW_COLOR_BUTTON_ON_ICON] = "button-on-icon",
	[QW_COLOR_CLOSE_HOVER] = "close-hover",
	[QW_COLOR_BUTTON_REFUSED] = "button-refused",
	[QW_COLOR_TEXT_WARNING] = "text-warning",
	[QW_COLOR_PAUSED_DIM] = "paused-dim",
	[QW_COLOR_TITLEBAR_URGENT] = "titlebar-urgent",
};

static const struct {
	const char *name;
	enum qw_action action;
	bool takes_arg;
} action_names[] = {
	{ "exec", QW_ACTION_EXEC, true },
	{ "terminal", QW_ACTION_TERMINAL, false },
	{ "close", QW_ACTION_CLOSE, false },
	{ "focus-next", QW_ACTION_FOCUS_NEXT, false },
	{ "maximize", QW_ACTION_MAXIMIZE, false },
	{ "fullscreen", QW_ACTION_FULLSCREEN, false },
	{ "minimize", QW_ACTION_MINIMIZE, false },
	{ "shortcuts-inhibit-toggle", QW_ACTION_SHORTCUTS_INHIBIT_TOGGLE, false },
	{ "exit", QW_ACTION_EXIT, false },
	{ "workspace", QW_ACTION_WORKSPACE, true },
	{ "move-to-workspace", QW_ACTION_MOVE_TO_WORKSPACE, true },
};

const char *config_button_name(enum qw_button_kind kind) {
	return kind < QW_BUTTON_KIND_COUNT ? button_names[kind] : "?";
}

bool config_parse_button(const char *name, enum qw_button_kind *kind) {
	for (int i = 0; i < QW_BUTTON_KIND_COUNT; i++) {
		if (strcmp(name, button_names[i]) == 0) {
			*kind = i;
			return true;
		}
	}
	return false;
}

static void set_rgb(float out[4], uint32_t rgb) {
	out[0] = ((rgb >> 16) & 0xff) / 255.0f;
	out[1] = ((rgb >> 8) & 0xff) / 255.0f;
	out[2] = (rgb & 0xff) / 255.0f;
	out[3] = 1.0f;
}

static bool add_binding(struct qw_config *config, const struct qw_binding *b) {
	for (size_t i = 0; i < config->binding_count; i++) {
		struct qw_binding *old = &config->bindings[i];
		if (old->modifiers == b->modifiers && old->keysym == b->keysym) {
			/* A later line overrides an earlier binding of the same keys. */
			free(old->arg);
			*old = *b;
			return true;
		}
	}
	struct qw_binding *grown =
			realloc(config->bindings, (config->binding_count + 1) * sizeof(*grown));
	if (!grown) {
		return false;
	}
	config->bindings = grown;
	config->bindings[config->binding_count++] = *b;
	return true;
}

void config_init_defaults(struct qw_config *config) {
	*config = (struct qw_config){
		.output_width = 1920,
		.output_height = 1080,
		.output_refresh_mhz = 60000,
		.terminal = strdup("foot"),
		.font = strdup("Sans 10"),
		.titlebar_height = 26,
		.border_width = 2,
		.cascade_step = 32,
		.buttons = {QW_BUTTON_REALTIME, QW_BUTTON_IDLE, QW_BUTTON_PAUSE,
			QW_BUTTON_CLOSE},
		.button_count = 4,
		.realtime_cpu_ppm = 0,
		.realtime_period_us = 0,
		.realtime_idle_release = 120,
		.realtime_fallback = QOS_POLICY_OTHER,
		.qos_reserved_ppm = 100000,
		.inactive_timeout_s = 10,
		.inactive_class = QW_INACTIVE_NONE,
		.scheduling = {
			.serve_by_reserve = true,
			.bill = true,
			.boost = true,
			.hidden_frame_rate = 10,
			.server_weight = 10000,
		},
	};
	set_rgb(config->colors[QW_COLOR_TITLEBAR_FOCUSED], 0x2d5b8a);
	set_rgb(config->colors[QW_COLOR_TITLEBAR_UNFOCUSED], 0x3a3d41);
	set_rgb(config->colors[QW_COLOR_TEXT_FOCUSED], 0xffffff);
	set_rgb(config->colors[QW_COLOR_TEXT_UNFOCUSED], 0xa8adb3);
	set_rgb(config->colors[QW_COLOR_BORDER_FOCUSED], 0x2d5b8a);
	set_rgb(config->colors[QW_COLOR_BORDER_UNFOCUSED], 0x3a3d41);
	set_rgb(config->colors[QW_COLOR_BUTTON_ICON], 0xe8e8e8);
	set_rgb(config->colors[QW_COLOR_BUTTON_HOVER], 0x5a7fa8);
	set_rgb(config->colors[QW_COLOR_BUTTON_PRESSED], 0x1c3a5a);
	set_rgb(config->colors[QW_COLOR_BUTTON_ON], 0xf0a30a);
	set_rgb(config->colors[QW_COLOR_BUTTON_ON_ICON], 0x202020);
	set_rgb(config->colors[QW_COLOR_CLOSE_HOVER], 0xc0392b);
	set_rgb(config->colors[QW_COLOR_BUTTON_REFUSED], 0xd03030);
	set_rgb(config->colors[QW_COLOR_TEXT_WARNING], 0xffb0a0);
	set_rgb(config->colors[QW_COLOR_PAUSED_DIM], 0x000000);
	config->colors[QW_COLOR_PAUSED_DIM][3] = 0.55f;
	set_rgb(config->colors[QW_COLOR_TITLEBAR_URGENT], 0xc0392b);
	/* Strings are duplicated so finish() can free uniformly; a failed
	 * strdup leaves NULL, which the users of these fields tolerate. */
	static const struct {
		uint32_t mods;
		xkb_keysym_t sym;
		enum qw_action action;
	} defaults[] = {
		{ WLR_MODIFIER_LOGO, XKB_KEY_Return, QW_ACTION_TERMINAL },
		{ WLR_MODIFIER_LOGO, XKB_KEY_q, QW_ACTION_CLOSE },
		{ WLR_MODIFIER_LOGO, XKB_KEY_Tab, QW_ACTION_FOCUS_NEXT },
		{ WLR_MODIFIER_LOGO, XKB_KEY_h, QW_ACTION_MINIMIZE },
		{ WLR_MODIFIER_LOGO, XKB_KEY_Escape, QW_ACTION_SHORTCUTS_INHIBIT_TOGGLE },
		{ WLR_MODIFIER_LOGO | WLR_MODIFIER_SHIFT, XKB_KEY_e, QW_ACTION_EXIT },
	};
	for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++) {
		struct qw_binding b = {
			.modifiers = defaults[i].mods,
			.keysym = defaults[i].sym,
			.action = defaults[i].action,
		};
		add_binding(config, &b);
	}
	/* Super+1..0 shows workspace 1..10; with Shift the focused window goes there. */
	for (int n = 1; n <= QW_WORKSPACE_COUNT; n++) {
		char number[8];
		snprintf(number, sizeof(number), "%d", n);
		for (int move = 0; move < 2; move++) {
			struct qw_binding b = {
				.modifiers = WLR_MODIFIER_LOGO | (move ? WLR_MODIFIER_SHIFT : 0),
				.keysym = n == 10 ? XKB_KEY_0 : XKB_KEY_0 + n,
				.action = move ? QW_ACTION_MOVE_TO_WORKSPACE : QW_ACTION_WORKSPACE,
				.arg = strdup(number),
			};
			if (!add_binding(config, &b)) {
				free(b.arg);
			}
		}
	}
}

void config_finish(struct qw_config *config) {
	if (!config) {
		return;
	}
	for (size_t i = 0; i < config->binding_count; i++) {
		free(config->bindings[i].arg);
	}
	free(config->bindings);
	free(config->terminal);
	free(config->font);
	output_config_finish(config);
	free(config->output_block);
	input_config_finish(config);
	free(config->input_block);
	*config = (struct qw_config){ 0 };
}

static bool fail(char *msg, size_t size, const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, size, fmt, ap);
	va_end(ap);
	return false;
}

/* Split off the next whitespace-separated word; returns NULL at the end. */
static char *next_word(char **cursor) {
	char *p = *cursor;
	while (*p && isspace((unsigned char)*p)) {
		p++;
	}
	if (!*p) {
		*cursor = p;
		return NULL;
	}
	char *start = p;
	while (*p && !isspace((unsigned char)*p)) {
		p++;
	}
	if (*p) {
		*p++ = '\0';
	}
	*cursor = p;
	return start;
}

static char *rest_of_line(char **cursor) {
	char *p = *cursor;
	while (*p && isspace((unsigned char)*p)) {
		p++;
	}
	char *end = p + strlen(p);
	while (end > p && isspace((unsigned char)end[-1])) {
		*--end = '\0';
	}
	*cursor = end;
	return *p ? p : NULL;
}

static bool parse_int(const char *s, int min, int max, int *out) {
	if (!s || !*s) {
		return false;
	}
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || v < min || v > max) {
		return false;
	}
	*out = (int)v;
	return true;
}

static bool parse_color(const char *s, float out[4]) {
	size_t len = s ? strlen(s) : 0;
	if ((len != 7 && len != 9) || s[0] != '#') {
		return false;
	}
	for (size_t i = 1; i < len; i++) {
		if (!isxdigit((unsigned char)s[i])) {
			return false;
		}
	}
	unsigned long v = strtoul(s + 1, NULL, 16);
	if (len == 7) {
		set_rgb(out, (uint32_t)v);
	} else {
		set_rgb(out, (uint32_t)(v >> 8));
		out[3] = (v & 0xff) / 255.0f;
	}
	return true;
}

/* Digits without a fraction, up to limit; the byte past them, or NULL. */
static const char *parse_whole(const char *s, uint64_t limit, uint64_t *out) {
	const char *end = qos_parse_decimal(s, 0, limit, out);
	return end && !memchr(s, '.', (size_t)(end - s)) ? end : NULL;
}

/*
 * WIDTHxHEIGHT[@HZ[Hz]], read exactly: sscanf and strtod took signs,
 * spaces, overflowing numbers and "@nan" (a refresh rate of INT_MIN).
 */
bool config_parse_mode(const char *s, int *w, int *h, int *mhz) {
	uint64_t rw, rh, rate = 60000;
	const char *p = s ? parse_whole(s, 16384, &rw) : NULL;
	if (!p || *p != 'x' || !(p = parse_whole(p + 1, 16384, &rh))) {
		return false;
	}
	if (*p == '@') {
		p = qos_parse_decimal(p + 1, 3, 1000000, &rate);
		if (!p || (strcmp(p, "") != 0 && strcmp(p, "Hz") != 0)) {
			return false;
		}
	} else if (*p) {
		return false;
	}
	if (rw < 64 || rh < 64 || rate < 1000) {
		return false;
	}
	*w = (int)rw;
	*h = (int)rh;
	*mhz = (int)rate;
	return true;
}

static bool parse_combo(char *combo, uint32_t *mods, xkb_keysym_t *sym, char *msg, size_t size) {
	static const struct {
		const char *name;
		uint32_t mask;
	} mod_names[] = {
		{ "super", WLR_MODIFIER_LOGO },
		{ "logo", WLR_MODIFIER_LOGO },
		{ "mod4", WLR_MODIFIER_LOGO },
		{ "shift", WLR_MODIFIER_SHIFT },
		{ "ctrl", WLR_MODIFIER_CTRL },
		{ "control", WLR_MODIFIER_CTRL },
		{ "alt", WLR_MODIFIER_ALT },
		{ "mod1", WLR_MODIFIER_ALT },
	};
	*mods = 0;
	char *save = NULL;
	char *part = strtok_r(combo, "+", &save);
	char *key = NULL;
	while (part) {
		char *next = strtok_r(NULL, "+", &save);
		if (!next) {
			key = part;
			break;
		}
		bool known = false;
		for (size_t i = 0; i < sizeof(mod_names) / sizeof(mod_names[0]); i++) {
			if (strcasecmp(part, mod_names[i].name) == 0) {
				*mods |= mod_names[i].mask;
				known = true;
			}
		}
		if (!known) {
			return fail(msg, size, "unknown modifier '%s'", part);
		}
		part = next;
	}
	if (!key) {
		return fail(msg, size, "missing key in key combination");
	}
	xkb_keysym_t ks = xkb_keysym_from_name(key, XKB_KEYSYM_CASE_INSENSITIVE);
	if (ks == XKB_KEY_NoSymbol) {
		return fail(msg, size, "unknown key '%s'", key);
	}
	*sym = xkb_keysym_to_lower(ks);
	return true;
}

static bool valid_workspace(const char *arg) {
	if (!arg || !isdigit((unsigned char)arg[0])) {
		return false;
	}
	char *end;
	long n = strtol(arg, &end, 10);
	return *end == '\0' && n >= 1 && n <= QW_WORKSPACE_COUNT;
}

static bool apply_bind(struct qw_config *config, char **cursor, char *msg, size_t size) {
	char *combo = next_word(cursor);
	char *action = next_word(cursor);
	if (!combo || !action) {
		return fail(msg, size, "usage: bind MODIFIERS+KEY ACTION [ARGS]");
	}
	struct qw_binding b = { 0 };
	if (!parse_combo(combo, &b.modifiers, &b.keysym, msg, size)) {
		return false;
	}
	for (size_t i = 0; i < sizeof(action_names) / sizeof(action_names[0]); i++) {
		if (strcmp(action, action_names[i].name) != 0) {
			continue;
		}
		b.action = action_names[i].action;
		char *arg = rest_of_line(cursor);
		bool numbered = b.action == QW_ACTION_WORKSPACE || b.action == QW_ACTION_MOVE_TO_WORKSPACE;
		if (numbered && !valid_workspace(arg)) {
			return fail(msg, size, "action '%s' wants a workspace number from 1 to %d", action,
					QW_WORKSPACE_COUNT);
		}
		if (action_names[i].takes_arg) {
			if (!arg) {
				return fail(msg, size, "action '%s' needs a command", action);
			}
			b.arg = strdup(arg);
			if (!b.arg) {
				return fail(msg, size, "out of memory");
			}
		} else if (arg) {
			return fail(msg, size, "action '%s' takes no arguments", action);
		}
		if (!add_binding(config, &b)) {
			free(b.arg);
			return fail(msg, size, "out of memory");
		}
		return true;
	}
	return fail(msg, size, "unknown action '%s'", action);
}

static bool replace_string(char **field, const char *value, char *msg, size_t size) {
	char *copy = strdup(value);
	if (!copy) {
		return fail(msg, size, "out of memory");
	}
	free(*field);
	*field = copy;
	return true;
}

static bool parse_switch(const char *s, bool *out) {
	if (s && strcmp(s, "on") == 0) {
		*out = true;
		return true;
	}
	if (s && strcmp(s, "off") == 0) {
		*out = false;
		return true;
	}
	return false;
}

/*
 * One scheduling setting: "on"/"off" for all switches at once, or a key and
 * its value. The same words serve "scheduling KEY VALUE" lines and the lines
 * of a "scheduling { ... }" block.
 */
static bool apply_scheduling(struct qw_config *config, char *key, char **cursor, char *msg,
		size_t size) {
	bool on;
	if (parse_switch(key, &on)) {
		if (next_word(cursor)) {
			return fail(msg, size, "scheduling %s takes nothing after it", key);
		}
		config->scheduling.serve_by_reserve = on;
		config->scheduling.bill = on;
		config->scheduling.boost = on;
		return true;
	}
	char *value = next_word(cursor);
	if (value && next_word(cursor)) {
		return fail(msg, size, "scheduling %s takes one value", key);
	}
	bool *flag = strcmp(key, "serve-by-reserve") == 0 ? &config->scheduling.serve_by_reserve
			: strcmp(key, "bill") == 0                ? &config->scheduling.bill
			: strcmp(key, "boost") == 0               ? &config->scheduling.boost
													  : NULL;
	if (flag) {
		if (!parse_switch(value, flag)) {
			return fail(msg, size, "scheduling %s wants on or off", key);
		}
		return true;
	}
	if (strcmp(key, "hidden-frame-rate") == 0) {
		int hz;
		if (!value || !parse_int(value, 1, 1000, &hz)) {
			return fail(msg, size, "scheduling hidden-frame-rate wants 1 to 1000 (Hz)");
		}
		config->scheduling.hidden_frame_rate = (unsigned int)hz;
		return true;
	}
	if (strcmp(key, "server-weight") == 0) {
		int weight = 0;
		if (!value || (strcmp(value, "off") != 0 && !parse_int(value, 1, 10000, &weight))) {
			return fail(msg, size, "scheduling server-weight wants 1 to 10000 or off");
		}
		config->scheduling.server_weight = (unsigned int)weight;
		return true;
	}
	return fail(msg, size,
			"unknown scheduling setting '%s' (serve-by-reserve, bill, "
			"boost, hidden-frame-rate, server-weight, on, off)",
			key);
}

/*
 * "output NAME { ... }" opens a block of settings for one output; "output
 * NAME KEY VALUE" is one setting (output_config.h).
 */
static bool apply_output_words(struct qw_config *config, const char *name, char *first,
		char **cursor, char *msg, size_t size) {
	char *words[8];
	size_t count = 0;
	if (first) {
		words[count++] = first;
	}
	char *word;
	while ((word = next_word(cursor))) {
		if (count == sizeof(words) / sizeof(words[0])) {
			return fail(msg, size, "too many words for one output setting");
		}
		words[count++] = word;
	}
	return output_config_set(config, name, words, count, msg, size);
}

static bool apply_input_words(struct qw_config *config, const char *match, char *first,
		char **cursor, char *msg, size_t size) {
	char *words[4];
	size_t count = 0;
	if (first) {
		words[count++] = first;
	}
	char *word;
	while ((word = next_word(cursor))) {
		if (count == sizeof(words) / sizeof(words[0])) {
			return fail(msg, size, "input %s: one value per setting", match);
		}
		words[count++] = word;
	}
	return input_config_set(config, match, words, count, msg, size);
}

/* A device name may have blanks: then it is written in double quotes. */
static char *next_identifier(char **cursor) {
	char *p = *cursor + strspn(*cursor, " \t");
	if (*p != '"') {
		return next_word(cursor);
	}
	char *end = strchr(p + 1, '"');
	if (!end) {
		return NULL;
	}
	*end = '\0';
	*cursor = end + 1;
	return p + 1;
}

/* "input ID {" or "output NAME {": the block's identifier, for the lines that follow. */
static bool open_block(char **block, const char *id, char **cursor, char *msg, size_t size) {
	if (next_word(cursor)) {
		return fail(msg, size, "text after '{' (settings go on the lines that follow)");
	}
	char *copy = strdup(id);
	if (!copy) {
		return fail(msg, size, "out of memory");
	}
	free(*block);
	*block = copy;
	return true;
}

static bool apply_input(struct qw_config *config, char **cursor, char *msg, size_t size) {
	char *match = next_identifier(cursor);
	if (!match || !*match || strcmp(match, "{") == 0 || strcmp(match, "}") == 0) {
		return fail(msg, size,
				"input wants *, type:TYPE or a device name in quotes, e.g. "
				"input type:keyboard { ... }");
	}
	char *what = next_word(cursor);
	if (what && strcmp(what, "{") == 0) {
		return open_block(&config->input_block, match, cursor, msg, size);
	}
	return apply_input_words(config, match, what, cursor, msg, size);
}

static bool apply_output(struct qw_config *config, char **cursor, char *msg, size_t size) {
	char *name = next_word(cursor);
	if (!name || strcmp(name, "{") == 0 || strcmp(name, "}") == 0) {
		return fail(msg, size, "output wants a connector name, e.g. output HDMI-A-1 { ... }");
	}
	char *what = next_word(cursor);
	if (what && strcmp(what, "{") == 0) {
		return open_block(&config->output_block, name, cursor, msg, size);
	}
	return apply_output_words(config, name, what, cursor, msg, size);
}

/*
 * The handlers of the settings, one per key (config_keys below). Each reads
 * the rest of its line into local values and stores them only once the
 * whole line proved good, so a refused line changes nothing.
 */

/* "scheduling on|off", "scheduling KEY VALUE" or "scheduling {". */
static bool key_scheduling(struct qw_config *config, char **cursor, char *msg, size_t size) {
	char *what = next_word(cursor);
	if (!what) {
		return fail(msg, size, "scheduling wants on, off, '{' or a setting");
	}
	if (strcmp(what, "{") == 0) {
		if (next_word(cursor)) {
			return fail(msg, size, "text after '{' (settings go on the lines that follow)");
		}
		config->in_scheduling_block = true;
		return true;
	}
	return apply_scheduling(config, what, cursor, msg, size);
}

static bool key_output_mode(struct qw_config *config, char **cursor, char *msg, size_t size) {
	int width, height, mhz;
	char *mode = next_word(cursor);
	if (!config_parse_mode(mode, &width, &height, &mhz) || next_word(cursor)) {
		return fail(msg, size, "output-mode wants WIDTHxHEIGHT[@HZ], e.g. 1920x1080@60");
	}
	config->output_width = width;
	config->output_height = height;
	config->output_refresh_mhz = mhz;
	return true;
}

/* The rest of the line, blanks inside kept, as a string setting. */
static bool store_text(char **field, const char *key, char **cursor, char *msg, size_t size) {
	char *value = rest_of_line(cursor);
	if (!value) {
		return fail(msg, size, "%s needs a value", key);
	}
	return replace_string(field, value, msg, size);
}

static bool key_terminal(struct qw_config *config, char **cursor, char *msg, size_t size) {
	return store_text(&config->terminal, "terminal", cursor, msg, size);
}

static bool key_font(struct qw_config *config, char **cursor, char *msg, size_t size) {
	return store_text(&config->font, "font", cursor, msg, size);
}

/* One integer from min to max, and nothing after it. */
static bool store_int(int *field, const char *key, int min, int max, char **cursor, char *msg,
		size_t size) {
	int value;
	if (!parse_int(next_word(cursor), min, max, &value) || next_word(cursor)) {
		return fail(msg, size, "%s wants an integer from %d to %d", key, min, max);
	}
	*field = value;
	return true;
}

static bool key_titlebar_height(struct qw_config *config, char **cursor, char *msg, size_t size) {
	return store_int(&config->titlebar_height, "titlebar-height", 12, 128, cursor, msg, size);
}

static bool key_border_width(struct qw_config *config, char **cursor, char *msg, size_t size) {
	return store_int(&config->border_width, "border-width", 0, 32, cursor, msg, size);
}

static bool key_cascade_step(struct qw_config *config, char **cursor, char *msg, size_t size) {
	return store_int(&config->cascade_step, "cascade-step", 0, 512, cursor, msg, size);
}

static bool key_buttons(struct qw_config *config, char **cursor, char *msg, size_t size) {
	enum qw_button_kind order[QW_BUTTON_KIND_COUNT];
	size_t n = 0;
	bool seen[QW_BUTTON_KIND_COUNT] = { 0 };
	char *word;
	while ((word = next_word(cursor))) {
		enum qw_button_kind kind;
		if (!config_parse_button(word, &kind)) {
			return fail(msg, size, "unknown button '%s' (realtime, idle, pause, close)", word);
		}
		if (seen[kind]) {
			return fail(msg, size, "button '%s' listed twice", word);
		}
		seen[kind] = true;
		order[n++] = kind;
	}
	memcpy(config->buttons, order, sizeof(order[0]) * n);
	config->button_count = n;
	return true;
}

/* One word of names, and nothing after it: its index in *index. */
static bool parse_choice(char **cursor, const char *const *names, size_t count, size_t *index) {
	char *value = next_word(cursor);
	for (size_t i = 0; value && i < count; i++) {
		if (strcmp(value, names[i]) == 0) {
			*index = i;
			return !next_word(cursor);
		}
	}
	return false;
}

static bool key_csd_buttons(struct qw_config *config, char **cursor, char *msg, size_t size) {
	static const char *const names[] = {
		[QW_CSD_BUTTONS_STRIP] = "strip",
		[QW_CSD_BUTTONS_TITLEBAR] = "titlebar",
		[QW_CSD_BUTTONS_NONE] = "none",
	};
	size_t i;
	if (!parse_choice(cursor, names, sizeof(names) / sizeof(names[0]), &i)) {
		return fail(msg, size, "csd-buttons wants strip, titlebar or none");
	}
	config->csd_buttons = (enum qw_csd_buttons)i;
	return true;
}

static bool key_xwayland(struct qw_config *config, char **cursor, char *msg, size_t size) {
	static const char *const names[] = {
		[QW_XWAYLAND_LAZY] = "lazy",
		[QW_XWAYLAND_ENABLE] = "enable",
		[QW_XWAYLAND_DISABLE] = "disable",
	};
	size_t i;
	if (!parse_choice(cursor, names, sizeof(names) / sizeof(names[0]), &i)) {
		return fail(msg, size, "xwayland wants enable, disable or lazy");
	}
	config->xwayland = (enum qw_xwayland_mode)i;
	return true;
}

/* "on" or "off", and nothing after it. */
static bool store_switch(bool *field, char **cursor) {
	bool on;
	if (!parse_switch(next_word(cursor), &on) || next_word(cursor)) {
		return false;
	}
	*field = on;
	return true;
}

static bool key_taskbar_class(struct qw_config *config, char **cursor, char *msg, size_t size) {
	if (!store_switch(&config->taskbar_class, cursor)) {
		return fail(msg, size, "taskbar-class wants on or off");
	}
	return true;
}

static bool key_qos_other_users(struct qw_config *config, char **cursor, char *msg, size_t size) {
	if (!store_switch(&config->qos_other_users, cursor)) {
		return fail(msg, size, "qos-other-users wants on or off");
	}
	return true;
}

static bool key_color(struct qw_config *config, char **cursor, char *msg, size_t size) {
	char *name = next_word(cursor);
	char *value = next_word(cursor);
	if (!name || !value || next_word(cursor)) {
		return fail(msg, size, "usage: color NAME #RRGGBB[AA]");
	}
	for (int i = 0; i < QW_COLOR_COUNT; i++) {
		if (strcmp(name, color_names[i]) != 0) {
			continue;
		}
		float rgba[4];
		if (!parse_color(value, rgba)) {
			return fail(msg, size, "bad colour '%s' (want #RRGGBB or #RRGGBBAA)", value);
		}
		memcpy(config->colors[i], rgba, sizeof(rgba));
		return true;
	}
	return fail(msg, size, "unknown colour name '%s'", name);
}

static bool key_realtime_cpu(struct qw_config *config, char **cursor, char *msg, size_t size) {
	char *value = next_word(cursor);
	uint64_t ppm = 0;
	if (!value ||
			(strcmp(value, "auto") != 0 &&
					(!qos_parse_percent_ppm(value, &ppm) || ppm == 0 || ppm > 1000000)) ||
			next_word(cursor)) {
		return fail(msg, size, "realtime-cpu wants auto or a share of one CPU, e.g. 25%%");
	}
	config->realtime_cpu_ppm = ppm;
	return true;
}

static bool key_realtime_idle_release(struct qw_config *config, char **cursor, char *msg,
		size_t size) {
	char *value = next_word(cursor);
	char *end = NULL;
	unsigned long n = value ? strtoul(value, &end, 10) : 0;
	if (!value || !isdigit((unsigned char)value[0]) || *end || n > 100000 || next_word(cursor)) {
		return fail(msg, size,
				"realtime-idle-release wants a number of idle periods, 0 (never) to 100000");
	}
	config->realtime_idle_release = (uint32_t)n;
	return true;
}

static bool key_qos_reserved(struct qw_config *config, char **cursor, char *msg, size_t size) {
	char *value = next_word(cursor);
	uint64_t ppm;
	if (!value || !qos_parse_percent_ppm(value, &ppm) || ppm < 50000 || ppm > 1000000 ||
			next_word(cursor)) {
		return fail(msg, size, "qos-reserved wants 5%% to 100%% of each CPU, e.g. 10%%");
	}
	config->qos_reserved_ppm = ppm;
	return true;
}

static bool key_realtime_period(struct qw_config *config, char **cursor, char *msg, size_t size) {
	char *value = next_word(cursor);
	uint64_t us = 0;
	/* The manager's own bounds for a period (qos_params_normalize). */
	if (!value ||
			(strcmp(value, "vblank") != 0 &&
					(!qos_parse_duration_us(value, &us) || us < 1000 || us > 10000000)) ||
			next_word(cursor)) {
		return fail(msg, size, "realtime-period wants vblank or 1ms to 10s, e.g. 20ms");
	}
	config->realtime_period_us = us;
	return true;
}

static bool key_realtime_fallback(struct qw_config *config, char **cursor, char *msg, size_t size) {
	char *value = next_word(cursor);
	enum qos_policy policy;
	if (!value || !qos_policy_from_name(value, &policy) || next_word(cursor) ||
			policy == QOS_POLICY_QOS || qos_policy_is_rt(policy)) {
		return fail(msg, size, "realtime-fallback wants other, idle or pause");
	}
	config->realtime_fallback = policy;
	return true;
}

static bool key_inactive_timeout(struct qw_config *config, char **cursor, char *msg, size_t size) {
	char *value = next_word(cursor);
	bool extra = value && next_word(cursor);
	char *end = NULL;
	unsigned long s = value ? strtoul(value, &end, 10) : 0;
	if (!value || !isdigit((unsigned char)value[0]) || *end || s < 1 || s > 86400 || extra) {
		return fail(msg, size, "inactive-timeout wants whole seconds from 1 to 86400, e.g. 10");
	}
	config->inactive_timeout_s = (unsigned int)s;
	return true;
}

static bool key_inactive_class(struct qw_config *config, char **cursor, char *msg, size_t size) {
	static const char *const names[] = {
		[QW_INACTIVE_NONE] = "none",
		[QW_INACTIVE_IDLE] = "idle",
		[QW_INACTIVE_NORMAL] = "normal",
	};
	size_t i;
	if (!parse_choice(cursor, names, sizeof(names) / sizeof(names[0]), &i)) {
		return fail(msg, size, "inactive-class wants idle, normal or none");
	}
	config->inactive_class = (enum qw_inactive_class)i;
	return true;
}

/*
 * Every key a line may start with, outside a block. A new setting is one
 * row here and its handler, which gets the words after the key.
 */
static const struct {
	const char *key;
	bool (*apply)(struct qw_config *config, char **cursor, char *msg, size_t size);
} config_keys[] = {
	{ "output", apply_output },
	{ "input", apply_input },
	{ "scheduling", key_scheduling },
	{ "output-mode", key_output_mode },
	{ "terminal", key_terminal },
	{ "font", key_font },
	{ "titlebar-height", key_titlebar_height },
	{ "border-width", key_border_width },
	{ "cascade-step", key_cascade_step },
	{ "buttons", key_buttons },
	{ "csd-buttons", key_csd_buttons },
	{ "xwayland", key_xwayland },
	{ "taskbar-class", key_taskbar_class },
	{ "color", key_color },
	{ "bind", apply_bind },
	{ "realtime-cpu", key_realtime_cpu },
	{ "realtime-idle-release", key_realtime_idle_release },
	{ "qos-reserved", key_qos_reserved },
	{ "qos-other-users", key_qos_other_users },
	{ "realtime-period", key_realtime_period },
	{ "inactive-timeout", key_inactive_timeout },
	{ "inactive-class", key_inactive_class },
	{ "realtime-fallback", key_realtime_fallback },
};

/*
 * A line inside an open block: "}" closes it, any other line is one of its
 * settings, without the block's key and identifier.
 */
static bool apply_in_block(struct qw_config *config, char *key, char **cursor, char *msg,
		size_t size) {
	if (strcmp(key, "}") == 0) {
		if (next_word(cursor)) {
			return fail(msg, size, "text after '}'");
		}
		if (config->in_scheduling_block) {
			config->in_scheduling_block = false;
		} else if (config->output_block) {
			free(config->output_block);
			config->output_block = NULL;
		} else {
			free(config->input_block);
			config->input_block = NULL;
		}
		return true;
	}
	if (config->in_scheduling_block) {
		return apply_scheduling(config, key, cursor, msg, size);
	}
	if (config->output_block) {
		return apply_output_words(config, config->output_block, key, cursor, msg, size);
	}
	return apply_input_words(config, config->input_block, key, cursor, msg, size);
}

/*
 * Comments: a line starting with '#', or " # ..." after a setting.
 * A colour value ("#rrggbb") never has a blank after its '#'.
 */
static void strip_comment(char *buf) {
	for (char *p = buf; (p = strchr(p, '#')); p++) {
		bool at_word_start = p == buf || isspace((unsigned char)p[-1]);
		bool first_word = strspn(buf, " \t") == (size_t)(p - buf);
		if (at_word_start && (first_word || p[1] == '\0' || isspace((unsigned char)p[1]))) {
			*p = '\0';
			return;
		}
	}
}

/*
 * One line, applied to `config` (the draft of config_apply_line): its first
 * word is looked up in config_keys, or belongs to the open block. Owned
 * memory (strings, bindings, outputs) changes only as a handler's last
 * step, once the line is known to be good.
 */
static bool apply_line(struct qw_config *config, const char *line_in, char *msg, size_t size) {
	char buf[4096];
	if (strlen(line_in) >= sizeof(buf)) {
		return fail(msg, size, "line too long");
	}
	strcpy(buf, line_in);
	strip_comment(buf);
	char *cursor = buf;
	char *key = next_word(&cursor);
	if (!key) {
		return true; /* blank or comment */
	}
	if (config->in_scheduling_block || config->output_block || config->input_block) {
		return apply_in_block(config, key, &cursor, msg, size);
	}
	for (size_t i = 0; i < sizeof(config_keys) / sizeof(config_keys[0]); i++) {
		if (strcmp(key, config_keys[i].key) == 0) {
			return config_keys[i].apply(config, &cursor, msg, size);
		}
	}
	return fail(msg, size, "unknown setting '%s'", key);
}

bool config_apply_line(struct qw_config *config, const char *line, char *msg, size_t size) {
	/* A refused line changes nothing: it is applied to a copy, which
	 * replaces the settings only when the whole line was good. */
	struct qw_config draft = *config;
	if (!apply_line(&draft, line, msg, size)) {
		return false;
	}
	*config = draft;
	return true;
}

/* "path:line: message", with the file's control bytes shown as \xNN. */
static void report(FILE *err, const char *path, unsigned int lineno, const char *msg) {
	char line[PATH_MAX + 512], shown[sizeof(line) + 1024];
	if (lineno) {
		snprintf(line, sizeof(line), "%s:%u: %s", path, lineno, msg);
	} else {
		snprintf(line, sizeof(line), "%s: %s", path, msg);
	}
	qos_escape_controls(line, shown, sizeof(shown));
	fprintf(err, "%s\n", shown);
}

bool config_load_file(struct qw_config *config, const char *path, FILE *err) {
	FILE *f = fopen(path, "r");
	if (!f) {
		char msg[256];
		snprintf(msg, sizeof(msg), "cannot open: %s", strerror(errno));
		report(err, path, 0, msg);
		return false;
	}
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	unsigned int lineno = 0, block_line = 0;
	errno = 0;
	while ((len = getline(&line, &cap, f)) != -1) {
		lineno++;
		if (len > 0 && line[len - 1] == '\n') {
			line[--len] = '\0';
		}
		char msg[256];
		if (strlen(line) != (size_t)len) {
			/* The line would end at the NUL and the rest be dropped unseen. */
			report(err, path, lineno, "NUL byte in the line");
			config->error_count++;
		} else {
			bool was_in_block =
					config->in_scheduling_block || config->output_block || config->input_block;
			if (!config_apply_line(config, line, msg, sizeof(msg))) {
				report(err, path, lineno, msg);
				config->error_count++;
			}
			if (!was_in_block &&
					(config->in_scheduling_block || config->output_block || config->input_block)) {
				block_line = lineno;
			}
		}
		errno = 0;
	}
	bool failed = ferror(f);
	int read_errno = errno ? errno : EIO;
	if (config->in_scheduling_block) {
		report(err, path, block_line, "this scheduling block is not closed with '}'");
		config->error_count++;
		config->in_scheduling_block = false;
	}
	if (config->input_block) {
		report(err, path, block_line, "this input block is not closed with '}'");
		config->error_count++;
		free(config->input_block);
		config->input_block = NULL;
	}
	if (config->output_block) {
		report(err, path, block_line, "this output block is not closed with '}'");
		config->error_count++;
		free(config->output_block);
		config->output_block = NULL;
	}
	free(line);
	fclose(f);
	if (failed) {
		char msg[256];
		snprintf(msg, sizeof(msg), "cannot read: %s", strerror(read_errno));
		report(err, path, 0, msg);
		return false;
	}
	return true;
}

static char *path_if_readable(const char *a, const char *b) {
	char *path = NULL;
	if (asprintf(&path, "%s%s", a, b) < 0) {
		return NULL;
	}
	if (access(path, R_OK) == 0) {
		return path;
	}
	free(path);
	return NULL;
}

char *config_find_default(void) {
	const char *xdg = getenv("XDG_CONFIG_HOME");
	const char *home = getenv("HOME");
	char *path = NULL;
	/* The XDG base directory spec: a relative value is invalid and ignored. */
	if (xdg && xdg[0] == '/') {
		path = path_if_readable(xdg, "/qosway/config");
	} else if (home && *home) {
		path = path_if_readable(home, "/.config/qosway/config");
	}
	if (!path) {
		path = path_if_readable(QOSWAY_SYSCONFDIR, "/config");
	}
	if (!path) {
		path = path_if_readable(QOSWAY_DATADIR, "/config");
	}
	if (!path) {
		path = path_if_readable(QOSWAY_SOURCE_CONFIG, "/config");
	}
	return path;
}
