#include "qos/proc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qos/kernel/sys.h"

/* "/proc/" + two ints + "/task/" + a file name: more than enough. */
#define PROC_PATH_MAX 96

/* Reads the whole (small) file /proc/PID/name into buf; its length, or -1. */
static ssize_t read_proc_file(pid_t pid, const char *name, char *buf, size_t len) {
	char path[PROC_PATH_MAX];
	if (pid <= 0 || len == 0) {
		return -1;
	}
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	return qos_sys_read_file(path, buf, len);
}

/*
 * The number after "field " (one space) at *p, which must end in a space or
 * a newline: a number cut off by the end of the text is not taken whole.
 */
static bool next_field(const char **p, unsigned long long *out) {
	if (**p != ' ') {
		return false;
	}
	char *end;
	*out = strtoull(*p + 1, &end, 10);
	if (end == *p + 1 || (*end != ' ' && *end != '\n')) {
		return false;
	}
	*p = end;
	return true;
}

bool qos_proc_parse_stat(const char *text, struct qos_proc_stat *out) {
	const char *p = text ? strrchr(text, ')') : NULL;
	if (!p || p[1] != ' ' || p[2] == '\0' || (p[3] != ' ' && p[3] != '\n')) {
		return false;
	}
	*out = (struct qos_proc_stat){ .state = p[2] };
	p += 3;
	/* Fields 4 (ppid) to 22 (starttime) are all integers. */
	unsigned long long v;
	for (int field = 4; field <= 22 && next_field(&p, &v); field++) {
		if (field == 4) {
			out->ppid = (pid_t)v;
		} else if (field == 22) {
			out->start_time = v;
		}
	}
	return true;
}

bool qos_proc_read_stat(pid_t pid, pid_t tid, struct qos_proc_stat *out) {
	/* A stat line is some 300 bytes; field 22 comes well before 1024. */
	char name[48], buf[1024];
	if (tid > 0) {
		snprintf(name, sizeof(name), "task/%d/stat", (int)tid);
	} else {
		snprintf(name, sizeof(name), "stat");
	}
	return read_proc_file(pid, name, buf, sizeof(buf)) > 0 && qos_proc_parse_stat(buf, out);
}

pid_t qos_proc_parent(pid_t pid) {
	struct qos_proc_stat st;
	return qos_proc_read_stat(pid, 0, &st) ? st.ppid : 0;
}

uint64_t qos_proc_start_time(pid_t pid, pid_t tid) {
	struct qos_proc_stat st;
	return qos_proc_read_stat(pid, tid, &st) ? st.start_time : 0;
}

char qos_proc_state(pid_t tid) {
	struct qos_proc_stat st;
	return qos_proc_read_stat(tid, 0, &st) ? st.state : 0;
}

bool qos_proc_exe(pid_t pid, char *buf, size_t len) {
	if (len == 0) {
		return false;
	}
	buf[0] = '\0';
	char path[PROC_PATH_MAX];
	if (pid <= 0) {
		return false;
	}
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	/* readlink does not say when it cut the path: a full buffer may have. */
	ssize_t n = readlink(path, buf, len);
	if (n <= 0 || (size_t)n >= len) {
		buf[0] = '\0';
		return false;
	}
	buf[n] = '\0';
	return true;
}

bool qos_proc_cmdline(pid_t pid, char *buf, size_t len) {
	if (len == 0) {
		return false;
	}
	ssize_t n = read_proc_file(pid, "cmdline", buf, len);
	if (n <= 0) {
		buf[0] = '\0';
		return false;
	}
	/* Each argument ends in a NUL; the last one's is the string's end. */
	for (ssize_t i = 0; i + 1 < n; i++) {
		if (buf[i] == '\0') {
			buf[i] = ' ';
		}
	}
	return true;
}

bool qos_proc_has_thread(pid_t pid, pid_t tid) {
	char path[PROC_PATH_MAX];
	if (pid <= 0 || tid <= 0) {
		return false;
	}
	snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)pid, (int)tid);
	return access(path, F_OK) == 0;
}

/* The first number after "\nkey" in /proc/PID/status. */
static bool status_field(pid_t pid, const char *key, long *out) {
	char buf[4096];
	if (read_proc_file(pid, "status", buf, sizeof(buf)) <= 0) {
		return false;
	}
	const char *p = strstr(buf, key);
	if (!p) {
		return false;
	}
	p += strlen(key);
	char *end;
	long v = strtol(p, &end, 10);
	if (end == p) {
		return false;
	}
	*out = v;
	return true;
}

pid_t qos_proc_tgid(pid_t tid) {
	long v;
	return status_field(tid, "\nTgid:", &v) && v > 0 ? (pid_t)v : 0;
}

uid_t qos_proc_uid(pid_t pid) {
	/* "Uid:" shows the real, effective, saved and filesystem uids. */
	long v;
	return status_field(pid, "\nUid:", &v) && v >= 0 ? (uid_t)v : (uid_t)-1;
}

struct cpu_sum {
	pid_t pid;
	uint64_t ns;
};

static void add_thread_cpu(pid_t tid, void *data) {
	struct cpu_sum *sum = data;
	char name[48], buf[128];
	snprintf(name, sizeof(name), "task/%d/schedstat", (int)tid);
	if (read_proc_file(sum->pid, name, buf, sizeof(buf)) > 0) {
		sum->ns += strtoull(buf, NULL, 10);
	}
}

bool qos_proc_cpu_ns(pid_t pid, uint64_t *out) {
	struct cpu_sum sum = { .pid = pid };
	if (pid <= 0 || qos_sys_for_each_thread(pid, add_thread_cpu, &sum) < 0) {
		return false;
	}
	*out = sum.ns;
	return true;
}
