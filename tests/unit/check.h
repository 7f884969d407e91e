/* Minimal assertion helpers shared by the C unit tests (tests/unit). */
#ifndef QOS_TEST_CHECK_H
#define QOS_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures;

#define CHECK(cond)                                                                  \
	do {                                                                             \
		if (!(cond)) {                                                               \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			check_failures++;                                                        \
		}                                                                            \
	} while (0)

#define CHECK_EQ_U(a, b)                                                                       \
	do {                                                                                       \
		unsigned long long va_ = (unsigned long long)(a), vb_ = (unsigned long long)(b);       \
		if (va_ != vb_) {                                                                      \
			fprintf(stderr, "%s:%d: %s == %llu, expected %llu\n", __FILE__, __LINE__, #a, va_, \
					vb_);                                                                      \
			check_failures++;                                                                  \
		}                                                                                      \
	} while (0)

#define CHECK_STR(a, b)                                                                       \
	do {                                                                                      \
		const char *sa_ = (a), *sb_ = (b);                                                    \
		if (!sa_ || strcmp(sa_, sb_) != 0) {                                                  \
			fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n", __FILE__, __LINE__, #a, \
					sa_ ? sa_ : "(null)", sb_);                                               \
			check_failures++;                                                                 \
		}                                                                                     \
	} while (0)

static inline int check_report(const char *name) {
	if (check_failures) {
		fprintf(stderr, "%s: %d check(s) failed\n", name, check_failures);
		return 1;
	}
	printf("%s: all checks passed\n", name);
	return 0;
}

#endif
