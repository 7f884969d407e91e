/* Draws one output frame from the scene graph, skipping occluded areas. */
#ifndef QOSWAY_RENDER_H
#define QOSWAY_RENDER_H

#include <stdbool.h>

struct qw_output;
struct render_list;

/*
 * Render and commit the output's pending damage, like
 * wlr_scene_output_commit(). Returns false if nothing could be committed.
 */
bool render_output(struct qw_output *output);
void render_list_destroy(struct render_list *list);

#endif
