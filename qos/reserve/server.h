/*
 * qos/reserve/server.h - the display server's own cgroup (layer 1).
 *
 * The compositor does the work of every client with a window; left among
 * its clients' threads at an ordinary weight it waits for a CPU behind
 * them, and a real-time client's frame waits with it.  It is moved into a
 * leaf of the manager's root, ".server", with a high CPU weight, which the
 * root's own weight includes (reserve.c).  That is safe because the
 * compositor bills the time it spends for a client back to that client's
 * reserve or cgroup limit: the weight buys it promptness, not extra CPU
 * for anyone.  Its children belong where it came from, not in the leaf.
 */
#ifndef QOS_SERVER_H
#define QOS_SERVER_H

#include <stdint.h>

struct qos_manager;

/* The leaf's weight as v1 cpu.shares would have it; 0 when there is none. */
uint64_t qos_server_shares(const struct qos_manager *mgr);

/* Puts the server back where it came from and removes the leaf. */
void qos_server_finish(struct qos_manager *mgr);

#endif
