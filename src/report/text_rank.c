// SPDX-License-Identifier: MIT
/* The ranked table of a grouped run: one line per key, by its total time. */
#include <ctype.h>
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
#define CELL 80			/* bytes of a cell; a longer label keeps its end ("...") */

/* Is histogram name one of r's paired kinds (every event of a key in one of
 * them once: its total time)? Without a descriptor, every kind is. */
static bool paired(const struct lh_report *r, const char *name)
{
	return !r->meta.desc || lh_tool_paired_hist(r->meta.desc, name);
}

static int grow(struct lh_ranking *rk, size_t *cap)
{
	struct lh_rank_row *rows;

	if (rk->n < *cap)
		return 0;
	*cap = *cap ? 2 * *cap : 64;
	rows = realloc(rk->rows, *cap * sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	rk->rows = rows;
	return 0;
}

struct rank_by {
	const struct lh_ranking *rk;
	enum lh_rank_by by;
};

/* qsort_r's order: the criterion first, then more events, then the report's
 * order (sum indices follow it). */
static int by_rank(const void *pa, const void *pb, void *ctx)
{
	const struct rank_by *c = ctx;
	const struct lh_rank_row *a = pa, *b = pb;
	const struct lh_hist *x = &c->rk->sums.hists[a->sum_idx], *y = &c->rk->sums.hists[b->sum_idx];
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
	return a->sum_idx < b->sum_idx ? -1 : a->sum_idx > b->sum_idx;
}

int lh_rank(struct lh_ranking *rk, const struct lh_report *r, const struct lh_text_opts *t)
{
	struct rank_by by = { rk, t->sort };
	size_t cap = 0;

	memset(rk, 0, sizeof(*rk));
	rk->sums.meta = r->meta;	/* its scheme; the pointers stay r's */
	for (size_t i = 0; i < r->nhists; i++) {
		const struct lh_hist *h = &r->hists[i];
		struct lh_hist *sum;
		struct lh_rank_row *row;
		size_t before = rk->sums.nhists;

		/* "rank" is no kind: lh_report_hist_lost takes it as LH_SCOPE_EVENTS, the
		 * scope of every paired kind */
		if (grow(rk, &cap) || !(sum = lh_report_find_hist(&rk->sums, "rank", &h->key)))
			goto nomem;
		row = &rk->rows[sum - rk->sums.hists];
		if (rk->sums.nhists > before) {	/* a new key */
			memset(row, 0, sizeof(*row));
			row->sum_idx = rk->n++;
			row->charged = lh_report_key_charge(r, &h->key);
		}
		if (row->nhist < (int)(sizeof(row->hist) / sizeof(row->hist[0])))
			row->hist[row->nhist++] = i;
		if (paired(r, h->name) && lh_hist_merge(sum, h))
			goto nomem;
	}
	for (size_t i = 0; i < rk->n; i++)
		lh_report_percentiles(r, &rk->sums.hists[i], rk->rows[i].pct);
	qsort_r(rk->rows, rk->n, sizeof(*rk->rows), by_rank, &by);
	return 0;
nomem:
	lh_rank_free(rk);
	return -ENOMEM;
}

void lh_rank_free(struct lh_ranking *rk)
{
	lh_report_clear(&rk->sums);
	free(rk->rows);
	memset(rk, 0, sizeof(*rk));
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

/* A label (a key field's value) in a cell: a longer one keeps its end, where two
 * cgroup paths under one parent differ, after "...". */
static void label_cell(struct table *tb, int row, int col, const char *v)
{
	size_t n = strlen(v);

	if (n < CELL)
		cell(tb, row, col, "%s", v);
	else
		cell(tb, row, col, "...%s", v + n - (CELL - 4));
}

/* s in capitals (ASCII) into buf: a column's title. */
static const char *upper(char *buf, size_t len, const char *s)
{
	size_t i = 0;

	for (; s[i] && i + 1 < len; i++)
		buf[i] = (char)toupper((unsigned char)s[i]);
	buf[i] = 0;
	return buf;
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
		   const struct lh_ranking *rk)
{
	const struct lh_meta *m = &r->meta;
	const char *noun = m->desc ? m->desc->noun : "events";
	size_t shown = rk->n < t->top ? rk->n : t->top;
	uint64_t total = 0, rest_count = 0, rest_ns = 0, rest_lost = 0;
	bool lost_col = m->desc && m->desc->charges_keys && rk->n &&
			(rk->sums.hists[rk->rows[0].sum_idx].key.fields & LH_KEY_PID);
	struct table tb = { 0 };
	char a[32], b[32];
	bool marked = false;
	int nlabels = 0;

	for (size_t i = 0; i < rk->n; i++)
		total = lh_add_sat(total, rk->sums.hists[rk->rows[i].sum_idx].sum_ns);
	lh_out_printf(o, "\n%zu %s by %s (%s in all)", rk->n, keys_noun(m->grouping),
		sort_names[t->sort], lh_text_duration(a, sizeof(a), total));
	lh_out_str(o, shown < rk->n ? "; the top " : ":\n");
	if (shown < rk->n)
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
	cell(&tb, 0, 2, "%s", upper(a, sizeof(a), noun));
	cell(&tb, 0, 3, "MEAN");
	cell(&tb, 0, 4, "P50 %s", m->unit);
	cell(&tb, 0, 5, "P99 %s", m->unit);
	cell(&tb, 0, 6, "MAX");
	tb.ncols = 7;
	if (lost_col)
		cell(&tb, 0, tb.ncols++, "LOST");
	for (size_t i = 0; i < shown; i++) {
		const struct lh_rank_row *row = &rk->rows[i];
		const struct lh_hist *h = &rk->sums.hists[row->sum_idx];
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
				cell(&tb, 0, col + nlabels, "%s", upper(b, sizeof(b), kv[f].name));
				tb.left[col + nlabels] = true;
			}
			label_cell(&tb, y, col + nlabels, kv[f].value[0] ? kv[f].value : "?");
			nlabels++;
		}
	}
	tb.ncols += nlabels;
	print_table(o, &tb);
	free(tb.cells);
	for (size_t i = shown; i < rk->n; i++) {
		const struct lh_hist *h = &rk->sums.hists[rk->rows[i].sum_idx];

		rest_count = lh_add_sat(rest_count, h->count);
		rest_ns = lh_add_sat(rest_ns, h->sum_ns);
		rest_lost = lh_add_sat(rest_lost, rk->rows[i].charged);
	}
	if (shown < rk->n) {
		char share[16];

		/* the noun is a plural ("waits"): one is its singular */
		lh_out_printf(o, "  ... %zu more: %s (%s), %" PRIu64 " %.*s", rk->n - shown,
			lh_text_duration(a, sizeof(a), rest_ns),
			lh_share(rest_ns, total, share, sizeof(share)), rest_count,
			(int)strlen(noun) - (rest_count == 1), noun);
		if (lost_col)
			lh_out_printf(o, ", %" PRIu64 " lost", rest_lost);
		lh_out_str(o, " (--top N shows more)\n");
	}
	return marked;
}
