#include "qos/policy/admission.h"

#include <stdio.h>

void qos_admission_init(struct qos_admission *adm, unsigned ncpus, uint64_t rsvd_ppm) {
	if (rsvd_ppm > 1000000) {
		rsvd_ppm = 1000000;
	}
	*adm = (struct qos_admission){
		.ncpus = ncpus ? ncpus : 1,
		.rsvd_ppm = rsvd_ppm,
	};
}

uint64_t qos_admission_capacity_ppm(const struct qos_admission *adm) {
	return (uint64_t)adm->ncpus * (1000000u - adm->rsvd_ppm);
}

static void refuse(const struct qos_admission *adm, uint64_t need, char *reason, size_t len) {
	uint64_t cap = qos_admission_capacity_ppm(adm);
	uint64_t left = cap > adm->granted_ppm ? cap - adm->granted_ppm : 0;
	snprintf(reason, len,
			"needs %.1f%% of a CPU but only %.1f%% of the %.1f%% reservable "
			"(%u CPUs, %.0f%% kept back) is left",
			need / 1e4, left / 1e4, cap / 1e4, adm->ncpus, adm->rsvd_ppm / 1e4);
}

bool qos_admission_request(struct qos_admission *adm, uint64_t util_ppm, char *reason,
		size_t reason_len) {
	if (util_ppm > 1000000u * (uint64_t)adm->ncpus ||
			adm->granted_ppm + util_ppm > qos_admission_capacity_ppm(adm)) {
		refuse(adm, util_ppm, reason, reason_len);
		return false;
	}
	adm->granted_ppm += util_ppm;
	return true;
}

bool qos_admission_resize(struct qos_admission *adm, uint64_t old_ppm, uint64_t new_ppm,
		char *reason, size_t reason_len) {
	if (new_ppm <= old_ppm) {
		adm->granted_ppm -= old_ppm - new_ppm;
		return true;
	}
	uint64_t grow = new_ppm - old_ppm;
	if (adm->granted_ppm + grow > qos_admission_capacity_ppm(adm)) {
		refuse(adm, grow, reason, reason_len);
		return false;
	}
	adm->granted_ppm += grow;
	return true;
}

void qos_admission_release(struct qos_admission *adm, uint64_t util_ppm) {
	adm->granted_ppm = util_ppm > adm->granted_ppm ? 0 : adm->granted_ppm - util_ppm;
}
