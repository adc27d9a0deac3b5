// SPDX-License-Identifier: GPL-2.0
/*
 * Test helper: task_structs and per-CPU runqueues in kernel memory (array map
 * values) that the runq raw_tp programs can be run against with
 * BPF_PROG_TEST_RUN, to play sequences the kernel makes rarely or only on
 * some machines: a sched_switch or a wakeup with no event, a wait queued
 * before tracing began. tests/bpf/runq_synth.c plays the kernel's part.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#define NTASKS 64
#define NCPUS 4

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NTASKS);
	__type(key, __u32);
	__type(value, struct task_struct);
} fake_task SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NTASKS);
	__type(key, __u32);
	__type(value, struct signal_struct);
} fake_signal SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NCPUS);
	__type(key, __u32);
	__type(value, struct rq);
} fake_rq SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NCPUS);
	__type(key, __u32);
	__type(value, struct cfs_rq);
} fake_cfs_rq SEC(".maps");

/* in: the task's fields (fake_task_set) */
__u32 which, pid, tgid, on_cpu, cpu, state;
__u64 start_time, nvcsw, nivcsw, last_queued;
__u64 exec_task;	/* signal->group_exec_task: a fake task's address, or 0 */
char comm[16];
/* in: the runqueue of cpu (fake_rq_set): curr is fake task `which` */
__u64 nr_switches, clock;
/* out: the kernel address of what was set */
__u64 addr;

SEC("raw_tp/sys_enter")
int fake_task_set(void *ctx)
{
	__u32 key = which, c = cpu;
	struct task_struct *t = bpf_map_lookup_elem(&fake_task, &key);
	struct cfs_rq *cfs = bpf_map_lookup_elem(&fake_cfs_rq, &c);
	struct signal_struct *sig = bpf_map_lookup_elem(&fake_signal, &key);

	if (!t || !cfs || !sig)
		return 1;
	sig->group_exec_task = (struct task_struct *)exec_task;
	t->signal = sig;
	t->pid = pid;
	t->tgid = tgid;
	t->start_time = start_time;
	t->nvcsw = nvcsw;
	t->nivcsw = nivcsw;
	t->on_cpu = on_cpu;
	t->sched_info.last_queued = last_queued;
	t->__state = state;	/* read where sched_switch has no prev_state (pre-5.18) */
	t->group_leader = t;
	t->se.cfs_rq = cfs;	/* the runqueue of the CPU it is on */
	__builtin_memcpy(t->comm, comm, sizeof(comm));
	addr = (__u64)t;
	return 0;
}

SEC("raw_tp/sys_enter")
int fake_rq_set(void *ctx)
{
	__u32 key = which, c = cpu;
	struct task_struct *t = bpf_map_lookup_elem(&fake_task, &key);
	struct cfs_rq *cfs = bpf_map_lookup_elem(&fake_cfs_rq, &c);
	struct rq *rq = bpf_map_lookup_elem(&fake_rq, &c);

	if (!t || !cfs || !rq)
		return 1;
	rq->nr_switches = nr_switches;
	rq->clock = clock;
	rq->curr = t;
	cfs->rq = rq;
	addr = (__u64)rq;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
