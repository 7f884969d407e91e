/*
 * qos/kernel/cputimer.h - kernel notifications when a process has used a given
 * amount of CPU time (POSIX CPU-clock timers on member processes).
 *
 * A reserve the manager polices itself (cut to idle, a ceiling the kernel
 * cannot enforce, billed time) would otherwise have to be polled as often as
 * its remaining slice could run out: 50 such reserves at 10 ms cost several
 * percent of a CPU.  Instead the kernel checks a process's CPU clock against
 * an armed threshold at every tick the process runs and queues a signal; the
 * manager sleeps until then.  Accounting stays exact (CPU clocks); only the
 * moment of the switch is tick-granular, like the kernel's own cpu.max, and
 * the overshoot is carried into the next periods (police.h, debt_us).
 *
 * The signal is directed at the thread that opened the notifier
 * (SIGEV_THREAD_ID), blocked there and read through a signalfd, so no handler
 * runs and other threads never see it.
 */
#ifndef QOS_CPUTIMER_H
#define QOS_CPUTIMER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/*
 * Blocks signo in the calling thread and returns a non-blocking signalfd
 * for it, or -1 with errno set.  Timers created later notify this thread.
 */
int qos_cputimer_open(int signo);

/*
 * A timer on the CPU clock of process pid whose expiry queues signo with
 * cookie as its value to the opening thread.  False (errno set) when the
 * process is gone or the kernel refuses.
 */
bool qos_cputimer_create(pid_t pid, int signo, uint32_t cookie, timer_t *out);

/*
 * Fires once the process's CPU clock reaches at_ns (absolute, the clock the
 * timer was created on); 0 disarms.  Returns 0 or a negative errno.
 */
int qos_cputimer_arm(timer_t t, uint64_t at_ns);

/*
 * Re-arms t at rel_ns past the process's CPU clock, and stores in *clock_ns
 * that clock as the kernel read it to arm the timer, which it tells through
 * the old timer's time to go: one system call for a clock read and a re-arm.
 * armed_at_ns is where t was armed before.  False when it had fired, was
 * disarmed or the kernel refused: then *clock_ns is unknown, and t may be
 * armed at a point the caller does not know.
 */
bool qos_cputimer_rearm_after(timer_t t, uint64_t armed_at_ns, uint64_t rel_ns, uint64_t *clock_ns);

void qos_cputimer_delete(timer_t t);

/*
 * Reads up to max queued notifications from the signalfd in one call and
 * stores their cookies (the values given at qos_cputimer_create).  Returns
 * how many; fewer than max means none is left.
 */
size_t qos_cputimer_read(int fd, uint32_t *cookies, size_t max);

#endif
