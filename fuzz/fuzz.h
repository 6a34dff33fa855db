/* fuzz.h — shared helpers of the fuzz targets (fuzz/fuzz_*.c).
 *
 * Each target defines LLVMFuzzerTestOneInput. It is linked either with
 * libFuzzer (clang, -Dfuzzing=true) or with replay.c, a plain main() that
 * runs every file of a corpus directory through it (the regression tests).
 * A target returns 0 for every input; a broken invariant aborts (which
 * libFuzzer and the replay tests both report as a failure).
 */
#ifndef SB_FUZZ_H
#define SB_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts with a message when cond is false: an invariant the code under
 * test promises was broken. */
#define FUZZ_CHECK(cond, msg)                                                  \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: invariant broken: %s (%s)\n",  \
				__FILE__, __LINE__, msg, #cond);               \
			abort();                                               \
		}                                                              \
	} while (0)

/* New NUL-terminated malloc'd copy of data (NULL on allocation failure). */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (s) {
		if (size)
			memcpy(s, data, size);
		s[size] = '\0';
	}
	return s;
}

/* FNV-1a of the input: derives per-input choices (piece sizes, limits)
 * without taking bytes away from the text the corpus files hold. */
static inline uint64_t fuzz_hash(const uint8_t *data, size_t size)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < size; i++) {
		h ^= data[i];
		h *= 1099511628211ULL;
	}
	return h;
}

/* splitmix64 step: a small deterministic generator seeded from the input. */
static inline uint64_t fuzz_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Running hash of a byte range (for comparing event sequences). */
static inline uint64_t fuzz_mix(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 1099511628211ULL;
	}
	h ^= n;
	h *= 1099511628211ULL;
	return h;
}

#endif
