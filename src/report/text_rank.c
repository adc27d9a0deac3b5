// SPDX-License-Identifier: MIT
/* The ranked table of a grouped run: one line per key, by the time it lost. */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "registry.h"
#include "text.h"

#define P50 0			/* lh_percentiles' p50 */
#define P99 2			/* and p99 */
#define MAX_COLS 16
#define CELL 80			/* bytes of a cell; a cgroup path is cut to fit */

/* Is histogram name one of r's paired kinds (every event of a key in one of
 * them once: its time lost)? Without a descriptor, every kind is. */
static bool paired(const struct lh_report *r, const char *name)
{
	return !r->meta.desc || lh_tool_paired_hist(r->meta.desc, name);
}

static int grow(struct lh_ranking *k, size_t *cap)
{
	struct lh_rank_row *rows;

	if (k->n < *cap)
		return 0;
	*cap = *cap ? 2 * *cap : 64;
	rows = realloc(k->rows, *cap * sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	k->rows = rows;
	return 0;
}

struct rank_by {
	const struct lh_ranking *k;
	enum lh_rank_by by;
};

/* qsort_r's order: the criterion first, then more events, then the report's
 * order (sum indices follow it). */
static int by_rank(const void *pa, const void *pb, void *ctx)
{
	const struct rank_by *c = ctx;
	const struct lh_rank_row *a = pa, *b = pb;
	const struct lh_hist *x = &c->k->sums.hists[a->sum], *y = &c->k->sums.hists[b->sum];
	uint64_t u = 0, v = 0;

	switch (c->by) {
	case LH_RANK_TOTAL:
		u = x->sum_ns, v = y->sum_ns;
		break;
	case LH_RANK_COUNT:
		break;
	case LH_RANK_P99:	/* an empty key's slot is -1: last */
		u = (uint64_t)(a->pct[P99].slot + 1), v = (uint64_t)(b->pct[P99].slot + 1);
		if (u == v)
			u = x->max_ns, v = y->max_ns;
		break;
	case LH_RANK_MAX:
		u = x->max_ns, v = y->max_ns;
		break;
	}
	if (u != v)
		return u > v ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return a->sum < b->sum ? -1 : a->sum > b->sum;
}

int lh_rank(struct lh_ranking *k, const struct lh_report *r, const struct lh_text_opts *t)
{
	struct rank_by by = { k, t->sort };
	size_t cap = 0;

	memset(k, 0, sizeof(*k));
	k->sums.meta = r->meta;	/* its scheme; the pointers stay r's */
	for (size_t i = 0; i < r->nhists; i++) {
		const struct lh_hist *h = &r->hists[i];
		struct lh_hist *sum;
		struct lh_rank_row *row;
		size_t before = k->sums.nhists;

		if (grow(k, &cap) || !(sum = lh_report_find_hist(&k->sums, "rank", &h->key)))
			goto nomem;
		row = &k->rows[sum - k->sums.hists];
		if (k->sums.nhists > before) {	/* a new key */
			memset(row, 0, sizeof(*row));
			row->sum = k->n++;
			row->charged = lh_report_key_charge(r, &h->key);
		}
		if (row->nhist < (int)(sizeof(row->hist) / sizeof(row->hist[0])))
			row->hist[row->nhist++] = i;
		if (paired(r, h->name) && lh_hist_merge(sum, h))
			goto nomem;
	}
	for (size_t i = 0; i < k->n; i++)
		lh_report_percentiles(r, &k->sums.hists[i], k->rows[i].pct);
	qsort_r(k->rows, k->n, sizeof(*k->rows), by_rank, &by);
	return 0;
nomem:
	lh_rank_free(k);
	return -ENOMEM;
}

void lh_rank_free(struct lh_ranking *k)
{
	lh_report_clear(&k->sums);
	free(k->rows);
	memset(k, 0, sizeof(*k));
}

/* What the keys are, in the plural ("threads"); "keys" for a combination. */
static const char *keys_noun(const char *grouping)
{
	static const char *const names[][2] = {
		{ "thread", "threads" }, { "process", "processes" }, { "cpu", "CPUs" },
		{ "cgroup", "cgroups" }, { "disk", "disks" }, { "op", "operations" },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(grouping, names[i][0]))
			return names[i][1];
	return "keys";
}

static const char *const sort_names[] = { "total time", "count", "p99", "max" };

/* A table of text cells, printed aligned: numbers on the right, labels on the left. */
struct table {
	int ncols, nrows;
	bool left[MAX_COLS];
	int width[MAX_COLS];
	char (*cells)[MAX_COLS][CELL];	/* nrows rows */
};

static void cell(struct table *tb, int row, int col, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void cell(struct table *tb, int row, int col, const char *fmt, ...)
{
	char *c = tb->cells[row][col];
	va_list ap;
	int n;

	va_start(ap, fmt);
	vsnprintf(c, CELL, fmt, ap);
	va_end(ap);
	n = (int)strlen(c);
	if (n > tb->width[col])
		tb->width[col] = n;
}

static void print_table(struct lh_out *o, const struct table *tb)
{
	for (int row = 0; row < tb->nrows; row++) {
		for (int col = 0; col < tb->ncols; col++) {
			const char *c = tb->cells[row][col];
			int gap = tb->width[col] - (int)strlen(c);

			lh_out_str(o, "  ");
			if (!tb->left[col])
				lh_out_printf(o, "%*s", gap, "");
			lh_out_str(o, c);
			if (tb->left[col] && col < tb->ncols - 1)
				lh_out_printf(o, "%*s", gap, "");
		}
		lh_out_char(o, '\n');
	}
}

/* A percentile's slot as "(lo, hi]", with '?' when the losses can move it. */
static void pct_cell(struct table *tb, int row, int col, const struct lh_pct *p,
		     const struct lh_meta *m, bool *marked)
{
	char range[64];

	if (p->slot < 0) {
		cell(tb, row, col, "-");
		return;
	}
	cell(tb, row, col, "%s%s", lh_slot_range(range, sizeof(range), p->slot, m),
	     p->low != p->high ? "?" : "");
	*marked = *marked || p->low != p->high;
}

bool lh_rank_print(struct lh_out *o, const struct lh_report *r, const struct lh_text_opts *t,
		   const struct lh_ranking *k)
{
	const struct lh_meta *m = &r->meta;
	const char *noun = m->desc ? m->desc->noun : "events";
	size_t shown = k->n < t->top ? k->n : t->top;
	uint64_t total = 0, rest_count = 0, rest_ns = 0, rest_lost = 0;
	bool lost_col = m->desc && m->desc->charges_keys && k->n &&
			(k->sums.hists[k->rows[0].sum].key.fields & LH_KEY_PID);
	struct table tb = { 0 };
	char a[32], b[32];
	bool marked = false;
	int nlabels = 0;

	for (size_t i = 0; i < k->n; i++)
		total = lh_add_sat(total, k->sums.hists[k->rows[i].sum].sum_ns);
	lh_out_printf(o, "\n%zu %s by %s (%s in all)", k->n, keys_noun(m->grouping),
		sort_names[t->sort], lh_text_duration(a, sizeof(a), total));
	lh_out_str(o, shown < k->n ? "; the top " : ":\n");
	if (shown < k->n)
		lh_out_printf(o, "%zu:\n", shown);
	tb.cells = calloc(shown + 1, sizeof(*tb.cells));
	if (!tb.cells) {
		lh_out_str(o, "  (no memory for the table)\n");
		return true;
	}
	tb.nrows = (int)shown + 1;
	/* the header row */
	cell(&tb, 0, 0, "TOTAL");
	cell(&tb, 0, 1, "SHARE");
	snprintf(a, sizeof(a), "%s", noun);
	for (char *c = a; *c; c++)
		*c = (char)(*c >= 'a' && *c <= 'z' ? *c - 'a' + 'A' : *c);
	cell(&tb, 0, 2, "%s", a);
	cell(&tb, 0, 3, "MEAN");
	cell(&tb, 0, 4, "P50 %s", m->unit);
	cell(&tb, 0, 5, "P99 %s", m->unit);
	cell(&tb, 0, 6, "MAX");
	tb.ncols = 7;
	if (lost_col)
		cell(&tb, 0, tb.ncols++, "LOST");
	for (size_t i = 0; i < shown; i++) {
		const struct lh_rank_row *row = &k->rows[i];
		const struct lh_hist *h = &k->sums.hists[row->sum];
		struct lh_kv kv[LH_MAX_KEY_FIELDS];
		int n = lh_key_fields(&h->key, kv), col = 0, y = (int)i + 1;
		char share[16];

		cell(&tb, y, col++, "%s", lh_text_duration(a, sizeof(a), h->sum_ns));
		cell(&tb, y, col++, "%s", lh_share(h->sum_ns, total, share, sizeof(share)));
		cell(&tb, y, col++, "%" PRIu64, h->count);
		cell(&tb, y, col++, "%s", h->count ?
		     lh_text_duration(b, sizeof(b), h->sum_ns / h->count) : "-");
		pct_cell(&tb, y, col++, &row->pct[P50], m, &marked);
		pct_cell(&tb, y, col++, &row->pct[P99], m, &marked);
		cell(&tb, y, col++, "%s", h->count ? lh_text_duration(a, sizeof(a), h->max_ns) : "-");
		if (lost_col)
			cell(&tb, y, col++, "%" PRIu64, row->charged);
		/* the labels, after the numbers: a cgroup path does not push them about */
		nlabels = 0;
		for (int f = 0; f < n && col + nlabels < MAX_COLS; f++) {
			if (!strcmp(kv[f].name, "start_ns") || !strcmp(kv[f].name, "cgroup_id"))
				continue;
			if (!i) {
				snprintf(b, sizeof(b), "%s", kv[f].name);
				for (char *c = b; *c; c++)
					*c = (char)(*c - 'a' + 'A');
				cell(&tb, 0, col + nlabels, "%s", b);
				tb.left[col + nlabels] = true;
			}
			cell(&tb, y, col + nlabels, "%s", kv[f].value[0] ? kv[f].value : "?");
			nlabels++;
		}
	}
	tb.ncols += nlabels;
	print_table(o, &tb);
	free(tb.cells);
	for (size_t i = shown; i < k->n; i++) {
		const struct lh_hist *h = &k->sums.hists[k->rows[i].sum];

		rest_count = lh_add_sat(rest_count, h->count);
		rest_ns = lh_add_sat(rest_ns, h->sum_ns);
		rest_lost = lh_add_sat(rest_lost, k->rows[i].charged);
	}
	if (shown < k->n) {
		char share[16];

		lh_out_printf(o, "  ... %zu more: %s (%s), %" PRIu64 " %s", k->n - shown,
			lh_text_duration(a, sizeof(a), rest_ns),
			lh_share(rest_ns, total, share, sizeof(share)), rest_count, noun);
		if (lost_col)
			lh_out_printf(o, ", %" PRIu64 " lost", rest_lost);
		lh_out_str(o, " (--top N shows more)\n");
	}
	return marked;
}
