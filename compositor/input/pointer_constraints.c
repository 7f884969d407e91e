#include <math.h>
#include <pixman.h>
#include <stdlib.h>
#include <wlr/types/wlr_cursor.h>
#include <wlr/types/wlr_pointer_constraints_v1.h>
#include <wlr/types/wlr_relative_pointer_v1.h>
#include <wlr/types/wlr_scene.h>
#include <wlr/types/wlr_seat.h>
#include <wlr/types/wlr_surface.h>
#include <wlr/util/log.h>
#include <wlr/util/region.h>

#include "input/cursor.h"
#include "input/pointer_constraints.h"
#include "server.h"

struct qw_pointer_constraints {
	struct qw_server *server;
	struct wlr_pointer_constraints_v1 *manager;
	struct wlr_relative_pointer_manager_v1 *relative;
	struct wlr_pointer_constraint_v1 *active;
	/* Where the cursor may go while confined, surface-local. */
	pixman_region32_t confine;
	/* The cursor must be brought into the region at the next check. */
	bool warp_pending;

	struct wl_listener new_constraint;
	struct wl_listener focus_change;
	struct wl_listener active_commit; /* the active constraint's surface */
};

struct qw_constraint {
	struct qw_pointer_constraints *pc;
	struct wlr_pointer_constraint_v1 *constraint;
	struct wl_listener set_region;
	struct wl_listener destroy;
};

struct surface_search {
	struct wlr_surface *surface;
	int x, y;
	bool found;
};

static void find_surface_iter(struct wlr_surface *surface, int sx, int sy, void *data) {
	struct surface_search *search = data;
	if (!search->found && surface == search->surface) {
		search->x = sx;
		search->y = sy;
		search->found = true;
	}
}

/* The surface's top-left in layout coordinates, if it is on screen. */
static bool surface_origin(struct qw_server *server, struct wlr_surface *surface, int *lx,
		int *ly) {
	struct surface_search search = { .surface = surface };
	wlr_scene_node_for_each_surface(&server->scene->node, find_surface_iter, &search);
	*lx = search.x;
	*ly = search.y;
	return search.found;
}

/* Bring the cursor inside the constraint's region if it is outside. */
static void check_region(struct qw_pointer_constraints *pc) {
	struct wlr_pointer_constraint_v1 *constraint = pc->active;
	struct qw_server *server = pc->server;
	pixman_region32_t *region = &constraint->region;
	int ox, oy;
	if (pc->warp_pending && surface_origin(server, constraint->surface, &ox, &oy)) {
		pc->warp_pending = false;
		double sx = server->cursor->x - ox;
		double sy = server->cursor->y - oy;
		int nboxes;
		pixman_box32_t *boxes = pixman_region32_rectangles(region, &nboxes);
		if (!pixman_region32_contains_point(region, (int)floor(sx), (int)floor(sy), NULL) &&
				nboxes > 0) {
			double cx = (boxes[0].x1 + boxes[0].x2) / 2.0;
			double cy = (boxes[0].y1 + boxes[0].y2) / 2.0;
			wlr_cursor_warp_closest(server->cursor, NULL, cx + ox, cy + oy);
			cursor_rebase(server, 0);
		}
	}
	/* A lock has an empty confine region, so no motion is allowed. */
	if (constraint->type == WLR_POINTER_CONSTRAINT_V1_CONFINED) {
		pixman_region32_copy(&pc->confine, region);
	} else {
		pixman_region32_clear(&pc->confine);
	}
}

/* A lock ends with the cursor where the client says it would be. */
static void warp_to_hint(struct qw_pointer_constraints *pc) {
	struct wlr_pointer_constraint_v1 *constraint = pc->active;
	if (!(constraint->current.committed & WLR_POINTER_CONSTRAINT_V1_STATE_CURSOR_HINT)) {
		return;
	}
	int ox, oy;
	if (!surface_origin(pc->server, constraint->surface, &ox, &oy)) {
		return;
	}
	double sx = constraint->current.cursor_hint.x;
	double sy = constraint->current.cursor_hint.y;
	wlr_cursor_warp(pc->server->cursor, NULL, sx + ox, sy + oy);
	/* The client already knows this position: no motion event for it. */
	wlr_seat_pointer_warp(constraint->seat, sx, sy);
}

static void handle_active_commit(struct wl_listener *listener, void *data) {
	struct qw_pointer_constraints *pc = wl_container_of(listener, pc, active_commit);
	if (pc->active) {
		check_region(pc);
	}
}

static void set_active(struct qw_pointer_constraints *pc,
		struct wlr_pointer_constraint_v1 *constraint) {
	if (pc->active == constraint) {
		return;
	}
	wl_list_remove(&pc->active_commit.link);
	wl_list_init(&pc->active_commit.link);
	if (pc->active) {
		if (!constraint) {
			warp_to_hint(pc);
		}
		/* A oneshot constraint is destroyed by this; forget it first. */
		struct wlr_pointer_constraint_v1 *old = pc->active;
		pc->active = NULL;
		wlr_pointer_constraint_v1_send_deactivated(old);
	}
	pixman_region32_clear(&pc->confine);
	pc->active = constraint;
	if (!constraint) {
		return;
	}
	pc->warp_pending = true;
	/*
	 * wlroots recomputes constraint->region only on the surface's next
	 * commit; focus may arrive before it, so compute it now as it would.
	 */
	if (pixman_region32_not_empty(&constraint->current.region)) {
		pixman_region32_intersect(&constraint->region, &constraint->surface->input_region,
				&constraint->current.region);
	} else {
		pixman_region32_copy(&constraint->region, &constraint->surface->input_region);
	}
	check_region(pc);
	wlr_pointer_constraint_v1_send_activated(constraint);
	pc->active_commit.notify = handle_active_commit;
	wl_signal_add(&constraint->surface->events.commit, &pc->active_commit);
}

static void activate_for_focus(struct qw_pointer_constraints *pc, struct wlr_surface *surface) {
	struct wlr_pointer_constraint_v1 *constraint = surface
			? wlr_pointer_constraints_v1_constraint_for_surface(pc->manager, surface,
					  pc->server->seat)
			: NULL;
	set_active(pc, constraint);
}

static void handle_focus_change(struct wl_listener *listener, void *data) {
	struct qw_pointer_constraints *pc = wl_container_of(listener, pc, focus_change);
	struct wlr_seat_keyboard_focus_change_event *event = data;
	activate_for_focus(pc, event->new_surface);
}

static void handle_set_region(struct wl_listener *listener, void *data) {
	struct qw_constraint *qc = wl_container_of(listener, qc, set_region);
	if (qc->pc->active == qc->constraint) {
		qc->pc->warp_pending = true;
	}
}

static void handle_constraint_destroy(struct wl_listener *listener, void *data) {
	struct qw_constraint *qc = wl_container_of(listener, qc, destroy);
	struct qw_pointer_constraints *pc = qc->pc;
	if (pc->active == qc->constraint) {
		warp_to_hint(pc);
		wl_list_remove(&pc->active_commit.link);
		wl_list_init(&pc->active_commit.link);
		pixman_region32_clear(&pc->confine);
		pc->active = NULL;
	}
	wl_list_remove(&qc->set_region.link);
	wl_list_remove(&qc->destroy.link);
	free(qc);
}

static void handle_new_constraint(struct wl_listener *listener, void *data) {
	struct qw_pointer_constraints *pc = wl_container_of(listener, pc, new_constraint);
	struct wlr_pointer_constraint_v1 *constraint = data;
	struct qw_constraint *qc = calloc(1, sizeof(*qc));
	if (!qc) {
		wlr_log(WLR_ERROR, "out of memory for a pointer constraint");
		return;
	}
	qc->pc = pc;
	qc->constraint = constraint;
	qc->set_region.notify = handle_set_region;
	wl_signal_add(&constraint->events.set_region, &qc->set_region);
	qc->destroy.notify = handle_constraint_destroy;
	wl_signal_add(&constraint->events.destroy, &qc->destroy);
	if (pc->server->seat->keyboard_state.focused_surface == constraint->surface) {
		set_active(pc, constraint);
	}
}

void pointer_constraints_motion(struct qw_server *server, uint32_t time_msec, double *dx,
		double *dy, double dx_unaccel, double dy_unaccel) {
	struct qw_pointer_constraints *pc = server->pointer_constraints;
	if (!pc) {
		return;
	}
	wlr_relative_pointer_manager_v1_send_relative_motion(pc->relative, server->seat,
			(uint64_t)time_msec * 1000, *dx, *dy, dx_unaccel, dy_unaccel);
	if (!pc->active) {
		return;
	}
	int ox, oy;
	if (!surface_origin(server, pc->active->surface, &ox, &oy)) {
		return; /* not on screen (minimised, paused away): nothing to hold */
	}
	double sx = server->cursor->x - ox;
	double sy = server->cursor->y - oy;
	double sx_confined, sy_confined;
	if (!wlr_region_confine(&pc->confine, sx, sy, sx + *dx, sy + *dy, &sx_confined, &sy_confined)) {
		*dx = 0;
		*dy = 0;
		return;
	}
	*dx = sx_confined - sx;
	*dy = sy_confined - sy;
}

const char *pointer_constraints_active_type(struct qw_server *server) {
	struct qw_pointer_constraints *pc = server->pointer_constraints;
	if (!pc || !pc->active) {
		return NULL;
	}
	return pc->active->type == WLR_POINTER_CONSTRAINT_V1_LOCKED ? "locked" : "confined";
}

bool pointer_constraints_init(struct qw_server *server) {
	struct qw_pointer_constraints *pc = calloc(1, sizeof(*pc));
	if (!pc) {
		return false;
	}
	pc->server = server;
	pc->manager = wlr_pointer_constraints_v1_create(server->wl_display);
	pc->relative = wlr_relative_pointer_manager_v1_create(server->wl_display);
	if (!pc->manager || !pc->relative) {
		wlr_log(WLR_ERROR, "cannot create the pointer-constraints or relative-pointer global");
		free(pc);
		return false;
	}
	pixman_region32_init(&pc->confine);
	wl_list_init(&pc->active_commit.link);
	pc->new_constraint.notify = handle_new_constraint;
	wl_signal_add(&pc->manager->events.new_constraint, &pc->new_constraint);
	pc->focus_change.notify = handle_focus_change;
	wl_signal_add(&server->seat->keyboard_state.events.focus_change, &pc->focus_change);
	server->pointer_constraints = pc;
	return true;
}

void pointer_constraints_finish(struct qw_server *server) {
	struct qw_pointer_constraints *pc = server ? server->pointer_constraints : NULL;
	if (!pc) {
		return;
	}
	wl_list_remove(&pc->new_constraint.link);
	wl_list_remove(&pc->focus_change.link);
	wl_list_remove(&pc->active_commit.link);
	pixman_region32_fini(&pc->confine);
	server->pointer_constraints = NULL;
	free(pc);
}
