// SPDX-License-Identifier: GPL-2.0
/*
 * lathist runq: runqueue latency, split into wakeup latency (sched_wakeup /
 * sched_wakeup_new -> switch-in) and preemption wait (switched out while
 * runnable -> switch-in), aggregated in per-CPU histograms.
 *
 * Two variants of the same logic: tp_btf programs keep the pairing state in
 * task local storage (no PID-keyed table, freed with the task); raw_tp
 * programs, for kernels without tp_btf or task storage, keep it in a hash
 * keyed by pid whose entries carry the task's start time so PID reuse is
 * detected and counted. Classic tracepoints (tracefs; for kernels where
 * neither loads) see pids, not task pointers: see the "tracepoint" section.
 * The loader loads one variant.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "lathist.bpf.h"
#include "core_fixes.bpf.h"
#include "runq.h"

#define TASK_RUNNING 0
#define TASK_DEAD 0x80		/* include/linux/sched.h, since 4.14 */

/* Options, set by the loader before load. */
const volatile __u32 group = RUNQ_GROUP_TOTAL;
const volatile __u32 filter_tgid;
const volatile __u32 filter_tid;
const volatile bool filter_cpus;
const volatile __u64 cpu_mask[RUNQ_MAX_CPUS / 64];
/* sched_switch has had a prev_state argument since 5.18; the loader reads
 * the tracepoint's BTF prototype and says whether this kernel passes it. */
const volatile bool switch_has_prev_state = true;
/* On-CPU slices (--oncpu) and PMU counters read over them (--counters). */
const volatile bool oncpu_on;
const volatile __u32 pmu_n;		/* counters, 0..LH_MAX_PMU */
const volatile __u32 pmu_ncpus;		/* runq_pmu_events index = counter * pmu_ncpus + cpu */
/* Classic tracepoint variant: a task's filters are known only while it runs. */
const volatile bool tp_classic;

/* total and per-CPU: index = (kind - 1) + RUNQ_NR_HISTS * buf */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2 * RUNQ_NR_HISTS);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct lh_hist_head) + 8 * LH_NSLOTS(0));
} runq_hist SEC(".maps");

/* per process / per thread; max_entries set by the loader (--max-keys) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 10240);
	__uint(key_size, sizeof(struct runq_hist_key));
	__uint(value_size, sizeof(struct lh_hist_head) + 8 * LH_NSLOTS(0));
} runq_hist_keyed SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct runq_start);
} runq_task_start SEC(".maps");

/* raw_tp fallback only; max_entries set by the loader (--max-tasks) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);
	__type(value, struct runq_start);
} runq_pid_start SEC(".maps");

/* Counting perf events opened by the loader, one per (counter, CPU). */
struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} runq_pmu_events SEC(".maps");

/* The slice running on each CPU now. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct runq_slice);
} runq_slice SEC(".maps");

/* Counter sums, total and per CPU: index = buf. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct lh_pmu_val);
} runq_pmu SEC(".maps");

/* Counter sums per process / thread (key kind RUNQ_ONCPU); max_entries = --max-keys. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 10240);
	__type(key, struct runq_hist_key);
	__type(value, struct lh_pmu_val);
} runq_pmu_keyed SEC(".maps");

/* Is t running on a CPU right now? (task_struct::on_cpu exists with CONFIG_SMP) */
static __always_inline bool task_on_cpu(struct task_struct *t, bool btf)
{
	if (!bpf_core_field_exists(t->on_cpu))
		return false;
	return TREAD(btf, t, on_cpu);
}

/* Switches of t so far: __schedule() counts one before tracing sched_switch. */
static __always_inline __u64 switch_count(struct task_struct *t, bool btf)
{
	return TREAD(btf, t, nvcsw) + TREAD(btf, t, nivcsw);
}

static __always_inline bool task_selected(struct task_struct *t, __u32 tid, __u32 tgid)
{
	if (filter_tgid && tgid != filter_tgid)
		return false;
	if (filter_tid && tid != filter_tid)
		return false;
	if (filter_cgroup_id && !lh_task_in_cgroup(t))
		return false;
	return true;
}

static __always_inline bool cpu_selected(__u32 cpu)
{
	if (!filter_cpus)
		return true;
	if (cpu >= RUNQ_MAX_CPUS)
		return false;
	return (cpu_mask[cpu / 64] >> (cpu % 64)) & 1;
}

/*
 * The task's pairing state; created when create is set. NULL when there is
 * none (not created: the task has not been seen since tracing began) or it
 * could not be created (counted).
 */
static __always_inline struct runq_start *start_get(struct task_struct *t, __u32 tid,
						    bool btf, bool create,
						    struct lh_counters *c)
{
	struct runq_start *s, init = {};
	__u64 birth;

	if (btf) {
		s = bpf_task_storage_get(&runq_task_start, t, 0,
					 create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
		if (!s && create)
			c->v[LH_LOSS_STORAGE]++;
		return s;
	}
	birth = BPF_CORE_READ(t, start_time);
	s = bpf_map_lookup_elem(&runq_pid_start, &tid);
	if (s && s->birth_ns != birth) {
		/* an earlier task with this pid left a record (its exit was
		 * missed): never pair across tasks */
		if (s->ts)
			c->v[LH_LOSS_STALE]++;
		s->ts = 0;
		s->kind = RUNQ_NONE;
		s->birth_ns = birth;
	}
	if (s || !create)
		return s;
	init.birth_ns = birth;
	return lh_map_add(&runq_pid_start, &tid, &init, c, LH_LOSS_START_E2BIG);
}

static __always_inline int on_wakeup(struct task_struct *p, bool btf)
{
	struct runq_start *s;
	__u32 tid, tgid, buf;
	struct lh_counters *c = lh_counters(&buf);

	if (!c)
		return 0;
	tid = TREAD(btf, p, pid);
	if (!tid)
		return 0;
	tgid = TREAD(btf, p, tgid);
	if (!task_selected(p, tid, tgid)) {
		c->v[LH_EV_FILTERED]++;
		return 0;
	}
	if (task_on_cpu(p, btf)) {
		/* woken between setting its sleep state and switching out: it never
		 * left the CPU, so no wait follows this wakeup */
		c->v[LH_EV_WAKEUP_RUNNING]++;
		return 0;
	}
	s = start_get(p, tid, btf, true, c);
	if (!s)
		return 0;
	if (s->ts) {
		/* still queued since its preemption (it has not been switched since):
		 * that wait goes on. Otherwise its switch-in was missed: drop the start */
		if (s->kind == RUNQ_PREEMPT && s->nsw == switch_count(p, btf)) {
			c->v[LH_EV_WAKEUP_QUEUED]++;
			return 0;
		}
		c->v[LH_LOSS_OVERWRITTEN]++;
	}
	s->ts = bpf_ktime_get_ns();
	s->kind = RUNQ_WAKEUP;
	s->cpu = bpf_get_smp_processor_id();
	c->v[LH_EV_STARTS_WAKEUP]++;
	return 0;
}

/* The histogram key of task t for the grouping (process or thread). */
static __always_inline void task_key(struct runq_hist_key *key, struct task_struct *t, __u32 tid,
				     __u32 tgid, __u32 kind, __u32 buf, bool btf)
{
	struct task_struct *leader;

	key->kind = kind;
	key->buf = buf;
	key->tgid = tgid;
	if (group == RUNQ_GROUP_THREAD) {
		key->tid = tid;
		key->birth_ns = TREAD(btf, t, start_time);
	} else {
		leader = TREAD(btf, t, group_leader);
		key->birth_ns = BPF_CORE_READ(leader, start_time);
	}
}

/* A per-process/per-thread key's name, taken once: the thread's, or its leader's. */
static __always_inline void key_comm(char comm[16], struct task_struct *t)
{
	if (comm[0])
		return;
	if (group == RUNQ_GROUP_THREAD)
		BPF_CORE_READ_STR_INTO((char (*)[16])comm, t, comm);
	else
		BPF_CORE_READ_STR_INTO((char (*)[16])comm, t, group_leader, comm);
}

/* Add a wait (or slice) to its histogram; false (failure counted) when the map is full. */
static __always_inline bool hist_record(struct task_struct *t, __u32 tid, __u32 tgid,
					__u32 kind, __u64 delta, bool btf,
					struct lh_counters *c, __u32 buf)
{
	struct runq_hist_key key = {};
	struct lh_hist_head *h;

	if (group == RUNQ_GROUP_TOTAL || group == RUNQ_GROUP_CPU) {
		__u32 idx = (kind - 1) + RUNQ_NR_HISTS * buf;

		h = bpf_map_lookup_elem(&runq_hist, &idx);
		if (!h)
			return false;
		lh_hist_add(h, delta);
		return true;
	}
	task_key(&key, t, tid, tgid, kind, buf, btf);
	h = lh_hist_keyed(&runq_hist_keyed, &key, c);
	if (!h)
		return false;
	key_comm(h->comm, t);
	lh_hist_add(h, delta);
	return true;
}

/* prev leaves the CPU: a runnable prev starts a preemption wait. */
static __always_inline __u64 on_switch_out(bool preempt, struct task_struct *prev,
					   unsigned int prev_state, bool btf,
					   struct lh_counters *c)
{
	struct runq_start *s;
	__u32 tid, tgid;
	bool runnable;
	__u64 now = 0;

	tid = TREAD(btf, prev, pid);
	if (!tid)		/* the idle task is never paired */
		return 0;
	if (!switch_has_prev_state)
		prev_state = task_state(prev);
	runnable = preempt || prev_state == TASK_RUNNING;
	if (!runnable) {	/* going to sleep: its wakeup starts the next wait */
		/* its last switch: a preemption after sched_process_exit made a
		 * pid entry again (task storage goes with the task) */
		if (!btf && (prev_state & TASK_DEAD))
			bpf_map_delete_elem(&runq_pid_start, &tid);
		return 0;
	}
	tgid = TREAD(btf, prev, tgid);
	if (!task_selected(prev, tid, tgid)) {
		c->v[LH_EV_FILTERED]++;
		return 0;
	}
	s = start_get(prev, tid, btf, true, c);
	if (!s)
		return 0;
	if (s->ts)		/* a start of a task on the CPU: its switch-in was missed */
		c->v[LH_LOSS_OVERWRITTEN]++;
	now = bpf_ktime_get_ns();
	s->ts = now;
	s->kind = RUNQ_PREEMPT;
	s->cpu = bpf_get_smp_processor_id();
	s->nsw = switch_count(prev, btf);
	c->v[LH_EV_STARTS_PREEMPT]++;
	return now;
}

/*
 * A record of a wait for the ring buffer when it passes --slower-than, all
 * but the two comms (the caller fills them and submits); NULL when none.
 */
static __always_inline struct runq_record *record_begin(__u32 tid, __u32 tgid, __u32 kind,
							__u32 start_cpu, __u32 prev_tid,
							__u64 now, __u64 delta,
							struct lh_counters *c)
{
	struct runq_record *r = lh_record_reserve(c, delta, sizeof(*r));

	if (!r)
		return NULL;
	r->type = LH_REC_RUNQ;
	r->kind = kind;
	r->ts_ns = now;
	r->latency_ns = delta;
	r->pid = tgid;
	r->tid = tid;
	r->cpu = bpf_get_smp_processor_id();
	r->start_cpu = start_cpu;
	r->prev_tid = prev_tid;
	r->pad = 0;
	return r;
}

/* The record of next's wait, read at its switch-in (tp_btf, raw_tp). */
static __always_inline void record_wait(struct task_struct *prev, struct task_struct *next,
					__u32 tid, __u32 tgid, __u32 kind, __u32 start_cpu,
					__u64 now, __u64 delta, bool btf, struct lh_counters *c)
{
	struct runq_record *r = record_begin(tid, tgid, kind, start_cpu, TREAD(btf, prev, pid),
					     now, delta, c);

	if (!r)
		return;
	BPF_CORE_READ_STR_INTO(&r->comm, next, comm);
	BPF_CORE_READ_STR_INTO(&r->prev_comm, prev, comm);
	lh_record_submit(r);
}

/* The task a switch puts on the CPU, read once for its wait and its slice. */
struct next_task {
	__u32 tid;		/* 0: the idle task */
	__u32 tgid;
	bool selected;		/* passes -p, -t, --cgroup */
};

/* next gets the CPU: the end of its wait. */
static __always_inline void on_switch_in(struct task_struct *prev, struct task_struct *next,
					 const struct next_task *n, __u64 now, bool btf,
					 struct lh_counters *c, __u32 buf)
{
	struct runq_start *s;
	__u32 tid = n->tid, tgid = n->tgid, kind, start_cpu;
	__u64 ts, delta;

	if (!tid)
		return;
	if (!n->selected) {
		c->v[LH_EV_FILTERED]++;
		return;
	}
	s = start_get(next, tid, btf, false, c);
	if (!cpu_selected(bpf_get_smp_processor_id())) {
		if (s)
			s->ts = 0;
		c->v[LH_EV_FILTERED]++;
		return;
	}
	c->v[LH_EV_ENDS]++;
	if (!s) {
		/* never seen since tracing began: waiting since before, unless the task
		 * is younger than the trace (then its wakeup_new was missed) */
		if (TREAD(btf, next, start_time) > lh_start_ns)
			c->v[LH_LOSS_UNPAIRED]++;
		else
			c->v[LH_EV_BEFORE_TRACE]++;
		return;
	}
	ts = s->ts;
	kind = s->kind;
	start_cpu = s->cpu;
	s->ts = 0;
	if (!ts || (kind != RUNQ_WAKEUP && kind != RUNQ_PREEMPT)) {
		c->v[LH_LOSS_UNPAIRED]++;
		return;
	}
	if (!now)
		now = bpf_ktime_get_ns();
	if (!lh_delta(c, ts, now, &delta))
		return;
	/* paired means in a histogram: a full map counts as hist_map_full instead */
	if (hist_record(next, tid, tgid, kind, delta, btf, c, buf))
		c->v[LH_EV_PAIRED]++;
	record_wait(prev, next, tid, tgid, kind, start_cpu, now, delta, btf, c);
}

/* The counter sums of t's key; NULL (failure counted) when the map is full. */
static __always_inline struct lh_pmu_val *pmu_val(struct task_struct *t, __u32 tid, __u32 tgid,
						  bool btf, struct lh_counters *c, __u32 buf)
{
	static const struct lh_pmu_val zero;
	struct runq_hist_key key = {};
	struct lh_pmu_val *v;

	if (group == RUNQ_GROUP_TOTAL || group == RUNQ_GROUP_CPU)
		return bpf_map_lookup_elem(&runq_pmu, &buf);
	task_key(&key, t, tid, tgid, RUNQ_ONCPU, buf, btf);
	v = bpf_map_lookup_elem(&runq_pmu_keyed, &key);
	if (v)
		return v;
	return lh_map_add(&runq_pmu_keyed, &key, &zero, c, LH_LOSS_HIST_E2BIG);
}

static __always_inline void count_pmu_err(struct lh_counters *c, long err)
{
	if (err == -2)		/* ENOENT */
		c->v[LH_LOSS_PMU_ENOENT]++;
	else if (err == -22)	/* EINVAL */
		c->v[LH_LOSS_PMU_EINVAL]++;
	else
		c->v[LH_LOSS_PMU_OTHER]++;
}

/*
 * On-CPU slices: the slice that ends on this CPU belongs to prev, the one that
 * begins to next. Its time goes to the oncpu histogram and, with --counters,
 * each counter's delta over it (bpf_perf_event_read_value: counter,
 * time_enabled, time_running) to prev's key. Counters are read once per switch:
 * the end of one slice is the start of the next.
 */
static __always_inline void on_slice(struct task_struct *prev, const struct next_task *n,
				     __u64 now, bool btf,
				     struct lh_counters *c, __u32 buf)
{
	__u32 zero = 0, cpu = bpf_get_smp_processor_id(), ptid, ntid = n->tid, tgid, bad = 0;
	struct bpf_perf_event_value cur[LH_MAX_PMU];
	struct lh_pmu_val *pv = NULL;
	struct runq_slice *sl;
	bool end, start;
	__u64 delta = 0;
	int i;

	sl = bpf_map_lookup_elem(&runq_slice, &zero);
	if (!sl)
		return;
	ptid = TREAD(btf, prev, pid);
	/* a slice is recorded only for a selected task on a selected CPU */
	end = sl->tid && ptid == sl->tid;
	if (sl->tid && !end)
		c->v[LH_LOSS_SLICE_UNPAIRED]++;	/* a switch on this CPU was missed */
	/* tracepoint: the slice began unfiltered (only a pid was known); prev is
	 * current now, so its filters decide */
	if (end && tp_classic && !task_selected(prev, ptid, TREAD(btf, prev, tgid)))
		end = false;
	start = ntid && n->selected && cpu_selected(cpu);
	if (!end && !start) {
		sl->tid = 0;
		return;
	}
	#pragma unroll
	for (i = 0; i < LH_MAX_PMU; i++) {
		long err;

		if (i >= pmu_n)
			break;
		err = bpf_perf_event_read_value(&runq_pmu_events, i * pmu_ncpus + cpu, &cur[i],
						sizeof(cur[i]));
		if (err) {
			count_pmu_err(c, err);
			bad |= 1U << i;
		}
	}
	if (end && lh_delta(c, sl->ts, now, &delta)) {
		tgid = TREAD(btf, prev, tgid);
		/* counters cover exactly the slices in the oncpu histogram */
		if (hist_record(prev, ptid, tgid, RUNQ_ONCPU, delta, btf, c, buf)) {
			c->v[LH_EV_SLICES]++;
			if (pmu_n)
				pv = pmu_val(prev, ptid, tgid, btf, c, buf);
		}
	}
	if (pv) {
		bool missing = false;

		if (group == RUNQ_GROUP_THREAD || group == RUNQ_GROUP_PROCESS)
			key_comm(pv->comm, prev);
		pv->slices++;
		pv->oncpu_ns += delta;
		#pragma unroll
	for (i = 0; i < LH_MAX_PMU; i++) {
			__u64 en, run;

			if (i >= pmu_n)
				break;
			if ((bad | sl->bad) & (1U << i)) {
				missing = true;
				continue;
			}
			en = cur[i].enabled - sl->v[i].enabled;
			run = cur[i].running - sl->v[i].running;
			pv->c[i].raw += cur[i].counter - sl->v[i].counter;
			pv->c[i].enabled += en;
			pv->c[i].running += run;
			if (run < en)
				pv->c[i].multiplexed++;
		}
		if (missing)
			pv->read_failed++;
	}
	if (!start) {
		sl->tid = 0;
		return;
	}
	sl->tid = ntid;
	sl->ts = now;
	sl->bad = bad;
	#pragma unroll
	for (i = 0; i < LH_MAX_PMU; i++) {
		if (i >= pmu_n)
			break;
		sl->v[i].counter = cur[i].counter;
		sl->v[i].enabled = cur[i].enabled;
		sl->v[i].running = cur[i].running;
	}
}

static __always_inline int on_switch(bool preempt, struct task_struct *prev,
				     struct task_struct *next, unsigned int prev_state,
				     bool btf)
{
	__u32 buf;
	struct lh_counters *c = lh_counters(&buf);
	struct next_task n = {};
	__u64 now;

	if (!c)
		return 0;
	now = on_switch_out(preempt, prev, prev_state, btf, c);
	if (oncpu_on && !now)
		now = bpf_ktime_get_ns();	/* one clock read for the wait and the slice */
	n.tid = TREAD(btf, next, pid);
	if (n.tid) {
		n.tgid = TREAD(btf, next, tgid);
		n.selected = task_selected(next, n.tid, n.tgid);
	}
	on_switch_in(prev, next, &n, now, btf, c, buf);
	if (oncpu_on)	/* on_slice needs now: set above */
		on_slice(prev, &n, now, btf, c, buf);
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(runq_wakeup_btf, struct task_struct *p)
{
	return on_wakeup(p, true);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(runq_wakeup_new_btf, struct task_struct *p)
{
	return on_wakeup(p, true);
}

SEC("tp_btf/sched_switch")
int runq_switch_btf(u64 *ctx)
{
	/* (bool preempt, prev, next[, unsigned int prev_state since 5.18]) */
	unsigned int prev_state = switch_has_prev_state ? (unsigned int)ctx[3] : 0;

	return on_switch((bool)ctx[0], (void *)ctx[1], (void *)ctx[2], prev_state, true);
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(runq_wakeup_raw, struct task_struct *p)
{
	return on_wakeup(p, false);
}

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(runq_wakeup_new_raw, struct task_struct *p)
{
	return on_wakeup(p, false);
}

SEC("raw_tp/sched_switch")
int runq_switch_raw(struct bpf_raw_tracepoint_args *ctx)
{
	unsigned int prev_state = switch_has_prev_state ? (unsigned int)ctx->args[3] : 0;

	return on_switch((bool)ctx->args[0], (void *)ctx->args[1], (void *)ctx->args[2],
			 prev_state, false);
}

/*
 * A task exits while running, so a start still recorded means its switch-in
 * was never seen (missed events): count it. raw_tp also frees the pid entry
 * (task storage frees itself with the task).
 */
static __always_inline int on_exit(struct task_struct *p, bool btf)
{
	__u32 tid = TREAD(btf, p, pid), buf;
	struct lh_counters *c = lh_counters(&buf);
	struct runq_start *s;

	if (c && tid) {
		s = start_get(p, tid, btf, false, c);
		if (s && s->ts)
			c->v[LH_LOSS_OVERWRITTEN]++;
	}
	if (!btf)
		bpf_map_delete_elem(&runq_pid_start, &tid);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(runq_exit_btf, struct task_struct *p)
{
	return on_exit(p, true);
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(runq_exit_raw, struct task_struct *p)
{
	return on_exit(p, false);
}

/*
 * ---- Classic tracepoints (--attach tracepoint; needs tracefs) ----
 *
 * Their records carry pids and comms, not task pointers, so:
 * - starts live in runq_pid_start keyed by pid and are deleted at
 *   sched_process_exit, which the exiting task runs before its pid can be
 *   freed: an entry never outlives its task unless that event is missed (then
 *   the next task with the pid replaces it: overwritten_start);
 * - a wait is paired at its switch-in. When nothing but the pid is needed
 *   (total or per-CPU histograms, no -p/--cgroup, no records) it is counted
 *   there. Otherwise it is counted when the same task next leaves this CPU:
 *   then it is current (bpf_get_current_task), so its tgid, start time, cgroup
 *   and comm are read from the task itself for the filters, the keys and the
 *   record. Counts then lag by one slice; waits whose slice has not ended when
 *   tracing stops are not counted (at most one per CPU). Whether a pid passes
 *   -p/--cgroup is remembered from its last switch-out (runq_start.sel), for
 *   its wakeups and for a slice whose end the kernel did not report;
 * - a wakeup of the task its CPU is running (runq_cpu_tid) starts no wait.
 */

/* The pid each CPU runs, from the last sched_switch there; entries = possible CPUs. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} runq_cpu_tid SEC(".maps");

enum { PEND_WAIT = 1, PEND_NO_ENTRY, PEND_NO_START };
enum { SEL_UNKNOWN, SEL_YES, SEL_NO };

/* Filters that need the task itself (its process or cgroup), not just its pid. */
#define TP_TASK_FILTERS (filter_tgid || filter_cgroup_id)
/* Is a wait counted at the task's next switch-out (see above)? */
#define TP_DEFER (TP_TASK_FILTERS || group == RUNQ_GROUP_PROCESS || \
		  group == RUNQ_GROUP_THREAD || slower_than_ns != ~0ULL)

/* A wait ended by a switch-in on this CPU, counted at that task's switch-out. */
struct runq_pending {
	__u64 start_ns, end_ns;
	__u32 tid;			/* 0: nothing pending */
	__u32 state;			/* PEND_* */
	__u32 kind, start_cpu, prev_tid, sel;	/* sel: the pid's SEL_* when switched in */
	char prev_comm[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct runq_pending);
} runq_pending SEC(".maps");

/*
 * sched_switch's prev_state field is __trace_sched_switch_state(): 0 for
 * TASK_RUNNING, TASK_REPORT_MAX (0x100 since 4.14) for a preemption, else one
 * bit of TASK_REPORT (0x7f) or TASK_REPORT_IDLE (0x80): runnable when the bits
 * below 0x100 are clear (the tracepoint's own print format tests the same mask).
 */
static __always_inline bool tp_runnable(long prev_state)
{
	return !(prev_state & 0xff);
}

/* The start entry of pid tid, created when create is set; NULL (counted) when full. */
static __always_inline struct runq_start *tp_start(__u32 tid, bool create, struct lh_counters *c)
{
	struct runq_start *s = bpf_map_lookup_elem(&runq_pid_start, &tid), init = {};

	if (s || !create)
		return s;
	return lh_map_add(&runq_pid_start, &tid, &init, c, LH_LOSS_START_E2BIG);
}

static __always_inline void tp_wakeup(__u32 tid, __u32 target_cpu)
{
	struct runq_start *s;
	__u32 *on, buf;
	struct lh_counters *c = lh_counters(&buf);

	if (!c || !tid)
		return;
	if (filter_tid && tid != filter_tid) {	/* -p and --cgroup wait for the task to run */
		c->v[LH_EV_FILTERED]++;
		return;
	}
	on = bpf_map_lookup_elem(&runq_cpu_tid, &target_cpu);	/* target_cpu = task_cpu(p) */
	if (on && *on == tid) {
		c->v[LH_EV_WAKEUP_RUNNING]++;
		return;
	}
	s = tp_start(tid, true, c);
	if (!s)
		return;
	if (s->sel == SEL_NO) {		/* outside -p/--cgroup when it last ran */
		c->v[LH_EV_FILTERED]++;
		return;
	}
	if (s->ts) {
		if (s->kind == RUNQ_PREEMPT) {	/* preempted and still queued: that wait goes on */
			c->v[LH_EV_WAKEUP_QUEUED]++;
			return;
		}
		c->v[LH_LOSS_OVERWRITTEN]++;
	}
	s->ts = bpf_ktime_get_ns();
	s->kind = RUNQ_WAKEUP;
	s->cpu = bpf_get_smp_processor_id();
	c->v[LH_EV_STARTS_WAKEUP]++;
}

SEC("tracepoint/sched/sched_wakeup")
int runq_wakeup_tp(struct trace_event_raw_sched_wakeup_template *ctx)
{
	tp_wakeup(ctx->pid, ctx->target_cpu);
	return LH_TP_KEEP;
}

SEC("tracepoint/sched/sched_wakeup_new")
int runq_wakeup_new_tp(struct trace_event_raw_sched_wakeup_template *ctx)
{
	tp_wakeup(ctx->pid, ctx->target_cpu);
	return LH_TP_KEEP;
}

/*
 * Count a wait of pid tid (tgid, task cur) that ended at pd->end_ns: cur is the
 * task itself when deferred, else whatever runs now (unused: total and per-CPU
 * histograms need no task, and no records are taken).
 */
static __always_inline void tp_count(struct runq_pending *pd, struct task_struct *cur,
				     __u32 tid, __u32 tgid, struct lh_counters *c, __u32 buf)
{
	struct runq_record *r;
	__u64 delta;

	c->v[LH_EV_ENDS]++;
	if (pd->state != PEND_WAIT) {
		c->v[LH_LOSS_UNPAIRED]++;
		return;
	}
	if (!lh_delta(c, pd->start_ns, pd->end_ns, &delta))
		return;
	if (hist_record(cur, tid, tgid, pd->kind, delta, false, c, buf))
		c->v[LH_EV_PAIRED]++;
	if (!TP_DEFER)
		return;
	r = record_begin(tid, tgid, pd->kind, pd->start_cpu, pd->prev_tid, pd->end_ns, delta, c);
	if (!r)
		return;
	bpf_get_current_comm(r->comm, sizeof(r->comm));
	__builtin_memcpy(r->prev_comm, pd->prev_comm, sizeof(r->prev_comm));
	lh_record_submit(r);
}

/* Count the wait pending on this CPU: cur (current) is leaving, with pid ptid. */
static __always_inline void tp_account(struct runq_pending *pd, struct task_struct *cur,
				       __u32 ptid, struct lh_counters *c, __u32 buf)
{
	__u32 tid = pd->tid, tgid;

	pd->tid = 0;
	if (ptid != tid) {
		/* the kernel reported no switch-out of tid (seen for a few threads of
		 * PID 1 here): its wait is lost, unless it is known to be filtered out */
		if (TP_TASK_FILTERS && pd->sel == SEL_NO) {
			c->v[LH_EV_FILTERED]++;
			return;
		}
		c->v[LH_EV_ENDS]++;
		c->v[LH_LOSS_UNPAIRED]++;
		return;
	}
	tgid = BPF_CORE_READ(cur, tgid);
	if (!task_selected(cur, tid, tgid)) {
		c->v[LH_EV_FILTERED]++;
		return;
	}
	if (pd->state == PEND_NO_ENTRY) {
		/* never seen since tracing began: see on_switch_in() */
		c->v[LH_EV_ENDS]++;
		if (BPF_CORE_READ(cur, start_time) > lh_start_ns)
			c->v[LH_LOSS_UNPAIRED]++;
		else
			c->v[LH_EV_BEFORE_TRACE]++;
		return;
	}
	tp_count(pd, cur, tid, tgid, c, buf);
}

/* cur (current, pid ptid) leaves the CPU: a runnable one starts a preemption wait. */
static __always_inline void tp_switch_out(struct task_struct *cur, __u32 ptid, long prev_state,
					  __u64 now, struct lh_counters *c)
{
	bool runnable = tp_runnable(prev_state), sel;
	struct runq_start *s;

	if (prev_state & 0x30) {
		/* EXIT_DEAD or EXIT_ZOMBIE: its last switch. A preemption after
		 * sched_process_exit made an entry again: free it */
		bpf_map_delete_elem(&runq_pid_start, &ptid);
		return;
	}
	if (!runnable && !TP_TASK_FILTERS)
		return;
	sel = task_selected(cur, ptid, BPF_CORE_READ(cur, tgid));
	s = tp_start(ptid, runnable && sel, c);
	if (s && TP_TASK_FILTERS)
		s->sel = sel ? SEL_YES : SEL_NO;
	if (!runnable)
		return;
	if (!sel) {
		c->v[LH_EV_FILTERED]++;
		return;
	}
	if (!s)
		return;
	if (s->ts)		/* a start of a task on the CPU: its switch-in was missed */
		c->v[LH_LOSS_OVERWRITTEN]++;
	s->ts = now;
	s->kind = RUNQ_PREEMPT;
	s->cpu = bpf_get_smp_processor_id();
	c->v[LH_EV_STARTS_PREEMPT]++;
}

/* pid ntid gets the CPU: take its start, to be counted at its switch-out. */
static __always_inline void tp_switch_in(struct runq_pending *pd, struct task_struct *cur,
					 struct trace_event_raw_sched_switch *ctx, __u32 ntid,
					 __u64 now, struct lh_counters *c, __u32 buf)
{
	struct runq_start *s = tp_start(ntid, false, c);

	if ((filter_tid && ntid != filter_tid) || !cpu_selected(bpf_get_smp_processor_id())) {
		if (s)
			s->ts = 0;
		c->v[LH_EV_FILTERED]++;
		return;
	}
	pd->tid = ntid;
	pd->end_ns = now;
	pd->prev_tid = ctx->prev_pid;
	if (slower_than_ns != ~0ULL)
		bpf_core_read(pd->prev_comm, sizeof(pd->prev_comm), &ctx->prev_comm);
	if (!s) {
		/* deferred either way: only the task tells before-trace from a loss */
		pd->state = PEND_NO_ENTRY;
		pd->sel = SEL_UNKNOWN;
		return;
	}
	pd->state = s->ts && (s->kind == RUNQ_WAKEUP || s->kind == RUNQ_PREEMPT) ?
		    PEND_WAIT : PEND_NO_START;
	pd->start_ns = s->ts;
	pd->kind = s->kind;
	pd->start_cpu = s->cpu;
	pd->sel = s->sel;
	s->ts = 0;
	if (!TP_DEFER) {	/* only the pid is needed: count it now */
		pd->tid = 0;
		tp_count(pd, cur, ntid, 0, c, buf);
	}
}

/*
 * The tracepoint program's on-CPU slice, in a global function: the verifier
 * checks it once on its own, where inlined into the sched_switch program
 * with 8 counters it went past the 1M-instruction limit. cur is current (the
 * task leaving the CPU); ntid the pid coming in. Returns 0.
 */
__noinline int tp_slice(__u64 cur, __u32 ntid, __u64 now)
{
	/* the slice starts unfiltered but for -t; on_slice() filters at its end */
	struct next_task n = { .tid = ntid, .selected = !filter_tid || ntid == filter_tid };
	__u32 buf;
	struct lh_counters *c = lh_counters(&buf);

	if (c)
		on_slice((struct task_struct *)cur, &n, now, false, c, buf);
	return 0;
}

static __always_inline void tp_switch(struct trace_event_raw_sched_switch *ctx)
{
	/* sched_switch fires in __schedule() before the switch: current is prev */
	struct task_struct *cur = (void *)bpf_get_current_task();
	__u32 ptid = ctx->prev_pid, ntid = ctx->next_pid, cpu = bpf_get_smp_processor_id();
	__u32 zero = 0, buf, *on;
	struct lh_counters *c = lh_counters(&buf);
	struct runq_pending *pd;
	__u64 now;

	if (!c)
		return;
	pd = bpf_map_lookup_elem(&runq_pending, &zero);
	if (!pd)
		return;
	now = bpf_ktime_get_ns();
	if (pd->tid)
		tp_account(pd, cur, ptid, c, buf);
	if (ptid)		/* the idle task is never paired */
		tp_switch_out(cur, ptid, ctx->prev_state, now, c);
	on = bpf_map_lookup_elem(&runq_cpu_tid, &cpu);
	if (on)
		*on = ntid;
	if (ntid)
		tp_switch_in(pd, cur, ctx, ntid, now, c, buf);
	if (oncpu_on)
		tp_slice((__u64)cur, ntid, now);
}

SEC("tracepoint/sched/sched_switch")
int runq_switch_tp(struct trace_event_raw_sched_switch *ctx)
{
	tp_switch(ctx);
	return LH_TP_KEEP;
}

/* The exiting task is current; its pid is freed only after this. */
SEC("tracepoint/sched/sched_process_exit")
int runq_exit_tp(void *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid(), buf;
	struct lh_counters *c = lh_counters(&buf);
	struct runq_start *s;

	if (!tid)
		return LH_TP_KEEP;
	s = bpf_map_lookup_elem(&runq_pid_start, &tid);
	if (c && s && s->ts)
		c->v[LH_LOSS_OVERWRITTEN]++;
	bpf_map_delete_elem(&runq_pid_start, &tid);
	return LH_TP_KEEP;
}

char LICENSE[] SEC("license") = "GPL";
