/* SPDX-License-Identifier: MIT */
/*
 * The text renderer's parts (render_text.c: header and histograms; text_rank.c:
 * the ranked table of a grouped run; text_losses.c: the loss line, the kernel
 * gap line and -v's counter table), and what they share.
 */
#ifndef LATHIST_TEXT_H
#define LATHIST_TEXT_H

#include <stdbool.h>
#include <stdint.h>
#include "outbuf.h"
#include "report.h"

/* A duration for people: "950 ns", "56.1 us", "3.10 ms", "1.23 s" into buf. */
const char *lh_text_duration(char *buf, size_t len, uint64_t ns);

/* One key of a grouped run, ranked. */
struct lh_rank_row {
	size_t sum_idx;			/* its paired histograms (desc->paired_hists) added: the
					 * ranking's sums.hists[sum_idx] */
	size_t hist[4];			/* its histograms in r->hists, in kind order */
	int nhist;
	uint64_t charged;		/* the losses charged to its key */
	struct lh_pct pct[LH_NR_PERCENTILES];	/* of the sum, under lh_report_hist_lost */
};

/* The keys of a grouped run in rank order. */
struct lh_ranking {
	struct lh_report sums;		/* one histogram per key (meta: the report's) */
	struct lh_rank_row *rows;
	size_t n;
};

/* Rank r's keys by t->sort (ties: more events first, then r's order): 0, or
 * -ENOMEM (rk then holds nothing). Free with lh_rank_free. */
int lh_rank(struct lh_ranking *rk, const struct lh_report *r, const struct lh_text_opts *t);
void lh_rank_free(struct lh_ranking *rk);

/* The ranked table: a title, a line per row up to t->top, the rest summed in one
 * line. Returns whether a percentile it shows is marked '?'. */
bool lh_rank_print(struct lh_out *o, const struct lh_report *r, const struct lh_text_opts *t,
		   const struct lh_ranking *rk);

/*
 * After the histograms: records, the loss line (every non-zero loss class with
 * its count and share, what the losses could do to the percentiles shown:
 * marked is whether one shown is marked '?'), the kernel gap line, what was not
 * checked; with t->verbose every counter of the tool with what it means.
 */
void lh_text_losses(struct lh_out *o, const struct lh_report *r, const struct lh_text_opts *t,
		    bool grouped, bool marked);

/* Has a histogram a percentile (of pct, lh_report_percentiles) the losses can move?
 * (An empty one's bounds are all -1: none.) */
bool lh_text_moves(const struct lh_pct pct[LH_NR_PERCENTILES]);

#endif /* LATHIST_TEXT_H */
