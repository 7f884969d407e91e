#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shm-buffer.h"

static void handle_release(void *data, struct wl_buffer *wl_buffer) {
	struct shm_buffer *buf = data;
	buf->busy = false;
}

static const struct wl_buffer_listener buffer_listener = {
	.release = handle_release,
};

bool shm_buffer_init(struct shm_buffer *buf, struct wl_shm *shm, int width, int height,
		const char *name) {
	*buf = (struct shm_buffer){ .width = width, .height = height, .stride = width * 4 };
	if (width <= 0 || height <= 0 || width > 16384 || height > 16384) {
		fprintf(stderr, "%s: bad buffer size %dx%d\n", name, width, height);
		return false;
	}
	buf->size = (size_t)buf->stride * (size_t)height;
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		fprintf(stderr, "%s: memfd_create: %s\n", name, strerror(errno));
		return false;
	}
	if (ftruncate(fd, (off_t)buf->size) < 0) {
		fprintf(stderr, "%s: ftruncate: %s\n", name, strerror(errno));
		close(fd);
		return false;
	}
	/* The compositor maps the memory; it must not shrink under it. */
	fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_SEAL);
	buf->data = mmap(NULL, buf->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (buf->data == MAP_FAILED) {
		fprintf(stderr, "%s: mmap: %s\n", name, strerror(errno));
		buf->data = NULL;
		close(fd);
		return false;
	}
	struct wl_shm_pool *pool = wl_shm_create_pool(shm, fd, (int32_t)buf->size);
	buf->wl_buffer =
			wl_shm_pool_create_buffer(pool, 0, width, height, buf->stride, WL_SHM_FORMAT_ARGB8888);
	wl_buffer_add_listener(buf->wl_buffer, &buffer_listener, buf);
	/* The buffer keeps the memory alive; neither the pool nor the fd is needed. */
	wl_shm_pool_destroy(pool);
	close(fd);
	return true;
}

void shm_buffer_finish(struct shm_buffer *buf) {
	if (buf->wl_buffer) {
		wl_buffer_destroy(buf->wl_buffer);
	}
	if (buf->data) {
		munmap(buf->data, buf->size);
	}
	*buf = (struct shm_buffer){ 0 };
}

void shm_buffer_attach(struct shm_buffer *buf, struct wl_surface *surface) {
	wl_surface_attach(surface, buf->wl_buffer, 0, 0);
	wl_surface_damage_buffer(surface, 0, 0, buf->width, buf->height);
	buf->busy = true;
}
