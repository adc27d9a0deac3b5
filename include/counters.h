/* SPDX-License-Identifier: MIT */
/*
 * Event and loss counters shared by every lathist tool, BPF and userspace.
 * The BPF side keeps one struct lh_counters per CPU (a BPF_MAP_TYPE_PERCPU_ARRAY
 * with one entry, so one lookup per event and no atomics); userspace sums CPUs.
 * The names, descriptions and which ones are losses live in src/counters.c.
 */
#ifndef LATHIST_COUNTERS_H
#define LATHIST_COUNTERS_H

enum lh_counter {
	/* what was seen */
	LH_EV_ENDS,		/* pairing ends seen (runq: switch-ins of traced tasks) */
	LH_EV_PAIRED,		/* ends matched with their start */
	LH_EV_STARTS_WAKEUP,	/* runq: wakeups recorded as a start */
	LH_EV_STARTS_PREEMPT,	/* runq: preempted switch-outs recorded as a start */
	LH_EV_WAKEUP_RUNNING,	/* runq: wakeup of a task still on a CPU: no wait followed */
	LH_EV_WAKEUP_QUEUED,	/* runq: wakeup of a preempted, still queued task: start kept */
	LH_EV_FILTERED,		/* events rejected by filters (not a loss) */
	LH_EV_BEFORE_TRACE,	/* ends whose start came before tracing (no record) */
	LH_EV_BIO_CREATED,	/* bio: requests created (block_io_start / insert) */
	LH_EV_BIO_ISSUED,	/* bio: requests issued to the driver */
	LH_EV_BIO_NO_QUEUE,	/* bio: requests first seen at issue: no queue stage */
	LH_EV_BIO_PARTIAL,	/* bio: partial completions (request not done yet) */
	LH_EV_BIO_REQUEUED,	/* bio: requests issued again (requeued by the driver) */
	LH_EV_BIO_MERGED,	/* bio: requests merged into another before issue */
	LH_EV_BIO_UNISSUED,	/* bio: requests completed without reaching the driver */
	LH_EV_RB_ELIGIBLE,	/* events at or over --slower-than: a record each */
	LH_EV_SLICES,		/* runq --oncpu/--counters: on-CPU slices in the oncpu histograms */
	LH_EV_SWITCHES,		/* runq: sched_switch events seen (every task, every CPU) */
	/* kernel gaps: what the kernel did without an event (not events lost by us;
	 * the waits they cost are counted in the loss classes below) */
	LH_GAP_MISSED_SWITCH,	/* runq: context switches with no sched_switch event */
	LH_GAP_HIDDEN_TASKS,	/* runq: traced tasks the kernel's task iterator did not show */
	/* losses: each keeps an event out of the histograms */
	LH_LOSS_UNPAIRED,	/* end with a record but no start */
	LH_LOSS_OVERWRITTEN,	/* start replaced by a newer start of the same wait/key */
	LH_LOSS_MISSED_SWITCH_IN,	/* runq: start whose switch-in no event showed (the task ran since) */
	LH_LOSS_MISSED_WAIT,	/* runq: waits the task's switch count shows, with no event at all */
	LH_LOSS_UNCHECKED,	/* runq: the classic tracepoint path's (lathist 0.1.0, report
				 * inputs only): a start the switch count could not check */
	LH_LOSS_MISSED_COMPLETION,	/* bio: request whose completion no event showed */
	LH_LOSS_STALE,		/* start of an earlier task with the same id (pid reuse) */
	LH_LOSS_NEGATIVE,	/* end earlier than start */
	LH_LOSS_ABSURD,		/* delta over LH_ABSURD_NS: a broken pairing, never a slot */
	LH_LOSS_STORAGE,	/* task storage could not be created */
	LH_LOSS_START_E2BIG,	/* start map full */
	LH_LOSS_START_ENOMEM,	/* start map: out of memory */
	LH_LOSS_START_OTHER,	/* start map: other errno */
	LH_LOSS_HIST_E2BIG,	/* histogram map full (too many keys) */
	LH_LOSS_HIST_ENOMEM,	/* histogram map: out of memory */
	LH_LOSS_HIST_OTHER,	/* histogram map: other errno */
	LH_LOSS_RINGBUF,	/* record not reserved: ring buffer full (record lost, histograms keep the event) */
	LH_LOSS_SLICE_UNPAIRED,	/* on-CPU slice end whose switch-in on that CPU was not seen */
	LH_LOSS_PMU_ENOENT,	/* bpf_perf_event_read_value: -ENOENT (no event in the slot) */
	LH_LOSS_PMU_EINVAL,	/* bpf_perf_event_read_value: -EINVAL (event not readable here) */
	LH_LOSS_PMU_OTHER,	/* bpf_perf_event_read_value: other errno */
	LH_LOSS_PROG_MISSED,	/* runs of our programs the kernel skipped (userspace reads it) */
	LH_NR_COUNTERS
};

#define LH_FIRST_LOSS LH_LOSS_UNPAIRED

/* Deltas above one hour are not latencies but broken pairings. */
#define LH_ABSURD_NS (3600ULL * 1000000000ULL)

/* Value of the per-CPU counter map. */
struct lh_counters {
	unsigned long long v[LH_NR_COUNTERS];
};

#endif /* LATHIST_COUNTERS_H */
