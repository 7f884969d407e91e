/*
 * qos/params.h - reserve parameters, policy names and value parsing.
 *
 * Include as "qos/params.h" (qos_dep puts the repository root on the include path).
 * Everything here is pure: no kernel access, no allocation.
 */
#ifndef QOS_PARAMS_H
#define QOS_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QOS_NAME_MAX 63 /* bytes, excluding the terminating NUL */
#define QOS_AUTO_PREFIX "auto-"

enum qos_policy {
	QOS_POLICY_OTHER = 0,
	QOS_POLICY_IDLE,
	QOS_POLICY_FIFO,
	QOS_POLICY_RR,
	QOS_POLICY_QOS,
	QOS_POLICY_PAUSE,
};

/*
 * Adaptation (thesis ch. 6).  auto_slice (qosrc cpu=auto): the reserve starts
 * with a provisional slice, measures its members' use (own + billed) over its
 * first periods, then asks admission for a high percentile of it plus a
 * margin.  continuous (adapt=yes): the slice keeps following the measured use
 * (and the work_duration reports, qos_manager_report_work) within
 * [min_ppm, max_ppm] of one CPU per period (0: no bound of its own).
 * Both need a period; neither applies to pause or idle (nothing worth
 * sizing).  cpu=auto without a slice starts at half the period (or at
 * max_ppm when that is less): a generous ceiling, so the measurement sees
 * what the members want rather than what the fallback lets them have.
 */
struct qos_adapt_params {
	bool auto_slice;
	bool continuous;
	uint64_t min_ppm;
	uint64_t max_ppm;
};

/*
 * Scheduling parameters of one reserve (thesis Table 3.1).  period_us and
 * slice_us are a guarantee for QOS_POLICY_QOS and a rate limit for every other
 * policy; both zero means "no limit", in which case the fallback is never used.
 */
struct qos_params {
	enum qos_policy policy;
	enum qos_policy fallback;
	uint64_t period_us;
	uint64_t slice_us;
	int nice; /* -20..19, OTHER and IDLE */
	int priority; /* 1..99, FIFO and RR */
	bool inherit;
	struct qos_adapt_params adapt;
	/*
	 * period=vblank: period_us follows the refresh period of the output
	 * the reserve's window is on, which the embedder passes to
	 * qos_manager_vblank() (it sets the period and phases it; setting it
	 * through qos_reserve_set works too, but does not phase it); until
	 * then period_us holds a 60 Hz frame.  slice_us is a share of each
	 * frame, kept as the period changes.  The refresh period may be
	 * anything from 1ms to 10s, so cpu-min and cpu-max must give at least
	 * 1us of a 1ms period (QOS_VBLANK_SHORTEST_US).
	 */
	bool period_vblank;
	/*
	 * Idle release: a granted qos reserve whose members have not run for
	 * this many periods gives its admitted capacity back, and asks for it
	 * again when one wakes (its fallback if it is no longer free).  0: never.
	 * At most QOS_IDLE_RELEASE_MAX, as in a qosrc line.
	 */
	uint32_t idle_periods;
};

#define QOS_IDLE_RELEASE_MAX 1000000u

/* Defaults for fifo/rr without an explicit limit: the thesis' <safe> reserve. */
#define QOS_SAFE_PERIOD_US 50000u
#define QOS_SAFE_SLICE_US 45000u
/* period=vblank until the embedder's first refresh period: a 60 Hz frame. */
#define QOS_VBLANK_DEFAULT_US 16667u
/* The shortest refresh period a period=vblank reserve may follow (1000 Hz). */
#define QOS_VBLANK_SHORTEST_US 1000u

/* Fills *p with "other, nice 0, no limit, no inherit". */
void qos_params_init(struct qos_params *p);

/*
 * Brings p into canonical form and checks it.  fifo/rr without a limit get the
 * safety limit (90 % of 50 ms, fallback other).  With a limit the fallback
 * must give less than the policy (qos, fifo, rr > other > idle > pause), and
 * pause takes no limit.  Adaptation needs a period and a policy other than
 * idle or pause, bounds need adaptation and must fit the period, and idle
 * release needs qos with a fallback other than pause.  cpu=auto without a
 * slice and period=vblank without a period get their provisional values.
 * Returns false and writes a human-readable reason into err when p cannot
 * be scheduled.
 */
bool qos_params_normalize(struct qos_params *p, char *err, size_t err_len);

/* The parameter a refusal is about, so a file's message can point at its key. */
enum qos_param_key {
	QOS_PARAM_POLICY,
	QOS_PARAM_FALLBACK,
	QOS_PARAM_PERIOD,
	QOS_PARAM_SLICE,
	QOS_PARAM_NICE,
	QOS_PARAM_PRIORITY,
	QOS_PARAM_AUTO, /* cpu=auto */
	QOS_PARAM_ADAPT, /* adapt= */
	QOS_PARAM_CPU_MIN,
	QOS_PARAM_CPU_MAX,
	QOS_PARAM_IDLE_RELEASE,
};

/* qos_params_normalize, also naming in *key (when not NULL) what was refused. */
bool qos_params_check(struct qos_params *p, enum qos_param_key *key, char *err, size_t err_len);

/* Whether the slice is sized by adaptation (cpu=auto or adapt=yes). */
bool qos_params_adaptive(const struct qos_params *p);

/* True when the reserve carries a period/slice pair. */
bool qos_params_has_limit(const struct qos_params *p);

/*
 * A ceiling (other or idle with fallback pause) the kernel's CFS bandwidth
 * control can hold by itself: it takes quotas of 1 ms and more, in periods
 * of 1 ms to 1 s.  Other ceilings are policed by the manager (freezing).
 */
bool qos_params_kernel_ceiling(const struct qos_params *p);

/* Utilisation in parts per million of one CPU (slice / period). */
uint64_t qos_params_util_ppm(const struct qos_params *p);

const char *qos_policy_name(enum qos_policy policy);
bool qos_policy_from_name(const char *name, enum qos_policy *out);
bool qos_policy_is_rt(enum qos_policy policy);

/*
 * Reserve names: 1..63 bytes of UTF-8, no '/', no control characters, not "."
 * or "..".
 * The "auto-" prefix belongs to automatic reserves; user code must not use it.
 */
bool qos_name_valid(const char *name, char *err, size_t err_len);
/* Whether s is UTF-8 without overlong forms, surrogates or code points past U+10FFFF. */
bool qos_utf8_valid(const char *s);
/*
 * Copies in to out (len bytes with the NUL) with control bytes written as
 * \xNN, for messages that quote a file or a client: an escape sequence must
 * not reach a terminal or a log raw.  What does not fit is cut.
 */
void qos_escape_controls(const char *in, char *out, size_t len);
bool qos_name_is_auto(const char *name);

/*
 * Digits with an optional fraction ("12", "12.5") times 10^shift, rounded
 * half up: exact decimal arithmetic rather than strtod, so "12.5" reads the
 * same under a locale with a decimal comma, and no hex, exponent, sign,
 * "nan" or bare point is taken.  Returns the first byte past the number, or
 * NULL when there is none or it exceeds limit.
 */
const char *qos_parse_decimal(const char *s, unsigned shift, uint64_t limit, uint64_t *out);

/*
 * "20ms", "1.5ms", "500us", "1s"; bare numbers are microseconds.  Digits with
 * an optional fraction, read exactly in any locale and rounded to the
 * microsecond; at most an hour.
 */
bool qos_parse_duration_us(const char *s, uint64_t *out);
/* "30%" or "30" or "12.5%" -> parts per million of one CPU, at most 64 CPUs. */
bool qos_parse_percent_ppm(const char *s, uint64_t *out);
/* "yes"/"no"/"1"/"0"/"true"/"false". */
bool qos_parse_bool(const char *s, bool *out);

/*
 * Writes "policy=qos period=20ms slice=6ms fallback=pause nice=0 inherit=no"
 * into buf: the keys of a qosrc reserve line, which read back to the same
 * parameters.  period, slice and fallback only with a limit, priority only
 * for fifo and rr; cpu=auto, adapt, cpu-min, cpu-max and idle-release only
 * when set (with cpu=auto the slice is the one it starts from), and
 * period=vblank in place of the period it stands for (the slice then as the
 * same share of the 60 Hz frame the key reads back as, as
 * qos_params_vblank_standin gives it).
 */
void qos_params_format(const struct qos_params *p, char *buf, size_t len);

/*
 * A period=vblank reserve at the period its qosrc line reads back as, a
 * 60 Hz frame (QOS_VBLANK_DEFAULT_US), its slice the same share of that
 * (rounded down, at least 1us, as qos_manager_vblank scales it).  Other
 * reserves are left as they are.  Parameters that pass
 * qos_params_normalize still pass it after this.
 */
void qos_params_vblank_standin(struct qos_params *p);

/* Whether a and b are the same parameters, every field (priority only for fifo and rr). */
bool qos_params_equal(const struct qos_params *a, const struct qos_params *b);

/*
 * Whether a reserve's parameters now are still the definition def: the
 * slice adaptation sized, and the period and slice a period=vblank
 * reserve took from its output, are its own doing, not a redefinition.
 */
bool qos_params_as_defined(const struct qos_params *now, const struct qos_params *def);

/* Whether a reserve with params p may freeze its group (pause, or a pause fallback). */
bool qos_params_may_freeze(const struct qos_params *p);

#endif
