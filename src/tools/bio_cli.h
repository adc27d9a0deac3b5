/* SPDX-License-Identifier: MIT */
/* lathist bio options (parsed in src/tools/bio.c; exposed for unit tests). */
#ifndef LATHIST_BIO_CLI_H
#define LATHIST_BIO_CLI_H

#include "bio.h"
#include "cli.h"
#include "report.h"

struct bio_opts {
	struct lh_common_opts c;
	unsigned int group;		/* enum bio_group bits */
	char disk[32];			/* --disk name, "" = any */
	uint32_t dev;			/* its kernel dev_t (major << 20 | minor) */
	uint32_t max_requests;		/* entries of the in-flight request map */
};

/* bio's histograms: queue, device, total. */
extern const struct lh_hist_kind bio_kinds[BIO_NR_HISTS];

/*
 * Parse `lathist bio` arguments (argv[0] is "bio"). Returns 0, 1 when -h
 * printed the help, or -EINVAL after printing a one-line usage error.
 */
int bio_parse_args(int argc, char **argv, struct bio_opts *o);

/* Name of a block device from its kernel dev_t via /sys/dev/block ("loop0"), or "M:m". */
void bio_dev_name(uint32_t dev, char *name, size_t len);

/* Kernel dev_t of a block device name via /sys/class/block/NAME/dev; -ENOENT. */
int bio_dev_of(const char *name, uint32_t *dev);

struct bio_record;

/*
 * One --slower-than record as a line ending in '\n' into buf (len bytes): JSON
 * (--events) or text, on disk (its name), times in the unit of unit_ns ns named
 * unit ("us"). Returns the length the line needs, snprintf-like (>= len: it
 * did not fit).
 */
int bio_record_line(const struct bio_record *r, const char *disk, bool json, uint64_t unit_ns,
		    const char *unit, char *buf, size_t len);

#endif /* LATHIST_BIO_CLI_H */
