/*
 * qosway configuration: a line-oriented file, one setting per line.
 * See qosway(5) for the format. Loading never fails as a
 * whole because of a bad line: the line is reported as `file:line: message`
 * and skipped, since a desktop session must come up.
 */
#ifndef QOSWAY_CONFIG_H
#define QOSWAY_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <xkbcommon/xkbcommon.h>

enum qw_button_kind {
	QW_BUTTON_REALTIME,
	QW_BUTTON_IDLE,
	QW_BUTTON_PAUSE,
	QW_BUTTON_CLOSE,
	QW_BUTTON_KIND_COUNT,
};

/* Whether X11 programs can run (xwayland.h). */
enum qw_xwayland_mode {
	QW_XWAYLAND_LAZY, /* the X server starts when the first X client connects */
	QW_XWAYLAND_ENABLE, /* started with the session */
	QW_XWAYLAND_DISABLE, /* no X server, no DISPLAY */
};

/* What a window that draws its own decorations gets from us. */
enum qw_csd_buttons {
	QW_CSD_BUTTONS_STRIP, /* a compact strip of the QoS buttons on its top edge */
	QW_CSD_BUTTONS_TITLEBAR, /* our full titlebar and border regardless */
	QW_CSD_BUTTONS_NONE, /* nothing: QoS only from keys, IPC and qosctl */
};

enum qw_color {
	QW_COLOR_TITLEBAR_FOCUSED,
	QW_COLOR_TITLEBAR_UNFOCUSED,
	QW_COLOR_TEXT_FOCUSED,
	QW_COLOR_TEXT_UNFOCUSED,
	QW_COLOR_BORDER_FOCUSED,
	QW_COLOR_BORDER_UNFOCUSED,
	QW_COLOR_BUTTON_ICON,
	QW_COLOR_BUTTON_HOVER,
	QW_COLOR_BUTTON_PRESSED,
	QW_COLOR_BUTTON_ON,
	QW_COLOR_BUTTON_ON_ICON,
	QW_COLOR_CLOSE_HOVER,
	QW_COLOR_BUTTON_REFUSED,
	QW_COLOR_TEXT_WARNING,
	QW_COLOR_PAUSED_DIM,
	QW_COLOR_TITLEBAR_URGENT, /* titlebar and border of an urgent window */
	QW_COLOR_COUNT,
};

enum qw_action {
	QW_ACTION_EXEC,
	QW_ACTION_TERMINAL,
	QW_ACTION_CLOSE,
	QW_ACTION_FOCUS_NEXT,
	QW_ACTION_MAXIMIZE,
	QW_ACTION_FULLSCREEN,
	QW_ACTION_MINIMIZE,
	/* Runs even while a client inhibits shortcuts: the way back out. */
	QW_ACTION_SHORTCUTS_INHIBIT_TOGGLE,
	QW_ACTION_EXIT,
	QW_ACTION_WORKSPACE, /* arg: the number */
	QW_ACTION_MOVE_TO_WORKSPACE, /* arg: the number */
};

/* Workspaces per output, numbered from 1 (workspace.h). */
#define QW_WORKSPACE_COUNT 10

struct qw_binding {
	uint32_t modifiers; /* WLR_MODIFIER_* bits */
	xkb_keysym_t keysym; /* lower case */
	enum qw_action action;
	char *arg; /* command for QW_ACTION_EXEC, number for the workspace actions */
};

/* What an inactive window's process is moved to. */
enum qw_inactive_class {
	QW_INACTIVE_NONE, /* nothing: inactivity is only reported */
	QW_INACTIVE_IDLE,
	QW_INACTIVE_NORMAL,
};

struct qw_config {
	int output_width, output_height;
	int output_refresh_mhz;
	char *terminal;
	char *font;
	int titlebar_height;
	int border_width;
	int cascade_step;
	/* Titlebar buttons from left to right; close is conventionally last. */
	enum qw_button_kind buttons[QW_BUTTON_KIND_COUNT];
	size_t button_count;
	float colors[QW_COLOR_COUNT][4];
	enum qw_csd_buttons csd_buttons;
	enum qw_xwayland_mode xwayland;
	/* Taskbars see "[class] title" instead of the bare title. */
	bool taskbar_class;
	struct qw_binding *bindings;
	size_t binding_count;
	/* The standard reserve the real-time button gives a window that no
	 * qosrc rule covers: sized from the program's measured use (cpu_ppm
	 * 0, "auto"), its period its window's refresh (period_us 0, "vblank"),
	 * its capacity given back after idle_release idle periods (0: never). */
	uint64_t realtime_cpu_ppm;
	uint64_t realtime_period_us;
	uint32_t realtime_idle_release;
	int realtime_fallback; /* enum qos_policy */
	/* Share of each CPU kept back from guarantees (admission control). */
	uint64_t qos_reserved_ppm;
	/* Whether a session run by root may change other users' processes
	 * (qos_gate.h); an ordinary user's never may. */
	bool qos_other_users;
	/* A window minimised, covered or on no output for inactive_timeout_s
	 * is inactive; its process then goes to inactive_class (inactive.h). */
	unsigned int inactive_timeout_s;
	enum qw_inactive_class inactive_class;
	/* The compositor as a slave scheduler (scheduler.h). Off is the plain
	 * wl_display_run loop: every client served alike, nothing billed. */
	struct {
		bool serve_by_reserve;
		bool bill;
		bool boost;
		unsigned int hidden_frame_rate; /* Hz, for covered or off-screen windows */
		unsigned int server_weight; /* the compositor's cgroup CPU weight (v2 scale); 0: off */
	} scheduling;
	/* Per-output settings by connector name (output_config.h). */
	struct qw_output_config *outputs;
	size_t output_count;
	/* Input device settings by name or type (input_config.h). */
	struct qw_input_config *inputs;
	size_t input_count;
	char *input_block; /* parse state: the identifier of an open "input ID {" */
	bool in_scheduling_block; /* parse state: between "scheduling {" and "}" */
	char *output_block; /* parse state: the NAME of an open "output NAME {" */
	unsigned int error_count; /* bad lines seen while loading */
};

void config_init_defaults(struct qw_config *config);
void config_finish(struct qw_config *config);

/*
 * Apply every valid line of `path` on top of the current settings. Bad lines
 * are reported on `err` as `path:line: message` and skipped. Returns false
 * only if the file cannot be read at all.
 */
bool config_load_file(struct qw_config *config, const char *path, FILE *err);

/* Apply one line; on error returns false and writes the reason to `msg`. */
bool config_apply_line(struct qw_config *config, const char *line, char *msg, size_t msg_size);

/*
 * The first readable of: the user's file ($XDG_CONFIG_HOME/qosway/config,
 * or ~/.config/qosway/config), the system's (SYSCONFDIR/qosway/config,
 * /etc/qosway/config for a /usr install), the installed default
 * (DATADIR/qosway/config), the one in the source tree.
 * Returns a newly allocated path, or NULL if none exists.
 */
char *config_find_default(void);

/* WIDTHxHEIGHT[@HZ[Hz]]; false if it is not one (or out of range). */
bool config_parse_mode(const char *s, int *w, int *h, int *mhz);

const char *config_button_name(enum qw_button_kind kind);
bool config_parse_button(const char *name, enum qw_button_kind *kind);

#endif
