/* SPDX-License-Identifier: MIT */
/*
 * The tool registry: one descriptor per tracing verb (runq, bio), defined in
 * the tool's own file and listed once in src/registry.c. Everything outside a
 * tool's files that needs to know of it — verb dispatch, lathist report's
 * reader, the OpenMetrics renderer, lathist doctor — reads its descriptor; no
 * code outside them compares tool names (bpftool's commands[] is the model).
 */
#ifndef LATHIST_REGISTRY_H
#define LATHIST_REGISTRY_H

#include <stdbool.h>
#include "report.h"

struct lh_doctor;

/* A tracepoint the tool attaches, as doctor checks it. */
struct lh_tool_tp {
	const char *event;	/* "sched/sched_switch" */
	bool needed;		/* without it the tool cannot run */
	int any_of;		/* nonzero: one of the tracepoints with this number is enough */
	const char *why;	/* what the tool does with it */
};

struct lh_tool_desc {
	const char *name;			/* the verb: "runq" */
	const char *summary;			/* one line for lathist -h */
	int (*main)(int argc, char **argv);	/* argv[0] is the verb */
	void (*doctor)(struct lh_doctor *d);	/* its checks beyond its tracepoints
						 * (doctor.h), NULL for none */
	/* what each counter means in this tool's words, [LH_NR_COUNTERS]; NULL where
	 * the tool counts none: the outputs show only the counters it names */
	const char *const *counter_desc;
	const char *noun;			/* what one paired event is: "waits" */
	const char *everyone;			/* the total key in text: "all tasks" */
	bool charges_keys;			/* losses of a known task are charged to its
						 * key (loss.charged_to_keys, key_lost) */
	const struct lh_hist_kind *kinds;	/* its histograms, in print order */
	int nkinds;
	bool has_bytes;				/* histograms carry bytes (a bytes counter) */
	const char *bytes_hist;			/* the histogram whose bytes it exposes */
	const char *bytes_help;			/* HELP of lathist_<name>_bytes_total */
	const char *const *groupings;		/* meta.grouping values, NULL-terminated */
	const unsigned int *grouping_fields;	/* the key fields of each (lh_key_field bits) */
	const char *const *paired_hists;	/* the histograms whose counts add up to
						 * loss.paired, NULL-terminated */
	const char *const *serve_opts;		/* lathist serve's options it takes beyond
						 * the common ones (long names), NULL-terminated */
	const char *const *max_keys_with;	/* serve options of which one must be given
						 * for --max-keys to size a map, NULL-terminated;
						 * NULL: --max-keys always does */
	bool groupings_combine;			/* several, joined by commas in list order */
	const char *om_label;			/* OpenMetrics label naming the histogram */
	const char *om_help;			/* HELP of lathist_<name>_latency_seconds */
	const struct lh_tool_tp *tps;		/* for doctor */
	int ntps;
	const char *any_of_check;		/* doctor's check when no any_of tracepoint */
	const char *any_of_missing;		/* exists, and what it says */
};

/* The tracing tools, NULL-terminated, in the order lathist -h lists them. */
extern const struct lh_tool_desc *const lh_tools[];

/* The tool named name, or NULL. */
const struct lh_tool_desc *lh_tool_find(const char *name);

/* t's max_keys_with as options in a sentence ("--per-process, --per-thread or
 * --per-cgroup") in buf (len bytes, cut if shorter); "" when it is NULL. */
const char *lh_tool_max_keys_with(const struct lh_tool_desc *t, char *buf, size_t len);

/* Is g a meta.grouping tool t writes: "total", one of t->groupings, or (when
 * they combine) several of them joined by commas in list order? */
bool lh_tool_grouping_known(const struct lh_tool_desc *t, const char *g);

/* The key fields (lh_key_field bits) of a histogram of t grouped by g (known). */
unsigned int lh_tool_grouping_fields(const struct lh_tool_desc *t, const char *g);

/* Does histogram name count in t's loss.paired? */
bool lh_tool_paired_hist(const struct lh_tool_desc *t, const char *name);

#endif /* LATHIST_REGISTRY_H */
