#include <assert.h>
#include <stdlib.h>
#include <wlr/types/wlr_output.h>
#include <wlr/types/wlr_output_layout.h>
#include <wlr/types/wlr_scene.h>
#include <wlr/types/wlr_surface.h>
#include <wlr/util/log.h>

#include "input/cursor.h"
#include "ext-session-lock-v1-protocol.h"
#include "desktop/screen_lock.h"
#include "server.h"
#include "desktop/session_lock.h"

#define SESSION_LOCK_MANAGER_VERSION 1
/* Configures a lock surface may have unanswered; older ones are dropped. */
#define MAX_PENDING_CONFIGURES 8

struct qw_session_lock_manager {
	struct qw_server *server;
	struct wl_global *global;
	/* The lock that holds the session; NULL if none or its client died. */
	struct qw_session_lock *active;
	struct wl_listener display_destroy;
};

struct qw_session_lock {
	struct wl_resource *resource;
	struct qw_session_lock_manager *manager;
	bool locked; /* `locked` was sent and no unlock came yet */
	bool finished; /* `finished` was sent: the object does nothing */
	struct wl_list surfaces; /* qw_lock_surface.link */
};

struct lock_configure {
	uint32_t serial;
	uint32_t width, height;
};

struct qw_lock_surface {
	struct wl_resource *resource;
	struct qw_session_lock *lock; /* NULL once the lock object is gone */
	struct wl_list link; /* qw_session_lock.surfaces, or its own while detached */
	struct wlr_surface *surface;
	struct wlr_output *output; /* NULL once the output is gone */
	struct wlr_scene_node *node; /* while shown */

	struct lock_configure pending[MAX_PENDING_CONFIGURES];
	size_t n_pending;
	bool configured; /* a configure was acked */
	uint32_t width, height; /* the size last acked */

	struct wl_listener surface_destroy;
	struct wl_listener output_destroy;
};

static const struct ext_session_lock_manager_v1_interface manager_impl;
static const struct ext_session_lock_v1_interface lock_impl;
static const struct ext_session_lock_surface_v1_interface lock_surface_impl;

static struct qw_session_lock_manager *manager_from_resource(struct wl_resource *resource) {
	assert(wl_resource_instance_of(resource, &ext_session_lock_manager_v1_interface,
			&manager_impl));
	return wl_resource_get_user_data(resource);
}

static struct qw_session_lock *lock_from_resource(struct wl_resource *resource) {
	assert(wl_resource_instance_of(resource, &ext_session_lock_v1_interface, &lock_impl));
	return wl_resource_get_user_data(resource);
}

/* NULL for an inert lock surface. */
static struct qw_lock_surface *lock_surface_from_resource(struct wl_resource *resource) {
	assert(wl_resource_instance_of(resource, &ext_session_lock_surface_v1_interface,
			&lock_surface_impl));
	return wl_resource_get_user_data(resource);
}

static void lock_surface_hide(struct qw_lock_surface *ls) {
	if (ls->node) {
		wlr_scene_node_destroy(ls->node);
		ls->node = NULL;
	}
}

/* The lock surface stops being shown and takes no more requests. */
static void lock_surface_destroy(struct qw_lock_surface *ls) {
	if (!ls) {
		return;
	}
	lock_surface_hide(ls);
	wl_list_remove(&ls->surface_destroy.link);
	wl_list_remove(&ls->output_destroy.link);
	wl_list_remove(&ls->link);
	if (ls->surface->role_data == ls) {
		ls->surface->role_data = NULL;
	}
	wl_resource_set_user_data(ls->resource, NULL);
	free(ls);
}

static void lock_surface_handle_destroy(struct wl_client *client, struct wl_resource *resource) {
	wl_resource_destroy(resource);
}

static void lock_surface_handle_ack_configure(struct wl_client *client,
		struct wl_resource *resource, uint32_t serial) {
	struct qw_lock_surface *ls = lock_surface_from_resource(resource);
	if (!ls) {
		return;
	}
	for (size_t i = 0; i < ls->n_pending; i++) {
		if (ls->pending[i].serial != serial) {
			continue;
		}
		ls->width = ls->pending[i].width;
		ls->height = ls->pending[i].height;
		ls->configured = true;
		/* This configure and every older one are answered. */
		size_t rest = ls->n_pending - i - 1;
		for (size_t j = 0; j < rest; j++) {
			ls->pending[j] = ls->pending[i + 1 + j];
		}
		ls->n_pending = rest;
		return;
	}
	wl_resource_post_error(resource, EXT_SESSION_LOCK_SURFACE_V1_ERROR_INVALID_SERIAL,
			"ack_configure: serial %u was not sent or was already acked", serial);
}

static const struct ext_session_lock_surface_v1_interface lock_surface_impl = {
	.destroy = lock_surface_handle_destroy,
	.ack_configure = lock_surface_handle_ack_configure,
};

static void lock_surface_handle_resource_destroy(struct wl_resource *resource) {
	lock_surface_destroy(lock_surface_from_resource(resource));
}

static void lock_surface_send_configure(struct qw_lock_surface *ls) {
	int width = 0, height = 0;
	wlr_output_effective_resolution(ls->output, &width, &height);
	struct qw_server *server = ls->lock->manager->server;
	uint32_t serial = wl_display_next_serial(server->wl_display);
	if (ls->n_pending == MAX_PENDING_CONFIGURES) {
		for (size_t i = 1; i < ls->n_pending; i++) {
			ls->pending[i - 1] = ls->pending[i];
		}
		ls->n_pending--;
	}
	ls->pending[ls->n_pending++] = (struct lock_configure){
		.serial = serial,
		.width = (uint32_t)width,
		.height = (uint32_t)height,
	};
	ext_session_lock_surface_v1_send_configure(ls->resource, serial, width, height);
}

static void lock_surface_precommit(struct wlr_surface *surface) {
	struct qw_lock_surface *ls = surface->role_data;
	if (!ls) {
		return;
	}
	if (!ls->configured) {
		wl_resource_post_error(ls->resource,
				EXT_SESSION_LOCK_SURFACE_V1_ERROR_COMMIT_BEFORE_FIRST_ACK,
				"lock surface committed before its first ack_configure");
		return;
	}
	if ((surface->pending.committed & WLR_SURFACE_STATE_BUFFER) && !surface->pending.buffer) {
		wl_resource_post_error(ls->resource, EXT_SESSION_LOCK_SURFACE_V1_ERROR_NULL_BUFFER,
				"lock surface committed with a null buffer");
	}
}

static void lock_surface_commit(struct wlr_surface *surface) {
	struct qw_lock_surface *ls = surface->role_data;
	if (!ls || !ls->configured) {
		return;
	}
	if ((uint32_t)surface->current.width != ls->width ||
			(uint32_t)surface->current.height != ls->height) {
		wl_resource_post_error(ls->resource, EXT_SESSION_LOCK_SURFACE_V1_ERROR_DIMENSIONS_MISMATCH,
				"lock surface is %dx%d, the configure acked was %ux%u", surface->current.width,
				surface->current.height, ls->width, ls->height);
		return;
	}
	struct qw_session_lock *lock = ls->lock;
	if (ls->node || !ls->output || !lock || !lock->locked || !wlr_surface_has_buffer(surface)) {
		return;
	}
	struct qw_server *server = lock->manager->server;
	ls->node = wlr_scene_subsurface_tree_create(screen_lock_tree(server), surface);
	if (!ls->node) {
		wlr_log(WLR_ERROR, "session lock: out of memory for a lock surface's scene node");
		return;
	}
	struct wlr_box *box = wlr_output_layout_get_box(server->output_layout, ls->output);
	if (box) {
		wlr_scene_node_set_position(ls->node, box->x, box->y);
	}
	screen_lock_focus(server, surface);
	cursor_rebase(server, 0);
}

static const struct wlr_surface_role lock_surface_role = {
	.name = "ext_session_lock_surface_v1",
	.commit = lock_surface_commit,
	.precommit = lock_surface_precommit,
};

static void lock_surface_handle_surface_destroy(struct wl_listener *listener, void *data) {
	struct qw_lock_surface *ls = wl_container_of(listener, ls, surface_destroy);
	lock_surface_destroy(ls);
}

static void lock_surface_handle_output_destroy(struct wl_listener *listener, void *data) {
	struct qw_lock_surface *ls = wl_container_of(listener, ls, output_destroy);
	lock_surface_hide(ls);
	ls->output = NULL;
	wl_list_remove(&ls->output_destroy.link);
	wl_list_init(&ls->output_destroy.link);
}

static bool has_buffer(struct wlr_surface *surface) {
	return wlr_surface_has_buffer(surface) ||
			((surface->pending.committed & WLR_SURFACE_STATE_BUFFER) && surface->pending.buffer);
}

static void lock_handle_get_lock_surface(struct wl_client *client,
		struct wl_resource *lock_resource, uint32_t id, struct wl_resource *surface_resource,
		struct wl_resource *output_resource) {
	struct qw_session_lock *lock = lock_from_resource(lock_resource);
	struct wlr_surface *surface = wlr_surface_from_resource(surface_resource);
	struct wlr_output *output = wlr_output_from_resource(output_resource);
	struct wl_resource *resource = wl_resource_create(client,
			&ext_session_lock_surface_v1_interface, wl_resource_get_version(lock_resource), id);
	if (!resource) {
		wl_client_post_no_memory(client);
		return;
	}
	wl_resource_set_implementation(resource, &lock_surface_impl, NULL,
			lock_surface_handle_resource_destroy);
	if (has_buffer(surface)) {
		wl_resource_post_error(lock_resource, EXT_SESSION_LOCK_V1_ERROR_ALREADY_CONSTRUCTED,
				"get_lock_surface: the wl_surface already has a buffer");
		return;
	}
	if (lock->finished || !output) {
		return; /* inert: the lock was refused, or the output is gone */
	}
	struct qw_lock_surface *other;
	wl_list_for_each(other, &lock->surfaces, link) {
		if (other->output == output) {
			wl_resource_post_error(lock_resource, EXT_SESSION_LOCK_V1_ERROR_DUPLICATE_OUTPUT,
					"get_lock_surface: output %s already has a lock surface", output->name);
			return;
		}
	}
	struct qw_lock_surface *ls = calloc(1, sizeof(*ls));
	if (!ls) {
		wl_client_post_no_memory(client);
		return;
	}
	if (!wlr_surface_set_role(surface, &lock_surface_role, ls, lock_resource,
				EXT_SESSION_LOCK_V1_ERROR_ROLE)) {
		free(ls);
		return;
	}
	ls->resource = resource;
	ls->lock = lock;
	ls->surface = surface;
	ls->output = output;
	wl_list_insert(&lock->surfaces, &ls->link);
	ls->surface_destroy.notify = lock_surface_handle_surface_destroy;
	wl_signal_add(&surface->events.destroy, &ls->surface_destroy);
	ls->output_destroy.notify = lock_surface_handle_output_destroy;
	wl_signal_add(&output->events.destroy, &ls->output_destroy);
	wl_resource_set_user_data(resource, ls);
	lock_surface_send_configure(ls);
}

/* The lock object goes: its surfaces stop being shown. */
static void lock_detach_surfaces(struct qw_session_lock *lock) {
	struct qw_lock_surface *ls, *tmp;
	wl_list_for_each_safe(ls, tmp, &lock->surfaces, link) {
		lock_surface_hide(ls);
		ls->lock = NULL;
		wl_list_remove(&ls->link);
		wl_list_init(&ls->link);
	}
}

static void lock_handle_destroy(struct wl_client *client, struct wl_resource *resource) {
	struct qw_session_lock *lock = lock_from_resource(resource);
	if (lock->locked) {
		wl_resource_post_error(resource, EXT_SESSION_LOCK_V1_ERROR_INVALID_DESTROY,
				"destroy while the session is locked: use unlock_and_destroy");
		return;
	}
	wl_resource_destroy(resource);
}

static void lock_handle_unlock_and_destroy(struct wl_client *client, struct wl_resource *resource) {
	struct qw_session_lock *lock = lock_from_resource(resource);
	if (!lock->locked) {
		wl_resource_post_error(resource, EXT_SESSION_LOCK_V1_ERROR_INVALID_UNLOCK,
				"unlock_and_destroy, but the locked event was never sent");
		return;
	}
	lock->locked = false;
	lock->manager->active = NULL;
	lock_detach_surfaces(lock);
	screen_lock_session_end(lock->manager->server);
	wl_resource_destroy(resource);
}

static const struct ext_session_lock_v1_interface lock_impl = {
	.destroy = lock_handle_destroy,
	.get_lock_surface = lock_handle_get_lock_surface,
	.unlock_and_destroy = lock_handle_unlock_and_destroy,
};

static void lock_handle_resource_destroy(struct wl_resource *resource) {
	struct qw_session_lock *lock = lock_from_resource(resource);
	lock_detach_surfaces(lock);
	if (lock->locked && lock->manager->active == lock) {
		/* The locker died (or misbehaved): the session stays locked. */
		lock->manager->active = NULL;
		screen_lock_session_abandon(lock->manager->server);
	}
	free(lock);
}

static void manager_handle_destroy(struct wl_client *client, struct wl_resource *resource) {
	wl_resource_destroy(resource);
}

static void manager_handle_lock(struct wl_client *client, struct wl_resource *manager_resource,
		uint32_t id) {
	struct qw_session_lock_manager *manager = manager_from_resource(manager_resource);
	struct qw_session_lock *lock = calloc(1, sizeof(*lock));
	struct wl_resource *resource = lock ? wl_resource_create(client, &ext_session_lock_v1_interface,
												  wl_resource_get_version(manager_resource), id)
										: NULL;
	if (!resource) {
		free(lock);
		wl_client_post_no_memory(client);
		return;
	}
	lock->resource = resource;
	lock->manager = manager;
	wl_list_init(&lock->surfaces);
	wl_resource_set_implementation(resource, &lock_impl, lock, lock_handle_resource_destroy);
	if (!manager || manager->active) {
		wlr_log(WLR_INFO, "session lock refused: the session is already locked by a live client");
		lock->finished = true;
		ext_session_lock_v1_send_finished(resource);
		return;
	}
	manager->active = lock;
	lock->locked = true;
	screen_lock_session_begin(manager->server, client);
	ext_session_lock_v1_send_locked(resource);
}

static const struct ext_session_lock_manager_v1_interface manager_impl = {
	.destroy = manager_handle_destroy,
	.lock = manager_handle_lock,
};

static void manager_bind(struct wl_client *client, void *data, uint32_t version, uint32_t id) {
	struct qw_session_lock_manager *manager = data;
	struct wl_resource *resource =
			wl_resource_create(client, &ext_session_lock_manager_v1_interface, version, id);
	if (!resource) {
		wl_client_post_no_memory(client);
		return;
	}
	wl_resource_set_implementation(resource, &manager_impl, manager, NULL);
}

static void manager_destroy(struct qw_session_lock_manager *manager) {
	if (!manager) {
		return;
	}
	wl_list_remove(&manager->display_destroy.link);
	wl_global_destroy(manager->global);
	manager->server->session_lock = NULL;
	free(manager);
}

static void handle_display_destroy(struct wl_listener *listener, void *data) {
	struct qw_session_lock_manager *manager = wl_container_of(listener, manager, display_destroy);
	manager_destroy(manager);
}

bool session_lock_init(struct qw_server *server) {
	struct qw_session_lock_manager *manager = calloc(1, sizeof(*manager));
	if (!manager) {
		wlr_log(WLR_ERROR, "session lock: out of memory");
		return false;
	}
	manager->server = server;
	manager->global = wl_global_create(server->wl_display, &ext_session_lock_manager_v1_interface,
			SESSION_LOCK_MANAGER_VERSION, manager, manager_bind);
	if (!manager->global) {
		wlr_log(WLR_ERROR, "cannot create the ext-session-lock-v1 global");
		free(manager);
		return false;
	}
	manager->display_destroy.notify = handle_display_destroy;
	wl_display_add_destroy_listener(server->wl_display, &manager->display_destroy);
	server->session_lock = manager;
	return true;
}

void session_lock_finish(struct qw_server *server) {
	manager_destroy(server->session_lock);
}
