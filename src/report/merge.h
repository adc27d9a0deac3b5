/* SPDX-License-Identifier: MIT */
/*
 * lathist report's merge of saved documents, in four parts: merge_read.c reads
 * and tokenizes the input, merge_doc.c decodes and checks one document and adds
 * it, merge_parts.c indexes the run intervals the documents cover,
 * merge_context.c merges their meta.context and meta.load. report_cmd.c is the
 * verb around them.
 */
#ifndef LATHIST_MERGE_H
#define LATHIST_MERGE_H

#include <stdbool.h>
#include <stdint.h>
#include <json-c/json.h>
#include "heatmap.h"
#include "registry.h"
#include "report.h"

/* Where the merge is reading: for messages, and what one document holds. */
struct merge_cursor {
	const char *path;		/* file being read */
	int line;			/* document number in it */
	uint64_t start;			/* the document's start (realtime ns) */
	uint64_t paired;		/* its paired histograms' counts (registry paired_hists) */
	uint64_t slices;		/* its slice histograms' counts (kind scope SLICES: oncpu) */
	int slice_hists;		/* and how many it has */
	uint64_t ncpus;			/* its meta.ncpus (possible CPUs, 1 to 2^20) */
};

/* Every run interval read so far (merge_parts.c): a merge's meta.parts. */
struct merge_parts {
	struct lh_part *parts;
	struct part_src { const char *path; int doc; } *src;	/* where each was read */
	size_t n, cap;
	void *runs;			/* tsearch tree of struct run_parts, by run id */
	size_t *noid, nnoid, noid_cap;	/* parts without a run id (any run's time) */
};

/* The inputs' meta.context and meta.load (merge_context.c). */
struct merge_ctx {
	json_object *vals;		/* per field, the distinct values read */
	int docs, missing;		/* inputs with a meta.context, and without one */
	json_object *out;		/* the merged meta.context (merge_context_finish) */
	bool load_unknown;		/* an input has no meta.load */
	bool quiet;			/* --diff: it shows what differs; no warning */
	struct lh_load load;		/* the inputs' meta.load, added */
};

/* What the merged documents have in common, and strings the report points at. */
struct merge {
	struct lh_report r;
	bool have;			/* r holds a first document */
	char tool[8], kernel[128], grouping[16], unit[4], clock[64];
	const struct lh_tool_desc *desc;	/* the first document's tool */
	char attach_tp[LH_MAX_ATTACH][32], attach_type[LH_MAX_ATTACH][16];
	uint64_t first_start, last_end;	/* realtime ns */
	int oncpu_docs;			/* inputs with on-CPU slices (--oncpu) */
	int ndocs;
	struct merge_cursor cur;
	struct lh_heatmap *heat;	/* --heatmap: one column per document */
	const char *heat_hist;
	bool pmu_dropped, records_dropped;
	char filters[512];		/* the first document's meta.filters, as JSON */
	bool filters_mixed;
	json_object *filters_obj;	/* a copy of them, applied at the end */
	struct merge_parts idx;
	char host[65];			/* the first document's, or "mixed" */
	bool anonymized;		/* the first document's meta.anonymized */
	uint32_t *hist_doc;		/* per merged histogram: the last document adding to it */
	size_t hist_doc_cap;
	struct merge_ctx ctx;
};

/* A document that is not what lathist -f json writes. */
#define bad(m, ...) merge_say(m, "give a file written by lathist -f json", __VA_ARGS__)

/* A good document that cannot merge with the first: the message names the fix. */
#define unmergeable(m, ...) merge_say(m, NULL, __VA_ARGS__)

/* "lathist report: PATH (document N): MSG; FIX" on stderr (FIX NULL: MSG says the
 * fix). Returns -EINVAL. */
__attribute__((format(printf, 3, 4)))
int merge_say(struct merge *m, const char *fix, const char *fmt, ...);

/* Make s safe to print in a header or a label: '?' for each byte that is not
 * printable ASCII, and (labels) for '"' and '\\'. */
void merge_printable(char *s, bool label);

/* Field k of o when it has type t; NULL otherwise, and for a string with a NUL
 * in it (\u0000), which every C string of it would cut short. */
json_object *merge_get(json_object *o, const char *k, json_type t);

/* Field k of o, a non-negative integer (uint64 range), into *out: 0, or -EINVAL
 * when missing or not one. */
int merge_get_u64(json_object *o, const char *k, uint64_t *out);

/* Field k of o, a string shorter than len, into buf: 0, or -EINVAL when missing,
 * not a string or too long. */
int merge_get_str(json_object *o, const char *k, char *buf, size_t len);

/* The tool's histogram kind called name, or NULL. */
const struct lh_hist_kind *merge_kind_of(const struct merge *m, const char *name);

/* One document: checked, then merged into m. 0, or a negative errno after the
 * message (m then holds part of it: only to be freed). */
int merge_add_doc(struct merge *m, json_object *doc);

/* Every JSON document of buf (len bytes), or of the file path ("-": standard
 * input): one document, or JSON lines, each added in turn. 0, or a negative errno
 * after the message (-EIO: the file cannot be read). */
int merge_read_buffer(struct merge *m, const char *buf, size_t len);
int merge_read_file(struct merge *m, const char *path);

/* A document's run intervals into m's index (meta.run_id with its interval, or
 * a merge's meta.parts), each refused when read before. 0, or a negative errno
 * after the message. merge_parts_free frees the index. */
int merge_add_parts(struct merge *m, json_object *meta);
void merge_parts_free(struct merge *m);

/* What a document says of itself (anonymized, the -p/-t task's exit, what was not
 * checked, host, kernel, CPUs, its span start..start + dur), merged into m. 0,
 * or a negative errno after the message. */
int merge_context(struct merge *m, json_object *meta, uint64_t start, uint64_t dur,
		  uint64_t ncpus);

/* A document's meta.context (merge_ctx) and meta.load (merge_load) merged into
 * m; 0, or a negative errno after the message. merge_context_finish makes the
 * merged meta.context once every document is in. */
int merge_ctx(struct merge *m, json_object *meta);
int merge_load(struct merge *m, json_object *meta);
void merge_context_finish(struct merge *m);

/* What m holds, freed (m itself is the caller's). */
void merge_free(struct merge *m);

#endif /* LATHIST_MERGE_H */
