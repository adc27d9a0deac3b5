/* SPDX-License-Identifier: MIT */
/* Types shared by bpf/runq.bpf.c and src/runq.c. */
#ifndef LATHIST_RUNQ_H
#define LATHIST_RUNQ_H

#include "pmu.h"

/* What a wait began with. */
enum runq_kind {
	RUNQ_NONE = 0,
	RUNQ_WAKEUP = 1,	/* sched_wakeup / sched_wakeup_new */
	RUNQ_PREEMPT = 2,	/* switched out while still runnable */
	RUNQ_ONCPU = 3,		/* not a wait: an on-CPU slice, switch-in to switch-out */
};
#define RUNQ_NR_HISTS 3		/* wakeup, preempt, oncpu: index = kind - 1 */

enum runq_group {
	RUNQ_GROUP_TOTAL,
	RUNQ_GROUP_PROCESS,	/* key: tgid + leader start time */
	RUNQ_GROUP_THREAD,	/* key: tid + tgid + thread start time */
	RUNQ_GROUP_CPU,		/* CPU the task was switched in on */
};

/* Pairing state per task (tp_btf: task storage; raw_tp: pid-keyed hash). */
struct runq_start {
	unsigned long long ts;		/* bpf_ktime_get_ns() at start, 0 = none */
	unsigned long long birth_ns;	/* task start_time (raw_tp identity check) */
	unsigned long long nsw;		/* preempt start: the task's nvcsw + nivcsw then */
	unsigned int kind;		/* enum runq_kind */
	unsigned int cpu;		/* CPU of the wakeup or preemption */
	unsigned int sel;		/* tracepoint path: 0 unknown, 1 passes -p/--cgroup, 2 not */
	unsigned int pad;
};

/* Key of the per-process / per-thread histogram hash. */
struct runq_hist_key {
	unsigned int tid;		/* 0 when grouped per process */
	unsigned int tgid;
	unsigned long long birth_ns;	/* start_time of thread (or leader) */
	unsigned char kind;		/* enum runq_kind */
	unsigned char buf;		/* interval double buffer, 0/1 */
	unsigned char pad[6];
};

/* This CPU's current on-CPU slice (--oncpu, --counters); per-CPU array, BPF only. */
struct runq_slice {
	unsigned long long ts;		/* switch-in, bpf_ktime_get_ns() */
	unsigned int tid;		/* the task switched in; 0 = no slice (idle, filtered) */
	unsigned int bad;		/* bit i: counter i could not be read at switch-in */
	struct {
		unsigned long long counter, enabled, running;
	} v[LH_MAX_PMU];		/* counters at switch-in */
};

#define RUNQ_MAX_CPUS 1024

#endif /* LATHIST_RUNQ_H */
