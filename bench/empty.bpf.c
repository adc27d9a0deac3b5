// SPDX-License-Identifier: GPL-2.0
/*
 * Benchmark baselines: empty tp_btf programs on the tracepoints lathist uses,
 * and (read_clock) the same programs reading bpf_ktime_get_ns() once a run,
 * the least any tracer does that times each wakeup and switch.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

const volatile bool read_clock;	/* set by the loader: false leaves the programs empty */

/* The last clock read of CPU i at [8 * i]: a 64-byte line each, none shared. */
__u64 last_ns[64 * 8] __attribute__((aligned(64)));

static __always_inline int clock_once(void)
{
	if (read_clock)		/* a constant: the verifier drops this when false */
		last_ns[(bpf_get_smp_processor_id() & 63) * 8] = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(empty_wakeup, struct task_struct *p)
{
	return clock_once();
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(empty_wakeup_new, struct task_struct *p)
{
	return clock_once();
}

SEC("tp_btf/sched_switch")
int empty_switch(u64 *ctx)
{
	return clock_once();
}

SEC("tp_btf/block_io_start")
int BPF_PROG(empty_io_start, struct request *rq)
{
	return 0;
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(empty_rq_issue, struct request *rq)
{
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(empty_rq_complete, struct request *rq, int error, unsigned int nr_bytes)
{
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
