/* SPDX-License-Identifier: MIT */
/* An interval series as an SVG heatmap: time on x, latency slot on y, colour = count. */
#ifndef LATHIST_HEATMAP_H
#define LATHIST_HEATMAP_H

#include <stdint.h>
#include "report.h"

struct lh_heatmap;

/* An empty heatmap; NULL without memory. */
struct lh_heatmap *lh_heatmap_new(void);

/* Start the next column: an interval beginning at start_ns (CLOCK_REALTIME) lasting dur_ns,
 * which lost `lost` events (marked). Columns may come in any order. -ENOMEM. */
int lh_heatmap_column(struct lh_heatmap *h, uint64_t start_ns, uint64_t dur_ns, uint64_t lost);

/* Add a histogram's slot counts to column col (0-based). */
void lh_heatmap_add(struct lh_heatmap *h, int col, const struct lh_hist *hist);

/* Whether no column holds an event: lh_heatmap_write would draw nothing (-EDOM). */
bool lh_heatmap_empty(const struct lh_heatmap *h);

/*
 * Write the SVG (atomically, never through a symlink) for histogram `name`,
 * its columns in time order (they are sorted here; they must not overlap),
 * labelled with meta's tool, unit and slot scheme. -EDOM with fewer than two
 * columns or no event at all; other negative errno from writing.
 */
int lh_heatmap_write(struct lh_heatmap *h, const char *path, const struct lh_meta *meta,
		     const char *name);

void lh_heatmap_free(struct lh_heatmap *h);

#endif /* LATHIST_HEATMAP_H */
