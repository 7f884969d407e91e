#include <glib.h>
#include <math.h>
#include <pango/pangocairo.h>
#include <stdio.h>
#include <string.h>

#include "monitor.h"

#define MARGIN 12
#define HEADER_H 64
#define ROW_H 76
#define ROW_GAP 6
#define STATUS_H 26
#define NAME_W 230
#define HIST_W 220
#define BAR_H 20
#define MIN_BAR_W 120
#define DIALOG_W 460
#define DIALOG_H 264
#define FIELD_H 26
#define OVERRUN_FLASH_S 2.0

struct rgb {
	double r, g, b;
};

/* Colours a test can find: distinct from each other and from the theme. */
#define C(r, g, b) \
	{ (r) / 255.0, (g) / 255.0, (b) / 255.0 }
static const struct rgb col_bg = C(0x1e, 0x20, 0x24);
static const struct rgb col_row = C(0x2a, 0x2d, 0x33);
static const struct rgb col_row_selected = C(0x30, 0x44, 0x60);
static const struct rgb col_text = C(0xe8, 0xe8, 0xe8);
static const struct rgb col_dim = C(0x9a, 0xa0, 0xa8);
static const struct rgb col_bar_bg = C(0x12, 0x13, 0x16);
static const struct rgb col_own = C(0x3c, 0x9c, 0xe0);
static const struct rgb col_billed = C(0xf0, 0x9a, 0x28);
static const struct rgb col_slice = C(0xff, 0xff, 0xff);
static const struct rgb col_overrun = C(0xe0, 0x3c, 0x3c);
static const struct rgb col_ok = C(0x5c, 0xc0, 0x6c);
static const struct rgb col_capacity_free = C(0x3a, 0x3e, 0x46);
static const struct rgb col_granted = C(0x8c, 0x6c, 0xd8);
static const struct rgb col_dialog = C(0x26, 0x29, 0x30);
static const struct rgb col_field = C(0x14, 0x16, 0x1a);
static const struct rgb col_focus = C(0x3c, 0x9c, 0xe0);
#undef C

static void set_color(cairo_t *cr, const struct rgb *c) {
	cairo_set_source_rgb(cr, c->r, c->g, c->b);
}

static void fill_rect(cairo_t *cr, const struct mon_rect *r, const struct rgb *c) {
	if (r->width <= 0 || r->height <= 0) {
		return;
	}
	set_color(cr, c);
	cairo_rectangle(cr, r->x, r->y, r->width, r->height);
	cairo_fill(cr);
}

static void stroke_rect(cairo_t *cr, const struct mon_rect *r, const struct rgb *c, double w) {
	set_color(cr, c);
	cairo_set_line_width(cr, w);
	cairo_rectangle(cr, r->x + w / 2, r->y + w / 2, r->width - w, r->height - w);
	cairo_stroke(cr);
}

/*
 * Draws text at (x, y) in at most `lines` lines of max_width, cut with an
 * ellipsis; returns its width.
 */
static int draw_lines(cairo_t *cr, const char *text, const char *font, int x, int y, int max_width,
		int lines, const struct rgb *c) {
	PangoLayout *layout = pango_cairo_create_layout(cr);
	PangoFontDescription *desc = pango_font_description_from_string(font);
	pango_layout_set_font_description(layout, desc);
	pango_font_description_free(desc);
	/* Fixed-size buffers may cut a title mid-character; pango wants UTF-8. */
	char *valid = g_utf8_validate(text, -1, NULL) ? NULL : g_utf8_make_valid(text, -1);
	pango_layout_set_text(layout, valid ? valid : text, -1);
	g_free(valid);
	if (lines <= 1) {
		pango_layout_set_single_paragraph_mode(layout, TRUE);
	}
	if (max_width > 0) {
		pango_layout_set_ellipsize(layout, PANGO_ELLIPSIZE_END);
		pango_layout_set_width(layout, max_width * PANGO_SCALE);
		if (lines > 1) {
			pango_layout_set_wrap(layout, PANGO_WRAP_WORD_CHAR);
			pango_layout_set_height(layout, -lines);
		}
	}
	int w, h;
	pango_layout_get_pixel_size(layout, &w, &h);
	set_color(cr, c);
	cairo_move_to(cr, x, y);
	pango_cairo_show_layout(cr, layout);
	g_object_unref(layout);
	return w;
}

static int draw_text(cairo_t *cr, const char *text, const char *font, int x, int y, int max_width,
		const struct rgb *c) {
	return draw_lines(cr, text, font, x, y, max_width, 1, c);
}

void mon_draw_preferred_size(size_t n_reserves, int *width, int *height) {
	size_t rows = n_reserves < 3 ? 3 : n_reserves > 8 ? 8 : n_reserves;
	*width = 960;
	*height = HEADER_H + (int)rows * (ROW_H + ROW_GAP) + STATUS_H + MARGIN;
}

static int scaled(uint64_t part, uint64_t whole, int width) {
	if (whole == 0) {
		return 0;
	}
	double w = (double)part / (double)whole * width;
	return w > width ? width : (int)lround(w);
}

static void layout_row(const struct mon_reserve *r, int x, int y, int width,
		struct mon_row_layout *row) {
	row->row = (struct mon_rect){ x, y, width, ROW_H };
	row->name = (struct mon_rect){ x + 8, y + 6, NAME_W - 8, 20 };
	int bar_x = x + NAME_W + 12;
	int bar_w = width - NAME_W - HIST_W - 36;
	bar_w = bar_w < MIN_BAR_W ? MIN_BAR_W : bar_w;
	row->bar = (struct mon_rect){ bar_x, y + 8, bar_w, BAR_H };
	row->history = (struct mon_rect){ x + width - HIST_W - 8, y + 6, HIST_W, ROW_H - 12 };
	row->slice_x = -1;
	row->own = row->billed = (struct mon_rect){ bar_x, y + 8, 0, BAR_H };
	if (r->period_us == 0) {
		return;
	}
	/* The bar is one period; use past it (threads on several CPUs) is cut. */
	uint64_t billed = r->last_billed_us < r->last_used_us ? r->last_billed_us : r->last_used_us;
	int own_w = scaled(r->last_used_us - billed, r->period_us, bar_w);
	int billed_w = scaled(billed, r->period_us, bar_w);
	billed_w = own_w + billed_w > bar_w ? bar_w - own_w : billed_w;
	row->own.width = own_w;
	row->billed = (struct mon_rect){ bar_x + own_w, y + 8, billed_w, BAR_H };
	if (r->slice_us) {
		row->slice_x = bar_x + scaled(r->slice_us, r->period_us, bar_w);
	}
}

void mon_draw_layout(const struct mon_model *model, const struct mon_view *view,
		const struct mon_editor *editor, int width, int height, struct mon_layout *layout) {
	memset(layout, 0, sizeof(*layout));
	layout->width = width;
	layout->height = height;
	int inner = width - 2 * MARGIN;
	layout->capacity_bar = (struct mon_rect){ MARGIN, 36, inner, 16 };
	layout->capacity_granted = layout->capacity_bar;
	layout->capacity_granted.width =
			model->have_capacity ? scaled(model->granted_ppm, model->total_ppm, inner) : 0;
	int y = HEADER_H;
	int bottom = height - STATUS_H;
	for (size_t i = view->scroll; i < model->n_reserves && y + ROW_H <= bottom; i++) {
		struct mon_row_layout *row = &layout->rows[layout->n_rows++];
		layout_row(&model->reserves[i], MARGIN, y, inner, row);
		row->index = i;
		y += ROW_H + ROW_GAP;
	}
	layout->status = (struct mon_rect){ MARGIN, height - STATUS_H, inner, STATUS_H };
	layout->dialog_open = editor->open;
	if (!editor->open) {
		return;
	}
	int dx = (width - DIALOG_W) / 2, dy = (height - DIALOG_H) / 2;
	dy = dy < 4 ? 4 : dy;
	layout->dialog = (struct mon_rect){ dx, dy, DIALOG_W, DIALOG_H };
	for (int f = 0; f < MON_FIELD_COUNT; f++) {
		layout->fields[f] =
				(struct mon_rect){ dx + 120, dy + 44 + f * (FIELD_H + 8), DIALOG_W - 140, FIELD_H };
	}
	int below = dy + 44 + MON_FIELD_COUNT * (FIELD_H + 8);
	layout->message = (struct mon_rect){ dx + 16, below + 4, DIALOG_W - 32, 36 };
	layout->apply = (struct mon_rect){ dx + DIALOG_W - 216, dy + DIALOG_H - 40, 96, 28 };
	layout->cancel = (struct mon_rect){ dx + DIALOG_W - 112, dy + DIALOG_H - 40, 96, 28 };
}

static void format_ms(char *out, size_t len, uint64_t us) {
	if (us % 1000 == 0) {
		snprintf(out, len, "%llu ms", (unsigned long long)(us / 1000));
	} else {
		snprintf(out, len, "%.1f ms", (double)us / 1000.0);
	}
}

static void draw_header(cairo_t *cr, const struct mon_model *model, const struct mon_layout *l) {
	draw_text(cr, "qosway monitor", "Sans Bold 12", MARGIN, 8, 200, &col_text);
	char text[320];
	if (!model->connected) {
		snprintf(text, sizeof(text), "not connected to the compositor");
	} else if (model->qos_error[0]) {
		snprintf(text, sizeof(text), "QoS: %s", model->qos_error);
	} else if (model->have_capacity) {
		snprintf(text, sizeof(text), "admission: %.1f%% of %.1f%% granted (%d CPUs)%s%s",
				(double)model->granted_ppm / 1e4, (double)model->total_ppm / 1e4, model->ncpus,
				model->watchdog_alarms > 0 ? ", watchdog alarms: " : "",
				model->watchdog_alarms > 0 ? (model->watchdog_cooldown ? "cooling down" : "some")
										   : "");
	} else {
		snprintf(text, sizeof(text), "admission: unknown");
	}
	draw_text(cr, text, "Sans 10", MARGIN + 200, 10, l->width - 2 * MARGIN - 200, &col_dim);
	fill_rect(cr, &l->capacity_bar, &col_capacity_free);
	fill_rect(cr, &l->capacity_granted, &col_granted);
}

static void draw_history(cairo_t *cr, const struct mon_reserve *r, const struct mon_rect *h) {
	fill_rect(cr, h, &col_bar_bg);
	if (r->period_us == 0) {
		draw_text(cr, "no period", "Sans 8", h->x + 6, h->y + h->height / 2 - 7, h->width - 12,
				&col_dim);
		return;
	}
	double step = (double)h->width / MON_HISTORY;
	/* Newest sample at the right edge. */
	double x0 = h->x + h->width - step * (double)r->hist_len;
	for (size_t i = 0; i < r->hist_len; i++) {
		double own = r->hist_own[i] > 1 ? 1 : r->hist_own[i];
		double billed = r->hist_billed[i];
		billed = own + billed > 1 ? 1 - own : billed;
		double x = x0 + step * (double)i;
		double own_h = own * h->height, billed_h = billed * h->height;
		set_color(cr, &col_own);
		cairo_rectangle(cr, x, h->y + h->height - own_h, step, own_h);
		cairo_fill(cr);
		set_color(cr, &col_billed);
		cairo_rectangle(cr, x, h->y + h->height - own_h - billed_h, step, billed_h);
		cairo_fill(cr);
	}
	if (r->slice_us) {
		double sy = h->y + h->height - (double)r->slice_us / (double)r->period_us * h->height;
		sy = sy < h->y ? h->y : sy;
		set_color(cr, &col_slice);
		cairo_set_line_width(cr, 1);
		double dash[] = { 4, 3 };
		cairo_set_dash(cr, dash, 2, 0);
		cairo_move_to(cr, h->x, floor(sy) + 0.5);
		cairo_line_to(cr, h->x + h->width, floor(sy) + 0.5);
		cairo_stroke(cr);
		cairo_set_dash(cr, NULL, 0, 0);
	}
}

static void draw_members(cairo_t *cr, const struct mon_model *model, const struct mon_reserve *r,
		int x, int y, int width) {
	char text[1024];
	size_t off = 0;
	if (r->total_members == 0) {
		snprintf(text, sizeof(text), "no members");
	} else {
		off = (size_t)snprintf(text, sizeof(text), "%zu member%s:", r->total_members,
				r->total_members == 1 ? "" : "s");
	}
	for (size_t m = 0; m < r->n_members && off + 1 < sizeof(text); m++) {
		char titles[256];
		mon_model_titles(model, r->members[m].pid, titles, sizeof(titles));
		char who[32];
		if (r->members[m].tid) {
			snprintf(who, sizeof(who), "%d/%d", r->members[m].pid, r->members[m].tid);
		} else {
			snprintf(who, sizeof(who), "%d", r->members[m].pid);
		}
		int n = snprintf(text + off, sizeof(text) - off, "%s %s%s%s%s", m ? "," : "", who,
				titles[0] ? " \xe2\x80\x9c" : "", titles, titles[0] ? "\xe2\x80\x9d" : "");
		if (n < 0 || (size_t)n >= sizeof(text) - off) {
			break;
		}
		off += (size_t)n;
	}
	draw_text(cr, text, "Sans 9", x, y, width, &col_dim);
}

static void draw_row(cairo_t *cr, const struct mon_model *model, const struct mon_reserve *r,
		const struct mon_row_layout *row, bool selected, double now) {
	fill_rect(cr, &row->row, selected ? &col_row_selected : &col_row);
	bool flash = r->overrun_at > 0 && now - r->overrun_at < OVERRUN_FLASH_S;
	if (flash) {
		stroke_rect(cr, &row->row, &col_overrun, 2);
	}
	draw_text(cr, r->name, "Sans Bold 11", row->name.x, row->name.y, row->name.width, &col_text);
	char line[256], per[32], sl[32];
	format_ms(per, sizeof(per), r->period_us);
	format_ms(sl, sizeof(sl), r->slice_us);
	const char *state = strcmp(r->policy, "qos") != 0 ? ""
			: r->granted                              ? ", granted"
													  : ", not granted";
	if (r->period_us && r->slice_us) {
		snprintf(line, sizeof(line), "%s %s / %s \xe2\x86\x92 %s%s%s", r->policy, sl, per,
				r->fallback[0] ? r->fallback : "?", state, r->in_fallback ? ", in fallback" : "");
	} else {
		snprintf(line, sizeof(line), "%s, no limit%s", r->policy, state);
	}
	draw_text(cr, line, "Sans 9", row->name.x, row->name.y + 22, row->name.width,
			r->in_fallback ? &col_overrun : &col_dim);

	fill_rect(cr, &row->bar, &col_bar_bg);
	fill_rect(cr, &row->own, &col_own);
	fill_rect(cr, &row->billed, &col_billed);
	if (row->slice_x >= 0) {
		set_color(cr, &col_slice);
		cairo_rectangle(cr, row->slice_x - 1, row->bar.y - 3, 2, row->bar.height + 6);
		cairo_fill(cr);
	}
	char used[32], billed[32], caption[256];
	if (r->period_us) {
		uint64_t b = r->last_billed_us < r->last_used_us ? r->last_billed_us : r->last_used_us;
		format_ms(used, sizeof(used), r->last_used_us - b);
		format_ms(billed, sizeof(billed), b);
		snprintf(caption, sizeof(caption), "last period: own %s + billed %s of %s", used, billed,
				per);
	} else {
		snprintf(caption, sizeof(caption), "no period: use is not measured");
	}
	int cw = draw_text(cr, caption, "Sans 9", row->bar.x, row->bar.y + BAR_H + 4, row->bar.width,
			&col_dim);
	snprintf(line, sizeof(line), "%llu overrun%s", (unsigned long long)r->overruns,
			r->overruns == 1 ? "" : "s");
	int room = row->bar.width - cw - 12;
	if (room > 40) {
		draw_text(cr, line, "Sans 9", row->bar.x + cw + 12, row->bar.y + BAR_H + 4, room,
				r->overruns ? &col_overrun : &col_dim);
	}
	draw_members(cr, model, r, row->name.x, row->row.y + 54, row->history.x - row->name.x - 12);
	draw_history(cr, r, &row->history);
}

static const char *const field_labels[MON_FIELD_COUNT] = {
	"Policy",
	"Period",
	"Slice",
	"Fallback",
};

static void draw_dialog(cairo_t *cr, const struct mon_editor *editor, const struct mon_layout *l) {
	/* Shade what is behind: the dialog is modal. */
	cairo_set_source_rgba(cr, 0, 0, 0, 0.5);
	cairo_paint(cr);
	fill_rect(cr, &l->dialog, &col_dialog);
	stroke_rect(cr, &l->dialog, &col_dim, 1);
	char title[128];
	snprintf(title, sizeof(title), "Reserve %s", editor->reserve);
	draw_text(cr, title, "Sans Bold 11", l->dialog.x + 16, l->dialog.y + 12, l->dialog.width - 32,
			&col_text);
	for (int f = 0; f < MON_FIELD_COUNT; f++) {
		const struct mon_rect *r = &l->fields[f];
		draw_text(cr, field_labels[f], "Sans 10", l->dialog.x + 16, r->y + 4, 100, &col_dim);
		fill_rect(cr, r, &col_field);
		if ((int)editor->focus == f) {
			stroke_rect(cr, r, &col_focus, 2);
		}
		char shown[48];
		bool choice = f == MON_FIELD_POLICY || f == MON_FIELD_FALLBACK;
		snprintf(shown, sizeof(shown), "%s%s", editor->fields[f],
				(int)editor->focus == f && !choice ? "|" : "");
		draw_text(cr, shown[0] ? shown : "(none)", "Monospace 10", r->x + 8, r->y + 4,
				r->width - 16, shown[0] ? &col_text : &col_dim);
		if (choice) {
			draw_text(cr, "\xe2\x97\x80 \xe2\x96\xb6", "Sans 8", r->x + r->width - 36, r->y + 6, 0,
					&col_dim);
		}
	}
	const struct mon_rect *m = &l->message;
	if (editor->message[0]) {
		if (editor->message_bad) {
			/* A refusal is a red band: visible at a glance, and to a test. */
			fill_rect(cr, m, &col_overrun);
			draw_lines(cr, editor->message, "Sans 9", m->x + 8, m->y + 3, m->width - 16, 2,
					&col_text);
		} else {
			draw_text(cr, editor->message, "Sans 9", m->x + 8, m->y + 10, m->width - 16, &col_ok);
		}
	} else {
		draw_text(cr,
				"Tab: next field   \xe2\x86\x90 \xe2\x86\x92: policy   Enter: apply   Esc: close",
				"Sans 8", m->x + 8, m->y + 10, m->width - 16, &col_dim);
	}
	fill_rect(cr, &l->apply, &col_focus);
	draw_text(cr, editor->waiting ? "Applying" : "Apply", "Sans 10", l->apply.x + 22,
			l->apply.y + 5, 0, &col_text);
	fill_rect(cr, &l->cancel, &col_capacity_free);
	draw_text(cr, "Close", "Sans 10", l->cancel.x + 26, l->cancel.y + 5, 0, &col_text);
}

void mon_draw(cairo_t *cr, const struct mon_model *model, const struct mon_view *view,
		const struct mon_editor *editor, const struct mon_layout *layout, double now) {
	set_color(cr, &col_bg);
	cairo_paint(cr);
	draw_header(cr, model, layout);
	for (size_t i = 0; i < layout->n_rows; i++) {
		size_t index = layout->rows[i].index;
		draw_row(cr, model, &model->reserves[index], &layout->rows[i], index == view->selected,
				now);
	}
	if (model->connected && !model->qos_error[0] && model->n_reserves == 0) {
		draw_text(cr, "no reserves yet", "Sans 10", MARGIN + 8, HEADER_H + 8, 0, &col_dim);
	}
	const struct mon_rect *s = &layout->status;
	char hint[512];
	size_t shown = layout->n_rows, total = model->n_reserves + model->hidden_reserves;
	snprintf(hint, sizeof(hint),
			"%s%s%zu of %zu reserves  \xc2\xb7  \xe2\x86\x91\xe2\x86\x93 select  "
			"Enter edit  q quit",
			model->status, model->status[0] ? "  \xc2\xb7  " : "", shown, total);
	draw_text(cr, hint, "Sans 9", s->x, s->y + 5, s->width,
			model->status_bad ? &col_overrun : &col_dim);
	if (editor->open) {
		draw_dialog(cr, editor, layout);
	}
}

static struct json_object *rect_json(const struct mon_rect *r) {
	struct json_object *o = json_object_new_object();
	json_object_object_add(o, "x", json_object_new_int(r->x));
	json_object_object_add(o, "y", json_object_new_int(r->y));
	json_object_object_add(o, "width", json_object_new_int(r->width));
	json_object_object_add(o, "height", json_object_new_int(r->height));
	return o;
}

static struct json_object *color_json(const struct rgb *c) {
	char hex[8];
	snprintf(hex, sizeof(hex), "#%02X%02X%02X", (int)lround(c->r * 255), (int)lround(c->g * 255),
			(int)lround(c->b * 255));
	return json_object_new_string(hex);
}

struct json_object *mon_layout_json(const struct mon_layout *layout,
		const struct mon_model *model) {
	struct json_object *o = json_object_new_object();
	json_object_object_add(o, "width", json_object_new_int(layout->width));
	json_object_object_add(o, "height", json_object_new_int(layout->height));
	json_object_object_add(o, "capacity_bar", rect_json(&layout->capacity_bar));
	json_object_object_add(o, "capacity_granted", rect_json(&layout->capacity_granted));
	struct json_object *rows = json_object_new_array();
	for (size_t i = 0; i < layout->n_rows; i++) {
		const struct mon_row_layout *row = &layout->rows[i];
		struct json_object *ro = json_object_new_object();
		const struct mon_reserve *r = &model->reserves[row->index];
		json_object_object_add(ro, "name", json_object_new_string(r->name));
		json_object_object_add(ro, "row", rect_json(&row->row));
		json_object_object_add(ro, "bar", rect_json(&row->bar));
		json_object_object_add(ro, "own", rect_json(&row->own));
		json_object_object_add(ro, "billed", rect_json(&row->billed));
		json_object_object_add(ro, "history", rect_json(&row->history));
		json_object_object_add(ro, "slice_x", json_object_new_int(row->slice_x));
		json_object_object_add(ro, "overruns", json_object_new_int64((int64_t)r->overruns));
		/* The members as drawn, with the titles the row shows for them. */
		struct json_object *members = json_object_new_array();
		for (size_t m = 0; m < r->n_members; m++) {
			char titles[256];
			mon_model_titles(model, r->members[m].pid, titles, sizeof(titles));
			struct json_object *mo = json_object_new_object();
			json_object_object_add(mo, "pid", json_object_new_int(r->members[m].pid));
			json_object_object_add(mo, "titles", json_object_new_string(titles));
			json_object_array_add(members, mo);
		}
		json_object_object_add(ro, "members", members);
		json_object_array_add(rows, ro);
	}
	json_object_object_add(o, "rows", rows);
	if (layout->dialog_open) {
		struct json_object *d = json_object_new_object();
		json_object_object_add(d, "rect", rect_json(&layout->dialog));
		struct json_object *fields = json_object_new_object();
		static const char *const keys[] = { "policy", "period", "slice", "fallback" };
		for (int f = 0; f < MON_FIELD_COUNT; f++) {
			json_object_object_add(fields, keys[f], rect_json(&layout->fields[f]));
		}
		json_object_object_add(d, "fields", fields);
		json_object_object_add(d, "message", rect_json(&layout->message));
		json_object_object_add(d, "apply", rect_json(&layout->apply));
		json_object_object_add(d, "close", rect_json(&layout->cancel));
		json_object_object_add(o, "dialog", d);
	} else {
		json_object_object_add(o, "dialog", NULL);
	}
	json_object_object_add(o, "status", rect_json(&layout->status));
	struct json_object *colors = json_object_new_object();
	json_object_object_add(colors, "background", color_json(&col_bg));
	json_object_object_add(colors, "row", color_json(&col_row));
	json_object_object_add(colors, "row_selected", color_json(&col_row_selected));
	json_object_object_add(colors, "bar", color_json(&col_bar_bg));
	json_object_object_add(colors, "own", color_json(&col_own));
	json_object_object_add(colors, "billed", color_json(&col_billed));
	json_object_object_add(colors, "slice", color_json(&col_slice));
	json_object_object_add(colors, "overrun", color_json(&col_overrun));
	json_object_object_add(colors, "refusal", color_json(&col_overrun));
	json_object_object_add(colors, "capacity_free", color_json(&col_capacity_free));
	json_object_object_add(colors, "capacity_granted", color_json(&col_granted));
	json_object_object_add(o, "colors", colors);
	return o;
}
