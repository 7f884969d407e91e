/*
 * qos-player's command line (clients/qos-player-options.c, --work-steps in
 * qos-player-work.c).  The input is split at NUL bytes into arguments after
 * "qos-player".  Rules checked: a refusal says so (exit status 2) and an
 * acceptance leaves options the player can use: sizes and work within
 * their bounds, a qos request with period 100us to 10s and a slice within
 * it, adaptation bounds within one CPU and in order.
 */
#include <getopt.h>
#include <unistd.h>

#include "fuzz.h"
#include "qos-player.h"

#define MAX_ARGS 32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
	if (size > 2048) {
		return 0;
	}
	char *text = malloc(size + 1);
	if (!text) {
		return 0;
	}
	memcpy(text, data, size);
	text[size] = '\0';
	char *argv[MAX_ARGS + 2] = { "qos-player" };
	int argc = 1;
	for (size_t i = 0; i <= size && argc <= MAX_ARGS; i += strlen(text + i) + 1) {
		argv[argc++] = text + i;
	}
	argv[argc] = NULL;
	struct fuzz_quiet quiet = fuzz_quiet_begin();
	optind = 0; /* getopt starts over */
	struct options opt;
	int code = -1;
	bool ok = player_parse_options(argc, argv, &opt, &code);
	fuzz_quiet_end(quiet);
	if (!ok) {
		FUZZ_RULE(code == 2 || code == EXIT_SUCCESS, "refused with exit status %d", code);
	} else {
		FUZZ_RULE(opt.frames >= 0 && opt.width >= 1 && opt.width <= MAX_DIMENSION &&
						opt.height >= 1 && opt.height <= MAX_DIMENSION && opt.work_usec >= 0 &&
						opt.work_usec <= MAX_WORK_USEC && opt.view_width >= 0 &&
						opt.view_width <= MAX_DIMENSION && opt.view_height >= 0 &&
						opt.view_height <= MAX_DIMENSION,
				"sizes or work out of range");
		FUZZ_RULE(!opt.reserve_qos ||
						(opt.qos_period_us >= 100 && opt.qos_period_us <= 10000000 &&
								opt.qos_slice_us >= 1 && opt.qos_slice_us <= opt.qos_period_us),
				"qos request %u:%u accepted", opt.qos_period_us, opt.qos_slice_us);
		FUZZ_RULE(opt.adapt_min_ppm <= 1000000 && opt.adapt_max_ppm <= 1000000 &&
						(opt.adapt_max_ppm == 0 || opt.adapt_min_ppm <= opt.adapt_max_ppm),
				"adaptation %u..%u ppm accepted", opt.adapt_min_ppm, opt.adapt_max_ppm);
		FUZZ_RULE(opt.n_steps <= MAX_WORK_STEPS, "%zu work steps", opt.n_steps);
		for (size_t i = 0; i < opt.n_steps; i++) {
			FUZZ_RULE(opt.steps[i].work_usec >= 0 && opt.steps[i].work_usec <= MAX_WORK_USEC &&
							opt.steps[i].seconds >= 0.001 && opt.steps[i].seconds <= 86400,
					"work step %zu out of range", i);
		}
	}
	free(text);
	return 0;
}
