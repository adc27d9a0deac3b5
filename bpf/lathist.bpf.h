/* SPDX-License-Identifier: MIT */
/*
 * BPF helpers shared by every lathist tool: the per-CPU event/loss counters
 * and the histogram update. Include once per BPF object.
 */
#ifndef LATHIST_BPF_H
#define LATHIST_BPF_H

#include "hist_slot.h"
#include "counters.h"
#include "records.h"
#include "core_fixes.bpf.h"
#include "cgroup_path.h"

#ifndef E2BIG
#define E2BIG 7
#endif
#ifndef ENOMEM
#define ENOMEM 12
#endif
#ifndef barrier
#define barrier() asm volatile("" ::: "memory")	/* compiler barrier */
#endif

#ifndef EEXIST
#define EEXIST 17
#endif
#ifndef ENOENT
#define ENOENT 2
#endif

/* Histogram scheme, set by the loader before load. */
const volatile __u32 hist_precision = 0;
const volatile __u32 hist_nslots = LH_NSLOTS(0);
const volatile __u64 hist_unit_ns = 1000;	/* slot values are delta / unit */

/* Set by the loader once every program is attached: events before that would
 * see only part of the picture (a wakeup without its switch, or the reverse). */
volatile bool lh_enabled;
/* CLOCK_MONOTONIC ns when lh_enabled was set: a task born later cannot have a
 * wait that began before tracing. */
volatile __u64 lh_start_ns;

/* Interval double buffer: the loader flips it, waits an RCU grace period and
 * reads the other half, so no increment lands in a half being read. */
volatile __u32 hist_buf;

/* Entries the programs made in the keyed histogram maps (lh_hist_keyed), over
 * the run. Once it reaches lh_drain_at (set by the loader at each flip: half
 * the map on), one record in lathist_wake wakes the loader, which reads the
 * half being written early and keeps it for the interval (session.c
 * drain_due): short threads' keys never fill the map. */
volatile __u64 lh_keys_made;
volatile __u64 lh_drain_at = ~0ULL;
volatile __u64 lh_drain_woken_at;	/* the lh_drain_at a wake was sent for */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} lathist_wake SEC(".maps");

/* Count a new keyed entry; past lh_drain_at, wake the loader, once per value
 * of lh_drain_at (only the loader writes that, and never goes back to an
 * earlier one: no flag to reset, no wake lost to a reset racing a program).
 * Another CPU may send a second wake, which is harmless. */
static __always_inline void lh_key_made(void)
{
	__u64 at = lh_drain_at;

	__sync_fetch_and_add(&lh_keys_made, 1);
	if (lh_keys_made >= at && lh_drain_woken_at != at) {
		lh_drain_woken_at = at;
		bpf_ringbuf_output(&lathist_wake, &at, sizeof(at), BPF_RB_FORCE_WAKEUP);
	}
}

/* One set of counters per interval buffer, so that an interval's counters and
 * histograms hold exactly the same events. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct lh_counters);
} lathist_counters SEC(".maps");

/* All-zero histogram value used to create hash entries (value size set at load). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct lh_hist_head) + 8 * LH_NSLOTS(0));
} lathist_zero_hist SEC(".maps");

/*
 * This CPU's counters for the current interval buffer, whose index goes to
 * *buf: an event's counters and histogram use that one index. NULL until
 * tracing is fully enabled.
 */
static __always_inline struct lh_counters *lh_counters(__u32 *buf)
{
	__u32 b;

	if (!lh_enabled)
		return NULL;
	b = hist_buf & 1;
	*buf = b;
	return bpf_map_lookup_elem(&lathist_counters, &b);
}

/* Count a failed map update by errno class: base is the E2BIG class,
 * base + 1 ENOMEM, base + 2 anything else. */
static __always_inline void lh_count_map_err(struct lh_counters *c, int base, long err)
{
	int i = base + 2;

	if (err == -E2BIG)
		i = base;
	else if (err == -ENOMEM)
		i = base + 1;
	if (i >= 0 && i < LH_NR_COUNTERS)
		c->v[i]++;
}

/* Options every tool shares, set by the loader. */
const volatile __u64 filter_cgroup_id;	/* cgroup v2 id; 0 = any */
const volatile __u64 filter_tgid_ticks;	/* -p: the process's start, /proc ticks; 0 = unchecked */
const volatile __u64 tick_ns;		/* ns per /proc tick (NSEC_PER_SEC / USER_HZ) */
const volatile __s64 boot_off_ns;	/* the loader's time namespace boottime offset */
const volatile __u64 slower_than_ns = ~0ULL;	/* a record per event >= this; ~0 = none */
const volatile __u64 rb_wakeup_bytes;	/* wake the consumer once this much waits */

/* Per-event records (--slower-than); size set by the loader (--ringbuf-size). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} lathist_events SEC(".maps");

/*
 * Reserve a record for an event of latency_ns when it passes --slower-than:
 * every eligible event is counted, every failed reserve too (the histograms
 * count the event either way). NULL when no record is to be written.
 */
static __always_inline void *lh_record_reserve(struct lh_counters *c, __u64 latency_ns,
					       __u64 size)
{
	void *r;

	/* without --slower-than the verifier drops all of this (a constant) */
	if (slower_than_ns == ~0ULL || latency_ns < slower_than_ns)
		return NULL;
	c->v[LH_EV_RB_ELIGIBLE]++;
	r = bpf_ringbuf_reserve(&lathist_events, size, 0);
	if (!r)
		c->v[LH_LOSS_RINGBUF]++;
	return r;
}

/*
 * Submit without waking the consumer until rb_wakeup_bytes are waiting (it
 * polls every 100 ms anyway, so batching delays records, never loses them);
 * rb_wakeup_bytes 0 leaves it to the kernel (wake when the consumer has
 * caught up), kept for bench/records_overhead.py to compare (--test-kernel-wakeup).
 */
static __always_inline void lh_record_submit(void *r)
{
	__u64 flags = 0;

	if (rb_wakeup_bytes)
		flags = bpf_ringbuf_query(&lathist_events, BPF_RB_AVAIL_DATA) >= rb_wakeup_bytes ?
			BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
	bpf_ringbuf_submit(r, flags);
}

/* Read a task field: direct BTF load on tp_btf, probe read on raw_tp. */
#define TREAD(btf, t, f) ((btf) ? (t)->f : BPF_CORE_READ(t, f))

/*
 * Was task t born at /proc tick `ticks`, as the task -p or -t named when
 * tracing began? /proc/PID/stat's starttime is task->start_boottime (plus a
 * time namespace's offset) / (NSEC_PER_SEC / USER_HZ) (fs/proc/array.c): a
 * task that took the pid later fails this. Read only once the id matched:
 * off the common path.
 */
static __always_inline bool lh_born_at(struct task_struct *t, __u64 ticks)
{
	if (!ticks || !tick_ns)
		return true;
	return (BPF_CORE_READ(t, start_boottime) + boot_off_ns) / tick_ns == ticks;
}

/*
 * --per-cgroup: the path of every cgroup v2 made while tracing (its id the
 * key), so that the loader can name one removed before it reads its keys (a
 * short-lived container). LRU: past max_entries the oldest go. Paths longer
 * than the value are cut (the loader names a cgroup still there from its
 * folder instead).
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);	/* 1 unless --per-cgroup */
	__type(key, __u64);
	__type(value, struct lh_cgroup_path);
} lathist_cgroup_paths SEC(".maps");

static const struct lh_cgroup_path lh_no_path;

/* cgroup_mkdir(struct cgroup *cgrp, const char *path): path is the cgroup's within
 * its hierarchy; the unified (v2) one is hierarchy 0 (as /proc/PID/cgroup says).
 * raw_tp, whatever the tool's attach type: it reads everything with probe reads.
 * "?": loaded for --per-cgroup only. */
SEC("?raw_tp/cgroup_mkdir")
int BPF_PROG(lathist_cgroup_mkdir, struct cgroup *cgrp, const char *path)
{
	struct lh_cgroup_path *v;
	__u64 id;

	if (BPF_CORE_READ(cgrp, root, hierarchy_id) != 0)
		return 0;
	id = BPF_CORE_READ(cgrp, kn, id);
	if (bpf_map_update_elem(&lathist_cgroup_paths, &id, &lh_no_path, BPF_ANY))
		return 0;
	v = bpf_map_lookup_elem(&lathist_cgroup_paths, &id);
	if (v)
		bpf_probe_read_kernel_str(v->path, sizeof(v->path), path);
	return 0;
}

/* Task t's cgroup v2 (its kernfs node id, what name_to_handle_at(2) gives
 * for the cgroup's folder); the root's on a host without cgroup v2 in use. */
static __always_inline __u64 lh_task_cgroup_id(struct task_struct *t)
{
	return BPF_CORE_READ(t, cgroups, dfl_cgrp, kn, id);
}

/* Is task t in cgroup filter_cgroup_id or below it (cgroup v2)? */
static __always_inline bool lh_task_in_cgroup(struct task_struct *t)
{
	struct cgroup *cg = BPF_CORE_READ(t, cgroups, dfl_cgrp);

	for (int i = 0; i < 32 && cg; i++) {
		if (BPF_CORE_READ(cg, kn, id) == filter_cgroup_id)
			return true;
		cg = (struct cgroup *)BPF_CORE_READ(cg, self.parent);
	}
	return false;
}

/*
 * delta = now - start, or false with the reason counted: an end before its
 * start (negative_delta) or over LH_ABSURD_NS (absurd_delta). Neither ever
 * lands in a slot.
 */
static __always_inline bool lh_delta(struct lh_counters *c, __u64 start, __u64 now, __u64 *delta)
{
	if (now < start) {
		c->v[LH_LOSS_NEGATIVE]++;
		return false;
	}
	*delta = now - start;
	if (*delta > LH_ABSURD_NS) {
		c->v[LH_LOSS_ABSURD]++;
		return false;
	}
	return true;
}

/* The slot of delta_ns in this run's scheme, below hist_nslots. */
static __always_inline __u64 lh_hist_slot(__u64 delta_ns)
{
	__u64 s = lh_value_slot(delta_ns, hist_unit_ns, hist_precision);

	/* keep the bound check on the register that indexes (clang may copy it) */
	barrier_var(s);
	if (s >= hist_nslots)
		s = hist_nslots - 1;
	barrier_var(s);
	return s;
}

/* Add one event of delta_ns to a histogram value. */
static __always_inline void lh_hist_add(struct lh_hist_head *h, __u64 delta_ns)
{
	__u64 *slots = (__u64 *)(h + 1);
	__u64 s = lh_hist_slot(delta_ns);

	h->sum_ns += delta_ns;
	if (delta_ns > h->max_ns)
		h->max_ns = delta_ns;
	slots[s]++;
}

/*
 * lh_hist_add for a histogram value that every CPU shares (a per-process or
 * per-thread key: BPF_MAP_TYPE_HASH, one copy however many CPUs, where a
 * per-CPU value would take value x CPUs per key): atomic adds, and the max
 * by compare-and-exchange (Linux 5.12+; runq needs it anyway), given up
 * after 4 tries lost to other CPUs raising it (each of them at least as
 * large as what it read).
 */
static __always_inline void lh_hist_add_shared(struct lh_hist_head *h, __u64 delta_ns)
{
	__u64 *slots = (__u64 *)(h + 1);
	__u64 s = lh_hist_slot(delta_ns);

	__sync_fetch_and_add(&h->sum_ns, delta_ns);
	__sync_fetch_and_add(&slots[s], 1);
	for (int i = 0; i < 4; i++) {
		__u64 old = *(volatile __u64 *)&h->max_ns;

		if (delta_ns <= old ||
		    __sync_val_compare_and_swap(&h->max_ns, old, delta_ns) == old)
			break;
	}
}

/*
 * Add key to a hash map with value init (the caller has looked it up and not
 * found it) and return the map's value; another CPU adding it first is no
 * failure. NULL when the map is full or out of memory, counted in the class
 * starting at base (see lh_count_map_err) unless c is NULL. *made (unless
 * made is NULL) says whether this call made the entry.
 */
static __always_inline void *lh_map_add(void *map, const void *key, const void *init,
					struct lh_counters *c, int base, bool *made)
{
	long err = bpf_map_update_elem(map, key, init, BPF_NOEXIST);
	void *v;

	if (made)
		*made = !err;
	if (err && err != -EEXIST) {
		if (c)
			lh_count_map_err(c, base, err);
		return NULL;
	}
	v = bpf_map_lookup_elem(map, key);
	if (!v && c)	/* gone again (no program deletes: not seen), yet a failure */
		lh_count_map_err(c, base, -ENOENT);
	return v;
}

/* Find or create the histogram for key in a hash (a new entry is
 * counted in lh_keys_made); NULL (with the failure counted) when the map is
 * full or out of memory. */
static __always_inline struct lh_hist_head *lh_hist_keyed(void *map, void *key,
							   struct lh_counters *c)
{
	struct lh_hist_head *h;
	__u32 zero = 0;
	bool made;
	void *init;

	h = bpf_map_lookup_elem(map, key);
	if (h)
		return h;
	init = bpf_map_lookup_elem(&lathist_zero_hist, &zero);
	if (!init) {	/* an array's element 0: cannot fail, yet counted if it does */
		if (c)
			lh_count_map_err(c, LH_LOSS_HIST_E2BIG, -ENOENT);
		return NULL;
	}
	h = lh_map_add(map, key, init, c, LH_LOSS_HIST_E2BIG, &made);
	if (made)
		lh_key_made();
	return h;
}

#endif /* LATHIST_BPF_H */
