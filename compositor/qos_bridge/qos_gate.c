#include <limits.h>
#include <linux/capability.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "qos/proc.h"
#include "desktop/inactive.h"
#include "qos/qos.h"
#include "qos_bridge/qos_gate.h"
#include "qos_bridge/qos_link.h"
#include "qos_bridge/reserve_protocol.h"

/* Remembers a class the user chose for pid, so that hiding or showing its
 * windows (inactive.c) leaves it alone. */
static void user_chose(struct qw_server *server, const struct qos_gate_asker *asker, pid_t pid) {
	if (asker->who == QOS_GATE_USER && !asker->by_setting) {
		inactive_user_placed(server, pid);
	}
}

/*
 * The manager, or NULL with the reason in err: the user is told what is
 * unavailable, an application only why.
 */
static struct qos_manager *manager_for(struct qw_server *server, const struct qos_gate_asker *asker,
		char *err, size_t len) {
	struct qos_manager *qos = qos_link_manager(server);
	if (!qos && asker->who == QOS_GATE_APP) {
		snprintf(err, len, "%s", qos_link_error(server));
	} else if (!qos) {
		qos_link_ready(server, err, len);
	}
	return qos;
}

static void set_why(enum qos_gate_refusal *why, enum qos_gate_refusal value) {
	if (why) {
		*why = value;
	}
}

/* What the manager's last refusal was, for the protocol: capacity if
 * admission control or the kernel's bandwidth bound said no. */
static void set_why_of_manager(enum qos_gate_refusal *why, struct qos_manager *qos) {
	set_why(why,
			qos_manager_last_refusal(qos) == QOS_REFUSAL_CAPACITY ? QOS_GATE_CAPACITY
																  : QOS_GATE_FORBIDDEN);
}

/* The QoS manager's guard is a fork of the compositor: our child, our exe. */
static bool is_our_guard(pid_t pid) {
	if (qos_proc_parent(pid) != getpid()) {
		return false;
	}
	char self[PATH_MAX], other[PATH_MAX];
	return qos_proc_exe(getpid(), self, sizeof(self)) && qos_proc_exe(pid, other, sizeof(other)) &&
			strcmp(self, other) == 0;
}

/* PF_KTHREAD in the flags of /proc/PID/stat (field 9). */
#define PROC_FLAG_KTHREAD 0x00200000u

static bool is_kernel_thread(pid_t pid) {
	char path[64], text[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f) {
		return false;
	}
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	/* After the command name, which may hold anything, up to its last ')'. */
	char *rest = strrchr(text, ')');
	unsigned int flags = 0;
	return rest && sscanf(rest + 1, " %*c %*d %*d %*d %*d %*d %u", &flags) == 1 &&
			(flags & PROC_FLAG_KTHREAD);
}

static void user_name(uid_t uid, char *buf, size_t len) {
	struct passwd pw, *found = NULL;
	char scratch[1024];
	if (getpwuid_r(uid, &pw, scratch, sizeof(scratch), &found) == 0 && found) {
		snprintf(buf, len, "%s (uid %u)", found->pw_name, (unsigned)uid);
	} else {
		snprintf(buf, len, "uid %u", (unsigned)uid);
	}
}

/*
 * What the session depends on beyond its own ancestors: the seat, login
 * and display managers. Matched on the command name (/proc/PID/comm,
 * at most 15 characters).
 */
static const char *const session_services[] = {
	"seatd",
	"systemd",
	"systemd-logind",
	"gdm",
	"gdm-session-wor",
	"gdm-wayland-ses",
	"sddm",
	"sddm-helper",
	"lightdm",
	"greetd",
	"ly",
	"lxdm",
	"lxdm-session",
	"xdm",
	"login",
};

/* The command name of pid (/proc/PID/comm, at most 15 characters), or "?". */
static void comm_of(pid_t pid, char *name, size_t len) {
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	FILE *f = fopen(path, "re");
	bool read_ok = f && fgets(name, (int)len, f) != NULL;
	if (f) {
		fclose(f);
	}
	if (!read_ok) {
		snprintf(name, len, "?");
	}
	name[strcspn(name, "\n")] = '\0';
}

static bool is_session_service(const char *name) {
	for (size_t i = 0; i < sizeof(session_services) / sizeof(session_services[0]); i++) {
		if (strcmp(name, session_services[i]) == 0) {
			return true;
		}
	}
	return false;
}

/* The compositor runs under pid: its parent, theirs, and so on up to (not
 * including) pid 1. */
static bool is_our_ancestor(pid_t pid) {
	for (pid_t p = getppid(); p > 1; p = qos_proc_parent(p)) {
		if (p == pid) {
			return true;
		}
	}
	return false;
}

/* Whether pid is not one of those; if it is, false with the reason in err. */
static bool not_our_ancestor(pid_t pid, char *err, size_t err_len) {
	if (!is_our_ancestor(pid)) {
		return true;
	}
	char name[32];
	comm_of(pid, name, sizeof(name));
	snprintf(err, err_len,
			"refusing to change pid %d (%s): it is an ancestor of the compositor, "
			"so changing its class would change the session's own",
			(int)pid, name);
	return false;
}

bool qos_gate_may_touch(struct qw_server *server, pid_t pid, char *err, size_t err_len) {
	if (pid == 1) {
		snprintf(err, err_len, "refusing to change pid 1: the whole system runs under it");
		return false;
	}
	if (pid == getpid()) {
		snprintf(err, err_len, "refusing to change the compositor's own scheduling");
		return false;
	}
	if (is_kernel_thread(pid)) {
		snprintf(err, err_len, "refusing to change pid %d: it is a kernel thread", (int)pid);
		return false;
	}
	if (is_our_guard(pid)) {
		snprintf(err, err_len,
				"refusing to change pid %d: it guards the session's "
				"frozen processes",
				(int)pid);
		return false;
	}
	if (!not_our_ancestor(pid, err, err_len)) {
		return false;
	}
	uid_t uid = qos_proc_uid(pid);
	uid_t ours = getuid();
	if (uid == (uid_t)-1) {
		snprintf(err, err_len, "no process %d (it has exited)", (int)pid);
		return false;
	}
	if (uid != ours && !(ours == 0 && server->config.qos_other_users)) {
		char owner[96], session[96];
		user_name(uid, owner, sizeof(owner));
		user_name(ours, session, sizeof(session));
		snprintf(err, err_len,
				"refusing to change pid %d: it belongs to %s, not to this "
				"session's user %s%s",
				(int)pid, owner, session,
				ours == 0 ? " (set qos-other-users on in the config to allow it)" : "");
		return false;
	}
	char name[32];
	comm_of(pid, name, sizeof(name));
	if (is_session_service(name)) {
		snprintf(err, err_len, "refusing to change pid %d (%s): the session depends on it",
				(int)pid, name);
		return false;
	}
	return true;
}

/*
 * Whether pid's scheduling may be changed on request: qos_gate_may_touch,
 * and, when the change can freeze it (`freezing`), pid is not `asker` (the
 * requesting process, -1 if none).
 */
static bool may_change(struct qw_server *server, pid_t pid, pid_t asker, bool freezing, char *err,
		size_t err_len) {
	if (freezing && pid == asker) {
		snprintf(err, err_len, "refusing to pause the process asking (pid %d)", (int)pid);
		return false;
	}
	return qos_gate_may_touch(server, pid, err, err_len);
}

static bool have_sys_nice(void) {
	struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	if (syscall(SYS_capget, &header, data) != 0) {
		return false;
	}
	return data[CAP_TO_INDEX(CAP_SYS_NICE)].effective & CAP_TO_MASK(CAP_SYS_NICE);
}

/*
 * The soft RLIMIT_RTPRIO of pid (0: the compositor's own), which the kernel
 * checks when a process without CAP_SYS_NICE asks for fifo or rr; -1 if
 * unreadable (gone).
 */
static long rtprio_limit(pid_t pid) {
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/limits", pid > 0 ? (int)pid : (int)getpid());
	FILE *f = fopen(path, "re");
	if (!f) {
		return -1;
	}
	long limit = -1;
	const char key[] = "Max realtime priority";
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, sizeof(key) - 1) == 0) {
			char soft[32];
			if (sscanf(line + sizeof(key) - 1, "%31s", soft) == 1) {
				limit = strcmp(soft, "unlimited") == 0 ? LONG_MAX : strtol(soft, NULL, 10);
			}
			break;
		}
	}
	fclose(f);
	return limit;
}

static void own_exe(char *exe, size_t len) {
	ssize_t n = readlink("/proc/self/exe", exe, len - 1);
	if (n > 0) {
		exe[n] = '\0';
	} else {
		snprintf(exe, len, "qosway");
	}
}

bool qos_gate_may_raise(const struct qos_params *p, pid_t pid, char *err, size_t err_len) {
	bool deadline = p->policy == QOS_POLICY_QOS;
	bool fixed = qos_policy_is_rt(p->policy) || qos_policy_is_rt(p->fallback);
	if ((!deadline && !fixed && p->nice >= 0) || have_sys_nice()) {
		return true;
	}
	char exe[PATH_MAX];
	own_exe(exe, sizeof(exe));
	if (deadline) {
		snprintf(err, err_len,
				"deadline scheduling (a real-time reserve) needs CAP_SYS_NICE, which an "
				"rtprio limit does not give; as root, run 'setcap cap_sys_nice=ep %s' "
				"and start the session again",
				exe);
		return false;
	}
	if (p->nice < 0) {
		snprintf(err, err_len,
				"a negative nice needs CAP_SYS_NICE, which qosway runs without; as "
				"root, run 'setcap cap_sys_nice=ep %s' and start the session again",
				exe);
		return false;
	}
	/* fifo or rr: the kernel lets a process of the same user have them up
	 * to the target's RLIMIT_RTPRIO (what pam_limits' rtprio gives). With
	 * no process yet, the join decides. */
	long limit = pid > 0 ? rtprio_limit(pid) : LONG_MAX;
	if (limit < 0 || p->priority <= limit) {
		return true; /* gone: the kernel finds out */
	}
	char user[64];
	struct passwd pw, *found = NULL;
	char scratch[1024];
	bool named = getpwuid_r(getuid(), &pw, scratch, sizeof(scratch), &found) == 0 && found;
	snprintf(user, sizeof(user), "%s", named ? found->pw_name : "USER");
	snprintf(err, err_len,
			"%s priority %d needs CAP_SYS_NICE or RLIMIT_RTPRIO >= %d (pid %d has %ld); "
			"fix: 'setcap cap_sys_nice=ep %s' as root, or '%s - rtprio %d' in "
			"/etc/security/limits.d/",
			qos_policy_name(qos_policy_is_rt(p->policy) ? p->policy : p->fallback),
			(int)p->priority, (int)p->priority, (int)pid, limit, exe, user, (int)p->priority);
	return false;
}

static bool params_freeze(const struct qos_params *p) {
	return p->policy == QOS_POLICY_PAUSE || p->fallback == QOS_POLICY_PAUSE;
}

/*
 * Whether the reserve's members may take params, asked by asker (-1: by
 * nobody, a reload): may_change for each, freezing when params pause them
 * (policy or fallback).
 */
static bool members_may_take(struct qw_server *server, struct qos_manager *qos, const char *name,
		const struct qos_params *params, pid_t asker, char *err, size_t len) {
	struct qos_member_info few[64], *members = few;
	ssize_t cap = 64, n = qos_manager_members(qos, name, few, 64);
	if (n > cap) {
		/* Every member is asked about: the protected one may be the last. */
		cap = n;
		members = calloc((size_t)cap, sizeof(*members));
		if (!members) {
			snprintf(err, len, "out of memory");
			return false;
		}
		n = qos_manager_members(qos, name, members, (size_t)cap);
	}
	bool ok = true;
	for (ssize_t i = 0; i < n && i < cap && ok; i++) {
		pid_t pid = members[i].pid;
		ok = may_change(server, pid, asker, params_freeze(params), err, len) &&
				qos_gate_may_raise(params, pid, err, len);
		/* A member that exited since the list was read (a short-lived
		 * child that inherited the reserve, gone before or during the
		 * checks) has nothing left to change. */
		if (!ok && qos_proc_uid(pid) == (uid_t)-1) {
			ok = true;
		}
	}
	if (members != few) {
		free(members);
	}
	return ok;
}

/* The params of a reserve, existing (copied to info) or as qosrc defines
 * it; NULL if neither. */
static const struct qos_params *reserve_params(struct qw_server *server, const char *name,
		struct qos_reserve_info *info) {
	struct qos_manager *qos = qos_link_manager(server);
	const struct qos_rules *rules = qos_link_rules(server);
	if (qos && qos_manager_reserve_info(qos, name, info)) {
		return &info->params;
	}
	const struct qos_reserve_def *def = rules ? qos_rules_find_reserve(rules, name) : NULL;
	return def ? &def->params : NULL;
}

/* The reserve (existing, or as qosrc defines it) can freeze its members. */
static bool reserve_freezes(struct qw_server *server, const char *name) {
	struct qos_reserve_info info;
	const struct qos_params *p = reserve_params(server, name, &info);
	return p && params_freeze(p);
}

/* pid joining the reserve needs no privilege qosway lacks. */
static bool reserve_may_raise(struct qw_server *server, const char *name, pid_t pid, char *err,
		size_t len) {
	struct qos_reserve_info info;
	const struct qos_params *p = reserve_params(server, name, &info);
	return !p || qos_gate_may_raise(p, pid, err, len);
}

/*
 * The automatic reserve of the asking application, for name NULL, in buf;
 * else name.
 */
static const char *reserve_name(const struct qos_gate_asker *asker, const char *name, char *buf,
		size_t len) {
	if (name) {
		return name;
	}
	snprintf(buf, len, QOS_AUTO_PREFIX "%d", (int)asker->pid);
	return buf;
}

/* The user's side of qos_gate_may_define: qosctl reserve. */
static bool user_may_define(struct qw_server *server, const struct qos_gate_asker *asker,
		const char *name, struct qos_params *params, char *err, size_t len) {
	char buf[QOS_NAME_MAX + 1];
	name = reserve_name(asker, name, buf, sizeof(buf));
	if (qos_name_is_auto(name)) {
		snprintf(err, len, "names starting with '" QOS_AUTO_PREFIX "' are automatic reserves");
		return false;
	}
	struct qos_manager *qos = manager_for(server, asker, err, len);
	if (!qos) {
		return false;
	}
	/* Parameters the manager could never honour are refused when defined,
	 * not at the first join: a guarantee beyond the whole reservable
	 * capacity. */
	char why[256];
	if (!qos_params_normalize(params, why, sizeof(why))) {
		snprintf(err, len, "bad parameters: %s", why);
		return false;
	}
	struct qos_manager_info info;
	qos_manager_get_info(qos, &info);
	uint64_t util = qos_params_util_ppm(params);
	if (params->policy == QOS_POLICY_QOS && util > info.capacity_ppm) {
		snprintf(err, len,
				"bad parameters: a guarantee of %.1f%% of a CPU exceeds the "
				"reservable capacity of %.1f%%",
				util / 10000.0, info.capacity_ppm / 10000.0);
		return false;
	}
	if (!qos_gate_may_raise(params, 0, err, len)) {
		return false;
	}
	return members_may_take(server, qos, name, params, asker->pid, err, len);
}

/*
 * What qosrc says about the application pid: the rule that places it (NULL
 * if none) and what it may ask for itself. The app id is the client's own
 * claim, as an exe path is the user's: a rule the user wrote for it is
 * honoured either way.
 */
static const struct qos_rule *app_rule(struct qw_server *server, pid_t pid,
		struct qos_app_limits *limits) {
	return qos_link_match_rule(server, pid, qos_link_app_id_of(server, pid), limits);
}

/*
 * Per-application policy from qosrc (qos_rules_app_limits): by default qos,
 * other and idle, at most 50% of a CPU over all the app's reserves, and no
 * redefining the user's reserves. Unless allow= or max-cpu= say otherwise
 * for the app, the rule that places it also grants its own policy and
 * utilisation. `name` is the reserve asked about, whose own share is not
 * counted as held. *room_ppm (when not NULL) is the qos utilisation it may
 * still have there.
 */
static bool class_allowed(struct qw_server *server, pid_t pid, const char *name,
		const struct qos_params *p, struct qos_app_limits *limits_out, uint64_t *room_ppm,
		char *why, size_t len) {
	struct qos_app_limits limits;
	const struct qos_rule *rule = app_rule(server, pid, &limits);
	struct qos_params granted;
	qos_params_init(&granted);
	if (rule && !(limits.set & (QOS_APP_LIMIT_ALLOW | QOS_APP_LIMIT_MAX_CPU))) {
		const struct qos_reserve_def *def = rule->reserve[0]
				? qos_rules_find_reserve(qos_link_rules(server), rule->reserve)
				: NULL;
		granted = def ? def->params : rule->params;
	}
	if (!(limits.allow & (1u << p->policy)) && granted.policy != p->policy) {
		snprintf(why, len, "policy %s needs a qosrc rule allowing it for this application",
				qos_policy_name(p->policy));
		return false;
	}
	uint64_t max_ppm = limits.max_cpu_ppm;
	if (granted.policy == QOS_POLICY_QOS && qos_params_util_ppm(&granted) > max_ppm) {
		max_ppm = qos_params_util_ppm(&granted);
	}
	uint64_t held = reserve_protocol_held_ppm(server, pid, name);
	if (p->policy == QOS_POLICY_QOS && held + qos_params_util_ppm(p) > max_ppm) {
		snprintf(why, len,
				"%.1f%% of a CPU (%.1f%% held already) is over this "
				"application's limit of %.1f%%",
				qos_params_util_ppm(p) / 10000.0, held / 10000.0, max_ppm / 10000.0);
		return false;
	}
	if (limits_out) {
		*limits_out = limits;
	}
	if (room_ppm) {
		*room_ppm = max_ppm > held ? max_ppm - held : 0;
	}
	return true;
}

/*
 * An adaptive slice may grow up to its upper bound: that bound, not the
 * starting slice, must stay within what the application may hold.
 */
/* room_ppm is not 0 here: class_allowed let the starting slice in. */
static void bound_adaptation(struct qos_params *p, uint64_t room_ppm) {
	struct qos_adapt_params *a = &p->adapt;
	if (p->policy != QOS_POLICY_QOS || !(a->auto_slice || a->continuous)) {
		return;
	}
	if (a->max_ppm == 0 || a->max_ppm > room_ppm) {
		a->max_ppm = room_ppm;
	}
	if (a->min_ppm > a->max_ppm) {
		a->min_ppm = a->max_ppm;
	}
}

/* Whether a process other than pid is in the reserve name. */
static bool others_in(struct qos_manager *qos, const char *name, pid_t pid) {
	struct qos_member_info members[64];
	ssize_t n = qos_manager_members(qos, name, members, sizeof(members) / sizeof(members[0]));
	if (n > (ssize_t)(sizeof(members) / sizeof(members[0]))) {
		return true; /* more than we looked at: assume so */
	}
	for (ssize_t i = 0; i < n; i++) {
		if (members[i].pid != pid) {
			return true;
		}
	}
	return false;
}

/* Would a reserve with these parameters be admitted now? */
static bool admissible(struct qos_manager *qos, const struct qos_params *p, char *err, size_t len) {
	if (p->policy != QOS_POLICY_QOS) {
		return true;
	}
	struct qos_manager_info info;
	qos_manager_get_info(qos, &info);
	uint64_t need = qos_params_util_ppm(p);
	uint64_t free_ppm =
			info.capacity_ppm > info.granted_ppm ? info.capacity_ppm - info.granted_ppm : 0;
	if (need > free_ppm) {
		snprintf(err, len, "needs %.1f%% of a CPU; %.1f%% of the reservable capacity is left",
				need / 10000.0, free_ppm / 10000.0);
		return false;
	}
	return true;
}

/*
 * The application's side of qos_gate_may_define (set_params): the class is
 * allowed to it (class_allowed), and a named reserve is neither the user's
 * (qosrc), another process's automatic one, nor one that holds other
 * processes, whose scheduling it would change. Admission is decided at the
 * first join; until then it is told what it would say.
 */
static bool app_may_define(struct qw_server *server, const struct qos_gate_asker *asker,
		const char *name, struct qos_params *p, enum qos_gate_refusal *why, char *err, size_t len) {
	set_why(why, QOS_GATE_FORBIDDEN);
	struct qos_manager *qos = manager_for(server, asker, err, len);
	if (!qos) {
		return false;
	}
	char buf[QOS_NAME_MAX + 1];
	const char *reserve = reserve_name(asker, name, buf, sizeof(buf));
	struct qos_app_limits limits;
	uint64_t room_ppm;
	if (!not_our_ancestor(asker->pid, err, len) || !qos_params_normalize(p, err, len) ||
			!class_allowed(server, asker->pid, reserve, p, &limits, &room_ppm, err, len) ||
			!qos_gate_may_raise(p, asker->pid, err, len)) {
		return false;
	}
	bound_adaptation(p, room_ppm);
	const struct qos_rules *rules = qos_link_rules(server);
	if (name && !limits.redefine && rules && qos_rules_find_reserve(rules, name)) {
		snprintf(err, len, "reserve '%s' is defined by the user", name);
		return false;
	}
	if (name && qos_name_is_auto(name)) {
		snprintf(err, len, "'%s' is another process's automatic reserve", name);
		return false;
	}
	if (name && others_in(qos, name, asker->pid)) {
		snprintf(err, len,
				"reserve '%s' holds other processes; only a reserve this "
				"process alone is in may be redefined",
				name);
		return false;
	}
	struct qos_reserve_info info;
	bool has_members = qos_manager_reserve_info(qos, reserve, &info) && info.n_members > 0;
	if (!has_members && !admissible(qos, p, err, len)) {
		set_why(why, QOS_GATE_CAPACITY);
		return false;
	}
	return true;
}

bool qos_gate_may_define(struct qw_server *server, const struct qos_gate_asker *asker,
		const char *name, struct qos_params *params, enum qos_gate_refusal *why, char *err,
		size_t err_len) {
	if (asker->who == QOS_GATE_APP) {
		return app_may_define(server, asker, name, params, why, err, err_len);
	}
	set_why(why, QOS_GATE_FORBIDDEN);
	return user_may_define(server, asker, name, params, err, err_len);
}

bool qos_gate_define(struct qw_server *server, const struct qos_gate_asker *asker, const char *name,
		struct qos_params *params, enum qos_gate_refusal *why, char *err, size_t err_len) {
	if (!qos_gate_may_define(server, asker, name, params, why, err, err_len)) {
		return false;
	}
	struct qos_manager *qos = qos_link_manager(server);
	char buf[QOS_NAME_MAX + 1];
	const char *reserve = reserve_name(asker, name, buf, sizeof(buf));
	bool ok = qos_reserve_set(qos, reserve, params, true, true, err, err_len);
	if (!ok) {
		set_why_of_manager(why, qos);
	} else if (asker->who == QOS_GATE_APP) {
		/* The app gets overrun events even where the kernel holds the
		 * reserve's limit itself. */
		qos_manager_watch_overruns(qos, reserve, true);
	}
	qos_link_schedule_refresh(server);
	return ok;
}

/* Whether an application may join reserve name (NULL: its automatic one). */
static bool app_may_join(struct qw_server *server, const struct qos_gate_asker *asker,
		const char *name, char *err, size_t len) {
	if (!name) {
		return true;
	}
	/* Joining takes the reserve's class as it is, so the application must
	 * be allowed that class, as for set_params; and another process's
	 * automatic reserve is its own. */
	if (qos_name_is_auto(name)) {
		snprintf(err, len, "'%s' is another process's automatic reserve", name);
		return false;
	}
	struct qos_reserve_info info;
	const struct qos_rules *rules = qos_link_rules(server);
	const struct qos_reserve_def *def = rules ? qos_rules_find_reserve(rules, name) : NULL;
	if (qos_manager_reserve_info(qos_link_manager(server), name, &info)) {
		return class_allowed(server, asker->pid, name, &info.params, NULL, NULL, err, len);
	}
	if (def) {
		return class_allowed(server, asker->pid, name, &def->params, NULL, NULL, err, len);
	}
	snprintf(err, len, "no such reserve: set_params defines it");
	return false;
}

bool qos_gate_join(struct qw_server *server, const struct qos_gate_asker *asker, const char *name,
		pid_t pid, pid_t tid, const struct qos_params *pending, enum qos_gate_refusal *why,
		char *err, size_t err_len) {
	set_why(why, QOS_GATE_FORBIDDEN);
	struct qos_manager *qos = manager_for(server, asker, err, err_len);
	if (!qos) {
		return false;
	}
	char buf[QOS_NAME_MAX + 1];
	const char *reserve = reserve_name(asker, name, buf, sizeof(buf));
	struct qos_reserve_info info;
	bool ok;
	if (asker->who == QOS_GATE_USER) {
		if (!may_change(server, pid, asker->pid, reserve_freezes(server, reserve), err, err_len) ||
				!reserve_may_raise(server, reserve, pid, err, err_len)) {
			return false;
		}
		ok = qos_manager_join(qos, reserve, pid, tid, err, err_len);
	} else if (!not_our_ancestor(asker->pid, err, err_len) ||
			!app_may_join(server, asker, name, err, err_len) ||
			!reserve_may_raise(server, reserve, pid, err, err_len) ||
			(pending && !qos_gate_may_raise(pending, pid, err, err_len))) {
		return false;
	} else if (!name && !qos_manager_reserve_info(qos, reserve, &info)) {
		/* The automatic reserve is made with the process as its first
		 * member, at the params set_params was allowed. */
		if (tid != 0 || !pending) {
			snprintf(err, err_len, "%s",
					tid != 0 ? "the automatic reserve starts with the whole process (join 0)"
							 : "set_params first");
			return false;
		}
		ok = qos_manager_set_class(qos, pid, pending, err, err_len);
	} else {
		ok = qos_manager_join(qos, reserve, pid, tid, err, err_len);
	}
	if (!ok) {
		set_why_of_manager(why, qos);
	} else if (asker->who == QOS_GATE_APP) {
		qos_manager_watch_overruns(qos, reserve, true); /* as for define */
	} else {
		user_chose(server, asker, pid);
	}
	qos_link_schedule_refresh(server);
	return ok;
}

bool qos_gate_leave(struct qw_server *server, const struct qos_gate_asker *asker, const char *name,
		pid_t pid, pid_t tid) {
	struct qos_manager *qos = qos_link_manager(server);
	if (!qos) {
		return false;
	}
	char buf[QOS_NAME_MAX + 1];
	const char *reserve = reserve_name(asker, name, buf, sizeof(buf));
	const char *in = qos_manager_reserve_of(qos, pid, tid);
	if (!in || strcmp(in, reserve) != 0) {
		return false;
	}
	qos_manager_leave(qos, pid, tid);
	qos_link_schedule_refresh(server);
	return true;
}

bool qos_gate_leave_thread(struct qw_server *server, const struct qos_gate_asker *asker, pid_t pid,
		pid_t tid, char *err, size_t err_len) {
	struct qos_manager *qos = manager_for(server, asker, err, err_len);
	if (!qos || !qos_gate_may_touch(server, pid, err, err_len)) {
		return false;
	}
	const char *in = qos_manager_reserve_of(qos, pid, tid);
	if (!in) {
		snprintf(err, err_len, "thread %d of pid %d is in no reserve", (int)tid, (int)pid);
		return false;
	}
	qos_manager_leave(qos, pid, tid);
	user_chose(server, asker, pid);
	qos_link_schedule_refresh(server);
	return true;
}

bool qos_gate_may_reload(struct qw_server *server, const char *name,
		const struct qos_params *params, char *err, size_t err_len) {
	return qos_link_ready(server, err, err_len) &&
			members_may_take(server, qos_link_manager(server), name, params, -1, err, err_len);
}

/* A qosrc rule that names a real-time reserve for this process, if any:
 * "If the task is listed in the QoS database, the real-time command enables
 * its contract" (thesis 8.5.4), including rules with auto=no. */
static const char *rule_realtime_reserve(struct qw_server *server, pid_t pid, const char *app_id) {
	const struct qos_rule *rule = qos_link_match_rule(server, pid, app_id, NULL);
	if (!rule || !rule->reserve[0]) {
		return NULL;
	}
	const struct qos_reserve_def *def =
			qos_rules_find_reserve(qos_link_rules(server), rule->reserve);
	if (!def || (def->params.policy != QOS_POLICY_QOS && !qos_policy_is_rt(def->params.policy))) {
		return NULL;
	}
	return rule->reserve;
}

/*
 * The standard real-time reserve of a program no qosrc rule covers.  By
 * default it is sized to the program: a slice from its measured use that
 * keeps adapting (cpu=auto adapt=yes), a period that follows its window's
 * refresh (period=vblank), and its capacity given back while it idles
 * (idle-release), so a click costs nothing while the program waits.
 */
static void realtime_params(const struct qw_config *config, struct qos_params *params) {
	params->policy = QOS_POLICY_QOS;
	params->fallback = config->realtime_fallback;
	params->period_vblank = config->realtime_period_us == 0;
	params->period_us = params->period_vblank ? QOS_VBLANK_DEFAULT_US : config->realtime_period_us;
	if (config->realtime_cpu_ppm) {
		params->slice_us = params->period_us * config->realtime_cpu_ppm / 1000000;
	} else {
		params->adapt.auto_slice = true;
		params->adapt.continuous = true;
	}
	/* A paused program could never be seen waking. */
	if (params->fallback != QOS_POLICY_PAUSE) {
		params->idle_periods = config->realtime_idle_release;
	}
}

bool qos_gate_set_class(struct qw_server *server, const struct qos_gate_asker *asker, pid_t pid,
		enum qw_class class, char *err, size_t err_len) {
	struct qos_manager *qos = manager_for(server, asker, err, err_len);
	if (!qos) {
		return false;
	}
	if (pid <= 0) {
		snprintf(err, err_len, "the window's process is unknown");
		return false;
	}
	if (!may_change(server, pid, asker->pid, class == QW_CLASS_PAUSED, err, err_len)) {
		return false;
	}
	struct qos_params params;
	qos_params_init(&params);
	const struct qw_config *config = &server->config;
	bool ok;
	switch (class) {
	case QW_CLASS_NORMAL:
		if (qos_manager_reserve_of(qos, pid, 0)) {
			qos_manager_leave(qos, pid, 0);
		}
		ok = true;
		break;
	case QW_CLASS_REALTIME: {
		const char *reserve = rule_realtime_reserve(server, pid, qos_link_app_id_of(server, pid));
		if (reserve) {
			ok = reserve_may_raise(server, reserve, pid, err, err_len) &&
					qos_manager_join(qos, reserve, pid, 0, err, err_len);
			break;
		}
		realtime_params(config, &params);
		ok = qos_params_normalize(&params, err, err_len) &&
				qos_gate_may_raise(&params, pid, err, err_len) &&
				qos_manager_set_class(qos, pid, &params, err, err_len);
		break;
	}
	case QW_CLASS_FIFO:
		/* No limit given: normalisation applies the safety limit. */
		params.policy = QOS_POLICY_FIFO;
		params.priority = 10;
		ok = qos_params_normalize(&params, err, err_len) &&
				qos_gate_may_raise(&params, pid, err, err_len) &&
				qos_manager_set_class(qos, pid, &params, err, err_len);
		break;
	case QW_CLASS_IDLE:
		params.policy = QOS_POLICY_IDLE;
		ok = qos_manager_set_class(qos, pid, &params, err, err_len);
		break;
	case QW_CLASS_NICE:
		params.nice = 10;
		ok = qos_manager_set_class(qos, pid, &params, err, err_len);
		break;
	case QW_CLASS_PAUSED:
		params.policy = QOS_POLICY_PAUSE;
		ok = qos_manager_set_class(qos, pid, &params, err, err_len);
		break;
	default:
		snprintf(err, err_len, "unknown class");
		ok = false;
		break;
	}
	if (ok) {
		user_chose(server, asker, pid);
	}
	qos_link_schedule_refresh(server);
	return ok;
}
