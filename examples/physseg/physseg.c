/*
 * physseg: page-frame-number -> page-struct lookups over "physical segments",
 * the micro-benchmark of the lookup-structure experiment (NetBSD uvm_physseg: static
 * array + binary search versus a red-black tree of segments).
 *
 *   physseg --impl array|rbtree|overhead --lookups N [--segments K] [--seed S]
 *
 * Builds K segments (page frame ranges with holes between them, sizes drawn from
 * --seed), then times N lookups of random page frame numbers drawn with random(3):
 *
 *   array     sorted static array of segments, binary search
 *             (NetBSD's VM_PHYSSEG_STRAT_BSEARCH)
 *   rbtree    balanced red-black tree of segments: glibc's tsearch/tfind, which is
 *             one, searched through a comparison callback as NetBSD's rb_tree(3) is
 *   overhead  the same loop without the lookup (random() and the modulo only):
 *             the original experiment's "dummy run", to subtract from the other two
 *
 * Prints one JSON line on stdout:
 *   {"impl": ..., "lookups": N, "segments": K, "seed": S, "pages": managed page count,
 *    "pfn_span": range drawn from, "hits": lookups that found a page,
 *    "seconds": CLOCK_MONOTONIC time of the lookup loop only,
 *    "ns_per_lookup": seconds / N in ns, "checksum": ...}
 * The checksum folds, in order, the global index of every page found (0 for a frame
 * in a hole), so array and rbtree print the same checksum for the same arguments;
 * overhead folds the drawn frame numbers instead. It is kept below 2^53 so that
 * every JSON reader holds it exactly.
 *
 * Bad arguments: one line on stderr, exit status 2.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <search.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The page structure a lookup returns (its fields are never touched in the loop). */
struct vm_page {
	uint64_t phys_addr;
	uint32_t flags;
	uint32_t wire_count;
};

struct segment {
	uint64_t start;        /* first page frame number */
	uint64_t end;          /* one past the last */
	struct vm_page *pgs;   /* pgs[pfn - start] is the page of pfn */
};

#define MAX_SEGMENTS (1u << 20)
#define MAX_TOTAL_PAGES (1u << 24) /* 64 GiB of 4 KiB pages; the page array stays untouched */
#define CHECKSUM_MASK ((UINT64_C(1) << 53) - 1)

static const char *usage =
	"usage: physseg --impl array|rbtree|overhead --lookups N [--segments K] [--seed S]";

static void die_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "physseg: error: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (%s)\n", usage);
	exit(2);
}

static uint64_t parse_count(const char *name, const char *text, uint64_t min, uint64_t max)
{
	char *end;
	if (text == NULL || *text == '\0' || *text == '-' || *text == '+')
		die_usage("%s needs a whole number", name);
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	if (errno != 0 || *end != '\0')
		die_usage("not an integer: '%s'", text);
	if (v < min || v > max) {
		fprintf(stderr, "physseg: error: %s %llu is out of range [%" PRIu64 ", %" PRIu64 "] (%s)\n",
		        name, v, min, max, usage);
		exit(2);
	}
	return v;
}

/* --- array: binary search over segments sorted by start -------------------------------- */

static struct segment *segs;
static size_t nsegs;

static inline struct segment *find_bsearch(uint64_t pfn)
{
	size_t lo = 0, hi = nsegs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (pfn < segs[mid].start)
			hi = mid;
		else if (pfn >= segs[mid].end)
			lo = mid + 1;
		else
			return &segs[mid];
	}
	return NULL;
}

/* --- rbtree: glibc's red-black tree of segments ----------------------------------------- */

static void *tree_root;

/* Segments never overlap, so "a lies before b" orders them; a lookup key is the
 * one-frame range [pfn, pfn + 1), equal to the segment that contains it. */
static int cmp_range(const void *a, const void *b)
{
	const struct segment *x = a, *y = b;
	if (x->end <= y->start)
		return -1;
	if (x->start >= y->end)
		return 1;
	return 0;
}

static inline struct segment *find_rbtree(uint64_t pfn)
{
	struct segment key = { .start = pfn, .end = pfn + 1, .pgs = NULL };
	void *node = tfind(&key, &tree_root, cmp_range);
	return node ? *(struct segment **)node : NULL;
}

/* --- setup ----------------------------------------------------------------------------- */

/* Segment sizes and holes from the seed; the layout is the same for every impl. */
static uint64_t build_segments(size_t k, unsigned seed, struct vm_page **all_pages, uint64_t *span)
{
	srandom(seed);
	uint64_t avg = MAX_TOTAL_PAGES / k;
	if (avg > 4096)
		avg = 4096;
	segs = calloc(k, sizeof *segs);
	uint64_t *sizes = calloc(k, sizeof *sizes);
	if (segs == NULL || sizes == NULL) {
		fprintf(stderr, "physseg: error: out of memory for %zu segments\n", k);
		exit(1);
	}
	uint64_t total = 0;
	for (size_t i = 0; i < k; i++) {
		sizes[i] = 1 + (uint64_t)random() % (2 * avg); /* 1 .. 2*avg pages, mean ~avg */
		total += sizes[i];
	}
	*all_pages = calloc(total, sizeof **all_pages); /* untouched: costs address space only */
	if (*all_pages == NULL) {
		fprintf(stderr, "physseg: error: out of memory for %" PRIu64 " pages\n", total);
		exit(1);
	}
	uint64_t pfn = 16 + (uint64_t)random() % 256, first = 0;
	for (size_t i = 0; i < k; i++) {
		segs[i].start = pfn;
		segs[i].end = pfn + sizes[i];
		segs[i].pgs = *all_pages + first;
		first += sizes[i];
		pfn = segs[i].end + (uint64_t)random() % (avg / 16 + 1); /* a hole, maybe empty */
	}
	nsegs = k;
	*span = pfn;
	free(sizes);
	return total;
}

static void build_tree(unsigned seed)
{
	/* Insert in a shuffled order, as segments plugged over time would be. */
	size_t *order = malloc(nsegs * sizeof *order);
	if (order == NULL) {
		fprintf(stderr, "physseg: error: out of memory\n");
		exit(1);
	}
	for (size_t i = 0; i < nsegs; i++)
		order[i] = i;
	srandom(seed ^ 0x5eedu);
	for (size_t i = nsegs; i > 1; i--) {
		size_t j = (size_t)random() % i;
		size_t t = order[i - 1];
		order[i - 1] = order[j];
		order[j] = t;
	}
	for (size_t i = 0; i < nsegs; i++) {
		if (tsearch(&segs[order[i]], &tree_root, cmp_range) == NULL) {
			fprintf(stderr, "physseg: error: out of memory\n");
			exit(1);
		}
	}
	free(order);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

enum impl { IMPL_ARRAY, IMPL_RBTREE, IMPL_OVERHEAD };

int main(int argc, char **argv)
{
	const char *impl_name = NULL;
	uint64_t lookups = 0, segments = 16, seed = 1;
	int have_lookups = 0;

	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *value = NULL;
		char name[32];
		if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
			printf("%s\n", usage);
			return 0;
		}
		const char *eq = strchr(arg, '=');
		size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
		if (len >= sizeof name)
			die_usage("unknown argument '%s'", arg);
		memcpy(name, arg, len);
		name[len] = '\0';
		if (strcmp(name, "--impl") && strcmp(name, "--lookups") && strcmp(name, "--segments") &&
		    strcmp(name, "--seed"))
			die_usage("unknown argument '%s'", arg);
		if (eq)
			value = eq + 1;
		else if (i + 1 < argc)
			value = argv[++i];
		else
			die_usage("%s needs a value", name);
		if (strcmp(name, "--impl") == 0)
			impl_name = value;
		else if (strcmp(name, "--lookups") == 0) {
			lookups = parse_count("--lookups", value, 1, UINT64_C(1000000000000));
			have_lookups = 1;
		} else if (strcmp(name, "--segments") == 0)
			segments = parse_count("--segments", value, 1, MAX_SEGMENTS);
		else
			seed = parse_count("--seed", value, 0, UINT32_MAX);
	}
	if (impl_name == NULL)
		die_usage("%s is required", "--impl");
	if (!have_lookups)
		die_usage("%s is required", "--lookups");
	enum impl impl;
	if (strcmp(impl_name, "array") == 0)
		impl = IMPL_ARRAY;
	else if (strcmp(impl_name, "rbtree") == 0)
		impl = IMPL_RBTREE;
	else if (strcmp(impl_name, "overhead") == 0)
		impl = IMPL_OVERHEAD;
	else
		die_usage("unknown --impl '%s', expected array, rbtree or overhead", impl_name);

	struct vm_page *all_pages;
	uint64_t span;
	uint64_t pages = build_segments((size_t)segments, (unsigned)seed, &all_pages, &span);
	if (impl == IMPL_RBTREE)
		build_tree((unsigned)seed);

	/* The lookups draw from their own stream, identical for every impl. */
	srandom((unsigned)seed * 2654435761u + 1u);
	uint64_t checksum = 0, hits = 0;
	double t0 = now();
	switch (impl) {
	case IMPL_ARRAY:
		for (uint64_t n = 0; n < lookups; n++) {
			uint64_t pfn = (uint64_t)random() % span;
			struct segment *s = find_bsearch(pfn);
			uint64_t index = 0;
			if (s != NULL) {
				struct vm_page *pg = &s->pgs[pfn - s->start];
				index = (uint64_t)(pg - all_pages) + 1;
				hits++;
			}
			checksum = checksum * 1099511628211u + index;
		}
		break;
	case IMPL_RBTREE:
		for (uint64_t n = 0; n < lookups; n++) {
			uint64_t pfn = (uint64_t)random() % span;
			struct segment *s = find_rbtree(pfn);
			uint64_t index = 0;
			if (s != NULL) {
				struct vm_page *pg = &s->pgs[pfn - s->start];
				index = (uint64_t)(pg - all_pages) + 1;
				hits++;
			}
			checksum = checksum * 1099511628211u + index;
		}
		break;
	case IMPL_OVERHEAD:
		for (uint64_t n = 0; n < lookups; n++) {
			uint64_t pfn = (uint64_t)random() % span;
			checksum = checksum * 1099511628211u + pfn;
		}
		break;
	}
	double seconds = now() - t0;

	printf("{\"impl\": \"%s\", \"lookups\": %" PRIu64 ", \"segments\": %" PRIu64 ", \"seed\": %" PRIu64
	       ", \"pages\": %" PRIu64 ", \"pfn_span\": %" PRIu64 ", \"hits\": %" PRIu64
	       ", \"seconds\": %.9f, \"ns_per_lookup\": %.3f, \"checksum\": %" PRIu64 "}\n",
	       impl_name, lookups, segments, seed, pages, span, impl == IMPL_OVERHEAD ? 0 : hits,
	       seconds, seconds * 1e9 / (double)lookups, checksum & CHECKSUM_MASK);
	return 0;
}
