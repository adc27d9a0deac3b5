/* SPDX-License-Identifier: MIT */
/* libbpf plumbing shared by every tool: diagnosis, probing, map reads. */
#ifndef LATHIST_BPFCOMMON_H
#define LATHIST_BPFCOMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <bpf/libbpf.h>

/* Show libbpf's messages (warnings and the verifier log) only when verbose. */
void lh_libbpf_setup(bool verbose);

/* This process's effective capabilities that lathist cares about. */
struct lh_caps {
	bool admin, bpf, perfmon;	/* CAP_SYS_ADMIN, CAP_BPF, CAP_PERFMON */
};

/* Read them with capget(2); negative errno on failure. */
int lh_read_caps(struct lh_caps *caps);

/* 0 when caps are enough to trace, else -EPERM with the diagnosis in msg. */
int lh_caps_verdict(const struct lh_caps *caps, char *msg, size_t len);

/*
 * Can this process load and attach tracing BPF programs? Root, or CAP_BPF and
 * CAP_PERFMON (or CAP_SYS_ADMIN) in the effective set. Returns 0, or -EPERM
 * with a one-line diagnosis (what is missing and the fix) in msg.
 */
int lh_check_privileges(char *msg, size_t len);

/* 0 when /sys/kernel/btf/vmlinux exists; else -ENOENT with a diagnosis in msg. */
int lh_check_btf(char *msg, size_t len);

/* Both, privileges first: what every tool needs before it opens a BPF object.
 * 0, or lh_check_privileges's or lh_check_btf's error with its msg. */
int lh_check_bpf_ready(char *msg, size_t len);

/*
 * Number of arguments the kernel passes to raw tracepoint tp (its BTF
 * prototype btf_trace_<tp>, without the leading void *), or -ENOENT when the
 * tracepoint is not in vmlinux BTF. Source: include/trace/bpf_probe.h, which
 * declares btf_trace_##call for every tracepoint.
 */
int lh_tp_nargs(const char *tp);

/* Whether tp_btf programs with task local storage can run here (BTF, 5.11+). */
bool lh_probe_tp_btf_task_storage(void);

/* Run a loaded, unattached raw_tp program once on this CPU (BPF_PROG_TEST_RUN,
 * 5.10+; no context): the bio sweep. 0 or a negative errno. */
int lh_run_prog(struct bpf_program *prog);

/*
 * Can a BPF iterator on target ("task", "bpf_map_elem") load here? A 2-
 * instruction iterator program is loaded and closed. 0, or a negative errno:
 * -ENOENT (no such iterator in the kernel's BTF), -EPERM (refused: a kernel or
 * LSM may forbid one kind of iterator and not another).
 */
int lh_probe_iter(const char *target);

/*
 * Does this kernel's verifier take BPF atomics with a result (BPF_CMPXCHG,
 * BPF_XCHG, BPF_FETCH: 5.12, "bpf: Add instructions for atomic_[cmp]xchg"),
 * which runq's accounting uses? Loads a 13-instruction socket filter doing
 * one compare-and-exchange on an array map value. 0, -EINVAL when the
 * verifier refuses it, other negative errno when it cannot be probed (no
 * privilege).
 */
int lh_probe_atomics(void);

/*
 * Run a loaded BPF iterator program once, to its end (over the elements of
 * map_fd, or -1 for a task iterator). Its output goes to *out (malloc'd, *len
 * bytes) when out is given, else is discarded. 0 or a negative errno.
 */
int lh_run_iter(struct bpf_program *prog, int map_fd, char **out, size_t *len);

/* Does the kernel's BTF give struct `type` a member named `member` (e.g.
 * sched_entity::cfs_rq, there with CONFIG_FAIR_GROUP_SCHED)? False without BTF. */
bool lh_btf_has_member(const char *type, const char *member);

/*
 * Wait until every BPF program that may have read the old interval buffer
 * index has finished: tracing programs run inside an RCU read-side section,
 * and membarrier(MEMBARRIER_CMD_GLOBAL) waits for an RCU grace period
 * (kernel/sched/membarrier.c). Falls back to a 20 ms sleep.
 */
void lh_wait_for_bpf_readers(void);

/* Does a map of this type hold one value per CPU (a lookup returns ncpus copies)? */
bool lh_map_type_percpu(enum bpf_map_type t);

/* Largest keyed per-CPU map lathist preallocates (see lh_prealloc_if_small). */
#define LH_PREALLOC_MAX (64ULL << 20)

/*
 * Preallocate a keyed hash (drop BPF_F_NO_PREALLOC) when entries x value
 * (x ncpus for a per-CPU hash) fits in LH_PREALLOC_MAX: a preallocated map never fails an
 * insert for memory, while the BPF allocator behind a non-preallocated one
 * refills its per-CPU cache only after the scheduler's tracepoint returns, so
 * a burst of new keys there gets -ENOMEM. Returns whether it preallocates.
 */
bool lh_prealloc_if_small(struct bpf_map *map, uint32_t entries, size_t value_size);

/* memlock bytes of a map from /proc/self/fdinfo (0 if unknown). */
uint64_t lh_map_memlock(int map_fd);

/* Bytes of one CPU's copy in a per-CPU map value (value size rounded up to 8). */
static inline size_t lh_percpu_stride(size_t value_size)
{
	return (value_size + 7) & ~(size_t)7;
}

#endif /* LATHIST_BPFCOMMON_H */
