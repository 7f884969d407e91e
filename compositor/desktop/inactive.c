#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wlr/util/log.h>

#include "desktop/inactive.h"
#include "ipc/ipc.h"
#include "qos_bridge/qos_link.h"
#include "qos_bridge/qos_gate.h"
#include "qos_bridge/reserve_protocol.h"
#include "desktop/view.h"
#include "desktop/view_output.h"
#include "desktop/workspace.h"

/* Visibility is looked at this often: a timeout is a matter of seconds. */
#define INACTIVE_TICK_MS 500
#define INACTIVE_MAX_USER_PLACED 128
#define INACTIVE_MAX_MOVED 64

/* A process this module moved (or tried to), and what it had before. */
struct inactive_move {
	pid_t pid;
	enum qw_class from, to;
	bool refused; /* the gate said no: nothing to undo, not asked again */
};

struct qw_inactive {
	struct qw_server *server;
	struct wl_event_source *timer;
	/* The user chose these processes' class: most recent last, the
	 * oldest forgotten when full. */
	pid_t user_placed[INACTIVE_MAX_USER_PLACED];
	size_t n_user_placed;
	struct inactive_move moved[INACTIVE_MAX_MOVED];
	size_t n_moved;
};

static uint64_t monotonic_ms(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static bool user_placed(struct qw_inactive *inactive, pid_t pid) {
	for (size_t i = 0; i < inactive->n_user_placed; i++) {
		if (inactive->user_placed[i] == pid) {
			return true;
		}
	}
	return false;
}

static struct inactive_move *find_move(struct qw_inactive *inactive, pid_t pid) {
	for (size_t i = 0; i < inactive->n_moved; i++) {
		if (inactive->moved[i].pid == pid) {
			return &inactive->moved[i];
		}
	}
	return NULL;
}

static void forget_move(struct qw_inactive *inactive, struct inactive_move *move) {
	*move = inactive->moved[--inactive->n_moved];
}

void inactive_user_placed(struct qw_server *server, pid_t pid) {
	struct qw_inactive *inactive = server->inactive;
	if (!inactive || pid <= 0) {
		return;
	}
	struct inactive_move *move = find_move(inactive, pid);
	if (move) {
		forget_move(inactive, move);
	}
	if (user_placed(inactive, pid)) {
		return;
	}
	if (inactive->n_user_placed == INACTIVE_MAX_USER_PLACED) {
		memmove(&inactive->user_placed[0], &inactive->user_placed[1],
				sizeof(pid_t) * (INACTIVE_MAX_USER_PLACED - 1));
		inactive->n_user_placed--;
	}
	inactive->user_placed[inactive->n_user_placed++] = pid;
}

/* A process is inactive when it has mapped windows and all are. */
static bool process_inactive(struct qw_server *server, pid_t pid) {
	bool any = false;
	struct qw_view *view;
	wl_list_for_each(view, &server->views, link) {
		if (view->mapped && view_get_pid(view) == pid) {
			if (!view->inactive) {
				return false;
			}
			any = true;
		}
	}
	return any;
}

/* The compositor asks, by the user's inactive-class setting. */
static bool set_class(struct qw_server *server, pid_t pid, enum qw_class class, char *err,
		size_t err_len) {
	struct qos_gate_asker asker = { .who = QOS_GATE_USER, .pid = -1, .by_setting = true };
	return qos_gate_set_class(server, &asker, pid, class, err, err_len);
}

static void restore(struct qw_inactive *inactive, struct inactive_move *move) {
	struct qw_server *server = inactive->server;
	pid_t pid = move->pid;
	bool undo = !move->refused && qos_link_class_of(server, pid, NULL) == move->to;
	enum qw_class from = move->from;
	forget_move(inactive, move);
	char err[256];
	if (undo && !set_class(server, pid, from, err, sizeof(err))) {
		wlr_log(WLR_INFO, "pid %d active again, but its %s class was refused: %s", (int)pid,
				qos_class_name(from), err);
	}
}

/* How much CPU a class gets, to only ever lower an inactive process's. */
static int class_rank(enum qw_class class) {
	switch (class) {
	case QW_CLASS_PAUSED:
		return 0;
	case QW_CLASS_IDLE:
		return 1;
	case QW_CLASS_NICE:
		return 2;
	case QW_CLASS_NORMAL:
		return 3;
	case QW_CLASS_REALTIME:
	case QW_CLASS_FIFO:
	case QW_CLASS_COUNT:
		break;
	}
	return 4;
}

static void move(struct qw_inactive *inactive, struct qw_view *view, enum qw_class to) {
	struct qw_server *server = inactive->server;
	pid_t pid = view_get_pid(view);
	enum qw_class from = qos_link_class_of(server, pid, NULL);
	if (pid <= 0 || class_rank(from) <= class_rank(to) || find_move(inactive, pid) ||
			inactive->n_moved == INACTIVE_MAX_MOVED || user_placed(inactive, pid) ||
			reserve_protocol_placed(server, pid) || !process_inactive(server, pid)) {
		return;
	}
	struct inactive_move *m = &inactive->moved[inactive->n_moved++];
	*m = (struct inactive_move){ .pid = pid, .from = from, .to = to };
	char err[256];
	if (!set_class(server, pid, to, err, sizeof(err))) {
		m->refused = true;
		wlr_log(WLR_INFO, "inactive pid %d stays %s: %s", (int)pid, qos_class_name(from), err);
	}
}

static void set_inactive(struct qw_view *view, bool inactive) {
	if (view->inactive == inactive) {
		return;
	}
	view->inactive = inactive;
	ipc_notify_window(view->server, view, inactive ? "inactive" : "active");
}

static bool hidden(struct qw_view *view) {
	return !view->deco.focused &&
			(view->minimized || !view_main_output(view) || view_fully_covered(view) ||
					!workspace_view_shown(view));
}

static void update_view(struct qw_server *server, struct qw_view *view, uint64_t now) {
	if (!view->mapped || !hidden(view)) {
		view->hidden_since_ms = 0;
		view->inactive_since = 0;
		set_inactive(view, false);
		return;
	}
	if (!view->hidden_since_ms) {
		view->hidden_since_ms = now;
		view->inactive_since = time(NULL);
	}
	if (now - view->hidden_since_ms >= (uint64_t)server->config.inactive_timeout_s * 1000) {
		set_inactive(view, true);
	}
}

static enum qw_class target_class(const struct qw_config *config, bool *none) {
	*none = config->inactive_class == QW_INACTIVE_NONE;
	return config->inactive_class == QW_INACTIVE_IDLE ? QW_CLASS_IDLE : QW_CLASS_NORMAL;
}

/* Moves undone for processes that show again (or when moving is off). */
static void apply_classes(struct qw_inactive *inactive) {
	struct qw_server *server = inactive->server;
	bool none;
	enum qw_class to = target_class(&server->config, &none);
	for (size_t i = inactive->n_moved; i-- > 0;) {
		struct inactive_move *m = &inactive->moved[i];
		if (none || !process_inactive(server, m->pid)) {
			restore(inactive, m);
		}
	}
	if (none) {
		return;
	}
	struct qw_view *view;
	wl_list_for_each(view, &server->views, link) {
		if (view->inactive) {
			move(inactive, view, to);
		}
	}
}

static int handle_tick(void *data) {
	struct qw_inactive *inactive = data;
	struct qw_server *server = inactive->server;
	uint64_t now = monotonic_ms();
	struct qw_view *view;
	wl_list_for_each(view, &server->views, link) {
		update_view(server, view, now);
	}
	apply_classes(inactive);
	wl_event_source_timer_update(inactive->timer, INACTIVE_TICK_MS);
	return 0;
}

void inactive_view_active(struct qw_view *view) {
	struct qw_inactive *inactive = view->server->inactive;
	view->hidden_since_ms = 0;
	view->inactive_since = 0;
	if (!inactive || !view->inactive) {
		return;
	}
	set_inactive(view, false);
	struct inactive_move *m = find_move(inactive, view_get_pid(view));
	if (m) {
		restore(inactive, m);
	}
}

bool inactive_create(struct qw_server *server) {
	struct qw_inactive *inactive = calloc(1, sizeof(*inactive));
	if (!inactive) {
		return false;
	}
	inactive->server = server;
	inactive->timer = wl_event_loop_add_timer(server->event_loop, handle_tick, inactive);
	if (!inactive->timer) {
		free(inactive);
		return false;
	}
	wl_event_source_timer_update(inactive->timer, INACTIVE_TICK_MS);
	server->inactive = inactive;
	return true;
}

void inactive_destroy(struct qw_inactive *inactive) {
	if (!inactive) {
		return;
	}
	wl_event_source_remove(inactive->timer);
	inactive->server->inactive = NULL;
	free(inactive);
}
