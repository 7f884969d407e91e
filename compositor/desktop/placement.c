#include <wlr/types/wlr_cursor.h>
#include <wlr/types/wlr_xdg_shell.h>

#include "decoration/decoration.h"
#include "output/output.h"
#include "desktop/placement.h"
#include "server.h"
#include "desktop/view.h"
#include "desktop/view_output.h"

/* A window's content box and the frame around it, in layout coordinates. */
struct frame {
	int x, y, width, height; /* content */
	int border, top; /* frame widths: every side, and above the content */
};

static struct frame frame_of(struct qw_view *view) {
	return (struct frame){
		.x = view->x,
		.y = view->y,
		.width = view->width,
		.height = view->height,
		.border = decoration_border(&view->deco, view->server),
		.top = decoration_top(&view->deco, view->server),
	};
}

static int frame_width(const struct frame *f) {
	return f->width + 2 * f->border;
}

static int frame_height(const struct frame *f) {
	return f->height + f->top + 2 * f->border;
}

/* Shrink the content so the frame fits `area`, but not below the minimum
 * size the client declared (it would not take it). */
static void fit_size(struct qw_view *view, struct frame *f, struct wlr_box area) {
	int min_width = 1, min_height = 1;
	if (view->toplevel) {
		if (view->toplevel->current.min_width > 0) {
			min_width = (int)view->toplevel->current.min_width;
		}
		if (view->toplevel->current.min_height > 0) {
			min_height = (int)view->toplevel->current.min_height;
		}
	}
	if (frame_width(f) > area.width) {
		f->width = area.width - 2 * f->border;
	}
	if (frame_height(f) > area.height) {
		f->height = area.height - f->top - 2 * f->border;
	}
	if (f->width < min_width) {
		f->width = min_width;
	}
	if (f->height < min_height) {
		f->height = min_height;
	}
}

/* Move the frame inside `area`. One too wide keeps its right end inside,
 * where the titlebar buttons are; one too tall keeps its titlebar. */
static void clamp_position(struct frame *f, struct wlr_box area) {
	int left = f->x - f->border, top = f->y - f->border - f->top;
	int max_left = area.x + area.width - frame_width(f);
	int max_top = area.y + area.height - frame_height(f);
	if (left > max_left || frame_width(f) > area.width) {
		left = max_left;
	}
	if (left < area.x && frame_width(f) <= area.width) {
		left = area.x;
	}
	if (top > max_top) {
		top = max_top;
	}
	if (top < area.y) {
		top = area.y;
	}
	f->x = left + f->border;
	f->y = top + f->border + f->top;
}

/* The mapped window of an xdg dialog's parent, or NULL. */
static struct qw_view *parent_view(struct qw_view *view) {
	if (!view->toplevel || !view->toplevel->parent || !view->toplevel->parent->data) {
		return NULL;
	}
	struct qw_node_desc *desc = node_desc_find(view->toplevel->parent->data);
	struct qw_view *parent = desc ? desc->view : NULL;
	return parent && parent->mapped && !parent->minimized ? parent : NULL;
}

static void cascade(struct qw_view *view, struct frame *f, struct wlr_box area) {
	struct qw_server *server = view->server;
	int step = server->config.cascade_step;
	int room_x = area.width - frame_width(f), room_y = area.height - frame_height(f);
	int room = room_x < room_y ? room_x : room_y;
	int max_steps = step > 0 && room > 0 ? room / step + 1 : 1;
	int k = (int)(server->cascade_index++ % (unsigned int)max_steps);
	f->x = area.x + f->border + k * step;
	f->y = area.y + f->border + f->top + k * step;
}

/* Ask for the new size only if it changed: a configure costs a frame. */
static void apply(struct qw_view *view, const struct frame *f) {
	if (f->width != view->width || f->height != view->height) {
		view_set_geometry(view, f->x, f->y, f->width, f->height);
	} else if (f->x != view->x || f->y != view->y) {
		view_move_to(view, f->x, f->y);
	}
}

void placement_place_new(struct qw_view *view) {
	struct qw_server *server = view->server;
	struct qw_view *parent = parent_view(view);
	struct qw_output *output = parent ? view_main_output(parent) : NULL;
	if (!output) {
		output = output_at(server, server->cursor->x, server->cursor->y);
	}
	if (!output) {
		view_move_to(view, 0, 0);
		return;
	}
	struct wlr_box area = output->usable_area;
	struct frame f = frame_of(view);
	fit_size(view, &f, area);
	if (parent) {
		/* Centred over the parent's frame, so the two are seen together. */
		struct wlr_box pf = view_frame_box(parent);
		f.x = pf.x + (pf.width - frame_width(&f)) / 2 + f.border;
		f.y = pf.y + (pf.height - frame_height(&f)) / 2 + f.border + f.top;
	} else {
		cascade(view, &f, area);
	}
	clamp_position(&f, area);
	apply(view, &f);
}

static bool box_inside(struct wlr_box inner, struct wlr_box outer) {
	return inner.x >= outer.x && inner.y >= outer.y &&
			inner.x + inner.width <= outer.x + outer.width &&
			inner.y + inner.height <= outer.y + outer.height;
}

void placement_usable_area_changed(struct qw_output *output) {
	struct wlr_box area = output->usable_area;
	if (area.width <= 0 || area.height <= 0) {
		return;
	}
	struct qw_view *view;
	wl_list_for_each(view, &output->server->views, link) {
		if (!view->mapped || view->minimized || view->fullscreen ||
				view_main_output(view) != output) {
			continue;
		}
		if (view->maximized) {
			/* Maximized is the usable area, whatever it is now. */
			struct frame f = frame_of(view);
			f.width = area.width - 2 * f.border;
			f.height = area.height - f.top - 2 * f.border;
			f.x = area.x + f.border;
			f.y = area.y + f.border + f.top;
			apply(view, &f);
			continue;
		}
		/* A window whose titlebar can still be reached stays where the
		 * user put it, even partly off screen. */
		if (box_inside(view_titlebar_box(view), area)) {
			continue;
		}
		struct frame f = frame_of(view);
		fit_size(view, &f, area);
		clamp_position(&f, area);
		apply(view, &f);
	}
}
