/*
 * qos/sys.c helpers that need no privileges: whether a kept tid still names
 * a thread of the member's process.
 */
#include <pthread.h>
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

int main(void)
{
	test_thread_in_process();
	return check_report("test_sys");
}
