/*
 * What the libFuzzer harnesses share: a check of a documented rule that
 * aborts (so libFuzzer keeps the input as a crash) and the input as a
 * NUL-terminated string.
 */
#ifndef QOSWAY_FUZZ_H
#define QOSWAY_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* A rule the code documents does not hold for this input: a finding. */
#define FUZZ_RULE(cond, ...)                                                        \
	do {                                                                            \
		if (!(cond)) {                                                              \
			fprintf(stderr, "%s:%d: rule broken: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                                           \
			fputc('\n', stderr);                                                    \
			abort();                                                                \
		}                                                                           \
	} while (0)

/* data as a C string cut at its first NUL (malloc'd; NULL without memory). */
static inline char *fuzz_string(const uint8_t *data, size_t size) {
	char *s = malloc(size + 1);
	if (s) {
		memcpy(s, data, size);
		s[size] = '\0';
	}
	return s;
}

/*
 * Messages meant for a user go to /dev/null between these two, or a run
 * would write gigabytes; a crash in between is still kept by libFuzzer.
 */
struct fuzz_quiet {
	int out, err;
};

static inline struct fuzz_quiet fuzz_quiet_begin(void) {
	static int null_fd = -1;
	if (null_fd < 0) {
		null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	}
	fflush(stdout);
	fflush(stderr);
	struct fuzz_quiet q = { dup(1), dup(2) };
	dup2(null_fd, 1);
	dup2(null_fd, 2);
	return q;
}

static inline void fuzz_quiet_end(struct fuzz_quiet q) {
	fflush(stdout);
	fflush(stderr);
	dup2(q.out, 1);
	dup2(q.err, 2);
	close(q.out);
	close(q.err);
}

#endif
