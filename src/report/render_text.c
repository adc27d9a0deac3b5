// SPDX-License-Identifier: MIT
/* Text renderer: familiar to runqlat/biolatency users, plus stats and losses. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "pmu_user.h"
#include "recline.h"
#include "report.h"

#define STARS 40

/* lh_render_text holds the stream's lock (flockfile) for the whole render, so
 * the writes below take the unlocked calls (glibc): a run with thousands of
 * keys makes about a million of them a second, each else an atomic lock and
 * unlock. */
#define fputs fputs_unlocked
#define fwrite fwrite_unlocked
#define fputc fputc_unlocked

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

/* s padded with spaces on the right to width (%-*s); returns the end. */
static char *put_str(char *p, const char *s, int width)
{
	size_t n = strlen(s);

	memcpy(p, s, n);
	for (; (int)n < width; n++)
		p[n] = ' ';
	return p + n;
}

/* v in decimal, as fprintf's %PRIu64 writes it. */
static void fput_u64(FILE *f, uint64_t v)
{
	char d[20];

	fwrite(d, 1, (size_t)(lh_put_u64(d, v) - d), f);
}

/*
 * One row of a histogram, "lo -> hi : count |stars|", formatted here rather
 * than by fprintf (a run with thousands of keys prints hundreds of thousands
 * of rows a second): the bytes of "%10" PRIu64 " -> %-10" PRIu64 " : %-8"
 * PRIu64 " |" ("inf" for an unbounded hi), STARS stars and spaces, "|\n".
 */
static void print_row(FILE *f, uint64_t lo, uint64_t hi, uint64_t val, uint64_t max)
{
	/* STARS stars then STARS spaces: a bar of n stars is STARS bytes from STARS - n */
	static const char bar[2 * STARS + 1] = "****************************************"
					       "                                        ";
	char row[3 * 20 + 16 + STARS], *p = row;
	int n = max ? (int)((long double)val * STARS / max) : 0;

	if (val && !n)
		n = 1;
	p = put_u64(p, lo, 10, false);
	p = put_str(p, " -> ", 0);
	p = hi == UINT64_MAX ? put_str(p, "inf", 10) : put_u64(p, hi, 10, true);
	p = put_str(p, " : ", 0);
	p = put_u64(p, val, 8, true);
	p = put_str(p, " |", 0);
	memcpy(p, bar + STARS - n, STARS);
	p += STARS;
	p = put_str(p, "|\n", 0);
	fwrite(row, 1, (size_t)(p - row), f);
}

static void print_key(FILE *f, const struct lh_key *k)
{
	char comm[4 * sizeof(k->comm) + 1];
	const char *sep = "";

	if (!k->fields) {
		fputs("all tasks", f);
		return;
	}
	/* fputs and fput_u64, not fprintf: thousands of keys an interval */
	if (k->fields & LH_KEY_TID) {
		fputs("tid ", f);
		fput_u64(f, k->tid);
		sep = " ";
	}
	if (k->fields & LH_KEY_PID) {
		fputs(sep, f);
		fputs("pid ", f);
		fput_u64(f, k->pid);
		sep = " ";
	}
	if (k->fields & LH_KEY_COMM) {
		lh_printable(k->comm, sizeof(k->comm), comm, sizeof(comm));
		fputs(sep, f);
		fputs("comm ", f);
		fputs(comm[0] ? comm : "?", f);
		sep = " ";
	}
	if (k->fields & LH_KEY_CPU) {
		fputs(sep, f);
		fputs("cpu ", f);
		fput_u64(f, k->cpu);
		sep = " ";
	}
	if (k->fields & LH_KEY_DISK) {
		fputs(sep, f);
		fputs("disk ", f);
		fputs(k->disk, f);
		sep = " ";
	}
	if (k->fields & LH_KEY_OP) {
		fputs(sep, f);
		fputs("op ", f);
		fputs(k->op, f);
		sep = " ";
	}
	if (k->fields & LH_KEY_CGROUP)
		fprintf(f, "%scgroup %s (id %" PRIu64 ")", sep, k->cgroup ? k->cgroup : "?",
			k->cgroup_id);
}

static double in_unit(uint64_t ns, uint64_t unit_ns)
{
	return (double)ns / (double)unit_ns;
}

/*
 * count, mean, the percentiles as slots and the exact max; with L events lost
 * that could have belonged to h, each percentile's bounds (all L below, all L
 * above) on a line of its own, and whether L can move it.
 */
/* v as printf's "%.3f" (lh_line_fixed, exact: thousands of keys an interval). */
static void fput_fixed3(FILE *f, double v)
{
	char d[64];
	struct lh_line l;

	lh_line_init(&l, d, sizeof(d));
	lh_line_fixed(&l, v, 3, 0);
	if (l.kept == l.len)
		fwrite(d, 1, l.len, f);
	else
		fprintf(f, "%.3f", v);	/* longer than d: never for a double below 2^64 */
}

static void print_stats(FILE *f, const struct lh_hist *h, const struct lh_report *r)
{
	const struct lh_meta *m = &r->meta;
	struct lh_pct pct[LH_NR_PERCENTILES];
	uint64_t lost = lh_report_percentiles(r, h, pct);
	char a[64], b[160];

	fputs("     count ", f);
	fput_u64(f, h->count);
	fputs("  mean ", f);
	fput_fixed3(f, in_unit(h->sum_ns, m->scheme.unit_ns) / (double)h->count);
	fputc(' ', f);
	fputs(m->unit, f);
	if (!lost) {
		for (size_t i = 0; i < LH_NR_PERCENTILES; i++) {
			fputs("  ", f);
			fputs(lh_percentiles[i].name, f);
			fputc(' ', f);
			fputs(lh_slot_range(a, sizeof(a), pct[i].slot, m), f);
		}
		fputc(' ', f);
		fputs(m->unit, f);
		fputs("  max ", f);
		fput_fixed3(f, in_unit(h->max_ns, m->scheme.unit_ns));
		fputc(' ', f);
		fputs(m->unit, f);
		fputc('\n', f);
		return;
	}
	fprintf(f, "  max %.3f %s (%" PRIu64 " lost: could be longer)\n",
		in_unit(h->max_ns, m->scheme.unit_ns), m->unit, lost);
	for (size_t i = 0; i < LH_NR_PERCENTILES; i++) {
		fprintf(f, "     %-5s %s %s ", lh_percentiles[i].name,
			lh_slot_range(a, sizeof(a), pct[i].slot, m), m->unit);
		if (pct[i].low == pct[i].high)
			fprintf(f, "(%" PRIu64 " lost cannot move it)\n", lost);
		else
			fprintf(f, "(%" PRIu64 " lost: could be %s)\n", lost,
				lh_bounds_range(b, sizeof(b), pct[i].low, pct[i].high, m));
	}
}

static void print_hist(FILE *f, const struct lh_hist *h, const struct lh_report *r)
{
	const struct lh_meta *m = &r->meta;
	int first = -1, last = -1;
	uint64_t max = 0, lost;
	const char *desc = h->name;

	for (int i = 0; i < m->nkinds; i++)
		if (!strcmp(m->kinds[i].name, h->name))
			desc = m->kinds[i].desc;
	fputc('\n', f);
	fputs(h->name, f);
	fputs(": ", f);
	fputs(desc, f);
	fputs("; ", f);
	print_key(f, &h->key);
	fputc('\n', f);
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
			fprintf(f, "     (no events; %" PRIu64 " lost could have been here)\n", lost);
		else
			fputs("     (no events)\n", f);
		return;
	}
	/* "%*s%s %-*s : count    distribution\n" with 5, "", the header, 13, "(lo, hi]" */
	fputs("     ", f);
	fputs(unit_header(m->unit), f);
	fputs(" (lo, hi]      : count    distribution\n", f);
	/* a row "lo -> hi" holds lo < v <= hi (the first row also 0) */
	for (int i = first; i <= last; i++)
		print_row(f, lh_slot_lo((uint32_t)i, m->scheme.precision),
			  lh_slot_hi((uint32_t)i, m->scheme.precision), h->slots[i], max);
	if (m->has_bytes)
		fprintf(f, "     bytes %" PRIu64 "\n", h->bytes);
	print_stats(f, h, r);
}

static const char *or_unknown(const char *s)
{
	return s ? s : "unknown";
}

/*
 * The context, in two lines: what the latencies depend on (preemption model,
 * hypervisor, SMT, governors, latency settings on the command line, the
 * traced disks' queues) and the steal and load over this aggregate.
 */
static void print_context(FILE *f, const struct lh_meta *m)
{
	json_object *cmd, *disks;
	const char *src = lh_context_str(m, "preempt_source");

	if (m->context) {
		fprintf(f, "context: preempt %s", or_unknown(lh_context_str(m, "preempt")));
		if (src && strcmp(src, "mixed"))
			fprintf(f, " (%s)", src);
		fprintf(f, ", hypervisor %s, SMT %s, governor %s",
			or_unknown(lh_context_str(m, "hypervisor")),
			or_unknown(lh_context_str(m, "smt")),
			lh_context_str(m, "governor") ? lh_context_str(m, "governor") : "none (no cpufreq)");
		fputs(", cmdline:", f);
		if (json_object_object_get_ex(m->context, "cmdline", &cmd) &&
		    json_object_is_type(cmd, json_type_object)) {
			int n = 0;

			json_object_object_foreach(cmd, k, v) {
				if (json_object_is_type(v, json_type_boolean))
					fprintf(f, " %s", k);
				else
					fprintf(f, " %s=%s", k, json_object_get_string(v));
				n++;
			}
			if (!n)
				fputs(" no latency settings", f);
		} else {
			fprintf(f, " %s", json_object_is_type(cmd, json_type_string) ?
				json_object_get_string(cmd) : "unknown");
		}
		if (json_object_object_get_ex(m->context, "disks", &disks) &&
		    json_object_is_type(disks, json_type_string))
			fprintf(f, "; disks: %s", json_object_get_string(disks));	/* mixed */
		if (json_object_object_get_ex(m->context, "disks", &disks) &&
		    json_object_is_type(disks, json_type_array)) {
			fputs("; disks:", f);
			for (size_t i = 0; i < json_object_array_length(disks); i++) {
				json_object *d = json_object_array_get_idx(disks, i), *x;
				const char *names[] = { "scheduler", "nr_requests", "queue_depth",
							"rotational" };

				if (!json_object_object_get_ex(d, "name", &x))
					continue;
				fprintf(f, "%s %s (", i ? "," : "", json_object_get_string(x));
				for (size_t j = 0; j < 4; j++) {
					json_object_object_get_ex(d, names[j], &x);
					fprintf(f, "%s%s %s", j ? ", " : "", names[j],
						x ? json_object_get_string(x) : "unknown");
				}
				fputc(')', f);
			}
		}
		fputc('\n', f);
		if (json_object_object_get_ex(m->context, "mixed", &cmd) &&
		    json_object_is_type(cmd, json_type_object)) {
			int n = 0;

			/* boot ids differ between hosts and boots: not a setting */
			json_object_object_foreach(cmd, k, v) {
				if (!strcmp(k, "boot_id"))
					continue;
				if (!n++)
					fputs("CONTEXT DIFFERS between the inputs (their latencies may "
					      "not compare):", f);
				fprintf(f, "%s %s %s", n > 1 ? ";" : "", k,
					json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
			}
			if (n)
				fputc('\n', f);
		}
	}
	if (m->load.known) {
		fprintf(f, "load: steal %.2f%% of CPU time", m->load.cpu_ns ?
			100.0 * (double)m->load.steal_ns / (double)m->load.cpu_ns : 0.0);
		if (m->load.ends)
			fprintf(f, ", 1-min load average %.2f -> %.2f\n", m->load.loadavg_start,
				m->load.loadavg_end);
		else
			fprintf(f, ", 1-min load average up to %.2f\n", m->load.loadavg_max);
	}
}

static void print_header(FILE *f, const struct lh_meta *m)
{
	fprintf(f, "lathist %s: host %s, kernel %s, %d CPUs, clock %s\n", m->tool, m->host,
		m->kernel, m->ncpus, m->clock);
	print_context(f, m);
	if (m->anonymized)
		fputs("anonymized: pids, tids, task names, the host and its boot id are salted "
		      "hashes\n", f);
	if (m->unchecked[0])
		fprintf(f, "NOT CHECKED: %s\n", m->unchecked);
	fputs("attach:", f);
	for (int i = 0; i < m->nattach; i++)
		fprintf(f, " %s=%s", m->attach[i].tracepoint, m->attach[i].type);
	fputs("\nfilters:", f);
	if (!m->nfilters)
		fputs(" none", f);
	for (int i = 0; i < m->nfilters; i++)
		fprintf(f, " %s=%s", m->filters[i].name, m->filters[i].value);
	if (m->filter_exit_realtime_ns && m->filter_exit_realtime_ns >= m->start_realtime_ns)
		fprintf(f, " (exited %.2f s into this aggregate)",
			(double)(m->filter_exit_realtime_ns - m->start_realtime_ns) / 1e9);
	else if (m->filter_exit_realtime_ns)
		fputs(" (exited before this aggregate)", f);
	fprintf(f, "; grouping: %s; ", m->grouping);
	if (m->scheme.precision)
		fprintf(f, "precision %u (%u linear sub-slots per power of two)\n",
			m->scheme.precision, 1U << m->scheme.precision);
	else
		fputs("log2 slots\n", f);
	if (m->interval_index)
		fprintf(f, "interval %u: %.3f s\n", m->interval_index, (double)m->duration_ns / 1e9);
	else
		fprintf(f, "duration: %.3f s\n", (double)m->duration_ns / 1e9);
}

/*
 * The kernel gaps, said plainly: switches the kernel made without a
 * sched_switch event, and on which CPUs. The waits they hid are in the loss
 * classes (missed_switch_in, missed_wait, unpaired_no_start).
 */
static void print_gaps(FILE *f, const struct lh_report *r)
{
	uint64_t missed = r->counters[LH_GAP_MISSED_SWITCH], seen = r->counters[LH_EV_SWITCHES];
	uint64_t hidden = r->counters[LH_GAP_HIDDEN_TASKS];
	char share[16];
	const char *sep = "";

	if (!(r->meta.tool_bit & LH_TOOL_RUNQ))
		return;
	if (hidden)
		fprintf(f, "KERNEL GAP: %" PRIu64 " traced task%s hidden from the end-of-run check (the "
			"kernel's task iterator did not show %s):\ntheir waits after their last event seen "
			"are not counted.\n", hidden, hidden == 1 ? " was" : "s were",
			hidden == 1 ? "it" : "them");
	if (!missed)
		return;
	fprintf(f, "KERNEL GAP: %" PRIu64 " of %" PRIu64 " context switches (%s) had no sched_switch "
		"event (", missed, lh_add_sat(seen, missed),
		lh_share(missed, lh_add_sat(seen, missed), share, sizeof(share)));
	for (uint32_t cpu = 0; cpu < r->gap_ncpus; cpu++) {
		if (!r->gap_cpu[cpu])
			continue;
		fprintf(f, "%scpu %u: %" PRIu64, sep, cpu, r->gap_cpu[cpu]);
		sep = ", ";
	}
	fputs(");\nthe waits they hid are counted as losses where the tasks' switch counts show "
	      "them\n(missed_switch_in, missed_wait, unpaired_no_start).\n", f);
}

static void print_losses(FILE *f, const struct lh_report *r)
{
	const uint64_t *v = r->counters;
	uint64_t events = v[LH_EV_ENDS], hist_lost = lh_hist_lost(v);
	char *reasons[LH_NR_COUNTERS], share[16];
	size_t n;

	fprintf(f, "\nevents and losses (shares of %" PRIu64 " events):\n", events);
	for (int i = 0; i < LH_NR_COUNTERS; i++) {
		const struct lh_counter_info *ci = lh_counter_info(i);

		if (!(ci->tools & r->meta.tool_bit) || (ci->needs & ~r->meta.features))
			continue;
		fprintf(f, "  %-22s %12" PRIu64, ci->name, v[i]);
		/* a share only for what is a part of the events */
		if (events && lh_counter_of_events(i, r->meta.features))
			fprintf(f, " %8s", lh_share(v[i], events, share, sizeof(share)));
		else
			fprintf(f, " %8s", "");
		fprintf(f, "  %s%s\n", ci->loss ? "LOSS: " : ci->gap ? "KERNEL GAP: " : "", ci->desc);
	}
	print_gaps(f, r);
	if (r->records.on) {
		uint64_t kib = r->records.ringbuf_bytes / 1024;

		fprintf(f, "records (--slower-than %.3f %s): eligible %" PRIu64 ", delivered %" PRIu64
			", dropped %" PRIu64 " (%s; ring buffer %" PRIu64 " %s)\n",
			in_unit(r->records.slower_than_ns, r->meta.scheme.unit_ns), r->meta.unit,
			v[LH_EV_RB_ELIGIBLE], r->records.delivered, v[LH_LOSS_RINGBUF],
			lh_share(v[LH_LOSS_RINGBUF], v[LH_EV_RB_ELIGIBLE], share, sizeof(share)),
			kib >= 1024 ? kib / 1024 : kib, kib >= 1024 ? "MiB" : "KiB");
	}
	if (r->trend == LH_TREND_RISES)
		fprintf(f, "losses rise with load over %zu intervals: the tail is most likely "
			"under-reported\n", r->trend_intervals);
	else if (r->trend == LH_TREND_FLAT)
		fprintf(f, "losses do not rise with load over %zu intervals\n", r->trend_intervals);
	n = lh_bias_reasons(v, r->meta.features, reasons, LH_NR_COUNTERS);
	if (!n) {
		fputs("no loss: every paired event is in the histograms", f);
		fputs(r->records.on ? ", every eligible event has a record" : "", f);
		fputs(lh_counters_gaps(v) ? " (the kernel gap above cost no traced event that "
		      "lathist could tell)" : "", f);
		fputs(r->meta.unchecked[0] ? "; but see NOT CHECKED above: what it names was not "
		      "seen\n" : "\n", f);
		return;
	}
	fprintf(f, "WARNING: %" PRIu64 " loss%s counted: ", lh_counters_lost(v),
		lh_counters_lost(v) == 1 ? "" : "es");
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "%s%s", i ? "; " : "", reasons[i]);
		free(reasons[i]);
	}
	fputs(".\n", f);
	if (hist_lost)
		fputs("Losses cluster in bursts and expensive events: the distribution may be biased\n"
		      "(most likely the tail is under-reported); counts were not rescaled.\n", f);
	if (lh_pmu_lost(v))
		fputs("Counter reads failed: those slices are left out of the counter sums (see\n"
		      "'slices left out' per key); the histograms still hold them.\n", f);
	if (v[LH_LOSS_RINGBUF])
		fputs("Records were dropped where the ring buffer was full, in bursts: the records\n"
		      "are not every slow event (the histograms still count them all); raise\n"
		      "--ringbuf-size or --slower-than.\n", f);
}

/* A counter table per key: raw, times, multiplexing, the estimate, a rate per on-CPU ms. */
static void print_counters(FILE *f, const struct lh_report *r)
{
	const struct lh_pmu_meta *pm = &r->meta.pmu;

	if (!pm->n && !pm->nunsupported)
		return;
	fputs("\ncounters over on-CPU slices (raw = counted; estimate = raw x time_enabled / "
	      "time_running,\nundefined when the counter never ran):\n", f);
	for (size_t a = 0, b; a < r->npmu; a = b) {
		double ipc;
		bool est;
		int err;

		b = lh_pmu_key_end(r, a);
		fputs("  ", f);
		print_key(f, &r->pmu[a].key);
		fprintf(f, ": %" PRIu64 " slices, on-CPU %.3f ms", r->pmu[a].slices,
			(double)r->pmu[a].oncpu_ns / 1e6);
		if (r->pmu[a].read_failed)
			fprintf(f, ", %" PRIu64 " slices left out (a counter read failed)",
				r->pmu[a].read_failed);
		fprintf(f, "\n    %-16s %16s %12s %12s %12s %20s %14s\n", "event", "raw",
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
			fprintf(f, "    %-16s %16" PRIu64 " %12.3f %12.3f %12" PRIu64 " %20s %14s\n",
				pm->names[w->event], w->raw, (double)w->enabled_ns / 1e6,
				(double)w->running_ns / 1e6, w->multiplexed, estbuf, rate);
		}
		err = lh_pmu_ipc(r, a, b, &ipc, &est);
		if (!err)
			fprintf(f, "    IPC (instructions / cycles): %.3f%s\n", ipc,
				est ? " (from estimates: the counters were multiplexed)" : "");
		else if (err == -EDOM)
			fputs("    IPC (instructions / cycles): undefined\n", f);
	}
	for (int i = 0; i < pm->nunsupported; i++)
		fprintf(f, "  %s: not counted (%s)\n", pm->unsupported[i].name,
			lh_pmu_why(pm->unsupported[i].err));
}

void lh_render_text(FILE *f, const struct lh_report *r)
{
	flockfile(f);
	print_header(f, &r->meta);
	if (!r->nhists)
		fputs("\n(no paired events)\n", f);
	for (size_t i = 0; i < r->nhists; i++)
		print_hist(f, &r->hists[i], r);
	print_counters(f, r);
	print_losses(f, r);
	fflush_unlocked(f);
	funlockfile(f);
}
