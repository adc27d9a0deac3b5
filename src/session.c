// SPDX-License-Identifier: MIT
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/utsname.h>
#include <bpf/bpf.h>
#include <json-c/json.h>
#include "bpfcommon.h"
#include "cgroup.h"
#include "context.h"
#include "recorder.h"
#include "session.h"
#include "tool.h"
#include "util.h"

void lh_meta_add_filter(struct lh_meta *m, const char *name, bool numeric, const char *fmt, ...)
{
	struct lh_filter *f;
	va_list ap;

	if (m->nfilters >= LH_MAX_FILTERS)
		return;
	f = &m->filters[m->nfilters++];
	f->name = name;
	f->numeric = numeric;
	va_start(ap, fmt);
	vsnprintf(f->value, sizeof(f->value), fmt, ap);
	va_end(ap);
}

static volatile sig_atomic_t exiting;

__thread struct lh_sink *lh_session_sink;

static void on_signal(int sig)
{
	static const char msg[] = "lathist: a second signal: ending at once, without the final "
				  "report\n";
	int saved = errno;

	if (exiting) {	/* async-signal-safe: write(2), signal(2), raise(3) */
		if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
			(void)0;
		signal(sig, SIG_DFL);
		raise(sig);	/* ends with the signal's status, as the default action would */
	}
	exiting = 1;
	errno = saved;
}

void lh_session_signals(void)
{
	/* SA_RESTART: a write blocked on a full pipe when Ctrl-C comes goes on (it
	 * failed with EINTR); the waits (clock_nanosleep, epoll_wait) still return.
	 * A second Ctrl-C ends lathist at once, in one line (a reader that never
	 * reads would otherwise hold it) */
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

bool lh_session_exiting(void)
{
	return exiting;
}

void lh_session_init(struct lh_session *s, const struct lh_common_opts *c, const char *tool,
		     const struct lh_hist_kind *kinds, int nkinds, const char *grouping)
{
	struct lh_meta *m = &s->report.meta;
	struct utsname u;

	/* from here on Ctrl-C ends the run cleanly: during loading it ends right after
	 * attaching, with an (empty) final report */
	lh_session_signals();
	memset(s, 0, sizeof(*s));
	s->c = c;
	s->ncpus = libbpf_num_possible_cpus();
	m->tool = tool;
	uname(&u);
	snprintf(m->kernel, sizeof(m->kernel), "%s", u.release);
	snprintf(m->host, sizeof(m->host), "%s", u.nodename);
	lh_run_id(m->run_id);
	m->clock = "CLOCK_MONOTONIC (bpf_ktime_get_ns)";
	m->kinds = kinds;
	m->nkinds = nkinds;
	m->grouping = grouping;
	m->unit = c->unit;
	m->scheme.precision = c->precision;
	m->scheme.unit_ns = c->unit_ns;
	m->ncpus = s->ncpus;
	m->interval_ns = c->interval_ns;
	m->context = lh_context_gather();	/* NULL (unknown) without memory */
	if (c->pid)
		lh_meta_add_filter(m, "pid", true, "%u", c->pid);
	if (c->cgroup[0])
		lh_meta_add_filter(m, "cgroup", false, "%s", c->cgroup);
}

static void record_maps(struct lh_session *s)
{
	struct lh_meta *m = &s->report.meta;
	struct bpf_map *map;
	uint64_t total = 0;

	bpf_object__for_each_map(map, s->obj) {
		struct lh_map_size *ms;

		if (bpf_map__fd(map) < 0)
			continue;
		if (m->nmaps >= LH_MAX_MAPS) {	/* a new map needs a larger LH_MAX_MAPS */
			fprintf(stderr, "lathist: map %s is left out of meta.maps (LH_MAX_MAPS %d)\n",
				bpf_map__name(map), LH_MAX_MAPS);
			continue;
		}
		ms = &m->maps[m->nmaps++];
		ms->name = bpf_map__name(map);
		ms->max_entries = bpf_map__max_entries(map);
		ms->memlock_bytes = lh_map_memlock(bpf_map__fd(map));
		total += ms->memlock_bytes;
		if (s->c->verbose)
			fprintf(stderr, "map %-20s max_entries %-8u memlock %llu bytes\n", ms->name,
				ms->max_entries, (unsigned long long)ms->memlock_bytes);
	}
	if (s->c->verbose)
		fprintf(stderr, "maps: %.1f KiB kernel memory (memlock as the kernel reports it; "
			"elements of task storage and no-prealloc maps are allocated on demand)\n",
			(double)total / 1024);
}

void lh_session_configure_records(const struct lh_common_opts *c, struct bpf_map *events,
				  volatile unsigned long long *slower_than_ns,
				  volatile unsigned long long *wakeup_bytes)
{
	bool on = c->slower_than_ns != UINT64_MAX;

	/* the map exists either way; without records it is one page */
	bpf_map__set_max_entries(events, on ? (uint32_t)c->ringbuf_bytes : 4096);
	*slower_than_ns = c->slower_than_ns;
	/* one wakeup per quarter buffer (bench/records_overhead.py measures it against the
	 * kernel's own choice, LATHIST_TEST=kernel-wakeup) */
	*wakeup_bytes = on && !c->kernel_wakeup ? c->ringbuf_bytes / 4 : 0;
	if (on && c->verbose)
		fprintf(stderr, "ring buffer: %llu bytes%s\n", (unsigned long long)c->ringbuf_bytes,
			c->ringbuf_rounded ? " (rounded up to a power-of-two number of pages)" : "");
}

static int open_records(struct lh_session *s)
{
	const struct lh_common_opts *c = s->c;
	struct bpf_map *map = bpf_object__find_map_by_name(s->obj, "lathist_events");
	/* text lines on stdout next to a text report there, else on stderr */
	int fd = c->format == LH_FMT_TEXT && !c->output ? STDOUT_FILENO : STDERR_FILENO;

	s->report.records.on = true;
	s->report.meta.features |= LH_FEAT_RECORDS;
	s->report.records.slower_than_ns = c->slower_than_ns;
	s->report.records.ringbuf_bytes = c->ringbuf_bytes;
	s->recorder.delay_us = c->consumer_delay_us;
	return lh_recorder_open(&s->recorder, s->report.meta.tool, bpf_map__fd(map),
				c->events_path, fd, s->format_record, s);
}

int lh_session_loaded(struct lh_session *s, struct bpf_object *obj, size_t value_size)
{
	struct bpf_map *counters = bpf_object__find_map_by_name(obj, "lathist_counters");

	s->obj = obj;
	s->value_size = value_size;
	s->counters_fd = counters ? bpf_map__fd(counters) : -1;
	s->percpu_buf = calloc((size_t)s->ncpus, lh_percpu_stride(value_size > s->max_value_size ?
								   value_size : s->max_value_size));
	if (!s->percpu_buf)
		return -ENOMEM;
	record_maps(s);
	if (s->c->anonymize) {
		int err = lh_anon_init(&s->anon, s->report.meta.tool);

		if (err)
			return err;
		lh_anon_meta(&s->anon, &s->report.meta);
	}
	/* created or truncated before tracing: a run that ends before its first
	 * interval leaves no other run's lines in it */
	if (s->c->series_path) {
		int err = lh_lines_open(&s->series, s->c->series_path);

		if (err) {
			fprintf(stderr, "lathist %s: cannot open --series %s: %s; give a file "
				"lathist can write\n", s->report.meta.tool, s->c->series_path,
				strerror(-err));
			return err;
		}
	}
	if (s->c->slower_than_ns != UINT64_MAX)
		return open_records(s);
	return 0;
}

/*
 * Runs of the tool's programs the kernel skipped so far: bpf_prog_info's
 * recursion_misses (5.12+; 0 before), counted when a program would run while
 * it is already running on that CPU (kernel/trace/bpf_trace.c
 * __bpf_trace_run()).
 */
static uint64_t prog_misses(const struct lh_session *s)
{
	struct bpf_program *p;
	uint64_t n = 0;

	bpf_object__for_each_program(p, s->obj) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(p);

		if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len))
			n += info.recursion_misses;
	}
	return n;
}

void lh_session_attached(struct lh_session *s, const char *what)
{
	char dur[32];

	if (s->prepare)
		s->prepare(s);
	*s->start_ns = lh_now_ns();
	*s->enabled = true;
	s->prog_misses = prog_misses(s);	/* what tracing counts starts here */
	if (s->sweep)
		s->sweep(s, false);
	if (lh_session_sink)
		lh_session_sink->attached(lh_session_sink, s);
	else if (s->c->duration_ns)	/* 9999s, not %g's 1e+04 */
		fprintf(stderr, "Tracing %s for %s... Hit Ctrl-C to end sooner.\n", what,
			lh_duration_str(s->c->duration_ns, dur, sizeof(dur)));
	else
		fprintf(stderr, "Tracing %s... Hit Ctrl-C to end.\n", what);
}

/* Read and clear the counters of buffer buf (no program writes it now). */
static int read_counters(struct lh_session *s, uint32_t buf)
{
	uint64_t misses = prog_misses(s);
	struct lh_counters *pc = calloc((size_t)s->ncpus, sizeof(*pc));
	int err = 0;

	if (!pc)
		return -ENOMEM;
	if (bpf_map_lookup_elem(s->counters_fd, &buf, pc)) {
		err = -errno;
		goto out;
	}
	lh_counters_sum(s->report.counters, pc, s->ncpus);
	err = lh_report_gaps(&s->report, (uint32_t)(s->ncpus < LH_MAX_GAP_CPUS ? s->ncpus :
							      LH_MAX_GAP_CPUS));
	if (err)
		goto out;
	for (uint32_t cpu = 0; cpu < s->report.gap_ncpus; cpu++)
		s->report.gap_cpu[cpu] = pc[cpu].v[LH_GAP_MISSED_SWITCH];
	s->report.counters[LH_LOSS_PROG_MISSED] = misses - s->prog_misses;
	s->prog_misses = misses;
	memset(pc, 0, (size_t)s->ncpus * sizeof(*pc));
	if (bpf_map_update_elem(s->counters_fd, &buf, pc, BPF_ANY))
		err = -errno;
out:
	free(pc);
	return err;
}

/* Interval mode: do the histograms' losses rise with load? (DESIGN: compare
 * the loss rate with the event rate across intervals) */
static void update_trend(struct lh_session *s)
{
	uint64_t *e = realloc(s->trend_events, (s->ntrend + 1) * sizeof(*e));
	uint64_t *l = e ? realloc(s->trend_lost, (s->ntrend + 1) * sizeof(*l)) : NULL;

	if (e)
		s->trend_events = e;
	if (!e || !l)
		return;
	s->trend_lost = l;
	e[s->ntrend] = s->report.counters[LH_EV_ENDS];
	l[s->ntrend] = lh_hist_lost(s->report.counters);
	s->ntrend++;
	s->report.trend = lh_loss_trend(e, l, s->ntrend);
	s->report.trend_intervals = s->ntrend;
}

/*
 * Take the aggregate of the half BPF has been writing and leave it empty. The
 * last one first disables the programs, so that its counters and records are
 * complete: over the whole run, delivered + dropped = eligible exactly.
 */
static int collect(struct lh_session *s, bool last)
{
	uint32_t old = *s->hist_buf & 1;
	int err;

	if (last && s->sweep)
		s->sweep(s, true);
	if (last)
		*s->enabled = false;
	*s->hist_buf = old ^ 1;
	if (s->keys_made) {
		s->keys_at_flip = *s->keys_made;
		if (s->drain_keys)	/* the next wake: drain_keys on */
			*s->drain_at = s->keys_at_flip + s->drain_keys;
	}
	lh_wait_for_bpf_readers();
	if (s->report.records.on) {
		/* records submitted until now; with programs still running, stop at
		 * the first one newer than the flip. A failed write was said where it
		 * happened: tracing goes on, and the run ends with exit 1. */
		if (lh_recorder_drain(&s->recorder, last ? 0 : lh_now_ns(),
				      &s->report.records.delivered))
			s->records_failed = true;
	}
	err = read_counters(s, old);
	if (!err)
		err = s->read_hists(s, old);
	if (!err)
		lh_report_sort(&s->report);
	if (!err && s->c->anonymize)
		lh_anon_report(&s->anon, &s->report);
	return err;
}

/*
 * Has the half being written made drain_keys entries in the keyed maps since
 * the last flip? Without -i every key that had an event stays in the map
 * until the end, so a churn of short threads (a build, a shell loop) would
 * fill a map sized to the threads alive at the start: past half of it
 * (lh_session_read_early), the half is read early (drain) and the map starts
 * again empty.
 */
static bool drain_due(const struct lh_session *s)
{
	return s->drain_keys && s->keys_made && *s->keys_made - s->keys_at_flip >= s->drain_keys;
}

void lh_session_read_early(struct lh_session *s, uint32_t max_entries)
{
	s->drain_keys = ((uint64_t)max_entries + 1) / 2;
}

/* Read the half being written now and keep it in s->held for the end of the
 * interval (0 or a negative errno). */
static int drain(struct lh_session *s)
{
	int err;

	lh_report_reset(&s->report);
	err = collect(s, false);
	if (err)
		return err;
	if (!s->held_any)
		s->held.meta = s->report.meta;	/* shared, as s->cum's: freed once */
	s->held_any = true;
	s->ndrains++;
	/* the records read so far: collect sets the count, never adds to it */
	s->held.records.delivered += s->report.records.delivered;
	return lh_report_merge(&s->held, &s->report, false);	/* sorted once, at the end */
}

/* The interval's aggregate: its last read (s->report) and the halves drained
 * before it. */
static int merge_held(struct lh_session *s)
{
	int err;

	if (!s->held_any)
		return 0;
	err = lh_report_accumulate(&s->report, &s->held);
	s->report.records.delivered += s->held.records.delivered;
	s->held.records.delivered = 0;
	lh_report_reset(&s->held);
	s->held_any = false;
	return err;
}

/* Sleep until deadline (CLOCK_MONOTONIC ns) or a signal, reading records meanwhile. */
/* The records went to a pipe (stdout, or a FIFO given to --events) that
 * nobody reads any more: like a closed pipe under the report, it ends the run. */
static bool records_reader_gone(const struct lh_session *s)
{
	return s->report.records.on && s->recorder.out.err == EPIPE;
}

static void wait_until(struct lh_session *s, uint64_t deadline_ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(deadline_ns / 1000000000ULL),
		.tv_nsec = (long)(deadline_ns % 1000000000ULL),
	};

	if (s->report.records.on) {	/* the wake ring is the recorder's too */
		while (!exiting && !records_reader_gone(s) && !drain_due(s) &&
		       lh_now_ns() < deadline_ns)
			lh_recorder_poll(&s->recorder, deadline_ns);
		return;
	}
	if (s->wake_rb) {	/* at most 1 s at a time: drain_due without a wake too */
		for (uint64_t now; !exiting && !drain_due(s) && (now = lh_now_ns()) < deadline_ns;)
			ring_buffer__poll(s->wake_rb, deadline_ns - now >= 1000000000ULL ? 1000 :
					  (int)((deadline_ns - now + 999999) / 1000000));
		return;
	}
	while (!exiting && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/*
 * --series: this interval as one JSON line, written whole with one write(2).
 * A failure is said once; tracing goes on and the run ends with exit 1.
 */
static int append_series(struct lh_session *s)
{
	char *line;
	size_t len;
	int err;

	if (!s->c->series_path || s->series.err)	/* opened by lh_session_loaded */
		return -s->series.err;
	line = lh_render_json(&s->report, true);
	if (!line) {
		s->series.err = ENOMEM;
		err = -ENOMEM;
		goto fail;
	}
	len = strlen(line);
	line[len] = '\n';	/* over the NUL: the line ends in a newline */
	err = lh_lines_write(&s->series, line, len + 1);
	free(line);
	if (!err)
		return 0;
fail:
	fprintf(stderr, "lathist %s: writing --series %s failed: %s; tracing goes on\n",
		s->report.meta.tool, s->c->series_path, strerror(-err));
	return err;
}

/* Interval mode into a metrics format: each file holds the totals since the start. */
static bool metrics_cumulative(const struct lh_common_opts *c)
{
	return c->interval_ns &&
	       (c->format == LH_FMT_OPENMETRICS || c->format == LH_FMT_PROMETHEUS);
}

/*
 * The -p process (-t thread) is gone, or its pid now names another task (its
 * /proc start time changed): said once on stderr, and kept in every report
 * from then on. BPF already ignores a task that took the pid (lh_born_at).
 */
static void watch_exit(struct lh_session *s, uint64_t now, uint64_t start, uint64_t real)
{
	const struct lh_common_opts *c = s->c;
	uint64_t ticks;

	if (!c->watch_tid || s->report.meta.filter_exit_realtime_ns)
		return;
	if (!(c->watch_thread ? lh_task_start_ticks : lh_process_start_ticks)(c->watch_tid, &ticks) &&
	    ticks == c->watch_ticks)
		return;
	s->report.meta.filter_exit_realtime_ns = real + (now - start);
	s->cum.meta.filter_exit_realtime_ns = s->report.meta.filter_exit_realtime_ns;
	fprintf(stderr, "lathist %s: %s %u exited %.2f s into the run; tracing goes on, and a "
		"task that takes its id is not traced\n", s->report.meta.tool,
		c->watch_thread ? "thread" : "process", c->watch_tid, (double)(now - start) / 1e9);
}

static int read_failed(const struct lh_session *s, int err)
{
	fprintf(stderr, "lathist %s: reading the histograms failed: %s\n", s->report.meta.tool,
		strerror(-err));
	return err;
}

static int on_wake(void *ctx, void *data, size_t size)
{
	return 0;	/* drain_due says what to do */
}

/*
 * The programs' wake (lathist_wake) into wait_until's poll: the recorder's ring
 * buffer set with --slower-than (which polls at least every 100 ms), else one
 * of its own (at least every second). Without it (it cannot be opened, said
 * with -v) drain_due is looked at only where the run loop wakes anyway (once
 * a second without -i), and a burst of keys past the map's size in between is
 * counted (hist_map_full).
 */
static void wake_open(struct lh_session *s)
{
	struct bpf_map *m = bpf_object__find_map_by_name(s->obj, "lathist_wake");
	bool failed;

	if (!s->drain_keys || !s->keys_made || !m)
		return;
	*s->drain_at = s->keys_at_flip + s->drain_keys;
	if (s->report.records.on)	/* on failure, looked at every 100 ms */
		failed = ring_buffer__add(s->recorder.rb, bpf_map__fd(m), on_wake, s) != 0;
	else
		failed = !(s->wake_rb = ring_buffer__new(bpf_map__fd(m), on_wake, s, NULL));
	if (failed && s->c->verbose)
		fprintf(stderr, "lathist %s: the keyed maps' wake ring cannot be read (%s): they "
			"are read early only when the run wakes anyway (%s)\n", s->report.meta.tool,
			strerror(errno), s->report.records.on ? "every 100 ms" : "once a second "
			"without -i");
}

int lh_session_run(struct lh_session *s)
{
	const struct lh_common_opts *c = s->c;
	uint64_t start = lh_now_ns(), begin = start, end = c->duration_ns ? start + c->duration_ns : 0;
	uint64_t real = lh_realtime_ns();
	struct lh_usage u0, prev, un;
	uint32_t index = 0;
	int err, write_err = 0;

	lh_usage_sample(&u0, start);
	prev = u0;
	wake_open(s);

	for (;;) {
		uint64_t now, wake = UINT64_MAX;
		bool last, due;

		if (c->interval_ns)
			wake = begin + c->interval_ns;
		if (end && end < wake)
			wake = end;
		if (wake == UINT64_MAX)		/* until a signal; look again every second */
			wake = lh_now_ns() + 1000000000ULL;
		if (c->watch_tid && wake > lh_now_ns() + 250000000ULL)	/* its exit, within 250 ms */
			wake = lh_now_ns() + 250000000ULL;
		wait_until(s, wake);
		now = lh_now_ns();
		watch_exit(s, now, start, real);
		last = exiting || (end && now >= end) || records_reader_gone(s);
		due = c->interval_ns && now >= begin + c->interval_ns;
		if (!last && !due) {
			err = drain_due(s) ? drain(s) : 0;
			if (err)
				return read_failed(s, err);
			continue;
		}
		lh_usage_sample(&un, now);	/* the aggregate's end, not after collect() */
		lh_report_reset(&s->report);	/* its storage is the next interval's */
		err = collect(s, last);
		if (!err)
			err = merge_held(s);
		if (!err && c->interval_ns)
			update_trend(s);
		if (err)
			return read_failed(s, err);
		s->report.meta.start_realtime_ns = real + (begin - start);
		s->report.meta.duration_ns = now - begin;
		s->report.meta.interval_index = c->interval_ns ? ++index : 0;
		lh_load_between(&s->report.meta.load, &prev, &un);
		prev = un;
		/* a failed write is reported and tracing goes on; any makes the exit 1 */
		if (lh_session_sink) {
			err = lh_session_sink->interval(lh_session_sink, s);
			if (err)
				return err;
		} else if (metrics_cumulative(c)) {
			/* Prometheus counters and histograms never go down: since the start */
			err = lh_report_accumulate(&s->cum, &s->report);
			s->cum.meta = s->report.meta;
			s->cum.meta.start_realtime_ns = real;
			s->cum.meta.duration_ns = now - start;
			lh_load_between(&s->cum.meta.load, &u0, &un);
			err = err ? err : lh_emit(&s->cum, c);
		} else {
			err = lh_emit(&s->report, c);
		}
		if (err && !write_err)
			write_err = err;
		if (err == -EPIPE)	/* nobody reads the report any more: end the run */
			return err;
		err = append_series(s);
		if (err && !write_err)
			write_err = err;
		begin = now;
		if (last) {
			if (!lh_session_sink)
				lh_emit_end(s->report.meta.tool, c);
			return write_err ? write_err : s->records_failed ? -EIO : 0;
		}
	}
}

void lh_session_configure_cgroups(struct bpf_map *paths, struct bpf_program *mkdir, bool on)
{
	bpf_map__set_max_entries(paths, on ? 4096 : 1);
	bpf_program__set_autoload(mkdir, on);
}

void lh_session_cgroups_attached(struct bpf_program *mkdir)
{
	if (bpf_program__autoload(mkdir))
		lh_cgroup_scan();	/* no cgroup2 mount: refused at parse */
}

void lh_session_free(struct lh_session *s)
{
	lh_report_clear(&s->report);
	lh_report_clear(&s->cum);
	lh_report_clear(&s->held);	/* its meta is s->report's */
	json_object_put(s->report.meta.context);	/* s->cum.meta's is the same */
	s->report.meta.context = s->cum.meta.context = NULL;
	free(s->percpu_buf);
	s->percpu_buf = NULL;
	free(s->keyed.keys);
	free(s->keyed.values);
	free(s->keyed.del);
	free(s->keyed.tok);
	memset(&s->keyed, 0, sizeof(s->keyed));
	lh_recorder_close(&s->recorder);
	ring_buffer__free(s->wake_rb);
	s->wake_rb = NULL;
	lh_lines_close(&s->series);
	free(s->trend_events);
	free(s->trend_lost);
}

int lh_session_main(struct lh_session *s, int load_err, struct bpf_object *obj,
		    size_t value_size, int (*attach)(void *skel, bool verbose), void *skel,
		    const char *what)
{
	int rc = LH_EXIT_RUNTIME;

	if (load_err)
		lh_load_error(s->report.meta.tool, load_err, s->c->verbose);
	else if (!lh_session_loaded(s, obj, value_size) && !attach(skel, s->c->verbose)) {
		lh_session_attached(s, what);
		rc = lh_session_run(s) ? LH_EXIT_RUNTIME : LH_EXIT_OK;
		if (s->c->verbose && s->ndrains)
			fprintf(stderr, "lathist %s: keyed maps read early: %" PRIu64 " early reads "
				"(each once the half being written had made %" PRIu64 " of the map's "
				"entries)\n", s->report.meta.tool, s->ndrains, s->drain_keys);
	}
	lh_session_free(s);
	return rc;
}

int lh_session_add_copies(struct lh_session *s, const char *name, const struct lh_key *key,
			  const void *values, size_t offset, int copies)
{
	size_t stride = lh_percpu_stride(s->value_size);
	struct lh_hist *h = lh_report_add_hist(&s->report, name, key);

	if (!h)
		return -ENOMEM;
	for (int cpu = 0; cpu < copies; cpu++)
		lh_hist_add_raw(h, (const char *)values + (size_t)cpu * stride + offset);
	return 0;
}

int lh_session_add_percpu(struct lh_session *s, const char *name, const struct lh_key *key,
			  const void *values, size_t offset)
{
	return lh_session_add_copies(s, name, key, values, offset, s->ncpus);
}

/* Copies of each value that map fd returns from a lookup: s->ncpus for a per-CPU
 * map type, else 1 (s->ncpus when the map's type cannot be read). */
static int map_copies(const struct lh_session *s, int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return s->ncpus;
	return lh_map_type_percpu(info.type) ? s->ncpus : 1;
}

/* Make *p hold at least need bytes (grown to twice what it had, at least). */
static int grow(void **p, size_t *have, size_t need)
{
	size_t cap = *have;
	void *n;

	if (need <= cap)
		return 0;
	cap = 2 * cap > need ? 2 * cap : need;
	n = realloc(*p, cap);
	if (!n)
		return -ENOMEM;
	*p = n;
	*have = cap;
	return 0;
}

/* Append one key to the keys to delete (after its batch, or after the walk key by key). */
static int keep_key(struct lh_keyed_read *kr, const void *key, size_t key_size)
{
	int err = grow(&kr->del, &kr->del_bytes, (kr->ndel + 1) * key_size);

	if (err)
		return err;
	memcpy((char *)kr->del + kr->ndel++ * key_size, key, key_size);
	return 0;
}

/* Values of one batch: this many bytes, at least LH_BATCH_MIN elements (a bucket
 * with more than a batch holds makes it grow: ENOSPC). */
#define LH_BATCH_BYTES (1U << 20)
#define LH_BATCH_MIN 16
#define LH_ENOTSUPP 524		/* the kernel's ENOTSUPP: no batch ops for this map type */

static bool batch_unsupported(int err)
{
	return err == -EINVAL || err == -LH_ENOTSUPP || err == -EOPNOTSUPP;
}

/*
 * Delete the keys in kr->del: in batches where the kernel has them, else one
 * by one. A key left in the map would be added to again when its half comes
 * round and then read twice: a key whose delete fails for another reason
 * than its absence is tried once more alone, and if that fails too its
 * negative errno is returned (the run ends) rather than count it twice.
 * batch: the kernel has batch operations (else one by one from the start).
 * kr->ndel is 0 after a success.
 */
static int delete_kept(struct lh_session *s, int fd, size_t key_size, bool batch)
{
	struct lh_keyed_read *kr = &s->keyed;
	size_t done = 0;

	while (done < kr->ndel) {
		char *k = (char *)kr->del + done * key_size;
		__u32 count = (__u32)(kr->ndel - done);
		int err;

		if (batch) {
			__u32 asked = count;

			err = bpf_map_delete_batch(fd, k, &count, NULL);
			if (!err) {
				kr->ndel = 0;
				return 0;
			}
			err = -errno;
			/* the kernel writes count only from inside its loop over the
			 * keys: a call refused before it (no batch ops for the map,
			 * ENOMEM, EPERM) returns count as it was given, none deleted */
			if (count >= asked)
				count = 0;
			if (!count && batch_unsupported(err)) {	/* lookups only: one by one */
				batch = false;
				continue;
			}
			done += count;	/* deleted before the one that failed */
			k = (char *)kr->del + done * key_size;
		}
		if (bpf_map_delete_elem(fd, k) && errno != ENOENT)
			return -errno;
		done++;
	}
	kr->ndel = 0;
	return 0;
}

/*
 * The whole map in batches (bpf_map_lookup_batch: the kernel walks it bucket by
 * bucket, each bucket under its lock), add() on the keys of half buf, which
 * are kept in kr->del and deleted after each batch (the next batch starts
 * at a bucket index past them), and no program writes half buf any more, so
 * each of its keys is seen once. NO_BATCH when the kernel has no batch
 * operations (the first call fails with EINVAL or ENOTSUPP: nothing was
 * added), else 0 or the first negative errno of the map, of add or of a delete.
 */
#define NO_BATCH 1
static int walk_batch(struct lh_session *s, int fd, size_t key_size, size_t value_size,
		      size_t buf_off, uint32_t buf,
		      int (*add)(struct lh_session *s, const void *key, const void *values))
{
	struct lh_keyed_read *kr = &s->keyed;
	size_t vsz = lh_percpu_stride(value_size) * (size_t)kr->copies;
	size_t cap = s->c->test_batch_count ? s->c->test_batch_count :
		     LH_BATCH_BYTES / vsz > LH_BATCH_MIN ? LH_BATCH_BYTES / vsz : LH_BATCH_MIN;
	/* the position between calls: a bucket index for hashes, a key for arrays */
	size_t tok = key_size > 8 ? key_size : 8;
	bool first = true;
	int err, err2;

	if ((err = grow(&kr->tok, &kr->tok_bytes, 2 * tok)))
		return err;
	for (;;) {
		char *in = kr->tok, *out = in + tok;
		__u32 count = (__u32)cap;

		if ((err = grow(&kr->keys, &kr->keys_bytes, cap * key_size)) ||
		    (err = grow(&kr->values, &kr->values_bytes, cap * vsz)))
			return err;
		err = bpf_map_lookup_batch(fd, first ? NULL : in, out, kr->keys, kr->values, &count,
					   NULL);
		err = err < 0 ? -errno : 0;
		if (err == -ENOSPC && !count) {		/* a bucket holds more: again, larger */
			cap *= 2;
			continue;
		}
		if (first && batch_unsupported(err))
			return NO_BATCH;
		if (err && err != -ENOENT)
			return err;
		for (__u32 i = 0; i < count; i++) {
			const char *k = (const char *)kr->keys + (size_t)i * key_size;
			int e;

			if ((unsigned char)k[buf_off] != buf)
				continue;
			if ((e = keep_key(kr, k, key_size)) ||
			    (e = add(s, k, (const char *)kr->values + (size_t)i * vsz)))
				return e;
		}
		/* this batch's keys now, while the kernel's elements of them are in
		 * the cache (after the whole walk, deleting took a third of the
		 * loader's CPU at 13,000 keys): the walk goes on from a bucket index,
		 * which deleting in the buckets behind it does not move */
		if ((err2 = delete_kept(s, fd, key_size, true)))
			return err2;
		if (err == -ENOENT)		/* the end of the map */
			return 0;
		if (!count)			/* no progress: never seen, but no endless loop */
			return -EIO;
		memcpy(in, out, tok);
		first = false;
	}
}

/*
 * The same key by key, for kernels without batch operations: collect the
 * keys of half buf first (bpf_map_get_next_key), then look each up, add it
 * and keep it for deletion: deleting while walking can restart the walk.
 */
static int walk_keys(struct lh_session *s, int fd, size_t key_size, size_t buf_off, uint32_t buf,
		     int (*add)(struct lh_session *s, const void *key, const void *values))
{
	struct lh_keyed_read *kr = &s->keyed;
	char *prev = NULL, *next, *cur;
	size_t n = 0;
	int err = grow(&kr->keys, &kr->keys_bytes, 2 * key_size);

	if (err)
		return err;
	next = kr->keys;
	cur = next + key_size;
	while (!bpf_map_get_next_key(fd, prev, next)) {
		memcpy(cur, next, key_size);
		prev = cur;
		if ((unsigned char)next[buf_off] != buf)
			continue;
		if ((err = keep_key(kr, next, key_size))) {
			kr->ndel = 0;	/* none added: none to delete */
			return err;
		}
	}
	/* the keys to delete are those looked up: each moved down as it is */
	n = kr->ndel;
	kr->ndel = 0;
	for (size_t i = 0; i < n; i++) {
		char *k = (char *)kr->del + i * key_size;

		if (bpf_map_lookup_elem(fd, k, s->percpu_buf))
			continue;
		memmove((char *)kr->del + kr->ndel++ * key_size, k, key_size);
		if ((err = add(s, k, s->percpu_buf)))
			return err;
	}
	return 0;
}

/* -v: how the keyed maps are read, said at the first read. */
static void say_read_path(const struct lh_session *s, const char *how)
{
	if (s->c->verbose)
		fprintf(stderr, "lathist %s: keyed maps read %s\n", s->report.meta.tool, how);
}

int lh_read_keyed(struct lh_session *s, int fd, size_t key_size, size_t value_size,
		  size_t buf_off, uint32_t buf,
		  int (*add)(struct lh_session *s, const void *key, const void *values))
{
	struct lh_keyed_read *kr = &s->keyed;
	int err = NO_BATCH, derr;

	kr->ndel = 0;
	kr->copies = map_copies(s, fd);
	if (!kr->batch && s->c->test_no_batch) {
		kr->batch = -1;
		say_read_path(s, "key by key (LATHIST_TEST=no-batch)");
	}
	if (kr->batch >= 0)
		err = walk_batch(s, fd, key_size, value_size, buf_off, buf, add);
	if (err == NO_BATCH) {		/* nothing was added: this map key by key */
		if (!kr->batch) {
			kr->batch = -1;
			say_read_path(s, "key by key (this kernel has no batch map operations)");
		}
		err = walk_keys(s, fd, key_size, buf_off, buf, add);
	} else if (!kr->batch) {
		kr->batch = 1;
		say_read_path(s, "in batches (bpf_map_lookup_batch, bpf_map_delete_batch)");
	}
	/* what was added is deleted, also after a failed add: never counted twice */
	derr = delete_kept(s, fd, key_size, kr->batch > 0);
	return err ? err : derr;
}
