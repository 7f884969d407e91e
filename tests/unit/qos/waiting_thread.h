/*
 * A thread that only waits, for the C tests that look at a live thread of
 * their own (tests/unit/qos/test_sys.c, test_proc.c): start_thread() returns its
 * tid once it runs, stop_thread() ends and joins it.  One at a time.
 */
#ifndef QOS_TEST_WAITING_THREAD_H
#define QOS_TEST_WAITING_THREAD_H

#include <pthread.h>
#include <sys/types.h>
#include <unistd.h>

#include "check.h"

static pthread_mutex_t waiting_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t waiting_cond = PTHREAD_COND_INITIALIZER;
static pid_t waiting_tid;
static int waiting_stop;

static void *waiting_main(void *arg) {
	(void)arg;
	pthread_mutex_lock(&waiting_lock);
	waiting_tid = gettid();
	pthread_cond_broadcast(&waiting_cond);
	while (!waiting_stop) {
		pthread_cond_wait(&waiting_cond, &waiting_lock);
	}
	pthread_mutex_unlock(&waiting_lock);
	return NULL;
}

/* Starts a thread that waits until stop_thread(); returns its tid. */
static inline pid_t start_thread(pthread_t *th) {
	waiting_stop = 0;
	waiting_tid = 0;
	CHECK(pthread_create(th, NULL, waiting_main, NULL) == 0);
	pthread_mutex_lock(&waiting_lock);
	while (!waiting_tid) {
		pthread_cond_wait(&waiting_cond, &waiting_lock);
	}
	pid_t tid = waiting_tid;
	pthread_mutex_unlock(&waiting_lock);
	return tid;
}

static inline void stop_thread(pthread_t th) {
	pthread_mutex_lock(&waiting_lock);
	waiting_stop = 1;
	pthread_cond_broadcast(&waiting_cond);
	pthread_mutex_unlock(&waiting_lock);
	pthread_join(th, NULL);
}

#endif
