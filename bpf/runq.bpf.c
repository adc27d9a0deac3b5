// SPDX-License-Identifier: GPL-2.0
/*
 * lathist runq: runqueue latency, split into wakeup latency (sched_wakeup /
 * sched_wakeup_new -> switch-in) and preemption wait (switched out while
 * runnable -> switch-in), aggregated in per-CPU histograms.
 *
 * One state machine, two attach adapters: tp_btf programs keep the pairing
 * state in task local storage (no PID-keyed table, freed with the task), or,
 * for a task born while tracing until it needs storage, in a slot of a fixed
 * table owned by its task_struct (runq_slots);
 * raw_tp programs, for kernels where tp_btf does not load, keep it in a
 * hash keyed by pid whose entries carry the task's start time so PID reuse is
 * detected and counted. The loader loads one variant.
 *
 * Kernel gaps are detected, not inferred: every switch checks that its prev is
 * the CPU's last next and that rq->nr_switches moved by one (missed_switch),
 * and every pairing checks the task's switch count (struct runq_start), so no
 * wait is paired across a switch no event showed.
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
const volatile __u64 filter_tid_ticks;	/* -t: the thread's start, /proc ticks */
const volatile bool filter_cpus;
const volatile __u64 cpu_mask[RUNQ_MAX_CPUS / 64];
/* sched_switch has had a prev_state argument since 5.18 (core_fixes.bpf.h);
 * the loader reads the tracepoint's BTF prototype. */
const volatile bool switch_has_prev_state = true;
/* On-CPU slices (--oncpu) and PMU counters read over them (--counters). */
const volatile bool oncpu_on;
const volatile __u32 pmu_n;		/* counters, 0..LH_MAX_PMU */
const volatile __u32 pmu_ncpus;		/* runq_pmu_events index = counter * pmu_ncpus + cpu */
/* tp_btf: the state is in task storage (for the end-of-run sweep) */
const volatile bool use_task_storage;

/* total and per-CPU: index = (kind - 1) + RUNQ_NR_HISTS * buf */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2 * RUNQ_NR_HISTS);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct lh_hist_head) + 8 * LH_NSLOTS(0));
} runq_hist SEC(".maps");

/* per process / per thread; max_entries set by the loader (--max-keys). One
 * value for all CPUs (lh_hist_add_shared): per CPU, a host of many CPUs would
 * need value x CPUs per key, and the loader would read as many copies. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
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

/*
 * tp_btf: the pairing state of a task that has no task storage yet, in a slot
 * of this table (index: slot_of(); owner: ->task, its task_struct, with
 * ->birth_ns, its start_time). Making task storage (bpf_task_storage_get() with F_CREATE:
 * two allocations and two locks, kernel/bpf/bpf_local_storage.c) took ~10x a
 * wakeup in sched_wakeup_new, and most tasks of a fork-heavy load exit
 * before they need it. A task keeps its slot until its last switch
 * (prev_state TASK_DEAD), or moves to task storage at an event that starts a
 * wait once RUNQ_SLOT_ACC of its switch-ins are accounted; a slot owned by
 * another task, and PID 1's threads (whose switch-outs some kernels do not
 * trace: the slot would outlive them), get task storage at once. A slot whose
 * owner's last switch was missed is taken over when its task_struct is reused
 * (start time differs: counted stale_start if it held a start).
 */
#define RUNQ_SLOT_ACC 16
struct runq_start runq_slots[RUNQ_SLOTS] __attribute__((aligned(64)));
_Static_assert(sizeof(struct runq_start) == 64, "a slot is one cache line");
/* For -v: slots taken, states moved from a slot to task storage, and tasks
 * that got task storage at once (their slot was another's, or PID 1's thread). */
__u64 slot_taken, slot_moved, slot_busy;
/* Set by the loader while a sweep runs beside the programs (src/tools/runq.c
 * sweep()): a sweep holds a slot from its match to its last write, so no
 * slot changes hands meanwhile (none moves to task storage, a released one
 * stays its owner's). */
__u32 slot_sweeping;

/* raw_tp fallback only; max_entries set by the loader (--max-tasks) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);
	__type(value, struct runq_start);
} runq_pid_start SEC(".maps");

/* Lost waits charged to their task's key (per process / thread, key kind
 * RUNQ_NONE): a key's percentile bounds use these and the losses of no known
 * task; max_entries = --max-keys (full: left uncharged, so every key's). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 10240);
	__type(key, struct runq_hist_key);
	__type(value, __u64);
} runq_lost_keyed SEC(".maps");

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

/* What each CPU switched to last: one cache line per CPU, no map lookup. */
struct runq_cpu runq_cpus[RUNQ_MAX_CPUS];

/* The same for CPUs numbered RUNQ_MAX_CPUS and up (a map lookup each switch). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct runq_cpu);
} runq_cpu_high SEC(".maps");

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

/* Filters that need the task itself (its process or cgroup), not just its pid. */
#define TASK_FILTERS (filter_tgid || filter_cgroup_id)

/* Is t running on a CPU right now? (task_struct::on_cpu exists with CONFIG_SMP) */
static __always_inline bool task_on_cpu(struct task_struct *t, bool btf)
{
	if (!bpf_core_field_exists(t->on_cpu))
		return false;
	return TREAD(btf, t, on_cpu);
}

/*
 * Fields f1 and f2 of task t into v[0] and v[1] (of v's element type) with
 * probe reads: one read where CO-RE puts f2 right after f1 (so in every
 * kernel for the pairs read here: nvcsw/nivcsw, pid/tgid), else two; zeros
 * when the one read fails.
 */
#define TASK_READ_PAIR(v, t, f1, f2)                                           \
	do {                                                                   \
		if (bpf_core_field_offset((t)->f2) ==                          \
		    bpf_core_field_offset((t)->f1) + sizeof((v)[0])) {         \
			if (bpf_core_read((v), 2 * sizeof((v)[0]), &(t)->f1))  \
				(v)[0] = (v)[1] = 0;                           \
		} else {                                                       \
			(v)[0] = BPF_CORE_READ(t, f1);                         \
			(v)[1] = BPF_CORE_READ(t, f2);                         \
		}                                                              \
	} while (0)

/* Switches of t so far (nvcsw + nivcsw): __schedule() counts one before tracing
 * sched_switch, so at a switch-out it includes that one. */
static __always_inline __u64 switch_count(struct task_struct *t, bool btf)
{
	unsigned long v[2];

	if (btf)
		return t->nvcsw + t->nivcsw;
	TASK_READ_PAIR(v, t, nvcsw, nivcsw);
	return v[0] + v[1];
}

/* t's pid (returned) and tgid. */
static __always_inline __u32 task_ids(struct task_struct *t, bool btf, __u32 *tgid)
{
	__u32 v[2];

	if (btf) {
		*tgid = t->tgid;
		return t->pid;
	}
	TASK_READ_PAIR(v, t, pid, tgid);
	*tgid = v[1];
	return v[0];
}

/* Was t born after tracing began (then every switch of it came while tracing)? */
static __always_inline bool born_in_trace(struct task_struct *t, bool btf)
{
	return TREAD(btf, t, start_time) > lh_start_ns;
}

/*
 * This CPU's runqueue, reached from the task leaving the CPU: its
 * sched_entity's cfs_rq (set for every task, whatever its class, with
 * CONFIG_FAIR_GROUP_SCHED), whose rq is the CPU's for good. tp_btf loads it
 * directly (a typed pointer); raw_tp reads it once per CPU with probe reads
 * and keeps it. NULL without that option.
 */
static __always_inline struct rq *cpu_rq_of(struct runq_cpu *pc, struct task_struct *prev,
					    bool btf)
{
	if (!bpf_core_field_exists(prev->se.cfs_rq))
		return NULL;
	if (btf)
		return prev->se.cfs_rq->rq;
	if (!pc->rq)
		pc->rq = (__u64)BPF_CORE_READ(prev, se.cfs_rq, rq);
	return (struct rq *)pc->rq;
}

/* This CPU's entry of runq_cpus (runq_cpu_high past RUNQ_MAX_CPUS). */
static __always_inline struct runq_cpu *this_cpu(void)
{
	__u32 cpu = bpf_get_smp_processor_id(), zero = 0;

	if (cpu >= RUNQ_MAX_CPUS)
		return bpf_map_lookup_elem(&runq_cpu_high, &zero);
	return &runq_cpus[cpu];
}

static __always_inline bool task_selected(struct task_struct *t, __u32 tid, __u32 tgid)
{
	if (filter_tgid && (tgid != filter_tgid ||
			    !lh_born_at(BPF_CORE_READ(t, group_leader), filter_tgid_ticks)))
		return false;
	if (filter_tid && (tid != filter_tid || !lh_born_at(t, filter_tid_ticks)))
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

/* The pid-keyed entry of tid, created when create is set (NULL when full: counted). */
static __always_inline struct runq_start *pid_start(__u32 tid, bool create, struct lh_counters *c)
{
	struct runq_start *s = bpf_map_lookup_elem(&runq_pid_start, &tid), init = {};

	if (s || !create)
		return s;
	return lh_map_add(&runq_pid_start, &tid, &init, c, LH_LOSS_START_E2BIG, NULL);
}

/*
 * t's slot of runq_slots (tp_btf only): a hash of its task_struct's address,
 * which an exec from a thread keeps (it changes the pid and start time), and
 * which the slab allocator hands out again soon after a task is freed (the
 * slot is warm then). The typed pointer less the table's address is a number
 * to the verifier (pointer - pointer: an unknown scalar, allowed with
 * CAP_PERFMON, kernel/bpf/verifier.c adjust_reg_min_max_vals()); storing t in
 * a slot and comparing it there need the same capability, which lathist
 * needs anyway.
 */
static __always_inline struct runq_start *slot_of(struct task_struct *t)
{
	__u64 h = (__u64)t, base = (__u64)&runq_slots[0];

	asm volatile("%0 -= %1" : "+r"(h) : "r"(base));
	h = (h >> 6) * 0x9E3779B97F4A7C15ULL;	/* Fibonacci hashing (Knuth, TAOCP 6.4) */
	return &runq_slots[(h >> (64 - RUNQ_SLOT_BITS)) & (RUNQ_SLOTS - 1)];
}

/* Empty slot s for its owner, born at birth; birth_ns, its match, is
 * published last (an exchange: fully ordered, for the sweeps on other CPUs). */
static __always_inline void slot_reset(struct runq_start *s, __u64 birth)
{
	s->ts = 0;
	s->nsw = 0;
	s->acc = 0;
	s->kind = 0;
	s->cpu = 0;
	s->flags = 0;
	s->sweep_acc = 0;
	s->dropped = 0;
	__sync_lock_test_and_set(&s->birth_ns, birth);
}

/*
 * Does slot s hold the state of t, born at birth? Its start time or a later
 * one: an exec from a thread gives the thread its leader's (older) start time
 * (fs/exec.c de_thread()), and a task born later at the same address is
 * another task, which an older one cannot be while it lives.
 */
static __always_inline bool slot_owns(struct runq_start *s, struct task_struct *t, __u64 birth)
{
	__u64 b = s->birth_ns;

	return s->task == (__u64)t && b != RUNQ_SLOT_RELEASED && birth <= b;
}

/* t's slot if it holds t's state (for the sweeps: they change no owner). */
static __always_inline struct runq_start *slot_match(struct task_struct *t)
{
	struct runq_start *s = slot_of(t);

	return slot_owns(s, t, t->start_time) ? s : NULL;
}

/* t's last switch, or its move to task storage: its slot is free again,
 * unless a sweep may hold it (RUNQ_SLOT_RELEASED: taken again after). */
static __always_inline void slot_release(struct task_struct *t)
{
	struct runq_start *s = slot_of(t);

	if (s->task != (__u64)t)
		return;
	if (slot_sweeping) {
		s->birth_ns = RUNQ_SLOT_RELEASED;
		return;
	}
	s->birth_ns = 0;
	__sync_lock_test_and_set(&s->task, 0);	/* after birth_ns, for a claim elsewhere */
}

/*
 * t's state in its slot; a free slot is taken when create is set. NULL when
 * the slot is another task's (or t is one of PID 1's threads). A slot left by
 * a task whose task_struct t now has (that task's last switch was missed) is
 * emptied, and its start counted stale_start.
 */
static __always_inline struct runq_start *slot_get(struct task_struct *t, bool create,
						   struct lh_counters *c)
{
	struct runq_start *s = slot_of(t);
	__u64 birth = t->start_time, owner = s->task;

	if (owner == (__u64)t) {
		if (slot_owns(s, t, birth)) {
			if (s->birth_ns != birth)	/* an exec from a thread: its leader's */
				s->birth_ns = birth;
			return s;
		}
		if (s->ts && s->birth_ns != RUNQ_SLOT_RELEASED)
			c->v[LH_LOSS_STALE]++;
	} else if (!create || t->tgid == 1) {
		return NULL;
	} else if (!owner) {
		if (__sync_val_compare_and_swap(&s->task, 0, (__u64)t) != 0)
			return NULL;
	} else {
		/* released while a sweep ran: birth_ns goes to 0 first, so that
		 * no other claim sees a free slot meanwhile */
		if (slot_sweeping || s->birth_ns != RUNQ_SLOT_RELEASED ||
		    __sync_val_compare_and_swap(&s->birth_ns, RUNQ_SLOT_RELEASED, 0) !=
			    RUNQ_SLOT_RELEASED)
			return NULL;
		__sync_lock_test_and_set(&s->task, (__u64)t);
	}
	__sync_fetch_and_add(&slot_taken, 1);
	slot_reset(s, birth);
	return s;
}

/*
 * tp_btf: t's state, in its task storage or its slot (see runq_slots); made
 * when create is set. NULL when there is none or none could be made (counted).
 */
static __always_inline struct runq_start *btf_state(struct task_struct *t, bool create,
						    struct lh_counters *c)
{
	struct runq_start *s = bpf_task_storage_get(&runq_task_start, t, 0, 0), *slot;

	if (s)
		return s;
	slot = slot_get(t, create, c);
	/* a task that lives on moves to task storage: the slot is for the next
	 * (not while a sweep may hold the slot) */
	if (slot && (!create || !(slot->flags & RUNQ_ACC_OK) || slot->acc < RUNQ_SLOT_ACC ||
		     slot_sweeping))
		return slot;
	if (!create)
		return NULL;
	s = bpf_task_storage_get(&runq_task_start, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!s) {
		if (slot)
			return slot;
		c->v[LH_LOSS_STORAGE]++;
		return NULL;
	}
	if (slot) {
		*s = *slot;
		slot_release(t);
		__sync_fetch_and_add(&slot_moved, 1);
	} else {
		__sync_fetch_and_add(&slot_busy, 1);
	}
	return s;
}

/*
 * The task's pairing state; created when create is set. NULL when there is
 * none or it could not be created (counted). A pid entry left by another task
 * with the same pid (its exit was missed; or an exec from a thread, which
 * gives it the leader's pid and start time: fs/exec.c de_thread()) is emptied
 * and counted.
 */
static __always_inline struct runq_start *start_get(struct task_struct *t, __u32 tid,
						    bool btf, bool create,
						    struct lh_counters *c)
{
	struct runq_start *s;
	__u64 birth;

	if (btf)
		return btf_state(t, create, c);
	birth = BPF_CORE_READ(t, start_time);
	s = pid_start(tid, create, c);
	if (!s)
		return NULL;
	if ((s->birth_ns && s->birth_ns != birth) || (s->task && s->task != (__u64)t)) {
		/* never pair across tasks */
		bool taken = s->birth_ns == birth;

		if (s->ts)
			c->v[LH_LOSS_STALE]++;
		__builtin_memset(s, 0, sizeof(*s));
		if (taken)
			s->flags = RUNQ_TAKEN_OVER;
	}
	s->birth_ns = birth;
	s->task = (__u64)t;
	return s;
}

/* A sweep's view of t's state, made when create: its task storage on tp_btf,
 * its pid entry (of this very task) on raw_tp. Not start_get(): a sweep
 * runs beside the programs and must not take over another task's pid entry
 * (its stale start is counted at that pid's next event) nor count a failure
 * (no event was lost; full map: start_e2big is for starts). */
static __always_inline struct runq_start *sweep_state(struct task_struct *t, __u32 tid,
						      bool create)
{
	struct runq_start *s, init = {};

	if (use_task_storage) {
		s = bpf_task_storage_get(&runq_task_start, t, 0, 0);
		if (s || (s = slot_match(t)) || !create)
			return s;
		return bpf_task_storage_get(&runq_task_start, t, 0,
					    BPF_LOCAL_STORAGE_GET_F_CREATE);
	}
	s = bpf_map_lookup_elem(&runq_pid_start, &tid);
	if (s && s->task && s->task != (__u64)t)
		return NULL;
	if (s || !create)
		return s;
	init.birth_ns = BPF_CORE_READ(t, start_time);
	init.task = (__u64)t;
	return lh_map_add(&runq_pid_start, &tid, &init, NULL, 0, NULL);
}

/* The histogram key of task t for the grouping (process or thread). */
static __always_inline void task_key(struct runq_hist_key *key, struct task_struct *t, __u32 tid,
				     __u32 tgid, __u32 kind, __u32 buf, bool btf)
{
	struct task_struct *leader;

	key->kind = kind;
	key->buf = buf;
	if (group == RUNQ_GROUP_CGROUP) {
		key->cgroup_id = lh_task_cgroup_id(t);
		return;
	}
	key->tgid = tgid;
	if (group == RUNQ_GROUP_THREAD) {
		key->tid = tid;
		key->birth_ns = TREAD(btf, t, start_time);
	} else {
		leader = TREAD(btf, t, group_leader);
		key->birth_ns = BPF_CORE_READ(leader, start_time);
	}
}

/*
 * Charge n lost waits to t's key (per process / thread): that key's
 * percentile bounds use them, and the other keys' do not. A full map leaves
 * them uncharged, so every key's bounds use them.
 */
static __always_inline void charge_key(struct task_struct *t, __u64 n, bool btf, __u32 buf)
{
	static const __u64 zero;
	struct runq_hist_key key = {};
	__u32 tid, tgid;
	__u64 *v;

	if (!n || (group != RUNQ_GROUP_PROCESS && group != RUNQ_GROUP_THREAD))
		return;
	tid = task_ids(t, btf, &tgid);
	task_key(&key, t, tid, tgid, RUNQ_NONE, buf, btf);
	v = bpf_map_lookup_elem(&runq_lost_keyed, &key);
	if (!v)		/* full: left uncharged, not a loss of an event */
		v = lh_map_add(&runq_lost_keyed, &key, &zero, NULL, 0, NULL);
	if (v)		/* atomic: the end sweep charges beside the programs */
		__sync_fetch_and_add(v, n);
}

/*
 * Advance a switch-in count (acc) to n if it is below: how many switch-ins
 * this claimed. Atomic against the end sweep, which claims the same way: no
 * switch-in is counted twice, and a count is never lowered.
 */
static __always_inline __u64 acc_claim(__u64 *acc, __u64 n)
{
	for (int i = 0; i < 4; i++) {
		__u64 old = *(volatile __u64 *)acc;

		if (n <= old)
			return 0;
		if (__sync_val_compare_and_swap(acc, old, n) == old)
			return n - old;
	}
	return 0;
}

/*
 * Account t's switch-ins up to n (how many it has had so far): those after
 * s->acc were shown by no event. Those that ended a start dropped since
 * (s->dropped) are counted where it was dropped (missed_switch_in), the
 * others here (missed_wait). The first time, only a task born while tracing is
 * known to have had no switch-in before; for another one, base is how many of
 * its n switch-ins came before tracing or are counted already.
 */
static __always_inline void account(struct runq_start *s, struct task_struct *t, __u64 n,
				    __u64 base, bool btf, struct lh_counters *c, __u32 buf)
{
	__u64 unseen, dropped, swept;

	s->flags |= RUNQ_SEEN;
	if (!(s->flags & RUNQ_ACC_OK)) {
		/* the start sweep's count (taken: the end sweep settles it no
		 * more); else under --cgroup a task may have joined since its
		 * birth, and a pid taken over from another task came with that
		 * task's start time */
		swept = s->sweep_acc ? __sync_lock_test_and_set(&s->sweep_acc, 0) : 0;
		if (swept)
			s->acc = swept - 1;
		else
			s->acc = born_in_trace(t, btf) && !filter_cgroup_id &&
				 !(s->flags & RUNQ_TAKEN_OVER) ? 0 : base;
		/* acc before RUNQ_ACC_OK: the end sweep reads them the other way */
		barrier();
		s->flags |= RUNQ_ACC_OK;
	}
	unseen = acc_claim(&s->acc, n);
	if (!unseen && !s->dropped)	/* the common case: nothing unseen */
		return;
	dropped = __sync_lock_test_and_set(&s->dropped, 0);
	unseen = unseen > dropped ? unseen - dropped : 0;
	if (unseen) {
		c->v[LH_LOSS_MISSED_WAIT] += unseen;
		charge_key(t, unseen, btf, buf);
	}
}

/* Drop s's start: the task t was switched in since, with no event. */
static __always_inline void start_drop(struct runq_start *s, struct task_struct *t, bool btf,
				       struct lh_counters *c, __u32 buf)
{
	c->v[LH_LOSS_MISSED_SWITCH_IN]++;
	charge_key(t, 1, btf, buf);
	__sync_fetch_and_add(&s->dropped, 1);
	s->ts = 0;
}

/* Record a start of kind at now: the task's switch count then is nsw. */
static __always_inline void start_set(struct runq_start *s, __u32 kind, __u64 now, __u64 nsw,
				      struct lh_counters *c)
{
	s->ts = now;
	s->kind = kind;
	s->cpu = bpf_get_smp_processor_id();
	s->nsw = nsw;
	c->v[kind == RUNQ_WAKEUP ? LH_EV_STARTS_WAKEUP : LH_EV_STARTS_PREEMPT]++;
}

static __always_inline int on_wakeup(struct task_struct *p, bool btf)
{
	struct runq_start *s;
	__u32 tid, tgid, buf;
	struct lh_counters *c = lh_counters(&buf);
	__u64 n;

	if (!c)
		return 0;
	tid = task_ids(p, btf, &tgid);
	if (!tid)
		return 0;
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
	n = switch_count(p, btf);
	if (s->ts) {
		/* preempted and still queued (not switched since): that wait goes on */
		if (s->kind == RUNQ_PREEMPT && s->nsw == n) {
			c->v[LH_EV_WAKEUP_QUEUED]++;
			return 0;
		}
		/* the task ran since the start: its switch-in was not seen; else a
		 * second start of one wait */
		if (s->nsw != n)
			start_drop(s, p, btf, c, buf);
		else
			c->v[LH_LOSS_OVERWRITTEN]++;
	}
	account(s, p, n, n, btf, c, buf);
	start_set(s, RUNQ_WAKEUP, bpf_ktime_get_ns(), n, c);
	return 0;
}

/* A per-process/per-thread key's name, taken once: the thread's, or its leader's. */
static __always_inline void key_comm(char comm[16], __u64 *comm_ns, struct task_struct *t)
{
	if (comm[0])
		return;
	if (comm_ns)	/* when: the loader shows a task's earliest name */
		*comm_ns = bpf_ktime_get_ns();
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
	if (group != RUNQ_GROUP_CGROUP)		/* a cgroup's name is its path: the loader's */
		key_comm(h->comm, &h->comm_ns, t);
	lh_hist_add_shared(h, delta);
	return true;
}

/*
 * Count what the kernel switched on this CPU without an event since its last
 * sched_switch event (missed_switch): rq->nr_switches moved by more than one,
 * or this prev is not that event's next. Returns true when nothing was missed.
 */
static __always_inline bool cpu_continuity(struct runq_cpu *pc, struct rq *rq,
					   struct task_struct *prev, struct task_struct *next,
					   bool btf, struct lh_counters *c)
{
	__u64 nr = rq ? TREAD(btf, rq, nr_switches) : 0, missed = 0;

	c->v[LH_EV_SWITCHES]++;
	if (pc->known) {
		if (nr && pc->nr_switches && nr > pc->nr_switches)
			missed = nr - pc->nr_switches - 1;
		if (!missed && (__u64)prev != pc->task)
			missed = 1;
		if (missed)
			c->v[LH_GAP_MISSED_SWITCH] += missed;
	}
	pc->nr_switches = nr;
	pc->task = (__u64)next;		/* a number here (CAP_PERFMON, as slot_of()) */
	pc->known = 1;
	return !missed;
}

/*
 * What prev's switch-out (pid ptid) starts or accounts: a runnable prev starts
 * a preemption wait; a prev whose switch-in no event showed (cont false) has
 * its switch-ins accounted now. Returns the time read, or 0.
 */
static __always_inline __u64 switch_out_state(struct task_struct *prev, __u32 ptid, __u32 tgid,
					      bool runnable, bool cont, bool btf,
					      struct lh_counters *c, __u32 buf)
{
	struct runq_start *s;
	__u64 now, n;

	if (!runnable && cont)		/* going to sleep: its wakeup starts the next wait */
		return 0;
	if (!task_selected(prev, ptid, tgid)) {
		if (runnable)
			c->v[LH_EV_FILTERED]++;
		return 0;
	}
	s = start_get(prev, ptid, btf, true, c);
	if (!s)
		return 0;
	n = switch_count(prev, btf);
	/* it ran: a start it still has lost its switch-in */
	if (s->ts)
		start_drop(s, prev, btf, c, buf);
	/* this slice's switch-in (its n-th) was not seen when cont is false */
	account(s, prev, n, cont || !n ? n : n - 1, btf, c, buf);
	if (!runnable)
		return 0;
	now = bpf_ktime_get_ns();
	start_set(s, RUNQ_PREEMPT, now, n, c);
	return now;
}

/* prev (pid ptid) leaves the CPU (switch_out_state()). Returns the time read, or 0. */
static __always_inline __u64 on_switch_out(bool preempt, struct task_struct *prev, __u32 ptid,
					   __u32 tgid, const __u64 *args, bool cont, bool btf,
					   struct lh_counters *c, __u32 buf)
{
	struct task_struct *exec;
	unsigned int prev_state;
	bool runnable, dead;
	__u64 now;

	if (!ptid)		/* the idle task is never paired */
		return 0;
	/* (bool preempt, prev, next[, unsigned int prev_state]): core_fixes.bpf.h */
	prev_state = sched_switch_prev_state(args, switch_has_prev_state, prev);
	runnable = preempt || prev_state == TASK_RUNNING;
	/* its last switch (sched_process_exit accounted what came before): a
	 * preemption after that, whose switch-in no event showed, is accounted
	 * here; then its pid entry goes; task storage goes with the task, a
	 * slot is freed here */
	dead = !runnable && (prev_state & TASK_DEAD);
	/* raw_tp: a leader killed by an exec from one of its threads, before that
	 * thread takes its pid: the entry is the thread's next (start_get: taken
	 * over), so that its switch-ins so far are not missed waits */
	if (dead && !btf && ptid == tgid && (exec = signal_exec_task(prev)) && exec != prev)
		return 0;
	now = switch_out_state(prev, ptid, tgid, runnable, cont, btf, c, buf);
	if (dead && btf)
		slot_release(prev);
	else if (dead)
		bpf_map_delete_elem(&runq_pid_start, &ptid);
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

/* The record of next's wait, read at its switch-in (prev: pid ptid). */
static __always_inline void record_wait(struct task_struct *prev, __u32 ptid,
					struct task_struct *next, __u32 tid, __u32 tgid,
					__u32 kind, __u32 start_cpu, __u64 now, __u64 delta,
					struct lh_counters *c)
{
	struct runq_record *r = record_begin(tid, tgid, kind, start_cpu, ptid, now, delta, c);

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

/* Was a sched_info stamp (rq clock; 0: not stamped) taken before tracing
 * began, by the runqueue clock now? */
static __always_inline bool stamped_before_trace(__u64 stamp, struct rq *rq, __u64 now, bool btf)
{
	__u64 clock = TREAD(btf, rq, clock);

	return stamp && clock >= stamp && clock - stamp > now - lh_start_ns;
}

/*
 * Did next's wait begin before tracing? Its sched_info.last_queued is when it
 * was queued (rq clock, CONFIG_SCHED_INFO; reset by a migration, so a wait can
 * look younger, never older; 0 after a preemption in a sleep state, which
 * tells nothing: no): its age is the runqueue clock now minus that. Without
 * those fields, only a task born before tracing may have waited since.
 */
static __always_inline bool waited_since_before(struct task_struct *next, struct rq *rq,
						__u64 now, bool btf)
{
	/* 0: not stamped (queued by a preemption in a sleep state): unknown */
	if (rq && bpf_core_field_exists(next->sched_info.last_queued))
		return stamped_before_trace(TREAD(btf, next, sched_info.last_queued), rq, now, btf);
	return !born_in_trace(next, btf);
}

/*
 * Account next's switch-ins up to and with this one (s may be NULL: no
 * state); then whether this end counts: not when it is on a CPU --cpus
 * leaves out (filtered).
 */
static __always_inline bool end_counts(struct runq_start *s, struct task_struct *next, __u64 nsw,
				       bool btf, struct lh_counters *c, __u32 buf)
{
	if (s) {
		account(s, next, nsw, nsw, btf, c, buf);
		s->acc = nsw + 1;
	}
	if (!cpu_selected(bpf_get_smp_processor_id())) {
		c->v[LH_EV_FILTERED]++;
		return false;
	}
	c->v[LH_EV_ENDS]++;
	return true;
}

/*
 * next's first switch-in seen since tracing began, with no start: state is
 * made for it (s, when there is some already) and its switch-ins so far are
 * the baseline; the wait began before tracing or its start was missed.
 */
static __always_inline void first_switch_in(struct task_struct *next, __u32 tid, __u64 nsw,
					    struct runq_start *s, struct rq *rq, __u64 now,
					    bool btf, struct lh_counters *c, __u32 buf)
{
	if (!s)
		s = start_get(next, tid, btf, true, c);
	if (!end_counts(s, next, nsw, btf, c, buf))
		return;
	/* no state (a failure, counted) tells nothing: a loss */
	if (s && waited_since_before(next, rq, now, btf)) {
		c->v[LH_EV_BEFORE_TRACE]++;
		return;
	}
	c->v[LH_LOSS_UNPAIRED]++;
	charge_key(next, 1, btf, buf);
}

/* next gets the CPU from prev (pid ptid): the end of its wait. */
static __always_inline void on_switch_in(struct task_struct *prev, __u32 ptid,
					 struct task_struct *next, const struct next_task *n,
					 struct rq *rq, __u64 now, bool btf, struct lh_counters *c,
					 __u32 buf)
{
	__u32 tid = n->tid, tgid = n->tgid, kind, start_cpu;
	struct runq_start *s;
	bool moved, ok;
	__u64 ts, delta, nsw;

	if (!tid)
		return;
	if (!n->selected) {
		/* a task with state left --cgroup: this switch-in is filtered,
		 * not unseen */
		if (filter_cgroup_id) {
			s = start_get(next, tid, btf, false, c);
			if (s) {
				s->ts = 0;
				s->acc = switch_count(next, btf) + 1;
				s->dropped = 0;
			}
		}
		c->v[LH_EV_FILTERED]++;
		return;
	}
	s = start_get(next, tid, btf, false, c);
	nsw = switch_count(next, btf);		/* its switch-ins before this one */
	if (!now)
		now = bpf_ktime_get_ns();
	/* no event of it seen since tracing began */
	if (!s || (!s->ts && !(s->flags & RUNQ_SEEN))) {
		first_switch_in(next, tid, nsw, s, rq, now, btf, c, buf);
		return;
	}
	ts = s->ts;
	kind = s->kind;
	start_cpu = s->cpu;
	/* a start pairs only with the task's next switch-in: the count moved, so
	 * it was switched in since, with no event (this switch-in's own start
	 * was not seen either) */
	moved = ts && s->nsw != nsw;
	if (moved)
		start_drop(s, next, btf, c, buf);
	s->ts = 0;
	if (!end_counts(s, next, nsw, btf, c, buf))
		return;
	if (!ts || moved || (kind != RUNQ_WAKEUP && kind != RUNQ_PREEMPT)) {
		c->v[LH_LOSS_UNPAIRED]++;
		charge_key(next, 1, btf, buf);
		return;
	}
	/* paired means in a histogram: a full map counts as hist_map_full instead.
	 * A delta that cannot be a wait and a wait the map refuses are this task's
	 * key's losses, as the unseen ones are (one call site: one inlined copy) */
	ok = lh_delta(c, ts, now, &delta);
	if (ok && hist_record(next, tid, tgid, kind, delta, btf, c, buf))
		c->v[LH_EV_PAIRED]++;
	else
		charge_key(next, 1, btf, buf);
	if (ok)
		record_wait(prev, ptid, next, tid, tgid, kind, start_cpu, now, delta, c);
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
	return lh_map_add(&runq_pmu_keyed, &key, &zero, c, LH_LOSS_HIST_E2BIG, NULL);
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
 * The slice ending on this CPU (prev's, since sl->ts) goes to the oncpu
 * histogram; with --counters its key's counter sums get its time and count.
 * Returns those sums (the slice's counter deltas go there), NULL when there
 * are none or the slice was not recorded (counters cover exactly the slices
 * in the oncpu histogram).
 */
static __always_inline struct lh_pmu_val *slice_end(struct task_struct *prev, __u32 ptid,
						    __u32 tgid, const struct runq_slice *sl,
						    __u64 now, bool btf, struct lh_counters *c,
						    __u32 buf)
{
	struct lh_pmu_val *pv;
	__u64 delta;

	if (!lh_delta(c, sl->ts, now, &delta))
		return NULL;
	if (!hist_record(prev, ptid, tgid, RUNQ_ONCPU, delta, btf, c, buf))
		return NULL;
	c->v[LH_EV_SLICES]++;
	if (!pmu_n || !(pv = pmu_val(prev, ptid, tgid, btf, c, buf)))
		return NULL;
	if (group == RUNQ_GROUP_THREAD || group == RUNQ_GROUP_PROCESS)
		key_comm(pv->comm, NULL, prev);
	pv->slices++;
	pv->oncpu_ns += delta;
	return pv;
}

/*
 * Each counter read once on this CPU (bpf_perf_event_read_value: counter,
 * time_enabled, time_running): its delta over the ending slice goes to pv
 * (NULL: none), and with start its value is the starting slice's base.
 * Returns the counters that could not be read (bit i: counter i).
 */
static __always_inline __u32 slice_counters(struct runq_slice *sl, struct lh_pmu_val *pv,
					    bool start, __u32 cpu, struct lh_counters *c)
{
	struct bpf_perf_event_value cur;
	bool missing = false;
	__u32 bad = 0;
	int i;

	/* one counter at a time (one value on the stack, not 8: the raw_tp
	 * program's stack with its global slice function stays under 512 bytes) */
	#pragma unroll
	for (i = 0; i < LH_MAX_PMU; i++) {
		long err;

		if (i >= pmu_n)
			break;
		err = bpf_perf_event_read_value(&runq_pmu_events, i * pmu_ncpus + cpu, &cur,
						sizeof(cur));
		if (err) {
			count_pmu_err(c, err);
			bad |= 1U << i;
		}
		if (pv && (err || (sl->bad & (1U << i)))) {
			missing = true;
		} else if (pv) {
			__u64 en = cur.enabled - sl->v[i].enabled, run = cur.running - sl->v[i].running;

			pv->c[i].raw += cur.counter - sl->v[i].counter;
			pv->c[i].enabled += en;
			pv->c[i].running += run;
			if (run < en)
				pv->c[i].multiplexed++;
		}
		if (start) {
			sl->v[i].counter = cur.counter;
			sl->v[i].enabled = cur.enabled;
			sl->v[i].running = cur.running;
		}
	}
	if (missing)
		pv->read_failed++;
	return bad;
}

/*
 * On-CPU slices: the slice that ends on this CPU belongs to prev, the one that
 * begins to next. It ends only where this CPU's switches were all seen (cont):
 * else it ran across a switch no event showed and is dropped. A slice is
 * recorded only for a selected task on a selected CPU. Counters are read once
 * per switch: the end of one slice is the start of the next.
 */
static __always_inline void on_slice(struct task_struct *prev, __u32 ptid, __u32 ptgid,
				     const struct next_task *n, struct runq_slice *sl, bool cont,
				     __u64 now, bool btf, struct lh_counters *c, __u32 buf)
{
	__u32 cpu = bpf_get_smp_processor_id(), bad = 0;
	struct lh_pmu_val *pv = NULL;
	bool end = sl->tid && cont, start = n->tid && n->selected && cpu_selected(cpu);

	if (sl->tid && !end)
		c->v[LH_LOSS_SLICE_UNPAIRED]++;
	if (end)
		pv = slice_end(prev, ptid, ptgid, sl, now, btf, c, buf);
	if (end || start)
		bad = slice_counters(sl, pv, start, cpu, c);
	sl->tid = start ? n->tid : 0;
	if (start) {
		sl->ts = now;
		sl->bad = bad;
	}
}

/*
 * The slice of the probe-read path (raw_tp) in a global function:
 * the verifier checks it once on its own (inlined into a sched_switch
 * program with 8 counters it went past the 1M-instruction limit). prev is
 * the task leaving, prev_ids its tgid << 32 | pid; flags: bit 0 next is
 * selected, bit 1 cont. Returns 0.
 */
__noinline int slice_probe(__u64 prev, __u64 prev_ids, __u32 ntid, __u32 flags, __u64 now)
{
	struct next_task n = { .tid = ntid, .selected = flags & 1 };
	__u32 buf, zero = 0;
	struct lh_counters *c = lh_counters(&buf);
	struct runq_slice *sl = bpf_map_lookup_elem(&runq_slice, &zero);

	if (c && sl)
		on_slice((struct task_struct *)prev, (__u32)prev_ids, (__u32)(prev_ids >> 32), &n,
			 sl, flags & 2, now, false, c, buf);
	return 0;
}

/*
 * One sched_switch, from either attach type: prev leaves this CPU, next gets
 * it; args: the tracepoint's arguments (for prev_state, core_fixes.bpf.h).
 */
static __always_inline int on_switch(bool preempt, struct task_struct *prev,
				     struct task_struct *next, const __u64 *args, bool btf)
{
	struct runq_cpu *pc = this_cpu();
	__u32 buf, zero = 0, ptid, ptgid;
	struct lh_counters *c = lh_counters(&buf);
	struct next_task n;
	struct runq_slice *sl;
	struct rq *rq;
	bool cont;
	__u64 now;

	if (!c || !pc)
		return 0;
	ptid = task_ids(prev, btf, &ptgid);
	n.tid = task_ids(next, btf, &n.tgid);
	rq = cpu_rq_of(pc, prev, btf);
	cont = cpu_continuity(pc, rq, prev, next, btf, c);
	now = on_switch_out(preempt, prev, ptid, ptgid, args, cont, btf, c, buf);
	if (oncpu_on && !now)
		now = bpf_ktime_get_ns();	/* one clock read for the wait and the slice */
	n.selected = n.tid && task_selected(next, n.tid, n.tgid);
	on_switch_in(prev, ptid, next, &n, rq, now, btf, c, buf);
	if (!oncpu_on)		/* on_slice needs now: set above */
		return 0;
	if (!btf)
		slice_probe((__u64)prev, (__u64)ptgid << 32 | ptid, n.tid,
			    n.selected | (cont << 1), now);
	else if ((sl = bpf_map_lookup_elem(&runq_slice, &zero)))
		on_slice(prev, ptid, ptgid, &n, sl, cont, now, btf, c, buf);
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

/* (bool preempt, prev, next[, unsigned int prev_state]): core_fixes.bpf.h */
SEC("tp_btf/sched_switch")
int runq_switch_btf(u64 *ctx)
{
	return on_switch((bool)ctx[0], (void *)ctx[1], (void *)ctx[2], ctx, true);
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
	return on_switch((bool)ctx->args[0], (void *)ctx->args[1], (void *)ctx->args[2],
			 ctx->args, false);
}

/*
 * A task exits while running, so a start still recorded means its switch-in
 * was never seen: count it, and account its switch-ins (this run is one). A
 * pid entry stays until the task's last switch (prev_state TASK_DEAD), as
 * it may be preempted once more; if that switch is missed, the next task with
 * the pid finds its birth time different (start_get). Task storage frees
 * itself with the task.
 */
static __always_inline int on_exit(struct task_struct *p, bool btf)
{
	__u32 tgid, tid = task_ids(p, btf, &tgid), buf;
	struct lh_counters *c = lh_counters(&buf);
	struct runq_start *s;
	__u64 n;

	if (c && tid && task_selected(p, tid, tgid)) {
		s = start_get(p, tid, btf, false, c);
		if (s) {
			n = switch_count(p, btf) + 1;
			if (s->ts)
				start_drop(s, p, btf, c, buf);
			account(s, p, n, n, btf, c, buf);
		}
	}
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
 * ---- The sweeps: task iterators the loader runs with the programs running,
 * once just after tracing begins and once just before its last read ----
 */

/*
 * t's switch-ins so far, read in a sweep while it may be switching on another
 * CPU: its switch count, plus one while it runs. False when that cannot be
 * read consistently: the count moved between two reads, or it is on a CPU
 * whose rq->curr is not t (in __schedule() the count moves and rq->curr
 * changes before sched_switch, on_cpu is cleared only in
 * finish_task_switch()): its own events account it.
 */
static __always_inline bool sweep_switch_ins(struct task_struct *t, __u64 *n, bool *running)
{
	__u64 before = switch_count(t, false), after;
	struct rq *rq;

	*running = task_on_cpu(t, false);
	after = switch_count(t, false);
	if (before != after)
		return false;
	if (*running) {
		rq = bpf_core_field_exists(t->se.cfs_rq) ? BPF_CORE_READ(t, se.cfs_rq, rq) : NULL;
		if (!rq || BPF_CORE_READ(rq, curr) != t)
			return false;
	}
	*n = after + *running;
	return true;
}

/* The sweep's task if it is traced: its pid in *tid; NULL otherwise. */
static __always_inline struct task_struct *sweep_task(struct bpf_iter__task *ctx, __u32 *tid)
{
	struct task_struct *t = ctx->task;
	__u32 tgid;

	if (!t)
		return NULL;
	*tid = task_ids(t, false, &tgid);
	if (!*tid || !task_selected(t, *tid, tgid))
		return NULL;
	return t;
}

/*
 * The first gives every traced task a baseline (sweep_acc, taken as acc at its
 * first event seen), so that the switch-ins of a task none of whose events is
 * seen for a while (PID 1's threads on some VMs) are still counted. On the
 * pid-keyed raw_tp it does so only under -p, -t or --cgroup: the map
 * (--max-tasks) is not filled with every task of the system.
 */
/* The start sweep's first run, before tracing is enabled: task storage made
 * for every traced task and what failed (process context, where the BPF
 * allocator refills its caches between tasks; a program making it at each
 * task's first event, inside the scheduler, failed for some of 10,000 new
 * keys at once). Written by that sweep only. */
__u64 sweep_made, sweep_make_failed;

SEC("iter/task")
int runq_sweep_start(struct bpf_iter__task *ctx)
{
	struct runq_start *s;
	struct task_struct *t;
	__u32 tid, buf;
	struct lh_counters *c = lh_counters(&buf);
	bool running;
	__u64 n;

	if (!c) {		/* not enabled yet: make the storage, no baseline */
		if (use_task_storage && (t = sweep_task(ctx, &tid))) {
			if (sweep_state(t, tid, true))
				sweep_made++;
			else
				sweep_make_failed++;
		}
		return 0;
	}
	if (!use_task_storage && !TASK_FILTERS && !filter_tid)
		return 0;
	t = sweep_task(ctx, &tid);
	if (!t)
		return 0;
	s = sweep_state(t, tid, true);
	/* the programs own acc and flags once they have seen the task; one
	 * store, so that they never see half of it */
	if (s && !(s->flags & RUNQ_ACC_OK) && sweep_switch_ins(t, &n, &running))
		s->sweep_acc = n + 1;
	return 0;
}

/*
 * The second: every task's switch-ins that its count shows beyond what was
 * accounted are waits no event showed (else a task whose switch-outs are not
 * reported keeps its last unseen waits until an event of it that never
 * comes); a start whose switch-in came unseen is dropped here, as its next
 * switch-out would. A start pending is a wait in flight. Counters are added
 * atomically: a program on this CPU may interrupt the sweep.
 */
SEC("iter/task")
int runq_sweep_end(struct bpf_iter__task *ctx)
{
	__u64 n, ts, nsw, old, unseen = 0, dropped = 0;
	struct runq_start *s;
	struct task_struct *t;
	unsigned int flags;
	__u32 tid, buf;
	struct lh_counters *c = lh_counters(&buf);
	bool running;

	if (!c)
		return 0;
	t = sweep_task(ctx, &tid);
	if (!t)
		return 0;
	/* the tids it saw, for the loader: a task /proc shows and this does not
	 * was hidden from it (hidden_tasks) */
	bpf_seq_write(ctx->meta->seq, &tid, sizeof(tid));
	s = sweep_state(t, tid, false);
	if (!s)
		return 0;
	/* the start, then the count: a start the task's CPU sets meanwhile
	 * comes with a count the sweep sees (or with ts moved: left alone) */
	ts = s->ts;
	nsw = s->nsw;
	flags = s->flags;
	barrier();
	if (!sweep_switch_ins(t, &n, &running))
		return 0;
	/* switched in since the start: running, or its count moved; dropped
	 * only if the start is still the one read (a program may pair or
	 * replace it meanwhile) */
	if (ts && (running || n != nsw) &&
	    __sync_val_compare_and_swap(&s->ts, ts, 0) == ts) {
		__sync_fetch_and_add(&c->v[LH_LOSS_MISSED_SWITCH_IN], 1);
		charge_key(t, 1, false, buf);
		dropped = 1;
	}
	/* a baseline: the programs' acc once they saw the task (RUNQ_ACC_OK is
	 * set after acc), else the start sweep's, unless a program took it */
	if (flags & RUNQ_ACC_OK) {
		unseen = acc_claim(&s->acc, n);
	} else {
		old = s->sweep_acc;
		if (old && n + 1 > old &&
		    __sync_val_compare_and_swap(&s->sweep_acc, old, n + 1) == old)
			unseen = n + 1 - old;
	}
	if (!unseen)
		return 0;
	dropped += __sync_lock_test_and_set(&s->dropped, 0);
	if (unseen > dropped) {
		__sync_fetch_and_add(&c->v[LH_LOSS_MISSED_WAIT], unseen - dropped);
		charge_key(t, unseen - dropped, false, buf);
	}
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
