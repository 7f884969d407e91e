/* Peer identification over a real unix socket: pidfd from the kernel (or
 * pidfd_open with a start-time check), and "gone" once the peer exits. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qos_bridge/client_identity.h"
#include "check.h"

int main(void) {
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	pid_t child = fork();
	if (child == 0) {
		/* The peer: keep the socket open until told to go. */
		close(sv[0]);
		char c;
		ssize_t n = read(sv[1], &c, 1);
		_exit(n == 1 ? 0 : 1);
	}
	/* socketpair() records its creator (us) as the peer of both ends. */
	pid_t pid = -1;
	int pidfd = socket_peer_pidfd(sv[0], &pid);
	CHECK(pidfd >= 0);
	CHECK(pid == getpid());
	CHECK(pidfd_get_pid(pidfd) == getpid());
	close(pidfd);

	/* A real peer: a listening socket the child connects to. */
	char path[] = "/tmp/qosway-identity-XXXXXX";
	int tmp = mkstemp(path);
	close(tmp);
	unlink(path);
	int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
	CHECK(bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) == 0);
	CHECK(listen(lfd, 1) == 0);
	int gate[2];
	CHECK(pipe(gate) == 0);
	pid_t peer = fork();
	if (peer == 0) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
			_exit(1);
		}
		char c;
		close(gate[1]);
		ssize_t n = read(gate[0], &c, 1); /* wait until told to exit */
		_exit(n >= 0 ? 0 : 1);
	}
	close(gate[0]);
	int cfd = accept(lfd, NULL, NULL);
	CHECK(cfd >= 0);
	pid = -1;
	pidfd = socket_peer_pidfd(cfd, &pid);
	CHECK(pidfd >= 0);
	CHECK(pid == peer);
	CHECK(pidfd_get_pid(pidfd) == peer);
	/* Once the peer is gone the pidfd says so: never a recycled pid. */
	close(gate[1]);
	int status;
	CHECK(waitpid(peer, &status, 0) == peer);
	CHECK(pidfd_get_pid(pidfd) == -1);
	close(pidfd);
	close(cfd);
	close(lfd);
	unlink(path);

	(void)write(sv[0], "x", 1);
	waitpid(child, &status, 0);
	close(sv[0]);
	close(sv[1]);
	return check_report("client identity");
}
