#include "qos/kernel/journal.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/xattr.h>

#define PREFIX "user.qosway."
#define MAGIC "qosway-journal 1\n"
/* Two paths plus a few numbers; the kernel takes values up to 64 KiB. */
#define VALUE_MAX (2 * QOS_CG_REL_PATH + 256 + QOS_JOURNAL_THREADS * 64)

static void group_dir(const struct qos_cgroup *cg, const char *group, char *out, size_t len) {
	snprintf(out, len, "%s/%s", cg->v2_root, group);
}

static void attr_name(pid_t pid, pid_t tid, char *out, size_t len) {
	if (tid) {
		snprintf(out, len, PREFIX "%d.%d", pid, tid);
	} else {
		snprintf(out, len, PREFIX "%d", pid);
	}
}

static void format_limit(uint64_t v, char *out, size_t len) {
	if (v == (uint64_t)RLIM_INFINITY) {
		snprintf(out, len, "inf");
	} else {
		snprintf(out, len, "%" PRIu64, v);
	}
}

size_t qos_journal_format(const struct qos_journal_entry *e, char *buf, size_t len) {
	char soft[24], hard[24];
	format_limit(e->rt_soft, soft, sizeof(soft));
	format_limit(e->rt_hard, hard, sizeof(hard));
	int n = snprintf(buf, len,
			MAGIC "start=%" PRIu64 "\nnice=%d\nsched=%d %d %d\n"
				  "rttime=%s %s\nv2=%s\ncpu=%s\n",
			e->start_time, e->nice, e->policy, e->priority, e->reset_on_fork ? 1 : 0, soft, hard,
			e->v2, e->cpu);
	for (size_t i = 0; i < e->n_threads && i < QOS_JOURNAL_THREADS && n > 0 && (size_t)n < len;
			i++) {
		const struct qos_journal_thread *t = &e->threads[i];
		n += snprintf(buf + n, len - (size_t)n, "thread=%d %d %d %d %d\n", (int)t->tid, t->policy,
				t->priority, t->nice, t->reset_on_fork ? 1 : 0);
	}
	return n > 0 && (size_t)n < len ? (size_t)n : 0;
}

static bool parse_u64(const char *s, const char *end, uint64_t *out) {
	if (s == end || (size_t)(end - s) > 20) {
		return false;
	}
	uint64_t v = 0;
	for (; s < end; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10) {
			return false;
		}
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return true;
}

static bool parse_limit(const char *s, const char *end, uint64_t *out) {
	if (end - s == 3 && memcmp(s, "inf", 3) == 0) {
		*out = (uint64_t)RLIM_INFINITY;
		return true;
	}
	return parse_u64(s, end, out);
}

/* An absolute cgroup path with no "." or ".." component (or empty, for cpu). */
static bool parse_path(const char *s, const char *end, bool may_be_empty, char *out, size_t len) {
	size_t n = (size_t)(end - s);
	if (n == 0 ? !may_be_empty : s[0] != '/') {
		return false;
	}
	if (n >= len || memchr(s, '\0', n)) {
		return false;
	}
	for (const char *c = s; c < end;) {
		const char *next = memchr(c + 1, '/', (size_t)(end - c - 1));
		if (!next) {
			next = end;
		}
		size_t part = (size_t)(next - c - 1);
		if ((part == 1 && c[1] == '.') || (part == 2 && c[1] == '.' && c[2] == '.')) {
			return false;
		}
		c = next;
	}
	memcpy(out, s, n);
	out[n] = '\0';
	return true;
}

/* n space-separated numbers filling the line; a '-' is allowed where neg[i]. */
static bool parse_fields(const char *v, const char *eol, int n, const bool *neg, int64_t *out) {
	for (int i = 0; i < n; i++) {
		const char *sp = i < n - 1 ? memchr(v, ' ', (size_t)(eol - v)) : eol;
		if (!sp) {
			return false;
		}
		bool minus = neg && neg[i] && v < sp && *v == '-';
		uint64_t u;
		if (!parse_u64(v + minus, sp, &u) || u > INT32_MAX) {
			return false;
		}
		out[i] = minus ? -(int64_t)u : (int64_t)u;
		v = sp + 1;
	}
	return true;
}

/*
 * A class a thread can be given back: SCHED_OTHER 0, FIFO 1, RR 2, BATCH 3
 * or IDLE 5, a priority only for fifo/rr, reset-on-fork 0 or 1.
 */
static bool valid_class(int64_t policy, int64_t priority, int64_t reset_on_fork) {
	bool rt = policy == 1 || policy == 2;
	return (policy <= 3 || policy == 5) && (rt ? priority >= 1 && priority <= 99 : priority == 0) &&
			(reset_on_fork == 0 || reset_on_fork == 1);
}

/* "policy priority reset-on-fork" */
static bool parse_sched(const char *v, const char *eol, struct qos_journal_entry *e) {
	int64_t f[3];
	if (!parse_fields(v, eol, 3, NULL, f) || !valid_class(f[0], f[1], f[2])) {
		return false;
	}
	e->policy = (int)f[0];
	e->priority = (int)f[1];
	e->reset_on_fork = f[2];
	return true;
}

/* "tid policy priority nice reset-on-fork"; past the cap, lines are skipped. */
static bool parse_thread(const char *v, const char *eol, struct qos_journal_entry *e) {
	static const bool neg[5] = { false, false, false, true, false };
	int64_t f[5];
	if (!parse_fields(v, eol, 5, neg, f) || f[0] < 1 || !valid_class(f[1], f[2], f[4]) ||
			f[3] < -20 || f[3] > 19) {
		return false;
	}
	if (e->n_threads == QOS_JOURNAL_THREADS) {
		return true;
	}
	e->threads[e->n_threads++] = (struct qos_journal_thread){ .tid = (pid_t)f[0],
		.policy = (int)f[1],
		.priority = (int)f[2],
		.nice = (int)f[3],
		.reset_on_fork = f[4] };
	return true;
}

bool qos_journal_parse(const char *buf, size_t len, struct qos_journal_entry *out) {
	size_t magic = strlen(MAGIC);
	if (len < magic || memcmp(buf, MAGIC, magic) != 0) {
		return false;
	}
	struct qos_journal_entry e = { 0 };
	enum {
		START = 1,
		NICE = 2,
		RTTIME = 4,
		V2 = 8,
		CPU = 16,
		ALL = 31,
		SCHED = 32
	};
	unsigned seen = 0;
	const char *end = buf + len;
	for (const char *line = buf + magic; line < end;) {
		const char *eol = memchr(line, '\n', (size_t)(end - line));
		if (!eol) {
			return false; /* every line ends in a newline: a cut value is no value */
		}
		const char *eq = memchr(line, '=', (size_t)(eol - line));
		if (!eq) {
			return false;
		}
		size_t klen = (size_t)(eq - line);
		const char *v = eq + 1;
		unsigned key = 0;
		bool ok = true;
		if (klen == 5 && memcmp(line, "start", 5) == 0) {
			key = START;
			ok = parse_u64(v, eol, &e.start_time) && e.start_time > 0;
		} else if (klen == 4 && memcmp(line, "nice", 4) == 0) {
			key = NICE;
			bool neg = v < eol && *v == '-';
			uint64_t n = 0;
			ok = parse_u64(v + neg, eol, &n) && n <= (neg ? 20u : 19u);
			e.nice = neg ? -(int)n : (int)n;
		} else if (klen == 5 && memcmp(line, "sched", 5) == 0) {
			key = SCHED;
			ok = parse_sched(v, eol, &e);
		} else if (klen == 6 && memcmp(line, "thread", 6) == 0) {
			ok = parse_thread(v, eol, &e); /* repeated: no key bit */
		} else if (klen == 6 && memcmp(line, "rttime", 6) == 0) {
			key = RTTIME;
			const char *sp = memchr(v, ' ', (size_t)(eol - v));
			ok = sp && parse_limit(v, sp, &e.rt_soft) && parse_limit(sp + 1, eol, &e.rt_hard) &&
					e.rt_soft <= e.rt_hard;
		} else if (klen == 2 && memcmp(line, "v2", 2) == 0) {
			key = V2;
			ok = parse_path(v, eol, false, e.v2, sizeof(e.v2));
		} else if (klen == 3 && memcmp(line, "cpu", 3) == 0) {
			key = CPU;
			ok = parse_path(v, eol, true, e.cpu, sizeof(e.cpu));
		}
		/* Unknown keys are a later version's additions; repeated ones are damage. */
		if (!ok || (seen & key)) {
			return false;
		}
		seen |= key;
		line = eol + 1;
	}
	if ((seen & ALL) != ALL) {
		return false;
	}
	*out = e;
	return true;
}

int qos_journal_record(const struct qos_cgroup *cg, const char *group, pid_t pid, pid_t tid,
		const struct qos_journal_entry *e) {
	char dir[PATH_MAX], name[64], *value = malloc(VALUE_MAX);
	if (!value) {
		return -ENOMEM;
	}
	size_t n = qos_journal_format(e, value, VALUE_MAX);
	group_dir(cg, group, dir, sizeof(dir));
	attr_name(pid, tid, name, sizeof(name));
	int r = n == 0 ? -ENAMETOOLONG : setxattr(dir, name, value, n, 0) == 0 ? 0 : -errno;
	free(value);
	return r;
}

void qos_journal_forget(const struct qos_cgroup *cg, const char *group, pid_t pid, pid_t tid) {
	char dir[PATH_MAX], name[64];
	group_dir(cg, group, dir, sizeof(dir));
	attr_name(pid, tid, name, sizeof(name));
	removexattr(dir, name);
}

static int read_attr(const char *dir, const char *name, struct qos_journal_entry *out) {
	char *value = malloc(VALUE_MAX);
	if (!value) {
		return 0;
	}
	ssize_t n = getxattr(dir, name, value, VALUE_MAX);
	int r = n < 0 ? 0 : qos_journal_parse(value, (size_t)n, out) ? 1 : -EINVAL;
	free(value);
	return r;
}

int qos_journal_lookup(const struct qos_cgroup *cg, const char *group, pid_t pid, pid_t tid,
		struct qos_journal_entry *out) {
	char dir[PATH_MAX], name[64];
	group_dir(cg, group, dir, sizeof(dir));
	attr_name(pid, tid, name, sizeof(name));
	return read_attr(dir, name, out);
}

/*
 * Calls fn(dir, name, data) for each of the group's records, until it
 * returns false.
 */
static void for_each_record(const struct qos_cgroup *cg, const char *group,
		bool (*fn)(const char *dir, const char *name, void *data), void *data) {
	char dir[PATH_MAX];
	group_dir(cg, group, dir, sizeof(dir));
	ssize_t n = listxattr(dir, NULL, 0);
	if (n <= 0) {
		return;
	}
	char *names = malloc((size_t)n + 1);
	if (!names) {
		return;
	}
	n = listxattr(dir, names, (size_t)n);
	names[n > 0 ? n : 0] = '\0';
	for (ssize_t i = 0; n > 0 && i < n; i += (ssize_t)strlen(names + i) + 1) {
		if (strncmp(names + i, PREFIX, strlen(PREFIX)) == 0 && !fn(dir, names + i, data)) {
			break;
		}
	}
	free(names);
}

struct any_ctx {
	struct qos_journal_entry *out;
	bool found;
};

static bool take_any(const char *dir, const char *name, void *data) {
	struct any_ctx *c = data;
	c->found = read_attr(dir, name, c->out) == 1;
	return !c->found;
}

bool qos_journal_any(const struct qos_cgroup *cg, const char *group,
		struct qos_journal_entry *out) {
	struct any_ctx c = { .out = out };
	for_each_record(cg, group, take_any, &c);
	return c.found;
}

struct thread_ctx {
	void (*fn)(pid_t pid, pid_t tid, const struct qos_journal_entry *e, void *data);
	void *data;
};

static bool take_thread(const char *dir, const char *name, void *data) {
	struct thread_ctx *c = data;
	int pid, tid, end = 0;
	struct qos_journal_entry e;
	if (sscanf(name + strlen(PREFIX), "%d.%d%n", &pid, &tid, &end) == 2 &&
			name[strlen(PREFIX) + (size_t)end] == '\0' && pid > 0 && tid > 0 &&
			read_attr(dir, name, &e) == 1) {
		c->fn(pid, tid, &e, c->data);
	}
	return true;
}

void qos_journal_for_each_thread(const struct qos_cgroup *cg, const char *group,
		void (*fn)(pid_t pid, pid_t tid, const struct qos_journal_entry *e, void *data),
		void *data) {
	struct thread_ctx c = { .fn = fn, .data = data };
	for_each_record(cg, group, take_thread, &c);
}

#define COOLDOWN_ATTR "user.qosway.cooldown"

int qos_journal_save_cooldown(const struct qos_cgroup *cg, uint64_t until_us) {
	char value[32];
	int n = snprintf(value, sizeof(value), "%llu", (unsigned long long)until_us);
	return setxattr(cg->v2_root, COOLDOWN_ATTR, value, (size_t)n, 0) == 0 ? 0 : -errno;
}

bool qos_journal_load_cooldown(const struct qos_cgroup *cg, uint64_t *until_us) {
	char value[32];
	ssize_t n = getxattr(cg->v2_root, COOLDOWN_ATTR, value, sizeof(value) - 1);
	if (n <= 0) {
		return false;
	}
	value[n] = '\0';
	char *end;
	errno = 0;
	unsigned long long v = strtoull(value, &end, 10);
	if (errno || end == value || *end) {
		return false;
	}
	*until_us = v;
	return true;
}
