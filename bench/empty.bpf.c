// SPDX-License-Identifier: GPL-2.0
/*
 * Benchmark baselines on the tracepoints lathist uses: empty tp_btf programs,
 * and (clock_*) the same three sched programs each reading bpf_ktime_get_ns()
 * once a run, the least a tracer does that times each wakeup and switch.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

SEC("tp_btf/sched_wakeup")
int BPF_PROG(empty_wakeup, struct task_struct *p)
{
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(empty_wakeup_new, struct task_struct *p)
{
	return 0;
}

SEC("tp_btf/sched_switch")
int empty_switch(u64 *ctx)
{
	return 0;
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

/* The last clock read of CPU i at [8 * (i % 1024)]: a 64-byte line each, so no
 * two CPUs of up to 1024 share one (a shared line would cost the store more). */
__u64 last_ns[1024 * 8] __attribute__((aligned(64)));

static __always_inline int clock_once(void)
{
	/* the store keeps the read: a helper's result that is used */
	last_ns[(bpf_get_smp_processor_id() & 1023) * 8] = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(clock_wakeup, struct task_struct *p)
{
	return clock_once();
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(clock_wakeup_new, struct task_struct *p)
{
	return clock_once();
}

SEC("tp_btf/sched_switch")
int clock_switch(u64 *ctx)
{
	return clock_once();
}

char LICENSE[] SEC("license") = "GPL";
