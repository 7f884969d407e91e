/*
 * Reserve lookup by CPU-timer cookie (reserve.c's cookies.by buckets), in a
 * manager over a fake cgroup tree: several reserves per bucket, chains cut
 * at their head, middle and tail, cookies never reused.
 */
#include <stdio.h>
#include <unistd.h>

#include "check.h"
#include "fake_tree.h"
#include "qos/policy/core.h"
#include "qos/reserve/reserve.h"
#include "qos/params.h"
#include "qos/qos.h"

#define N (int)(3 * QOS_COOKIE_BUCKETS + 5)

int main(void) {
	char base[] = "/tmp/qos-lookup-XXXXXX";
	if (!fake_tree_create(base)) {
		return 1;
	}

	struct qos_manager_config cfg;
	fake_tree_config(&cfg, base, "qosway-lookup");
	char err[256];
	struct qos_manager *mgr = qos_manager_create(&cfg, err, sizeof(err));
	CHECK(mgr != NULL);
	if (!mgr) {
		fprintf(stderr, "%s\n", err);
		goto out;
	}

	struct qos_params params;
	qos_params_init(&params);
	uint32_t cookies[N];
	char name[32];
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "r%d", i);
		CHECK(qos_reserve_set(mgr, name, &params, true, false, err, sizeof(err)));
		struct qos_reserve *r = qos_reserve_find(mgr, name);
		cookies[i] = r ? r->cookie : 0;
		CHECK(r && qos_reserve_find_by_cookie(mgr, r->cookie) == r);
	}
	/*
	 * Bucket chains hold the newest first: delete the oldest (tail), the
	 * newest (head) and one in the middle of several chains.
	 */
	for (int i = 0; i < N; i++) {
		if (i % 7 == 0 || i == N - 1 || i == (int)QOS_COOKIE_BUCKETS + 1) {
			snprintf(name, sizeof(name), "r%d", i);
			CHECK(qos_reserve_delete(mgr, name, err, sizeof(err)));
		}
	}
	CHECK(qos_reserve_set(mgr, "late", &params, true, false, err, sizeof(err)));
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "r%d", i);
		struct qos_reserve *r = qos_reserve_find(mgr, name);
		CHECK(qos_reserve_find_by_cookie(mgr, cookies[i]) == r);
	}
	struct qos_reserve *late = qos_reserve_find(mgr, "late");
	CHECK(late && late->cookie != cookies[0] &&
			qos_reserve_find_by_cookie(mgr, late->cookie) == late);
	CHECK(qos_reserve_find_by_cookie(mgr, 0) == NULL);
	qos_manager_destroy(mgr);
out:
	fake_tree_remove(base);
	return check_report("test_lookup");
}
