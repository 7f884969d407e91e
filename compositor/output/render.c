/*
 * Output rendering with occlusion culling.
 *
 * wlroots 0.15's scene renderer draws every node under the damage, bottom to
 * top, so a stack of opaque windows costs the sum of their areas on every
 * frame, and the whole damage is cleared first. We draw each node only where
 * no opaque node above it covers it, and clear only what no opaque node
 * covers. The scene graph still tracks damage, textures and each surface's
 * primary output; only the drawing is ours.
 */
#include <drm_fourcc.h>
#include <stdlib.h>
#include <wlr/render/pixman.h>
#include <wlr/render/wlr_renderer.h>
#include <wlr/types/wlr_buffer.h>
#include <wlr/render/wlr_texture.h>
#include <wlr/types/wlr_matrix.h>
#include <wlr/types/wlr_output.h>
#include <wlr/types/wlr_output_damage.h>
#include <wlr/types/wlr_presentation_time.h>
#include <wlr/types/wlr_scene.h>
#include <wlr/types/wlr_surface.h>
#include <wlr/types/wlr_xdg_shell.h>
#include <wlr/util/box.h>
#include <wlr/util/log.h>
#include <wlr/util/region.h>

#include "output/output.h"
#include "output/render.h"
#include "desktop/view.h"

struct render_item {
	struct wlr_scene_node *node;
	struct wlr_box box; /* output buffer coordinates */
	pixman_region32_t visible; /* damaged and not covered: what is drawn */
	uint64_t damaged_px, visible_px;
};

struct render_list {
	struct render_item *items;
	size_t len, cap;
};

static void scale_box(struct wlr_box *box, float scale) {
	box->width = (int)((box->x + box->width) * scale + 0.5f) - (int)(box->x * scale + 0.5f);
	box->height = (int)((box->y + box->height) * scale + 0.5f) - (int)(box->y * scale + 0.5f);
	box->x = (int)(box->x * scale + 0.5f);
	box->y = (int)(box->y * scale + 0.5f);
}

static bool node_size(struct wlr_scene_node *node, int *width, int *height) {
	switch (node->type) {
	case WLR_SCENE_NODE_SURFACE: {
		struct wlr_surface *surface = wlr_scene_surface_from_node(node)->surface;
		*width = surface->current.width;
		*height = surface->current.height;
		return true;
	}
	case WLR_SCENE_NODE_RECT: {
		struct wlr_scene_rect *rect = (struct wlr_scene_rect *)node;
		if (rect->color[3] <= 0.0f) {
			return false; /* invisible, kept only for hit-testing */
		}
		*width = rect->width;
		*height = rect->height;
		return true;
	}
	case WLR_SCENE_NODE_BUFFER: {
		struct wlr_scene_buffer *buffer = (struct wlr_scene_buffer *)node;
		*width = buffer->dst_width ? buffer->dst_width : buffer->buffer->width;
		*height = buffer->dst_height ? buffer->dst_height : buffer->buffer->height;
		return true;
	}
	default:
		return false;
	}
}

static bool list_push(struct render_list *list, struct wlr_scene_node *node,
		const struct wlr_box *box) {
	if (list->len == list->cap) {
		size_t cap = list->cap ? list->cap * 2 : 64;
		struct render_item *grown = realloc(list->items, cap * sizeof(*grown));
		if (!grown) {
			return false;
		}
		list->items = grown;
		list->cap = cap;
	}
	struct render_item *item = &list->items[list->len++];
	item->node = node;
	item->box = *box;
	pixman_region32_init(&item->visible);
	return true;
}

static struct wlr_texture *buffer_texture(struct wlr_scene_buffer *buffer,
		struct wlr_renderer *renderer) {
	/* The scene owns the texture and destroys it with the node. */
	if (!buffer->texture) {
		buffer->texture = wlr_texture_from_buffer(renderer, buffer->buffer);
	}
	return buffer->texture;
}

/* Collect drawable nodes bottom to top, with boxes in output coordinates. */
static void collect(struct render_list *list, struct wlr_scene_node *node, int lx, int ly,
		struct wlr_scene_output *scene_output) {
	if (!node->state.enabled) {
		return;
	}
	lx += node->state.x;
	ly += node->state.y;
	if (node->type == WLR_SCENE_NODE_ROOT || node->type == WLR_SCENE_NODE_TREE) {
		struct wlr_scene_node *child;
		wl_list_for_each(child, &node->state.children, state.link) {
			collect(list, child, lx, ly, scene_output);
		}
		return;
	}
	int width, height;
	if (!node_size(node, &width, &height) || width <= 0 || height <= 0) {
		return;
	}
	struct wlr_output *output = scene_output->output;
	struct wlr_box box = { lx - scene_output->x, ly - scene_output->y, width, height };
	scale_box(&box, output->scale);
	struct wlr_box output_box = { 0, 0, output->width, output->height };
	struct wlr_box unused;
	if (!wlr_box_intersection(&unused, &box, &output_box)) {
		return;
	}
	if (node->type == WLR_SCENE_NODE_BUFFER) {
		/* Textures cannot be created once rendering has begun. */
		buffer_texture((struct wlr_scene_buffer *)node, output->renderer);
	}
	list_push(list, node, &box);
}

/* The part of an item that hides everything below it, output coordinates. */
static void opaque_region(struct render_item *item, float scale, pixman_region32_t *out) {
	pixman_region32_init(out);
	struct wlr_scene_node *node = item->node;
	if (node->type == WLR_SCENE_NODE_RECT) {
		struct wlr_scene_rect *rect = (struct wlr_scene_rect *)node;
		if (rect->color[3] >= 1.0f) {
			pixman_region32_init_rect(out, item->box.x, item->box.y, item->box.width,
					item->box.height);
		}
	} else if (node->type == WLR_SCENE_NODE_SURFACE) {
		struct wlr_surface *surface = wlr_scene_surface_from_node(node)->surface;
		if (!wlr_surface_has_buffer(surface)) {
			return;
		}
		wlr_region_scale(out, &surface->opaque_region, scale);
		pixman_region32_translate(out, item->box.x, item->box.y);
		pixman_region32_intersect_rect(out, out, item->box.x, item->box.y, item->box.width,
				item->box.height);
	}
}

static void scissor(struct wlr_output *output, const pixman_box32_t *rect) {
	struct wlr_box box = {
		.x = rect->x1,
		.y = rect->y1,
		.width = rect->x2 - rect->x1,
		.height = rect->y2 - rect->y1,
	};
	int width, height;
	wlr_output_transformed_resolution(output, &width, &height);
	wlr_box_transform(&box, &box, wlr_output_transform_invert(output->transform), width, height);
	wlr_renderer_scissor(output->renderer, &box);
}

static pixman_format_code_t pixman_format_of(uint32_t drm_format) {
	switch (drm_format) {
	case DRM_FORMAT_XRGB8888:
		return PIXMAN_x8r8g8b8;
	case DRM_FORMAT_ARGB8888:
		return PIXMAN_a8r8g8b8;
	case DRM_FORMAT_XBGR8888:
		return PIXMAN_x8b8g8r8;
	case DRM_FORMAT_ABGR8888:
		return PIXMAN_a8b8g8r8;
	default:
		return 0;
	}
}

/*
 * wlroots 0.15's pixman renderer draws every texture as a transformed
 * composite with a solid mask over the whole output, clipped to the
 * scissor: about four times the cost of a plain copy for what every
 * unscaled window is. Such a buffer is copied (opaque) or blended (with
 * alpha) rectangle by rectangle straight into the output's image. False:
 * not such a case, draw it the wlroots way.
 */
static bool blit_item(struct render_item *item, struct wlr_output *output,
		struct wlr_buffer *buffer, enum wl_output_transform transform, const struct wlr_fbox *src) {
	struct wlr_renderer *renderer = output->renderer;
	if (!buffer || !wlr_renderer_is_pixman(renderer) || output->scale != 1.0f ||
			output->transform != WL_OUTPUT_TRANSFORM_NORMAL ||
			transform != WL_OUTPUT_TRANSFORM_NORMAL || item->box.width != buffer->width ||
			item->box.height != buffer->height ||
			(!wlr_fbox_empty(src) &&
					(src->x != 0 || src->y != 0 || src->width != buffer->width ||
							src->height != buffer->height))) {
		return false;
	}
	pixman_image_t *dst = wlr_pixman_renderer_get_current_image(renderer);
	void *data;
	uint32_t format;
	size_t stride;
	if (!dst ||
			!wlr_buffer_begin_data_ptr_access(buffer, WLR_BUFFER_DATA_PTR_ACCESS_READ, &data,
					&format, &stride)) {
		return false;
	}
	pixman_format_code_t pformat = pixman_format_of(format);
	pixman_image_t *image = pformat ? pixman_image_create_bits_no_clear(pformat, buffer->width,
											  buffer->height, data, (int)stride)
									: NULL;
	if (!image) {
		wlr_buffer_end_data_ptr_access(buffer);
		return false;
	}
	pixman_op_t op = PIXMAN_FORMAT_A(pformat) ? PIXMAN_OP_OVER : PIXMAN_OP_SRC;
	/* The wlroots renderer leaves the last scissor on the image. */
	pixman_image_set_clip_region32(dst, NULL);
	int nrects;
	pixman_box32_t *rects = pixman_region32_rectangles(&item->visible, &nrects);
	for (int i = 0; i < nrects; i++) {
		pixman_image_composite32(op, image, NULL, dst, rects[i].x1 - item->box.x,
				rects[i].y1 - item->box.y, 0, 0, rects[i].x1, rects[i].y1,
				rects[i].x2 - rects[i].x1, rects[i].y2 - rects[i].y1);
	}
	pixman_image_unref(image);
	wlr_buffer_end_data_ptr_access(buffer);
	return true;
}

/* An opaque rectangle: filled straight into the output's image (see above). */
static bool fill_item(struct render_item *item, struct wlr_output *output,
		const float color[static 4]) {
	struct wlr_renderer *renderer = output->renderer;
	if (color[3] < 1.0f || !wlr_renderer_is_pixman(renderer) ||
			output->transform != WL_OUTPUT_TRANSFORM_NORMAL) {
		return false;
	}
	pixman_image_t *dst = wlr_pixman_renderer_get_current_image(renderer);
	if (!dst) {
		return false;
	}
	pixman_color_t pc = {
		.red = (uint16_t)(color[0] * 0xffff),
		.green = (uint16_t)(color[1] * 0xffff),
		.blue = (uint16_t)(color[2] * 0xffff),
		.alpha = 0xffff,
	};
	pixman_image_set_clip_region32(dst, NULL);
	int nrects;
	pixman_box32_t *rects = pixman_region32_rectangles(&item->visible, &nrects);
	pixman_image_fill_boxes(PIXMAN_OP_SRC, dst, &pc, nrects, rects);
	return true;
}

static void draw_item(struct render_item *item, struct wlr_scene_output *scene_output) {
	struct wlr_output *output = scene_output->output;
	struct wlr_renderer *renderer = output->renderer;
	struct wlr_scene_node *node = item->node;
	struct wlr_texture *texture = NULL;
	struct wlr_fbox src = { 0 };
	enum wl_output_transform transform = WL_OUTPUT_TRANSFORM_NORMAL;
	const float *color = NULL;
	float matrix[9];

	switch (node->type) {
	case WLR_SCENE_NODE_SURFACE: {
		struct wlr_surface *surface = wlr_scene_surface_from_node(node)->surface;
		texture = wlr_surface_get_texture(surface);
		transform = wlr_output_transform_invert(surface->current.transform);
		wlr_surface_get_buffer_source_box(surface, &src);
		if (texture && surface->buffer &&
				blit_item(item, output, surface->buffer->source, transform, &src)) {
			return;
		}
		break;
	}
	case WLR_SCENE_NODE_BUFFER: {
		struct wlr_scene_buffer *buffer = (struct wlr_scene_buffer *)node;
		texture = buffer->texture;
		transform = wlr_output_transform_invert(buffer->transform);
		src = buffer->src_box;
		if (texture && blit_item(item, output, buffer->buffer, transform, &src)) {
			return;
		}
		break;
	}
	case WLR_SCENE_NODE_RECT:
		color = ((struct wlr_scene_rect *)node)->color;
		if (fill_item(item, output, color)) {
			return;
		}
		break;
	default:
		return;
	}
	if (!texture && !color) {
		return;
	}
	if (texture && wlr_fbox_empty(&src)) {
		src = (struct wlr_fbox){ 0, 0, texture->width, texture->height };
	}
	if (texture) {
		wlr_matrix_project_box(matrix, &item->box, transform, 0.0, output->transform_matrix);
	}
	int nrects;
	pixman_box32_t *rects = pixman_region32_rectangles(&item->visible, &nrects);
	for (int i = 0; i < nrects; i++) {
		scissor(output, &rects[i]);
		if (texture) {
			wlr_render_subtexture_with_matrix(renderer, texture, &src, matrix, 1.0f);
		} else {
			wlr_render_rect(renderer, &item->box, color, output->transform_matrix);
		}
	}
}

/* Surfaces are "sampled" for presentation feedback whenever they are part of
 * a frame on their primary output, covered or not, as wlroots does. */
static void mark_sampled(struct render_list *list, struct wlr_scene_output *scene_output,
		struct wlr_presentation *presentation) {
	if (!presentation) {
		return;
	}
	for (size_t i = 0; i < list->len; i++) {
		struct wlr_scene_node *node = list->items[i].node;
		if (node->type != WLR_SCENE_NODE_SURFACE) {
			continue;
		}
		struct wlr_scene_surface *scene_surface = wlr_scene_surface_from_node(node);
		if (scene_surface->primary_output == scene_output->output) {
			wlr_presentation_surface_sampled_on_output(presentation, scene_surface->surface,
					scene_output->output);
		}
	}
}

static uint64_t region_px(pixman_region32_t *region) {
	int n;
	pixman_box32_t *rects = pixman_region32_rectangles(region, &n);
	uint64_t px = 0;
	for (int i = 0; i < n; i++) {
		px += (uint64_t)(rects[i].x2 - rects[i].x1) * (uint64_t)(rects[i].y2 - rects[i].y1);
	}
	return px;
}

/* Whose node this is: a surface's client, or the client of the window a
 * decoration belongs to. */
static struct wl_client *node_client(struct wlr_scene_node *node) {
	if (node->type == WLR_SCENE_NODE_SURFACE) {
		struct wlr_surface *surface = wlr_scene_surface_from_node(node)->surface;
		return wl_resource_get_client(surface->resource);
	}
	struct qw_node_desc *desc = node_desc_find(node);
	if (!desc || !desc->view) {
		return NULL;
	}
	return view_client(desc->view);
}

static bool report_push(struct render_report *report, const struct render_shown *shown) {
	if (report->len == report->cap) {
		size_t cap = report->cap ? report->cap * 2 : 64;
		struct render_shown *grown = realloc(report->items, cap * sizeof(*grown));
		if (!grown) {
			return false;
		}
		report->items = grown;
		report->cap = cap;
	}
	report->items[report->len++] = *shown;
	return true;
}

/*
 * Fills the report from the list, whose items hold their damaged visible
 * regions: what each drew, and what of it no opaque node above covers.
 */
static void fill_report(struct render_list *list, struct wlr_output *output,
		struct render_report *report) {
	report->len = 0;
	pixman_region32_t covered, visible;
	pixman_region32_init(&covered);
	pixman_region32_init(&visible);
	for (size_t i = list->len; i-- > 0;) {
		struct render_item *item = &list->items[i];
		/* The last item's region may hold an allocated rect list. */
		pixman_region32_fini(&visible);
		pixman_region32_init_rect(&visible, item->box.x, item->box.y, item->box.width,
				item->box.height);
		pixman_region32_intersect_rect(&visible, &visible, 0, 0, output->width, output->height);
		pixman_region32_subtract(&visible, &visible, &covered);
		pixman_region32_t opaque;
		opaque_region(item, output->scale, &opaque);
		pixman_region32_union(&covered, &covered, &opaque);
		pixman_region32_fini(&opaque);
		item->visible_px = region_px(&visible);
		item->damaged_px = region_px(&item->visible);
	}
	pixman_region32_fini(&visible);
	pixman_region32_fini(&covered);
	for (size_t i = 0; i < list->len; i++) {
		struct render_item *item = &list->items[i];
		struct wlr_scene_node *node = item->node;
		struct render_shown shown = {
			.node = node,
			.surface = node->type == WLR_SCENE_NODE_SURFACE
					? wlr_scene_surface_from_node(node)->surface
					: NULL,
			.damaged_px = item->damaged_px,
			.visible_px = item->visible_px,
		};
		/* Only surfaces and what was drawn need an owner. */
		if (shown.surface || shown.damaged_px) {
			shown.client = node_client(node);
		}
		if (!report_push(report, &shown)) {
			break;
		}
	}
}

void render_report_finish(struct render_report *report) {
	if (report) {
		free(report->items);
		*report = (struct render_report){ 0 };
	}
}

static void list_reset(struct render_list *list) {
	for (size_t i = 0; i < list->len; i++) {
		pixman_region32_fini(&list->items[i].visible);
	}
	list->len = 0;
}

void render_list_destroy(struct render_list *list) {
	if (!list) {
		return;
	}
	list_reset(list);
	free(list->items);
	free(list);
}

bool render_output(struct qw_output *output, struct render_report *report) {
	struct wlr_scene_output *scene_output = output->scene_output;
	struct wlr_output *wlr_output = output->wlr_output;
	struct wlr_renderer *renderer = wlr_output->renderer;
	if (!output->render_list) {
		output->render_list = calloc(1, sizeof(*output->render_list));
		if (!output->render_list) {
			return false;
		}
	}
	struct render_list *list = output->render_list;

	bool needs_frame;
	pixman_region32_t damage;
	pixman_region32_init(&damage);
	if (!wlr_output_damage_attach_render(scene_output->damage, &needs_frame, &damage)) {
		pixman_region32_fini(&damage);
		return false;
	}
	if (!needs_frame) {
		pixman_region32_fini(&damage);
		wlr_output_rollback(wlr_output);
		if (report) {
			/* Nothing to draw, but what is covered still decides
			 * which clients get frame callbacks. */
			collect(list, &output->server->scene->node, 0, 0, scene_output);
			fill_report(list, wlr_output, report);
			list_reset(list);
			report->drawn = false;
		}
		return true;
	}

	collect(list, &output->server->scene->node, 0, 0, scene_output);
	/* Top to bottom: each item keeps what is damaged and not yet covered. */
	pixman_region32_t covered;
	pixman_region32_init(&covered);
	for (size_t i = list->len; i-- > 0;) {
		struct render_item *item = &list->items[i];
		pixman_region32_intersect_rect(&item->visible, &damage, item->box.x, item->box.y,
				item->box.width, item->box.height);
		pixman_region32_subtract(&item->visible, &item->visible, &covered);
		pixman_region32_t opaque;
		opaque_region(item, wlr_output->scale, &opaque);
		pixman_region32_union(&covered, &covered, &opaque);
		pixman_region32_fini(&opaque);
	}
	pixman_region32_t background;
	pixman_region32_init(&background);
	pixman_region32_subtract(&background, &damage, &covered);
	pixman_region32_fini(&covered);

	wlr_renderer_begin(renderer, wlr_output->width, wlr_output->height);
	int nrects;
	pixman_box32_t *rects = pixman_region32_rectangles(&background, &nrects);
	for (int i = 0; i < nrects; i++) {
		scissor(wlr_output, &rects[i]);
		wlr_renderer_clear(renderer, (float[4]){ 0.0f, 0.0f, 0.0f, 1.0f });
	}
	pixman_region32_fini(&background);
	for (size_t i = 0; i < list->len; i++) {
		if (pixman_region32_not_empty(&list->items[i].visible)) {
			draw_item(&list->items[i], scene_output);
		}
	}
	wlr_renderer_scissor(renderer, NULL);
	wlr_output_render_software_cursors(wlr_output, &damage);
	wlr_renderer_end(renderer);
	mark_sampled(list, scene_output, output->server->presentation);
	if (report) {
		fill_report(list, wlr_output, report);
	}
	list_reset(list);
	pixman_region32_fini(&damage);

	int width, height;
	wlr_output_transformed_resolution(wlr_output, &width, &height);
	pixman_region32_t frame_damage;
	pixman_region32_init(&frame_damage);
	wlr_region_transform(&frame_damage, &scene_output->damage->current,
			wlr_output_transform_invert(wlr_output->transform), width, height);
	wlr_output_set_damage(wlr_output, &frame_damage);
	pixman_region32_fini(&frame_damage);
	output_drm_settle(output);
	bool committed = wlr_output_commit(wlr_output);
	if (report) {
		report->drawn = committed;
	}
	return committed;
}
