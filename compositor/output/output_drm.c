/*
 * Why a DRM output waits for the kernel before each page flip.
 *
 * wlroots 0.15 puts the CRTC's cursor plane in every atomic commit, turned
 * off when the cursor is drawn in software (as qosway does with the pixman
 * renderer, output.c). The kernel's atomic helpers track a plane that is off
 * before and after a commit with a stand-in commit of their own, which they
 * mark finished only at the end of the commit's hardware step. A driver
 * without vblank interrupts (virtio-gpu and other virtual GPUs) sends the
 * page-flip event from that same step, just before its end. A compositor
 * that draws and flips as soon as the event arrives, with no flip pending,
 * can then have its flip refused with EBUSY ("busy with a previous commit"
 * on the cursor plane): the frame is lost and wlroots logs an error. The
 * window is a few instructions long on real hardware, and milliseconds when
 * the virtual CPU running the kernel's commit worker is descheduled there
 * (a busy host, QEMU without KVM).
 *
 * A blocking atomic commit that leaves the cursor plane off, as it is, makes
 * the kernel wait for that plane's previous commit to finish, and changes
 * nothing. After it, the flip cannot find the plane busy. It is a no-op for
 * the driver (a plane that stays off is not updated), one ioctl per frame.
 */
#include <errno.h>
#include <string.h>
#include <wlr/backend.h>
#include <wlr/backend/drm.h>
#include <wlr/types/wlr_output.h>
#include <wlr/util/log.h>
#include <xf86drm.h>
#include <xf86drmMode.h>

#include "output/output.h"
#include "output/output_drm.h"

/* The id of obj's property called name, and its value; 0 if it has none. */
static uint32_t find_prop(int fd, uint32_t obj, uint32_t type, const char *name, uint64_t *value) {
	drmModeObjectProperties *props = drmModeObjectGetProperties(fd, obj, type);
	if (!props) {
		return 0;
	}
	uint32_t id = 0;
	for (uint32_t i = 0; i < props->count_props && !id; i++) {
		drmModePropertyRes *prop = drmModeGetProperty(fd, props->props[i]);
		if (prop && strcmp(prop->name, name) == 0) {
			id = prop->prop_id;
			if (value) {
				*value = props->prop_values[i];
			}
		}
		drmModeFreeProperty(prop);
	}
	drmModeFreeObjectProperties(props);
	return id;
}

static int crtc_index(int fd, uint32_t crtc) {
	drmModeRes *res = drmModeGetResources(fd);
	int index = -1;
	for (int i = 0; res && i < res->count_crtcs && index < 0; i++) {
		if (res->crtcs[i] == crtc) {
			index = i;
		}
	}
	drmModeFreeResources(res);
	return index;
}

/* A cursor plane the CRTC could use that is off (no CRTC, no buffer). */
static bool find_idle_cursor_plane(int fd, uint32_t crtc, struct output_drm_plane *d) {
	int index = crtc_index(fd, crtc);
	drmModePlaneRes *planes = index >= 0 ? drmModeGetPlaneResources(fd) : NULL;
	bool found = false;
	for (uint32_t i = 0; planes && i < planes->count_planes && !found; i++) {
		drmModePlane *plane = drmModeGetPlane(fd, planes->planes[i]);
		uint64_t type = 0;
		if (plane && (plane->possible_crtcs & (1u << index)) && !plane->crtc_id && !plane->fb_id &&
				find_prop(fd, plane->plane_id, DRM_MODE_OBJECT_PLANE, "type", &type) &&
				type == DRM_PLANE_TYPE_CURSOR) {
			d->plane = plane->plane_id;
			d->fb_prop = find_prop(fd, d->plane, DRM_MODE_OBJECT_PLANE, "FB_ID", NULL);
			d->crtc_prop = find_prop(fd, d->plane, DRM_MODE_OBJECT_PLANE, "CRTC_ID", NULL);
			found = d->fb_prop && d->crtc_prop;
		}
		drmModeFreePlane(plane);
	}
	drmModeFreePlaneResources(planes);
	return found;
}

/* Found again after a mode set: the connector may have another CRTC. */
static bool look_up(struct qw_output *output, int fd) {
	struct output_drm_plane *d = &output->drm_plane;
	uint32_t conn = wlr_drm_connector_get_id(output->wlr_output);
	uint64_t crtc = 0;
	*d = (struct output_drm_plane){ .mode = output->wlr_output->current_mode };
	/* A CRTC_ID property on the connector: the atomic interface is in use. */
	if (!find_prop(fd, conn, DRM_MODE_OBJECT_CONNECTOR, "CRTC_ID", &crtc) || !crtc) {
		d->none = true;
		return false;
	}
	d->crtc = (uint32_t)crtc;
	if (!find_idle_cursor_plane(fd, d->crtc, d)) {
		d->none = true;
		return false;
	}
	return true;
}

void output_drm_settle(struct qw_output *output) {
	struct wlr_output *wlr_output = output->wlr_output;
	struct output_drm_plane *d = &output->drm_plane;
	if (!output->cursor_plane_idle || !wlr_output->enabled) {
		return;
	}
	int fd = wlr_backend_get_drm_fd(wlr_output->backend);
	if (fd < 0) {
		return;
	}
	if (d->mode != wlr_output->current_mode || (!d->crtc && !d->none)) {
		if (!look_up(output, fd)) {
			wlr_log(WLR_DEBUG, "output %s: no idle cursor plane to wait on", wlr_output->name);
		}
	}
	if (d->none) {
		return;
	}
	drmModeAtomicReq *req = drmModeAtomicAlloc();
	if (!req) {
		return;
	}
	int r = -ENOMEM;
	if (drmModeAtomicAddProperty(req, d->plane, d->fb_prop, 0) >= 0 &&
			drmModeAtomicAddProperty(req, d->plane, d->crtc_prop, 0) >= 0) {
		r = drmModeAtomicCommit(fd, req, 0, NULL);
	}
	drmModeAtomicFree(req);
	if (r != 0 && r != -EACCES && r != -EINTR) {
		/* Not while another session has the device (EACCES). Anything
		 * else: not waited on until the next mode set. */
		wlr_log(WLR_DEBUG, "output %s: cannot wait on cursor plane %u: %s", wlr_output->name,
				d->plane, strerror(-r));
		d->none = true;
	}
}
