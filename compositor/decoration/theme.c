#include <math.h>
#include <pango/pangocairo.h>
#include <wlr/types/wlr_buffer.h>
#include <wlr/util/log.h>

#include "decoration/cairo_buffer.h"
#include "decoration/theme.h"

static void set_source(cairo_t *cr, const float c[4]) {
	cairo_set_source_rgba(cr, c[0], c[1], c[2], c[3]);
}

static void rounded_rect(cairo_t *cr, double x, double y, double w, double h, double r) {
	cairo_new_sub_path(cr);
	cairo_arc(cr, x + w - r, y + r, r, -M_PI / 2, 0);
	cairo_arc(cr, x + w - r, y + h - r, r, 0, M_PI / 2);
	cairo_arc(cr, x + r, y + h - r, r, M_PI / 2, M_PI);
	cairo_arc(cr, x + r, y + r, r, M_PI, 3 * M_PI / 2);
	cairo_close_path(cr);
}

/* Icons are drawn in a unit square (0..1) scaled to the icon box. */
static void draw_icon(cairo_t *cr, enum qw_button_kind kind) {
	switch (kind) {
	case QW_BUTTON_REALTIME:
		/* A lightning bolt: "make this fast". */
		cairo_move_to(cr, 0.60, 0.00);
		cairo_line_to(cr, 0.18, 0.56);
		cairo_line_to(cr, 0.46, 0.56);
		cairo_line_to(cr, 0.36, 1.00);
		cairo_line_to(cr, 0.82, 0.40);
		cairo_line_to(cr, 0.54, 0.40);
		cairo_close_path(cr);
		cairo_fill(cr);
		break;
	case QW_BUTTON_IDLE:
		/* A crescent moon: "run only when nothing else wants to". */
		cairo_arc(cr, 0.5, 0.5, 0.45, 0, 2 * M_PI);
		cairo_new_sub_path(cr);
		cairo_arc_negative(cr, 0.70, 0.36, 0.38, 2 * M_PI, 0);
		cairo_set_fill_rule(cr, CAIRO_FILL_RULE_EVEN_ODD);
		cairo_fill(cr);
		cairo_set_fill_rule(cr, CAIRO_FILL_RULE_WINDING);
		break;
	case QW_BUTTON_PAUSE:
		cairo_rectangle(cr, 0.16, 0.05, 0.24, 0.90);
		cairo_rectangle(cr, 0.60, 0.05, 0.24, 0.90);
		cairo_fill(cr);
		break;
	case QW_BUTTON_CLOSE:
		cairo_set_line_width(cr, 0.16);
		cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
		cairo_move_to(cr, 0.1, 0.1);
		cairo_line_to(cr, 0.9, 0.9);
		cairo_move_to(cr, 0.9, 0.1);
		cairo_line_to(cr, 0.1, 0.9);
		cairo_stroke(cr);
		break;
	case QW_BUTTON_KIND_COUNT:
		break;
	}
}

static struct wlr_buffer *render_button(const struct qw_theme *theme,
		const struct qw_config *config, enum qw_button_kind kind, enum qw_button_state state) {
	cairo_t *cr;
	int w = theme->button_width, h = theme->button_height;
	struct wlr_buffer *buffer = cairo_buffer_create(w, h, &cr);
	if (!buffer) {
		return NULL;
	}
	bool refused = state == QW_BUTTON_STATE_REFUSED;
	bool on = !refused && state >= QW_BUTTON_STATE_ON;
	enum qw_button_state base = on ? state - QW_BUTTON_STATE_ON
			: refused              ? QW_BUTTON_STATE_NORMAL
								   : state;
	const float *fill = NULL;
	float tinted[4];
	if (refused) {
		fill = config->colors[QW_COLOR_BUTTON_REFUSED];
	} else if (on) {
		/* On: solid accent; hover lightens it, pressed darkens it. */
		const float *accent = config->colors[QW_COLOR_BUTTON_ON];
		float k = base == QW_BUTTON_STATE_HOVER   ? 1.15f
				: base == QW_BUTTON_STATE_PRESSED ? 0.75f
												  : 1.0f;
		for (int i = 0; i < 3; i++) {
			tinted[i] = fminf(accent[i] * k, 1.0f);
		}
		tinted[3] = accent[3];
		fill = tinted;
	} else if (base == QW_BUTTON_STATE_HOVER) {
		fill = config->colors[kind == QW_BUTTON_CLOSE ? QW_COLOR_CLOSE_HOVER
													  : QW_COLOR_BUTTON_HOVER];
	} else if (base == QW_BUTTON_STATE_PRESSED) {
		fill = config->colors[QW_COLOR_BUTTON_PRESSED];
	}
	double inset = 2.0;
	if (fill) {
		set_source(cr, fill);
		rounded_rect(cr, inset, inset, w - 2 * inset, h - 2 * inset, 3.0);
		cairo_fill(cr);
	}
	/* Pressed buttons look sunken: the icon shifts by one pixel. */
	double shift = base == QW_BUTTON_STATE_PRESSED ? 1.0 : 0.0;
	double icon = fmin(w, h) * 0.5;
	cairo_save(cr);
	cairo_translate(cr, (w - icon) / 2 + shift, (h - icon) / 2 + shift);
	cairo_scale(cr, icon, icon);
	set_source(cr, config->colors[on ? QW_COLOR_BUTTON_ON_ICON : QW_COLOR_BUTTON_ICON]);
	draw_icon(cr, kind);
	cairo_restore(cr);
	if (refused) {
		/* A diagonal stroke: "asked for, not granted". */
		set_source(cr, config->colors[QW_COLOR_BUTTON_ICON]);
		cairo_set_line_width(cr, 2.0);
		cairo_move_to(cr, inset + 2, h - inset - 2);
		cairo_line_to(cr, w - inset - 2, inset + 2);
		cairo_stroke(cr);
	}
	cairo_destroy(cr);
	return buffer;
}

enum qw_button_state theme_button_state(bool on, bool hover, bool pressed) {
	enum qw_button_state s = pressed ? QW_BUTTON_STATE_PRESSED
			: hover                  ? QW_BUTTON_STATE_HOVER
									 : QW_BUTTON_STATE_NORMAL;
	return on ? s + QW_BUTTON_STATE_ON : s;
}

bool theme_init(struct qw_theme *theme, const struct qw_config *config) {
	*theme = (struct qw_theme){
		.button_width = config->titlebar_height,
		.button_height = config->titlebar_height,
		.title_padding = 8,
	};
	for (int k = 0; k < QW_BUTTON_KIND_COUNT; k++) {
		for (int s = 0; s < QW_BUTTON_STATE_COUNT; s++) {
			theme->buttons[k][s] = render_button(theme, config, k, s);
			if (!theme->buttons[k][s]) {
				wlr_log(WLR_ERROR, "failed to draw %s button", config_button_name(k));
				theme_finish(theme);
				return false;
			}
		}
	}
	return true;
}

void theme_finish(struct qw_theme *theme) {
	if (!theme) {
		return;
	}
	for (int k = 0; k < QW_BUTTON_KIND_COUNT; k++) {
		for (int s = 0; s < QW_BUTTON_STATE_COUNT; s++) {
			if (theme->buttons[k][s]) {
				wlr_buffer_drop(theme->buttons[k][s]);
				theme->buttons[k][s] = NULL;
			}
		}
	}
}

PangoLayout *theme_text_layout(cairo_t *cr, const struct qw_config *config, const char *text,
		int max_width) {
	PangoLayout *layout = pango_cairo_create_layout(cr);
	PangoFontDescription *font =
			pango_font_description_from_string(config->font ? config->font : "Sans 10");
	pango_layout_set_font_description(layout, font);
	pango_font_description_free(font);
	/* Titles come from clients unchecked, and a long one may have been cut
	 * mid-character: pango wants valid UTF-8 and warns at anything else. */
	char *valid = NULL;
	if (text && !g_utf8_validate(text, -1, NULL)) {
		text = valid = g_utf8_make_valid(text, -1);
	}
	pango_layout_set_text(layout, text ? text : "", -1);
	g_free(valid);
	pango_layout_set_single_paragraph_mode(layout, TRUE);
	if (max_width > 0) {
		pango_layout_set_ellipsize(layout, PANGO_ELLIPSIZE_END);
		pango_layout_set_width(layout, max_width * PANGO_SCALE);
	}
	return layout;
}

void theme_text_size(const struct qw_config *config, const char *text, int max_width, int *width,
		int *height) {
	cairo_surface_t *scratch = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1);
	cairo_t *cr = cairo_create(scratch);
	PangoLayout *layout = theme_text_layout(cr, config, text, max_width);
	pango_layout_get_pixel_size(layout, width, height);
	g_object_unref(layout);
	cairo_destroy(cr);
	cairo_surface_destroy(scratch);
}

struct wlr_buffer *theme_render_title(const struct qw_config *config, const char *text, int width,
		int height, enum qw_color color) {
	if (width <= 0 || height <= 0) {
		return NULL;
	}
	/* Measure first: the buffer is only as wide as the text, since every
	 * pixel of it is blended on each frame that redraws the titlebar. */
	int text_w, text_h;
	theme_text_size(config, text, width, &text_w, &text_h);
	if (text_w > width) {
		text_w = width;
	}

	cairo_t *cr;
	struct wlr_buffer *buffer = cairo_buffer_create(text_w, height, &cr);
	if (!buffer) {
		return NULL; /* also for an empty title */
	}
	PangoLayout *layout = theme_text_layout(cr, config, text, width);
	set_source(cr, config->colors[color]);
	cairo_move_to(cr, 0, (height - text_h) / 2.0);
	pango_cairo_show_layout(cr, layout);
	g_object_unref(layout);
	cairo_destroy(cr);
	return buffer;
}
