/*
 * qosway-monitor's window: an xdg toplevel drawn with cairo into shm
 * buffers, keyboard and pointer input, and one poll loop for the display,
 * the IPC connection, the refresh timer and signals.
 */
#include <cairo.h>
#include <errno.h>
#include <linux/input-event-codes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include <wayland-client.h>
#include <xkbcommon/xkbcommon.h>

#include "ipc-client.h"
#include "monitor.h"
#include "shm-buffer.h"
#include "xdg-decoration-unstable-v1-client-protocol.h"
#include "xdg-shell-client-protocol.h"

#define NUM_BUFFERS 2

struct mon_shell {
	struct monitor *m;
	struct wl_display *display;
	struct wl_registry *registry;
	struct wl_compositor *compositor;
	struct wl_shm *shm;
	struct xdg_wm_base *wm_base;
	/* Asked for server-side decorations: the monitor draws no titlebar. */
	struct zxdg_decoration_manager_v1 *deco_manager;
	struct zxdg_toplevel_decoration_v1 *decoration;
	struct wl_seat *seat;
	struct wl_keyboard *keyboard;
	struct wl_pointer *pointer;
	struct xkb_context *xkb;
	struct xkb_keymap *keymap;
	struct xkb_state *xkb_state;

	struct wl_surface *surface;
	struct xdg_surface *xdg_surface;
	struct xdg_toplevel *toplevel;
	struct wl_callback *frame_cb;
	struct shm_buffer buffers[NUM_BUFFERS];
	int width, height; /* of the next frame */
	bool configured;
	int pointer_x, pointer_y;
};

static void draw_frame(struct mon_shell *win);

static void handle_frame_done(void *data, struct wl_callback *cb, uint32_t time) {
	struct mon_shell *win = data;
	wl_callback_destroy(cb);
	win->frame_cb = NULL;
	if (win->m->dirty) {
		draw_frame(win);
	}
}

static const struct wl_callback_listener frame_listener = {
	.done = handle_frame_done,
};

static struct shm_buffer *free_buffer(struct mon_shell *win) {
	for (int i = 0; i < NUM_BUFFERS; i++) {
		struct shm_buffer *buf = &win->buffers[i];
		if (buf->busy) {
			continue;
		}
		if (buf->wl_buffer && (buf->width != win->width || buf->height != win->height)) {
			shm_buffer_finish(buf);
		}
		if (!buf->wl_buffer &&
				!shm_buffer_init(buf, win->shm, win->width, win->height, "qosway-monitor")) {
			return NULL;
		}
		return buf;
	}
	return NULL;
}

/* Draws now if a buffer is free and no frame is in flight; else at the next. */
static void draw_frame(struct mon_shell *win) {
	if (!win->configured || win->frame_cb) {
		return;
	}
	struct shm_buffer *buf = free_buffer(win);
	if (!buf) {
		return;
	}
	cairo_surface_t *surface = cairo_image_surface_create_for_data(buf->data, CAIRO_FORMAT_ARGB32,
			buf->width, buf->height, buf->stride);
	cairo_t *cr = cairo_create(surface);
	if (cairo_status(cr) == CAIRO_STATUS_SUCCESS) {
		monitor_paint(win->m, cr, buf->width, buf->height);
	}
	cairo_destroy(cr);
	cairo_surface_flush(surface);
	cairo_surface_destroy(surface);
	shm_buffer_attach(buf, win->surface);
	win->frame_cb = wl_surface_frame(win->surface);
	wl_callback_add_listener(win->frame_cb, &frame_listener, win);
	wl_surface_commit(win->surface);
}

static void handle_xdg_surface_configure(void *data, struct xdg_surface *xdg_surface,
		uint32_t serial) {
	struct mon_shell *win = data;
	xdg_surface_ack_configure(xdg_surface, serial);
	win->configured = true;
	win->m->dirty = true;
	draw_frame(win);
}

static const struct xdg_surface_listener xdg_surface_listener = {
	.configure = handle_xdg_surface_configure,
};

static void handle_toplevel_configure(void *data, struct xdg_toplevel *toplevel, int32_t width,
		int32_t height, struct wl_array *states) {
	struct mon_shell *win = data;
	/* 0 leaves the size to us: the preferred size set at start stays. */
	if (width >= 320 && height >= 200) {
		win->width = width;
		win->height = height;
	}
}

static void handle_toplevel_close(void *data, struct xdg_toplevel *toplevel) {
	struct mon_shell *win = data;
	win->m->running = false;
}

static const struct xdg_toplevel_listener toplevel_listener = {
	.configure = handle_toplevel_configure,
	.close = handle_toplevel_close,
};

static void handle_ping(void *data, struct xdg_wm_base *wm_base, uint32_t serial) {
	xdg_wm_base_pong(wm_base, serial);
}

static const struct xdg_wm_base_listener wm_base_listener = {
	.ping = handle_ping,
};

static void handle_keymap(void *data, struct wl_keyboard *keyboard, uint32_t format, int32_t fd,
		uint32_t size) {
	struct mon_shell *win = data;
	if (format != WL_KEYBOARD_KEYMAP_FORMAT_XKB_V1) {
		close(fd);
		return;
	}
	char *text = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (text == MAP_FAILED) {
		return;
	}
	struct xkb_keymap *keymap = xkb_keymap_new_from_string(win->xkb, text,
			XKB_KEYMAP_FORMAT_TEXT_V1, XKB_KEYMAP_COMPILE_NO_FLAGS);
	munmap(text, size);
	struct xkb_state *state = keymap ? xkb_state_new(keymap) : NULL;
	if (!state) {
		fprintf(stderr, "qosway-monitor: cannot use the compositor's keymap\n");
		xkb_keymap_unref(keymap);
		return;
	}
	xkb_state_unref(win->xkb_state);
	xkb_keymap_unref(win->keymap);
	win->keymap = keymap;
	win->xkb_state = state;
}

static void handle_enter(void *data, struct wl_keyboard *keyboard, uint32_t serial,
		struct wl_surface *surface, struct wl_array *keys) {
}

static void handle_leave(void *data, struct wl_keyboard *keyboard, uint32_t serial,
		struct wl_surface *surface) {
}

static void handle_key(void *data, struct wl_keyboard *keyboard, uint32_t serial, uint32_t time,
		uint32_t key, uint32_t state) {
	struct mon_shell *win = data;
	if (!win->xkb_state || state != WL_KEYBOARD_KEY_STATE_PRESSED) {
		return;
	}
	xkb_keycode_t code = key + 8; /* evdev to xkb */
	xkb_keysym_t sym = xkb_state_key_get_one_sym(win->xkb_state, code);
	char text[16] = "";
	xkb_state_key_get_utf8(win->xkb_state, code, text, sizeof(text));
	monitor_key(win->m, sym, text);
	draw_frame(win);
}

static void handle_modifiers(void *data, struct wl_keyboard *keyboard, uint32_t serial,
		uint32_t depressed, uint32_t latched, uint32_t locked, uint32_t group) {
	struct mon_shell *win = data;
	if (win->xkb_state) {
		xkb_state_update_mask(win->xkb_state, depressed, latched, locked, 0, 0, group);
	}
}

static void handle_repeat_info(void *data, struct wl_keyboard *keyboard, int32_t rate,
		int32_t delay) {
	/* Nothing here is worth repeating. */
}

static const struct wl_keyboard_listener keyboard_listener = {
	.keymap = handle_keymap,
	.enter = handle_enter,
	.leave = handle_leave,
	.key = handle_key,
	.modifiers = handle_modifiers,
	.repeat_info = handle_repeat_info,
};

static void handle_pointer_enter(void *data, struct wl_pointer *pointer, uint32_t serial,
		struct wl_surface *surface, wl_fixed_t x, wl_fixed_t y) {
	struct mon_shell *win = data;
	win->pointer_x = wl_fixed_to_int(x);
	win->pointer_y = wl_fixed_to_int(y);
}

static void handle_pointer_leave(void *data, struct wl_pointer *pointer, uint32_t serial,
		struct wl_surface *surface) {
}

static void handle_motion(void *data, struct wl_pointer *pointer, uint32_t time, wl_fixed_t x,
		wl_fixed_t y) {
	struct mon_shell *win = data;
	win->pointer_x = wl_fixed_to_int(x);
	win->pointer_y = wl_fixed_to_int(y);
}

static void handle_button(void *data, struct wl_pointer *pointer, uint32_t serial, uint32_t time,
		uint32_t button, uint32_t state) {
	struct mon_shell *win = data;
	if (button == BTN_LEFT && state == WL_POINTER_BUTTON_STATE_PRESSED) {
		monitor_click(win->m, win->pointer_x, win->pointer_y);
		draw_frame(win);
	}
}

static void handle_axis(void *data, struct wl_pointer *pointer, uint32_t time, uint32_t axis,
		wl_fixed_t value) {
	struct mon_shell *win = data;
	if (axis == WL_POINTER_AXIS_VERTICAL_SCROLL && value != 0) {
		monitor_scroll(win->m, value > 0 ? 1 : -1);
		draw_frame(win);
	}
}

static void handle_frame(void *data, struct wl_pointer *pointer) {
}

static void handle_axis_source(void *data, struct wl_pointer *pointer, uint32_t source) {
}

static void handle_axis_stop(void *data, struct wl_pointer *pointer, uint32_t time, uint32_t axis) {
}

static void handle_axis_discrete(void *data, struct wl_pointer *pointer, uint32_t axis,
		int32_t discrete) {
}

static const struct wl_pointer_listener pointer_listener = {
	.enter = handle_pointer_enter,
	.leave = handle_pointer_leave,
	.motion = handle_motion,
	.button = handle_button,
	.axis = handle_axis,
	.frame = handle_frame,
	.axis_source = handle_axis_source,
	.axis_stop = handle_axis_stop,
	.axis_discrete = handle_axis_discrete,
};

static void handle_capabilities(void *data, struct wl_seat *seat, uint32_t caps) {
	struct mon_shell *win = data;
	if ((caps & WL_SEAT_CAPABILITY_KEYBOARD) && !win->keyboard) {
		win->keyboard = wl_seat_get_keyboard(seat);
		wl_keyboard_add_listener(win->keyboard, &keyboard_listener, win);
	} else if (!(caps & WL_SEAT_CAPABILITY_KEYBOARD) && win->keyboard) {
		wl_keyboard_release(win->keyboard);
		win->keyboard = NULL;
	}
	if ((caps & WL_SEAT_CAPABILITY_POINTER) && !win->pointer) {
		win->pointer = wl_seat_get_pointer(seat);
		wl_pointer_add_listener(win->pointer, &pointer_listener, win);
	} else if (!(caps & WL_SEAT_CAPABILITY_POINTER) && win->pointer) {
		wl_pointer_release(win->pointer);
		win->pointer = NULL;
	}
}

static void handle_seat_name(void *data, struct wl_seat *seat, const char *name) {
}

static const struct wl_seat_listener seat_listener = {
	.capabilities = handle_capabilities,
	.name = handle_seat_name,
};

static void handle_global(void *data, struct wl_registry *registry, uint32_t name,
		const char *interface, uint32_t version) {
	struct mon_shell *win = data;
	if (strcmp(interface, wl_compositor_interface.name) == 0 && version >= 4) {
		/* v4 is the first with wl_surface.damage_buffer. */
		win->compositor = wl_registry_bind(registry, name, &wl_compositor_interface, 4);
	} else if (strcmp(interface, wl_shm_interface.name) == 0) {
		win->shm = wl_registry_bind(registry, name, &wl_shm_interface, 1);
	} else if (strcmp(interface, xdg_wm_base_interface.name) == 0) {
		win->wm_base = wl_registry_bind(registry, name, &xdg_wm_base_interface, 1);
		xdg_wm_base_add_listener(win->wm_base, &wm_base_listener, win);
	} else if (strcmp(interface, zxdg_decoration_manager_v1_interface.name) == 0) {
		win->deco_manager =
				wl_registry_bind(registry, name, &zxdg_decoration_manager_v1_interface, 1);
	} else if (strcmp(interface, wl_seat_interface.name) == 0 && !win->seat && version >= 5) {
		/* v5: wl_keyboard and wl_pointer release. */
		win->seat = wl_registry_bind(registry, name, &wl_seat_interface, 5);
		wl_seat_add_listener(win->seat, &seat_listener, win);
	}
}

static void handle_global_remove(void *data, struct wl_registry *registry, uint32_t name) {
	/* Losing the seat only loses input; the rest cannot go away. */
}

static const struct wl_registry_listener registry_listener = {
	.global = handle_global,
	.global_remove = handle_global_remove,
};

static bool connect_display(struct mon_shell *win) {
	win->display = wl_display_connect(NULL);
	if (!win->display) {
		fprintf(stderr,
				"qosway-monitor: cannot connect to the Wayland display (WAYLAND_DISPLAY=%s)\n",
				getenv("WAYLAND_DISPLAY") ? getenv("WAYLAND_DISPLAY") : "unset");
		return false;
	}
	win->xkb = xkb_context_new(XKB_CONTEXT_NO_FLAGS);
	win->registry = wl_display_get_registry(win->display);
	if (!win->xkb || !win->registry) {
		fprintf(stderr, "qosway-monitor: out of memory\n");
		return false;
	}
	wl_registry_add_listener(win->registry, &registry_listener, win);
	if (wl_display_roundtrip(win->display) < 0) {
		fprintf(stderr, "qosway-monitor: lost the display while binding globals\n");
		return false;
	}
	const char *missing = !win->compositor ? "wl_compositor v4"
			: !win->shm                    ? "wl_shm"
			: !win->wm_base                ? "xdg_wm_base"
										   : NULL;
	if (missing) {
		fprintf(stderr, "qosway-monitor: the compositor lacks %s\n", missing);
		return false;
	}
	win->surface = wl_compositor_create_surface(win->compositor);
	win->xdg_surface = xdg_wm_base_get_xdg_surface(win->wm_base, win->surface);
	xdg_surface_add_listener(win->xdg_surface, &xdg_surface_listener, win);
	win->toplevel = xdg_surface_get_toplevel(win->xdg_surface);
	xdg_toplevel_add_listener(win->toplevel, &toplevel_listener, win);
	xdg_toplevel_set_title(win->toplevel, "QoS monitor");
	xdg_toplevel_set_app_id(win->toplevel, "qosway-monitor");
	xdg_toplevel_set_min_size(win->toplevel, 640, 260);
	if (win->deco_manager) {
		win->decoration = zxdg_decoration_manager_v1_get_toplevel_decoration(win->deco_manager,
				win->toplevel);
		zxdg_toplevel_decoration_v1_set_mode(win->decoration,
				ZXDG_TOPLEVEL_DECORATION_V1_MODE_SERVER_SIDE);
	}
	wl_surface_commit(win->surface);
	return true;
}

static void destroy_window(struct mon_shell *win) {
	if (win->frame_cb) {
		wl_callback_destroy(win->frame_cb);
	}
	for (int i = 0; i < NUM_BUFFERS; i++) {
		shm_buffer_finish(&win->buffers[i]);
	}
	if (win->decoration) {
		zxdg_toplevel_decoration_v1_destroy(win->decoration);
	}
	if (win->toplevel) {
		xdg_toplevel_destroy(win->toplevel);
	}
	if (win->xdg_surface) {
		xdg_surface_destroy(win->xdg_surface);
	}
	if (win->surface) {
		wl_surface_destroy(win->surface);
	}
	if (win->keyboard) {
		wl_keyboard_release(win->keyboard);
	}
	if (win->pointer) {
		wl_pointer_release(win->pointer);
	}
	if (win->seat) {
		wl_seat_destroy(win->seat);
	}
	if (win->deco_manager) {
		zxdg_decoration_manager_v1_destroy(win->deco_manager);
	}
	if (win->wm_base) {
		xdg_wm_base_destroy(win->wm_base);
	}
	if (win->shm) {
		wl_shm_destroy(win->shm);
	}
	if (win->compositor) {
		wl_compositor_destroy(win->compositor);
	}
	if (win->registry) {
		wl_registry_destroy(win->registry);
	}
	xkb_state_unref(win->xkb_state);
	xkb_keymap_unref(win->keymap);
	xkb_context_unref(win->xkb);
	if (win->display) {
		wl_display_flush(win->display);
		wl_display_disconnect(win->display);
	}
}

static int make_timer(int interval_ms) {
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (fd < 0) {
		return -1;
	}
	struct timespec ival = { interval_ms / 1000, (long)(interval_ms % 1000) * 1000000L };
	struct itimerspec spec = { .it_interval = ival, .it_value = ival };
	timerfd_settime(fd, 0, &spec, NULL);
	return fd;
}

static int make_signalfd(void) {
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	/* Blocked and read from a signalfd: no handler runs inside Wayland code. */
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0) {
		return -1;
	}
	return signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* One pass of the loop; false when the display broke. */
static bool dispatch(struct mon_shell *win, int timer_fd, int signal_fd) {
	struct wl_display *d = win->display;
	while (wl_display_prepare_read(d) != 0) {
		if (wl_display_dispatch_pending(d) < 0) {
			return false;
		}
	}
	if (wl_display_flush(d) < 0 && errno != EAGAIN) {
		wl_display_cancel_read(d);
		return false;
	}
	struct pollfd fds[4] = {
		{ .fd = wl_display_get_fd(d), .events = POLLIN },
		{ .fd = ipc_client_fd(win->m->ipc), .events = POLLIN },
		{ .fd = timer_fd, .events = POLLIN },
		{ .fd = signal_fd, .events = POLLIN },
	};
	/* The IPC socket stops counting once the compositor hung up. */
	nfds_t n = 4;
	if (!win->m->model.connected) {
		fds[1].fd = -1;
	}
	if (poll(fds, n, -1) < 0) {
		wl_display_cancel_read(d);
		return errno == EINTR;
	}
	if (fds[0].revents & POLLIN) {
		if (wl_display_read_events(d) < 0) {
			return false;
		}
	} else {
		wl_display_cancel_read(d);
	}
	if (fds[0].revents & (POLLERR | POLLHUP)) {
		return false;
	}
	if (fds[1].revents) {
		monitor_read_ipc(win->m);
	}
	if (fds[2].revents & POLLIN) {
		uint64_t expirations;
		if (read(timer_fd, &expirations, sizeof(expirations)) > 0 && win->m->model.connected) {
			monitor_refresh(win->m);
		}
	}
	if (fds[3].revents & POLLIN) {
		struct signalfd_siginfo si;
		while (read(signal_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
			win->m->running = false;
		}
	}
	if (wl_display_dispatch_pending(d) < 0) {
		return false;
	}
	if (win->m->dirty) {
		draw_frame(win);
	}
	return true;
}

int mon_window_run(struct monitor *m) {
	struct mon_shell win = { .m = m };
	int timer_fd = make_timer(m->opt.interval_ms);
	int signal_fd = make_signalfd();
	int status = EXIT_FAILURE;
	if (timer_fd < 0 || signal_fd < 0) {
		fprintf(stderr, "qosway-monitor: cannot create a timer or signal fd: %s\n",
				strerror(errno));
		goto out;
	}
	mon_draw_preferred_size(4, &win.width, &win.height);
	if (!connect_display(&win)) {
		goto out;
	}
	monitor_refresh(m);
	m->running = true;
	status = EXIT_SUCCESS;
	while (m->running) {
		if (!dispatch(&win, timer_fd, signal_fd)) {
			fprintf(stderr, "qosway-monitor: lost the connection to the display\n");
			status = EXIT_FAILURE;
			break;
		}
	}
out:
	destroy_window(&win);
	if (timer_fd >= 0) {
		close(timer_fd);
	}
	if (signal_fd >= 0) {
		close(signal_fd);
	}
	return status;
}
