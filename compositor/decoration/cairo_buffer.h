/* A wlr_buffer backed by a cairo image surface, for decoration images. */
#ifndef QOSWAY_CAIRO_BUFFER_H
#define QOSWAY_CAIRO_BUFFER_H

#include <cairo.h>

struct wlr_buffer;

/*
 * Create a transparent ARGB32 buffer of width x height and return it with
 * a cairo context for drawing (caller destroys the context, then may drop
 * the buffer with wlr_buffer_drop). Returns NULL on failure.
 */
struct wlr_buffer *cairo_buffer_create(int width, int height, cairo_t **cr);

#endif
