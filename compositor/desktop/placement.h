/*
 * Where windows go: new ones into the usable area of the output under the
 * cursor (what panels' exclusive zones leave), cascaded one step apart,
 * dialogs centred over their parent; a window bigger than that area is
 * asked to shrink to it, so its titlebar buttons are on screen. When a
 * panel takes room from an output, windows already there move (or shrink)
 * into what is left.
 */
#ifndef QOSWAY_PLACEMENT_H
#define QOSWAY_PLACEMENT_H

struct qw_output;
struct qw_view;

/* Place a window that is mapping at its committed size. */
void placement_place_new(struct qw_view *view);
/* The output's usable area changed: bring its windows inside it. */
void placement_usable_area_changed(struct qw_output *output);

#endif
