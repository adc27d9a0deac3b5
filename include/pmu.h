/* SPDX-License-Identifier: MIT */
/* PMU counters per on-CPU slice (lathist runq --counters): types shared by BPF and loader. */
#ifndef LATHIST_PMU_H
#define LATHIST_PMU_H

#define LH_MAX_PMU 8		/* counters per run */

/* One counter's sums over the slices of a key (bpf_perf_event_read_value deltas). */
struct lh_pmu_sum {
	unsigned long long raw;		/* counter delta, as counted */
	unsigned long long enabled;	/* time_enabled delta, ns */
	unsigned long long running;	/* time_running delta, ns */
	unsigned long long multiplexed;	/* slices with running < enabled */
};

/* Per key (and CPU): the slices it ran and each counter's sums. */
struct lh_pmu_val {
	unsigned long long slices;	/* on-CPU slices attributed */
	unsigned long long oncpu_ns;	/* their total time */
	unsigned long long read_failed;	/* slices with a counter left out (read failed) */
	char comm[16];			/* per process/thread: name at the key's first slice */
	struct lh_pmu_sum c[LH_MAX_PMU];
};

#endif /* LATHIST_PMU_H */
