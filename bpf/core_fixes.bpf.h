/* SPDX-License-Identifier: MIT */
/*
 * CO-RE shims, one per kernel change; chosen by BTF (bpf_core_field_exists),
 * never by kernel version.
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

#endif /* LATHIST_CORE_FIXES_BPF_H */
