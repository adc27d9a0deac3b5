/* SPDX-License-Identifier: MIT */
/* lathist runq options (parsed in src/tools/runq.c; exposed for unit tests). */
#ifndef LATHIST_RUNQ_CLI_H
#define LATHIST_RUNQ_CLI_H

#include "cli.h"
#include "report.h"
#include "pmu_user.h"
#include "runq.h"

struct runq_opts {
	struct lh_common_opts c;
	enum runq_group group;
	uint32_t tid;
	uint64_t tid_ticks;		/* -t: its start (/proc stat starttime) */
	bool cpus_set;
	uint64_t cpu_mask[RUNQ_MAX_CPUS / 64];
	char cpus[256];
	uint32_t max_tasks;	/* raw_tp start map entries */
	bool oncpu;		/* --oncpu (also implied by --counters) */
	int npmu;		/* --counters: events asked for */
	struct lh_pmu_event pmu[LH_MAX_PMU];
	bool pmu_optional;	/* --counters-optional: go on without unsupported ones */
};

/* runq's histograms: wakeup, preempt, oncpu (index = enum runq_kind - 1). */
extern const struct lh_hist_kind runq_kinds[RUNQ_NR_HISTS];

/*
 * Parse `lathist runq` arguments (argv[0] is "runq"). Returns 0, 1 when -h
 * printed the help, or -EINVAL after printing a one-line usage error.
 */
int runq_parse_args(int argc, char **argv, struct runq_opts *o);

struct runq_record;

/*
 * One --slower-than record as a line ending in '\n' into buf (len bytes): JSON
 * (--events) or text, times in the unit of unit_ns ns named unit ("us").
 * Returns the length the line needs, snprintf-like (>= len: it did not fit).
 */
int runq_record_line(const struct runq_record *r, bool json, uint64_t unit_ns, const char *unit,
		     char *buf, size_t len);

#endif /* LATHIST_RUNQ_CLI_H */
