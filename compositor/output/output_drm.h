/*
 * DRM outputs drawn with software cursors: the kernel's previous commit
 * finished before the next page flip (output_drm.c says why).
 */
#ifndef QOSWAY_OUTPUT_DRM_H
#define QOSWAY_OUTPUT_DRM_H

#include <stdbool.h>
#include <stdint.h>

struct qw_output;
struct wlr_output_mode;

/* The idle cursor plane of an output's CRTC, found on first use. */
struct output_drm_plane {
	uint32_t crtc; /* found for this CRTC; 0: not looked up yet */
	uint32_t plane, fb_prop, crtc_prop;
	struct wlr_output_mode *mode; /* the mode it was found under */
	bool none; /* nothing to wait on here (no atomic, no idle cursor plane) */
};

/*
 * Before a page flip on a DRM output whose cursor plane qosway never uses
 * (software cursors locked): waits until the kernel has finished the
 * previous commit of that plane, changing nothing. Does nothing on other
 * outputs.
 */
void output_drm_settle(struct qw_output *output);

#endif
