/* SPDX-License-Identifier: MIT */
/*
 * The measurement context: what a run's latencies depend on besides the
 * workload (preemption model, latency settings on the kernel command line, SMT,
 * frequency governors, the hypervisor, the traced disks' queues), read once at
 * the start from /proc, /sys and cpuid, read-only; and the CPU time stolen by
 * the hypervisor and the load over each aggregate. A fact that cannot be read
 * is null, never an error. docs/schema.md (meta.context, meta.load) has the
 * fields and their sources.
 */
#ifndef LATHIST_CONTEXT_H
#define LATHIST_CONTEXT_H

#include <stdbool.h>
#include <stdint.h>
#include "report.h"

/*
 * meta.context of a live run, as a json-c object (void * keeps json-c out of
 * the header; the caller owns it: json_object_put). NULL on ENOMEM.
 */
void *lh_context_gather(void);

/*
 * bio: add "disks", the traced disks' queues (only, or with only NULL every
 * disk with a blk-mq queue and a medium): name, scheduler, nr_requests,
 * rotational, queue_depth (SCSI device/queue_depth, else the first hardware
 * queue's nr_tags). At most 32 disks.
 */
void lh_context_add_disks(void *ctx, const char *only);

/* The command-line settings meta.context.cmdline records (kernel-parameters.txt),
 * NULL-terminated. */
extern const char *const lh_context_cmdline_names[];

/* One sample of /proc/stat's cpu line and /proc/loadavg. */
struct lh_usage {
	bool ok;
	uint64_t steal_ns;	/* stolen time, all CPUs, since boot (USER_HZ ticks as ns) */
	uint64_t mono_ns;	/* CLOCK_MONOTONIC of the sample (the aggregate's end or start) */
	unsigned long cpus;	/* online CPUs at the sample (sysconf) */
	double loadavg;		/* 1-minute load average */
};

/* Take a sample at mono_ns, the aggregate's own start or end (lh_now_ns());
 * u->ok false when /proc/stat or /proc/loadavg cannot be read. */
void lh_usage_sample(struct lh_usage *u, uint64_t mono_ns);

/*
 * The load of the aggregate between samples a and b (l->known false unless both
 * read): cpu_ns is online CPUs (at b) x the wall time from a to b, not the sum of
 * /proc/stat's modes, which the kernel samples at ticks: beside thousands of
 * threads that wake every 100 ms that sum was 0.89x and 1.32x of it over 2 s.
 * steal_ns, from the paravirt steal clock, is exact to a tick per CPU: it is
 * capped at cpu_ns.
 */
void lh_load_between(struct lh_load *l, const struct lh_usage *a, const struct lh_usage *b);

#endif /* LATHIST_CONTEXT_H */
