/*
 * The QoS manager inside the compositor (server->qos_link): it runs on the
 * compositor's event loop (its one fd), loads the layered qosrc rules,
 * applies AutoQOS and passes the manager's events on (log, IPC, protocol).
 * What anyone asks of it passes its gate (qos_gate.h). Window classes shown
 * on the titlebars are read back from the manager, so they show what it
 * confirmed, whoever asked (button, qosctl, AutoQOS, the app).
 */
#ifndef QOSWAY_QOS_LINK_H
#define QOSWAY_QOS_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "qos/params.h"
#include "qos/rules.h"
#include "server.h"
#include "qos_bridge/qos_class.h"

struct qos_link;
struct qos_manager;
struct qos_reserve_info;

/*
 * Start the manager and set server->qos_link. Without a manager (no cgroup
 * access) the session still runs and every request is refused with the
 * reason (qos_link_error); false only without memory for the link.
 */
bool qos_link_create(struct qw_server *server);
/* Give every process back its own class and cgroup; NULL is fine. */
void qos_link_destroy(struct qos_link *link);

/* The manager, NULL when it is unavailable (also without a link). */
struct qos_manager *qos_link_manager(struct qw_server *server);
/* What the manager says of reserve name; false also without a manager. */
bool qos_link_reserve_info(struct qw_server *server, const char *name,
		struct qos_reserve_info *info);
/* The qosrc rules the manager has loaded (it owns them), or NULL. */
const struct qos_rules *qos_link_rules(struct qw_server *server);
/* Why there is no manager. */
const char *qos_link_error(struct qw_server *server);
/* Whether the manager runs; if not, false and "QoS manager unavailable:
 * <why>" in err. */
bool qos_link_ready(struct qw_server *server, char *err, size_t err_len);

/* Reload the qosrc layers; on total failure the old rules stay. */
bool qos_link_reload(struct qw_server *server, char *err, size_t err_len);

/* Apply AutoQOS rules to a process (app_id may be NULL). */
void qos_link_apply_rules(struct qw_server *server, pid_t pid, const char *app_id);

/* The class the manager has confirmed for pid, and its reserve (or NULL). */
enum qw_class qos_link_class_of(struct qw_server *server, pid_t pid, const char **reserve);

/* pid's reserve gave its capacity back while idle, and admission refused it
 * back when pid ran again: no guarantee, its threads at the fallback. */
bool qos_link_held_back(struct qw_server *server, pid_t pid);

/* The reserve pid is a member of, or NULL (also without a manager). */
const char *qos_link_reserve_of(struct qw_server *server, pid_t pid);

/* Re-read every window's class from the manager (coalesced to one pass). */
void qos_link_schedule_refresh(struct qw_server *server);

/* The app id of pid's first window that has one, or NULL: what app_id= rules
 * match on. */
const char *qos_link_app_id_of(struct qw_server *server, pid_t pid);

/*
 * The qosrc rule that places pid (matched on its executable, its arguments
 * and app_id, which may be NULL), or NULL; with limits, also what the rules
 * let that application ask for itself.
 */
const struct qos_rule *qos_link_match_rule(struct qw_server *server, pid_t pid, const char *app_id,
		struct qos_app_limits *limits);

#endif
