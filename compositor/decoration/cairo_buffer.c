#include <drm_fourcc.h>
#include <stdlib.h>
#include <wlr/types/wlr_buffer.h>
#include <wlr/util/log.h>

#include "decoration/cairo_buffer.h"

struct cairo_buffer {
	struct wlr_buffer base;
	cairo_surface_t *surface;
};

static void buffer_destroy(struct wlr_buffer *wlr_buffer) {
	struct cairo_buffer *buffer = wl_container_of(wlr_buffer, buffer, base);
	cairo_surface_destroy(buffer->surface);
	free(buffer);
}

static bool buffer_begin_data_ptr_access(struct wlr_buffer *wlr_buffer, uint32_t flags, void **data,
		uint32_t *format, size_t *stride) {
	struct cairo_buffer *buffer = wl_container_of(wlr_buffer, buffer, base);
	if (flags & WLR_BUFFER_DATA_PTR_ACCESS_WRITE) {
		/* Decorations are immutable once drawn; renderers only read. */
		return false;
	}
	cairo_surface_flush(buffer->surface);
	*data = cairo_image_surface_get_data(buffer->surface);
	*format = DRM_FORMAT_ARGB8888;
	*stride = cairo_image_surface_get_stride(buffer->surface);
	return true;
}

static void buffer_end_data_ptr_access(struct wlr_buffer *wlr_buffer) {
}

static const struct wlr_buffer_impl buffer_impl = {
	.destroy = buffer_destroy,
	.begin_data_ptr_access = buffer_begin_data_ptr_access,
	.end_data_ptr_access = buffer_end_data_ptr_access,
};

struct wlr_buffer *cairo_buffer_create(int width, int height, cairo_t **cr) {
	if (width <= 0 || height <= 0) {
		return NULL;
	}
	struct cairo_buffer *buffer = calloc(1, sizeof(*buffer));
	if (!buffer) {
		return NULL;
	}
	buffer->surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, width, height);
	if (cairo_surface_status(buffer->surface) != CAIRO_STATUS_SUCCESS) {
		wlr_log(WLR_ERROR, "cairo surface %dx%d failed", width, height);
		cairo_surface_destroy(buffer->surface);
		free(buffer);
		return NULL;
	}
	*cr = cairo_create(buffer->surface);
	if (cairo_status(*cr) != CAIRO_STATUS_SUCCESS) {
		cairo_destroy(*cr);
		*cr = NULL;
		cairo_surface_destroy(buffer->surface);
		free(buffer);
		return NULL;
	}
	wlr_buffer_init(&buffer->base, &buffer_impl, width, height);
	return &buffer->base;
}
