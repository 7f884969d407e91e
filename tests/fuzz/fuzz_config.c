/*
 * The compositor's config file parser (compositor/config/config.c and
 * output_config.c), line by line as config_load_file hands them over.
 * Rules checked: a refused line says why and changes nothing (a second
 * config that never saw the line has the same settings), an accepted line
 * does the same to both, and every setting stays within what the
 * compositor can use.
 */
#include <wlr/types/wlr_keyboard.h>

#include "config/config.h"
#include "fuzz.h"
#include "config/output_config.h"
#include "config/input_config.h"
#include "qos/params.h"

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

static bool same_inputs(const struct qw_config *a, const struct qw_config *b) {
	if (a->input_count != b->input_count || !same_str(a->input_block, b->input_block)) {
		return false;
	}
	for (size_t i = 0; i < a->input_count; i++) {
		const struct qw_input_config *x = &a->inputs[i], *y = &b->inputs[i];
		if (!same_str(x->match, y->match) || !same_str(x->xkb_layout, y->xkb_layout) ||
				!same_str(x->xkb_variant, y->xkb_variant) ||
				!same_str(x->xkb_options, y->xkb_options) ||
				!same_str(x->xkb_model, y->xkb_model) || x->repeat_rate != y->repeat_rate ||
				x->repeat_delay != y->repeat_delay || x->tap != y->tap ||
				x->natural_scroll != y->natural_scroll || x->left_handed != y->left_handed ||
				x->middle_emulation != y->middle_emulation || x->dwt != y->dwt ||
				x->accel_profile != y->accel_profile || x->has_accel_speed != y->has_accel_speed ||
				x->accel_speed != y->accel_speed) {
			return false;
		}
	}
	return true;
}

/* Every setting a line can change (error_count aside). */
static bool same_settings(const struct qw_config *a, const struct qw_config *b) {
	return a->output_width == b->output_width && a->output_height == b->output_height &&
			a->output_refresh_mhz == b->output_refresh_mhz && same_str(a->terminal, b->terminal) &&
			same_str(a->font, b->font) && a->titlebar_height == b->titlebar_height &&
			a->border_width == b->border_width && a->cascade_step == b->cascade_step &&
			a->button_count == b->button_count &&
			memcmp(a->buttons, b->buttons, sizeof(a->buttons)) == 0 &&
			memcmp(a->colors, b->colors, sizeof(a->colors)) == 0 &&
			a->csd_buttons == b->csd_buttons && a->xwayland == b->xwayland &&
			a->taskbar_class == b->taskbar_class && same_bindings(a, b) &&
			a->realtime_cpu_ppm == b->realtime_cpu_ppm &&
			a->realtime_period_us == b->realtime_period_us &&
			a->realtime_idle_release == b->realtime_idle_release &&
			a->realtime_fallback == b->realtime_fallback &&
			a->qos_reserved_ppm == b->qos_reserved_ppm &&
			a->qos_other_users == b->qos_other_users &&
			a->inactive_timeout_s == b->inactive_timeout_s &&
			a->inactive_class == b->inactive_class &&
			memcmp(&a->scheduling, &b->scheduling, sizeof(a->scheduling)) == 0 &&
			a->in_scheduling_block == b->in_scheduling_block && same_outputs(a, b) &&
			same_inputs(a, b);
}

static void check_sane(const struct qw_config *c, const char *line) {
	bool ok = c->output_width >= 64 && c->output_width <= 16384 && c->output_height >= 64 &&
			c->output_height <= 16384 && c->output_refresh_mhz >= 1000 &&
			c->output_refresh_mhz <= 1000000 && c->terminal && c->terminal[0] && c->font &&
			c->font[0] && c->titlebar_height >= 12 && c->titlebar_height <= 128 &&
			c->border_width >= 0 && c->border_width <= 32 && c->cascade_step >= 0 &&
			c->cascade_step <= 512 && c->button_count <= QW_BUTTON_KIND_COUNT &&
			c->realtime_cpu_ppm <= 1000000 && /* 0: auto */
			(c->realtime_period_us == 0 || /* vblank */
					(c->realtime_period_us >= 1000 && c->realtime_period_us <= 10000000)) &&
			c->realtime_idle_release <= 100000 && c->qos_reserved_ppm >= 50000 &&
			c->qos_reserved_ppm <= 1000000 && c->inactive_timeout_s >= 1 &&
			c->inactive_timeout_s <= 86400 && c->scheduling.hidden_frame_rate >= 1 &&
			c->scheduling.hidden_frame_rate <= 1000;
	FUZZ_RULE(ok, "a setting out of range after '%s'", line);
	for (size_t i = 0; i < c->binding_count; i++) {
		const struct qw_binding *b = &c->bindings[i];
		FUZZ_RULE(b->keysym != XKB_KEY_NoSymbol &&
						(b->action != QW_ACTION_EXEC || (b->arg && b->arg[0])),
				"a binding without its key or command after '%s'", line);
	}
	for (size_t i = 0; i < c->output_count; i++) {
		const struct qw_output_config *o = &c->outputs[i];
		FUZZ_RULE(o->name && o->name[0] &&
						(o->scale == 0 || (o->scale >= 0.25f && o->scale <= 8)) &&
						o->transform >= -1 && o->transform <= 7 && o->enabled >= -1 &&
						o->enabled <= 1,
				"an output setting out of range after '%s'", line);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
	if (size > 16384) {
		return 0;
	}
	char *text = fuzz_string(data, size);
	if (!text) {
		return 0;
	}
	struct qw_config a, b;
	config_init_defaults(&a);
	config_init_defaults(&b);
	char *p = text;
	while (*p) {
		size_t len = strcspn(p, "\n");
		bool last = p[len] == '\0';
		p[len] = '\0';
		char msg_a[256] = "", msg_b[256] = "";
		if (config_apply_line(&a, p, msg_a, sizeof(msg_a))) {
			FUZZ_RULE(config_apply_line(&b, p, msg_b, sizeof(msg_b)),
					"'%s' accepted once, then refused: %s", p, msg_b);
		} else {
			FUZZ_RULE(msg_a[0] != '\0', "'%s' refused without a reason", p);
		}
		FUZZ_RULE(same_settings(&a, &b), "'%s' (%s) changed the settings differently", p,
				msg_a[0] ? msg_a : "accepted");
		check_sane(&a, p);
		p += len + !last;
	}
	config_finish(&a);
	config_finish(&b);
	free(text);
	return 0;
}
