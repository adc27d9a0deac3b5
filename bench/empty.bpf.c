// SPDX-License-Identifier: GPL-2.0
/* Benchmark baseline: empty tp_btf programs on the tracepoints lathist uses. */
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

char LICENSE[] SEC("license") = "GPL";
