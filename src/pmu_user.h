/* SPDX-License-Identifier: MIT */
/*
 * PMU counters for lathist runq --counters: perf event names, opening one
 * counting event per (counter, CPU), and the multiplexing rules.
 */
#ifndef LATHIST_PMU_USER_H
#define LATHIST_PMU_USER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "pmu.h"

/* One counter as the user named it, and its perf_event_attr type and config. */
struct lh_pmu_event {
	char name[32];		/* perf's name ("cycles", "page-faults", "r01c2") */
	uint32_t type;		/* PERF_TYPE_HARDWARE, _SOFTWARE or _RAW */
	uint64_t config;
	int err;		/* opening failed with this errno (0 = opened) */
};

/*
 * Parse a comma-separated list of perf event names (hardware: cycles,
 * instructions, cache-references, cache-misses, branches, branch-misses,
 * bus-cycles, ref-cycles, stalled-cycles-frontend/-backend; software:
 * cpu-clock, task-clock, page-faults, minor-faults, major-faults,
 * context-switches, cpu-migrations, alignment-faults, emulation-faults; raw:
 * rNNNN in hex). At most LH_MAX_PMU, no repeats. Returns the number parsed,
 * or -EINVAL with the offending item copied to bad (badlen bytes) and why
 * (a static string) in *why.
 */
int lh_pmu_parse(const char *list, struct lh_pmu_event *ev, char *bad, size_t badlen,
		 const char **why);

/* Does perf_event_open's err mean this machine cannot count the event (as
 * opposed to no permission or no file descriptors, which --counters-optional
 * does not cover)? */
bool lh_pmu_unsupported(int err);

/* Why perf_event_open failed with err (positive errno), for one line to the user. */
const char *lh_pmu_why(int err);

/*
 * Open a counting event (pid -1, read_format time_enabled | time_running) for
 * each event on each online CPU: fds[i * ncpus + cpu] (-1 where a CPU is
 * offline). An event that fails on any CPU gets ev[i].err and its fds closed.
 * Returns the number of events opened; fds must hold n * ncpus ints.
 */
int lh_pmu_open(struct lh_pmu_event *ev, int n, int ncpus, int *fds);

/* Close what lh_pmu_open opened (n * ncpus fds, -1 skipped). */
void lh_pmu_close(int *fds, int n, int ncpus);

/*
 * The scaled estimate of a counter: raw x enabled / running (perf's scaling,
 * tools/perf/util/evsel.c). Returns false when it is undefined (running 0:
 * the counter never ran, so nothing is known, neither 0 nor infinity); *est
 * then untouched. *estimated is set when the value is scaled (running <
 * enabled: the counter was multiplexed), false when raw is the exact count.
 */
bool lh_pmu_estimate(uint64_t raw, uint64_t enabled, uint64_t running, double *est,
		     bool *estimated);

/*
 * A ratio of two counters' estimates over the same slices (IPC = instructions
 * / cycles). False when it is undefined: either estimate undefined, or the
 * denominator 0. *estimated when either rests on a scaled value.
 */
bool lh_pmu_ratio(uint64_t num_raw, uint64_t num_enabled, uint64_t num_running,
		  uint64_t den_raw, uint64_t den_enabled, uint64_t den_running, double *ratio,
		  bool *estimated);

#endif /* LATHIST_PMU_USER_H */
