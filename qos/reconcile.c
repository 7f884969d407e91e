/*
 * Start-up reconciliation: whatever a previous instance left under our root
 * is undone.  Frozen groups are thawed first, their tasks return to time
 * sharing and to the cgroup that holds our root (the original placement died
 * with the old instance), and the empty groups are removed.
 *
 * A group can refuse removal for a while (EBUSY until a task that left it has
 * finished exiting), and a deleted reserve can leave tasks we never tracked in
 * its group.  Such groups are counted in stale_groups and released again at
 * every housekeeping pass until they are gone, so nothing stays behind frozen
 * or holding real-time runtime until the next start.
 */
#include <stdio.h>
#include <string.h>

#include "qos/internal.h"
#include "qos/sys.h"

struct rc_ctx {
	struct qos_manager *mgr;
	const char *group;
};

static void reset_thread(pid_t tid, void *data)
{
	(void)data;
	int pol = qos_sys_get_thread_policy(tid, NULL);
	if (pol != 0 && pol >= 0 && qos_sys_release_deadline(tid))
		qos_sys_set_thread_policy(tid, QOS_POLICY_OTHER, 0, 0, 0, 0);
}

static void release_pid(pid_t pid, void *data)
{
	struct rc_ctx *c = data;
	qos_sys_for_each_thread(pid, reset_thread, NULL);
	qos_cgroup_restore(&c->mgr->cg, pid, 0, true, "", "/");
}

static void release_tid(pid_t tid, void *data)
{
	struct rc_ctx *c = data;
	if (qos_sys_release_deadline(tid))
		qos_sys_set_thread_policy(tid, QOS_POLICY_OTHER, 0, 0, 0, 0);
	qos_cgroup_restore(&c->mgr->cg, tid, tid, false, "", "/");
}

/* Thaws a group no reserve owns, sends its tasks back and removes it. */
static int release_group(struct qos_manager *mgr, const char *name)
{
	struct rc_ctx c = { .mgr = mgr, .group = name };
	qos_cgroup_freeze(&mgr->cg, name, false);
	qos_cgroup_for_each_pid(&mgr->cg, name, false, release_pid, &c);
	if (mgr->cg.layout == QOS_CG_HYBRID)
		qos_cgroup_for_each_pid(&mgr->cg, name, true, release_tid, &c);
	return qos_cgroup_group_remove(&mgr->cg, name);
}

void qos_reconcile_failed(struct qos_manager *mgr, const char *reserve, const char *group,
		int err)
{
	mgr->stale_groups++;
	qos_emit(mgr, QOS_EVENT_ERROR, reserve, 0, 0, 0,
		"cannot remove group %s: %s; retried at every pass", group, strerror(-err));
}

static void reconcile_group(const char *name, void *data)
{
	struct qos_manager *mgr = data;
	qos_emit(mgr, QOS_EVENT_ERROR, name, 0, 0, 0,
		"reconciling group left by an earlier instance");
	int err = release_group(mgr, name);
	if (err)
		qos_reconcile_failed(mgr, name, name, err);
}

void qos_reconcile(struct qos_manager *mgr)
{
	/* Root-level thaw too, in case someone froze our whole subtree. */
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/cgroup.freeze", mgr->cg.v2_root);
	qos_sys_write_file(p, "0");
	qos_cgroup_for_each_group(&mgr->cg, reconcile_group, mgr);
}

static void retry_group(const char *name, void *data)
{
	struct qos_manager *mgr = data;
	if (qos_find_reserve_by_group(mgr, name))
		return;
	/* Listed twice on a hybrid layout while both directories remain. */
	if (release_group(mgr, name) != 0)
		mgr->stale_groups++;
}

void qos_reconcile_retry(struct qos_manager *mgr)
{
	if (!mgr->stale_groups)
		return;
	mgr->stale_groups = 0;
	qos_cgroup_for_each_group(&mgr->cg, retry_group, mgr);
}
