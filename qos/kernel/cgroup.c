#include "qos/kernel/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qos/params.h"
#include "qos/kernel/sys.h"

/* The leaf of its delegated group a manager moves into (delegate_cpu). */
#define MANAGER_LEAF "manager"

static bool exists(const char *dir, const char *file) {
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	return access(p, F_OK) == 0;
}

static bool has_word(const char *list, const char *word) {
	size_t n = strlen(word);
	for (const char *p = list; (p = strstr(p, word)); p += n) {
		bool start = p == list || p[-1] == ' ' || p[-1] == ',';
		bool end = p[n] == '\0' || p[n] == ' ' || p[n] == '\n' || p[n] == ',';
		if (start && end) {
			return true;
		}
	}
	return false;
}

/* The manager's own cgroup in the v2 tree ("0::PATH" in /proc/self/cgroup). */
static bool own_v2_cgroup(char *out, size_t len) {
	char buf[4096];
	if (qos_sys_read_file("/proc/self/cgroup", buf, sizeof(buf)) < 0) {
		return false;
	}
	for (char *line = buf; line && *line; line = strchr(line, '\n')) {
		if (*line == '\n') {
			line++;
		}
		if (strncmp(line, "0::", 3) == 0) {
			size_t n = strcspn(line + 3, "\n");
			snprintf(out, len, "%.*s", (int)n, line + 3);
			return n < len && strcmp(out, "/") != 0;
		}
	}
	return false;
}

/* An absolute path with no empty, "." or ".." component: it may not leave the tree. */
static bool valid_parent(const char *parent) {
	if (parent[0] != '/') {
		return false;
	}
	for (const char *c = parent; *c;) {
		const char *next = strchr(c + 1, '/');
		size_t part = next ? (size_t)(next - c - 1) : strlen(c + 1);
		if ((part == 0 && (next || c != parent)) || (part == 1 && c[1] == '.') ||
				(part == 2 && c[1] == '.' && c[2] == '.')) {
			return false;
		}
		if (!next) {
			break;
		}
		c = next;
	}
	return true;
}

bool qos_cgroup_detect(struct qos_cgroup *cg, const char *base, const char *parent,
		const char *root_name, char *err, size_t err_len) {
	memset(cg, 0, sizeof(*cg));
	if (parent && (!valid_parent(parent) || strlen(parent) >= sizeof(cg->parent))) {
		snprintf(err, err_len,
				"bad cgroup parent '%.200s': an absolute cgroup path "
				"with no '.' or '..' part",
				parent);
		return false;
	}
	char buf[512];
	if (exists(base, "cgroup.controllers")) {
		cg->layout = QOS_CG_V2;
		snprintf(cg->v2_base, sizeof(cg->v2_base), "%s", base);
		snprintf(cg->cpu_base, sizeof(cg->cpu_base), "%s", base);
		if (parent) {
			snprintf(cg->parent, sizeof(cg->parent), "%s", parent);
		} else if (access(base, W_OK) != 0 && !own_v2_cgroup(cg->parent, sizeof(cg->parent))) {
			cg->parent[0] = '\0';
		}
		if (!strcmp(cg->parent, "/")) {
			cg->parent[0] = '\0';
		}
		/*
		 * Our root only gets cpu files if its parent delegates the controller,
		 * or (a delegated subtree) may: setup_root enables it there.
		 */
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s%s/cgroup.subtree_control", base, cg->parent);
		cg->cpu_ctl = qos_sys_read_file(p, buf, sizeof(buf)) >= 0 && has_word(buf, "cpu");
		snprintf(p, sizeof(p), "%s%s/cgroup.controllers", base, cg->parent);
		if (!cg->cpu_ctl && cg->parent[0]) {
			cg->cpu_ctl = qos_sys_read_file(p, buf, sizeof(buf)) >= 0 && has_word(buf, "cpu");
		}
		snprintf(cg->rt_note, sizeof(cg->rt_note), "cgroup v2 has no real-time group bandwidth");
	} else if (exists(base, "unified/cgroup.procs") && exists(base, "cpu/cpu.shares")) {
		cg->layout = QOS_CG_HYBRID;
		snprintf(cg->v2_base, sizeof(cg->v2_base), "%s/unified", base);
		snprintf(cg->cpu_base, sizeof(cg->cpu_base), "%s/cpu", base);
		cg->cpu_ctl = true;
		cg->rt_group = exists(cg->cpu_base, "cpu.rt_runtime_us");
		if (!cg->rt_group) {
			snprintf(cg->rt_note, sizeof(cg->rt_note),
					"kernel built without CONFIG_RT_GROUP_SCHED");
		}
	} else {
		snprintf(err, err_len,
				"no usable cgroup layout under %s (need cgroup v2, or v1 "
				"cpu with cgroup2 at %s/unified)",
				base, base);
		return false;
	}
	/*
	 * The root is where reconciliation empties and removes every group it
	 * finds: "." or ".." would make that the parent's own, or its parent's.
	 */
	char why[128];
	if (!qos_name_valid(root_name, why, sizeof(why))) {
		snprintf(err, err_len, "bad cgroup root name (the rules of reserve names apply): %s", why);
		return false;
	}
	int n = snprintf(cg->v2_root, sizeof(cg->v2_root), "%s%s/%.63s", cg->v2_base, cg->parent,
			root_name);
	int m = snprintf(cg->cpu_root, sizeof(cg->cpu_root), "%s%s/%.63s", cg->cpu_base, cg->parent,
			root_name);
	if (n < 0 || (size_t)n >= sizeof(cg->v2_root) || m < 0 || (size_t)m >= sizeof(cg->cpu_root)) {
		snprintf(err, err_len, "cgroup path too long under %s", cg->parent);
		return false;
	}
	return true;
}

int qos_cgroup_write(const struct qos_cgroup *cg, const char *path, const char *value) {
	if (!cg->fake_files) {
		return qos_sys_write_file(path, value);
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		return -errno;
	}
	ssize_t n = write(fd, value, strlen(value));
	close(fd);
	return n < 0 ? -EIO : 0;
}

static void clear_fake(const char *dir);
static void release_root_rt(struct qos_cgroup *cg);

/* A directory at path, made or found; a control file of that name is not one. */
static bool make_dir(const char *path) {
	struct stat st;
	if (mkdir(path, 0755) == 0) {
		return true;
	}
	if (errno != EEXIST) {
		return false;
	}
	if (stat(path, &st) == 0 && !S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return false;
	}
	return true;
}

/*
 * An unprivileged manager's root sits in its delegated cgroup, which holds
 * the manager itself.  cgroup v2 lets a group with processes of its own
 * enable no controller for its children, so the manager first moves into a
 * leaf of it ("manager"), then enables cpu there.  Whatever else still runs
 * in the group keeps cpu off (cpu_ctl false), which the manager reports.
 */
static void delegate_cpu(struct qos_cgroup *cg) {
	char dir[PATH_MAX], p[PATH_MAX + 64], buf[512], own[QOS_CG_PATH];
	snprintf(dir, sizeof(dir), "%s%s", cg->v2_base, cg->parent);
	snprintf(p, sizeof(p), "%s/cgroup.subtree_control", dir);
	if (qos_sys_read_file(p, buf, sizeof(buf)) >= 0 && has_word(buf, "cpu")) {
		return;
	}
	if (own_v2_cgroup(own, sizeof(own)) && strcmp(own, cg->parent) == 0) {
		char leaf[PATH_MAX + 16], v[32];
		snprintf(leaf, sizeof(leaf), "%s/" MANAGER_LEAF, dir);
		snprintf(v, sizeof(v), "%d", (int)getpid());
		snprintf(p, sizeof(p), "%s/cgroup.procs", leaf);
		if (!make_dir(leaf) || qos_cgroup_write(cg, p, v) < 0) {
			return;
		}
		cg->delegated = true;
	}
	snprintf(p, sizeof(p), "%s/cgroup.subtree_control", dir);
	cg->cpu_ctl = qos_cgroup_write(cg, p, "+cpu") == 0;
	cg->delegated = cg->delegated || cg->cpu_ctl;
}

/*
 * Root on pure v2 manages the top of the tree: where the kernel has a cpu
 * controller nobody enabled there (no systemd), it is enabled (the top may
 * hold processes and pass controllers on), as systemd does at boot; left
 * on at exit, since other groups may use it by then.
 */
static void enable_top_cpu(struct qos_cgroup *cg) {
	char p[PATH_MAX], buf[512];
	snprintf(p, sizeof(p), "%s/cgroup.controllers", cg->v2_base);
	if (qos_sys_read_file(p, buf, sizeof(buf)) < 0 || !has_word(buf, "cpu")) {
		return;
	}
	snprintf(p, sizeof(p), "%s/cgroup.subtree_control", cg->v2_base);
	cg->cpu_ctl = qos_cgroup_write(cg, p, "+cpu") == 0;
}

bool qos_cgroup_setup_root(struct qos_cgroup *cg, uint64_t rt_ppm, char *err, size_t err_len) {
	if (cg->layout == QOS_CG_V2 && cg->parent[0] && cg->cpu_ctl) {
		delegate_cpu(cg);
	} else if (cg->layout == QOS_CG_V2 && !cg->parent[0] && !cg->cpu_ctl) {
		enable_top_cpu(cg);
	}
	if (!make_dir(cg->v2_root) || (cg->layout == QOS_CG_HYBRID && !make_dir(cg->cpu_root))) {
		snprintf(err, err_len, "cannot create the manager's cgroup root: %s", strerror(errno));
		return false;
	}
	char p[PATH_MAX];
	if (cg->layout == QOS_CG_V2 && cg->cpu_ctl) {
		snprintf(p, sizeof(p), "%s/cgroup.subtree_control", cg->v2_root);
		if (qos_cgroup_write(cg, p, "+cpu") < 0) {
			cg->cpu_ctl = false;
		}
	}
	if (cg->layout == QOS_CG_HYBRID && cg->rt_group) {
		/*
		 * Reserve groups carve their RT bandwidth out of our root's share,
		 * which starts empty: other managers on the machine (a second
		 * session, tests side by side) take theirs from the same global
		 * limit, so each holds only what its groups were given.
		 */
		snprintf(p, sizeof(p), "%s/cpu.rt_runtime_us", cg->cpu_root);
		int r = qos_cgroup_write(cg, p, "0");
		if (r == 0) {
			snprintf(p, sizeof(p), "%s/cpu.rt_period_us", cg->cpu_root);
			r = qos_cgroup_write(cg, p, "1000000");
		}
		if (r < 0) {
			snprintf(cg->rt_note, sizeof(cg->rt_note),
					"cannot give the qosway root RT bandwidth: %s", strerror(-r));
			cg->rt_group = false;
		}
		cg->rt_root_us = 0;
		cg->rt_max_us = rt_ppm;
	}
	return true;
}

/*
 * A removed cpu group can stay "dying" for a while (until the last task that
 * was in it is freed), and the kernel keeps counting its real-time runtime
 * against its parent meanwhile.  Give the runtime back before removal.
 */
static void drop_rt_runtime(struct qos_cgroup *cg, const char *dir) {
	char p[PATH_MAX];
	if (cg->layout != QOS_CG_HYBRID || !cg->rt_group) {
		return;
	}
	snprintf(p, sizeof(p), "%s/cpu.rt_runtime_us", dir);
	qos_cgroup_write(cg, p, "0");
}

#define GUARDIAN_LEAF ".guardian"

int qos_cgroup_attach_guardian(struct qos_cgroup *cg, pid_t pid) {
	if (cg->fake_files) {
		return 0;
	}
	char dir[PATH_MAX], procs[PATH_MAX + 16], v[32];
	snprintf(dir, sizeof(dir), "%s/" GUARDIAN_LEAF, cg->v2_root);
	if (!make_dir(dir)) {
		return -errno;
	}
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
	snprintf(v, sizeof(v), "%d", (int)pid);
	return qos_cgroup_write(cg, procs, v);
}

static void remove_guardian(struct qos_cgroup *cg) {
	if (cg->fake_files) {
		return;
	}
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/" GUARDIAN_LEAF, cg->v2_root);
	/* A guardian just reaped can take a moment to leave the group. */
	for (int i = 0; i < 20 && rmdir(dir) < 0 && errno == EBUSY; i++) {
		usleep(5000);
	}
}

/* Every process of cgroup from moved to cgroup to (a few passes: they may fork). */
static void move_all(struct qos_cgroup *cg, const char *from, const char *to) {
	char p[PATH_MAX + 16], q[PATH_MAX + 16], buf[4096], last[4096] = "";
	snprintf(p, sizeof(p), "%s/cgroup.procs", from);
	snprintf(q, sizeof(q), "%s/cgroup.procs", to);
	for (int pass = 0; pass < 10; pass++) {
		ssize_t n = qos_sys_read_file(p, buf, sizeof(buf));
		/* A fake tree's list never empties: the same list twice ends it. */
		if (n <= 0 || strcmp(buf, last) == 0) {
			return;
		}
		snprintf(last, sizeof(last), "%s", buf);
		for (char *save, *pid = strtok_r(buf, "\n", &save); pid;
				pid = strtok_r(NULL, "\n", &save)) {
			qos_cgroup_write(cg, q, pid);
		}
	}
}

/*
 * What delegate_cpu did in the group dir, undone once our root there is
 * gone: cpu no longer passed on, everything in the "manager" leaf (the
 * manager, what it started) back in dir, the leaf removed.  A group that
 * passes a controller on can hold no process, so as it was left the next
 * manager started in that group could not even enter it.  Left as it is
 * while anything below still enables cpu itself (our root not removed).
 */
static void undo_delegation(struct qos_cgroup *cg, const char *dir) {
	char p[PATH_MAX + 32], leaf[PATH_MAX + 16];
	snprintf(p, sizeof(p), "%s/cgroup.subtree_control", dir);
	if (qos_cgroup_write(cg, p, "-cpu") < 0) {
		return;
	}
	snprintf(leaf, sizeof(leaf), "%s/" MANAGER_LEAF, dir);
	move_all(cg, leaf, dir);
	if (cg->fake_files) {
		clear_fake(leaf);
	}
	rmdir(leaf);
}

void qos_cgroup_remove_root(struct qos_cgroup *cg) {
	/* Also left behind, empty, by a guardian that died and was not replaced,
	 * and by a server that did not leave its leaf. */
	remove_guardian(cg);
	char leaf[PATH_MAX];
	snprintf(leaf, sizeof(leaf), "%s/" QOS_CG_SERVER_LEAF, cg->cpu_root);
	if (!cg->fake_files) {
		rmdir(leaf);
	}
	if (cg->fake_files) {
		clear_fake(cg->v2_root);
	}
	rmdir(cg->v2_root);
	if (cg->delegated) {
		char dir[PATH_MAX];
		snprintf(dir, sizeof(dir), "%s%s", cg->v2_base, cg->parent);
		undo_delegation(cg, dir);
		cg->delegated = false;
	}
	if (cg->layout == QOS_CG_HYBRID) {
		drop_rt_runtime(cg, cg->cpu_root);
		if (cg->fake_files) {
			clear_fake(cg->cpu_root);
		}
		rmdir(cg->cpu_root);
	}
}

/* Whether the group dir holds a process running the program we run (a live manager). */
static bool runs_us(const char *dir) {
	char p[PATH_MAX + 16], buf[4096], self[PATH_MAX], exe[PATH_MAX], link[64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0) {
		return true; /* cannot tell: it may be alive */
	}
	self[n] = '\0';
	snprintf(p, sizeof(p), "%s/cgroup.procs", dir);
	if (qos_sys_read_file(p, buf, sizeof(buf)) <= 0) {
		return false;
	}
	for (char *save, *pid = strtok_r(buf, "\n", &save); pid; pid = strtok_r(NULL, "\n", &save)) {
		snprintf(link, sizeof(link), "/proc/%s/exe", pid);
		ssize_t m = readlink(link, exe, sizeof(exe) - 1);
		if (m > 0) {
			exe[m] = '\0';
			if (strcmp(exe, self) == 0) {
				return true;
			}
		}
	}
	return false;
}

static bool has_procs(const char *dir) {
	char p[PATH_MAX + 16], buf[64];
	snprintf(p, sizeof(p), "%s/cgroup.procs", dir);
	return qos_sys_read_file(p, buf, sizeof(buf)) > 0 && buf[0] >= '0' && buf[0] <= '9';
}

/* Whether the root called as ours in the group dir was left by a manager now gone. */
static bool stale_root_in(const char *dir, const char *root_name) {
	char root[PATH_MAX + 64], p[PATH_MAX + 96];
	struct stat st;
	if (stat(dir, &st) != 0 || st.st_uid != getuid()) {
		return false;
	}
	snprintf(root, sizeof(root), "%s/%s", dir, root_name);
	if (stat(root, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid()) {
		return false;
	}
	snprintf(p, sizeof(p), "%s/" GUARDIAN_LEAF, root);
	if (has_procs(p) || runs_us(dir)) {
		return false;
	}
	snprintf(p, sizeof(p), "%s/" MANAGER_LEAF, dir);
	return !runs_us(p);
}

int qos_cgroup_for_each_stale_root(const struct qos_cgroup *cg,
		void (*fn)(const char *parent, void *data), void *data) {
	char own[QOS_CG_PATH];
	if (cg->layout != QOS_CG_V2 || !cg->parent[0] || !own_v2_cgroup(own, sizeof(own)) ||
			strcmp(own, cg->parent) != 0) {
		return 0;
	}
	const char *root_name = strrchr(cg->v2_root, '/') + 1;
	char up[QOS_CG_PATH];
	snprintf(up, sizeof(up), "%s", cg->parent);
	char *ours = strrchr(up, '/');
	*ours++ = '\0';
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s%s", cg->v2_base, up);
	DIR *d = opendir(dir);
	if (!d) {
		return -1;
	}
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		char parent[QOS_CG_PATH + NAME_MAX + 2], sibling[PATH_MAX + NAME_MAX + 2];
		if (e->d_type != DT_DIR || e->d_name[0] == '.' || strcmp(e->d_name, ours) == 0) {
			continue;
		}
		snprintf(parent, sizeof(parent), "%s/%s", up, e->d_name);
		snprintf(sibling, sizeof(sibling), "%s/%s", dir, e->d_name);
		if (strlen(parent) < sizeof(cg->parent) && stale_root_in(sibling, root_name)) {
			fn(parent, data);
			n++;
		}
	}
	closedir(d);
	return n;
}

bool qos_cgroup_retarget(struct qos_cgroup *cg, const char *parent) {
	const char *root_name = strrchr(cg->v2_root, '/') + 1;
	char root[QOS_CG_PATH], p[PATH_MAX];
	int n = snprintf(root, sizeof(root), "%s%s/%s", cg->v2_base, parent, root_name);
	if (cg->layout != QOS_CG_V2 || n < 0 || (size_t)n >= sizeof(root) ||
			strlen(parent) >= sizeof(cg->parent)) {
		return false;
	}
	snprintf(cg->parent, sizeof(cg->parent), "%s", parent);
	snprintf(cg->v2_root, sizeof(cg->v2_root), "%s", root);
	snprintf(cg->cpu_root, sizeof(cg->cpu_root), "%s", root);
	snprintf(p, sizeof(p), "%s%s/" MANAGER_LEAF, cg->v2_base, parent);
	cg->delegated = access(p, F_OK) == 0;
	return true;
}

void qos_cgroup_path(const struct qos_cgroup *cg, bool cpu_tree, const char *name, const char *file,
		char *out, size_t len) {
	snprintf(out, len, "%s/%s/%s", cpu_tree ? cg->cpu_root : cg->v2_root, name, file);
}

bool qos_cgroup_group_create(struct qos_cgroup *cg, const char *name) {
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/%s", cg->v2_root, name);
	if (!make_dir(p)) {
		return false;
	}
	if (cg->layout == QOS_CG_HYBRID) {
		snprintf(p, sizeof(p), "%s/%s", cg->cpu_root, name);
		if (!make_dir(p)) {
			snprintf(p, sizeof(p), "%s/%s", cg->v2_root, name);
			rmdir(p);
			return false;
		}
	}
	return true;
}

/* In a fake tree the control files we created keep the directory non-empty. */
static void clear_fake(const char *dir) {
	DIR *d = opendir(dir);
	if (!d) {
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_type == DT_REG) {
			unlinkat(dirfd(d), e->d_name, 0);
		}
	}
	closedir(d);
}

int qos_cgroup_group_remove(struct qos_cgroup *cg, const char *name) {
	char p[PATH_MAX];
	/*
	 * The cpu group first: on hybrid it can hold tasks the v2 group does
	 * not (a thread member's children), and while it does, the v2
	 * directory keeps the records (journal.h) that lead them home.
	 */
	if (cg->layout == QOS_CG_HYBRID) {
		snprintf(p, sizeof(p), "%s/%s", cg->cpu_root, name);
		drop_rt_runtime(cg, p);
		if (cg->fake_files) {
			clear_fake(p);
		}
		if (rmdir(p) != 0 && errno != ENOENT) {
			return -errno;
		}
		if (cg->rt_group) {
			release_root_rt(cg);
		}
	}
	snprintf(p, sizeof(p), "%s/%s", cg->v2_root, name);
	if (cg->fake_files) {
		clear_fake(p);
	}
	if (rmdir(p) != 0 && errno != ENOENT) {
		return -errno;
	}
	return 0;
}

bool qos_cgroup_name_is_file(const struct qos_cgroup *cg, const char *name) {
	char p[PATH_MAX];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", cg->v2_root, name);
	if (stat(p, &st) == 0 && !S_ISDIR(st.st_mode)) {
		return true;
	}
	if (cg->layout != QOS_CG_HYBRID) {
		return false;
	}
	snprintf(p, sizeof(p), "%s/%s", cg->cpu_root, name);
	return stat(p, &st) == 0 && !S_ISDIR(st.st_mode);
}

bool qos_cgroup_group_exists(const struct qos_cgroup *cg, const char *name) {
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/%s", cg->v2_root, name);
	if (access(p, F_OK) == 0) {
		return true;
	}
	if (cg->layout != QOS_CG_HYBRID) {
		return false;
	}
	snprintf(p, sizeof(p), "%s/%s", cg->cpu_root, name);
	return access(p, F_OK) == 0;
}

bool qos_cgroup_group_rename(struct qos_cgroup *cg, const char *from, const char *to) {
	char a[PATH_MAX], b[PATH_MAX];
	snprintf(a, sizeof(a), "%s/%s", cg->v2_root, from);
	snprintf(b, sizeof(b), "%s/%s", cg->v2_root, to);
	if (rename(a, b) != 0) {
		return false;
	}
	if (cg->layout == QOS_CG_HYBRID) {
		snprintf(a, sizeof(a), "%s/%s", cg->cpu_root, from);
		snprintf(b, sizeof(b), "%s/%s", cg->cpu_root, to);
		if (rename(a, b) != 0) {
			return false;
		}
	}
	return true;
}

int qos_cgroup_set_quota(struct qos_cgroup *cg, const char *name, uint64_t period_us,
		uint64_t quota_us) {
	if (!cg->cpu_ctl) {
		return -ENOTSUP;
	}
	if (cg->layout == QOS_CG_HYBRID) {
		return qos_cgroup_v1_set_quota(cg, name, period_us, quota_us);
	}
	return qos_cgroup_v2_set_quota(cg, name, period_us, quota_us);
}

int qos_cgroup_set_nice_weight(struct qos_cgroup *cg, const char *name, int nice) {
	if (!cg->cpu_ctl) {
		return -ENOTSUP;
	}
	if (cg->layout == QOS_CG_HYBRID) {
		return qos_cgroup_v1_set_nice_weight(cg, name, nice);
	}
	return qos_cgroup_v2_set_nice_weight(cg, name, nice);
}

int qos_cgroup_set_weight(struct qos_cgroup *cg, const char *name, long weight) {
	if (!cg->cpu_ctl) {
		return -ENOTSUP;
	}
	char p[PATH_MAX], v[32];
	if (cg->layout == QOS_CG_HYBRID) {
		weight = weight < 2 ? 2 : weight > 262144 ? 262144 : weight;
		qos_cgroup_path(cg, true, name, "cpu.shares", p, sizeof(p));
	} else {
		weight = (weight * 100 + 512) / 1024;
		weight = weight < 1 ? 1 : weight > 10000 ? 10000 : weight;
		qos_cgroup_path(cg, true, name, "cpu.weight", p, sizeof(p));
	}
	snprintf(v, sizeof(v), "%ld", weight);
	return qos_cgroup_write(cg, p, v);
}

int qos_cgroup_set_idle(struct qos_cgroup *cg, const char *name, bool idle) {
	if (!cg->cpu_ctl) {
		return -ENOTSUP;
	}
	char p[PATH_MAX];
	qos_cgroup_path(cg, true, name, "cpu.idle", p, sizeof(p));
	return qos_cgroup_write(cg, p, idle ? "1" : "0");
}

int qos_cgroup_open_idle(const struct qos_cgroup *cg, const char *name) {
	if (!cg->cpu_ctl || cg->fake_files) {
		return -1;
	}
	char p[PATH_MAX];
	qos_cgroup_path(cg, true, name, "cpu.idle", p, sizeof(p));
	return open(p, O_WRONLY | O_CLOEXEC);
}

int qos_cgroup_set_idle_fd(int fd, bool idle) {
	return pwrite(fd, idle ? "1" : "0", 1, 0) == 1 ? 0 : -errno;
}

int qos_cgroup_set_root_weight(struct qos_cgroup *cg, bool idle, long weight) {
	char p[PATH_MAX], v[32];
	snprintf(p, sizeof(p), "%s/cpu.idle", cg->cpu_root);
	if (idle) {
		return qos_cgroup_write(cg, p, "1");
	}
	int r = qos_cgroup_write(cg, p, "0");
	if (cg->layout == QOS_CG_HYBRID) {
		if (weight < 2) {
			weight = 2;
		}
		if (weight > 262144) {
			weight = 262144;
		}
		snprintf(p, sizeof(p), "%s/cpu.shares", cg->cpu_root);
	} else {
		weight = (weight * 100 + 512) / 1024;
		if (weight < 1) {
			weight = 1;
		}
		if (weight > 10000) {
			weight = 10000;
		}
		snprintf(p, sizeof(p), "%s/cpu.weight", cg->cpu_root);
	}
	snprintf(v, sizeof(v), "%ld", weight);
	int r2 = qos_cgroup_write(cg, p, v);
	return r ? r : r2;
}

static uint64_t read_u64(const char *dir, const char *file) {
	char p[PATH_MAX], buf[32];
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	if (qos_sys_read_file(p, buf, sizeof(buf)) < 0) {
		return 0;
	}
	return strtoull(buf, NULL, 10);
}

/* Runtime per second, rounded up, as the kernel compares group shares. */
static uint64_t rt_share_us(uint64_t period_us, uint64_t runtime_us) {
	if (!period_us) {
		return 0;
	}
	return (runtime_us * 1000000 + period_us - 1) / period_us;
}

/* What our root's groups hold: their shares and what one period may burst. */
struct rt_need {
	uint64_t exact; /* the shares, with 1 us per group for the kernel's rounding */
	uint64_t burst; /* the shares plus one period's runtime of each */
	unsigned groups;
};

static void add_group(struct rt_need *n, uint64_t period_us, uint64_t runtime_us) {
	uint64_t share = rt_share_us(period_us, runtime_us);
	n->exact += share + 1;
	n->burst += share + runtime_us;
	n->groups++;
}

/* The needs of our root's groups, with group `name` at the given values
 * (name NULL: every group as it is). */
static struct rt_need root_rt_need(const struct qos_cgroup *cg, const char *name,
		uint64_t period_us, uint64_t runtime_us) {
	struct rt_need n = { 0 };
	if (name && runtime_us) {
		add_group(&n, period_us, runtime_us);
	}
	DIR *d = opendir(cg->cpu_root);
	if (!d) {
		return n;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_type != DT_DIR || e->d_name[0] == '.' || (name && !strcmp(e->d_name, name))) {
			continue;
		}
		char dir[PATH_MAX];
		snprintf(dir, sizeof(dir), "%s/%s", cg->cpu_root, e->d_name);
		uint64_t runtime = read_u64(dir, "cpu.rt_runtime_us");
		if (runtime) {
			add_group(&n, read_u64(dir, "cpu.rt_period_us"), runtime);
		}
	}
	closedir(d);
	return n;
}

static int set_root_rt(struct qos_cgroup *cg, uint64_t runtime_us) {
	char p[PATH_MAX], v[32];
	snprintf(p, sizeof(p), "%s/cpu.rt_runtime_us", cg->cpu_root);
	snprintf(v, sizeof(v), "%llu", (unsigned long long)runtime_us);
	int r = qos_cgroup_write(cg, p, v);
	if (r == 0) {
		cg->rt_root_us = runtime_us;
	}
	return r;
}

/* Once no group holds real-time runtime, neither does the root. */
static void release_root_rt(struct qos_cgroup *cg) {
	if (cg->rt_root_us && root_rt_need(cg, NULL, 0, 0).groups == 0) {
		set_root_rt(cg, 0);
	}
}

int qos_cgroup_set_rt(struct qos_cgroup *cg, const char *name, uint64_t period_us,
		uint64_t runtime_us) {
	if (cg->layout != QOS_CG_HYBRID || !cg->rt_group) {
		return -ENOTSUP;
	}
	/*
	 * The kernel charges a group's real-time time to the root too, over the
	 * root's own one-second window: the root grows (before the group takes
	 * its share) to what its groups may run in any such window, up to the
	 * manager's limit.  It does not shrink while a group holds runtime,
	 * since time run earlier in the window would then throttle the rest;
	 * it gives all back once none does.  Shares that fill the limit within
	 * the rounding slack are left to the kernel to judge.
	 */
	struct rt_need n = root_rt_need(cg, name, period_us, runtime_us);
	if (n.exact - n.groups > cg->rt_max_us) {
		return -ENOSPC;
	}
	uint64_t want = n.burst < cg->rt_max_us ? n.burst : cg->rt_max_us;
	if (want > cg->rt_root_us) {
		int r = set_root_rt(cg, want);
		if (r < 0) {
			return r;
		}
	}
	int r = qos_cgroup_v1_set_rt(cg, name, period_us, runtime_us);
	release_root_rt(cg);
	return r;
}

int qos_cgroup_freeze(struct qos_cgroup *cg, const char *name, bool frozen) {
	char p[PATH_MAX];
	qos_cgroup_path(cg, false, name, "cgroup.freeze", p, sizeof(p));
	return qos_cgroup_write(cg, p, frozen ? "1" : "0");
}

static bool read_key(const char *path, const char *key, uint64_t *out) {
	char buf[1024];
	if (qos_sys_read_file(path, buf, sizeof(buf)) < 0) {
		return false;
	}
	size_t n = strlen(key);
	for (char *line = buf; line && *line; line = strchr(line, '\n')) {
		if (*line == '\n') {
			line++;
		}
		if (strncmp(line, key, n) == 0 && line[n] == ' ') {
			*out = strtoull(line + n + 1, NULL, 10);
			return true;
		}
	}
	return false;
}

int qos_cgroup_is_frozen(const struct qos_cgroup *cg, const char *name) {
	char p[PATH_MAX];
	uint64_t v;
	qos_cgroup_path(cg, false, name, "cgroup.events", p, sizeof(p));
	return read_key(p, "frozen", &v) ? (int)v : -1;
}

bool qos_cgroup_usage_us(const struct qos_cgroup *cg, const char *name, uint64_t *out) {
	char p[PATH_MAX];
	qos_cgroup_path(cg, false, name, "cpu.stat", p, sizeof(p));
	return read_key(p, "usage_usec", out);
}

int qos_cgroup_open_stat(const struct qos_cgroup *cg, const char *name) {
	char p[PATH_MAX];
	qos_cgroup_path(cg, false, name, "cpu.stat", p, sizeof(p));
	return open(p, O_RDONLY | O_CLOEXEC);
}

bool qos_cgroup_usage_fd(int fd, uint64_t *out) {
	char buf[512];
	/* cgroup files regenerate their contents when read from offset 0. */
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0) {
		return false;
	}
	buf[n] = '\0';
	if (strncmp(buf, "usage_usec ", 11) != 0) {
		char *line = strstr(buf, "\nusage_usec ");
		if (!line) {
			return false;
		}
		*out = strtoull(line + 12, NULL, 10);
		return true;
	}
	*out = strtoull(buf + 11, NULL, 10);
	return true;
}

int qos_cgroup_attach_process(struct qos_cgroup *cg, const char *name, pid_t pid) {
	char p[PATH_MAX], v[32];
	snprintf(v, sizeof(v), "%d", pid);
	qos_cgroup_path(cg, false, name, "cgroup.procs", p, sizeof(p));
	int r = qos_cgroup_write(cg, p, v);
	if (r < 0 || cg->layout != QOS_CG_HYBRID) {
		return r;
	}
	qos_cgroup_path(cg, true, name, "cgroup.procs", p, sizeof(p));
	return qos_cgroup_write(cg, p, v);
}

int qos_cgroup_attach_thread(struct qos_cgroup *cg, const char *name, pid_t tid) {
	if (cg->layout != QOS_CG_HYBRID) {
		return -ENOTSUP;
	}
	char p[PATH_MAX], v[32];
	snprintf(v, sizeof(v), "%d", tid);
	qos_cgroup_path(cg, true, name, "tasks", p, sizeof(p));
	return qos_cgroup_write(cg, p, v);
}

bool qos_cgroup_current(const struct qos_cgroup *cg, pid_t pid, pid_t tid, char *v2, size_t v2_len,
		char *cpu, size_t cpu_len) {
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/cgroup", pid, tid > 0 ? tid : pid);
	if (qos_sys_read_file(path, buf, sizeof(buf)) <= 0) {
		return false;
	}
	v2[0] = cpu[0] = '\0';
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		char *c1 = strchr(line, ':');
		char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2) {
			continue;
		}
		*c2 = '\0';
		const char *ctrls = c1 + 1;
		if (*ctrls == '\0') {
			snprintf(v2, v2_len, "%s", c2 + 1);
		} else if (has_word(ctrls, "cpu")) {
			snprintf(cpu, cpu_len, "%s", c2 + 1);
		}
	}
	if (cg->layout == QOS_CG_V2) {
		snprintf(cpu, cpu_len, "%s", v2);
	}
	return v2[0] != '\0';
}

/*
 * Writes id into file of path (relative to base) or, with up, where that
 * fails (the cgroup is gone, or takes no process now), of its nearest
 * ancestor that takes it.  path is cut to where it went.
 */
static int write_up(struct qos_cgroup *cg, const char *base, char *path, const char *file,
		const char *id, bool up) {
	for (;;) {
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s%s/%s", base, path, file);
		int r = qos_cgroup_write(cg, p, id);
		char *slash = strrchr(path, '/');
		if (!up || r == 0 || r == -ESRCH || !slash || (slash == path && !path[1])) {
			return r;
		}
		slash[slash == path ? 1 : 0] = '\0';
	}
}

static int restore(struct qos_cgroup *cg, pid_t pid, pid_t tid, bool whole_process, char *v2,
		char *cpu, bool up) {
	char v[32];
	int r = 0;
	if (whole_process) {
		snprintf(v, sizeof(v), "%d", pid);
		r = write_up(cg, cg->v2_base, v2, "cgroup.procs", v, up);
	}
	if (cg->layout == QOS_CG_HYBRID && cpu[0]) {
		snprintf(v, sizeof(v), "%d", whole_process ? pid : tid);
		int r2 = write_up(cg, cg->cpu_base, cpu, whole_process ? "cgroup.procs" : "tasks", v, up);
		if (r == 0) {
			r = r2;
		}
	}
	return r;
}

int qos_cgroup_restore(struct qos_cgroup *cg, pid_t pid, pid_t tid, bool whole_process,
		const char *v2, const char *cpu) {
	char v2_copy[QOS_CG_REL_PATH], cpu_copy[QOS_CG_REL_PATH];
	snprintf(v2_copy, sizeof(v2_copy), "%s", v2);
	snprintf(cpu_copy, sizeof(cpu_copy), "%s", cpu);
	return restore(cg, pid, tid, whole_process, v2_copy, cpu_copy, false);
}

int qos_cgroup_restore_near(struct qos_cgroup *cg, pid_t pid, pid_t tid, bool whole_process,
		char *v2, char *cpu) {
	return restore(cg, pid, tid, whole_process, v2, cpu, true);
}

int qos_cgroup_for_each_pid(const struct qos_cgroup *cg, const char *name, bool threads,
		void (*fn)(pid_t pid, void *data), void *data) {
	char p[PATH_MAX];
	if (threads && cg->layout == QOS_CG_HYBRID) {
		qos_cgroup_path(cg, true, name, "tasks", p, sizeof(p));
	} else {
		qos_cgroup_path(cg, false, name, threads ? "cgroup.threads" : "cgroup.procs", p, sizeof(p));
	}
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		return -1;
	}
	int n = qos_cgroup_for_each_pid_fd(fd, fn, data);
	close(fd);
	return n;
}

int qos_cgroup_open_procs(const struct qos_cgroup *cg, const char *name) {
	char p[PATH_MAX];
	qos_cgroup_path(cg, false, name, "cgroup.procs", p, sizeof(p));
	return open(p, O_RDONLY | O_CLOEXEC);
}

int qos_cgroup_for_each_pid_fd(int fd, void (*fn)(pid_t pid, void *data), void *data) {
	char buf[4096];
	off_t off = 0;
	long v = -1; /* the number being read, across reads: a read may end inside one */
	int n = 0;
	for (;;) {
		/* One page at most per read (the seq_file buffer), so read to the end. */
		ssize_t got = pread(fd, buf, sizeof(buf), off);
		if (got < 0) {
			return -1;
		}
		if (got == 0) {
			break;
		}
		off += got;
		for (ssize_t i = 0; i < got; i++) {
			char c = buf[i];
			if (c >= '0' && c <= '9') {
				v = v < 0 ? c - '0' : v * 10 + (c - '0');
				if (v > INT_MAX / 10) {
					v = INT_MAX / 10; /* not a pid; kill() and /proc refuse it */
				}
			} else {
				if (v > 0) {
					fn((pid_t)v, data);
					n++;
				}
				v = -1;
			}
		}
	}
	if (v > 0) {
		fn((pid_t)v, data);
		n++;
	}
	return n;
}

static int list_dirs(const char *root, void (*fn)(const char *name, void *data), void *data) {
	DIR *d = opendir(root);
	if (!d) {
		return -1;
	}
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_type != DT_DIR || e->d_name[0] == '.') {
			continue;
		}
		fn(e->d_name, data);
		n++;
	}
	closedir(d);
	return n;
}

int qos_cgroup_for_each_group(const struct qos_cgroup *cg, void (*fn)(const char *name, void *data),
		void *data) {
	int n = list_dirs(cg->v2_root, fn, data);
	if (cg->layout == QOS_CG_HYBRID) {
		/* Groups that only exist in the cpu tree (a crash between two mkdirs). */
		int m = list_dirs(cg->cpu_root, fn, data);
		if (m > 0) {
			n = n < 0 ? m : n + m;
		}
	}
	return n;
}
