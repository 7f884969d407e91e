#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <wlr/util/log.h>

#include "qos_bridge/client_identity.h"
#include "qos/proc.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5; not in Debian 12's headers */
#endif

pid_t pidfd_get_pid(int pidfd) {
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	FILE *f = fopen(path, "re");
	if (!f) {
		return -1;
	}
	char line[256];
	pid_t pid = -1;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "Pid:", 4) == 0) {
			pid = (pid_t)strtol(line + 4, NULL, 10);
			break;
		}
	}
	fclose(f);
	return pid > 0 ? pid : -1;
}

int socket_peer_pidfd(int fd, pid_t *pid_out) {
	int pidfd = -1;
	socklen_t len = sizeof(pidfd);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0 && pidfd >= 0) {
		*pid_out = pidfd_get_pid(pidfd);
		return pidfd;
	}
	struct ucred cred;
	len = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.pid <= 0) {
		return -1;
	}
	/* Without SO_PEERPIDFD the pid could have been recycled between the
	 * connect and now: accept the pidfd only if the process it names is
	 * older than this check and still the socket's peer afterwards. */
	uint64_t before = qos_proc_start_time(cred.pid, 0);
	pidfd = (int)syscall(SYS_pidfd_open, cred.pid, 0);
	if (pidfd < 0) {
		return -1;
	}
	struct ucred again;
	len = sizeof(again);
	if (before == 0 || qos_proc_start_time(cred.pid, 0) != before ||
			getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &again, &len) != 0 || again.pid != cred.pid) {
		close(pidfd);
		return -1;
	}
	*pid_out = cred.pid;
	return pidfd;
}

static void handle_destroy(struct wl_listener *listener, void *data) {
	struct client_identity *id = wl_container_of(listener, id, destroy);
	wl_list_remove(&id->destroy.link);
	if (id->pidfd >= 0) {
		close(id->pidfd);
	}
	free(id);
}

struct client_identity *client_identity_find(struct wl_client *client) {
	struct wl_listener *existing = wl_client_get_destroy_listener(client, handle_destroy);
	if (!existing) {
		return NULL;
	}
	struct client_identity *id = wl_container_of(existing, id, destroy);
	return id;
}

struct client_identity *client_identity_get(struct wl_client *client) {
	struct client_identity *existing = client_identity_find(client);
	if (existing) {
		return existing;
	}
	struct client_identity *id = calloc(1, sizeof(*id));
	if (!id) {
		return NULL;
	}
	id->client = client;
	id->pid = -1;
	id->pidfd = socket_peer_pidfd(wl_client_get_fd(client), &id->pid);
	if (id->pidfd < 0) {
		wlr_log(WLR_INFO, "cannot identify the process of a client: %s", strerror(errno));
	}
	id->destroy.notify = handle_destroy;
	wl_client_add_destroy_listener(client, &id->destroy);
	return id;
}

pid_t client_identity_pid(const struct client_identity *id) {
	if (!id || id->pidfd < 0) {
		return -1;
	}
	return pidfd_get_pid(id->pidfd);
}

void client_identity_sample_cpu(struct client_identity *id, uint64_t now_ns) {
	pid_t pid = client_identity_pid(id);
	if (pid <= 0) {
		id->cpu_percent = 0.0;
		return;
	}
	uint64_t ns = 0;
	qos_proc_cpu_ns(pid, &ns);
	if (id->sampled_ns && now_ns > id->sampled_ns && ns >= id->cpu_ns) {
		id->cpu_percent = 100.0 * (double)(ns - id->cpu_ns) / (double)(now_ns - id->sampled_ns);
	}
	id->cpu_ns = ns;
	id->sampled_ns = now_ns;
}
