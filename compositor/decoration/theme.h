/*
 * Prebuilt decoration images. Every visual state of every titlebar button
 * is drawn once at start-up into its own buffer; views only toggle which
 * scene node is enabled, so a hover or a class change never re-renders.
 */
#ifndef QOSWAY_THEME_H
#define QOSWAY_THEME_H

#include <pango/pangocairo.h>
#include <stdbool.h>
#include "config/config.h"

struct wlr_buffer;

enum qw_button_state {
	QW_BUTTON_STATE_NORMAL,
	QW_BUTTON_STATE_HOVER,
	QW_BUTTON_STATE_PRESSED,
	QW_BUTTON_STATE_ON,
	QW_BUTTON_STATE_ON_HOVER,
	QW_BUTTON_STATE_ON_PRESSED,
	/* The QoS manager refused the request this button made (shown ~2 s). */
	QW_BUTTON_STATE_REFUSED,
	QW_BUTTON_STATE_COUNT,
};

struct qw_theme {
	int button_width, button_height;
	int title_padding;
	struct wlr_buffer *buttons[QW_BUTTON_KIND_COUNT][QW_BUTTON_STATE_COUNT];
};

bool theme_init(struct qw_theme *theme, const struct qw_config *config);
void theme_finish(struct qw_theme *theme);

/*
 * Render `text`, ellipsized to at most `width` pixels, into a transparent
 * buffer `height` high and only as wide as the text, in `color`. Returns
 * NULL on failure, for an empty title, or when width or height is not
 * positive.
 */
struct wlr_buffer *theme_render_title(const struct qw_config *config, const char *text, int width,
		int height, enum qw_color color);

enum qw_button_state theme_button_state(bool on, bool hover, bool pressed);

/* A single-line pango layout in the configured font, ellipsized to
 * max_width pixels when max_width > 0. The caller unrefs it. */
PangoLayout *theme_text_layout(cairo_t *cr, const struct qw_config *config, const char *text,
		int max_width);
/* The pixel size `text` takes in the configured font. */
void theme_text_size(const struct qw_config *config, const char *text, int max_width, int *width,
		int *height);

#endif
