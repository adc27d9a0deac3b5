/* SPDX-License-Identifier: MIT */
/*
 * CO-RE shims, one per kernel change, each naming the change. A shim is
 * chosen by BTF (bpf_core_field_exists, or a tracepoint's BTF prototype that
 * the loader reads with lh_tp_nargs()), never by kernel version. A tool's own
 * file holds none. The argument-count shims take the tracepoint's argument
 * array: tp_btf's ctx and raw_tp's ctx->args alike. Changes older than what
 * lathist needs anyway (the BPF ring buffer, 5.8; runq: BPF atomics, 5.12)
 * get none.
 */
#ifndef LATHIST_CORE_FIXES_BPF_H
#define LATHIST_CORE_FIXES_BPF_H

#include <bpf/bpf_core_read.h>

/* 5.14 (2f064a59a11f "sched: Change task_struct::state") renamed state to __state. */
struct task_struct___pre514 {
	volatile long state;
} __attribute__((preserve_access_index));

static __always_inline unsigned int task_state(struct task_struct *t)
{
	struct task_struct___pre514 *old = (void *)t;

	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return (unsigned int)BPF_CORE_READ(old, state);
}

/*
 * The task doing an exec that kills t's thread group's other threads
 * (fs/exec.c de_thread() sets it, and clears it once done), NULL when none.
 * 5.16 ("signal: Rename group_exit_task group_exec_task") renamed the field.
 */
struct signal_struct___pre516 {
	struct task_struct *group_exit_task;
} __attribute__((preserve_access_index));

static __always_inline struct task_struct *signal_exec_task(struct task_struct *t)
{
	struct signal_struct *sig = BPF_CORE_READ(t, signal);
	struct signal_struct___pre516 *old = (void *)sig;

	if (bpf_core_field_exists(sig->group_exec_task))
		return BPF_CORE_READ(sig, group_exec_task);
	return BPF_CORE_READ(old, group_exit_task);
}

/*
 * 5.18 (fa2c3254d7cf "sched/tracing: Don't re-read p->state when emitting
 * sched_switch event", then 9c2136be0878 "sched/tracing: Append prev_state to
 * tp args instead") made prev's state sched_switch's fourth argument
 * (bool preempt, prev, next, unsigned int prev_state); before it the state is
 * read from the task (which a concurrent wakeup may already have made
 * TASK_RUNNING: the race that change closed). has_arg: the loader found four
 * arguments in the tracepoint's BTF prototype (a constant, so the verifier
 * never sees a read past the arguments this kernel passes).
 */
static __always_inline unsigned int sched_switch_prev_state(const __u64 *args, bool has_arg,
							    struct task_struct *prev)
{
	if (has_arg)
		return (unsigned int)args[3];
	return task_state(prev);
}

/*
 * 5.11 (a54895fa057c "block: remove the request_queue to argument request
 * based tracepoints", also in 5.10.137) dropped block_rq_issue's and
 * block_rq_insert's first argument: (struct request_queue *q, struct request
 * *rq) before, (struct request *rq) since. has_q: the loader found two
 * arguments in the BTF prototype.
 */
static __always_inline struct request *block_rq_arg(const __u64 *args, bool has_q)
{
	struct request *rq;

	/* two loads at constant offsets: left alone, clang merges them into one at
	 * args + (has_q << 3), and the verifier refuses a load through a ctx
	 * pointer moved by a register (it passes only while has_q is 0) */
	if (has_q) {
		rq = (struct request *)args[1];
		barrier_var(rq);
	} else {
		rq = (struct request *)args[0];
	}
	return rq;
}

/* 5.17 (f3fa33acca9f "block: remove the ->rq_disk field in struct request")
 * moved the disk to rq->q->disk. */
struct request___pre517 {
	struct gendisk *rq_disk;
} __attribute__((preserve_access_index));

/* The request's disk (NULL for none); direct BTF loads when btf (tp_btf). */
static __always_inline struct gendisk *request_disk(struct request *rq, bool btf)
{
	struct request___pre517 *old = (void *)rq;

	if (bpf_core_field_exists(old->rq_disk))
		return btf ? old->rq_disk : BPF_CORE_READ(old, rq_disk);
	return btf ? rq->q->disk : BPF_CORE_READ(rq, q, disk);
}

/*
 * 5.16 ("block: switch to atomic_t for request references") made
 * struct request's ref an atomic_t; it was a refcount_t. Both hold one int
 * counter at their offset 0: read as that int.
 */
static __always_inline int request_ref(struct request *rq)
{
	int ref = 0;

	bpf_core_read(&ref, sizeof(ref), &rq->ref);
	return ref;
}

#endif /* LATHIST_CORE_FIXES_BPF_H */
