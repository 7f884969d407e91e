/*
 * One wl_shm buffer in its own memfd, for clients that draw on the CPU.
 * The buffer is busy from attach until the compositor releases it; a
 * client must not draw into a busy buffer.
 */
#ifndef QOSWAY_SHM_BUFFER_H
#define QOSWAY_SHM_BUFFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <wayland-client.h>

struct shm_buffer {
	struct wl_buffer *wl_buffer;
	void *data; /* width x height ARGB8888 (premultiplied), stride bytes a row */
	size_t size;
	int width, height, stride;
	bool busy;
};

/* Creates buf's memory and wl_buffer; false (after a message) on failure. */
bool shm_buffer_init(struct shm_buffer *buf, struct wl_shm *shm, int width, int height,
		const char *name);
/* Destroys the wl_buffer and unmaps; a zeroed or finished buffer is fine. */
void shm_buffer_finish(struct shm_buffer *buf);
/* Attaches buf to surface, damages all of it and marks it busy (no commit). */
void shm_buffer_attach(struct shm_buffer *buf, struct wl_surface *surface);

#endif
