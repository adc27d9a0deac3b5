/* SPDX-License-Identifier: MIT */
/* Userspace histograms: slot bounds, per-CPU merge, percentiles, addition. */
#ifndef LATHIST_HIST_H
#define LATHIST_HIST_H

#include <stdbool.h>
#include <stdint.h>
#include "hist_slot.h"

/* How values were slotted: slot of (delta_ns / unit_ns) at this precision. */
struct lh_scheme {
	uint32_t precision;	/* 0..LH_MAX_PRECISION */
	uint64_t unit_ns;	/* 1 (ns), 1000 (us) or 1000000 (ms) */
};

/* Which fields of a key are set (bit mask). */
enum lh_key_field {
	LH_KEY_PID = 1 << 0,
	LH_KEY_TID = 1 << 1,
	LH_KEY_COMM = 1 << 2,
	LH_KEY_CPU = 1 << 3,
	LH_KEY_DISK = 1 << 4,
	LH_KEY_OP = 1 << 5,
	LH_KEY_CGROUP = 1 << 6,
	/* lathist serve: every key of these fields folded into one (--max-series);
	 * each field shows as "other" */
	LH_KEY_OTHER = 1 << 7,
};

/* What one histogram aggregates over; fields not in 'fields' are unused. */
struct lh_key {
	unsigned int fields;	/* enum lh_key_field bits; 0 = total */
	uint32_t pid, tid, cpu;
	uint64_t birth_ns;	/* task start time (CLOCK_MONOTONIC ns): tells reused ids apart */
	uint64_t cgroup_id;	/* cgroup v2 id (kernfs node id): a re-created cgroup is a
				 * new key */
	const char *cgroup;	/* its path under the cgroup2 mount ("/" the root), from
				 * lh_cgroup_intern: one pointer per id, a label */
	char comm[16];
	char disk[32];
	char op[16];
};

/*
 * The one stored path of cgroup id (printable: bytes outside 0x20..0x7e as
 * \xNN), so that keys can compare it as a pointer: the first path given for
 * an id is kept for the process's life (a renamed cgroup keeps its old path;
 * its id does not change). NULL without memory.
 */
const char *lh_cgroup_intern(uint64_t id, const char *path);

/* The stored path of cgroup id, NULL when none is. */
const char *lh_cgroup_lookup(uint64_t id);

/* One histogram: its name ("wakeup", ...), key, and 64-bit slot counts. */
struct lh_hist {
	char name[16];
	struct lh_key key;
	uint64_t count;		/* sum of slots */
	uint64_t sum_ns;
	uint64_t max_ns;	/* exact */
	uint64_t bytes;		/* bio: bytes of the requests counted */
	uint64_t name_ns;	/* when key.comm was seen (ordering only: of a task's
				 * names the earliest is shown; 0 unknown) */
	uint32_t nslots;
	uint64_t *slots;	/* nslots counters, owned */
};

/* Number of slots of a scheme. */
static inline uint32_t lh_nslots(const struct lh_scheme *s)
{
	return LH_NSLOTS(s->precision);
}

/* Lower bound (inclusive) of slot i, in units. */
uint64_t lh_slot_lo(uint32_t i, uint32_t precision);
/* Upper bound (exclusive) of slot i, in units; UINT64_MAX for the last slot (unbounded). */
uint64_t lh_slot_hi(uint32_t i, uint32_t precision);

/* Allocate a zeroed histogram for a scheme; returns -ENOMEM on failure. */
int lh_hist_init(struct lh_hist *h, const char *name, const struct lh_key *key,
		 const struct lh_scheme *s);
void lh_hist_free(struct lh_hist *h);
/* The same into slots, an array of lh_nslots(s) counters that h takes (zeroed here). */
void lh_hist_init_with(struct lh_hist *h, const char *name, const struct lh_key *key,
		       const struct lh_scheme *s, uint64_t *slots);

/*
 * Add one BPF histogram value (struct lh_hist_head then nslots u64) into h.
 * raw points at one CPU's copy. Counts are 64-bit and add without wrap up to
 * 2^64 - 1 (saturating).
 */
void lh_hist_add_raw(struct lh_hist *h, const void *raw);

/* Whether one CPU's BPF value (struct lh_hist_head, nslots u64) counts no event. */
bool lh_hist_raw_empty(const void *raw, uint32_t nslots);

/* h += o, slot by slot (same number of slots); max is the larger one. -EINVAL on mismatch. */
int lh_hist_merge(struct lh_hist *h, const struct lh_hist *o);

/*
 * Slot holding the quantile of permille/1000 (1..1000): the first slot whose
 * cumulative count reaches ceil(count * permille / 1000), in integers (no
 * rounding error). Returns the slot index, or -1 when count is 0.
 */
int lh_hist_quantile_slot(const struct lh_hist *h, unsigned int permille);

/*
 * Where the quantile of permille/1000 could be if lost events of h, whose
 * values nobody saw, were counted: *low is its slot when all of them fell
 * below h's first slot, *high when all fell above its last one (the
 * unbounded last slot when the rank lands among them). Both equal
 * lh_hist_quantile_slot() when lost is 0 or the losses cannot move it
 * (README, "Kernel gaps"). 0, or -EINVAL when h is empty.
 */
int lh_hist_quantile_bounds(const struct lh_hist *h, unsigned int permille, uint64_t lost,
			    int *low, int *high);

/* The percentiles every output reports, as the slot that holds them. */
struct lh_percentile {
	const char *name;	/* "p50" */
	unsigned int permille;	/* 500 */
};
#define LH_NR_PERCENTILES 4
extern const struct lh_percentile lh_percentiles[LH_NR_PERCENTILES];

/* Most quantiles one pass asks for (lh_hist_quantile_slots). */
#define LH_MAX_QUANTILES 16

/*
 * n quantiles of h (q[i].permille ascending in 1..1000, n <=
 * LH_MAX_QUANTILES) in one pass over its slots per bound: slot[i] is what
 * lh_hist_quantile_slot(h, q[i].permille) returns and, when low and high are
 * given, low[i] and high[i] what lh_hist_quantile_bounds(h, q[i].permille,
 * lost) sets. A report does this for every histogram of an interval (thousands with
 * per-thread keys), where one scan per quantile and bound walked the slots
 * twelve times. 0; -EINVAL (nothing set) when h is empty or the permilles are
 * not ascending in 1..1000.
 */
int lh_hist_quantile_slots(const struct lh_hist *h, const struct lh_percentile *q, size_t n,
			   uint64_t lost, int *slot, int *low, int *high);

/*
 * Ask the CPU for nslots slots (h's, for lh_hist_prefetch) ahead of their use
 * (at most 1 KiB of them; write: to be written): a
 * renderer going through thousands of histograms an interval otherwise waits
 * on memory at each histogram's first slot read (their slots, ~5 MB at 13,000
 * keys, are out of the cache again when the report is written).
 */
static inline __attribute__((always_inline)) void lh_slots_prefetch(const uint64_t *slots,
								     uint32_t nslots, bool write)
{
	size_t bytes = nslots * sizeof(*slots);

	for (size_t off = 0; off < bytes && off < 1024; off += 64) {
		if (write)	/* a constant once inlined: __builtin_prefetch wants one */
			__builtin_prefetch((const char *)slots + off, 1);
		else
			__builtin_prefetch((const char *)slots + off, 0);
	}
}

/* always_inline, like lh_slots_prefetch: GCC takes a function that only
 * prefetches for a const one and drops a call to it (it did in the renderers) */
static __always_inline void lh_hist_prefetch(const struct lh_hist *h)
{
	lh_slots_prefetch(h->slots, h->nslots, false);
}

/* Saturating 64-bit addition. */
static inline uint64_t lh_add_sat(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

#endif /* LATHIST_HIST_H */
