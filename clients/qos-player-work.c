/*
 * qos-player's work schedule (--work-steps) and frame accounting: per-frame
 * busy work that steps over time, so a benchmark sees how a reserve (and
 * its adaptation) follows a load that changes, and how many refresh
 * intervals were missed in each step.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qos-player.h"

/* "2ms", "500us", "1.5s": microseconds; false if it is none of these. */
static bool parse_duration_us(const char *s, size_t len, double *us) {
	char buf[32];
	if (len == 0 || len >= sizeof(buf)) {
		return false;
	}
	memcpy(buf, s, len);
	buf[len] = '\0';
	/* Digits with an optional fraction, nothing else: strtod alone would
	 * also take blanks, hex and exponents (" 2ms", "0x10ms", "1e3us"). */
	size_t digits = strspn(buf, "0123456789");
	size_t fraction = buf[digits] == '.' ? strspn(buf + digits + 1, "0123456789") : 0;
	if (digits == 0 || (buf[digits] == '.' && fraction == 0)) {
		return false;
	}
	char *end;
	errno = 0;
	double v = strtod(buf, &end);
	if (errno != 0 || end != buf + digits + (fraction ? fraction + 1 : 0) || !(v >= 0.0)) {
		return false;
	}
	double scale = strcmp(end, "us") == 0 ? 1.0
			: strcmp(end, "ms") == 0      ? 1e3
			: strcmp(end, "s") == 0       ? 1e6
										  : -1.0;
	if (scale < 0.0) {
		return false;
	}
	*us = v * scale;
	return true;
}

bool player_parse_work_steps(const char *arg, struct options *opt) {
	const char *s = arg;
	opt->n_steps = 0;
	while (true) {
		const char *comma = strchr(s, ',');
		size_t len = comma ? (size_t)(comma - s) : strlen(s);
		const char *at = memchr(s, '@', len);
		double work_us, dur_us;
		if (!at || !parse_duration_us(s, (size_t)(at - s), &work_us) ||
				!parse_duration_us(at + 1, len - (size_t)(at + 1 - s), &dur_us)) {
			fprintf(stderr,
					"qos-player: --work-steps: '%.*s' is not WORK@DURATION "
					"(e.g. 2ms@5s)\n",
					(int)len, s);
			return false;
		}
		if (work_us > (double)MAX_WORK_USEC || dur_us < 1e3 || dur_us > 86400e6) {
			fprintf(stderr,
					"qos-player: --work-steps: '%.*s': work is 0 to 1s a frame, "
					"a step 1ms to 1 day\n",
					(int)len, s);
			return false;
		}
		if (opt->n_steps == MAX_WORK_STEPS) {
			fprintf(stderr, "qos-player: --work-steps: at most %d steps\n", MAX_WORK_STEPS);
			return false;
		}
		opt->steps[opt->n_steps++] = (struct work_step){
			.work_usec = lround(work_us),
			.seconds = dur_us / 1e6,
		};
		if (!comma) {
			return true;
		}
		s = comma + 1;
	}
}

int player_work_step(const struct options *opt, double elapsed) {
	double end = 0.0;
	for (size_t i = 0; i < opt->n_steps; i++) {
		end += opt->steps[i].seconds;
		if (elapsed < end) {
			return (int)i;
		}
	}
	return -1;
}

void player_count_frame(struct player *p, double gap, int step) {
	/* A gap of n intervals showed the same frame n times: n - 1 missed. */
	long missed = p->refresh_s > 0.0 ? lround(gap / p->refresh_s) - 1 : 0;
	if (missed < 0) {
		missed = 0;
	}
	p->stats.missed += missed;
	if (step >= 0) {
		struct step_stats *s = &p->stats.steps[step];
		s->frames++;
		s->missed += missed;
		if (gap > s->worst_gap_s) {
			s->worst_gap_s = gap;
		}
	}
}
