// SPDX-License-Identifier: MIT
/*
 * lathist runq: runqueue latency (wakeup latency and preemption wait)
 * histograms aggregated in the kernel. Loader: options -> open skeleton ->
 * read-only options -> choose variant and size maps -> load -> attach ->
 * loop (flip buffer, read, render) -> cleanup.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stddef.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "records.h"
#include "recline.h"
#include "bpfcommon.h"
#include "cli.h"
#include "report.h"
#include "runq.h"
#include "runq_cli.h"
#include "runq.skel.h"
#include "session.h"
#include "tool.h"
#include "registry.h"
#include "util.h"
#include "cgroup.h"
#include "target.h"
#include "doctor.h"

#define TOOL "runq"

const struct lh_hist_kind runq_kinds[RUNQ_NR_HISTS] = {
	{ "wakeup", "wakeup latency (sched_wakeup to switch-in)", LH_SCOPE_EVENTS },
	{ "preempt", "preemption wait (switched out while runnable to switch-in)", LH_SCOPE_EVENTS },
	{ "oncpu", "on-CPU time (switch-in to switch-out), not a wait", LH_SCOPE_SLICES },
};

enum {
	OPT_PER_PROCESS = LH_OPT_TOOL_BASE,
	OPT_PER_THREAD,
	OPT_PER_CPU,
	OPT_PER_CGROUP,
	OPT_CPUS,
	OPT_MAX_TASKS,
	OPT_ONCPU,
	OPT_COUNTERS,
	OPT_COUNTERS_OPTIONAL,
};

static const char runq_help[] =
	"Usage: lathist runq [OPTIONS]\n"
	"Runqueue latency, aggregated in the kernel: wakeup latency (wakeup to switch-in)\n"
	"and preemption wait (preempted while runnable to switch-in), apart.\n"
	"\n"
	"Grouping (default: all tasks together; grouped text opens with a ranked table):\n"
	"      --per-process      by process (tgid)\n"
	"      --per-thread       by thread (tid)\n"
	"      --per-cpu          by the CPU the task was switched in on\n"
	"      --per-cgroup       by the cgroup v2 of the woken task\n"
	"runq filters:\n"
	"  -t, --tid TID          only thread TID\n"
	"      --cpus LIST        only switch-ins on these CPUs, e.g. 0-3,7\n"
	"On-CPU time and counters:\n"
	"      --oncpu            also an oncpu histogram: on-CPU slices\n"
	"      --counters LIST    perf counters per slice (implies --oncpu; at most 8),\n"
	"                         e.g. cycles,instructions,cache-misses,cpu-clock,rNNNN\n"
	"      --counters-optional\n"
	"                         go on without counters this machine cannot count\n"
	"runq maps:\n"
	"      --max-tasks N      raw_tp: entries of the pid-keyed start map\n"
	"\n";

static int parse_cpus(struct runq_opts *o, const char *arg)
{
	int ncpus = libbpf_num_possible_cpus();
	uint64_t online[RUNQ_MAX_CPUS / 64];
	long bad = -1;
	int err;

	if (o->cpus_set) {
		lh_usage_error(TOOL, "--cpus given twice; give one list, e.g. 0-3,7");
		return -EINVAL;
	}
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
	if (!lh_online_cpus(online, RUNQ_MAX_CPUS / 64, ncpus)) {
		/* an offline CPU switches nothing in: its histograms would be empty, exit 0 */
		for (int w = 0; w < RUNQ_MAX_CPUS / 64; w++) {
			uint64_t off = o->cpu_mask[w] & ~online[w];

			if (!off)
				continue;
			lh_usage_error(TOOL, "--cpus '%s': CPU %d is offline; bring it online "
				       "(/sys/devices/system/cpu/cpu%d/online) or leave it out",
				       arg, w * 64 + __builtin_ctzll(off), w * 64 + __builtin_ctzll(off));
			return -EINVAL;
		}
	}
	o->cpus_set = true;
	/* said as the CPUs it means: "0,0" and "1,0-1" are "0" and "0-1" */
	lh_format_cpulist(o->cpu_mask, RUNQ_MAX_CPUS / 64, o->cpus, sizeof(o->cpus));
	return 0;
}

static int parse_tid(struct runq_opts *o, const char *arg)
{
	int err;

	if (o->tid) {
		lh_usage_error(TOOL, "-t given twice; give one thread (or trace all of them)");
		return -EINVAL;
	}
	if (lh_parse_u32(arg, 1, 0x3fffffff, &o->tid)) {
		lh_usage_error(TOOL, "-t '%s': not a thread id; give a positive number", arg);
		return -EINVAL;
	}
	err = lh_task_start_ticks(o->tid, &o->tid_ticks);	/* /proc/TID/stat: threads too */
	if (err == -ESRCH) {
		lh_usage_error(TOOL, "-t %u: has exited (a zombie, not reaped yet): nothing of it "
			       "can run; give the TID of a running thread", o->tid);
		return -EINVAL;
	}
	if (err) {
		lh_usage_error(TOOL, "-t %u: no such thread; give the TID of a running thread",
			       o->tid);
		return -EINVAL;
	}
	/* the thread, more precise than -p, is the task whose exit is noted */
	o->c.watch_tid = o->tid;
	o->c.watch_ticks = o->tid_ticks;
	o->c.watch_thread = true;
	return 0;
}

static int parse_counters(struct runq_opts *o, const char *arg)
{
	char bad[64];
	const char *why = "";
	int n;

	if (o->npmu) {
		lh_usage_error(TOOL, "--counters given twice; give one list, e.g. "
			       "cycles,instructions");
		return -EINVAL;
	}
	n = lh_pmu_parse(arg, o->pmu, bad, sizeof(bad), &why);
	if (n < 0) {
		lh_usage_error(TOOL, "--counters: '%s': %s", bad, why);
		return -EINVAL;
	}
	o->npmu = n;
	o->oncpu = true;
	return 0;
}

static int set_group(struct runq_opts *o, enum runq_group g, const char *name)
{
	if (o->group != RUNQ_GROUP_TOTAL && o->group != g) {
		lh_usage_error(TOOL, "%s: only one of --per-process, --per-thread, --per-cpu, "
			       "--per-cgroup", name);
		return -EINVAL;
	}
	o->group = g;
	return 0;
}

extern const struct lh_tool_desc runq_tool;

/* Groupings whose keys are a BPF hash's (the others: an array per kind, per CPU);
 * runq_tool.max_keys_with names their options. */
static bool keyed_group(enum runq_group g)
{
	return g == RUNQ_GROUP_PROCESS || g == RUNQ_GROUP_THREAD || g == RUNQ_GROUP_CGROUP;
}

int runq_parse_args(int argc, char **argv, struct runq_opts *o)
{
	static const struct option longopts[] = {
		LH_COMMON_LONGOPTS,
		{ "tid", required_argument, NULL, 't' },
		{ "per-process", no_argument, NULL, OPT_PER_PROCESS },
		{ "per-thread", no_argument, NULL, OPT_PER_THREAD },
		{ "per-cpu", no_argument, NULL, OPT_PER_CPU },
		{ "per-cgroup", no_argument, NULL, OPT_PER_CGROUP },
		{ "cpus", required_argument, NULL, OPT_CPUS },
		{ "max-tasks", required_argument, NULL, OPT_MAX_TASKS },
		{ "oncpu", no_argument, NULL, OPT_ONCPU },
		{ "counters", required_argument, NULL, OPT_COUNTERS },
		{ "counters-optional", no_argument, NULL, OPT_COUNTERS_OPTIONAL },
		{ NULL, 0, NULL, 0 },
	};
	char ids[40];
	int opt, err;

	memset(o, 0, sizeof(*o));
	lh_common_defaults(&o->c);
	o->c.has_tid_option = true;
	o->max_tasks = 0;	/* sized from the threads (lh_auto_max_keys) */
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, LH_COMMON_SHORTOPTS "t:", longopts, NULL)) != -1) {
		err = lh_common_opt(&o->c, opt, optarg, TOOL);
		if (err < 0)
			return -EINVAL;
		if (o->c.help)
			break;	/* -h wins over what follows it */
		if (err == 0)
			continue;
		switch (opt) {
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
		case OPT_PER_CGROUP:
			err = lh_check_per_cgroup(TOOL);
			if (!err)
				err = set_group(o, RUNQ_GROUP_CGROUP, "--per-cgroup");
			break;
		case OPT_CPUS:
			err = parse_cpus(o, optarg);
			break;
		case OPT_ONCPU:
			o->oncpu = true;
			err = 0;
			break;
		case OPT_COUNTERS:
			err = parse_counters(o, optarg);
			break;
		case OPT_COUNTERS_OPTIONAL:
			o->pmu_optional = true;
			err = 0;
			break;
		case OPT_MAX_TASKS:
			if (o->max_tasks) {
				lh_usage_error(TOOL, "--max-tasks given twice; give one size");
				return -EINVAL;
			}
			err = lh_parse_u32(optarg, 1, 1U << 24, &o->max_tasks);
			if (err)
				lh_usage_error(TOOL, "--max-tasks '%s': give a number from 1 to 16777216",
					       optarg);
			break;
		default:
			lh_bad_option(TOOL, opt, argv, longopts);
			return -EINVAL;
		}
		if (err)
			return -EINVAL;
	}
	if (o->c.help) {
		lh_print_help(runq_help, TOOL, lh_help_verbose(&o->c, argc, argv));
		return 1;
	}
	if (optind < argc) {
		lh_usage_error(TOOL, "unexpected argument '%s'; see lathist runq -h", argv[optind]);
		return -EINVAL;
	}
	if (lh_text_grouped(o->c.text_given, o->group != RUNQ_GROUP_TOTAL,
			    "add a grouping (--per-...), or drop it", TOOL))
		return -EINVAL;
	if (o->c.pid && o->tid && lh_tgid_of(o->tid) != (long)o->c.pid) {
		lh_usage_error(TOOL, "-t %u is not a thread of process %u (-p); drop one of them",
			       o->tid, o->c.pid);
		return -EINVAL;
	}
	if (o->pmu_optional && !o->npmu) {
		lh_usage_error(TOOL, "--counters-optional needs --counters LIST");
		return -EINVAL;
	}
	/* refused alone, as other options that would do nothing are; serve gives it
	 * to every tool, for those that have keyed maps */
	if (o->c.max_keys && !keyed_group(o->group) && !lh_session_sink) {
		char with[160];

		lh_usage_error(TOOL, "--max-keys %u sizes the %s maps; add one of them, or drop "
			       "--max-keys", o->c.max_keys,
			       lh_tool_max_keys_with(&runq_tool, with, sizeof(with)));
		return -EINVAL;
	}
	/* outside the host's PID namespace, what takes or shows pids is refused */
	if (o->c.pid)
		snprintf(ids, sizeof(ids), "-p %u", o->c.pid);
	else if (o->tid)
		snprintf(ids, sizeof(ids), "-t %u", o->tid);
	else
		snprintf(ids, sizeof(ids), "%s", o->group == RUNQ_GROUP_PROCESS ? "--per-process" :
			 o->group == RUNQ_GROUP_THREAD ? "--per-thread" :
			 o->c.slower_than_ns != UINT64_MAX ? "--slower-than (records show pids)" : "");
	if (lh_check_pidns(TOOL, ids[0] ? ids : NULL))
		return -EINVAL;
	return lh_common_finish(&o->c, TOOL) ? -EINVAL : 0;
}

/* ---- loader ---- */

struct runq_ctx {
	struct runq_opts *o;
	struct runq_bpf *skel;
	int *pmu_fds;		/* npmu x ncpus perf event fds (--counters) */
	int ncpus;
	bool has_storage;	/* BPF task storage: tp_btf can run */
	int iter_err;		/* task iterators (the sweeps) cannot load: why (-errno) */
	uint64_t hidden;	/* traced tasks the end sweep did not see (hidden_tasks) */
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
	case RUNQ_GROUP_CGROUP:
		return "cgroup";
	default:
		return "total";
	}
}

static void init_meta(struct lh_session *s, struct runq_opts *o)
{
	struct lh_meta *m = &s->report.meta;

	lh_session_init(s, &o->c, TOOL, runq_kinds, o->oncpu ? 3 : 2, group_name(o->group));
	m->desc = &runq_tool;
	if (o->oncpu)
		m->features |= LH_FEAT_ONCPU;
	if (o->npmu)
		m->features |= LH_FEAT_COUNTERS;
	if (o->tid)
		lh_meta_add_filter(m, "tid", true, "%u", o->tid);
	if (o->cpus_set)
		lh_meta_add_filter(m, "cpus", false, "%s", o->cpus);
}

/* The tracepoints runq attaches, all of one type. */
static void meta_attach(struct lh_meta *m, enum lh_attach_mode type)
{
	static const char *const tps[] = { "sched_wakeup", "sched_wakeup_new", "sched_switch",
					   "sched_process_exit" };

	for (size_t i = 0; i < sizeof(tps) / sizeof(tps[0]); i++)
		m->attach[m->nattach++] = (struct lh_attach){ tps[i], lh_attach_name(type) };
}

/* The keyed maps' least default size: threads born after the start (a thread
 * pool, a build) that all wake between two early reads (session.c drain_due)
 * need room in one half; early reads take care of churn, not of that. */
#define RUNQ_MIN_KEYS 4096
/* raw_tp's pid map: the fixed size it had (a task's entry lives until its exit
 * is seen, and an exit the kernel hid leaves it) */
#define RUNQ_MIN_TASKS 32768

static size_t configure(struct runq_bpf *s, struct runq_opts *o, enum lh_attach_mode type,
			bool has_storage, bool sweeps)
{
	bool btf = type == LH_ATTACH_TP_BTF, raw = type == LH_ATTACH_RAW_TP;
	uint32_t nslots = LH_NSLOTS(o->c.precision);
	size_t value_size = sizeof(struct lh_hist_head) + 8 * nslots;
	int nargs = lh_tp_nargs("sched_switch");
	bool keyed = keyed_group(o->group);
	uint32_t max_keys = o->c.max_keys, max_tasks = o->max_tasks, keys = 0;

	if (keyed && !max_keys) {
		/* a thread's or process's wakeup and preempt (and oncpu) histograms;
		 * a cgroup's keys are no more than the processes in it */
		max_keys = lh_auto_max_keys(o->group == RUNQ_GROUP_THREAD ? LH_KEYS_THREADS :
					    LH_KEYS_PROCESSES, o->oncpu ? 3 : 2, 1, true, 10240,
					    RUNQ_MIN_KEYS, &keys);
		if (o->c.verbose)
			fprintf(stderr, keys ? "--max-keys: %u entries, for %u keys now (threads "
				"or processes), %u histograms each, x 2 + 1024, at least %u\n" :
				"--max-keys: %u entries (the keys could not be counted)\n",
				max_keys, keys, o->oncpu ? 3 : 2, RUNQ_MIN_KEYS);
	}

	s->rodata->hist_precision = o->c.precision;
	s->rodata->hist_nslots = nslots;
	s->rodata->hist_unit_ns = o->c.unit_ns;
	s->rodata->group = o->group;
	s->rodata->filter_tgid = o->c.pid;
	s->rodata->filter_tid = o->tid;
	s->rodata->filter_tid_ticks = o->tid_ticks;
	LH_SET_BIRTH_FILTER(s->rodata, &o->c);
	s->rodata->filter_cgroup_id = o->c.cgroup_id;
	s->rodata->filter_cpus = o->cpus_set;
	memcpy((void *)s->rodata->cpu_mask, o->cpu_mask, sizeof(o->cpu_mask));
	/* (bool preempt, prev, next, unsigned int prev_state) since 5.18 */
	s->rodata->switch_has_prev_state = nargs >= 4;

	lh_session_configure_records(&o->c, s->maps.lathist_events, &s->rodata->slower_than_ns,
				     &s->rodata->rb_wakeup_bytes);
	bpf_map__set_value_size(s->maps.runq_hist, value_size);
	bpf_map__set_value_size(s->maps.runq_hist_keyed, value_size);
	bpf_map__set_value_size(s->maps.lathist_zero_hist, value_size);
	bpf_map__set_max_entries(s->maps.runq_hist_keyed, keyed ? max_keys : 1);
	bpf_map__set_max_entries(s->maps.runq_lost_keyed, keyed ? max_keys : 1);
	if (!btf && !max_tasks) {
		max_tasks = lh_auto_max_keys(LH_KEYS_THREADS, 1, 1, false, RUNQ_MIN_TASKS, RUNQ_MIN_TASKS,
					     &keys);
		if (o->c.verbose)
			fprintf(stderr, keys ? "--max-tasks: %u entries, for the %u threads now, x "
				"1.5 + 1024, at least %u\n" : "--max-tasks: %u entries (the threads could not "
				"be counted)\n", max_tasks, keys, RUNQ_MIN_TASKS);
	}
	bpf_map__set_max_entries(s->maps.runq_pid_start, btf ? 1 : max_tasks);
	s->rodata->use_task_storage = btf;
	/* the sweeps: task iterators (5.8+), loaded where task storage (5.11+)
	 * says the kernel is new enough */
	bpf_program__set_autoload(s->progs.runq_sweep_start, sweeps);
	bpf_program__set_autoload(s->progs.runq_sweep_end, sweeps);
	lh_session_configure_cgroups(s->maps.lathist_cgroup_paths, s->progs.lathist_cgroup_mkdir,
				     o->group == RUNQ_GROUP_CGROUP);
	s->rodata->oncpu_on = o->oncpu;
	s->rodata->pmu_n = (uint32_t)o->npmu;
	s->rodata->pmu_ncpus = (uint32_t)libbpf_num_possible_cpus();
	bpf_map__set_max_entries(s->maps.runq_pmu_events,
				 o->npmu ? (uint32_t)o->npmu * s->rodata->pmu_ncpus : 1);
	bpf_map__set_max_entries(s->maps.runq_pmu_keyed, keyed && o->npmu ? max_keys : 1);
	if (keyed) {
		lh_prealloc_if_small(s->maps.runq_hist_keyed, max_keys, value_size);
		lh_prealloc_if_small(s->maps.runq_lost_keyed, max_keys, sizeof(uint64_t));
		if (o->npmu)
			lh_prealloc_if_small(s->maps.runq_pmu_keyed, max_keys,
					     sizeof(struct lh_pmu_val));
	}
	if (!has_storage)	/* the map would fail to create; the raw_tp programs do not use it */
		bpf_map__set_autocreate(s->maps.runq_task_start, false);

	bpf_program__set_autoload(s->progs.runq_wakeup_btf, btf);
	bpf_program__set_autoload(s->progs.runq_wakeup_new_btf, btf);
	bpf_program__set_autoload(s->progs.runq_switch_btf, btf);
	bpf_program__set_autoload(s->progs.runq_exit_btf, btf);
	bpf_program__set_autoload(s->progs.runq_wakeup_raw, raw);
	bpf_program__set_autoload(s->progs.runq_wakeup_new_raw, raw);
	bpf_program__set_autoload(s->progs.runq_switch_raw, raw);
	bpf_program__set_autoload(s->progs.runq_exit_raw, raw);
	return value_size;
}

static int attach(void *skel, bool verbose)
{
	struct runq_bpf *s = skel;

	/* switch first: a wakeup seen before the switch program would leave a start
	 * whose switch-in is missed (and nothing records before lh_enabled anyway) */
	struct lh_prog_link order[] = {
		{ s->progs.lathist_cgroup_mkdir, &s->links.lathist_cgroup_mkdir },
		{ s->progs.runq_switch_btf, &s->links.runq_switch_btf },
		{ s->progs.runq_switch_raw, &s->links.runq_switch_raw },
		{ s->progs.runq_wakeup_new_btf, &s->links.runq_wakeup_new_btf },
		{ s->progs.runq_wakeup_new_raw, &s->links.runq_wakeup_new_raw },
		{ s->progs.runq_wakeup_btf, &s->links.runq_wakeup_btf },
		{ s->progs.runq_wakeup_raw, &s->links.runq_wakeup_raw },
		{ s->progs.runq_exit_btf, &s->links.runq_exit_btf },
		{ s->progs.runq_exit_raw, &s->links.runq_exit_raw },
	};
	int err = lh_attach_in_order(TOOL, order, sizeof(order) / sizeof(order[0]), verbose);

	if (!err)
		lh_session_cgroups_attached(s->progs.lathist_cgroup_mkdir);
	return err;
}

/* total and per-CPU: a per-CPU array indexed by kind and buffer */
static int read_array(struct lh_session *s, uint32_t buf)
{
	struct runq_ctx *x = s->tool;
	int fd = bpf_map__fd(x->skel->maps.runq_hist);
	size_t stride = lh_percpu_stride(s->value_size);
	uint32_t nslots = LH_NSLOTS(x->o->c.precision);

	for (uint32_t kind = RUNQ_WAKEUP; kind <= (x->o->oncpu ? RUNQ_ONCPU : RUNQ_PREEMPT); kind++) {
		const char *name = runq_kinds[kind - 1].name;
		uint32_t idx = (kind - 1) + RUNQ_NR_HISTS * buf;
		struct lh_key key = {};
		struct lh_hist *h;

		if (bpf_map_lookup_elem(fd, &idx, s->percpu_buf))
			return -errno;
		if (x->o->group != RUNQ_GROUP_CPU) {
			if (lh_session_add_percpu(s, name, &key, s->percpu_buf, 0))
				return -ENOMEM;
		}
		for (int cpu = 0; x->o->group == RUNQ_GROUP_CPU && cpu < s->ncpus; cpu++) {
			const char *raw = (const char *)s->percpu_buf + (size_t)cpu * stride;

			if (lh_hist_raw_empty(raw, nslots))
				continue;
			key.fields = LH_KEY_CPU;
			key.cpu = (uint32_t)cpu;
			h = lh_report_add_hist(&s->report, name, &key);
			if (!h)
				return -ENOMEM;
			lh_hist_add_raw(h, raw);
		}
		memset(s->percpu_buf, 0, stride * (size_t)s->ncpus);
		if (bpf_map_update_elem(fd, &idx, s->percpu_buf, BPF_ANY))
			return -errno;
	}
	return 0;
}

/* The report key of a per-process, per-thread or per-cgroup BPF key. */
static struct lh_key report_key(const struct lh_session *s, const struct runq_hist_key *rk)
{
	const struct runq_ctx *x = s->tool;
	struct lh_key key = { .fields = LH_KEY_PID | LH_KEY_COMM, .pid = rk->tgid,
			      .birth_ns = rk->birth_ns };

	if (x->o->group == RUNQ_GROUP_CGROUP) {
		struct lh_key c = { .fields = LH_KEY_CGROUP, .cgroup_id = rk->cgroup_id,
				    .cgroup = lh_cgroup_name(rk->cgroup_id,
					bpf_map__fd(x->skel->maps.lathist_cgroup_paths)) };

		return c;
	}
	if (x->o->group == RUNQ_GROUP_THREAD) {
		key.fields |= LH_KEY_TID;
		key.tid = rk->tid;
	}
	return key;
}

static int by_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* One key's lost waits (runq_lost_keyed, per-CPU u64), charged to its key. */
static int add_lost(struct lh_session *s, const void *k, const void *values)
{
	struct lh_key key = report_key(s, k);
	struct lh_key_charge c = { .pid = key.pid, .tid = key.tid, .birth_ns = key.birth_ns };

	for (int cpu = 0; cpu < s->keyed.copies; cpu++)
		c.lost = lh_add_sat(c.lost, ((const uint64_t *)values)[cpu]);
	return c.lost ? lh_report_charge(&s->report, &c) : 0;
}

static int add_keyed(struct lh_session *s, const void *k, const void *values)
{
	const struct runq_hist_key *rk = k;
	struct lh_key key = report_key(s, rk);

	if (rk->kind < RUNQ_WAKEUP || rk->kind > RUNQ_ONCPU)
		return 0;
	return lh_session_add_copies(s, runq_kinds[rk->kind - 1].name, &key, values, 0,
				     s->keyed.copies);
}

/* One key's counter sums (ncpus per-CPU copies of struct lh_pmu_val) as rows. */
static int add_pmu(struct lh_session *s, const struct lh_key *key, const void *values,
		   int ncpus)
{
	const struct runq_opts *o = ((struct runq_ctx *)s->tool)->o;
	size_t stride = lh_percpu_stride(sizeof(struct lh_pmu_val));
	struct lh_pmu_val sum = {};
	struct lh_key k = *key;

	for (int cpu = 0; cpu < ncpus; cpu++) {
		const struct lh_pmu_val *v = (const void *)((const char *)values + (size_t)cpu * stride);

		sum.slices += v->slices;
		sum.oncpu_ns += v->oncpu_ns;
		sum.read_failed += v->read_failed;
		if (!sum.comm[0] && v->comm[0])
			memcpy(sum.comm, v->comm, sizeof(sum.comm));
		for (int i = 0; i < o->npmu; i++) {
			sum.c[i].raw += v->c[i].raw;
			sum.c[i].enabled += v->c[i].enabled;
			sum.c[i].running += v->c[i].running;
			sum.c[i].multiplexed += v->c[i].multiplexed;
		}
	}
	if (!sum.slices)
		return 0;
	if (k.fields & LH_KEY_COMM)
		memcpy(k.comm, sum.comm, sizeof(k.comm));
	for (int i = 0; i < o->npmu; i++) {
		struct lh_pmu_row *r = lh_report_add_pmu(&s->report, &k, i);

		if (!r)
			return -ENOMEM;
		r->raw = sum.c[i].raw;
		r->enabled_ns = sum.c[i].enabled;
		r->running_ns = sum.c[i].running;
		r->multiplexed = sum.c[i].multiplexed;
		r->slices = sum.slices;
		r->oncpu_ns = sum.oncpu_ns;
		r->read_failed = sum.read_failed;
	}
	return 0;
}

static int add_pmu_keyed(struct lh_session *s, const void *k, const void *values)
{
	struct lh_key key = report_key(s, k);

	return add_pmu(s, &key, values, s->ncpus);
}

/* Counter sums (--counters) of half buf into report rows, then empty that half. */
static int read_pmu(struct lh_session *s, uint32_t buf)
{
	struct runq_ctx *x = s->tool;
	size_t stride = lh_percpu_stride(sizeof(struct lh_pmu_val));
	int fd = bpf_map__fd(x->skel->maps.runq_pmu), err = 0;

	if (keyed_group(x->o->group))
		return lh_read_keyed(s, bpf_map__fd(x->skel->maps.runq_pmu_keyed),
				     sizeof(struct runq_hist_key), sizeof(struct lh_pmu_val),
				     offsetof(struct runq_hist_key, buf), buf, add_pmu_keyed);
	if (bpf_map_lookup_elem(fd, &buf, s->percpu_buf))
		return -errno;
	if (x->o->group != RUNQ_GROUP_CPU) {
		struct lh_key key = {};

		err = add_pmu(s, &key, s->percpu_buf, s->ncpus);
	}
	for (int cpu = 0; !err && x->o->group == RUNQ_GROUP_CPU && cpu < s->ncpus; cpu++) {
		struct lh_key key = { .fields = LH_KEY_CPU, .cpu = (uint32_t)cpu };

		err = add_pmu(s, &key, (const char *)s->percpu_buf + (size_t)cpu * stride, 1);
	}
	memset(s->percpu_buf, 0, stride * (size_t)s->ncpus);
	if (!err && bpf_map_update_elem(fd, &buf, s->percpu_buf, BPF_ANY))
		return -errno;
	return err;
}

static int read_hists(struct lh_session *s, uint32_t buf)
{
	struct runq_ctx *x = s->tool;
	int err;

	if (keyed_group(x->o->group)) {
		err = lh_read_keyed(s, bpf_map__fd(x->skel->maps.runq_hist_keyed),
				    sizeof(struct runq_hist_key), s->value_size,
				    offsetof(struct runq_hist_key, buf), buf, add_keyed);
		if (!err)
			err = lh_read_keyed(s, bpf_map__fd(x->skel->maps.runq_lost_keyed),
					    sizeof(struct runq_hist_key), sizeof(uint64_t),
					    offsetof(struct runq_hist_key, buf), buf, add_lost);
	} else {
		err = read_array(s, buf);
	}
	if (!err && x->o->npmu)
		err = read_pmu(s, buf);
	/* the end sweep's finding, with the last read */
	s->report.counters[LH_GAP_HIDDEN_TASKS] = x->hidden;
	x->hidden = 0;
	return err;
}

/*
 * Open the counting events before load (--counters). An event this machine
 * cannot count is named with the reason; without --counters-optional that
 * ends the run (exit 1), with it the run goes on without it. Returns 0 or -1.
 */
static int open_counters(struct runq_ctx *x, struct lh_meta *m)
{
	struct runq_opts *o = x->o;
	int n = o->npmu, kept = 0, failed = 0;
	bool fatal = false;

	x->ncpus = libbpf_num_possible_cpus();
	x->pmu_fds = malloc((size_t)n * (size_t)x->ncpus * sizeof(int));
	if (!x->pmu_fds) {
		fprintf(stderr, "lathist runq: out of memory\n");
		return -1;
	}
	lh_pmu_open(o->pmu, n, x->ncpus, x->pmu_fds);
	for (int i = 0; i < n; i++) {
		if (!o->pmu[i].err) {
			/* keep it: move it (and its fds) down over the failed ones */
			if (kept != i) {
				o->pmu[kept] = o->pmu[i];
				memcpy(&x->pmu_fds[kept * x->ncpus], &x->pmu_fds[i * x->ncpus],
				       (size_t)x->ncpus * sizeof(int));
			}
			snprintf(m->pmu.names[kept], sizeof(m->pmu.names[kept]), "%s",
				 o->pmu[kept].name);
			kept++;
			continue;
		}
		failed++;
		/* only "this machine cannot count it" is optional; no permission or no
		 * file descriptors would fail the same way for every counter */
		if (!lh_pmu_unsupported(o->pmu[i].err))
			fatal = true;
		fprintf(stderr, "lathist runq: counter '%s': %s (perf_event_open: %s)%s\n",
			o->pmu[i].name, lh_pmu_why(o->pmu[i].err), strerror(o->pmu[i].err),
			!lh_pmu_unsupported(o->pmu[i].err) ? "" :
			o->pmu_optional ? "; going on without it" :
			"; leave it out, or add --counters-optional");
		snprintf(m->pmu.unsupported[m->pmu.nunsupported].name,
			 sizeof(m->pmu.unsupported[0].name), "%s", o->pmu[i].name);
		m->pmu.unsupported[m->pmu.nunsupported++].err = o->pmu[i].err;
	}
	o->npmu = kept;
	m->pmu.n = kept;
	if (failed && (!o->pmu_optional || fatal)) {
		lh_pmu_close(x->pmu_fds, kept, x->ncpus);
		return -1;
	}
	return 0;
}

/* Put the opened events in the BPF perf event array: index counter * ncpus + cpu. */
static int fill_counters(struct runq_ctx *x)
{
	int fd = bpf_map__fd(x->skel->maps.runq_pmu_events);

	for (int i = 0; i < x->o->npmu; i++)
		for (int cpu = 0; cpu < x->ncpus; cpu++) {
			uint32_t idx = (uint32_t)(i * x->ncpus + cpu);
			int efd = x->pmu_fds[i * x->ncpus + cpu];

			if (efd >= 0 && bpf_map_update_elem(fd, &idx, &efd, BPF_ANY)) {
				fprintf(stderr, "lathist runq: cannot add counter '%s' on CPU %d to "
					"the BPF map: %s\n", x->o->pmu[i].name, cpu,
					strerror(errno));
				return -errno;
			}
		}
	return 0;
}

/*
 * Traced tasks the end sweep did not see: in /proc before and after it (alive
 * all through: the same task, not one that took its tid since the scan before,
 * which began at tick `since`), not among the tids it wrote (seen, n of them).
 * Not checked under --cgroup (membership is not read from /proc here) nor
 * outside the initial PID namespace (/proc's tids are not the kernel's): 0.
 */
static uint64_t hidden_tasks(const struct runq_opts *o, const uint32_t *before, long nb,
			     uint64_t since, const uint32_t *seen, size_t n)
{
	uint32_t *after = NULL;
	uint64_t hidden = 0;
	long na;

	if (o->c.cgroup_id || nb < 0 || !since || !lh_in_init_pidns() ||
	    (na = lh_proc_tids(o->c.pid, o->tid, &after)) < 0)
		return 0;
	for (long i = 0; i < nb; i++)
		if (bsearch(&before[i], after, (size_t)na, sizeof(*after), by_u32) &&
		    !bsearch(&before[i], seen, n, sizeof(*seen), by_u32) &&
		    !lh_task_started_since(before[i], since))
			hidden++;
	free(after);
	return hidden;
}

/*
 * Before tracing is enabled: the start sweep makes every traced task's
 * storage (bpf/runq.bpf.c sweep_made), so that the programs do not allocate
 * it in a burst inside the scheduler. -v says how many; a task it could not
 * make storage for gets it at its first event, or counts storage_failed.
 */
static void prepare(struct lh_session *s)
{
	struct runq_ctx *x = s->tool;
	struct bpf_program *p = x->skel->progs.runq_sweep_start;
	int err;

	if (!bpf_program__autoload(p) || !x->skel->rodata->use_task_storage)
		return;
	err = lh_run_iter(p, -1, NULL, NULL);
	if (s->c->verbose)
		fprintf(stderr, "task storage made before tracing: %llu tasks, %llu failed%s%s\n",
			(unsigned long long)x->skel->bss->sweep_made,
			(unsigned long long)x->skel->bss->sweep_make_failed,
			err ? "; the sweep failed: " : "", err ? strerror(-err) : "");
}

/*
 * Run a sweep of every task's switch count (bpf/runq.bpf.c): at the start
 * its baseline, before the last read the waits no event showed, and the
 * traced tasks the kernel's task iterator hid from it. A failure is said (the
 * run goes on as it would without it).
 */
static void sweep(struct lh_session *s, bool last)
{
	struct runq_ctx *x = s->tool;
	struct bpf_program *p = last ? x->skel->progs.runq_sweep_end :
				       x->skel->progs.runq_sweep_start;
	uint32_t *before = NULL;
	char *seen = NULL;
	size_t len = 0;
	uint64_t since = 0;
	long nb = -1;
	int err;

	if (!bpf_program__autoload(p))
		return;
	if (last) {
		since = lh_uptime_ticks();
		nb = lh_proc_tids(x->o->c.pid, x->o->tid, &before);
	}
	/* no slot changes hands while the sweep may hold it (bpf/runq.bpf.c) */
	x->skel->bss->slot_sweeping = 1;
	err = lh_run_iter(p, -1, last ? &seen : NULL, &len);
	x->skel->bss->slot_sweeping = 0;
	/* the end sweep settled each task's count up to now: stop the programs
	 * before the second /proc scan, or the events in between would be
	 * measured against counts already settled (the session's last read
	 * disables them again) */
	if (last)
		*s->enabled = false;
	if (err)
		fprintf(stderr, "lathist runq: the %s sweep of switch counts failed (%s): %s\n",
			last ? "end-of-run" : "start", strerror(-err), last ?
			"waits no event showed since each task's last event are not counted" :
			"waits of a task before its first event seen are not counted");
	else if (last) {
		size_t n = len / sizeof(uint32_t);

		if (n)
			qsort(seen, n, sizeof(uint32_t), by_u32);
		x->hidden = hidden_tasks(x->o, before, nb, since, (uint32_t *)seen, n);
	}
	if (last && s->c->verbose && x->skel->rodata->use_task_storage) {
		const struct runq_start *slot = x->skel->bss->runq_slots;
		size_t n = sizeof(x->skel->bss->runq_slots) / sizeof(*slot), used = 0;

		for (size_t i = 0; i < n; i++)
			used += slot[i].task && slot[i].birth_ns && slot[i].birth_ns != RUNQ_SLOT_RELEASED;
		fprintf(stderr, "pairing state in slots (bpf/runq.bpf.c runq_slots): %llu tasks, "
			"%llu moved to task storage since, %zu of %zu slots held at the end; %llu "
			"tasks got task storage at once (their slot was another task's, or they "
			"are PID 1's threads)\n",
			(unsigned long long)x->skel->bss->slot_taken,
			(unsigned long long)x->skel->bss->slot_moved, used, n,
			(unsigned long long)x->skel->bss->slot_busy);
	}
	free(before);
	free(seen);
}

int runq_record_line(const struct runq_record *r, bool json, uint64_t unit_ns, const char *unit,
		     char *buf, size_t len)
{
	const char *kind = r->kind == RUNQ_PREEMPT ? "preempt" : "wakeup";
	char comm[65], prev[65];
	struct lh_line l;

	lh_printable(r->comm, sizeof(r->comm), comm, sizeof(comm));
	lh_printable(r->prev_comm, sizeof(r->prev_comm), prev, sizeof(prev));
	lh_line_init(&l, buf, len);
	if (json) {
		lh_json_begin(&l);
		lh_json_u64(&l, "ts_ns", r->ts_ns);
		lh_json_string(&l, "name", kind);
		lh_json_u64(&l, "latency_ns", r->latency_ns);
		lh_json_u64(&l, "pid", r->pid);
		lh_json_u64(&l, "tid", r->tid);
		lh_json_string(&l, "comm", comm);
		lh_json_u64(&l, "cpu", r->cpu);
		lh_json_u64(&l, "start_cpu", r->start_cpu);
		lh_json_u64(&l, "prev_tid", r->prev_tid);
		lh_json_string(&l, "prev_comm", prev);
		lh_json_end(&l);
		return lh_line_end(&l);
	}
	/* "%.6f %-7s %10.3f %s  tid %u pid %u comm %s  cpu %u (%s on cpu %u)  after tid %u %s\n" */
	lh_line_fixed(&l, (double)r->ts_ns / 1e9, 6, 0);
	lh_line_char(&l, ' ');
	lh_line_str_left(&l, kind, 7);
	lh_line_char(&l, ' ');
	lh_line_fixed(&l, (double)r->latency_ns / (double)unit_ns, 3, 10);
	lh_line_char(&l, ' ');
	lh_line_str(&l, unit);
	lh_line_mem(&l, "  tid ", 6);
	lh_line_u64(&l, r->tid);
	lh_line_mem(&l, " pid ", 5);
	lh_line_u64(&l, r->pid);
	lh_line_mem(&l, " comm ", 6);
	lh_line_str(&l, comm);
	lh_line_mem(&l, "  cpu ", 6);
	lh_line_u64(&l, r->cpu);
	lh_line_str(&l, r->kind == RUNQ_PREEMPT ? " (preempted on cpu " : " (woken on cpu ");
	lh_line_u64(&l, r->start_cpu);
	lh_line_mem(&l, ")  after tid ", 13);
	lh_line_u64(&l, r->prev_tid);
	lh_line_char(&l, ' ');
	lh_line_str(&l, prev);
	return lh_line_end(&l);
}

/* One --slower-than record as a text or JSON line (lh_format_record_fn). */
static int format_record(void *ctx, const void *data, size_t size, bool json, char *buf,
			 size_t len)
{
	struct lh_session *s = ctx;
	struct runq_record anon;
	const struct runq_record *r = data;

	if (size < sizeof(*r) || r->type != LH_REC_RUNQ)
		return 0;
	if (s->c->anonymize) {
		anon = *r;
		anon.pid = lh_anon_id(&s->anon, r->pid);
		anon.tid = lh_anon_id(&s->anon, r->tid);
		anon.prev_tid = lh_anon_id(&s->anon, r->prev_tid);
		lh_anon_comm(&s->anon, anon.comm, sizeof(anon.comm));
		lh_anon_comm(&s->anon, anon.prev_comm, sizeof(anon.prev_comm));
		r = &anon;
	}
	return runq_record_line(r, json, s->report.meta.scheme.unit_ns, s->report.meta.unit, buf,
				len);
}

static void *skel_open(void)
{
	return runq_bpf__open();
}

static size_t skel_configure(void *skel, void *tool, enum lh_attach_mode type)
{
	struct runq_ctx *x = tool;

	return configure(skel, x->o, type, x->has_storage, x->has_storage && !x->iter_err);
}

static int skel_load(void *skel)
{
	return runq_bpf__load(skel);
}

static void skel_destroy(void *skel)
{
	runq_bpf__destroy(skel);
}

static const struct lh_skel_ops skel_ops = { skel_open, skel_configure, skel_load, skel_destroy };

/* lathist runq: its registry descriptor's entry point (argv[0] is the verb). */
static int runq_main(int argc, char **argv)
{
	struct runq_opts o;
	struct runq_ctx x = { .o = &o };
	struct lh_session s;
	enum lh_attach_mode types[2], type = LH_ATTACH_AUTO;
	size_t value_size = 0;
	void *skel;
	char what[64];
	int err, ntypes, rc = LH_EXIT_RUNTIME;
	bool counters_open = false;

	err = runq_parse_args(argc, argv, &o);
	if (err)
		return err > 0 ? LH_EXIT_OK : LH_EXIT_USAGE;
	if (lh_preflight(TOOL, &o.c))
		return LH_EXIT_RUNTIME;
	/* the accounting's compare-and-exchange, in every program: without it no
	 * attach type loads, and the verifier's EINVAL would name none of this */
	if ((o.c.test_no_atomics ? -EINVAL : lh_probe_atomics()) == -EINVAL) {
		fprintf(stderr, "lathist runq: this kernel's BPF verifier refuses atomic "
			"compare-and-exchange (Linux 5.12+), which runq needs to count each "
			"switch-in once; run it on Linux 5.12 or later\n");
		return LH_EXIT_RUNTIME;
	}
	x.has_storage = lh_probe_tp_btf_task_storage();
	/* a kernel may refuse one kind of iterator and not another: probed */
	x.iter_err = !x.has_storage ? 0 : o.c.test_no_sweep ? -EPERM : lh_probe_iter("task");
	ntypes = lh_attach_candidates(TOOL, o.c.attach, x.has_storage, "BPF task storage (5.11+)",
				      types);
	if (!ntypes)
		return LH_EXIT_RUNTIME;
	init_meta(&s, &o);
	if (x.iter_err)
		snprintf(s.report.meta.unchecked, sizeof(s.report.meta.unchecked),
			 "task iterators do not load here (%s), so the start and end sweeps did "
			 "not run: waits of tasks with no event seen at the ends of the run "
			 "(missed_wait) and hidden_tasks are not counted", strerror(-x.iter_err));
	if (o.npmu && open_counters(&x, &s.report.meta))
		goto out;	/* what it opened it closed, and said why */
	counters_open = o.npmu > 0;
	s.read_hists = read_hists;
	s.sweep = sweep;
	s.prepare = prepare;
	s.max_value_size = sizeof(struct lh_pmu_val);
	s.format_record = format_record;
	s.tool = &x;
	err = lh_load_first(TOOL, &o.c, types, ntypes, &skel_ops, &x, &skel, &type, &value_size);
	if (!skel)
		goto out;
	x.skel = skel;
	meta_attach(&s.report.meta, type);
	if (!err)
		LH_SESSION_BIND(&s, x.skel);
	if (!err && keyed_group(o.group))
		lh_session_read_early(&s, bpf_map__max_entries(x.skel->maps.runq_hist_keyed));
	if (!err && o.npmu && fill_counters(&x))
		goto out;
	snprintf(what, sizeof(what), "runqueue latency (%s)", lh_attach_name(type));
	rc = lh_session_main(&s, err, x.skel->obj, value_size, attach, x.skel, what);
out:
	if (x.skel)
		runq_bpf__destroy(x.skel);
	if (counters_open)
		lh_pmu_close(x.pmu_fds, o.npmu, x.ncpus);
	free(x.pmu_fds);
	return rc;
}

static const char *const runq_groupings[] = { "process", "thread", "cpu", "cgroup", NULL };
static const unsigned int runq_grouping_fields[] = {
	LH_KEY_PID | LH_KEY_COMM, LH_KEY_TID | LH_KEY_PID | LH_KEY_COMM, LH_KEY_CPU, LH_KEY_CGROUP,
};
/* each wait in one of these: oncpu counts slices */
static const char *const runq_paired[] = { "wakeup", "preempt", NULL };

/* What each counter means in runq (text -v, -h -v, the man page; docs/losses.md
 * explains each at length). */
static const char *const runq_counter_desc[LH_NR_COUNTERS] = {
	[LH_EV_ENDS] = "switch-ins of traced tasks seen",
	[LH_EV_PAIRED] = "switch-ins paired with the wakeup or preemption that began their wait: "
			 "the waits in the histograms",
	[LH_EV_STARTS_WAKEUP] = "wakeups recorded as the start of a wait",
	[LH_EV_STARTS_PREEMPT] = "preempted switch-outs recorded as the start of a wait",
	[LH_EV_WAKEUP_RUNNING] = "wakeups of a task still on a CPU (no wait followed)",
	[LH_EV_WAKEUP_QUEUED] = "wakeups of a preempted task still queued (its wait goes on)",
	[LH_EV_FILTERED] = "events the filters (-p, -t, --cpus, --cgroup) left out: not a loss",
	[LH_EV_BEFORE_TRACE] = "switch-ins of tasks queued before tracing began (the kernel's "
			       "sched_info says so): not a loss",
	[LH_EV_RB_ELIGIBLE] = "waits at or over --slower-than: one record each",
	[LH_EV_SLICES] = "on-CPU slices in the oncpu histograms",
	[LH_EV_SWITCHES] = "sched_switch events seen (every task, every CPU)",
	[LH_GAP_MISSED_SWITCH] = "context switches with no sched_switch event (the CPU's "
				 "rq->nr_switches moved more, or prev was not its last next): the "
				 "kernel fired none, or skipped lathist's program",
	[LH_GAP_HIDDEN_TASKS] = "traced tasks, alive through the end-of-run sweep, that the "
				"kernel's task iterator did not show: their waits after their last "
				"event are not counted (not checked under --cgroup or outside "
				"the initial PID namespace)",
	[LH_LOSS_UNPAIRED] = "switch-ins whose wakeup or preemption no event showed",
	[LH_LOSS_OVERWRITTEN] = "starts replaced by a newer start of the same wait",
	[LH_LOSS_MISSED_SWITCH_IN] = "starts whose switch-in no event showed (the task's switch "
				     "count moved): never paired",
	[LH_LOSS_MISSED_WAIT] = "waits the task's switch count shows with no event at all (neither "
				"start nor switch-in)",
	[LH_LOSS_UNCHECKED] = "lathist 0.1.0's classic tracepoint path (report inputs only): "
			      "switch-ins whose wakeup the switch count could not check",
	[LH_LOSS_STALE] = "raw_tp: starts left by an earlier task with the same pid",
	[LH_LOSS_NEGATIVE] = "switch-ins timestamped before their start",
	[LH_LOSS_ABSURD] = "waits over one hour: broken pairings, not latencies",
	[LH_LOSS_STORAGE] = "task storage could not be created",
	[LH_LOSS_START_E2BIG] = "raw_tp: the pid-keyed start map was full (raise --max-tasks)",
	[LH_LOSS_START_ENOMEM] = "raw_tp: the start map was out of memory",
	[LH_LOSS_START_OTHER] = "raw_tp: a start map update failed (other errno)",
	[LH_LOSS_HIST_E2BIG] = "the keyed histogram map was full (raise --max-keys)",
	[LH_LOSS_HIST_ENOMEM] = "the histogram map was out of memory",
	[LH_LOSS_HIST_OTHER] = "a histogram map update failed (other errno)",
	[LH_LOSS_RINGBUF] = "records not written: the ring buffer was full (the histograms still "
			    "count the waits; raise --ringbuf-size)",
	[LH_LOSS_SLICE_UNPAIRED] = "on-CPU slices across a switch no event showed: dropped",
	[LH_LOSS_PMU_ENOENT] = "counter reads failed: ENOENT (no event in the slot)",
	[LH_LOSS_PMU_EINVAL] = "counter reads failed: EINVAL (the event is not readable on this CPU)",
	[LH_LOSS_PMU_OTHER] = "counter reads failed: other errno",
	[LH_LOSS_PROG_MISSED] = "runs of lathist's programs the kernel skipped (the program was "
				"already running on that CPU): each may lose an event",
};

static const struct lh_tool_tp runq_tps[] = {
	{ "sched/sched_wakeup", true, 0, "runq: wakeups" },
	{ "sched/sched_wakeup_new", true, 0, "runq: new tasks' first wakeup" },
	{ "sched/sched_switch", true, 0, "runq: switches (waits end, preemptions start)" },
	{ "sched/sched_process_exit", false, 0, "runq: stale starts of exiting tasks" },
};

/* What runq needs of this kernel beyond its tracepoints, for lathist doctor: BPF
 * atomics with a result (5.12: its accounting), task storage (tp_btf's pairing),
 * task iterators (its sweeps), and the fields its kernel-gap checks read. */
static void runq_doctor(struct lh_doctor *d)
{
	int r;

	if (!access("/sys/kernel/btf/vmlinux", R_OK)) {
		if (lh_btf_has_member("sched_entity", "cfs_rq"))
			lh_doctor_say(d, "runq rq", LH_CHECK_OK, "sched_entity::cfs_rq: missed_switch "
				      "counts every switch the kernel made with no event "
				      "(rq->nr_switches)");
		else
			lh_doctor_say(d, "runq rq", LH_CHECK_INFO, "no sched_entity::cfs_rq "
				      "(CONFIG_FAIR_GROUP_SCHED): missed_switch counts only switches "
				      "whose prev is not the CPU's last next (a lower bound)");
		if (lh_btf_has_member("sched_info", "last_queued"))
			lh_doctor_say(d, "runq sched_info", LH_CHECK_OK, "sched_info.last_queued: a "
				      "wait queued before tracing is told from one whose start no "
				      "event showed");
		else
			lh_doctor_say(d, "runq sched_info", LH_CHECK_INFO, "no sched_info "
				      "(CONFIG_SCHED_INFO): a task older than the trace, switched in "
				      "with no start seen, counts as waiting since before tracing");
	}
	lh_doctor_map_type(d, "task storage", BPF_MAP_TYPE_TASK_STORAGE, LH_CHECK_INFO, NULL,
			   "BPF task storage: runq pairs on tp_btf (default)",
			   "no BPF task storage (5.11+): runq would pair on raw_tp with a pid-keyed "
			   "map (--max-tasks)");
	if (!lh_doctor_privileged(d)) {
		lh_doctor_say(d, "bpf atomics", LH_CHECK_DENIED, "cannot check without CAP_BPF");
		lh_doctor_say(d, "runq sweeps", LH_CHECK_DENIED, "cannot check without CAP_BPF");
		return;
	}
	r = lh_probe_atomics();
	if (!r) {
		lh_doctor_say(d, "bpf atomics", LH_CHECK_OK, "compare-and-exchange loads: runq counts "
			      "each switch-in once beside its sweeps");
	} else if (r == -EINVAL) {
		lh_doctor_say(d, "bpf atomics", LH_CHECK_MISSING, "the verifier refuses "
			      "compare-and-exchange (5.12+): runq cannot run; run it on Linux 5.12 "
			      "or later");
		lh_doctor_cannot(d, &runq_tool);
	} else {
		lh_doctor_say(d, "bpf atomics", LH_CHECK_DENIED, "cannot check: %s", strerror(-r));
	}
	/* a kernel may refuse iterators (this VM kind refuses map iterators): runq then
	 * runs without its sweeps and says NOT CHECKED */
	r = lh_probe_iter("task");
	if (r)
		lh_doctor_say(d, "runq sweeps", LH_CHECK_INFO, "a task iterator does not load (%s): "
			      "runq runs without its start and end sweeps, and says NOT CHECKED",
			      strerror(-r));
	else
		lh_doctor_say(d, "runq sweeps", LH_CHECK_OK, "task iterators load: the start and end "
			      "sweeps run");
}

/* runq's registry descriptor (src/registry.h). */
const struct lh_tool_desc runq_tool = {
	.name = "runq",
	.summary = "runqueue latency: wakeup latency and preemption wait",
	.main = runq_main,
	.doctor = runq_doctor,
	.counter_desc = runq_counter_desc,
	.noun = "waits",
	.everyone = "all tasks",
	.charges_keys = true,
	.kinds = runq_kinds,
	.nkinds = RUNQ_NR_HISTS,
	.groupings = runq_groupings,
	.grouping_fields = runq_grouping_fields,
	.paired_hists = runq_paired,
	.serve_opts = (const char *const[]){ "per-process", "per-thread", "per-cpu", "per-cgroup",
					     "tid", "cpus", "oncpu", "max-tasks", NULL },
	.max_keys_with = (const char *const[]){ "per-process", "per-thread", "per-cgroup", NULL },
	.om_label = "kind",
	.om_help = "Runqueue latency by kind: wakeup (sched_wakeup to switch-in), preempt "
		   "(switched out runnable to switch-in); buckets hold lo < v <= le.",
	.tps = runq_tps,
	.ntps = sizeof(runq_tps) / sizeof(runq_tps[0]),
};
