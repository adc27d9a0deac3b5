// SPDX-License-Identifier: GPL-2.0
/*
 * Test helper: a struct request in kernel memory (an array map value) that the
 * bio programs can be run against with BPF_PROG_TEST_RUN, for cases real
 * devices here cannot produce (partial completions).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 5);
	__type(key, __u32);
	__type(value, struct request);
} fake_rq SEC(".maps");

__u32 which;		/* in: which fake request */
__u32 data_len;		/* in: its __data_len */
__u32 cmd_flags;	/* in: its cmd_flags (REQ_OP_*) */
__u64 sector;		/* in: its __sector */
__u32 state;		/* in: its state (enum mq_rq_state) */
__u32 ref;		/* in: its reference count */
__u64 addr;		/* out: its kernel address */

SEC("raw_tp/sys_enter")
int fakerq_set(void *ctx)
{
	__u32 key = which;
	struct request *rq = bpf_map_lookup_elem(&fake_rq, &key);

	if (!rq)
		return 1;
	rq->__data_len = data_len;
	rq->cmd_flags = cmd_flags;
	rq->__sector = sector;
	rq->state = state;
	rq->ref.counter = (int)ref;
	addr = (__u64)rq;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
