#include <stdlib.h>
#include <wlr/types/wlr_input_method_v2.h>
#include <wlr/types/wlr_keyboard.h>
#include <wlr/types/wlr_scene.h>
#include <wlr/types/wlr_seat.h>
#include <wlr/types/wlr_text_input_v3.h>
#include <wlr/types/wlr_virtual_keyboard_v1.h>
#include <wlr/util/log.h>

#include "server.h"
#include "input/text_input.h"

struct qw_text_input_relay {
	struct qw_server *server;
	struct wlr_text_input_manager_v3 *text_input_manager;
	struct wlr_input_method_manager_v2 *input_method_manager;
	struct wl_list text_inputs; /* qw_text_input.link */
	struct wl_list popups; /* qw_im_popup.link */
	struct wlr_input_method_v2 *input_method; /* the one in use, or NULL */
	/* The candidate windows, above every window and panel. */
	struct wlr_scene_tree *popup_tree;

	struct wl_listener new_text_input;
	struct wl_listener new_input_method;
	struct wl_listener focus_change;
	struct wl_listener im_commit;
	struct wl_listener im_new_popup;
	struct wl_listener im_grab_keyboard;
	struct wl_listener im_destroy;
	struct wl_listener grab_destroy;
};

struct qw_text_input {
	struct wl_list link;
	struct qw_text_input_relay *relay;
	struct wlr_text_input_v3 *input;
	struct wl_listener enable;
	struct wl_listener commit;
	struct wl_listener disable;
	struct wl_listener destroy;
};

struct qw_im_popup {
	struct wl_list link;
	struct qw_text_input_relay *relay;
	struct wlr_input_popup_surface_v2 *popup;
	struct wlr_scene_node *node;
	struct wl_listener map;
	struct wl_listener unmap;
	struct wl_listener destroy;
};

/* The enabled text input on the focused surface, if any. */
static struct qw_text_input *active_text_input(struct qw_text_input_relay *relay) {
	struct qw_text_input *ti;
	wl_list_for_each(ti, &relay->text_inputs, link) {
		if (ti->input->focused_surface && ti->input->current_enabled) {
			return ti;
		}
	}
	return NULL;
}

struct surface_search {
	struct wlr_surface *surface;
	int x, y;
	bool found;
};

static void find_surface_iter(struct wlr_surface *surface, int sx, int sy, void *data) {
	struct surface_search *search = data;
	if (!search->found && surface == search->surface) {
		search->x = sx;
		search->y = sy;
		search->found = true;
	}
}

/* Put a candidate window under the text cursor of the active text input
 * and tell the input method where that cursor is, relative to it. */
static void place_popup(struct qw_im_popup *p) {
	struct qw_text_input_relay *relay = p->relay;
	struct qw_text_input *ti = active_text_input(relay);
	if (!ti) {
		wlr_scene_node_set_enabled(p->node, false);
		return;
	}
	struct surface_search search = { .surface = ti->input->focused_surface };
	wlr_scene_node_for_each_surface(&relay->server->trees.views->node, find_surface_iter, &search);
	if (!search.found) {
		wlr_scene_node_set_enabled(p->node, false);
		return;
	}
	struct wlr_box cursor = ti->input->current.cursor_rectangle;
	int x = search.x + cursor.x, y = search.y + cursor.y + cursor.height;
	wlr_scene_node_set_position(p->node, x, y);
	wlr_scene_node_set_enabled(p->node, p->popup->mapped);
	struct wlr_box rect = { 0, -cursor.height, cursor.width, cursor.height };
	wlr_input_popup_surface_v2_send_text_input_rectangle(p->popup, &rect);
}

static void place_popups(struct qw_text_input_relay *relay) {
	struct qw_im_popup *p;
	wl_list_for_each(p, &relay->popups, link) {
		place_popup(p);
	}
}

/* Tell the input method the text input's state, as text-input v3 has it. */
static void send_im_state(struct qw_text_input_relay *relay, struct wlr_text_input_v3 *input) {
	struct wlr_input_method_v2 *im = relay->input_method;
	if (input->active_features & WLR_TEXT_INPUT_V3_FEATURE_SURROUNDING_TEXT) {
		wlr_input_method_v2_send_surrounding_text(im,
				input->current.surrounding.text ? input->current.surrounding.text : "",
				input->current.surrounding.cursor, input->current.surrounding.anchor);
	}
	wlr_input_method_v2_send_text_change_cause(im, input->current.text_change_cause);
	if (input->active_features & WLR_TEXT_INPUT_V3_FEATURE_CONTENT_TYPE) {
		wlr_input_method_v2_send_content_type(im, input->current.content_type.hint,
				input->current.content_type.purpose);
	}
	wlr_input_method_v2_send_done(im);
}

static void handle_ti_enable(struct wl_listener *listener, void *data) {
	struct qw_text_input *ti = wl_container_of(listener, ti, enable);
	struct qw_text_input_relay *relay = ti->relay;
	if (!relay->input_method) {
		return;
	}
	wlr_input_method_v2_send_activate(relay->input_method);
	send_im_state(relay, ti->input);
	place_popups(relay);
}

static void handle_ti_commit(struct wl_listener *listener, void *data) {
	struct qw_text_input *ti = wl_container_of(listener, ti, commit);
	struct qw_text_input_relay *relay = ti->relay;
	if (!relay->input_method || !ti->input->current_enabled || !ti->input->focused_surface) {
		return;
	}
	send_im_state(relay, ti->input);
	place_popups(relay);
}

static void deactivate_im(struct qw_text_input_relay *relay) {
	if (relay->input_method) {
		wlr_input_method_v2_send_deactivate(relay->input_method);
		wlr_input_method_v2_send_done(relay->input_method);
	}
	place_popups(relay);
}

static void handle_ti_disable(struct wl_listener *listener, void *data) {
	struct qw_text_input *ti = wl_container_of(listener, ti, disable);
	if (ti->input->focused_surface) {
		deactivate_im(ti->relay);
	}
}

static void handle_ti_destroy(struct wl_listener *listener, void *data) {
	struct qw_text_input *ti = wl_container_of(listener, ti, destroy);
	bool was_active = ti->input->current_enabled && ti->input->focused_surface;
	wl_list_remove(&ti->enable.link);
	wl_list_remove(&ti->commit.link);
	wl_list_remove(&ti->disable.link);
	wl_list_remove(&ti->destroy.link);
	wl_list_remove(&ti->link);
	struct qw_text_input_relay *relay = ti->relay;
	free(ti);
	if (was_active) {
		deactivate_im(relay);
	}
}

static bool same_client(struct wlr_text_input_v3 *input, struct wlr_surface *surface) {
	return surface &&
			wl_resource_get_client(input->resource) == wl_resource_get_client(surface->resource);
}

static void handle_new_text_input(struct wl_listener *listener, void *data) {
	struct qw_text_input_relay *relay = wl_container_of(listener, relay, new_text_input);
	struct wlr_text_input_v3 *input = data;
	struct qw_text_input *ti = calloc(1, sizeof(*ti));
	if (!ti) {
		wlr_log(WLR_ERROR, "out of memory for a text input");
		return;
	}
	ti->relay = relay;
	ti->input = input;
	ti->enable.notify = handle_ti_enable;
	wl_signal_add(&input->events.enable, &ti->enable);
	ti->commit.notify = handle_ti_commit;
	wl_signal_add(&input->events.commit, &ti->commit);
	ti->disable.notify = handle_ti_disable;
	wl_signal_add(&input->events.disable, &ti->disable);
	ti->destroy.notify = handle_ti_destroy;
	wl_signal_add(&input->events.destroy, &ti->destroy);
	wl_list_insert(&relay->text_inputs, &ti->link);
	struct wlr_surface *focused = relay->server->seat->keyboard_state.focused_surface;
	if (same_client(input, focused)) {
		wlr_text_input_v3_send_enter(input, focused);
	}
}

static void handle_focus_change(struct wl_listener *listener, void *data) {
	struct qw_text_input_relay *relay = wl_container_of(listener, relay, focus_change);
	struct wlr_seat_keyboard_focus_change_event *event = data;
	struct qw_text_input *ti;
	bool deactivated = false;
	wl_list_for_each(ti, &relay->text_inputs, link) {
		if (ti->input->focused_surface && ti->input->focused_surface != event->new_surface) {
			deactivated = deactivated || ti->input->current_enabled;
			wlr_text_input_v3_send_leave(ti->input);
		}
		if (!ti->input->focused_surface && same_client(ti->input, event->new_surface)) {
			wlr_text_input_v3_send_enter(ti->input, event->new_surface);
		}
	}
	if (deactivated) {
		deactivate_im(relay);
	}
}

static void relay_commit(struct qw_text_input_relay *relay, struct wlr_input_method_v2 *im) {
	struct qw_text_input *ti = active_text_input(relay);
	if (!ti) {
		return;
	}
	struct wlr_text_input_v3 *input = ti->input;
	if (im->current.preedit.text) {
		wlr_text_input_v3_send_preedit_string(input, im->current.preedit.text,
				im->current.preedit.cursor_begin, im->current.preedit.cursor_end);
	}
	if (im->current.commit_text) {
		wlr_text_input_v3_send_commit_string(input, im->current.commit_text);
	}
	if (im->current.delete.before_length || im->current.delete.after_length) {
		wlr_text_input_v3_send_delete_surrounding_text(input, im->current.delete.before_length,
				im->current.delete.after_length);
	}
	wlr_text_input_v3_send_done(input);
}

/*
 * wlroots 0.15 overwrites the current state with the pending one at each
 * commit without freeing its strings; they are only read while the commit
 * signal runs, so they are freed once it has been relayed.
 */
static void release_current_strings(struct wlr_input_method_v2 *im) {
	free(im->current.preedit.text);
	im->current.preedit.text = NULL;
	free(im->current.commit_text);
	im->current.commit_text = NULL;
}

static void handle_im_commit(struct wl_listener *listener, void *data) {
	struct qw_text_input_relay *relay = wl_container_of(listener, relay, im_commit);
	struct wlr_input_method_v2 *im = relay->input_method;
	relay_commit(relay, im);
	release_current_strings(im);
}

static void popup_free(struct qw_im_popup *p) {
	wl_list_remove(&p->map.link);
	wl_list_remove(&p->unmap.link);
	wl_list_remove(&p->destroy.link);
	wl_list_remove(&p->link);
	wlr_scene_node_destroy(p->node);
	free(p);
}

static void handle_popup_map(struct wl_listener *listener, void *data) {
	struct qw_im_popup *p = wl_container_of(listener, p, map);
	place_popup(p);
}

static void handle_popup_unmap(struct wl_listener *listener, void *data) {
	struct qw_im_popup *p = wl_container_of(listener, p, unmap);
	wlr_scene_node_set_enabled(p->node, false);
}

static void handle_popup_destroy(struct wl_listener *listener, void *data) {
	struct qw_im_popup *p = wl_container_of(listener, p, destroy);
	popup_free(p);
}

static void handle_im_new_popup(struct wl_listener *listener, void *data) {
	struct qw_text_input_relay *relay = wl_container_of(listener, relay, im_new_popup);
	struct wlr_input_popup_surface_v2 *popup = data;
	struct qw_im_popup *p = calloc(1, sizeof(*p));
	struct wlr_scene_surface *scene_surface =
			p ? wlr_scene_surface_create(&relay->popup_tree->node, popup->surface) : NULL;
	if (!scene_surface) {
		wlr_log(WLR_ERROR, "out of memory for an input method popup");
		free(p);
		return;
	}
	p->relay = relay;
	p->popup = popup;
	p->node = &scene_surface->node;
	wlr_scene_node_set_enabled(p->node, false);
	p->map.notify = handle_popup_map;
	wl_signal_add(&popup->events.map, &p->map);
	p->unmap.notify = handle_popup_unmap;
	wl_signal_add(&popup->events.unmap, &p->unmap);
	p->destroy.notify = handle_popup_destroy;
	wl_signal_add(&popup->events.destroy, &p->destroy);
	wl_list_insert(&relay->popups, &p->link);
	if (popup->mapped) {
		place_popup(p);
	}
}

static void handle_grab_destroy(struct wl_listener *listener, void *data) {
	struct qw_text_input_relay *relay = wl_container_of(listener, relay, grab_destroy);
	struct wlr_input_method_keyboard_grab_v2 *grab = data;
	wl_list_remove(&relay->grab_destroy.link);
	wl_list_init(&relay->grab_destroy.link);
	/* The client missed the modifiers while grabbed: send them again. */
	if (grab->keyboard) {
		wlr_seat_keyboard_notify_modifiers(relay->server->seat, &grab->keyboard->modifiers);
	}
}

static void handle_im_grab_keyboard(struct wl_listener *listener, void *data) {
	struct qw_text_input_relay *relay = wl_container_of(listener, relay, im_grab_keyboard);
	struct wlr_input_method_keyboard_grab_v2 *grab = data;
	struct wlr_keyboard *kb = wlr_seat_get_keyboard(relay->server->seat);
	wlr_input_method_keyboard_grab_v2_set_keyboard(grab, kb);
	wl_list_remove(&relay->grab_destroy.link);
	relay->grab_destroy.notify = handle_grab_destroy;
	wl_signal_add(&grab->events.destroy, &relay->grab_destroy);
}

static void handle_im_destroy(struct wl_listener *listener, void *data) {
	struct qw_text_input_relay *relay = wl_container_of(listener, relay, im_destroy);
	wl_list_remove(&relay->im_commit.link);
	wl_list_remove(&relay->im_new_popup.link);
	wl_list_remove(&relay->im_grab_keyboard.link);
	wl_list_remove(&relay->im_destroy.link);
	wl_list_init(&relay->im_commit.link);
	wl_list_init(&relay->im_new_popup.link);
	wl_list_init(&relay->im_grab_keyboard.link);
	wl_list_init(&relay->im_destroy.link);
	relay->input_method = NULL;
	/* Whatever it was composing is gone: clear the client's preedit. */
	struct qw_text_input *ti = active_text_input(relay);
	if (ti) {
		wlr_text_input_v3_send_preedit_string(ti->input, NULL, 0, 0);
		wlr_text_input_v3_send_done(ti->input);
	}
}

static void handle_new_input_method(struct wl_listener *listener, void *data) {
	struct qw_text_input_relay *relay = wl_container_of(listener, relay, new_input_method);
	struct wlr_input_method_v2 *im = data;
	if (im->seat != relay->server->seat) {
		return;
	}
	if (relay->input_method) {
		wlr_log(WLR_INFO, "a second input method asked for the seat; told it is unavailable");
		wlr_input_method_v2_send_unavailable(im);
		return;
	}
	relay->input_method = im;
	relay->im_commit.notify = handle_im_commit;
	wl_signal_add(&im->events.commit, &relay->im_commit);
	relay->im_new_popup.notify = handle_im_new_popup;
	wl_signal_add(&im->events.new_popup_surface, &relay->im_new_popup);
	relay->im_grab_keyboard.notify = handle_im_grab_keyboard;
	wl_signal_add(&im->events.grab_keyboard, &relay->im_grab_keyboard);
	relay->im_destroy.notify = handle_im_destroy;
	wl_signal_add(&im->events.destroy, &relay->im_destroy);
	struct qw_text_input *ti = active_text_input(relay);
	if (ti) {
		wlr_input_method_v2_send_activate(im);
		send_im_state(relay, ti->input);
	}
}

static struct wlr_input_method_keyboard_grab_v2 *grab_for(struct qw_server *server,
		struct wlr_input_device *device) {
	struct qw_text_input_relay *relay = server->text_input;
	struct wlr_input_method_v2 *im = relay ? relay->input_method : NULL;
	if (!im || !im->keyboard_grab) {
		return NULL;
	}
	/* The input method's own virtual keyboard types into the client. */
	struct wlr_virtual_keyboard_v1 *vk = wlr_input_device_get_virtual_keyboard(device);
	if (vk &&
			wl_resource_get_client(vk->resource) ==
					wl_resource_get_client(im->keyboard_grab->resource)) {
		return NULL;
	}
	return im->keyboard_grab;
}

bool text_input_grab_key(struct qw_server *server, struct wlr_input_device *device,
		uint32_t time_msec, uint32_t keycode, uint32_t state) {
	struct wlr_input_method_keyboard_grab_v2 *grab = grab_for(server, device);
	if (!grab) {
		return false;
	}
	wlr_input_method_keyboard_grab_v2_set_keyboard(grab, device->keyboard);
	wlr_input_method_keyboard_grab_v2_send_key(grab, time_msec, keycode, state);
	return true;
}

bool text_input_grab_modifiers(struct qw_server *server, struct wlr_input_device *device) {
	struct wlr_input_method_keyboard_grab_v2 *grab = grab_for(server, device);
	if (!grab) {
		return false;
	}
	wlr_input_method_keyboard_grab_v2_set_keyboard(grab, device->keyboard);
	wlr_input_method_keyboard_grab_v2_send_modifiers(grab, &device->keyboard->modifiers);
	return true;
}

bool text_input_init(struct qw_server *server) {
	struct qw_text_input_relay *relay = calloc(1, sizeof(*relay));
	if (!relay) {
		return false;
	}
	relay->server = server;
	relay->text_input_manager = wlr_text_input_manager_v3_create(server->wl_display);
	relay->input_method_manager = wlr_input_method_manager_v2_create(server->wl_display);
	relay->popup_tree = wlr_scene_tree_create(&server->trees.layers[QW_LAYER_OVERLAY]->node);
	if (!relay->text_input_manager || !relay->input_method_manager || !relay->popup_tree) {
		wlr_log(WLR_ERROR, "cannot create the text-input or input-method global");
		free(relay);
		return false;
	}
	wl_list_init(&relay->text_inputs);
	wl_list_init(&relay->popups);
	wl_list_init(&relay->im_commit.link);
	wl_list_init(&relay->im_new_popup.link);
	wl_list_init(&relay->im_grab_keyboard.link);
	wl_list_init(&relay->im_destroy.link);
	wl_list_init(&relay->grab_destroy.link);
	relay->new_text_input.notify = handle_new_text_input;
	wl_signal_add(&relay->text_input_manager->events.text_input, &relay->new_text_input);
	relay->new_input_method.notify = handle_new_input_method;
	wl_signal_add(&relay->input_method_manager->events.input_method, &relay->new_input_method);
	relay->focus_change.notify = handle_focus_change;
	wl_signal_add(&server->seat->keyboard_state.events.focus_change, &relay->focus_change);
	server->text_input = relay;
	return true;
}

void text_input_finish(struct qw_server *server) {
	struct qw_text_input_relay *relay = server ? server->text_input : NULL;
	if (!relay) {
		return;
	}
	struct qw_text_input *ti, *ti_tmp;
	wl_list_for_each_safe(ti, ti_tmp, &relay->text_inputs, link) {
		handle_ti_destroy(&ti->destroy, NULL);
	}
	struct qw_im_popup *p, *p_tmp;
	wl_list_for_each_safe(p, p_tmp, &relay->popups, link) {
		popup_free(p);
	}
	wl_list_remove(&relay->new_text_input.link);
	wl_list_remove(&relay->new_input_method.link);
	wl_list_remove(&relay->focus_change.link);
	wl_list_remove(&relay->im_commit.link);
	wl_list_remove(&relay->im_new_popup.link);
	wl_list_remove(&relay->im_grab_keyboard.link);
	wl_list_remove(&relay->im_destroy.link);
	wl_list_remove(&relay->grab_destroy.link);
	server->text_input = NULL;
	free(relay);
}
