/* qos-player's command line. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qos-player.h"

static void usage(FILE *f) {
	fprintf(f,
			"Usage: qos-player [options]\n"
			"Plays full-damage shm frames paced by frame callbacks, like a video player.\n"
			"\n"
			"  -n FRAMES   frames to play, 0 = until SIGINT/SIGTERM or close (default 300)\n"
			"  -W WIDTH    buffer width in pixels (default 640)\n"
			"  -H HEIGHT   buffer height in pixels (default 480)\n"
			"  -V WxH      show the buffer scaled to W x H through wp_viewporter; the\n"
			"              window is then W x H (without the global: unscaled)\n"
			"  -u USEC     CPU time spent \"decoding\" each frame, in microseconds (default 0)\n"
			"  -t TITLE    window title (default \"qos-player\")\n"
			"  -a APP_ID   xdg app_id (default \"qos-player\")\n"
			"  -p          count presentation-time feedback (presented/discarded)\n"
			"  -r NAME     join the process to reserve NAME (qosway-reserve-v1)\n"
			"  -q PERIOD_US:SLICE_US[:FALLBACK]\n"
			"              ask for a qos reserve: SLICE_US of CPU every PERIOD_US,\n"
			"              FALLBACK (other, idle, ...; default other) beyond it; on\n"
			"              the automatic reserve, or on NAME with -r\n"
			"  --adapt[=MIN:MAX]\n"
			"              with -q: the slice follows the measured use and the work\n"
			"              reports, within MIN..MAX percent of one CPU (default: no\n"
			"              bounds of its own; qosway-reserve-v1 version 2)\n"
			"  --cpu-auto  with -q: the first slice is sized from the measured use\n"
			"  --period vblank|fixed\n"
			"              with -q: periods follow the refresh of the window's output\n"
			"              (-q's period stands in until the first vblank)\n"
			"  --report-work\n"
			"              after each frame, report its work time (work_duration)\n"
			"  --work-steps WORK@DURATION[,...]\n"
			"              per-frame work over time instead of -u, e.g.\n"
			"              2ms@5s,6ms@5s,3ms@5s; the run ends with the last step,\n"
			"              or after -n frames (not 0) if that comes first\n"
			"  -h, --help  show this help\n"
			"\n"
			"The reserve's result (granted/refused) goes to stderr; without the\n"
			"qosway_reserve_manager_v1 global (sway, weston) the player just plays.\n"
			"On exit prints one JSON line on stdout:\n"
			"  {\"frames\":N,\"elapsed_s\":S,\"fps\":F,\"worst_gap_ms\":G,\n"
			"   \"presented\":P,\"discarded\":D,\"cpu_s\":C,\"reserve\":R,\n"
			"   \"missed\":M,\"work_reports\":W[,\"steps\":[...]]}\n"
			"frames counts completed frame callbacks; worst_gap_ms is the longest\n"
			"interval between two of them; presented/discarded are null without -p;\n"
			"reserve is null without -r/-q, else \"granted\", \"refused:REASON\",\n"
			"\"pending\" (no answer yet) or \"unsupported\".\n"
			"missed counts refresh intervals between two frame callbacks beyond the\n"
			"first (the refresh from -p's feedback or a vblank period, else 60 Hz);\n"
			"work_reports is null without --report-work; steps has, per step of\n"
			"--work-steps, work_us, seconds, frames, missed and worst_gap_ms.\n"
			"SIGUSR1 restarts the statistics window (used by benchmarks).\n");
}

/*
 * Decimal digits and nothing before them: strtol and strtoul skip blanks
 * and take a sign, so " -5" read as -5, or wrapped to a huge value.  The
 * value is capped at LONG_MAX; returns the byte past the digits, or NULL
 * when s does not start with one.
 */
static const char *parse_digits(const char *s, long *out) {
	if (*s < '0' || *s > '9') {
		return NULL;
	}
	long v = 0;
	for (; *s >= '0' && *s <= '9'; s++) {
		int d = *s - '0';
		v = v > (LONG_MAX - d) / 10 ? LONG_MAX : v * 10 + d;
	}
	*out = v;
	return s;
}

static bool parse_long(const char *arg, char opt, long min, long max, long *out) {
	long v;
	const char *end = parse_digits(arg, &v);
	if (!end || *end != '\0') {
		fprintf(stderr, "qos-player: -%c: '%s' is not a whole number\n", opt, arg);
		return false;
	}
	if (v < min || v > max) {
		fprintf(stderr, "qos-player: -%c: %ld is out of range [%ld, %ld]\n", opt, v, min, max);
		return false;
	}
	*out = v;
	return true;
}

/* -V WIDTHxHEIGHT: a wp_viewport destination, both sides within 1..MAX_DIMENSION. */
static bool parse_view_size(const char *arg, struct options *opt) {
	const char *x = strchr(arg, 'x');
	if (x == NULL || x == arg || x[1] == '\0') {
		goto bad;
	}
	long size[2];
	const char *part[2] = { arg, x + 1 };
	for (int i = 0; i < 2; i++) {
		const char *end = parse_digits(part[i], &size[i]);
		if (!end || end != (i == 0 ? x : part[i] + strlen(part[i]))) {
			goto bad;
		}
	}
	if (size[0] < 1 || size[0] > MAX_DIMENSION || size[1] < 1 || size[1] > MAX_DIMENSION) {
		fprintf(stderr, "qos-player: -V: '%s': width and height must be 1 to %d\n", arg,
				MAX_DIMENSION);
		return false;
	}
	opt->view_width = (int)size[0];
	opt->view_height = (int)size[1];
	return true;
bad:
	fprintf(stderr, "qos-player: -V: '%s' is not WIDTHxHEIGHT (e.g. 1800x1000)\n", arg);
	return false;
}

/* -q PERIOD_US:SLICE_US[:FALLBACK], checked like the compositor would. */
static bool parse_qos(const char *arg, struct options *opt) {
	long period, slice;
	const char *end = parse_digits(arg, &period);
	if (!end || *end != ':') {
		goto bad;
	}
	end = parse_digits(end + 1, &slice);
	if (!end || (*end != ':' && *end != '\0')) {
		goto bad;
	}
	uint32_t fallback = 0;
	if (*end == ':') {
		const char *fb = end + 1;
		if (!player_policy_from_name(fb, &fallback)) {
			fprintf(stderr,
					"qos-player: -q: unknown fallback '%s' (other, idle, "
					"pause, qos, fifo or rr)\n",
					fb);
			return false;
		}
	}
	if (period < 100 || period > 10000000 || slice < 1 || slice > period) {
		fprintf(stderr,
				"qos-player: -q: the period must be 100 to 10000000 us "
				"and the slice 1 us to the period\n");
		return false;
	}
	opt->reserve_qos = true;
	opt->qos_period_us = (uint32_t)period;
	opt->qos_slice_us = (uint32_t)slice;
	opt->qos_fallback = fallback;
	return true;
bad:
	fprintf(stderr, "qos-player: -q: '%s' is not PERIOD_US:SLICE_US[:FALLBACK]\n", arg);
	return false;
}

/* --adapt=MIN:MAX, whole percents of one CPU; MAX 0 for no upper bound. */
static bool parse_adapt(const char *arg, struct options *opt) {
	opt->adapt = true;
	if (arg == NULL) {
		return true;
	}
	long min, max;
	const char *end = parse_digits(arg, &min);
	if (!end || *end != ':' || !(end = parse_digits(end + 1, &max)) || *end != '\0') {
		goto bad;
	}
	if (min > 100 || max > 100 || (max != 0 && min > max)) {
		fprintf(stderr,
				"qos-player: --adapt: MIN and MAX are 0 to 100 percent, MIN not over MAX "
				"(MAX 0: no upper bound)\n");
		return false;
	}
	opt->adapt_min_ppm = (uint32_t)min * 10000;
	opt->adapt_max_ppm = (uint32_t)max * 10000;
	return true;
bad:
	fprintf(stderr, "qos-player: --adapt: '%s' is not MIN:MAX in percent (e.g. 5:40)\n", arg);
	return false;
}

/* What the version 2 options need: a qos request to apply to. */
static bool check_v2(const struct options *opt) {
	const char *alone = opt->reserve_qos ? NULL
			: opt->adapt                 ? "--adapt"
			: opt->cpu_auto              ? "--cpu-auto"
			: opt->period_vblank         ? "--period vblank"
										 : NULL;
	if (alone) {
		fprintf(stderr, "qos-player: %s needs -q PERIOD_US:SLICE_US\n", alone);
		return false;
	}
	if (opt->report_work && !opt->reserve_qos && opt->reserve_name == NULL) {
		fprintf(stderr, "qos-player: --report-work needs a reserve (-q or -r)\n");
		return false;
	}
	return true;
}

enum long_only {
	OPT_ADAPT = 256,
	OPT_CPU_AUTO,
	OPT_PERIOD,
	OPT_REPORT_WORK,
	OPT_WORK_STEPS,
};

static const struct option long_options[] = {
	{ "adapt", optional_argument, NULL, OPT_ADAPT },
	{ "cpu-auto", no_argument, NULL, OPT_CPU_AUTO },
	{ "period", required_argument, NULL, OPT_PERIOD },
	{ "report-work", no_argument, NULL, OPT_REPORT_WORK },
	{ "work-steps", required_argument, NULL, OPT_WORK_STEPS },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* -r: the name becomes a cgroup directory of the compositor's. */
static bool parse_reserve_name(const char *arg, struct options *opt) {
	size_t len = strlen(arg);
	bool ok = len >= 1 && len <= 63 && arg[0] != '.';
	for (size_t i = 0; ok && i < len; i++) {
		unsigned char ch = (unsigned char)arg[i];
		ok = ch != '/' && ch >= 0x20 && ch != 0x7f;
	}
	if (!ok) {
		fprintf(stderr,
				"qos-player: -r: a reserve name is 1 to 63 bytes, "
				"not starting with '.', without '/' or control characters\n");
		return false;
	}
	opt->reserve_name = arg;
	return true;
}

/* getopt_long's complaint c (':' missing argument, else unknown option). */
static void report_bad_option(int c, char *argv[]) {
	if (c == ':') {
		if (optopt >= OPT_ADAPT) {
			fprintf(stderr, "qos-player: %s needs an argument\n", argv[optind - 1]);
		} else {
			fprintf(stderr, "qos-player: -%c needs an argument\n", optopt);
		}
	} else if (optopt) {
		fprintf(stderr, "qos-player: unknown option -%c\n", optopt);
	} else {
		fprintf(stderr, "qos-player: unknown option '%s'\n", argv[optind - 1]);
	}
}

/* Option c (with optarg) into opt; false after saying what was wrong. */
static bool parse_option(int c, char *argv[], struct options *opt) {
	long v;
	switch (c) {
	case 'n':
		if (!parse_long(optarg, 'n', 0, LONG_MAX, &opt->frames)) {
			return false;
		}
		opt->frames_given = true;
		return true;
	case OPT_ADAPT:
		return parse_adapt(optarg, opt);
	case OPT_CPU_AUTO:
		opt->cpu_auto = true;
		return true;
	case OPT_PERIOD:
		if (strcmp(optarg, "vblank") != 0 && strcmp(optarg, "fixed") != 0) {
			fprintf(stderr, "qos-player: --period: '%s' is not vblank or fixed\n", optarg);
			return false;
		}
		opt->period_vblank = strcmp(optarg, "vblank") == 0;
		return true;
	case OPT_REPORT_WORK:
		opt->report_work = true;
		return true;
	case OPT_WORK_STEPS:
		return player_parse_work_steps(optarg, opt);
	case 'W':
		if (!parse_long(optarg, 'W', 1, MAX_DIMENSION, &v)) {
			return false;
		}
		opt->width = (int)v;
		return true;
	case 'H':
		if (!parse_long(optarg, 'H', 1, MAX_DIMENSION, &v)) {
			return false;
		}
		opt->height = (int)v;
		return true;
	case 'V':
		return parse_view_size(optarg, opt);
	case 'u':
		return parse_long(optarg, 'u', 0, MAX_WORK_USEC, &opt->work_usec);
	case 't':
		opt->title = optarg;
		return true;
	case 'a':
		opt->app_id = optarg;
		return true;
	case 'p':
		opt->presentation = true;
		return true;
	case 'r':
		return parse_reserve_name(optarg, opt);
	case 'q':
		return parse_qos(optarg, opt);
	default:
		report_bad_option(c, argv);
		return false;
	}
}

bool player_parse_options(int argc, char *argv[], struct options *opt, int *exit_code) {
	int c;
	*opt = (struct options){
		.frames = 300,
		.width = 640,
		.height = 480,
		.work_usec = 0,
		.title = "qos-player",
		.app_id = "qos-player",
		.presentation = false,
	};
	while ((c = getopt_long(argc, argv, ":n:W:H:V:u:t:a:pr:q:h", long_options, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			*exit_code = EXIT_SUCCESS;
			return false;
		}
		if (!parse_option(c, argv, opt)) {
			goto bad;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "qos-player: unexpected argument '%s'\n", argv[optind]);
		goto bad;
	}
	if (!check_v2(opt)) {
		goto bad;
	}
	if (opt->n_steps && !opt->frames_given) {
		/* The schedule says how long to play, not the default count. */
		opt->frames = 0;
	}
	return true;
bad:
	fprintf(stderr, "Try 'qos-player -h' for help.\n");
	*exit_code = 2;
	return false;
}
