/* SPDX-License-Identifier: MIT */
/* Types shared by bpf/runq.bpf.c and src/tools/runq.c. */
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
	RUNQ_GROUP_CGROUP,	/* key: the woken task's cgroup v2 id at its switch-in */
};

/*
 * Pairing state per task (tp_btf: task storage; raw_tp: a hash keyed by pid).
 * A task's switch count n (nvcsw + nivcsw, its switch-outs so far) numbers
 * its switch-ins: the k-th one (from 0) happens while n == k
 * (sched_info.pcount equals n but for the switch-ins it skips: since 5.14
 * sched_info_arrive() counts none after a preemption in a sleep state). A
 * start pairs only with the switch-in numbered nsw; acc says how many of the
 * task's switch-ins are accounted (paired, filtered or counted as a loss), so
 * a switch-in no event showed is still counted (missed_wait).
 */
struct runq_start {
	unsigned long long ts;		/* bpf_ktime_get_ns() at start, 0 = none */
	unsigned long long birth_ns;	/* task start_time (pid-keyed identity check); 0 = unknown */
	unsigned long long task;	/* pid-keyed: the task_struct (an exec from a thread
					 * hands the leader's pid and start time to it) */
	unsigned long long nsw;		/* the task's switch count at the start */
	unsigned long long acc;		/* switch-ins accounted (valid with RUNQ_ACC_OK) */
	unsigned int cpu;		/* CPU of the wakeup or preemption */
	unsigned short kind;		/* enum runq_kind */
	unsigned short flags;		/* enum runq_start_flags */
	unsigned long long sweep_acc;	/* the start sweep's baseline plus one (0: none),
					 * one store; taken (set to 0) by the task's first
					 * event seen, which makes it acc */
	unsigned long long dropped;	/* starts dropped (missed_switch_in) since acc was set */
};	/* 64 bytes: one cache line in runq_slots (bpf/runq.bpf.c) */

enum runq_start_flags {
	RUNQ_ACC_OK = 1,	/* acc is known */
	RUNQ_TAKEN_OVER = 2,	/* pid-keyed: this pid and start time were another task's
				 * (exec from a thread): its start time says nothing */
	RUNQ_SEEN = 4,		/* an event of the task was seen (not just the sweep's count) */
};

/* tp_btf: slots for the pairing state of tasks without task storage
 * (bpf/runq.bpf.c runq_slots; the loader counts those held for -v) */
#define RUNQ_SLOT_BITS 10
#define RUNQ_SLOTS (1 << RUNQ_SLOT_BITS)
/* birth_ns of a slot released while a sweep may hold it: still owned, so that
 * no other task takes it until the sweep is over (no start time is this) */
#define RUNQ_SLOT_RELEASED (~0ULL)

/* Key of the per-process / per-thread / per-cgroup histogram hash; fields
 * outside the grouping are 0. */
struct runq_hist_key {
	unsigned int tid;		/* 0 when grouped per process */
	unsigned int tgid;
	unsigned long long birth_ns;	/* start_time of thread (or leader) */
	unsigned long long cgroup_id;	/* per cgroup: its cgroup v2 id (kernfs node id) */
	unsigned char kind;		/* enum runq_kind */
	unsigned char buf;		/* interval double buffer, 0/1 */
	unsigned char pad[6];
};

/* This CPU's current on-CPU slice (--oncpu, --counters). */
struct runq_slice {
	unsigned long long ts;		/* switch-in, bpf_ktime_get_ns() */
	unsigned int tid;		/* the task switched in; 0 = no slice (idle, filtered) */
	unsigned int bad;		/* bit i: counter i could not be read at switch-in */
	struct {
		unsigned long long counter, enabled, running;
	} v[LH_MAX_PMU];		/* counters at switch-in */
};

/*
 * What a CPU last switched to (BPF only: a .bss array indexed by CPU, one cache
 * line each). On one CPU each sched_switch's prev is the previous one's next,
 * and rq->nr_switches counts every switch (kernel/sched/core.c __schedule()):
 * a different prev (task_struct), or a count that moved by more than one, is
 * a switch the kernel did not report.
 */
struct runq_cpu {
	unsigned long long nr_switches;	/* rq->nr_switches then; 0 = not readable */
	unsigned long long rq;		/* this CPU's struct rq *, read once; 0 = none */
	unsigned long long task;	/* that switch's next, its task_struct (not its pid: an
					 * exec from a thread changes the pid while it runs) */
	unsigned int known;		/* 0 until this CPU's first event */
} __attribute__((aligned(64)));

#define RUNQ_MAX_CPUS 1024

#endif /* LATHIST_RUNQ_H */
