#include <stdint.h>
#include <wlr/types/wlr_output_layout.h>

#include "output.h"
#include "view.h"
#include "view_output.h"

struct qw_output *view_main_output(struct qw_view *view) {
	if (!view->mapped || view->minimized) {
		return NULL;
	}
	struct qw_server *server = view->server;
	struct wlr_box frame = view_frame_box(view);
	struct qw_output *best = NULL;
	int64_t best_area = 0;
	struct qw_output *output;
	wl_list_for_each(output, &server->outputs, link) {
		/* Disabled outputs are in no layout and show nothing. */
		if (!output->wlr_output->enabled ||
				!wlr_output_layout_get(server->output_layout, output->wlr_output)) {
			continue;
		}
		struct wlr_box box = output_layout_box(output), common;
		if (!wlr_box_intersection(&common, &frame, &box)) {
			continue;
		}
		int64_t area = (int64_t)common.width * common.height;
		if (area > best_area) {
			best = output;
			best_area = area;
		}
	}
	return best;
}
