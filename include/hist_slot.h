/* SPDX-License-Identifier: MIT */
/*
 * Log2 histogram slots with optional linear sub-slots, shared by BPF and
 * userspace so that both sides agree on every bound.
 *
 * lh_slot() indexes an integer x: with precision p (0..LH_MAX_PRECISION),
 * each power of two [2^m, 2^(m+1)) is split into 2^p equal sub-slots; x below
 * 2^p gets one slot each; x of 2^(LH_TOP_MSB+1) and more share the last slot.
 * Slot i spans [lo_i, hi_i) of x (lh_slot_lo/hi in src/report/hist.c).
 *
 * A latency v (ns) goes to slot lh_slot((v - 1) / unit_ns) (lh_value_slot):
 * slot i then holds exactly lo_i x unit < v <= hi_i x unit, and slot 0 also
 * 0 — upper bounds inclusive, as Prometheus/OpenMetrics `le` buckets are, so
 * a value equal to a bound (256 us) is counted in the bucket it bounds
 * (le="0.000256"), never the next one. p = 0 gives [0,1] (1,2] (2,4] (4,8]
 * ... units: log2 slots, with runqlat's bounds.
 */
#ifndef LATHIST_HIST_SLOT_H
#define LATHIST_HIST_SLOT_H

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

#define LH_MAX_PRECISION 5
#define LH_TOP_MSB 47
/* Slots for precision p: 2^p exact slots below 2^p, then 2^p per power of two. */
#define LH_NSLOTS(p) ((LH_TOP_MSB + 2 - (p)) << (p))
#define LH_MAX_SLOTS LH_NSLOTS(LH_MAX_PRECISION)

/* floor(log2(v)) for v > 0; 0 for v == 0. Branch-free (BPF has no clz). */
static __always_inline unsigned int lh_log2_u64(unsigned long long v)
{
	unsigned int r, s;

	r = (v > 0xFFFFFFFFULL) << 5;
	v >>= r;
	s = (v > 0xFFFF) << 4;
	v >>= s;
	r |= s;
	s = (v > 0xFF) << 3;
	v >>= s;
	r |= s;
	s = (v > 0xF) << 2;
	v >>= s;
	r |= s;
	s = (v > 0x3) << 1;
	v >>= s;
	r |= s;
	r |= (unsigned int)(v >> 1);
	return r;
}

/* Slot index of value v (in units) at precision p; always < LH_NSLOTS(p). */
static __always_inline unsigned int lh_slot(unsigned long long v, unsigned int p)
{
	unsigned int m, sub;

	if (v < (1ULL << p))
		return (unsigned int)v;
	m = lh_log2_u64(v);
	if (m > LH_TOP_MSB)
		return LH_NSLOTS(p) - 1;
	sub = (unsigned int)(v >> (m - p)) & ((1U << p) - 1);
	return ((m - p + 1) << p) | sub;
}

/* Slot of a latency of v ns in a histogram of unit_ns per unit, precision p:
 * lo x unit < v <= hi x unit (slot 0: 0 <= v <= hi x unit). */
static __always_inline unsigned int lh_value_slot(unsigned long long v,
						  unsigned long long unit_ns, unsigned int p)
{
	return lh_slot(v ? (v - 1) / unit_ns : 0, p);
}

/*
 * Histogram value header; LH_NSLOTS(precision) u64 slot counters follow.
 * Map value size is set at load time: sizeof(struct lh_hist_head) + 8 * nslots.
 */
struct lh_hist_head {
	unsigned long long sum_ns;
	unsigned long long max_ns;
	unsigned long long bytes;	/* bio: request bytes counted here; runq: 0 */
	char comm[16];
	unsigned long long comm_ns;	/* when comm was taken (bpf_ktime_get_ns): of a
					 * task's names the loader shows the earliest */
};

#endif /* LATHIST_HIST_SLOT_H */
