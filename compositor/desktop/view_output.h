/* Which output a window is on, for what follows a window's display. */
#ifndef QOSWAY_VIEW_OUTPUT_H
#define QOSWAY_VIEW_OUTPUT_H

#include <stdbool.h>

struct qw_output;
struct qw_view;

/* The output under the middle of the window's content, mapped or not: where
 * it is maximized, made fullscreen, and its popups kept. */
struct qw_output *view_center_output(struct qw_view *view);

/*
 * The enabled output that shows the largest part of the window's frame;
 * NULL when the window is unmapped, minimised or on no output at all.
 */
struct qw_output *view_main_output(struct qw_view *view);

/*
 * Whether nothing of the window shows: every part of its frame that is on
 * an output lies under the opaque parts (server-side frame, the surface's
 * opaque region) of windows stacked above it.
 */
bool view_fully_covered(struct qw_view *view);

#endif
