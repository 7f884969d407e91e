#include <errno.h>
#include <stddef.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <wlr/util/log.h>

#include "qos_bridge/proc_events.h"
#include "qos/proc.h"
#include "qos/qos.h"
#include "qos_bridge/qos_link.h"

static void handle_exec(struct qw_server *server, pid_t pid) {
	/* Only the session user's processes, and only those not already
	 * placed (our own children were settled before their exec). */
	if (pid <= 0 || qos_proc_uid(pid) != getuid() || qos_link_reserve_of(server, pid)) {
		return;
	}
	qos_link_apply_rules(server, pid, NULL);
}

static int handle_readable(int fd, uint32_t mask, void *data) {
	struct qw_server *server = data;
	/* One datagram per event; drain what is there. */
	struct qos_manager *qos = qos_link_manager(server);
	for (;;) {
		char buf[4096] __attribute__((aligned(NLMSG_ALIGNTO)));
		ssize_t len = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (len < 0) {
			if (errno == ENOBUFS) {
				/* The kernel dropped events under load: missed execs are
				 * simply not matched; carry on. */
				continue;
			}
			break;
		}
		for (struct nlmsghdr *nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (size_t)len);
				nh = NLMSG_NEXT(nh, len)) {
			if (nh->nlmsg_type == NLMSG_ERROR || nh->nlmsg_type == NLMSG_NOOP) {
				continue;
			}
			struct cn_msg *msg = NLMSG_DATA(nh);
			if (msg->id.idx != CN_IDX_PROC || msg->id.val != CN_VAL_PROC) {
				continue;
			}
			/* The event sits 4-byte aligned in the datagram but holds a
			 * 64-bit field: copy it out rather than read it in place. */
			struct proc_event ev = { 0 };
			size_t n = msg->len < sizeof(ev) ? msg->len : sizeof(ev);
			memcpy(&ev, msg->data, n);
			if (n >= offsetof(struct proc_event, event_data) + sizeof(ev.event_data.exec) &&
					ev.what == PROC_EVENT_EXEC) {
				handle_exec(server, ev.event_data.exec.process_tgid);
			} else if (n >= offsetof(struct proc_event, event_data) + sizeof(ev.event_data.fork) &&
					ev.what == PROC_EVENT_FORK && qos) {
				/* A member's new process is adopted or sent back, and its
				 * new thread gets the reserve's policy, now rather than at
				 * the manager's next pass. */
				const struct fork_proc_event *f = &ev.event_data.fork;
				if (f->child_pid == f->child_tgid) {
					qos_manager_forked(qos, f->parent_tgid, f->child_tgid);
				} else {
					qos_manager_thread_started(qos, f->child_tgid, f->child_pid);
				}
			}
		}
	}
	return 0;
}

/*
 * Since Linux 6.6 a listener may name the events it wants (the kernel's
 * struct proc_input, absent from older headers); we want only exec and fork,
 * not the exits, renames and id changes that come at the same rate.  Older
 * kernels drop a request of that size without a word, which would leave us
 * with no events at all, so it is sent only to kernels known to take it.
 */
struct proc_input_request {
	uint32_t mcast_op;
	uint32_t event_type;
};

static bool kernel_filters_proc_events(void) {
	struct utsname u;
	unsigned int major = 0, minor = 0;
	if (uname(&u) != 0 || sscanf(u.release, "%u.%u", &major, &minor) != 2) {
		return false;
	}
	return major > 6 || (major == 6 && minor >= 6);
}

static bool send_listen(int fd, enum proc_cn_mcast_op op, bool filtered) {
	struct {
		struct nlmsghdr nh;
		struct cn_msg cn;
		struct proc_input_request in;
	} __attribute__((packed)) req;
	memset(&req, 0, sizeof(req));
	size_t data_len = filtered ? sizeof(req.in) : sizeof(req.in.mcast_op);
	size_t len = sizeof(req.nh) + sizeof(req.cn) + data_len;
	req.nh.nlmsg_len = len;
	req.nh.nlmsg_type = NLMSG_DONE;
	req.nh.nlmsg_pid = getpid();
	req.cn.id.idx = CN_IDX_PROC;
	req.cn.id.val = CN_VAL_PROC;
	req.cn.len = data_len;
	req.in.mcast_op = op;
	req.in.event_type = PROC_EVENT_FORK | PROC_EVENT_EXEC;
	return send(fd, &req, len, 0) == (ssize_t)len;
}

bool proc_events_init(struct qw_server *server) {
	int fd = socket(PF_NETLINK, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_CONNECTOR);
	if (fd < 0) {
		wlr_log_errno(WLR_INFO,
				"no process-event connector; AutoQOS only for "
				"programs the compositor starts or that open windows");
		return false;
	}
	struct sockaddr_nl addr = {
		.nl_family = AF_NETLINK,
		.nl_groups = CN_IDX_PROC,
	};
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
			!send_listen(fd, PROC_CN_MCAST_LISTEN, kernel_filters_proc_events())) {
		wlr_log_errno(WLR_INFO, "cannot subscribe to process events");
		close(fd);
		return false;
	}
	server->proc_events.fd = fd;
	server->proc_events.source = wl_event_loop_add_fd(server->event_loop, fd, WL_EVENT_READABLE,
			handle_readable, server);
	if (!server->proc_events.source) {
		close(fd);
		server->proc_events.fd = -1;
		return false;
	}
	return true;
}

void proc_events_finish(struct qw_server *server) {
	if (server->proc_events.source) {
		wl_event_source_remove(server->proc_events.source);
		server->proc_events.source = NULL;
	}
	if (server->proc_events.fd >= 0) {
		send_listen(server->proc_events.fd, PROC_CN_MCAST_IGNORE, false);
		close(server->proc_events.fd);
		server->proc_events.fd = -1;
	}
}
