// SPDX-License-Identifier: MIT
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "heatmap.h"
#include "util.h"

struct column {
	uint64_t start_ns, dur_ns;
	uint64_t lost;		/* events the interval lost (loss.lost) */
	uint64_t *counts;	/* nslots */
};

struct lh_heatmap {
	struct column *cols;
	int ncols, cap;
	uint32_t nslots;
};

struct lh_heatmap *lh_heatmap_new(void)
{
	return calloc(1, sizeof(struct lh_heatmap));
}

int lh_heatmap_column(struct lh_heatmap *h, uint64_t start_ns, uint64_t dur_ns, uint64_t lost)
{
	if (h->ncols == h->cap) {
		int cap = h->cap ? 2 * h->cap : 64;
		struct column *c = realloc(h->cols, (size_t)cap * sizeof(*c));

		if (!c)
			return -ENOMEM;
		h->cols = c;
		h->cap = cap;
	}
	h->cols[h->ncols++] = (struct column){ start_ns, dur_ns, lost, NULL };
	return 0;
}

void lh_heatmap_add(struct lh_heatmap *h, int col, const struct lh_hist *hist)
{
	struct column *c;

	if (col < 0 || col >= h->ncols)
		return;
	c = &h->cols[col];
	if (!h->nslots)
		h->nslots = hist->nslots;
	if (hist->nslots != h->nslots)
		return;
	if (!c->counts && !(c->counts = calloc(h->nslots, sizeof(uint64_t))))
		return;
	for (uint32_t i = 0; i < h->nslots; i++)
		c->counts[i] = lh_add_sat(c->counts[i], hist->slots[i]);
}

/* Colour of a cell: white for 0, then light yellow to dark red on a log scale. */
static void colour(char *buf, size_t len, uint64_t n, uint64_t max)
{
	static const double stops[][3] = {
		{ 254, 224, 130 }, { 254, 178, 76 }, { 253, 141, 60 }, { 227, 26, 28 },
		{ 128, 0, 38 },
	};
	double t, x;
	int i;

	if (!n) {
		snprintf(buf, len, "#f7f7f7");
		return;
	}
	/* 1 event already stands out from the grey of none */
	t = max > 1 ? log((double)n) / log((double)max) : 1.0;
	x = t * 4.0;
	i = x >= 4.0 ? 3 : (int)x;
	x -= i;
	snprintf(buf, len, "#%02x%02x%02x",
		 (int)(stops[i][0] + (stops[i + 1][0] - stops[i][0]) * x),
		 (int)(stops[i][1] + (stops[i + 1][1] - stops[i][1]) * x),
		 (int)(stops[i][2] + (stops[i + 1][2] - stops[i][2]) * x));
}

/* A bound in the unit, compact: 512 -> "512", 16384 -> "16k", 1048576 -> "1.05M". */
static void label(char *buf, size_t len, uint64_t v)
{
	if (v == UINT64_MAX)
		snprintf(buf, len, "inf");
	else if (v < 10000)
		snprintf(buf, len, "%" PRIu64, v);
	else if (v < 1000000)
		snprintf(buf, len, "%.0fk", (double)v / 1e3);
	else if (v < 1000000000)
		snprintf(buf, len, "%.3gM", (double)v / 1e6);
	else
		snprintf(buf, len, "%.3gG", (double)v / 1e9);
}

/* A round tick step (1, 2 or 5 x 10^k) giving about n ticks over span. */
static double nice_step(double span, int n)
{
	double raw = span / n, p = pow(10, floor(log10(raw))), f = raw / p;

	return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

static int by_start(const void *a, const void *b)
{
	const struct column *x = a, *y = b;

	return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

bool lh_heatmap_empty(const struct lh_heatmap *h)
{
	for (int c = 0; c < h->ncols; c++)
		for (uint32_t s = 0; h->cols[c].counts && s < h->nslots; s++)
			if (h->cols[c].counts[s])
				return false;
	return true;
}

int lh_heatmap_write(struct lh_heatmap *h, const char *path, const struct lh_meta *meta,
		     const char *name)
{
	const double W = 900, H = 520, L = 90, R = 130, T = 50, B = 60;
	double pw = W - L - R, ph = H - T - B, cw, rh;
	uint64_t max = 0, t0, t1;
	int lo = -1, hi = -1, nrows, err, nlost = 0;
	char *svg = NULL, col[16], lab[32];
	size_t len = 0;
	FILE *f;

	if (h->ncols < 2)
		return -EDOM;
	for (int c = 0; c < h->ncols; c++)
		for (uint32_t s = 0; h->cols[c].counts && s < h->nslots; s++)
			if (h->cols[c].counts[s]) {
				if (lo < 0 || (int)s < lo)
					lo = (int)s;
				if ((int)s > hi)
					hi = (int)s;
				if (h->cols[c].counts[s] > max)
					max = h->cols[c].counts[s];
			}
	if (lo < 0)
		return -EDOM;	/* nothing to draw */
	nrows = hi - lo + 1;
	/* in time order, whatever order the inputs came in; they do not overlap
	 * (lathist report refuses an interval twice, and concurrent runs) */
	qsort(h->cols, (size_t)h->ncols, sizeof(*h->cols), by_start);
	t0 = h->cols[0].start_ns;
	t1 = t0 + 1;
	for (int c = 0; c < h->ncols; c++) {
		if (h->cols[c].start_ns + h->cols[c].dur_ns > t1)
			t1 = h->cols[c].start_ns + h->cols[c].dur_ns;
		nlost += h->cols[c].lost > 0;
	}
	rh = ph / nrows;
	f = open_memstream(&svg, &len);
	if (!f)
		return -ENOMEM;
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
		"viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, H, W, H);
	fprintf(f, "<text x=\"%.0f\" y=\"24\" font-size=\"16\" text-anchor=\"middle\">lathist %s "
		"%s: latency per interval (colour: events per slot, log scale)</text>\n",
		L + pw / 2, meta->tool, name);
	/* cells: x from each interval's own start and length, so gaps show */
	for (int c = 0; c < h->ncols; c++) {
		const struct column *k = &h->cols[c];
		double x = L + pw * (double)(k->start_ns - t0) / (double)(t1 - t0);

		cw = pw * (double)k->dur_ns / (double)(t1 - t0);
		if (cw < 0.5)
			cw = 0.5;
		for (int r = 0; r < nrows; r++) {
			uint64_t n = k->counts ? k->counts[lo + r] : 0;

			char lo_l[32], hi_l[32];

			colour(col, sizeof(col), n, max);
			label(lo_l, sizeof(lo_l), lh_slot_lo((uint32_t)(lo + r), meta->scheme.precision));
			label(hi_l, sizeof(hi_l), lh_slot_hi((uint32_t)(lo + r), meta->scheme.precision));
			fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
				"fill=\"%s\"><title>%" PRIu64 " events in (%s, %s] %s at %.3f s"
				"</title></rect>\n", x, T + ph - (r + 1) * rh, cw, rh, col, n, lo_l,
				hi_l, meta->unit, (double)(k->start_ns - t0) / 1e9);
		}
	}
	/* intervals that lost events: a mark above their column */
	for (int c = 0; c < h->ncols; c++) {
		const struct column *k = &h->cols[c];

		if (!k->lost)
			continue;
		cw = pw * (double)k->dur_ns / (double)(t1 - t0);
		fprintf(f, "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"6\" fill=\"#1f5fbf\">"
			"<title>%" PRIu64 " events lost in the interval at %.3f s: its cells may "
			"lack them</title></rect>\n", L + pw * (double)(k->start_ns - t0) /
			(double)(t1 - t0), T - 9, cw < 0.5 ? 0.5 : cw, k->lost,
			(double)(k->start_ns - t0) / 1e9);
	}
	fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" "
		"stroke=\"#333\"/>\n", L, T, pw, ph);
	/* y axis: upper bound of each slot, thinned to about 12 labels */
	for (int r = 0; r < nrows; r++) {
		if (nrows > 12 && r % ((nrows + 11) / 12))
			continue;
		label(lab, sizeof(lab), lh_slot_hi((uint32_t)(lo + r), meta->scheme.precision));
		fprintf(f, "<text x=\"%.0f\" y=\"%.2f\" text-anchor=\"end\">&#8804; %s</text>\n",
			L - 6, T + ph - r * rh - rh / 2 + 4, lab);
	}
	fprintf(f, "<text transform=\"translate(18,%.0f) rotate(-90)\" text-anchor=\"middle\">"
		"latency slot (%s, upper bound)</text>\n", T + ph / 2, meta->unit);
	/* x axis: seconds since the first interval began */
	{
		double span = (double)(t1 - t0) / 1e9, step = nice_step(span, 8);

		for (double s = 0; s <= span * 1.0001; s += step)
			fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%g</text>\n",
				L + pw * s / span, T + ph + 18, s);
	}
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">time since the first "
		"interval (s), %d intervals%s</text>\n", L + pw / 2, H - 16, h->ncols,
		nlost ? "; blue mark above: the interval lost events" : "");
	/* legend */
	for (int i = 0; i < 5; i++) {
		uint64_t n = i ? (uint64_t)llround(exp(log((double)(max ? max : 1)) * (i - 1) / 3.0)) : 0;

		colour(col, sizeof(col), n, max);
		fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"18\" height=\"18\" fill=\"%s\" "
			"stroke=\"#999\"/><text x=\"%.0f\" y=\"%.0f\">%" PRIu64 "</text>\n",
			W - R + 20, T + i * 26.0, col, W - R + 44, T + i * 26.0 + 14, n);
	}
	fputs("</svg>\n", f);
	if (fclose(f)) {
		free(svg);
		return -ENOMEM;
	}
	err = lh_write_atomic(path, svg, len);
	free(svg);
	return err;
}

void lh_heatmap_free(struct lh_heatmap *h)
{
	if (!h)
		return;
	for (int c = 0; c < h->ncols; c++)
		free(h->cols[c].counts);
	free(h->cols);
	free(h);
}
