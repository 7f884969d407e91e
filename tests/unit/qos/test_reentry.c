/*
 * The event callback runs in the middle of the manager's walks over its
 * reserves and members: a change made from it (a leave freeing the member
 * being reported, a delete of the reserve named, a nested dispatch) was a
 * use after free.  Every changing call refuses there, with a reason, and
 * queries still work; a manager over a fake cgroup tree, with real
 * sleeping children as members.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "fake_tree.h"
#include "qos/qos.h"

struct seen {
	struct qos_manager *mgr;
	pid_t other;
	int events, refused, queried, exited;
};

static void try_changes(void *data, const struct qos_event *ev) {
	struct seen *s = data;
	struct qos_manager *mgr = s->mgr;
	char err[256] = "";
	s->events++;
	if (!mgr) {
		return; /* events of qos_manager_create */
	}
	if (ev->type == QOS_EVENT_MEMBER_EXITED) {
		s->exited++;
	}
	struct qos_params p;
	qos_params_init(&p);
	int refused = 0;
	refused += !qos_manager_join(mgr, "r", s->other, 0, err, sizeof(err)) &&
			strstr(err, "event callback") != NULL;
	refused += !qos_manager_leave(mgr, ev->pid, ev->tid);
	refused += !qos_reserve_delete(mgr, "r", err, sizeof(err)) &&
			strstr(err, "event callback") != NULL;
	refused += !qos_reserve_set(mgr, "r", &p, true, true, err, sizeof(err)) &&
			strstr(err, "event callback") != NULL;
	refused += !qos_manager_set_class(mgr, s->other, &p, err, sizeof(err)) &&
			strstr(err, "event callback") != NULL;
	refused += !qos_manager_bill(mgr, "r", 1000);
	errno = 0;
	refused += qos_manager_dispatch(mgr) == -1 && errno == EDEADLK;
	qos_manager_forked(mgr, ev->pid, s->other); /* does nothing */
	if (refused == 7) {
		s->refused++;
	}
	struct qos_reserve_info info;
	if (ev->reserve && qos_manager_reserve_info(mgr, ev->reserve, &info)) {
		s->queried++;
	}
}

int main(void) {
	char base[] = "/tmp/qos-reentry-XXXXXX";
	if (!fake_tree_create(base)) {
		return 1;
	}
	struct seen s = { 0 };
	struct qos_manager_config cfg;
	fake_tree_config(&cfg, base, "qosway-reentry");
	cfg.event = try_changes;
	cfg.event_data = &s;
	char err[256];
	pid_t a = fake_tree_sleeper();
	s.other = fake_tree_sleeper();
	struct qos_manager *mgr = qos_manager_create(&cfg, err, sizeof(err));
	CHECK(mgr != NULL);
	if (!mgr) {
		fprintf(stderr, "%s\n", err);
		goto out;
	}
	s.mgr = mgr;
	struct qos_params p;
	qos_params_init(&p);
	p.nice = 3;
	CHECK(qos_reserve_set(mgr, "r", &p, true, false, err, sizeof(err)));
	CHECK(qos_manager_join(mgr, "r", a, 0, err, sizeof(err)));
	int before = s.events;
	CHECK(before > 0 && s.refused == before);
	/* The member's exit is reported from dispatch, while the reserve's
	 * members are walked: nothing the callback tries may free them. */
	kill(a, SIGKILL);
	waitpid(a, NULL, 0);
	a = 0;
	for (int i = 0; i < 200 && !s.exited; i++) {
		usleep(5000);
		qos_manager_dispatch(mgr);
	}
	CHECK(s.exited == 1);
	CHECK(s.events > before && s.refused == s.events);
	CHECK(s.queried > 0);
	/* Outside the callback, the same calls work. */
	CHECK(qos_manager_join(mgr, "r", s.other, 0, err, sizeof(err)));
	CHECK(qos_manager_leave(mgr, s.other, 0));
	CHECK(qos_reserve_delete(mgr, "r", err, sizeof(err)));
	if (s.refused != s.events) {
		fprintf(stderr, "%d events, %d with every change refused\n", s.events, s.refused);
	}
	qos_manager_destroy(mgr);
out:
	if (a) {
		kill(a, SIGKILL);
	}
	kill(s.other, SIGKILL);
	waitpid(s.other, NULL, 0);
	if (a) {
		waitpid(a, NULL, 0);
	}
	fake_tree_remove(base);
	return check_report("test_reentry");
}
