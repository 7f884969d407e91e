/*
 * Holding a client's requests back: its fd's event source closed for a while.
 *
 * libwayland (1.21, and later releases alike) keeps each client's event
 * source private. The pointer is the second field of struct wl_client, and
 * the event loop registers a dup of the client's fd in its epoll set with
 * that pointer as the event data, which the kernel lists in
 * /proc/self/fdinfo/<epoll fd> as a "tfd: ... data: ... ino: ..." line.
 * The pointer is used only when three things agree: the field, the one
 * epoll registration of the client's socket inode, and the source's own fd
 * field (the dup's number). Should a libwayland release change the layout,
 * the first two cannot agree, gating is turned off with one log line, and
 * clients are served in the order epoll reports them, as before.
 *
 * A closed source is wl_event_source_fd_update(source, 0). libwayland sets
 * the mask itself when a flush hits a full socket (READABLE | WRITABLE) and
 * after the flush that follows (READABLE), so the mask is put back to
 * READABLE | WRITABLE on opening: at worst one spurious writable event,
 * which libwayland answers by flushing and setting READABLE again.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <wlr/util/log.h>

#include "scheduler/scheduler_internal.h"
#include "server.h"

/* The leading fields of libwayland's private structs (src/wayland-server.c,
 * src/event-loop.c), unchanged from 1.19 to 1.23. */
struct lw_client_head {
	void *connection;
	struct wl_event_source *source;
};

struct lw_source_head {
	void *interface;
	void *loop;
	struct wl_list link;
	void *data;
	int fd;
};

/* The epoll registration of the socket with this inode: its fd and data. */
static int epoll_entry(int epoll_fd, ino_t ino, dev_t dev, int *tfd, uint64_t *data) {
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", epoll_fd);
	FILE *f = fopen(path, "re");
	if (!f) {
		return -1;
	}
	char line[256];
	int found = 0;
	while (fgets(line, sizeof(line), f)) {
		int fd;
		unsigned int events, sdev;
		unsigned long long ptr, pos, inode;
		if (sscanf(line, "tfd: %d events: %x data: %llx pos:%llu ino:%llx sdev:%x", &fd, &events,
					&ptr, &pos, &inode, &sdev) == 6 &&
				(ino_t)inode == ino && (dev_t)sdev == dev) {
			found++;
			*tfd = fd;
			*data = ptr;
		}
	}
	fclose(f);
	return found;
}

static void gating_off(struct qw_scheduler *sched, const char *why) {
	wlr_log(WLR_ERROR,
			"scheduler: %s; requests are served in arrival order and "
			"exhausted clients are not held back",
			why);
	sched->gating = false;
	struct sched_client *c;
	wl_list_for_each(c, &sched->clients, link) {
		if (c->gated) {
			sched_gate(c, false);
		}
		c->source = NULL;
	}
}

void sched_gate_find_source(struct qw_scheduler *sched, struct sched_client *c) {
	if (!sched->gating) {
		return; /* off for good */
	}
	struct stat st;
	if (c->fd < 0 || fstat(c->fd, &st) != 0) {
		gating_off(sched, "cannot stat a client's socket");
		return;
	}
	int epoll_fd = wl_event_loop_get_fd(sched->server->event_loop);
	int tfd = -1;
	uint64_t data = 0;
	int n = epoll_entry(epoll_fd, st.st_ino, st.st_dev, &tfd, &data);
	struct wl_event_source *field = ((struct lw_client_head *)c->client)->source;
	if (n != 1 || (uint64_t)(uintptr_t)field != data) {
		char why[160];
		snprintf(why, sizeof(why),
				"cannot verify a client's event source (%d epoll "
				"entries for its socket, field %s): gating off",
				n, n == 1 ? "differs" : "unchecked");
		gating_off(sched, why);
		return;
	}
	/* The kernel holds this very pointer as the source of the client's
	 * fd: it is libwayland's source, safe to read. */
	if (((struct lw_source_head *)field)->fd != tfd) {
		gating_off(sched, "a client's event source holds another fd: gating off");
		return;
	}
	c->source = field;
}

void sched_gate(struct sched_client *c, bool gated) {
	if (!c->source || c->gated == gated) {
		return;
	}
	wl_event_source_fd_update(c->source, gated ? 0 : WL_EVENT_READABLE | WL_EVENT_WRITABLE);
	c->gated = gated;
}

uint64_t sched_gate_exhausted(struct qw_scheduler *sched, uint64_t now) {
	if (!sched->gating) {
		return 0;
	}
	uint64_t next = 0;
	struct sched_client *c;
	wl_list_for_each(c, &sched->clients, link) {
		bool exhausted = sched_client_exhausted(c, now);
		uint64_t due = c->min_served_ns + SCHED_MIN_SERVICE_NS;
		if (exhausted && now >= due) {
			/* The minimum service: one dispatch of what it sent. */
			c->min_served_ns = now;
			if (c->gated) {
				sched->gated_dispatches++;
			}
			sched_gate(c, false);
			due = now + SCHED_MIN_SERVICE_NS;
		} else if (exhausted) {
			if (!c->gated) {
				sched_trace(sched, "gate pid=%d", (int)c->pid);
			}
			/* libwayland may have opened it again while flushing. */
			c->gated = false;
			sched_gate(c, true);
		} else if (c->gated) {
			sched_trace(sched, "open pid=%d", (int)c->pid);
			sched_gate(c, false);
		}
		if (exhausted) {
			uint64_t end = c->limit && c->limit->exhausted ? c->limit->window_end_ns
														   : c->exhausted_until_ns;
			if (end && end < due) {
				due = end;
			}
			next = !next || due < next ? due : next;
		}
	}
	return next;
}
