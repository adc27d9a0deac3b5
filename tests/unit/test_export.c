// SPDX-License-Identifier: MIT
/* Exports: OpenMetrics buckets at exact bounds (case C9), CSV quoting. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "outbuf.h"
#include "registry.h"
#include "report.h"

static const struct lh_hist_kind kinds[] = { { "wakeup", "wakeup latency", LH_SCOPE_EVENTS } };

/* A runq report with one total wakeup histogram holding the given latencies (ns). */
static void make_report(struct lh_report *r, const uint64_t *ns, size_t n, const struct lh_key *k)
{
	struct lh_hist *h;

	memset(r, 0, sizeof(*r));
	r->meta.tool = "runq";
	r->meta.desc = lh_tool_find("runq");
	r->meta.clock = "CLOCK_MONOTONIC";
	r->meta.grouping = "total";
	r->meta.unit = "us";
	r->meta.kinds = kinds;
	r->meta.nkinds = 1;
	r->meta.scheme.precision = 0;
	r->meta.scheme.unit_ns = 1000;
	h = lh_report_add_hist(r, "wakeup", k);
	assert_non_null(h);
	for (size_t i = 0; i < n; i++) {
		/* the slot function the BPF programs use */
		h->slots[lh_value_slot(ns[i], 1000, 0)]++;
		h->count++;
		h->sum_ns += ns[i];
		if (ns[i] > h->max_ns)
			h->max_ns = ns[i];
	}
}

/* r as CSV, or as metrics with o (NULL: strict OpenMetrics, every bound). */
static char *render_with(const struct lh_report *r, bool csv, const struct lh_om_opts *o)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	if (csv)
		lh_render_csv(f, r, true);
	else
		lh_render_openmetrics(f, r, o ? o : &(struct lh_om_opts){ .strict = true });
	fclose(f);
	return buf;
}

static char *render(const struct lh_report *r, bool csv)
{
	return render_with(r, csv, NULL);
}

static void test_c9_bound_is_upper_inclusive(void **state)
{
	uint64_t ns[] = { 256000, 256000, 256001, 128000, 0 };
	struct lh_report r;
	char *om;
	(void)state;
	make_report(&r, ns, 5, NULL);
	om = render(&r, false);
	/* 256 us is in le="0.000256": with 128 us and 0 below it, 4 in all */
	assert_non_null(strstr(om, "lathist_runq_latency_seconds_bucket{kind=\"wakeup\",le=\"0.000001\"} 1\n"));
	assert_non_null(strstr(om, "lathist_runq_latency_seconds_bucket{kind=\"wakeup\",le=\"0.000128\"} 2\n"));
	assert_non_null(strstr(om, "lathist_runq_latency_seconds_bucket{kind=\"wakeup\",le=\"0.000256\"} 4\n"));
	assert_non_null(strstr(om, "lathist_runq_latency_seconds_bucket{kind=\"wakeup\",le=\"0.000512\"} 5\n"));
	assert_non_null(strstr(om, "lathist_runq_latency_seconds_bucket{kind=\"wakeup\",le=\"+Inf\"} 5\n"));
	assert_non_null(strstr(om, "lathist_runq_latency_seconds_sum{kind=\"wakeup\"} 0.000896001\n"));
	assert_non_null(strstr(om, "lathist_runq_latency_seconds_count{kind=\"wakeup\"} 5\n"));
	/* cumulative: never decreasing, integer counts */
	{
		uint64_t prev = 0;
		char *p = om;

		while ((p = strstr(p, "_bucket{"))) {
			uint64_t v = strtoull(strchr(p, '}') + 2, NULL, 10);

			assert_true(v >= prev);
			prev = v;
			p++;
		}
		assert_true(prev == 5);
	}
	assert_non_null(strstr(om, "\n# EOF\n"));
	free(om);
	lh_report_clear(&r);
}

/* --buckets: a range keeps the bounds from its MIN to the first at or over its MAX; a value
 * past the last bucket is still in +Inf, _sum and _count; a list keeps exactly its bounds;
 * labels come first on every sample, an "other" key shows "other" in each field. */
static void test_buckets_and_labels(void **state)
{
	uint64_t ns[] = { 500, 3000, 120000000000ULL };	/* 0.5 us, 3 us, 2 minutes */
	struct lh_label l = { "env", "prod" };
	struct lh_om_opts o = { .le_min_ns = 1000, .le_max_ns = 60000000000ULL, .labels = &l,
				.nlabels = 1 };
	uint64_t list[] = { 2048000, 4096000 };
	struct lh_key other = { .fields = LH_KEY_PID | LH_KEY_COMM | LH_KEY_OTHER };
	struct lh_report r;
	char *om;
	(void)state;
	make_report(&r, ns, 3, NULL);
	om = render_with(&r, false, &o);
	/* below the first bound kept: in it (cumulative) */
	assert_non_null(strstr(om, "_bucket{env=\"prod\",kind=\"wakeup\",le=\"0.000001\"} 1\n"));
	assert_null(strstr(om, "le=\"0.0000005"));
	/* the first bound at or over a minute is 2^26 us; nothing past it */
	assert_non_null(strstr(om, "le=\"67.108864\"} 2\n"));
	assert_null(strstr(om, "le=\"134.217728\""));
	assert_non_null(strstr(om, "le=\"+Inf\"} 3\n"));
	assert_non_null(strstr(om, "_count{env=\"prod\",kind=\"wakeup\"} 3\n"));
	assert_non_null(strstr(om, "_sum{env=\"prod\",kind=\"wakeup\"} 120.0000035\n"));
	assert_non_null(strstr(om, "lathist_runq_biased{env=\"prod\"} 0\n"));
	free(om);
	o.nle = 2;
	o.le_ns = list;
	om = render_with(&r, false, &o);
	{
		size_t n = 0;

		for (char *p = om; (p = strstr(p, "_bucket{")); p++)
			n++;
		assert_int_equal(n, 3);		/* 2048 us, 4096 us, +Inf */
	}
	assert_non_null(strstr(om, "le=\"0.002048\"} 2\n"));
	free(om);
	lh_report_clear(&r);
	{
		uint64_t bad, below, above, b300[] = { 300000 };
		struct lh_scheme sc = { .precision = 0, .unit_ns = 1000 };
		struct lh_om_opts x = { .le_ns = b300, .nle = 1 };

		assert_int_equal(lh_buckets_check(&x, &sc, &bad, &below, &above), -EINVAL);
		assert_true(bad == 300000 && below == 256000 && above == 512000);
		x.le_ns = list;
		x.nle = 2;
		assert_int_equal(lh_buckets_check(&x, &sc, &bad, &below, &above), 0);
	}
	make_report(&r, ns, 1, &other);
	om = render(&r, false);
	assert_non_null(strstr(om, "{kind=\"wakeup\",pid=\"other\",comm=\"other\",start_ns=\"other\",le="));
	free(om);
	lh_report_clear(&r);
}

static void test_label_and_csv_escaping(void **state)
{
	struct lh_key k = { .fields = LH_KEY_PID | LH_KEY_COMM, .pid = 42 };
	uint64_t ns[] = { 5000 };
	struct lh_report r;
	char *out;
	(void)state;
	memcpy(k.comm, "a,b\"c\\d", 8);
	make_report(&r, ns, 1, &k);
	out = render(&r, false);
	assert_non_null(strstr(out, "comm=\"a,b\\\"c\\\\\\\\d\""));	/* printable \\ then escaped */
	free(out);
	out = render(&r, true);
	/* RFC 4180: quoted, quotes doubled; CRLF line ends */
	assert_non_null(strstr(out, ",42,\"a,b\"\"c\\\\d\","));
	assert_non_null(strstr(out, "\r\n"));
	assert_non_null(strstr(out, ",4000,8000,1,1,5000,5000,\r\n"));
	free(out);
	lh_report_clear(&r);
}

/* IPC per key in text and JSON: defined, scaled, undefined; absent without both counters. */
static void test_ipc(void **state)
{
	struct lh_key k1 = { .fields = LH_KEY_PID, .pid = 1 }, k2 = { .fields = LH_KEY_PID, .pid = 2 };
	struct lh_report r;
	struct lh_pmu_row *w;
	char *text = NULL, *json;
	size_t len = 0;
	FILE *f;
	(void)state;
	make_report(&r, NULL, 0, NULL);
	r.meta.pmu.n = 2;
	strcpy(r.meta.pmu.names[0], "instructions");
	strcpy(r.meta.pmu.names[1], "cycles");
	w = lh_report_add_pmu(&r, &k1, 0);	/* 3000 instructions over 2000 cycles */
	w->raw = 3000, w->enabled_ns = w->running_ns = 10, w->slices = 1;
	w = lh_report_add_pmu(&r, &k1, 1);
	w->raw = 2000, w->enabled_ns = w->running_ns = 10, w->slices = 1;
	w = lh_report_add_pmu(&r, &k2, 0);	/* cycles never ran: undefined */
	w->raw = 5, w->enabled_ns = w->running_ns = 10, w->slices = 1;
	w = lh_report_add_pmu(&r, &k2, 1);
	w->raw = 0, w->enabled_ns = 10, w->running_ns = 0, w->slices = 1;
	lh_report_sort(&r);
	f = open_memstream(&text, &len);
	assert_non_null(f);
	lh_render_text(f, &r, NULL);
	fclose(f);
	assert_non_null(strstr(text, "IPC (instructions / cycles): 1.500\n"));
	assert_non_null(strstr(text, "IPC (instructions / cycles): undefined\n"));
	free(text);
	json = lh_render_json(&r, true);
	assert_non_null(strstr(json, "\"name\":\"ipc\",\"value\":1.5,\"estimated\":false"));
	assert_non_null(strstr(json, "\"name\":\"ipc\",\"value\":null,\"estimated\":false"));
	free(json);
	lh_report_clear(&r);
}

/* r as text with t (NULL: the defaults). */
static char *text_of(const struct lh_report *r, const struct lh_text_opts *t)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	lh_render_text(f, r, t);
	fclose(f);
	/* the loss paragraph's continuation lines joined: its sentences whole */
	for (char *p = strstr(buf, "\nlost "); p && (p = strstr(p, "\n  ")) && p[3] != ' ';)
		memmove(p, p + 2, strlen(p + 2) + 1), *p = ' ';
	return buf;
}

/* The loss line names every non-zero class with its count and share and no zero one;
 * it says which percentiles the losses can move, from the same bounds as the '?' marks;
 * -v shows every class runq has, zero or not. */
static void test_loss_line_names_every_class(void **state)
{
	uint64_t ns[1000];
	struct lh_text_opts t;
	struct lh_report r;
	char *text;
	(void)state;

	for (size_t i = 0; i < 1000; i++)	/* 990 in (16, 32] us, the top 10 in (1024, 2048] */
		ns[i] = i < 990 ? 20000 : 1500000;
	make_report(&r, ns, 1000, NULL);
	r.counters[LH_EV_ENDS] = 1003;
	r.counters[LH_EV_PAIRED] = 1000;
	r.counters[LH_LOSS_UNPAIRED] = 3;	/* counted at ends: a part of the 1003 */
	r.counters[LH_LOSS_MISSED_WAIT] = 2;	/* no end seen: on top of them */
	text = text_of(&r, NULL);
	assert_non_null(strstr(text, "lost 5 of 1005 waits (0.50%): unpaired_no_start 3 (0.30%), "
			       "missed_wait 2 (0.20%)."));
	assert_null(strstr(text, "missed_switch_in"));
	assert_null(strstr(text, "events and losses"));
	/* p99 is rank 990 of 1000: 5 more below or above move it, p50 and p90 cannot */
	assert_non_null(strstr(text, "p50 (16, 32]  p90 (16, 32]  p99 (16, 32]?  p99.9 (1024, 2048]?"));
	assert_non_null(strstr(text, "They could move wakeup p99 to (16, 32] .. (1024, 2048] us, "
			       "wakeup p99.9 to (1024, 2048] .. unbounded us; the other percentiles "
			       "hold."));
	free(text);
	lh_text_defaults(&t);
	t.verbose = true;
	text = text_of(&r, &t);
	assert_non_null(strstr(text, "events and losses (shares of 1003 events; the loss line's are of "
			       "1005: these and the 2 lost before an end):"));
	assert_non_null(strstr(text, "missed_switch_in"));
	assert_non_null(strstr(text, "p99   (16, 32] us (5 lost: could be (16, 32] .. (1024, 2048])"));
	assert_null(strstr(text, "request"));	/* runq's words, not bio's */
	free(text);
	memset(r.counters, 0, sizeof(r.counters));
	text = text_of(&r, NULL);
	assert_non_null(strstr(text, "\nno loss: every paired event is in the histograms\n"));
	assert_null(strstr(text, "?"));
	free(text);
	lh_report_clear(&r);
}

/* A grouped run opens with its keys ranked by total time (--sort count by waits),
 * --top rows and one line for the rest; histograms of the top --histograms keys. */
static void test_ranked_table(void **state)
{
	static const uint64_t waits[] = { 100000, 5000, 5000, 5000, 5000, 300000 };
	struct lh_text_opts t;
	struct lh_report r;
	char *text;
	(void)state;

	make_report(&r, NULL, 0, NULL);
	lh_report_clear(&r);
	make_report(&r, NULL, 0, NULL);
	r.meta.grouping = "process";
	r.nhists = 0;
	for (uint32_t pid = 1; pid <= 3; pid++) {
		struct lh_key k = { .fields = LH_KEY_PID | LH_KEY_COMM, .pid = pid };
		struct lh_hist *h;

		snprintf(k.comm, sizeof(k.comm), "task%u", pid);
		h = lh_report_add_hist(&r, "wakeup", &k);
		assert_non_null(h);
		/* pid 1: one wait of 100 us; pid 2: four of 5 us; pid 3: one of 300 us */
		size_t from = pid == 1 ? 0 : pid == 2 ? 1 : 5, to = pid == 2 ? 5 : from + 1;

		for (size_t i = from; i < to; i++) {
			h->slots[lh_value_slot(waits[i], 1000, 0)]++;
			h->count++;
			h->sum_ns += waits[i];
			h->max_ns = waits[i] > h->max_ns ? waits[i] : h->max_ns;
		}
	}
	lh_report_sort(&r);
	lh_text_defaults(&t);
	t.top = 2;
	text = text_of(&r, &t);
	assert_non_null(strstr(text, "3 processes by total time (420.0 us in all); the top 2:"));
	assert_true(strstr(text, "task3") < strstr(text, "task1"));
	assert_non_null(strstr(text, "  ... 1 more: 20.0 us (4.76%), 4 waits, 0 lost (--top N shows more)"));
	assert_non_null(strstr(text, "wakeup: wakeup latency; pid 3 comm task3"));
	assert_null(strstr(text, "comm task1\n"));	/* one key's histograms by default */
	free(text);
	t.sort = LH_RANK_COUNT;
	t.histograms = LH_TEXT_ALL;
	text = text_of(&r, &t);
	assert_non_null(strstr(text, "3 processes by count"));
	assert_true(strstr(text, "task2") < strstr(text, "task3"));
	assert_non_null(strstr(text, "wakeup: wakeup latency; pid 1 comm task1"));
	free(text);
	lh_report_clear(&r);
}

/* lh_report_find_hist's hash table against the linear search it replaced: the same
 * histogram for the same name and key, across growth, lh_report_sort and new keys. */
static void test_find_hist_index(void **state)
{
	static const char *const names[] = { "wakeup", "preempt", "oncpu" };
	struct lh_report r;
	struct lh_hist *h;
	(void)state;

	make_report(&r, NULL, 0, NULL);	/* one total "wakeup" histogram */
	for (int round = 0; round < 3; round++) {
		for (uint32_t i = 0; i < 3000; i++) {
			struct lh_key k = { .fields = LH_KEY_PID | LH_KEY_COMM, .pid = i % 1000,
					    .birth_ns = i % 7 };
			const char *name = names[i % 3];

			snprintf(k.comm, sizeof(k.comm), "t%u", i % 1000);
			h = lh_report_find_hist(&r, name, &k);
			assert_non_null(h);
			assert_string_equal(h->name, name);
			assert_memory_equal(&h->key, &k, sizeof(k));
			h->count++;
		}
		if (round == 1)
			lh_report_sort(&r);	/* moves every histogram */
	}
	/* keys (i % 1000, i % 7, i % 3) over 0..2999: 3000 distinct (the moduli are
	 * coprime), each found once per round; the total histogram never */
	assert_int_equal(r.nhists, 1 + 3000);
	{
		size_t thrice = 0, never = 0;

		for (size_t i = 0; i < r.nhists; i++) {
			thrice += r.hists[i].count == 3;
			never += r.hists[i].count == 0;
		}
		assert_int_equal(thrice, 3000);
		assert_int_equal(never, 1);
	}
	lh_report_clear(&r);
	assert_null(r.index);
}

/* An empty runq report (make_report's, without its total histogram). */
static void empty_report(struct lh_report *r)
{
	make_report(r, NULL, 0, NULL);
	r->nhists = 0;
	lh_hist_free(&r->hists[0]);
	lh_report_index_reset(r);
}

/*
 * The renderers' output buffer gives the bytes fprintf gives: appends that fill
 * it exactly, cross its end, and pieces larger than it, formatted or not.
 */
static void test_outbuf_as_stdio(void **state)
{
	static struct lh_out o;
	char *want = NULL, *got = NULL, *big = malloc(3 * LH_OUT_BYTES);
	size_t wlen = 0, glen = 0;
	volatile size_t huge = 2 * LH_OUT_BYTES + 7;	/* a length the compiler cannot see */
	FILE *fw = open_memstream(&want, &wlen), *fg = open_memstream(&got, &glen);
	(void)state;
	assert_non_null(big);
	for (size_t i = 0; i < 3 * LH_OUT_BYTES; i++)
		big[i] = (char)('a' + i % 26);
	o.f = fg;
	o.n = 0;
	for (size_t cut = LH_OUT_BYTES - 3; cut <= LH_OUT_BYTES + 1; cut++) {
		lh_out_put(&o, big, cut);			/* to the buffer's end, past it */
		fwrite(big, 1, cut, fw);
		lh_out_printf(&o, "%d|%.*s|", (int)cut, 40, big);	/* across its end */
		fprintf(fw, "%d|%.*s|", (int)cut, 40, big);
		lh_out_char(&o, '\n');
		fputc('\n', fw);
	}
	lh_out_printf(&o, "<%.*s>", (int)(LH_OUT_BYTES + 5), big);	/* longer than it */
	fprintf(fw, "<%.*s>", (int)(LH_OUT_BYTES + 5), big);
	lh_out_put(&o, big, huge);
	fwrite(big, 1, huge, fw);
	lh_out_str(&o, "end");
	fputs("end", fw);
	memcpy(lh_out_room(&o, 20), "12345", 5);
	lh_out_wrote(&o, 5);
	fputs("12345", fw);
	lh_out_flush(&o);
	assert_int_equal(fclose(fw), 0);
	assert_int_equal(fclose(fg), 0);
	assert_int_equal(glen, wlen);
	assert_memory_equal(got, want, wlen);
	free(want);
	free(got);
	free(big);
}

/* The place test_sort_order's kinds take: wakeup, preempt, then any other. */
static int kind_rank(const char *name)
{
	return !strcmp(name, "wakeup") ? 0 : !strcmp(name, "preempt") ? 1 : 2;
}

/* lh_report_sort: kinds in meta.kinds order (an unknown name last), then by
 * task (pid, tid, start time); each histogram moved whole (its slots with it),
 * from a shuffled order of 4000 histograms; cgroup keys by id, equal keys in
 * the order they came in; one histogram. */
static void test_sort_order(void **state)
{
	static const struct lh_hist_kind two[] = { { "wakeup", "", LH_SCOPE_EVENTS },
						   { "preempt", "", LH_SCOPE_EVENTS } };
	static const char *const names[] = { "preempt", "zz-unknown", "wakeup" };
	static bool seen[4000];
	struct lh_report r;
	uint32_t seed = 12345;
	(void)state;

	empty_report(&r);
	r.meta.kinds = two;
	r.meta.nkinds = 2;
	for (uint32_t i = 0; i < 4000; i++) {
		struct lh_key k = { .fields = LH_KEY_PID | LH_KEY_TID | LH_KEY_COMM };
		struct lh_hist *h;

		seed = seed * 1103515245u + 12345u;	/* a fixed shuffle */
		k.pid = (seed >> 8) % 50;
		k.tid = (seed >> 16) % 40;
		k.birth_ns = i;				/* every key distinct */
		h = lh_report_add_hist(&r, names[(seed >> 4) % 3], &k);
		assert_non_null(h);
		h->count = i + 1;
		h->slots[0] = i + 1;
	}
	lh_report_sort(&r);
	assert_int_equal(r.nhists, 4000);
	for (size_t i = 0; i < r.nhists; i++) {
		const struct lh_hist *h = &r.hists[i];

		assert_true(h->count >= 1 && h->count <= 4000 && !seen[h->count - 1]);
		seen[h->count - 1] = true;			/* each one once */
		assert_int_equal(h->slots[0], h->count);	/* moved whole */
		assert_int_equal(h->key.birth_ns + 1, h->count);
		if (i) {
			const struct lh_hist *g = &r.hists[i - 1];
			int rg = kind_rank(g->name), rh = kind_rank(h->name);

			assert_true(rg <= rh);
			if (rg == rh)
				assert_true(g->key.pid < h->key.pid ||
					    (g->key.pid == h->key.pid &&
					     (g->key.tid < h->key.tid ||
					      (g->key.tid == h->key.tid &&
					       g->key.birth_ns < h->key.birth_ns))));
		}
	}
	/* the index follows the moves */
	for (size_t i = 0; i < r.nhists; i += 97)
		assert_ptr_equal(lh_report_find_hist(&r, r.hists[i].name, &r.hists[i].key),
				 &r.hists[i]);
	/* cgroup keys by id; equal keys (a merge's) keep the order they came in */
	lh_report_clear(&r);
	empty_report(&r);
	for (uint32_t i = 0; i < 12; i++) {
		struct lh_key k = { .fields = LH_KEY_CGROUP, .cgroup_id = 100 - i % 6 };
		struct lh_hist *h = lh_report_add_hist(&r, "wakeup", &k);

		assert_non_null(h);
		h->count = i;
	}
	lh_report_sort(&r);
	for (size_t i = 0; i < r.nhists; i++) {
		assert_int_equal(r.hists[i].key.cgroup_id, 95 + i / 2);
		assert_int_equal(r.hists[i].count, 5 - i / 2 + 6 * (i % 2));
	}
	/* many cgroup keys (pid and tid 0: one run of equal words, past the insertion
	 * sort's runs), in a fixed shuffle, some ids twice: by id, equal ones in order */
	lh_report_clear(&r);
	empty_report(&r);
	for (uint32_t i = 0; i < 6000; i++) {
		struct lh_key k = { .fields = LH_KEY_CGROUP };
		struct lh_hist *h;

		seed = seed * 1103515245u + 12345u;
		k.cgroup_id = 1000 + (seed >> 8) % 5000;
		h = lh_report_add_hist(&r, i % 2 ? "preempt" : "wakeup", &k);
		assert_non_null(h);
		h->count = i;
	}
	lh_report_sort(&r);
	for (size_t i = 1; i < r.nhists; i++) {
		const struct lh_hist *g = &r.hists[i - 1], *h = &r.hists[i];

		if (!strcmp(g->name, h->name))
			assert_true(g->key.cgroup_id < h->key.cgroup_id ||
				    (g->key.cgroup_id == h->key.cgroup_id && g->count < h->count));
		else
			assert_string_equal(g->name, "wakeup");	/* wakeup's, then preempt's */
	}
	/* operations in the kernel's REQ_OP order, other last, then names not known
	 * (from a report input) by name; a disk's come together */
	lh_report_clear(&r);
	empty_report(&r);
	{
		static const char *const in[] = { "other", "zz", "write", "discard", "aa",
						  "read", "flush" };
		static const char *const want[] = { "read", "write", "flush", "discard",
						    "other", "aa", "zz" };

		for (int d = 1; d >= 0; d--)
			for (size_t i = 0; i < 7; i++) {
				struct lh_key k = { .fields = LH_KEY_DISK | LH_KEY_OP };

				snprintf(k.disk, sizeof(k.disk), "vd%c", 'a' + d);
				snprintf(k.op, sizeof(k.op), "%s", in[i]);
				assert_non_null(lh_report_add_hist(&r, "wakeup", &k));
			}
		lh_report_sort(&r);
		for (size_t i = 0; i < r.nhists; i++) {
			assert_string_equal(r.hists[i].key.disk, i < 7 ? "vda" : "vdb");
			assert_string_equal(r.hists[i].key.op, want[i % 7]);
		}
	}
	lh_report_clear(&r);
	make_report(&r, NULL, 0, NULL);
	assert_int_equal(r.nhists, 1);
	lh_report_sort(&r);				/* one histogram */
	assert_int_equal(r.nhists, 1);
	lh_report_clear(&r);
}

/* One name per task (pid, tid, start): the earliest (least name_ns) of its named
 * histograms, else a counter row's name; given to all its histograms and rows. Other
 * tasks, and a task whose start differs (a reused tid), keep theirs. */
static void test_one_name_per_task(void **state)
{
	static const struct { uint32_t tid; uint64_t birth; const char *comm; uint64_t at; } in[] = {
		{ 7, 100, "late", 30 }, { 7, 100, "first", 10 }, { 7, 100, "", 5 },
		{ 8, 100, "other", 20 }, { 7, 999, "reused", 40 }, { 9, 100, "", 1 },
	};
	static const char *const want[] = { "first", "first", "first", "other", "reused", "row" };
	struct lh_report r;
	struct lh_pmu_row *row;
	(void)state;

	for (int round = 0; round < 2; round++) {	/* and with 3000 other tasks around */
		empty_report(&r);
		for (uint32_t i = 0; round && i < 3000; i++) {
			struct lh_key k = { .fields = LH_KEY_PID | LH_KEY_TID | LH_KEY_COMM,
					    .pid = 1000 + i, .tid = 1000 + i, .birth_ns = i };

			snprintf(k.comm, sizeof(k.comm), "t%u", i);
			assert_non_null(lh_report_add_hist(&r, "wakeup", &k));
		}
		for (size_t i = 0; i < 6; i++) {
			struct lh_key k = { .fields = LH_KEY_PID | LH_KEY_TID | LH_KEY_COMM,
					    .pid = 5, .tid = in[i].tid, .birth_ns = in[i].birth };
			struct lh_hist *h;

			snprintf(k.comm, sizeof(k.comm), "%s", in[i].comm);
			h = lh_report_add_hist(&r, i % 2 ? "preempt" : "wakeup", &k);
			assert_non_null(h);
			h->name_ns = in[i].at;
		}
		{	/* counter rows: task 7's takes its histograms' name; task 9's gives its own */
			struct lh_key k7 = { .fields = LH_KEY_PID | LH_KEY_TID | LH_KEY_COMM,
					     .pid = 5, .tid = 7, .birth_ns = 100 };
			struct lh_key k9 = k7;

			snprintf(k7.comm, sizeof(k7.comm), "row7");
			k9.tid = 9;
			snprintf(k9.comm, sizeof(k9.comm), "row");
			assert_non_null(row = lh_report_add_pmu(&r, &k7, 0));
			assert_non_null(lh_report_add_pmu(&r, &k9, 0));
		}
		lh_report_sort(&r);
		for (size_t i = 0; i < r.nhists; i++) {
			const struct lh_key *k = &r.hists[i].key;

			if (k->pid != 5)
				assert_true(k->comm[0] == 't' && (uint64_t)atoi(k->comm + 1) == k->birth_ns);
			else
				for (size_t j = 0; j < 6; j++)
					if (in[j].tid == k->tid && in[j].birth == k->birth_ns)
						assert_string_equal(k->comm, want[j]);
		}
		for (size_t i = 0; i < r.npmu; i++)
			assert_string_equal(r.pmu[i].key.comm, r.pmu[i].key.tid == 7 ? "first" : "row");
		lh_report_clear(&r);
	}
}

/* lh_report_reset: the next interval's histograms get the last one's slot arrays,
 * zeroed; counters, charges and counter rows start empty; find_hist sees no old key;
 * lh_report_clear frees the spares. */
static void test_reset_reuses_storage(void **state)
{
	struct lh_report r;
	uint64_t *seen[64];
	struct lh_key_charge c = { .pid = 7, .lost = 3 };
	(void)state;

	make_report(&r, NULL, 0, NULL);
	for (int interval = 0; interval < 3; interval++) {
		size_t reused = 0;

		for (uint32_t i = 0; i < 64; i++) {
			struct lh_key k = { .fields = LH_KEY_TID, .tid = i + 1 };
			struct lh_hist *h = lh_report_add_hist(&r, "wakeup", &k);

			assert_non_null(h);
			assert_int_equal(h->nslots, lh_nslots(&r.meta.scheme));
			for (uint32_t s = 0; s < h->nslots; s++)
				assert_int_equal(h->slots[s], 0);
			assert_int_equal(h->count + h->sum_ns + h->max_ns, 0);
			for (int j = 0; interval && j < 64; j++)
				reused += h->slots == seen[j];
			h->slots[i % h->nslots] = 5;	/* dirty it for the next interval */
			h->count = 5;
		}
		/* after make_report's total and 64 per tid, every tid's array from the
		 * second interval on is one of the last interval's */
		assert_int_equal(reused, interval ? 64 : 0);
		for (size_t i = 0; i < 64; i++)
			seen[i] = r.hists[r.nhists - 64 + i].slots;
		r.counters[LH_EV_ENDS] = 9;
		assert_int_equal(lh_report_charge(&r, &c), 0);
		assert_non_null(lh_report_add_pmu(&r, &r.hists[0].key, 0));
		lh_report_reset(&r);
		assert_int_equal(r.nhists, 0);
		assert_int_equal(r.npmu + r.ncharges + r.charged + r.counters[LH_EV_ENDS], 0);
		assert_int_equal(r.nspare, 65);	/* 64 taken, 64 back, the total's kept */
	}
	{
		struct lh_key k = { .fields = LH_KEY_TID, .tid = 1 };
		struct lh_hist *h = lh_report_find_hist(&r, "wakeup", &k);

		assert_non_null(h);
		assert_int_equal(h->count, 0);	/* a new one, not the last interval's */
		assert_int_equal(r.nhists, 1);
	}
	lh_report_clear(&r);
	assert_null(r.spare);
	assert_int_equal(r.nspare, 0);
}

/* json-c's bytes for the document doc: parsed, then written with the flags lathist's
 * renderer follows (pretty, or one line). */
static void assert_json_c_layout(const char *doc, bool compact)
{
	json_object *o = json_tokener_parse(doc);
	const char *again;

	assert_non_null(o);
	again = json_object_to_json_string_ext(o, compact ?
		JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE :
		JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);
	assert_string_equal(doc, again);
	json_object_put(o);
}

/* The histograms are written without json-c: the document is byte for byte what json-c
 * writes for it, pretty and on one line, over every kind of member a histogram has
 * (key fields of every grouping, names to escape, bytes, lost events with bounds and
 * nulls, an empty histogram, the unbounded slot, 64-bit counts), and none. */
static void test_json_layout_is_json_c(void **state)
{
	uint64_t ns[] = { 0, 1500, 256000, 256001, 9000000 };
	struct lh_key t = { .fields = LH_KEY_TID | LH_KEY_PID | LH_KEY_COMM, .tid = 12, .pid = 10,
			    .birth_ns = 123456789 };
	struct lh_key d = { .fields = LH_KEY_DISK | LH_KEY_OP | LH_KEY_PID | LH_KEY_COMM,
			    .pid = 4294967295U, .birth_ns = 1 };
	struct lh_key g = { .fields = LH_KEY_CGROUP, .cgroup_id = 18446744073709551615ULL };
	struct lh_key c = { .fields = LH_KEY_CPU, .cpu = 3 };
	struct lh_key_charge charge = { .pid = 10, .tid = 12, .birth_ns = 123456789, .lost = 7 };
	struct lh_report r;
	struct lh_hist *h;
	(void)state;

	for (int round = 0; round < 2; round++) {
		make_report(&r, round ? ns : NULL, round ? 5 : 0, NULL);
		if (round) {
			memcpy(t.comm, "a\"b\\c/\x01\x7f", 8);
			snprintf(d.disk, sizeof(d.disk), "nvme0n1");
			snprintf(d.op, sizeof(d.op), "write");
			g.cgroup = lh_cgroup_intern(g.cgroup_id, "/sys.slice/a \"b\"\\/\n");
			r.meta.has_bytes = true;
			assert_non_null(h = lh_report_add_hist(&r, "wakeup", &t));
			h->slots[3] = 2;
			h->slots[h->nslots - 1] = 18446744073709551615ULL;
			h->count = 18446744073709551615ULL;
			h->sum_ns = h->max_ns = 18446744073709551615ULL;
			h->bytes = 4096;
			assert_non_null(lh_report_add_hist(&r, "wakeup", &d));	/* empty */
			assert_non_null(h = lh_report_add_hist(&r, "wakeup", &g));
			h->slots[0] = h->count = 1;
			assert_non_null(h = lh_report_add_hist(&r, "wakeup", &c));
			h->slots[10] = h->count = 3;
			h->sum_ns = 3 * 1024000;
			h->max_ns = 1024000;
			r.counters[LH_LOSS_UNPAIRED] = 5;	/* lost events: bounds and nulls */
			assert_int_equal(lh_report_charge(&r, &charge), 0);
			lh_report_sort(&r);
		} else {
			lh_report_reset(&r);	/* no histogram at all */
		}
		for (int compact = 0; compact < 2; compact++) {
			char *doc = NULL;
			size_t len = 0;
			FILE *f = open_memstream(&doc, &len);

			assert_non_null(f);
			assert_int_equal(lh_render_json_file(f, &r, compact), 0);
			fclose(f);
			assert_json_c_layout(doc, compact);
			free(doc);
		}
		lh_report_clear(&r);
	}
}

/* lh_report_accumulate's counter rows (cumulative metrics with --counters): a row adds
 * into the one of the same key and event, others are appended, over thousands of keys
 * (matched through a hash table, not a scan of every row per row). */
static void test_accumulate_counter_rows(void **state)
{
	struct lh_report cum, r;
	(void)state;

	make_report(&cum, NULL, 0, NULL);
	for (int interval = 0; interval < 3; interval++) {
		make_report(&r, NULL, 0, NULL);
		/* interval k has tids k*1000 .. k*1000 + 2999: 2000 seen before, 1000 new */
		for (uint32_t i = 0; i < 3000; i++) {
			struct lh_key k = { .fields = LH_KEY_TID | LH_KEY_PID, .pid = 1,
					    .tid = (uint32_t)interval * 1000 + i };

			for (int e = 0; e < 2; e++) {
				struct lh_pmu_row *w = lh_report_add_pmu(&r, &k, e);

				assert_non_null(w);
				w->raw = 10 + (uint64_t)e;
				w->slices = 1;
			}
		}
		assert_int_equal(lh_report_accumulate(&cum, &r), 0);
		lh_report_clear(&r);
	}
	/* tids 0..4999, two rows each; tid t was in intervals max(0, t/1000 - 2) .. min(2,
	 * t/1000) */
	assert_int_equal(cum.npmu, 2 * 5000);
	for (size_t i = 0; i < cum.npmu; i++) {
		const struct lh_pmu_row *w = &cum.pmu[i];
		uint32_t t = w->key.tid / 1000;
		uint64_t times = (t < 2 ? t : 2) - (t > 2 ? t - 2 : 0) + 1;

		assert_int_equal(w->slices, times);
		assert_int_equal(w->raw, times * (10 + (uint64_t)w->event));
	}
	lh_report_clear(&cum);
}

/* lh_slot_range formats by hand: the same text as snprintf's "(%lu, inf)" or
 * "%c%lu, %lu]" for every slot of every precision, truncated as snprintf truncates. */
static void test_slot_range_is_snprintf(void **state)
{
	struct lh_meta m = { .scheme = { .unit_ns = 1000 } };
	(void)state;

	for (uint32_t p = 0; p <= LH_MAX_PRECISION; p++) {
		m.scheme.precision = p;
		for (uint32_t s = 0; s < LH_NSLOTS(p); s++) {
			uint64_t lo = lh_slot_lo(s, p), hi = lh_slot_hi(s, p);
			char want[64], got[64];

			if (hi == UINT64_MAX)
				snprintf(want, sizeof(want), "(%" PRIu64 ", inf)", lo);
			else
				snprintf(want, sizeof(want), "%c%" PRIu64 ", %" PRIu64 "]",
					 s ? '(' : '[', lo, hi);
			for (size_t len = 1; len <= sizeof(got); len += 7) {
				char cut[64];

				memset(got, 'x', sizeof(got));
				snprintf(cut, len, "%s", want);
				assert_ptr_equal(lh_slot_range(got, len, (int)s, &m), got);
				assert_string_equal(got, cut);
			}
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_c9_bound_is_upper_inclusive),
		cmocka_unit_test(test_buckets_and_labels),
		cmocka_unit_test(test_label_and_csv_escaping),
		cmocka_unit_test(test_ipc),
		cmocka_unit_test(test_find_hist_index),
		cmocka_unit_test(test_sort_order),
		cmocka_unit_test(test_outbuf_as_stdio),
		cmocka_unit_test(test_one_name_per_task),
		cmocka_unit_test(test_reset_reuses_storage),
		cmocka_unit_test(test_json_layout_is_json_c),
		cmocka_unit_test(test_accumulate_counter_rows),
		cmocka_unit_test(test_slot_range_is_snprintf),
		cmocka_unit_test(test_loss_line_names_every_class),
		cmocka_unit_test(test_ranked_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
