/* SPDX-License-Identifier: MIT */
/* Per-event records sent through the BPF ring buffer (--slower-than). */
#ifndef LATHIST_RECORDS_H
#define LATHIST_RECORDS_H

enum lh_record_type { LH_REC_RUNQ = 1, LH_REC_BIO = 2 };

/* How every record starts. */
struct lh_record_head {
	unsigned int type;		/* enum lh_record_type */
	unsigned int sub;
	unsigned long long ts_ns;	/* CLOCK_MONOTONIC */
};

/* One wait of lathist runq. */
struct runq_record {
	unsigned int type;		/* LH_REC_RUNQ */
	unsigned int kind;		/* enum runq_kind: 1 wakeup, 2 preempt */
	unsigned long long ts_ns;	/* switch-in, CLOCK_MONOTONIC */
	unsigned long long latency_ns;
	unsigned int pid, tid;
	unsigned int cpu;		/* switched in on */
	unsigned int start_cpu;		/* where the wakeup (or preemption) happened */
	unsigned int prev_tid;		/* the task that ran before it on cpu */
	unsigned int pad;
	char comm[16];
	char prev_comm[16];
};

/* One request of lathist bio. */
struct bio_record {
	unsigned int type;		/* LH_REC_BIO */
	unsigned int op;		/* enum bio_op */
	unsigned long long ts_ns;	/* completion, CLOCK_MONOTONIC */
	unsigned long long total_ns;
	unsigned long long queue_ns;	/* ~0: no queue stage */
	unsigned long long device_ns;	/* ~0: never reached the driver */
	unsigned int pid, dev, bytes, pad;
	char comm[16];
};

#endif /* LATHIST_RECORDS_H */
