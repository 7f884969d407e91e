/* The text form of member origin records (qos/kernel/journal.h). */
#include <sys/resource.h>

#include "check.h"
#include "qos/kernel/journal.h"

static bool parse(const char *text, struct qos_journal_entry *e) {
	return qos_journal_parse(text, strlen(text), e);
}

static void test_round_trip(void) {
	struct qos_journal_entry in = {
		.start_time = 123456,
		.nice = -7,
		.rt_soft = 200000,
		.rt_hard = (uint64_t)RLIM_INFINITY,
	};
	snprintf(in.v2, sizeof(in.v2), "/user.slice/app-foot scope with spaces.scope");
	snprintf(in.cpu, sizeof(in.cpu), "/");
	char buf[8192];
	size_t n = qos_journal_format(&in, buf, sizeof(buf));
	CHECK(n > 0 && strlen(buf) == n);
	CHECK(strstr(buf, "rttime=200000 inf\n") != NULL);
	struct qos_journal_entry out;
	memset(&out, 0x5a, sizeof(out));
	CHECK(qos_journal_parse(buf, n, &out));
	CHECK_EQ_U(out.start_time, 123456);
	CHECK(out.nice == -7);
	CHECK_EQ_U(out.rt_soft, 200000);
	CHECK(out.rt_hard == (uint64_t)RLIM_INFINITY);
	CHECK_STR(out.v2, in.v2);
	CHECK_STR(out.cpu, "/");
	CHECK(out.policy == 0 && out.priority == 0 && !out.reset_on_fork);
	in.policy = 2; /* SCHED_RR */
	in.priority = 7;
	in.reset_on_fork = true;
	n = qos_journal_format(&in, buf, sizeof(buf));
	CHECK(strstr(buf, "sched=2 7 1\n") != NULL);
	CHECK(qos_journal_parse(buf, n, &out) && out.policy == 2 && out.priority == 7 &&
			out.reset_on_fork);
	in.policy = in.priority = 0;
	in.reset_on_fork = false;
	/* Each thread's class, nice below zero included. */
	in.n_threads = 2;
	in.threads[0] = (struct qos_journal_thread){ .tid = 41,
		.policy = 1,
		.priority = 9,
		.nice = -3,
		.reset_on_fork = true };
	in.threads[1] = (struct qos_journal_thread){ .tid = 42, .policy = 3, .nice = 7 };
	n = qos_journal_format(&in, buf, sizeof(buf));
	CHECK(strstr(buf, "thread=41 1 9 -3 1\nthread=42 3 0 7 0\n") != NULL);
	CHECK(qos_journal_parse(buf, n, &out) && out.n_threads == 2);
	CHECK(out.threads[0].tid == 41 && out.threads[0].policy == 1 && out.threads[0].priority == 9 &&
			out.threads[0].nice == -3 && out.threads[0].reset_on_fork);
	CHECK(out.threads[1].tid == 42 && out.threads[1].policy == 3 && out.threads[1].nice == 7);
	in.n_threads = 0;
	/* A buffer too small gives nothing rather than a cut record. */
	CHECK_EQ_U(qos_journal_format(&in, buf, 40), 0);
	/* Pure cgroup v2 has no v1 cpu path; hybrid tasks may lack one too. */
	in.cpu[0] = '\0';
	n = qos_journal_format(&in, buf, sizeof(buf));
	CHECK(qos_journal_parse(buf, n, &out) && out.cpu[0] == '\0');
}

#define GOOD "qosway-journal 1\nstart=5\nnice=19\nrttime=inf inf\nv2=/a\ncpu=/b\n"

static void test_accepts(void) {
	struct qos_journal_entry e;
	CHECK(parse(GOOD, &e) && e.nice == 19 && e.start_time == 5);
	CHECK(parse("qosway-journal 1\ncpu=/b\nv2=/a\nrttime=1 2\nnice=-20\nstart=5\n", &e));
	CHECK(e.nice == -20 && e.rt_soft == 1 && e.rt_hard == 2);
	/* Keys a later version adds are skipped. */
	CHECK(parse(GOOD "policy=fifo\n", &e));
	/* A record from before sched= was written: plain time-sharing. */
	CHECK(parse(GOOD, &e) && e.policy == 0 && e.priority == 0 && !e.reset_on_fork);
	CHECK(parse(GOOD "sched=1 10 1\n", &e) && e.policy == 1 && e.priority == 10 && e.reset_on_fork);
	CHECK(parse(GOOD "sched=3 0 0\n", &e) && e.policy == 3);
	CHECK(parse(GOOD "sched=5 0 0\n", &e) && e.policy == 5);
	CHECK(parse(GOOD, &e) && e.n_threads == 0);
	/* Lines past the cap are skipped, not taken for damage. */
	static char many[8192];
	int len = snprintf(many, sizeof(many), "%s", GOOD);
	for (int i = 0; i < QOS_JOURNAL_THREADS + 3; i++) {
		len += snprintf(many + len, sizeof(many) - (size_t)len, "thread=%d 0 0 %d 0\n", 100 + i,
				i % 20);
	}
	CHECK(parse(many, &e) && e.n_threads == QOS_JOURNAL_THREADS);
	CHECK(e.threads[QOS_JOURNAL_THREADS - 1].tid == 100 + QOS_JOURNAL_THREADS - 1);
	CHECK(parse("qosway-journal 1\nstart=5\nnice=0\nrttime=0 0\nv2=/a/...b/.c\ncpu=\n", &e));
	CHECK_STR(e.v2, "/a/...b/.c");
}

static void test_rejects(void) {
	struct qos_journal_entry e = { .nice = 3 };
	const char *bad[] = {
		"",
		"qosway-journal 2\nstart=5\nnice=0\nrttime=inf inf\nv2=/a\ncpu=/b\n",
		"start=5\nnice=0\nrttime=inf inf\nv2=/a\ncpu=/b\n",
		/* each key missing in turn */
		"qosway-journal 1\nnice=0\nrttime=inf inf\nv2=/a\ncpu=/b\n",
		"qosway-journal 1\nstart=5\nrttime=inf inf\nv2=/a\ncpu=/b\n",
		"qosway-journal 1\nstart=5\nnice=0\nv2=/a\ncpu=/b\n",
		"qosway-journal 1\nstart=5\nnice=0\nrttime=inf inf\ncpu=/b\n",
		"qosway-journal 1\nstart=5\nnice=0\nrttime=inf inf\nv2=/a\n",
		/* cut short: the last line has no newline */
		"qosway-journal 1\nstart=5\nnice=0\nrttime=inf inf\nv2=/a\ncpu=/b",
		/* repeated key */
		GOOD "nice=1\n",
		/* numbers */
		"qosway-journal 1\nstart=0\nnice=0\nrttime=inf inf\nv2=/a\ncpu=/b\n",
		"qosway-journal 1\nstart=-5\nnice=0\nrttime=inf inf\nv2=/a\ncpu=/b\n",
		"qosway-journal 1\nstart=99999999999999999999\nnice=0\nrttime=inf inf\nv2=/a\ncpu=/b\n",
		"qosway-journal 1\nstart=5x\nnice=0\nrttime=inf inf\nv2=/a\ncpu=/b\n",
		"qosway-journal 1\nstart=5\nnice=20\nrttime=inf inf\nv2=/a\ncpu=/b\n",
		"qosway-journal 1\nstart=5\nnice=-21\nrttime=inf inf\nv2=/a\ncpu=/b\n",
		"qosway-journal 1\nstart=5\nnice=-\nrttime=inf inf\nv2=/a\ncpu=/b\n",
		"qosway-journal 1\nstart=5\nnice=0\nrttime=5\nv2=/a\ncpu=/b\n",
		"qosway-journal 1\nstart=5\nnice=0\nrttime=9 5\nv2=/a\ncpu=/b\n",
		"qosway-journal 1\nstart=5\nnice=0\nrttime=inf 5\nv2=/a\ncpu=/b\n",
		"qosway-journal 1\nstart=5\nnice=0\nrttime=infinity inf\nv2=/a\ncpu=/b\n",
		/* paths: absolute, and never out of the tree */
		"qosway-journal 1\nstart=5\nnice=0\nrttime=inf inf\nv2=\ncpu=/b\n",
		"qosway-journal 1\nstart=5\nnice=0\nrttime=inf inf\nv2=a\ncpu=/b\n",
		"qosway-journal 1\nstart=5\nnice=0\nrttime=inf inf\nv2=/a/../../etc\ncpu=/b\n",
		"qosway-journal 1\nstart=5\nnice=0\nrttime=inf inf\nv2=/a\ncpu=/..\n",
		"qosway-journal 1\nstart=5\nnice=0\nrttime=inf inf\nv2=/./a\ncpu=/b\n",
		"qosway-journal 1\nstart=5\nnice=0\nrttime=inf inf\nv2=/a\ncpu=b\n",
		/* classes that cannot be given back, or out of range */
		GOOD "sched=6 0 0\n",
		GOOD "sched=4 0 0\n",
		GOOD "sched=1 0 0\n",
		GOOD "sched=1 100 0\n",
		GOOD "sched=0 5 0\n",
		GOOD "sched=0 0 2\n",
		GOOD "sched=0 0\n",
		GOOD "sched=0 0 0 0\n",
		GOOD "sched=0 0 0\nsched=0 0 0\n",
		GOOD "thread=0 0 0 0 0\n",
		GOOD "thread=5 0 0 20 0\n",
		GOOD "thread=5 0 0 -21 0\n",
		GOOD "thread=5 4 0 0 0\n",
		GOOD "thread=5 1 0 0 0\n",
		GOOD "thread=5 0 0 0\n",
		GOOD "thread=5 0 0 0 0 0\n",
		GOOD "thread=-5 0 0 0 0\n",
		GOOD "thread=5 0 0 - 0\n",
		/* a line that is no key=value */
		"qosway-journal 1\nstart=5\nnice=0\ngarbage\nrttime=inf inf\nv2=/a\ncpu=/b\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parse(bad[i], &e)) {
			fprintf(stderr, "accepted bad record %zu:\n%s\n", i, bad[i]);
			check_failures++;
		}
	}
	/* A refused record leaves the output alone. */
	CHECK(e.nice == 3);
	/* An embedded NUL is no path character. */
	const char nul[] = "qosway-journal 1\nstart=5\nnice=0\nrttime=inf inf\nv2=/a\0b\ncpu=/b\n";
	CHECK(!qos_journal_parse(nul, sizeof(nul) - 1, &e));
	/* A path as long as the buffer does not fit. */
	char *big = malloc(3 * QOS_CG_REL_PATH);
	int n = snprintf(big, 3 * QOS_CG_REL_PATH,
			"qosway-journal 1\nstart=5\nnice=0\n"
			"rttime=inf inf\ncpu=/b\nv2=/");
	memset(big + n, 'x', QOS_CG_REL_PATH);
	snprintf(big + n + QOS_CG_REL_PATH, 3, "\n");
	CHECK(!parse(big, &e));
	free(big);
}

int main(void) {
	test_round_trip();
	test_accepts();
	test_rejects();
	return check_report("test_journal");
}
