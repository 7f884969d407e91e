/*
 * Seeded input mutation shared by the C fuzz tests (tests/unit/qos/test_fuzz.c,
 * tests/unit/compositor/test_config.c): a deterministic generator, edits drawn from a
 * dictionary of the tokens our parsers treat specially, and a way to print
 * the input that broke something.
 */
#ifndef QOS_TEST_MUTATE_H
#define QOS_TEST_MUTATE_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

#define TEXT_MAX 4096

static uint64_t rng_state;

static inline uint64_t rnd(void) {
	/* xorshift64*: deterministic for a seed, good enough to pick mutations. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1DULL;
}

static inline size_t below(size_t n) {
	return n ? (size_t)(rnd() % n) : 0;
}

static inline void print_escaped(const char *what, const char *s, size_t len) {
	fprintf(stderr, "%s: \"", what);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\n') {
			{ fputs("\\n", stderr); }
		} else if (c == '"' || c == '\\') {
			{ fprintf(stderr, "\\%c", c); }
		} else if (c < 0x20 || c >= 0x7f) {
			{ fprintf(stderr, "\\x%02x", c); }
		} else {
			{ fputc(c, stderr); }
		}
	}
	fputs("\"\n", stderr);
}

/* Stops after the first failing input: one escaped input is enough to debug. */
static inline bool failed_before(int before, const char *what, const char *input, size_t len,
		uint64_t seed, int iteration) {
	if (check_failures == before) {
		{ return false; }
	}
	fprintf(stderr, "seed %" PRIu64 ", iteration %d\n", seed, iteration);
	print_escaped(what, input, len);
	return true;
}

static const char *const dictionary[] = {
	"policy=",
	"fallback=",
	"period=",
	"slice=",
	"cpu=",
	"nice=",
	"priority=",
	"reserve=",
	"auto=",
	"inherit=",
	"allow=",
	"max-cpu=",
	"redefine=",
	"exe=",
	"cmdline=",
	"app_id=",
	"reserve ",
	"rule ",
	"\"",
	"\\\"",
	"\\",
	"=",
	"==",
	"#",
	" ",
	"\t",
	"\r",
	"\n",
	"%",
	"99999999999999999999999",
	"-2147483649",
	"18446744073709551616",
	"4294967296",
	"1e308",
	"1e-400",
	"0x10",
	"nan",
	"inf",
	"1.",
	".5",
	"ms",
	"us",
	"s",
	"qos",
	"fifo",
	"rr",
	"idle",
	"pause",
	"other",
	"auto-",
	".",
	"..",
	"/",
	"*",
	"?",
	"[",
	"]",
	"yes",
	"no",
	",",
	"\x01",
	"\x1b[2J",
	"\x7f",
	"\xc3\xa9",
	"\xff",
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	/* the compositor's config */
	"output-mode ",
	"x",
	"@",
	"Hz",
	"bind ",
	"Super+",
	"Shift+",
	"+",
	"exec ",
	"exit",
	"color ",
	"#",
	"#ffffff",
	"#0000007f",
	"buttons ",
	"close",
	"realtime",
	"titlebar-height ",
	"border-width ",
	"terminal ",
	"font ",
	"realtime-cpu ",
	"qos-reserved ",
	"realtime-period ",
	"realtime-fallback ",
	"realtime-idle-release ",
	"auto",
	"vblank",
	"16384",
	"65",
	"1000",
};
#define N_DICT (sizeof(dictionary) / sizeof(dictionary[0]))

/*
 * Applies one random edit to buf (length *len, capacity TEXT_MAX, NUL kept
 * after it); nul_ok lets a NUL byte in, for input read by length.
 */
static inline void mutate(char *buf, size_t *len, bool nul_ok) {
	size_t at = below(*len + 1);
	switch (rnd() % 4) {
	case 0: /* overwrite a byte */
		if (*len) {
			const char *w = dictionary[below(N_DICT)];
			buf[below(*len)] = rnd() % 2 ? w[0] : (char)(nul_ok ? below(256) : 1 + below(255));
		}
		break;
	case 1: { /* insert a word */
		const char *w = dictionary[below(N_DICT)];
		size_t n = strlen(w);
		if (*len + n < TEXT_MAX) {
			memmove(buf + at + n, buf + at, *len - at + 1);
			memcpy(buf + at, w, n);
			*len += n;
		}
		break;
	}
	case 2: { /* delete a span */
		size_t n = below(*len - at + 1);
		if (n > 16) {
			{ n = 16; }
		}
		memmove(buf + at, buf + at + n, *len - at - n + 1);
		*len -= n;
		break;
	}
	default: { /* copy a span elsewhere */
		if (!*len) {
			{ break; }
		}
		size_t from = below(*len), n = 1 + below(24);
		if (from + n > *len) {
			{ n = *len - from; }
		}
		if (*len + n >= TEXT_MAX) {
			{ break; }
		}
		char span[24];
		memcpy(span, buf + from, n);
		memmove(buf + at + n, buf + at, *len - at + 1);
		memcpy(buf + at, span, n);
		*len += n;
		break;
	}
	}
}

#endif
