/*
 * qos/sys.c helpers: whether a kept tid still names a thread of the member's
 * process, thread counts, and (as root) the deadline state read from
 * /proc/TID/sched.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "qos/sys.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static pid_t thread_tid;
static int stop;

static void *thread_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	thread_tid = gettid();
	pthread_cond_broadcast(&cond);
	while (!stop)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	return NULL;
}

static void test_thread_in_process(void)
{
	pthread_t th;
	CHECK(pthread_create(&th, NULL, thread_main, NULL) == 0);
	pthread_mutex_lock(&lock);
	while (!thread_tid)
		pthread_cond_wait(&cond, &lock);
	pid_t tid = thread_tid;
	pthread_mutex_unlock(&lock);

	pid_t child = fork();
	CHECK(child >= 0);
	if (child == 0) {
		pause();
		_exit(0);
	}
	pid_t self = getpid();
	/* Counting alone (no callback): this thread and the one above. */
	CHECK(qos_sys_for_each_thread(self, NULL, NULL) == 2);
	CHECK(qos_sys_for_each_thread(child, NULL, NULL) == 1);
	CHECK(qos_sys_thread_in_process(self, self));
	CHECK(qos_sys_thread_in_process(self, tid));
	/* A tid that is now another process's thread is not ours. */
	CHECK(!qos_sys_thread_in_process(self, child));
	CHECK(!qos_sys_thread_in_process(child, tid));

	pthread_mutex_lock(&lock);
	stop = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	pthread_join(th, NULL);
	/* Gone: nothing to act on. */
	CHECK(!qos_sys_thread_in_process(self, tid));
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}

/*
 * The CPU time taken from /proc/TID/sched with the deadline state is the
 * counter schedstat shows (ms with six decimals there, ns here).
 */
static int dl_state_child(void)
{
	pid_t tid = gettid();
	if (qos_sys_set_thread_policy(tid, QOS_POLICY_QOS, 0, 0, 5000000, 10000000) != 0)
		return 2;
	uint64_t before = 0, after = 0, cpu = 0;
	int64_t runtime = 0, deadline = 0;
	if (!qos_sys_thread_cpu_ns(tid, &before))
		return 3;
	while (after < before + 20000000u) /* 20 ms, through several replenishments */
		if (!qos_sys_thread_cpu_ns(tid, &after))
			return 3;
	if (!qos_sys_thread_dl_state(tid, &runtime, &deadline, &cpu))
		return 4;
	uint64_t later = 0;
	if (!qos_sys_thread_cpu_ns(tid, &later))
		return 3;
	if (cpu < after || cpu > later)
		return 5;
	if (runtime > 5000000 || deadline <= 0)
		return 6;
	/* Without cpu_ns the same read still gives the deadline state. */
	return qos_sys_thread_dl_state(tid, &runtime, &deadline, NULL) ? 0 : 7;
}

static void test_dl_state(void)
{
	if (geteuid() != 0) {
		printf("test_dl_state: skipped: SCHED_DEADLINE needs root\n");
		return;
	}
	/* A thread that is not SCHED_DEADLINE shows no deadline state. */
	int64_t runtime, deadline;
	uint64_t cpu;
	CHECK(!qos_sys_thread_dl_state(gettid(), &runtime, &deadline, &cpu));
	pid_t child = fork();
	CHECK(child >= 0);
	if (child == 0)
		_exit(dl_state_child());
	int status = 0;
	CHECK(waitpid(child, &status, 0) == child);
	CHECK(WIFEXITED(status));
	CHECK_EQ_U(WEXITSTATUS(status), 0);
}

int main(void)
{
	test_thread_in_process();
	test_dl_state();
	return check_report("test_sys");
}
