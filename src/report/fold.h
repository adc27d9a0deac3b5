/* SPDX-License-Identifier: MIT */
/*
 * A cumulative aggregate with a bounded number of series, for lathist serve
 * (DESIGN: "Cumulative exposition for Prometheus"). Intervals add into it;
 * at most max_series keys have series of their own (the first seen, then, as
 * room frees, the busiest waiting), the others' counts go to one key per
 * histogram name whose fields all read "other" (LH_KEY_OTHER). No series it
 * exposes ever goes down. A key of a task or cgroup with no event for idle_ns
 * (an exited task, a removed cgroup) loses its series: the series is dropped
 * (Prometheus sees it end; its counts are tallied in retired[], not moved into
 * other, which rate() would read as a burst), later events of the key go to
 * other, and it never gets a series again while it may come back. So the
 * series' _count plus retired[] add up to every event since the start.
 */
#ifndef LATHIST_FOLD_H
#define LATHIST_FOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "report.h"

#define LH_FOLD_MAX_KINDS 8	/* histogram names with a retired tally */

struct lh_fold_opts {
	size_t max_series;	/* keys with a series of their own; 0: no cap */
	uint64_t idle_ns;	/* a task's or cgroup's key with no event this long loses its
				 * series; 0: never */
	/* Could this key's task or cgroup still show up? Asked of a key folded for
	 * being idle before its state is forgotten (a key that comes back after
	 * that would start its old series again from 0). NULL: always. */
	bool (*may_return)(const struct lh_key *k);
};

enum lh_fold_state {
	LH_FOLD_OWN = 1,	/* has its series */
	LH_FOLD_WAITING,	/* in other, never had a series: may get one when there is room */
	LH_FOLD_RETIRED,	/* had a series and lost it: in other for good */
};

/* What lh_fold knows of one key. */
struct lh_fold_key {
	struct lh_key key;
	uint64_t last_ns;	/* the last interval with an event of it (caller's clock) */
	uint64_t busy;		/* events, halved at every interval: how busy it is lately */
	uint64_t asked_ns;	/* when may_return last said it may (asked once per idle_ns) */
	uint8_t state;		/* enum lh_fold_state */
};

struct lh_fold {
	struct lh_fold_opts o;
	struct lh_report cum;	/* what is exposed: meta of the last interval, totals since
				 * the first (duration from first_ns) */
	struct lh_fold_key *keys;
	size_t nkeys, cap;	/* keys[] (cap a power of two, open addressing; state 0: free) */
	size_t nown;		/* keys with a series now */
	uint64_t folded;	/* keys whose counts went to other, ever (each once) */
	uint64_t first_start_ns;	/* CLOCK_REALTIME when the first interval began */
	uint64_t first_ns;	/* the caller's clock at the first interval */
	uint64_t covered_ns;	/* the intervals' durations added */
	struct {
		char name[16];	/* histogram name: "wakeup" */
		uint64_t count;	/* events of dropped series */
	} retired[LH_FOLD_MAX_KINDS];
	int nretired;
};

/* An empty aggregate with these options. */
void lh_fold_init(struct lh_fold *f, const struct lh_fold_opts *o);

/*
 * Add one interval's report (its histograms, counters and kernel gaps; not its
 * counter rows or charges) at now_ns (the caller's clock, e.g. CLOCK_MONOTONIC),
 * then retire keys idle for idle_ns and give free series to the busiest keys
 * waiting. 0, -ENOMEM (f may then hold part of the interval: the caller ends
 * the run), -EINVAL on another slot scheme.
 */
int lh_fold_add(struct lh_fold *f, const struct lh_report *interval, uint64_t now_ns);

void lh_fold_free(struct lh_fold *f);

#endif /* LATHIST_FOLD_H */
