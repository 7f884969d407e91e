/*
 * qos/kernel/cgroup.h - the manager's cgroup tree.
 *
 * Two layouts are supported:
 *  - pure cgroup v2: one tree; cpu.max, cpu.weight, cpu.idle, cgroup.freeze.
 *  - hybrid: the v1 "cpu" hierarchy carries the CPU controls (cfs quota,
 *    shares, cpu.idle, rt_runtime_us) and the v2 tree at <base>/unified the
 *    core files (cgroup.freeze, cgroup.events, cpu.stat, cgroup.kill).
 * Each reserve is one directory named after it in every tree used, under the
 * manager's own root "qosway-<uid>".  Nothing outside that root is written,
 * except moving a member back into the cgroup it came from.
 *
 * `base` is normally /sys/fs/cgroup; tests point it at a fake tree in a temp
 * directory (then fake_files makes the library create control files itself).
 */
#ifndef QOS_CGROUP_H
#define QOS_CGROUP_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The display server's leaf in our root's cpu tree (server.c): hidden,
 * like the guardian's, from every scan of the root. */
#define QOS_CG_SERVER_LEAF ".server"

/* Sized so that base + group name + file always fits a PATH_MAX buffer. */
#define QOS_CG_PATH 1024
#define QOS_CG_REL_PATH 2048

enum qos_cg_layout {
	QOS_CG_NONE,
	QOS_CG_V2,
	QOS_CG_HYBRID,
};

struct qos_cgroup {
	enum qos_cg_layout layout;
	char v2_base[QOS_CG_PATH - 128]; /* mount point of the v2 tree */
	char v2_root[QOS_CG_PATH]; /* our root in the v2 tree */
	char cpu_base[QOS_CG_PATH - 128]; /* mount point of the cpu controls (v1 cpu or v2) */
	char cpu_root[QOS_CG_PATH]; /* our root there (same as v2_root in pure v2) */
	/* The cgroup our root sits in, relative to the v2 mount: "" for the top,
	 * else a delegated subtree (pure v2 only). */
	char parent[QOS_CG_PATH - 128];
	bool cpu_ctl; /* cpu controls usable in our root */
	bool rt_group; /* v1 cpu.rt_runtime_us is available */
	bool fake_files; /* fake tree: create control files on write */
	/* We moved into a leaf of parent, or enabled cpu there: undone at exit. */
	bool delegated;
	char rt_note[128]; /* why rt group bandwidth is unavailable */
	/* Our root's RT runtime per second: what it holds now (what its
	 * groups may run in a second, qos_cgroup_set_rt) and the most it may
	 * take (setup_root's rt_ppm). */
	uint64_t rt_root_us, rt_max_us;
};

/*
 * Detects the layout under base and fills cg for root name root_name
 * (e.g. "qosway-1000") in parent, a cgroup relative to the v2 mount (pure
 * v2 only; "" for the top).  parent NULL: the top where the manager may
 * write it, else (an unprivileged manager on pure v2) the manager's own
 * cgroup, its delegated subtree.  Does not touch the tree.
 */
bool qos_cgroup_detect(struct qos_cgroup *cg, const char *base, const char *parent,
		const char *root_name, char *err, size_t err_len);

/*
 * Creates our root(s) and enables what our root needs.  Idempotent.  On
 * hybrid, the root may hold up to rt_ppm of a second of real-time runtime,
 * but takes it only as its groups are given theirs (qos_cgroup_set_rt).
 */
bool qos_cgroup_setup_root(struct qos_cgroup *cg, uint64_t rt_ppm, char *err, size_t err_len);

/*
 * Removes the (empty) root directories, the guardian's leaf first once
 * empty; then, where setup_root moved the manager into a leaf of its
 * delegated group or enabled cpu there, gives the group back as it was.
 */
void qos_cgroup_remove_root(struct qos_cgroup *cg);

/*
 * Roots called as ours that a manager now gone left in the groups next to
 * our delegated one, owned by our user (each session start gets a scope of
 * its own, so the next one starts in another): fn gets each one's group,
 * relative to the v2 mount.  Only for a manager in its own delegated group;
 * a root whose guardian, or whose group's processes, still run our
 * program is passed over.  Returns how many, or -1.
 */
int qos_cgroup_for_each_stale_root(const struct qos_cgroup *cg,
		void (*fn)(const char *parent, void *data), void *data);
/* Points cg at the root called as ours in the group parent (pure v2 only). */
bool qos_cgroup_retarget(struct qos_cgroup *cg, const char *parent);

/*
 * Moves the guardian (guardian.c) into a leaf of our root of its own,
 * ".guardian" (hidden: no reserve's name, and passed over by the scans of
 * the root), in the v2 tree: killing the manager's cgroup (a unit stopped,
 * an OOM group kill) must not kill it too, or the groups it is there to
 * thaw would stay frozen.  Returns 0 or -errno; 0 in a fake tree.
 */
int qos_cgroup_attach_guardian(struct qos_cgroup *cg, pid_t pid);

bool qos_cgroup_group_create(struct qos_cgroup *cg, const char *name);
/*
 * Removes a reserve's group from every tree; it must be empty.  Returns 0, or
 * the first failure as -errno (EBUSY while a task that left it is still exiting).
 */
int qos_cgroup_group_remove(struct qos_cgroup *cg, const char *name);
bool qos_cgroup_group_rename(struct qos_cgroup *cg, const char *from, const char *to);
/* Whether a group of that name exists in any tree. */
bool qos_cgroup_group_exists(const struct qos_cgroup *cg, const char *name);
/* Whether the name is taken by a file, not a group, in any tree: a control file. */
bool qos_cgroup_name_is_file(const struct qos_cgroup *cg, const char *name);

/* Absolute path of a file in a reserve's group (tree: v2 core or cpu). */
void qos_cgroup_path(const struct qos_cgroup *cg, bool cpu_tree, const char *name, const char *file,
		char *out, size_t len);

/* CFS bandwidth: quota_us == 0 means unlimited. */
int qos_cgroup_set_quota(struct qos_cgroup *cg, const char *name, uint64_t period_us,
		uint64_t quota_us);
/* Weight equivalent to one task at this nice level. */
int qos_cgroup_set_nice_weight(struct qos_cgroup *cg, const char *name, int nice);
/*
 * A load weight (1024 for one nice-0 task) as the group's cpu.shares (v1)
 * or cpu.weight (v2, 100 for 1024), held to what the kernel takes.
 */
int qos_cgroup_set_weight(struct qos_cgroup *cg, const char *name, long weight);
int qos_cgroup_set_idle(struct qos_cgroup *cg, const char *name, bool idle);
/*
 * The group's cpu.idle kept open, for switches many times a second (an open
 * costs five times the write); -1 where there is none, or in a fake tree.
 */
int qos_cgroup_open_idle(const struct qos_cgroup *cg, const char *name);
int qos_cgroup_set_idle_fd(int fd, bool idle);
/* Our root's own weight against the rest of the system (idle, or a load weight). */
int qos_cgroup_set_root_weight(struct qos_cgroup *cg, bool idle, long weight);
/* Real-time group bandwidth (hybrid only); runtime_us == 0 forbids RT tasks. */
int qos_cgroup_set_rt(struct qos_cgroup *cg, const char *name, uint64_t period_us,
		uint64_t runtime_us);
int qos_cgroup_freeze(struct qos_cgroup *cg, const char *name, bool frozen);
/* "frozen" from cgroup.events: the only trustworthy answer. -1 on error. */
int qos_cgroup_is_frozen(const struct qos_cgroup *cg, const char *name);
/* Cumulative CPU time of the group (cpu.stat usage_usec). */
bool qos_cgroup_usage_us(const struct qos_cgroup *cg, const char *name, uint64_t *out);
/* The same through a cpu.stat kept open (policing reads it up to every 0.5 ms). */
int qos_cgroup_open_stat(const struct qos_cgroup *cg, const char *name);
bool qos_cgroup_usage_fd(int fd, uint64_t *out);

/* Moves a whole process into the group in every tree used. */
int qos_cgroup_attach_process(struct qos_cgroup *cg, const char *name, pid_t pid);
/* Moves one thread (v1 cpu tree only; v2 keeps threads with their process). */
int qos_cgroup_attach_thread(struct qos_cgroup *cg, const char *name, pid_t tid);

/* Where a task is now, relative to each mount ("/user.slice/..."). */
bool qos_cgroup_current(const struct qos_cgroup *cg, pid_t pid, pid_t tid, char *v2, size_t v2_len,
		char *cpu, size_t cpu_len);
/* Moves a task back to the cgroups recorded by qos_cgroup_current(). */
int qos_cgroup_restore(struct qos_cgroup *cg, pid_t pid, pid_t tid, bool whole_process,
		const char *v2, const char *cpu);

/*
 * The same, where a recorded cgroup is gone (a transient scope removed once
 * it emptied) or takes no process: into its nearest ancestor that does.  v2
 * and cpu (writable copies) are cut to where the task went.
 */
int qos_cgroup_restore_near(struct qos_cgroup *cg, pid_t pid, pid_t tid, bool whole_process,
		char *v2, char *cpu);

/* Calls fn for each pid listed in the group's cgroup.procs (v2 tree). */
int qos_cgroup_for_each_pid(const struct qos_cgroup *cg, const char *name, bool threads,
		void (*fn)(pid_t pid, void *data), void *data);
/*
 * The same through the group's cgroup.procs kept open (v2 tree), which the
 * housekeeping pass reads every second for every reserve: a read from offset
 * 0 lists the group anew.  Returns the count, or -1 when the read fails.
 */
int qos_cgroup_open_procs(const struct qos_cgroup *cg, const char *name);
int qos_cgroup_for_each_pid_fd(int fd, void (*fn)(pid_t pid, void *data), void *data);

/* Calls fn with the name of every reserve group under our root. */
int qos_cgroup_for_each_group(const struct qos_cgroup *cg, void (*fn)(const char *name, void *data),
		void *data);

/* Internal: layout-specific writers (cgroup_v1.c, cgroup_v2.c). */
int qos_cgroup_write(const struct qos_cgroup *cg, const char *path, const char *value);
int qos_cgroup_v1_set_quota(struct qos_cgroup *cg, const char *name, uint64_t period_us,
		uint64_t quota_us);
int qos_cgroup_v1_set_nice_weight(struct qos_cgroup *cg, const char *name, int nice);
int qos_cgroup_v1_set_rt(struct qos_cgroup *cg, const char *name, uint64_t period_us,
		uint64_t runtime_us);
int qos_cgroup_v2_set_quota(struct qos_cgroup *cg, const char *name, uint64_t period_us,
		uint64_t quota_us);
int qos_cgroup_v2_set_nice_weight(struct qos_cgroup *cg, const char *name, int nice);
int qos_cgroup_nice_to_weight(int nice);

#endif
