// SPDX-License-Identifier: MIT
/* Text: the header and the histograms (the ranked table and the losses: text_rank.c,
 * text_losses.c). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "pmu_user.h"
#include "recline.h"
#include "registry.h"
#include "outbuf.h"
#include "report.h"
#include "text.h"

#define STARS 40

static const char *unit_header(const char *unit)
{
	if (!strcmp(unit, "ns"))
		return "nsecs";
	if (!strcmp(unit, "ms"))
		return "msecs";
	return "usecs";
}

/* v in decimal at p, padded with spaces to width: on the left (%*PRIu64), or
 * on the right when left is set (%-*PRIu64); returns the end. */
static char *put_u64(char *p, uint64_t v, int width, bool left)
{
	int n = (int)lh_u64_len(v);

	for (int i = n; !left && i < width; i++)
		*p++ = ' ';
	lh_put_u64_back(p + n, v);	/* n known: not counted again */
	for (int i = n; left && i < width; i++)
		p[i] = ' ';
	return p + (left && n < width ? width : n);
}

/* s padded with spaces on the right to width (%-*s); returns the end (inlined:
 * the strings are literals, their lengths known). */
static inline __attribute__((always_inline)) char *put_str(char *p, const char *s, int width)
{
	size_t n = strlen(s);

	memcpy(p, s, n);
	for (; (int)n < width; n++)
		p[n] = ' ';
	return p + n;
}

/* v in decimal, as fprintf's %PRIu64 writes it. */
static void put_dec(struct lh_out *o, uint64_t v)
{
	char *d = lh_out_room(o, 20);

	lh_out_wrote(o, (size_t)(lh_put_u64(d, v) - d));
}

/*
 * One row of a histogram, "lo -> hi : count |stars|" (a count under one star's
 * worth, max / STARS, shows as a '.'), formatted here rather
 * than by fprintf (a run with thousands of keys prints hundreds of thousands
 * of rows a second): the bytes of "%10" PRIu64 " -> %-10" PRIu64 " : %-8"
 * PRIu64 " |" ("inf" for an unbounded hi), STARS stars and spaces, "|\n".
 */
static void print_row(struct lh_out *o, uint64_t lo, uint64_t hi, uint64_t val, uint64_t max)
{
	/* STARS stars then STARS spaces: a bar of n stars is STARS bytes from STARS - n */
	static const char bar[2 * STARS + 1] = "****************************************"
					       "                                        ";
	char *row = lh_out_room(o, 3 * 20 + 16 + STARS), *p = row;
	/* floor(val * STARS / max) in integers while val * STARS fits (the x87 long
	 * double conversion of every row was ~1% of a run with 13,000 keys) */
	int n = !max ? 0 : val <= UINT64_MAX / STARS ? (int)(val * STARS / max) :
		(int)((long double)val * STARS / max);

	p = put_u64(p, lo, 10, false);
	p = put_str(p, " -> ", 0);
	p = hi == UINT64_MAX ? put_str(p, "inf", 10) : put_u64(p, hi, 10, true);
	p = put_str(p, " : ", 0);
	p = put_u64(p, val, 8, true);
	p = put_str(p, " |", 0);
	memcpy(p, bar + STARS - n, STARS);
	if (val && !n)	/* under one star's worth: a thin mark, not a star */
		*p = '.';
	p += STARS;
	p = put_str(p, "|\n", 0);
	lh_out_wrote(o, (size_t)(p - row));
}

/* m's filters, each as " name=value" (the header's filters, a filtered total). */
static void put_filters(struct lh_out *o, const struct lh_meta *m)
{
	for (int i = 0; i < m->nfilters; i++)
		lh_out_printf(o, " %s=%s", m->filters[i].name, m->filters[i].value);
}

/* The key's fields ("tid 12 pid 10 comm x"); the total is the tool's everyone ("all
 * tasks"), with m's filters "all tasks (filtered: pid=12)". */
static void put_key(struct lh_out *o, const struct lh_key *k, const struct lh_meta *m)
{
	char comm[4 * sizeof(k->comm) + 1];
	const char *sep = "";

	if (!k->fields) {
		lh_out_str(o, m->desc ? m->desc->everyone : "all tasks");
		if (!m->nfilters)
			return;
		lh_out_str(o, " (filtered:");
		put_filters(o, m);
		lh_out_char(o, ')');
		return;
	}
	/* lh_out_str and put_dec, not printf: thousands of keys an interval (--histograms all) */
	if (k->fields & LH_KEY_TID) {
		lh_out_str(o, "tid ");
		put_dec(o, k->tid);
		sep = " ";
	}
	if (k->fields & LH_KEY_PID) {
		lh_out_str(o, sep);
		lh_out_str(o, "pid ");
		put_dec(o, k->pid);
		sep = " ";
	}
	if (k->fields & LH_KEY_COMM) {
		lh_printable(k->comm, sizeof(k->comm), comm, sizeof(comm));
		lh_out_str(o, sep);
		lh_out_str(o, "comm ");
		lh_out_str(o, comm[0] ? comm : "?");
		sep = " ";
	}
	if (k->fields & LH_KEY_CPU) {
		lh_out_str(o, sep);
		lh_out_str(o, "cpu ");
		put_dec(o, k->cpu);
		sep = " ";
	}
	if (k->fields & LH_KEY_DISK) {
		lh_out_str(o, sep);
		lh_out_str(o, "disk ");
		lh_out_str(o, k->disk);
		sep = " ";
	}
	if (k->fields & LH_KEY_OP) {
		lh_out_str(o, sep);
		lh_out_str(o, "op ");
		lh_out_str(o, k->op);
		sep = " ";
	}
	if (k->fields & LH_KEY_CGROUP)
		lh_out_printf(o, "%scgroup %s (id %" PRIu64 ")", sep, k->cgroup ? k->cgroup : "?",
			k->cgroup_id);
}

static double in_unit(uint64_t ns, uint64_t unit_ns)
{
	return (double)ns / (double)unit_ns;
}

/* v as printf's "%.3f". */
static void put_fixed3(struct lh_out *o, double v)
{
	char d[64];
	struct lh_line l;

	lh_line_init(&l, d, sizeof(d));
	lh_line_fixed(&l, v, 3, 0);
	if (l.kept == l.len)
		lh_out_put(o, d, l.len);
	else
		lh_out_printf(o, "%.3f", v);	/* longer than d: never for a double below 2^64 */
}

const char *lh_text_duration(char *buf, size_t len, uint64_t ns)
{
	if (ns < 1000)
		snprintf(buf, len, "%" PRIu64 " ns", ns);
	else if (ns < 1000000)
		snprintf(buf, len, "%.1f us", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, len, "%.2f ms", (double)ns / 1e6);
	else
		snprintf(buf, len, "%.2f s", (double)ns / 1e9);
	return buf;
}

bool lh_text_moves(const struct lh_pct pct[LH_NR_PERCENTILES])
{
	for (size_t i = 0; i < LH_NR_PERCENTILES; i++)
		if (pct[i].low != pct[i].high)
			return true;
	return false;
}

/*
 * "count N  mean X us  p50 (lo, hi]  ...  max Y us": a percentile the L lost
 * events that could have belonged to h can move ends in '?'. With -v, a line
 * per percentile with its bounds (all L below, all L above) follows. Returns
 * whether a '?' was printed.
 */
static bool print_stats(struct lh_out *o, const struct lh_hist *h, const struct lh_report *r,
			const struct lh_text_opts *t)
{
	const struct lh_meta *m = &r->meta;
	struct lh_pct pct[LH_NR_PERCENTILES];
	uint64_t lost = lh_report_percentiles(r, h, pct);
	char a[64], b[160];

	lh_out_str(o, "     count ");
	put_dec(o, h->count);
	lh_out_str(o, "  mean ");
	put_fixed3(o, in_unit(h->sum_ns, m->scheme.unit_ns) / (double)h->count);
	lh_out_char(o, ' ');
	lh_out_str(o, m->unit);
	for (size_t i = 0; i < LH_NR_PERCENTILES; i++) {
		lh_out_str(o, "  ");
		lh_out_str(o, lh_percentiles[i].name);
		lh_out_char(o, ' ');
		lh_out_str(o, lh_slot_range(a, sizeof(a), pct[i].slot, m));
		if (pct[i].low != pct[i].high)
			lh_out_char(o, '?');
	}
	lh_out_str(o, "  max ");
	put_fixed3(o, in_unit(h->max_ns, m->scheme.unit_ns));
	lh_out_char(o, ' ');
	lh_out_str(o, m->unit);
	lh_out_char(o, '\n');
	if (!lost || !t->verbose)
		return lh_text_moves(pct);
	for (size_t i = 0; i < LH_NR_PERCENTILES; i++) {
		lh_out_printf(o, "     %-5s %s %s ", lh_percentiles[i].name,
			lh_slot_range(a, sizeof(a), pct[i].slot, m), m->unit);
		if (pct[i].low == pct[i].high)
			lh_out_printf(o, "(%" PRIu64 " lost cannot move it)\n", lost);
		else
			lh_out_printf(o, "(%" PRIu64 " lost: could be %s)\n", lost,
				lh_bounds_range(b, sizeof(b), pct[i].low, pct[i].high, m));
	}
	lh_out_printf(o, "     max   %.3f %s (%" PRIu64 " lost: could be longer)\n",
		in_unit(h->max_ns, m->scheme.unit_ns), m->unit, lost);
	return lh_text_moves(pct);
}

/* One histogram: its title, runqlat's table, the stats line. Returns whether a
 * percentile it shows is marked '?'. */
static bool print_hist(struct lh_out *o, const struct lh_hist *h, const struct lh_report *r,
		       const struct lh_text_opts *t)
{
	const struct lh_meta *m = &r->meta;
	int first = -1, last = -1;
	uint64_t max = 0, lost;
	const char *desc = h->name;

	for (int i = 0; i < m->nkinds; i++)
		if (!strcmp(m->kinds[i].name, h->name))
			desc = m->kinds[i].desc;
	lh_out_char(o, '\n');
	lh_out_str(o, h->name);
	lh_out_str(o, ": ");
	lh_out_str(o, desc);
	lh_out_str(o, "; ");
	put_key(o, &h->key, &r->meta);
	lh_out_char(o, '\n');
	for (uint32_t i = 0; i < h->nslots; i++) {
		if (!h->slots[i])
			continue;
		if (first < 0)
			first = (int)i;
		last = (int)i;
		if (h->slots[i] > max)
			max = h->slots[i];
	}
	if (first < 0) {
		lost = lh_report_hist_lost(r, h);
		if (lost)
			lh_out_printf(o, "     (no events; %" PRIu64 " lost could have been here)\n", lost);
		else
			lh_out_str(o, "     (no events)\n");
		return false;
	}
	/* "%*s%s %-*s : count    distribution\n" with 5, "", the header, 13, "(lo, hi]" */
	lh_out_str(o, "     ");
	lh_out_str(o, unit_header(m->unit));
	lh_out_str(o, " (lo, hi]      : count    distribution\n");
	/* a row "lo -> hi" holds lo < v <= hi (the first row also 0) */
	for (int i = first; i <= last; i++)
		print_row(o, lh_slot_lo((uint32_t)i, m->scheme.precision),
			  lh_slot_hi((uint32_t)i, m->scheme.precision), h->slots[i], max);
	if (m->has_bytes)
		lh_out_printf(o, "     bytes %" PRIu64 "\n", h->bytes);
	return print_stats(o, h, r, t);
}

static const char *or_unknown(const char *s)
{
	return s ? s : "unknown";
}

/*
 * -v: the context, in two lines: what the latencies depend on (preemption model,
 * hypervisor, SMT, governors, latency settings on the command line, the
 * traced disks' queues) and the steal and load over this aggregate.
 */
static void print_context(struct lh_out *o, const struct lh_meta *m)
{
	json_object *cmd, *disks;
	const char *src = lh_context_str(m, "preempt_source");

	if (m->context) {
		lh_out_printf(o, "context: preempt %s", or_unknown(lh_context_str(m, "preempt")));
		if (src && strcmp(src, "mixed"))
			lh_out_printf(o, " (%s)", src);
		lh_out_printf(o, ", hypervisor %s, SMT %s, governor %s",
			or_unknown(lh_context_str(m, "hypervisor")),
			or_unknown(lh_context_str(m, "smt")),
			lh_context_str(m, "governor") ? lh_context_str(m, "governor") : "none (no cpufreq)");
		lh_out_str(o, ", cmdline:");
		if (json_object_object_get_ex(m->context, "cmdline", &cmd) &&
		    json_object_is_type(cmd, json_type_object)) {
			int n = 0;

			json_object_object_foreach(cmd, k, v) {
				if (json_object_is_type(v, json_type_boolean))
					lh_out_printf(o, " %s", k);
				else
					lh_out_printf(o, " %s=%s", k, json_object_get_string(v));
				n++;
			}
			if (!n)
				lh_out_str(o, " no latency settings");
		} else {
			lh_out_printf(o, " %s", json_object_is_type(cmd, json_type_string) ?
				json_object_get_string(cmd) : "unknown");
		}
		if (json_object_object_get_ex(m->context, "disks", &disks) &&
		    json_object_is_type(disks, json_type_string))
			lh_out_printf(o, "; disks: %s", json_object_get_string(disks));	/* mixed */
		if (json_object_object_get_ex(m->context, "disks", &disks) &&
		    json_object_is_type(disks, json_type_array)) {
			lh_out_str(o, "; disks:");
			for (size_t i = 0; i < json_object_array_length(disks); i++) {
				json_object *d = json_object_array_get_idx(disks, i), *x;
				const char *names[] = { "scheduler", "nr_requests", "queue_depth",
							"rotational" };

				if (!json_object_object_get_ex(d, "name", &x))
					continue;
				lh_out_printf(o, "%s %s (", i ? "," : "", json_object_get_string(x));
				for (size_t j = 0; j < 4; j++) {
					json_object_object_get_ex(d, names[j], &x);
					lh_out_printf(o, "%s%s %s", j ? ", " : "", names[j],
						x ? json_object_get_string(x) : "unknown");
				}
				lh_out_char(o, ')');
			}
		}
		lh_out_char(o, '\n');
	}
	if (m->load.known) {
		lh_out_printf(o, "load: steal %.2f%% of CPU time", m->load.cpu_ns ?
			100.0 * (double)m->load.steal_ns / (double)m->load.cpu_ns : 0.0);
		if (m->load.ends)
			lh_out_printf(o, ", 1-min load average %.2f -> %.2f\n", m->load.loadavg_start,
				m->load.loadavg_end);
		else
			lh_out_printf(o, ", 1-min load average up to %.2f\n", m->load.loadavg_max);
	}
}

/*
 * Two lines: the tool, host, kernel, CPUs and duration; the attach types, filters,
 * grouping and slots. Then, when so: that names are hashed, what makes the inputs
 * of a merge differ. -v adds the clock, the context and the load.
 */
static void print_header(struct lh_out *o, const struct lh_meta *m, const struct lh_text_opts *t)
{
	bool same = true;
	json_object *mixed;

	lh_out_printf(o, "lathist %s: host %s, kernel %s, %d CPUs; ", m->tool, m->host, m->kernel,
		m->ncpus);
	if (m->interval_index)
		lh_out_printf(o, "interval %u, %.3f s", m->interval_index,
			(double)m->duration_ns / 1e9);
	else
		lh_out_printf(o, "%.3f s", (double)m->duration_ns / 1e9);
	if (t->verbose && m->clock)
		lh_out_printf(o, "; clock %s", m->clock);
	lh_out_char(o, '\n');
	for (int i = 1; i < m->nattach; i++)
		same = same && !strcmp(m->attach[i].type, m->attach[0].type);
	lh_out_str(o, "attach");
	if (same && m->nattach && !t->verbose)
		lh_out_printf(o, " %s", m->attach[0].type);
	else
		for (int i = 0; i < m->nattach; i++)
			lh_out_printf(o, " %s=%s", m->attach[i].tracepoint, m->attach[i].type);
	lh_out_str(o, "; filters");
	if (!m->nfilters)
		lh_out_str(o, " none");
	put_filters(o, m);
	if (m->filter_exit_realtime_ns && m->filter_exit_realtime_ns >= m->start_realtime_ns)
		lh_out_printf(o, " (exited %.2f s into this aggregate)",
			(double)(m->filter_exit_realtime_ns - m->start_realtime_ns) / 1e9);
	else if (m->filter_exit_realtime_ns)
		lh_out_str(o, " (exited before this aggregate)");
	if (strcmp(m->grouping, "total")) {	/* "process,disk" as "per process, disk" */
		lh_out_str(o, "; per ");
		for (const char *g = m->grouping; *g; g++)
			if (*g == ',')
				lh_out_str(o, ", ");
			else
				lh_out_char(o, *g);
	}
	else
		lh_out_printf(o, "; %s together", m->desc ? m->desc->everyone : "all tasks");
	if (m->scheme.precision)
		lh_out_printf(o, "; precision %u (%u sub-slots per power of two)\n",
			m->scheme.precision, 1U << m->scheme.precision);
	else
		lh_out_str(o, "; log2 slots\n");
	if (m->anonymized)
		lh_out_str(o, "anonymized: pids, tids, task names, the host and its boot id are salted "
		      "hashes\n");
	if (m->context && json_object_object_get_ex(m->context, "mixed", &mixed) &&
	    json_object_is_type(mixed, json_type_object)) {
		int n = 0;

		/* boot ids differ between hosts and boots: not a setting */
		json_object_object_foreach(mixed, k, v) {
			if (!strcmp(k, "boot_id"))
				continue;
			if (!n++)
				lh_out_str(o, "CONTEXT DIFFERS between the inputs (their latencies may "
				      "not compare):");
			lh_out_printf(o, "%s %s %s", n > 1 ? ";" : "", k,
				json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
		}
		if (n)
			lh_out_char(o, '\n');
	}
	if (t->verbose)
		print_context(o, m);
}

/* A counter table per key: raw, times, multiplexing, the estimate, a rate per on-CPU ms. */
static void print_counters(struct lh_out *o, const struct lh_report *r)
{
	const struct lh_pmu_meta *pm = &r->meta.pmu;

	if (!pm->n && !pm->nunsupported)
		return;
	lh_out_str(o, "\ncounters over on-CPU slices (raw = counted; estimate = raw x time_enabled / "
	      "time_running,\nundefined when the counter never ran):\n");
	for (size_t a = 0, b; a < r->npmu; a = b) {
		double ipc;
		bool est;
		int err;

		b = lh_pmu_key_end(r, a);
		lh_out_str(o, "  ");
		put_key(o, &r->pmu[a].key, &r->meta);
		lh_out_printf(o, ": %" PRIu64 " slices, on-CPU %.3f ms", r->pmu[a].slices,
			(double)r->pmu[a].oncpu_ns / 1e6);
		if (r->pmu[a].read_failed)
			lh_out_printf(o, ", %" PRIu64 " slices left out (a counter read failed)",
				r->pmu[a].read_failed);
		lh_out_printf(o, "\n    %-16s %16s %12s %12s %12s %20s %14s\n", "event", "raw",
			"enabled ms", "running ms", "multiplexed", "estimate", "per on-CPU ms");
		for (size_t i = a; i < b; i++) {
			const struct lh_pmu_row *w = &r->pmu[i];
			char estbuf[48], rate[32];
			double v;

			if (!lh_pmu_estimate(w->raw, w->enabled_ns, w->running_ns, &v, &est)) {
				snprintf(estbuf, sizeof(estbuf), "undefined");
				snprintf(rate, sizeof(rate), "-");
			} else {
				snprintf(estbuf, sizeof(estbuf), est ? "~%.0f (estimate)" : "%.0f", v);
				if (w->oncpu_ns)
					snprintf(rate, sizeof(rate), "%.1f", v / ((double)w->oncpu_ns / 1e6));
				else
					snprintf(rate, sizeof(rate), "-");
			}
			lh_out_printf(o, "    %-16s %16" PRIu64 " %12.3f %12.3f %12" PRIu64 " %20s %14s\n",
				pm->names[w->event], w->raw, (double)w->enabled_ns / 1e6,
				(double)w->running_ns / 1e6, w->multiplexed, estbuf, rate);
		}
		err = lh_pmu_ipc(r, a, b, &ipc, &est);
		if (!err)
			lh_out_printf(o, "    IPC (instructions / cycles): %.3f%s\n", ipc,
				est ? " (from estimates: the counters were multiplexed)" : "");
		else if (err == -EDOM)
			lh_out_str(o, "    IPC (instructions / cycles): undefined\n");
	}
	for (int i = 0; i < pm->nunsupported; i++)
		lh_out_printf(o, "  %s: not counted (%s)\n", pm->unsupported[i].name,
			lh_pmu_why(pm->unsupported[i].err));
}

void lh_text_defaults(struct lh_text_opts *t)
{
	memset(t, 0, sizeof(*t));
	t->top = LH_TEXT_TOP;
	t->histograms = LH_TEXT_HISTOGRAMS;
}

/* A grouped run: the ranked table, then the histograms of its top keys. Returns
 * whether a percentile shown is marked '?'. */
static bool print_ranked(struct lh_out *o, const struct lh_report *r, const struct lh_text_opts *t)
{
	struct lh_ranking k;
	bool marked = false;

	if (lh_rank(&k, r, t)) {	/* no memory for the table: every histogram, as they come */
		for (size_t i = 0; i < r->nhists; i++)
			marked = print_hist(o, &r->hists[i], r, t) || marked;
		return marked;
	}
	marked = lh_rank_print(o, r, t, &k);
	for (size_t i = 0; i < k.n && i < t->histograms; i++)
		for (int j = 0; j < k.rows[i].nhist; j++)
			marked = print_hist(o, &r->hists[k.rows[i].hist[j]], r, t) || marked;
	lh_rank_free(&k);
	return marked;
}

void lh_render_text(FILE *f, const struct lh_report *r, const struct lh_text_opts *t)
{
	struct lh_out out, *o = &out;	/* 64 KiB of stack: one fwrite per 64 KiB */
	struct lh_text_opts defaults;
	bool grouped = strcmp(r->meta.grouping, "total") != 0, marked = false;

	if (!t) {
		lh_text_defaults(&defaults);
		t = &defaults;
	}
	o->f = f;
	o->n = 0;
	print_header(o, &r->meta, t);
	if (!r->nhists) {
		lh_out_str(o, "\n(no paired events)\n");
	} else if (grouped) {
		marked = print_ranked(o, r, t);
	} else {
		for (size_t i = 0; i < r->nhists; i++) {
			lh_report_prefetch_after(r, i);
			print_hist(o, &r->hists[i], r, t);
		}
	}
	print_counters(o, r);
	lh_text_losses(o, r, t, grouped, marked);
	lh_out_flush(o);
	fflush(f);
}
