// SPDX-License-Identifier: MIT
/*
 * lathist runq: runqueue latency (wakeup latency and preemption wait)
 * histograms aggregated in the kernel. Loader: options -> open skeleton ->
 * read-only options -> choose variant and size maps -> load -> attach ->
 * loop (flip buffer, read, render) -> cleanup.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/utsname.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "bpfcommon.h"
#include "cli.h"
#include "report.h"
#include "runq.h"
#include "runq_cli.h"
#include "runq.skel.h"
#include "tool.h"
#include "util.h"

#define TOOL "runq"

static const struct lh_hist_kind runq_kinds[] = {
	{ "wakeup", "wakeup latency (sched_wakeup to switch-in)" },
	{ "preempt", "preemption wait (switched out while runnable to switch-in)" },
};

enum {
	OPT_PER_PROCESS = LH_OPT_TOOL_BASE,
	OPT_PER_THREAD,
	OPT_PER_CPU,
	OPT_CPUS,
	OPT_MAX_TASKS,
};

static const char runq_help[] =
	"Usage: lathist runq [OPTIONS]\n"
	"Runqueue latency histograms, aggregated in the kernel: wakeup latency (wakeup to\n"
	"switch-in) and preemption wait (preempted while runnable to switch-in), apart.\n"
	"\n"
	"Grouping (default: all tasks together):\n"
	"      --per-process      one histogram pair per process (tgid)\n"
	"      --per-thread       one histogram pair per thread (tid)\n"
	"      --per-cpu          one histogram pair per CPU the task was switched in on\n"
	"Filters (applied in BPF):\n"
	"  -t, --tid TID          only thread TID\n"
	"      --cpus LIST        only switch-ins on these CPUs, e.g. 0-3,7\n"
	"      --max-tasks N      raw_tp only: entries of the pid-keyed start map (32768)\n"
	"Common options:\n";

static int parse_cpus(struct runq_opts *o, const char *arg)
{
	int ncpus = libbpf_num_possible_cpus();
	long bad = -1;
	int err;

	err = lh_parse_cpulist(arg, o->cpu_mask, RUNQ_MAX_CPUS / 64, ncpus, &bad);
	if (err == -ERANGE) {
		lh_usage_error(TOOL, "--cpus '%s': CPU %ld does not exist; this machine has CPUs 0-%d",
			       arg, bad, ncpus - 1);
		return -EINVAL;
	}
	if (err) {
		lh_usage_error(TOOL, "--cpus '%s': not a CPU list; give e.g. 0-3,7", arg);
		return -EINVAL;
	}
	o->cpus_set = true;
	snprintf(o->cpus, sizeof(o->cpus), "%s", arg);
	return 0;
}

static int parse_tid(struct runq_opts *o, const char *arg)
{
	char path[64];

	if (lh_parse_u32(arg, 1, 0x3fffffff, &o->tid)) {
		lh_usage_error(TOOL, "-t '%s': not a thread id; give a positive number", arg);
		return -EINVAL;
	}
	snprintf(path, sizeof(path), "/proc/%u", o->tid);
	if (access(path, F_OK)) {
		lh_usage_error(TOOL, "-t %u: no such thread; give the TID of a running thread",
			       o->tid);
		return -EINVAL;
	}
	return 0;
}

static int set_group(struct runq_opts *o, enum runq_group g, const char *name)
{
	if (o->group != RUNQ_GROUP_TOTAL && o->group != g) {
		lh_usage_error(TOOL, "%s: only one of --per-process, --per-thread, --per-cpu", name);
		return -EINVAL;
	}
	o->group = g;
	return 0;
}

int runq_parse_args(int argc, char **argv, struct runq_opts *o)
{
	static const struct option longopts[] = {
		LH_COMMON_LONGOPTS,
		{ "tid", required_argument, NULL, 't' },
		{ "per-process", no_argument, NULL, OPT_PER_PROCESS },
		{ "per-thread", no_argument, NULL, OPT_PER_THREAD },
		{ "per-cpu", no_argument, NULL, OPT_PER_CPU },
		{ "cpus", required_argument, NULL, OPT_CPUS },
		{ "max-tasks", required_argument, NULL, OPT_MAX_TASKS },
		{ NULL, 0, NULL, 0 },
	};
	int opt, err;

	memset(o, 0, sizeof(*o));
	lh_common_defaults(&o->c);
	o->max_tasks = 32768;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, LH_COMMON_SHORTOPTS "t:", longopts, NULL)) != -1) {
		err = lh_common_opt(&o->c, opt, optarg, TOOL);
		if (err < 0)
			return -EINVAL;
		if (err == 0)
			continue;
		switch (opt) {
		case 'h':
			printf("%s%s", runq_help, lh_common_help);
			return 1;
		case 't':
			err = parse_tid(o, optarg);
			break;
		case OPT_PER_PROCESS:
			err = set_group(o, RUNQ_GROUP_PROCESS, "--per-process");
			break;
		case OPT_PER_THREAD:
			err = set_group(o, RUNQ_GROUP_THREAD, "--per-thread");
			break;
		case OPT_PER_CPU:
			err = set_group(o, RUNQ_GROUP_CPU, "--per-cpu");
			break;
		case OPT_CPUS:
			err = parse_cpus(o, optarg);
			break;
		case OPT_MAX_TASKS:
			err = lh_parse_u32(optarg, 1, 1U << 24, &o->max_tasks);
			if (err)
				lh_usage_error(TOOL, "--max-tasks '%s': give a number from 1 to 16777216",
					       optarg);
			break;
		default:
			lh_bad_option(TOOL, opt, argv);
			return -EINVAL;
		}
		if (err)
			return -EINVAL;
	}
	if (optind < argc) {
		lh_usage_error(TOOL, "unexpected argument '%s'; see lathist runq -h", argv[optind]);
		return -EINVAL;
	}
	return lh_common_finish(&o->c, TOOL) ? -EINVAL : 0;
}

/* ---- loader ---- */

struct runq_ctx {
	struct runq_opts *o;
	struct runq_bpf *skel;
	struct lh_report report;
	int ncpus;
	size_t value_size;
	void *percpu_buf;		/* ncpus * stride */
	uint64_t prev_counters[LH_NR_COUNTERS];
};

static const char *group_name(enum runq_group g)
{
	switch (g) {
	case RUNQ_GROUP_PROCESS:
		return "process";
	case RUNQ_GROUP_THREAD:
		return "thread";
	case RUNQ_GROUP_CPU:
		return "cpu";
	default:
		return "total";
	}
}

static void add_filter(struct lh_meta *m, const char *name, bool numeric, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void add_filter(struct lh_meta *m, const char *name, bool numeric, const char *fmt, ...)
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

static void init_meta(struct runq_ctx *x, bool btf)
{
	struct lh_meta *m = &x->report.meta;
	struct runq_opts *o = x->o;
	const char *type = btf ? "tp_btf" : "raw_tp";
	struct utsname u;

	m->tool = TOOL;
	uname(&u);
	snprintf(m->kernel, sizeof(m->kernel), "%s", u.release);
	m->clock = "CLOCK_MONOTONIC (bpf_ktime_get_ns)";
	m->attach[m->nattach++] = (struct lh_attach){ "sched_wakeup", type };
	m->attach[m->nattach++] = (struct lh_attach){ "sched_wakeup_new", type };
	m->attach[m->nattach++] = (struct lh_attach){ "sched_switch", type };
	if (!btf)
		m->attach[m->nattach++] = (struct lh_attach){ "sched_process_exit", type };
	if (o->c.pid)
		add_filter(m, "pid", true, "%u", o->c.pid);
	if (o->tid)
		add_filter(m, "tid", true, "%u", o->tid);
	if (o->cpus_set)
		add_filter(m, "cpus", false, "%s", o->cpus);
	if (o->c.cgroup[0])
		add_filter(m, "cgroup", false, "%s", o->c.cgroup);
	m->kinds = runq_kinds;
	m->nkinds = 2;
	m->grouping = group_name(o->group);
	m->unit = o->c.unit;
	m->scheme.precision = o->c.precision;
	m->scheme.unit_ns = o->c.unit_ns;
	m->ncpus = x->ncpus;
	m->interval_ns = o->c.interval_ns;
}

static void record_maps(struct runq_ctx *x)
{
	struct lh_meta *m = &x->report.meta;
	struct bpf_map *map;
	uint64_t total = 0;

	bpf_object__for_each_map(map, x->skel->obj) {
		struct lh_map_size *s;

		if (bpf_map__fd(map) < 0 || m->nmaps >= LH_MAX_MAPS)
			continue;
		s = &m->maps[m->nmaps++];
		s->name = bpf_map__name(map);
		s->max_entries = bpf_map__max_entries(map);
		s->memlock_bytes = lh_map_memlock(bpf_map__fd(map));
		total += s->memlock_bytes;
		if (x->o->c.verbose)
			fprintf(stderr, "map %-20s max_entries %-8u memlock %llu bytes\n", s->name,
				s->max_entries, (unsigned long long)s->memlock_bytes);
	}
	if (x->o->c.verbose)
		fprintf(stderr, "maps: %.1f KiB kernel memory (task storage: %zu bytes per traced "
			"task more, allocated on demand)\n", (double)total / 1024,
			sizeof(struct runq_start));
}

static int configure(struct runq_ctx *x, bool btf)
{
	struct runq_opts *o = x->o;
	struct runq_bpf *s = x->skel;
	uint32_t nslots = LH_NSLOTS(o->c.precision);
	int nargs = lh_tp_nargs("sched_switch");
	bool keyed = o->group == RUNQ_GROUP_PROCESS || o->group == RUNQ_GROUP_THREAD;

	s->rodata->hist_precision = o->c.precision;
	s->rodata->hist_nslots = nslots;
	s->rodata->hist_unit_ns = o->c.unit_ns;
	s->rodata->group = o->group;
	s->rodata->filter_tgid = o->c.pid;
	s->rodata->filter_tid = o->tid;
	s->rodata->filter_cgroup_id = o->c.cgroup_id;
	s->rodata->filter_cpus = o->cpus_set;
	memcpy((void *)s->rodata->cpu_mask, o->cpu_mask, sizeof(o->cpu_mask));
	/* (bool preempt, prev, next, unsigned int prev_state) since 5.18 */
	s->rodata->switch_has_prev_state = nargs >= 4;

	x->value_size = sizeof(struct lh_hist_head) + 8 * nslots;
	bpf_map__set_value_size(s->maps.runq_hist, x->value_size);
	bpf_map__set_value_size(s->maps.runq_hist_keyed, x->value_size);
	bpf_map__set_value_size(s->maps.lathist_zero_hist, x->value_size);
	bpf_map__set_max_entries(s->maps.runq_hist_keyed, keyed ? o->c.max_keys : 1);
	bpf_map__set_max_entries(s->maps.runq_pid_start, btf ? 1 : o->max_tasks);
	if (!btf && !lh_probe_tp_btf_task_storage())
		bpf_map__set_autocreate(s->maps.runq_task_start, false);

	bpf_program__set_autoload(s->progs.runq_wakeup_btf, btf);
	bpf_program__set_autoload(s->progs.runq_wakeup_new_btf, btf);
	bpf_program__set_autoload(s->progs.runq_switch_btf, btf);
	bpf_program__set_autoload(s->progs.runq_wakeup_raw, !btf);
	bpf_program__set_autoload(s->progs.runq_wakeup_new_raw, !btf);
	bpf_program__set_autoload(s->progs.runq_switch_raw, !btf);
	bpf_program__set_autoload(s->progs.runq_exit_raw, !btf);
	return 0;
}

static int attach(struct runq_ctx *x, bool btf)
{
	struct runq_bpf *s = x->skel;
	/* switch first: a wakeup seen before the switch program would leave a start
	 * whose switch-in is missed */
	struct bpf_program *order[] = {
		btf ? s->progs.runq_switch_btf : s->progs.runq_switch_raw,
		btf ? s->progs.runq_wakeup_new_btf : s->progs.runq_wakeup_new_raw,
		btf ? s->progs.runq_wakeup_btf : s->progs.runq_wakeup_raw,
		btf ? NULL : s->progs.runq_exit_raw,
	};
	struct bpf_link **links[] = {
		btf ? &s->links.runq_switch_btf : &s->links.runq_switch_raw,
		btf ? &s->links.runq_wakeup_new_btf : &s->links.runq_wakeup_new_raw,
		btf ? &s->links.runq_wakeup_btf : &s->links.runq_wakeup_raw,
		&s->links.runq_exit_raw,
	};

	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		if (!order[i])
			continue;
		*links[i] = bpf_program__attach(order[i]);
		if (!*links[i]) {
			int err = -errno;

			fprintf(stderr, "lathist runq: cannot attach %s: %s%s\n",
				bpf_program__section_name(order[i]), strerror(-err),
				x->o->c.verbose ? "" : " (run with -v for details)");
			return err;
		}
	}
	return 0;
}

static struct lh_hist *hist_for(struct runq_ctx *x, uint32_t kind, const struct lh_key *key)
{
	const char *name = runq_kinds[kind - 1].name;
	struct lh_hist *h = lh_report_find(&x->report, name, key);

	return h ? h : lh_report_add_hist(&x->report, name, key);
}

static int read_array(struct runq_ctx *x, uint32_t buf)
{
	int fd = bpf_map__fd(x->skel->maps.runq_hist);
	size_t stride = lh_percpu_stride(x->value_size);

	for (uint32_t kind = RUNQ_WAKEUP; kind <= RUNQ_PREEMPT; kind++) {
		uint32_t idx = (kind - 1) + RUNQ_NR_HISTS * buf;

		if (bpf_map_lookup_elem(fd, &idx, x->percpu_buf))
			return -errno;
		for (int cpu = 0; cpu < x->ncpus; cpu++) {
			const char *raw = (const char *)x->percpu_buf + (size_t)cpu * stride;
			struct lh_key key = {};
			struct lh_hist *h;

			if (x->o->group == RUNQ_GROUP_CPU) {
				const uint64_t *slots = (const void *)(raw + sizeof(struct lh_hist_head));
				uint64_t any = 0;

				for (uint32_t i = 0; i < LH_NSLOTS(x->o->c.precision); i++)
					any |= slots[i];
				if (!any)
					continue;
				key.fields = LH_KEY_CPU;
				key.cpu = (uint32_t)cpu;
			}
			h = hist_for(x, kind, &key);
			if (!h)
				return -ENOMEM;
			lh_hist_add_raw(h, raw);
		}
		memset(x->percpu_buf, 0, stride * (size_t)x->ncpus);
		if (bpf_map_update_elem(fd, &idx, x->percpu_buf, BPF_ANY))
			return -errno;
	}
	return 0;
}

static int read_keyed(struct runq_ctx *x, uint32_t buf)
{
	int fd = bpf_map__fd(x->skel->maps.runq_hist_keyed);
	size_t stride = lh_percpu_stride(x->value_size);
	struct runq_hist_key k, next, *keys = NULL;
	size_t n = 0, cap = 0;
	void *prev = NULL;
	int err = 0;

	/* collect first, delete after: deleting while walking can restart the walk */
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		k = next;
		prev = &k;
		if (next.buf != buf)
			continue;
		if (n == cap) {
			struct runq_hist_key *nk;

			cap = cap ? 2 * cap : 256;
			nk = realloc(keys, cap * sizeof(*keys));
			if (!nk) {
				free(keys);
				return -ENOMEM;
			}
			keys = nk;
		}
		keys[n++] = next;
	}
	for (size_t i = 0; i < n && !err; i++) {
		struct lh_key key = {};
		struct lh_hist *h;

		if (bpf_map_lookup_elem(fd, &keys[i], x->percpu_buf))
			continue;
		key.fields = LH_KEY_PID | LH_KEY_COMM;
		key.pid = keys[i].tgid;
		key.birth_ns = keys[i].birth_ns;
		if (x->o->group == RUNQ_GROUP_THREAD) {
			key.fields |= LH_KEY_TID;
			key.tid = keys[i].tid;
		}
		h = hist_for(x, keys[i].kind, &key);
		if (!h) {
			err = -ENOMEM;
			break;
		}
		for (int cpu = 0; cpu < x->ncpus; cpu++)
			lh_hist_add_raw(h, (const char *)x->percpu_buf + (size_t)cpu * stride);
		bpf_map_delete_elem(fd, &keys[i]);
	}
	free(keys);
	return err;
}

static int read_counters(struct runq_ctx *x)
{
	int fd = bpf_map__fd(x->skel->maps.lathist_counters);
	struct lh_counters *pc = calloc((size_t)x->ncpus, sizeof(*pc));
	uint64_t now[LH_NR_COUNTERS];
	uint32_t zero = 0;

	if (!pc)
		return -ENOMEM;
	if (bpf_map_lookup_elem(fd, &zero, pc)) {
		free(pc);
		return -errno;
	}
	lh_counters_sum(now, pc, x->ncpus);
	free(pc);
	/* counters only grow: the interval's share is the difference */
	for (int i = 0; i < LH_NR_COUNTERS; i++) {
		x->report.counters[i] = now[i] - x->prev_counters[i];
		x->prev_counters[i] = now[i];
	}
	return 0;
}

/* Take the aggregate of the half BPF has been writing and leave it empty. */
static int collect(struct runq_ctx *x)
{
	uint32_t old = x->skel->bss->hist_buf & 1;
	int err;

	x->skel->bss->hist_buf = old ^ 1;
	lh_wait_for_bpf_readers();
	err = read_counters(x);
	if (!err)
		err = x->o->group == RUNQ_GROUP_PROCESS || x->o->group == RUNQ_GROUP_THREAD ?
			      read_keyed(x, old) : read_array(x, old);
	if (!err)
		lh_report_sort(&x->report);
	return err;
}

static volatile sig_atomic_t exiting;

static void on_signal(int sig)
{
	(void)sig;
	exiting = 1;
}

static void sleep_until(uint64_t deadline_ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(deadline_ns / 1000000000ULL),
		.tv_nsec = (long)(deadline_ns % 1000000000ULL),
	};

	while (!exiting && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static int run_loop(struct runq_ctx *x)
{
	struct lh_common_opts *c = &x->o->c;
	uint64_t start = lh_now_ns(), begin = start, end = c->duration_ns ? start + c->duration_ns : 0;
	uint64_t real = lh_realtime_ns();
	uint32_t index = 0;
	int err = 0;

	for (;;) {
		uint64_t now, next = UINT64_MAX;
		bool last;

		if (c->interval_ns)
			next = begin + c->interval_ns;
		if (end && end < next)
			next = end;
		if (next == UINT64_MAX)
			pause();
		else
			sleep_until(next);
		now = lh_now_ns();
		last = exiting || (end && now >= end);
		if (!last && c->interval_ns && now < begin + c->interval_ns)
			continue;
		lh_report_clear(&x->report);
		err = collect(x);
		if (err) {
			fprintf(stderr, "lathist runq: reading the histograms failed: %s\n",
				strerror(-err));
			return err;
		}
		x->report.meta.start_realtime_ns = real + (begin - start);
		x->report.meta.duration_ns = now - begin;
		x->report.meta.interval_index = c->interval_ns ? ++index : 0;
		lh_emit(&x->report, c);
		begin = now;
		if (last)
			return 0;
	}
}

int runq_main(int argc, char **argv)
{
	struct runq_opts o;
	struct runq_ctx x = { .o = &o };
	struct sigaction sa = { .sa_handler = on_signal };
	char msg[256];
	bool btf;
	int err;

	err = runq_parse_args(argc, argv, &o);
	if (err)
		return err > 0 ? LH_EXIT_OK : LH_EXIT_USAGE;
	if (lh_check_privileges(msg, sizeof(msg)) || lh_check_btf(msg, sizeof(msg))) {
		fprintf(stderr, "lathist runq: %s\n", msg);
		return LH_EXIT_RUNTIME;
	}
	lh_libbpf_setup(o.c.verbose);
	btf = lh_probe_tp_btf_task_storage();
	if (o.c.attach == LH_ATTACH_TP_BTF && !btf) {
		fprintf(stderr, "lathist runq: --attach tp_btf: this kernel lacks BPF task storage "
			"(5.11+); use --attach raw_tp\n");
		return LH_EXIT_RUNTIME;
	}
	if (o.c.attach == LH_ATTACH_RAW_TP)
		btf = false;
	x.ncpus = libbpf_num_possible_cpus();
	if (x.ncpus <= 0) {
		fprintf(stderr, "lathist runq: cannot count CPUs: %s\n", strerror(-x.ncpus));
		return LH_EXIT_RUNTIME;
	}
	x.skel = runq_bpf__open();
	if (!x.skel) {
		fprintf(stderr, "lathist runq: cannot open the BPF object: %s\n", strerror(errno));
		return LH_EXIT_RUNTIME;
	}
	init_meta(&x, btf);
	configure(&x, btf);
	err = runq_bpf__load(x.skel);
	if (err) {
		lh_load_error(TOOL, err, o.c.verbose);
		err = LH_EXIT_RUNTIME;
		goto cleanup;
	}
	x.percpu_buf = calloc((size_t)x.ncpus, lh_percpu_stride(x.value_size));
	if (!x.percpu_buf) {
		err = LH_EXIT_RUNTIME;
		goto cleanup;
	}
	record_maps(&x);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (attach(&x, btf)) {
		err = LH_EXIT_RUNTIME;
		goto cleanup;
	}
	x.skel->bss->lh_enabled = true;
	fprintf(stderr, "Tracing runqueue latency (%s)... Hit Ctrl-C to end.\n",
		btf ? "tp_btf" : "raw_tp");
	err = run_loop(&x) ? LH_EXIT_RUNTIME : LH_EXIT_OK;
cleanup:
	lh_report_clear(&x.report);
	free(x.percpu_buf);
	runq_bpf__destroy(x.skel);
	return err;
}
