// SPDX-License-Identifier: MIT
/* Text renderer: familiar to runqlat/biolatency users, plus stats and losses. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "pmu_user.h"
#include "recline.h"
#include "outbuf.h"
#include "report.h"

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
static void fput_u64(struct lh_out *o, uint64_t v)
{
	char *d = lh_out_room(o, 20);

	lh_out_wrote(o, (size_t)(lh_put_u64(d, v) - d));
}

/*
 * One row of a histogram, "lo -> hi : count |stars|", formatted here rather
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
	lh_out_wrote(o, (size_t)(p - row));
}

/* m's filters, each as " name=value" (the header's filters line, a filtered total). */
static void put_filters(struct lh_out *o, const struct lh_meta *m)
{
	for (int i = 0; i < m->nfilters; i++)
		lh_out_printf(o, " %s=%s", m->filters[i].name, m->filters[i].value);
}

/* The key's fields; the total is "all tasks", and "all tasks (filtered: ...)"
 * with m's filters, which select what the total holds (-p, -t, --cgroup, ...). */
static void print_key(struct lh_out *o, const struct lh_key *k, const struct lh_meta *m)
{
	char comm[4 * sizeof(k->comm) + 1];
	const char *sep = "";

	if (!k->fields) {
		lh_out_str(o, "all tasks");
		if (!m->nfilters)
			return;
		lh_out_str(o, " (filtered:");
		put_filters(o, m);
		lh_out_char(o, ')');
		return;
	}
	/* fputs and fput_u64, not fprintf: thousands of keys an interval */
	if (k->fields & LH_KEY_TID) {
		lh_out_str(o, "tid ");
		fput_u64(o, k->tid);
		sep = " ";
	}
	if (k->fields & LH_KEY_PID) {
		lh_out_str(o, sep);
		lh_out_str(o, "pid ");
		fput_u64(o, k->pid);
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
		fput_u64(o, k->cpu);
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

/*
 * count, mean, the percentiles as slots and the exact max; with L events lost
 * that could have belonged to h, each percentile's bounds (all L below, all L
 * above) on a line of its own, and whether L can move it.
 */
/* v as printf's "%.3f" (lh_line_fixed, exact: thousands of keys an interval). */
static void fput_fixed3(struct lh_out *o, double v)
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

static void print_stats(struct lh_out *o, const struct lh_hist *h, const struct lh_report *r)
{
	const struct lh_meta *m = &r->meta;
	struct lh_pct pct[LH_NR_PERCENTILES];
	uint64_t lost = lh_report_percentiles(r, h, pct);
	char a[64], b[160];

	lh_out_str(o, "     count ");
	fput_u64(o, h->count);
	lh_out_str(o, "  mean ");
	fput_fixed3(o, in_unit(h->sum_ns, m->scheme.unit_ns) / (double)h->count);
	lh_out_char(o, ' ');
	lh_out_str(o, m->unit);
	if (!lost) {
		for (size_t i = 0; i < LH_NR_PERCENTILES; i++) {
			lh_out_str(o, "  ");
			lh_out_str(o, lh_percentiles[i].name);
			lh_out_char(o, ' ');
			lh_out_str(o, lh_slot_range(a, sizeof(a), pct[i].slot, m));
		}
		lh_out_char(o, ' ');
		lh_out_str(o, m->unit);
		lh_out_str(o, "  max ");
		fput_fixed3(o, in_unit(h->max_ns, m->scheme.unit_ns));
		lh_out_char(o, ' ');
		lh_out_str(o, m->unit);
		lh_out_char(o, '\n');
		return;
	}
	lh_out_printf(o, "  max %.3f %s (%" PRIu64 " lost: could be longer)\n",
		in_unit(h->max_ns, m->scheme.unit_ns), m->unit, lost);
	for (size_t i = 0; i < LH_NR_PERCENTILES; i++) {
		lh_out_printf(o, "     %-5s %s %s ", lh_percentiles[i].name,
			lh_slot_range(a, sizeof(a), pct[i].slot, m), m->unit);
		if (pct[i].low == pct[i].high)
			lh_out_printf(o, "(%" PRIu64 " lost cannot move it)\n", lost);
		else
			lh_out_printf(o, "(%" PRIu64 " lost: could be %s)\n", lost,
				lh_bounds_range(b, sizeof(b), pct[i].low, pct[i].high, m));
	}
}

static void print_hist(struct lh_out *o, const struct lh_hist *h, const struct lh_report *r)
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
	print_key(o, &h->key, &r->meta);
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
		return;
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
	print_stats(o, h, r);
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
		if (json_object_object_get_ex(m->context, "mixed", &cmd) &&
		    json_object_is_type(cmd, json_type_object)) {
			int n = 0;

			/* boot ids differ between hosts and boots: not a setting */
			json_object_object_foreach(cmd, k, v) {
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

static void print_header(struct lh_out *o, const struct lh_meta *m)
{
	lh_out_printf(o, "lathist %s: host %s, kernel %s, %d CPUs, clock %s\n", m->tool, m->host,
		m->kernel, m->ncpus, m->clock);
	print_context(o, m);
	if (m->anonymized)
		lh_out_str(o, "anonymized: pids, tids, task names, the host and its boot id are salted "
		      "hashes\n");
	if (m->unchecked[0])
		lh_out_printf(o, "NOT CHECKED: %s\n", m->unchecked);
	lh_out_str(o, "attach:");
	for (int i = 0; i < m->nattach; i++)
		lh_out_printf(o, " %s=%s", m->attach[i].tracepoint, m->attach[i].type);
	lh_out_str(o, "\nfilters:");
	if (!m->nfilters)
		lh_out_str(o, " none");
	put_filters(o, m);
	if (m->filter_exit_realtime_ns && m->filter_exit_realtime_ns >= m->start_realtime_ns)
		lh_out_printf(o, " (exited %.2f s into this aggregate)",
			(double)(m->filter_exit_realtime_ns - m->start_realtime_ns) / 1e9);
	else if (m->filter_exit_realtime_ns)
		lh_out_str(o, " (exited before this aggregate)");
	lh_out_printf(o, "; grouping: %s; ", m->grouping);
	if (m->scheme.precision)
		lh_out_printf(o, "precision %u (%u linear sub-slots per power of two)\n",
			m->scheme.precision, 1U << m->scheme.precision);
	else
		lh_out_str(o, "log2 slots\n");
	if (m->interval_index)
		lh_out_printf(o, "interval %u: %.3f s\n", m->interval_index, (double)m->duration_ns / 1e9);
	else
		lh_out_printf(o, "duration: %.3f s\n", (double)m->duration_ns / 1e9);
}

/*
 * The kernel gaps, said plainly: switches the kernel made without a
 * sched_switch event, and on which CPUs. The waits they hid are in the loss
 * classes (missed_switch_in, missed_wait, unpaired_no_start).
 */
static void print_gaps(struct lh_out *o, const struct lh_report *r)
{
	uint64_t missed = r->counters[LH_GAP_MISSED_SWITCH], seen = r->counters[LH_EV_SWITCHES];
	uint64_t hidden = r->counters[LH_GAP_HIDDEN_TASKS];
	char share[16];
	const char *sep = "";

	if (!(r->meta.tool_bit & LH_TOOL_RUNQ))
		return;
	if (hidden)
		lh_out_printf(o, "KERNEL GAP: %" PRIu64 " traced task%s hidden from the end-of-run check (the "
			"kernel's task iterator did not show %s):\ntheir waits after their last event seen "
			"are not counted.\n", hidden, hidden == 1 ? " was" : "s were",
			hidden == 1 ? "it" : "them");
	if (!missed)
		return;
	lh_out_printf(o, "KERNEL GAP: %" PRIu64 " of %" PRIu64 " context switches (%s) had no sched_switch "
		"event (", missed, lh_add_sat(seen, missed),
		lh_share(missed, lh_add_sat(seen, missed), share, sizeof(share)));
	for (uint32_t cpu = 0; cpu < r->gap_ncpus; cpu++) {
		if (!r->gap_cpu[cpu])
			continue;
		lh_out_printf(o, "%scpu %u: %" PRIu64, sep, cpu, r->gap_cpu[cpu]);
		sep = ", ";
	}
	lh_out_str(o, ");\nthe waits they hid are counted as losses where the tasks' switch counts show "
	      "them\n(missed_switch_in, missed_wait, unpaired_no_start).\n");
}

static void print_losses(struct lh_out *o, const struct lh_report *r)
{
	const uint64_t *v = r->counters;
	uint64_t events = v[LH_EV_ENDS], hist_lost = lh_hist_lost(v);
	char *reasons[LH_NR_COUNTERS], share[16];
	size_t n;

	lh_out_printf(o, "\nevents and losses (shares of %" PRIu64 " events):\n", events);
	for (int i = 0; i < LH_NR_COUNTERS; i++) {
		const struct lh_counter_info *ci = lh_counter_info(i);

		if (!(ci->tools & r->meta.tool_bit) || (ci->needs & ~r->meta.features))
			continue;
		lh_out_printf(o, "  %-22s %12" PRIu64, ci->name, v[i]);
		/* a share only for what is a part of the events */
		if (events && lh_counter_of_events(i, r->meta.features))
			lh_out_printf(o, " %8s", lh_share(v[i], events, share, sizeof(share)));
		else
			lh_out_printf(o, " %8s", "");
		lh_out_printf(o, "  %s%s\n", ci->loss ? "LOSS: " : ci->gap ? "KERNEL GAP: " : "", ci->desc);
	}
	print_gaps(o, r);
	if (r->records.on) {
		uint64_t kib = r->records.ringbuf_bytes / 1024;

		lh_out_printf(o, "records (--slower-than %.3f %s): eligible %" PRIu64 ", delivered %" PRIu64
			", dropped %" PRIu64 " (%s; ring buffer %" PRIu64 " %s)\n",
			in_unit(r->records.slower_than_ns, r->meta.scheme.unit_ns), r->meta.unit,
			v[LH_EV_RB_ELIGIBLE], r->records.delivered, v[LH_LOSS_RINGBUF],
			lh_share(v[LH_LOSS_RINGBUF], v[LH_EV_RB_ELIGIBLE], share, sizeof(share)),
			kib >= 1024 ? kib / 1024 : kib, kib >= 1024 ? "MiB" : "KiB");
	}
	if (r->trend == LH_TREND_RISES)
		lh_out_printf(o, "losses rise with load over %zu intervals: the tail is most likely "
			"under-reported\n", r->trend_intervals);
	else if (r->trend == LH_TREND_FLAT)
		lh_out_printf(o, "losses do not rise with load over %zu intervals\n", r->trend_intervals);
	n = lh_bias_reasons(v, r->meta.features, reasons, LH_NR_COUNTERS);
	if (!n) {
		lh_out_str(o, "no loss: every paired event is in the histograms");
		lh_out_str(o, r->records.on ? ", every eligible event has a record" : "");
		lh_out_str(o, lh_counters_gaps(v) ? " (the kernel gap above cost no traced event that "
		      "lathist could tell)" : "");
		lh_out_str(o, r->meta.unchecked[0] ? "; but see NOT CHECKED above: what it names was not "
		      "seen\n" : "\n");
		return;
	}
	lh_out_printf(o, "WARNING: %" PRIu64 " loss%s counted: ", lh_counters_lost(v),
		lh_counters_lost(v) == 1 ? "" : "es");
	for (size_t i = 0; i < n; i++) {
		lh_out_printf(o, "%s%s", i ? "; " : "", reasons[i]);
		free(reasons[i]);
	}
	lh_out_str(o, ".\n");
	if (hist_lost)
		lh_out_str(o, "Losses cluster in bursts and expensive events: the distribution may be biased\n"
		      "(most likely the tail is under-reported); counts were not rescaled.\n");
	if (lh_pmu_lost(v))
		lh_out_str(o, "Counter reads failed: those slices are left out of the counter sums (see\n"
		      "'slices left out' per key); the histograms still hold them.\n");
	if (v[LH_LOSS_RINGBUF])
		lh_out_str(o, "Records were dropped where the ring buffer was full, in bursts: the records\n"
		      "are not every slow event (the histograms still count them all); raise\n"
		      "--ringbuf-size or --slower-than.\n");
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
		print_key(o, &r->pmu[a].key, &r->meta);
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

void lh_render_text(FILE *f, const struct lh_report *r)
{
	struct lh_out out, *o = &out;	/* 64 KiB of stack: one fwrite per 64 KiB */

	o->f = f;
	o->n = 0;
	print_header(o, &r->meta);
	if (!r->nhists)
		lh_out_str(o, "\n(no paired events)\n");
	for (size_t i = 0; i < r->nhists; i++) {
		lh_report_prefetch_after(r, i);
		print_hist(o, &r->hists[i], r);
	}
	print_counters(o, r);
	print_losses(o, r);
	lh_out_flush(o);
	fflush(f);
}
