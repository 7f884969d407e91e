/*
 * qos/policy/admission.h - admission control arithmetic for guaranteed (qos) reserves.
 *
 * Utilisation is counted in parts per million of one CPU.  Capacity is
 * ncpus * (1 - rsvd); contracts are first come, first served and are never
 * revoked to make room for a newcomer (thesis 7.3.1).
 */
#ifndef QOS_ADMISSION_H
#define QOS_ADMISSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QOS_RSVD_DEFAULT_PPM 100000u /* 10 %, the value the thesis settled on */

struct qos_admission {
	unsigned ncpus;
	uint64_t rsvd_ppm; /* share of each CPU kept back from guarantees */
	uint64_t granted_ppm; /* sum of all granted contracts */
};

void qos_admission_init(struct qos_admission *adm, unsigned ncpus, uint64_t rsvd_ppm);
uint64_t qos_admission_capacity_ppm(const struct qos_admission *adm);

/*
 * Tries to grant util_ppm.  On refusal returns false and writes a reason a
 * user can read ("needs 30.0% of a CPU, only 12.5% of 180.0% left") to reason.
 */
bool qos_admission_request(struct qos_admission *adm, uint64_t util_ppm, char *reason,
		size_t reason_len);

/*
 * Grows or shrinks an existing contract in place.  Shrinking always succeeds;
 * growing fails (and leaves the old contract) when the increase does not fit.
 */
bool qos_admission_resize(struct qos_admission *adm, uint64_t old_ppm, uint64_t new_ppm,
		char *reason, size_t reason_len);

void qos_admission_release(struct qos_admission *adm, uint64_t util_ppm);

#endif
