/*
 * Which process is behind a Wayland client, held race-free.
 *
 * The peer's pidfd comes from SO_PEERPIDFD where the kernel has it, else from
 * pidfd_open() on the SO_PEERCRED pid with its start time checked against the
 * socket's credentials, so a pid that was recycled is never acted upon. A
 * pidfd keeps naming the same process for as long as we hold it; its pid is
 * re-read from the pidfd (and is -1 once the process has exited).
 */
#ifndef QOSWAY_CLIENT_IDENTITY_H
#define QOSWAY_CLIENT_IDENTITY_H

#include <stdbool.h>
#include <sys/types.h>
#include <wayland-server-core.h>

struct client_identity {
	struct wl_client *client;
	int pidfd; /* -1 if the peer could not be identified */
	pid_t pid; /* at connection time */
	bool paused; /* the QoS manager froze this client's process */
	/* CPU use of the process over the last sampling interval (~1 s). */
	double cpu_percent;
	uint64_t cpu_ns, sampled_ns;
	/* qosway-reserve-v1 bookkeeping: objects held, set_params this second. */
	unsigned int reserve_objects;
	uint64_t rate_window_start_ms;
	unsigned int rate_count;
	struct wl_listener destroy;
};

/* The identity of `client`, created on first use; NULL only without memory. */
struct client_identity *client_identity_get(struct wl_client *client);
/* The identity if it exists, never creating one: for destroy paths, where a
 * new one would outlive its client. */
struct client_identity *client_identity_find(struct wl_client *client);
/* The client's pid if its process is still the one that connected, else -1. */
pid_t client_identity_pid(const struct client_identity *id);
/* The pid behind an open pidfd, -1 if it has exited or on error. */
pid_t pidfd_get_pid(int pidfd);
/* Update cpu_percent from the process's threads' schedstat run times. */
void client_identity_sample_cpu(struct client_identity *id, uint64_t now_ns);
/* A pidfd for the peer of a connected unix socket, -1 on failure. */
int socket_peer_pidfd(int fd, pid_t *pid);

#endif
