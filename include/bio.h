/* SPDX-License-Identifier: MIT */
/* Types shared by bpf/bio.bpf.c and src/tools/bio.c. */
#ifndef LATHIST_BIO_H
#define LATHIST_BIO_H

/* Histograms per key: index = kind - 1. */
enum bio_kind {
	BIO_QUEUE = 1,		/* issue - created */
	BIO_DEVICE = 2,		/* complete - issue */
	BIO_TOTAL = 3,		/* complete - created (= device without a queue stage) */
};
#define BIO_NR_HISTS 3

enum bio_op { BIO_OP_READ, BIO_OP_WRITE, BIO_OP_FLUSH, BIO_OP_DISCARD, BIO_OP_OTHER };

/* Grouping bits, combinable. */
enum bio_group {
	BIO_GROUP_PROCESS = 1,	/* submitter tgid (+ start time), comm */
	BIO_GROUP_DISK = 2,	/* dev_t of the request's disk */
	BIO_GROUP_OP = 4,	/* enum bio_op */
	BIO_GROUP_CGROUP = 8,	/* the submitter's cgroup v2 id when the request was created */
};

enum bio_req_flags {
	BIO_REQ_FILTERED = 1,	/* created by a task the filters reject */
	BIO_REQ_NO_QUEUE = 2,	/* first seen at issue: no queue stage */
};

/* Pairing state per request, keyed by the struct request pointer. */
struct bio_req {
	unsigned long long created_ns;	/* 0 when creation was not seen */
	unsigned long long issued_ns;	/* 0 until issued */
	unsigned long long birth_ns;	/* submitter's process start time */
	unsigned long long sector;	/* its start sector at issue (a requeue keeps it) */
	unsigned long long cgroup_id;	/* submitter's cgroup v2 id (per cgroup only) */
	unsigned int bytes;		/* request size at issue */
	unsigned int done_bytes;	/* completed so far (partial completions) */
	unsigned int tgid;		/* submitter process */
	unsigned int dev;		/* kernel dev_t: major << 20 | minor */
	unsigned char op;		/* enum bio_op */
	unsigned char flags;		/* enum bio_req_flags */
	unsigned char pad[6];
	char comm[16];			/* submitter's comm at creation */
};

/* Key of the per-CPU histogram hash; fields outside the grouping are 0. Its
 * value holds the queue, device and total histograms, in that order. */
struct bio_hist_key {
	unsigned int tgid;
	unsigned int dev;
	unsigned long long birth_ns;
	unsigned long long cgroup_id;
	unsigned char pad0;
	unsigned char op;		/* enum bio_op, or 0 when not grouped by op */
	unsigned char buf;		/* interval double buffer */
	unsigned char pad[5];
};

/* A per-CPU map value is at most 32 KiB (PCPU_MIN_UNIT_SIZE): three histograms
 * of precision 5 do not fit. */
#define BIO_MAX_PRECISION 4

#define BIO_DEV_MAJOR(d) ((d) >> 20)
#define BIO_DEV_MINOR(d) ((d) & 0xfffff)

#endif /* LATHIST_BIO_H */
