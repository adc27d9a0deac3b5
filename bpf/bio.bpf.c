// SPDX-License-Identifier: GPL-2.0
/*
 * lathist bio: block I/O latency per request, split into queue time
 * (created -> issued to the driver) and device time (issued -> completed),
 * paired by the struct request pointer and aggregated in per-CPU histograms.
 *
 * created: block_io_start (6.5+) in the submitter's context, else
 * block_rq_insert (only when an I/O scheduler is set); a request first seen at
 * block_rq_issue has no queue stage. Completion: block_rq_complete, once per
 * chunk; a request counts once, when its chunks add up to its size at issue.
 * One state machine, two attach adapters (tp_btf: direct BTF loads; raw_tp:
 * CO-RE probe reads).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "lathist.bpf.h"
#include "core_fixes.bpf.h"
#include "bio.h"

const volatile __u32 group;		/* enum bio_group bits */
const volatile __u32 filter_tgid;
const volatile __u32 filter_dev;	/* 0 = any disk */
/* block_rq_issue and block_rq_insert lost their request_queue argument in 5.11
 * (core_fixes.bpf.h); the loader reads the BTF prototypes. */
const volatile bool issue_has_q;
const volatile bool insert_has_q;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);	/* --max-requests */
	__type(key, __u64);
	__type(value, struct bio_req);
} bio_requests SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 10240);	/* --max-keys */
	__uint(key_size, sizeof(struct bio_hist_key));
	/* queue, device and total histograms of one key, hist_size bytes each */
	__uint(value_size, BIO_NR_HISTS * (sizeof(struct lh_hist_head) + 8 * LH_NSLOTS(0)));
} bio_hist SEC(".maps");

/* kernel dev_t of the request's disk; direct BTF loads on tp_btf */
static __always_inline __u32 rq_dev(struct request *rq, bool btf)
{
	struct gendisk *disk = request_disk(rq, btf);

	if (!disk)
		return 0;
	return ((__u32)TREAD(btf, disk, major) << 20) | (__u32)TREAD(btf, disk, first_minor);
}

static __always_inline __u8 rq_op(struct request *rq, bool btf)
{
	__u32 op = TREAD(btf, rq, cmd_flags) & 0xff;	/* REQ_OP_MASK */

	switch (op) {
	case 0:	/* REQ_OP_READ */
		return BIO_OP_READ;
	case 1:	/* REQ_OP_WRITE */
		return BIO_OP_WRITE;
	case 2:	/* REQ_OP_FLUSH */
		return BIO_OP_FLUSH;
	case 3:	/* REQ_OP_DISCARD */
		return BIO_OP_DISCARD;
	default:
		return BIO_OP_OTHER;
	}
}

/* Does the current task (the submitter) pass the -p/--cgroup filters? */
static __always_inline bool current_selected(void)
{
	if (filter_tgid && ((bpf_get_current_pid_tgid() >> 32) != filter_tgid ||
			    !lh_born_at(BPF_CORE_READ((struct task_struct *)bpf_get_current_task(),
						      group_leader), filter_tgid_ticks)))
		return false;
	if (filter_cgroup_id && !lh_task_in_cgroup(bpf_get_current_task_btf()))
		return false;
	return true;
}

/* Does the request need this field: for its histogram key, or for a record? */
#define WANT(g) ((group & (g)) || slower_than_ns != ~0ULL)

/* A new request's entry, attributed to the current task (its submitter when
 * created, whoever issues it when first seen at issue). */
static __always_inline void req_init(struct bio_req *init, __u64 now, bool at_issue)
{
	if (!current_selected())
		init->flags |= BIO_REQ_FILTERED;
	if (at_issue)
		init->flags |= BIO_REQ_NO_QUEUE;
	else
		init->created_ns = now;
	if (WANT(BIO_GROUP_PROCESS)) {
		struct task_struct *task = bpf_get_current_task_btf();

		init->tgid = bpf_get_current_pid_tgid() >> 32;
		init->birth_ns = task->group_leader->start_time;	/* trusted: direct loads */
		bpf_get_current_comm(init->comm, sizeof(init->comm));
	}
	if (group & BIO_GROUP_CGROUP)	/* the submitter's, as for its process */
		init->cgroup_id = bpf_get_current_cgroup_id();
}

/*
 * Record a request's start, attributed to the current task; reads only what
 * the grouping, the filters and records need. Returns 0 (with the entry in *out when out is
 * given) or -1 when the request is not traced (other disk, failure counted).
 */
static __always_inline int req_start(struct request *rq, __u64 now, bool at_issue, bool btf,
				     struct lh_counters *c, struct bio_req **out)
{
	__u64 key = (__u64)rq;
	struct bio_req init = {}, *r;
	long err;

	if (filter_dev || WANT(BIO_GROUP_DISK)) {
		init.dev = rq_dev(rq, btf);
		if (filter_dev && init.dev != filter_dev)
			return -1;	/* not this disk: its completion is filtered too */
	}
	req_init(&init, now, at_issue);
	if (WANT(BIO_GROUP_OP))
		init.op = rq_op(rq, btf);
	err = bpf_map_update_elem(&bio_requests, &key, &init, BPF_NOEXIST);
	if (err == -EEXIST) {
		/* the struct was freed and reused: never issued means merged away
		 * (kernels without block_rq_merge), issued means its completion came
		 * with no event (seen here: in interrupts while a thread of PID 1
		 * ran, which this VM kind does not trace) */
		r = bpf_map_lookup_elem(&bio_requests, &key);
		if (!r)
			return -1;
		/* a request -p, --cgroup or --disk left out is not a loss of this run */
		if (!(r->flags & BIO_REQ_FILTERED))
			c->v[r->issued_ns ? LH_LOSS_MISSED_COMPLETION : LH_EV_BIO_MERGED]++;
		*r = init;
		if (out)
			*out = r;
		return 0;
	}
	if (err) {
		/* counted where the request is created; at issue the same request
		 * would fail again (or it came before tracing: unpaired at the end) */
		if (!at_issue)
			lh_count_map_err(c, LH_LOSS_START_E2BIG, err);
		return -1;
	}
	if (out) {
		*out = bpf_map_lookup_elem(&bio_requests, &key);
		if (!*out)
			return -1;
	}
	return 0;
}

/*
 * A request created (block_io_start; before 6.5, block_rq_insert). insert:
 * block_rq_insert also fires when a requeued request is inserted again
 * (blk_mq_requeue_work()): an entry still issued whose start sector, moved on
 * by the sectors completed so far (blk_update_request() advances __sector), is
 * the request's is that request, going on (its next issue counts the
 * requeue), not a new one over a missed completion.
 */
static __always_inline int on_create(struct request *rq, bool btf, bool insert)
{
	__u64 key = (__u64)rq;
	struct bio_req *r;
	__u32 buf;
	struct lh_counters *c = lh_counters(&buf);

	if (!c)
		return 0;
	if (insert && (r = bpf_map_lookup_elem(&bio_requests, &key)) && r->issued_ns &&
	    r->sector + (r->done_bytes >> 9) == TREAD(btf, rq, __sector))
		return 0;
	if (!req_start(rq, bpf_ktime_get_ns(), false, btf, c, NULL))
		c->v[LH_EV_BIO_CREATED]++;
	return 0;
}

static __always_inline int on_issue(struct request *rq, bool btf)
{
	__u64 key = (__u64)rq, now;
	struct bio_req *r;
	__u32 buf;
	struct lh_counters *c = lh_counters(&buf);

	if (!c)
		return 0;
	now = bpf_ktime_get_ns();
	r = bpf_map_lookup_elem(&bio_requests, &key);
	if (!r) {
		/* not created while tracing (flush requests, or a request from before
		 * tracing began): attribute it here, without a queue stage */
		if (req_start(rq, now, true, btf, c, &r))
			return 0;
		c->v[LH_EV_BIO_NO_QUEUE]++;
	}
	if (r->issued_ns)
		c->v[LH_EV_BIO_REQUEUED]++;
	r->issued_ns = now;
	r->sector = TREAD(btf, rq, __sector);
	r->bytes = TREAD(btf, rq, __data_len);	/* 0 by completion time */
	r->done_bytes = 0;
	c->v[LH_EV_BIO_ISSUED]++;
	return 0;
}

/* Bytes of one histogram in a bio_hist value (which holds queue, device, total). */
const volatile __u32 hist_size = sizeof(struct lh_hist_head) + 8 * LH_NSLOTS(0);

static __always_inline void hist_one(void *base, __u32 kind, struct bio_req *r, __u64 delta)
{
	struct lh_hist_head *h = base + (kind - 1) * hist_size;

	h->bytes += r->bytes;
	lh_hist_add(h, delta);
}

/* One lookup per request for its key; queue_ns == ~0 when there is no queue
 * stage, dev_ns == ~0 when it never reached the driver. False (failure
 * counted) when the map is full. */
static __always_inline bool hist_record(struct bio_req *r, __u64 queue_ns, __u64 dev_ns,
					__u64 total_ns, struct lh_counters *c, __u32 buf)
{
	struct bio_hist_key key = {};
	struct lh_hist_head *h;

	key.buf = buf;
	if (group & BIO_GROUP_PROCESS) {
		key.tgid = r->tgid;
		key.birth_ns = r->birth_ns;
	}
	if (group & BIO_GROUP_DISK)
		key.dev = r->dev;
	if (group & BIO_GROUP_OP)
		key.op = r->op;
	if (group & BIO_GROUP_CGROUP)
		key.cgroup_id = r->cgroup_id;
	h = lh_hist_keyed(&bio_hist, &key, c);
	if (!h)
		return false;
	if ((group & BIO_GROUP_PROCESS) && !h->comm[0]) {
		__builtin_memcpy(h->comm, r->comm, sizeof(h->comm));
		h->comm_ns = bpf_ktime_get_ns();
	}
	if (queue_ns != ~0ULL)
		hist_one(h, BIO_QUEUE, r, queue_ns);
	if (dev_ns != ~0ULL)
		hist_one(h, BIO_DEVICE, r, dev_ns);
	hist_one(h, BIO_TOTAL, r, total_ns);
	return true;
}

/* A record of this request for the ring buffer, when it passes --slower-than. */
static __always_inline void record_request(struct bio_req *r, __u64 now, __u64 queue_ns,
					   __u64 dev_ns, __u64 total_ns, struct lh_counters *c)
{
	struct bio_record *e = lh_record_reserve(c, total_ns, sizeof(*e));

	if (!e)
		return;
	e->type = LH_REC_BIO;
	e->op = r->op;
	e->ts_ns = now;
	e->total_ns = total_ns;
	e->queue_ns = queue_ns;
	e->device_ns = dev_ns;
	e->pid = r->tgid;
	e->dev = r->dev;
	e->bytes = r->bytes;
	e->pad = 0;
	__builtin_memcpy(e->comm, r->comm, sizeof(e->comm));
	lh_record_submit(e);
}

/* Count a request whose last byte completed now; its caller deletes the entry. */
static __always_inline void req_done(struct bio_req *r, struct lh_counters *c, __u32 buf)
{
	__u64 now = bpf_ktime_get_ns(), dev_ns, queue_ns, total_ns;

	if (r->flags & BIO_REQ_FILTERED) {
		c->v[LH_EV_FILTERED]++;
		return;
	}
	c->v[LH_EV_ENDS]++;
	if (!r->issued_ns) {
		/* completed by the block layer itself (an empty flush whose work a
		 * separate flush request did, or an error before dispatch) */
		c->v[LH_EV_BIO_UNISSUED]++;
		if (!lh_delta(c, r->created_ns, now, &total_ns))
			return;
		if (hist_record(r, ~0ULL, ~0ULL, total_ns, c, buf))
			c->v[LH_EV_PAIRED]++;
		record_request(r, now, ~0ULL, ~0ULL, total_ns, c);
		return;
	}
	if (!lh_delta(c, r->issued_ns, now, &dev_ns))
		return;
	total_ns = dev_ns;
	queue_ns = ~0ULL;
	if (!(r->flags & BIO_REQ_NO_QUEUE)) {
		if (!lh_delta(c, r->created_ns, r->issued_ns, &queue_ns))
			return;
		total_ns += queue_ns;
	}
	if (hist_record(r, queue_ns, dev_ns, total_ns, c, buf))
		c->v[LH_EV_PAIRED]++;
	record_request(r, now, queue_ns, dev_ns, total_ns, c);
}

/*
 * An end with no entry: another disk (--disk), or a request from before
 * tracing. A completion of 0 bytes with no entry is not an end: a write with
 * FUA or a preflush completes once more, with 0 bytes, when its flush
 * sequence ends (blk_flush_complete_seq()), after its data completion was
 * counted; it is left out.
 */
static __always_inline void end_unknown(struct lh_counters *c, __u32 dev, __u32 nr_bytes)
{
	if (!nr_bytes)
		return;
	if (filter_dev && dev != filter_dev) {
		c->v[LH_EV_FILTERED]++;
	} else {
		c->v[LH_EV_ENDS]++;
		c->v[LH_EV_BEFORE_TRACE]++;
	}
}

static __always_inline int on_complete(struct request *rq, unsigned int nr_bytes, bool btf)
{
	__u64 key = (__u64)rq;
	struct bio_req *r;
	__u32 buf;
	struct lh_counters *c = lh_counters(&buf);

	if (!c)
		return 0;
	r = bpf_map_lookup_elem(&bio_requests, &key);
	if (!r) {
		end_unknown(c, filter_dev ? rq_dev(rq, btf) : 0, nr_bytes);
		return 0;
	}
	if (r->issued_ns && r->done_bytes + nr_bytes < r->bytes) {
		r->done_bytes += nr_bytes;
		c->v[LH_EV_BIO_PARTIAL]++;
		return 0;
	}
	req_done(r, c, buf);
	/* request structs are reused: a later request must not find this one */
	bpf_map_delete_elem(&bio_requests, &key);
	return 0;
}

/* A request merged into another before issue is freed without a completion. */
static __always_inline int on_merge(struct request *rq)
{
	__u64 key = (__u64)rq;
	__u32 buf;
	struct lh_counters *c = lh_counters(&buf);

	if (!c)
		return 0;
	if (!bpf_map_delete_elem(&bio_requests, &key))
		c->v[LH_EV_BIO_MERGED]++;
	return 0;
}

SEC("tp_btf/block_rq_merge")
int BPF_PROG(bio_merge_btf, struct request *rq)
{
	return on_merge(rq);
}

SEC("raw_tp/block_rq_merge")
int BPF_PROG(bio_merge_raw, struct request *rq)
{
	return on_merge(rq);
}

SEC("tp_btf/block_io_start")
int BPF_PROG(bio_io_start_btf, struct request *rq)
{
	return on_create(rq, true, false);
}

/* ([struct request_queue *q before 5.11,] struct request *rq): core_fixes.bpf.h */
SEC("tp_btf/block_rq_insert")
int bio_insert_btf(u64 *ctx)
{
	return on_create(block_rq_arg(ctx, insert_has_q), true, true);
}

SEC("tp_btf/block_rq_issue")
int bio_issue_btf(u64 *ctx)
{
	return on_issue(block_rq_arg(ctx, issue_has_q), true);
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(bio_complete_btf, struct request *rq, int error, unsigned int nr_bytes)
{
	return on_complete(rq, nr_bytes, true);
}

SEC("raw_tp/block_io_start")
int BPF_PROG(bio_io_start_raw, struct request *rq)
{
	return on_create(rq, false, false);
}

SEC("raw_tp/block_rq_insert")
int bio_insert_raw(struct bpf_raw_tracepoint_args *ctx)
{
	return on_create(block_rq_arg(ctx->args, insert_has_q), false, true);
}

SEC("raw_tp/block_rq_issue")
int bio_issue_raw(struct bpf_raw_tracepoint_args *ctx)
{
	return on_issue(block_rq_arg(ctx->args, issue_has_q), false);
}

SEC("raw_tp/block_rq_complete")
int BPF_PROG(bio_complete_raw, struct request *rq, int error, unsigned int nr_bytes)
{
	return on_complete(rq, nr_bytes, false);
}

/*
 * The end-of-run sweep (tp_btf, raw_tp; the loader runs bio_sweep once just
 * before its last read, with BPF_PROG_TEST_RUN): an issued request whose
 * struct the kernel has freed since (state MQ_RQ_IDLE and no reference:
 * blk_mq_free_request() after block_rq_complete; a requeued request is IDLE
 * too but still referenced), or that now holds another request in flight (its
 * sector outside the entry's; not told for a request with no data: flushes),
 * completed with no event, and no later request in that struct showed it:
 * missed_completion. One still in flight is left alone, and so is an entry
 * that a completion removed or replaced while the sweep read the request.
 * bpf_for_each_map_elem() (5.13) walks the map: some kernels refuse map
 * iterators (iter/bpf_map_elem) and not this.
 */
struct sweep_ctx {
	struct lh_counters *c;
};

static long sweep_one(struct bpf_map *map, __u64 *key, struct bio_req *r,
		      struct sweep_ctx *x)
{
	struct request *rq = (struct request *)*key;
	struct lh_counters *c = x->c;
	__u64 issued, sector, first, end;
	struct bio_req *now;
	int state, ref;

	if (!r->issued_ns || (r->flags & BIO_REQ_FILTERED))
		return 0;
	issued = r->issued_ns;
	first = r->sector;
	end = first + (r->bytes >> 9);
	state = BPF_CORE_READ(rq, state);
	ref = request_ref(rq);
	sector = BPF_CORE_READ(rq, __sector);
	now = bpf_map_lookup_elem(&bio_requests, key);
	if (!now || now->issued_ns != issued)
		return 0;
	if ((state == MQ_RQ_IDLE && !ref) ||
	    (state == MQ_RQ_IN_FLIGHT && end > first && (sector < first || sector >= end)))
		/* atomic: a program on this CPU may interrupt the sweep */
		__sync_fetch_and_add(&c->v[LH_LOSS_MISSED_COMPLETION], 1);
	return 0;
}

/* Never attached: run by the loader (BPF_PROG_TEST_RUN). "?": loaded only
 * where the loader asks for it. */
SEC("?raw_tp/block_rq_complete")
int bio_sweep(void *ctx)
{
	__u32 buf;
	struct sweep_ctx x = { .c = lh_counters(&buf) };	/* on the stack: the helper's rule */
	struct request *rq = NULL;

	if (!x.c || !bpf_core_field_exists(rq->state) || !bpf_core_field_exists(rq->ref))
		return 0;
	bpf_for_each_map_elem(&bio_requests, sweep_one, &x, 0);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
