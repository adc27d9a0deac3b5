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

/* 5.18 ("block: introduce block_rq_error tracepoint") made block_rq_complete an
 * event of the new block_rq_completion class: before it, its record was
 * struct trace_event_raw_block_rq_complete, with the same fields lathist reads.
 * A classic tracepoint program reads the record through whichever the kernel
 * has (CO-RE picks the name; ___pre518 is dropped when matching). */
struct trace_event_raw_block_rq_complete___pre518 {
	dev_t dev;
	sector_t sector;
	unsigned int nr_sector;
	char rwbs[8];
} __attribute__((preserve_access_index));

/* The fields of a block_rq_complete record (ctx) lathist reads. */
struct rq_complete_rec {
	__u32 dev;
	__u64 sector;
	__u32 nr_sector;
	char rwbs0, rwbs1;
};

/* Read through CO-RE probe reads: the verifier refuses a load from a ctx pointer
 * the compiler has moved, which two record layouts invite. */
#define RQ_COMPLETE_READ(c, r)                                          \
	do {                                                             \
		BPF_CORE_READ_INTO(&(r)->dev, c, dev);                   \
		BPF_CORE_READ_INTO(&(r)->sector, c, sector);             \
		BPF_CORE_READ_INTO(&(r)->nr_sector, c, nr_sector);       \
		BPF_CORE_READ_INTO(&(r)->rwbs0, c, rwbs[0]);             \
		BPF_CORE_READ_INTO(&(r)->rwbs1, c, rwbs[1]);             \
	} while (0)

static __always_inline void rq_complete_read(void *ctx, struct rq_complete_rec *r)
{
	if (bpf_core_type_exists(struct trace_event_raw_block_rq_completion)) {
		struct trace_event_raw_block_rq_completion *c = ctx;

		RQ_COMPLETE_READ(c, r);
	} else {
		struct trace_event_raw_block_rq_complete___pre518 *c = ctx;

		RQ_COMPLETE_READ(c, r);
	}
}

#endif /* LATHIST_CORE_FIXES_BPF_H */
