// SPDX-License-Identifier: MIT
/*
 * lathist bio: block I/O latency per request, split into queue and device
 * time, per process, disk and operation, aggregated in the kernel. Same
 * lifecycle as runq: options -> open -> read-only options -> choose variant,
 * size maps -> load -> attach -> session loop -> cleanup.
 */
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "records.h"
#include "recline.h"
#include "bio.h"
#include "bio.skel.h"
#include "bio_cli.h"
#include "bpfcommon.h"
#include "session.h"
#include "tool.h"
#include "registry.h"
#include "util.h"
#include "cgroup.h"
#include "context.h"
#include "target.h"
#include "doctor.h"

#define TOOL "bio"

const struct lh_hist_kind bio_kinds[BIO_NR_HISTS] = {
	{ "queue", "queue time (created to issued to the driver)", LH_SCOPE_EVENTS },
	{ "device", "device time (issued to completed)", LH_SCOPE_EVENTS },
	{ "total", "total (created to completed; device time when there is no queue stage)", LH_SCOPE_EVENTS },
};

/* lh_op_names lists read, write, flush, discard, other: enum bio_op's order */
_Static_assert(BIO_OP_READ == 0 && BIO_OP_WRITE == 1 && BIO_OP_FLUSH == 2 &&
	       BIO_OP_DISCARD == 3 && BIO_OP_OTHER == 4 && LH_NR_OPS == 5,
	       "lh_op_names is in enum bio_op order");

/* The name of a BPF key's or record's enum bio_op (other for one past it). */
static const char *op_name(unsigned int op)
{
	return lh_op_names[op <= BIO_OP_OTHER ? op : BIO_OP_OTHER];
}

enum {
	OPT_PER_PROCESS = LH_OPT_TOOL_BASE,
	OPT_PER_DISK,
	OPT_PER_OP,
	OPT_PER_CGROUP,
	OPT_DISK,
	OPT_MAX_REQUESTS,
};

static const char bio_help[] =
	"Usage: lathist bio [OPTIONS]\n"
	"Block I/O latency per request, aggregated in the kernel: queue time (created to\n"
	"issued), device time (issued to completed) and total.\n"
	"\n"
	"Grouping (combinable; default: all requests together):\n"
	"      --per-process      by the process current at creation (the submitter;\n"
	"                         a flusher thread for writeback)\n"
	"      --per-disk         by disk (e.g. loop0, vda)\n"
	"      --per-op           by operation: read, write, flush, discard, other\n"
	"      --per-cgroup       by the cgroup v2 of the process current at creation\n"
	"bio filters (-p and --cgroup below select the process current at creation):\n"
	"      --disk NAME        only requests to this disk\n"
	"bio maps:\n"
	"      --max-requests N   entries of the in-flight request map\n"
	"\n";

void bio_dev_name(uint32_t dev, char *name, size_t len)
{
	char path[64], target[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u", BIO_DEV_MAJOR(dev), BIO_DEV_MINOR(dev));
	n = readlink(path, target, sizeof(target) - 1);
	if (n > 0) {
		target[n] = 0;
		snprintf(name, len, "%s", basename(target));
		return;
	}
	snprintf(name, len, "%u:%u", BIO_DEV_MAJOR(dev), BIO_DEV_MINOR(dev));
}

int bio_dev_of(const char *name, uint32_t *dev)
{
	char path[PATH_MAX];
	unsigned int major, minor;
	FILE *f;
	int n;

	if (!*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
		return -ENOENT;
	snprintf(path, sizeof(path), "/sys/class/block/%s/dev", name);
	f = fopen(path, "r");
	if (!f)
		return -ENOENT;
	n = fscanf(f, "%u:%u", &major, &minor);
	fclose(f);
	if (n != 2)
		return -ENOENT;
	*dev = (major << 20) | minor;
	return 0;
}

/*
 * Can --disk NAME be traced as one? Not a partition: its requests reach the
 * request tracepoints remapped onto the whole disk (its parent, in parent).
 * Not a bio-based device (zram, md, dm without blk-mq: no mq folder): its I/O
 * never becomes a request; the disks beneath it (slaves/) are listed in
 * beneath. 0, -EXDEV (partition) or -ENOTBLK (bio-based).
 */
static int disk_traceable(const char *name, char *parent, size_t plen, char *beneath,
			  size_t blen)
{
	char path[PATH_MAX], real[PATH_MAX];
	struct dirent *e;
	size_t used = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/sys/class/block/%s/partition", name);
	if (!access(path, F_OK)) {
		snprintf(path, sizeof(path), "/sys/class/block/%s/..", name);
		snprintf(parent, plen, "%s", realpath(path, real) ? basename(real) : "its disk");
		return -EXDEV;
	}
	snprintf(path, sizeof(path), "/sys/class/block/%s/mq", name);
	if (!access(path, F_OK))
		return 0;
	beneath[0] = 0;
	snprintf(path, sizeof(path), "/sys/class/block/%s/slaves", name);
	if ((d = opendir(path))) {
		while ((e = readdir(d)))
			if (e->d_name[0] != '.' && used < blen)
				used += (size_t)snprintf(beneath + used, blen - used, "%s%s",
							 used ? " " : "", e->d_name);
		closedir(d);
	}
	return -ENOTBLK;
}

/* A disk with no medium now (size 0: a loop device with no file attached, an
 * empty drive) does no I/O until it gets one, when its requests are traced:
 * said, so that a run of it that shows nothing is not read as an idle disk. */
static void disk_medium_note(const char *name)
{
	char path[PATH_MAX];
	unsigned long long sectors = 1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/block/%s/size", name);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fscanf(f, "%llu", &sectors) == 1 && !sectors)
		fprintf(stderr, "lathist bio: --disk %s has no medium now (size 0, e.g. a loop "
			"device with no file attached): nothing to see until it gets one\n", name);
	fclose(f);
}

int bio_parse_args(int argc, char **argv, struct bio_opts *o)
{
	static const struct option longopts[] = {
		LH_COMMON_LONGOPTS,
		{ "per-process", no_argument, NULL, OPT_PER_PROCESS },
		{ "per-disk", no_argument, NULL, OPT_PER_DISK },
		{ "per-op", no_argument, NULL, OPT_PER_OP },
		{ "per-cgroup", no_argument, NULL, OPT_PER_CGROUP },
		{ "disk", required_argument, NULL, OPT_DISK },
		{ "max-requests", required_argument, NULL, OPT_MAX_REQUESTS },
		{ NULL, 0, NULL, 0 },
	};
	char ids[40], parent[NAME_MAX + 1], beneath[256], path_buf[NAME_MAX + 1];
	int opt, err;

	memset(o, 0, sizeof(*o));
	lh_common_defaults(&o->c);
	o->c.max_precision = BIO_MAX_PRECISION;
	o->max_requests = 0;	/* sized from the disks' tags (auto_max_requests) */
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, LH_COMMON_SHORTOPTS, longopts, NULL)) != -1) {
		err = lh_common_opt(&o->c, opt, optarg, TOOL);
		if (err < 0)
			return -EINVAL;
		if (o->c.help)
			break;	/* -h wins over what follows it */
		if (err == 0)
			continue;
		err = 0;
		switch (opt) {
		case OPT_PER_PROCESS:
			o->group |= BIO_GROUP_PROCESS;
			break;
		case OPT_PER_DISK:
			o->group |= BIO_GROUP_DISK;
			break;
		case OPT_PER_OP:
			o->group |= BIO_GROUP_OP;
			break;
		case OPT_PER_CGROUP:
			if (lh_check_per_cgroup(TOOL))
				return -EINVAL;
			o->group |= BIO_GROUP_CGROUP;
			break;
		case OPT_DISK: {
			const char *typed = optarg;
			char *real = optarg[0] == '/' ? realpath(optarg, NULL) : NULL;

			/* a device path names it too, through symlinks (/dev/disk/by-id/...) */
			if (real && !strncmp(real, "/dev/", 5) && !strchr(real + 5, '/')) {
				snprintf(path_buf, sizeof(path_buf), "%s", real + 5);
				optarg = path_buf;
			} else if (!strncmp(optarg, "/dev/", 5) && !strchr(optarg + 5, '/')) {
				optarg += 5;
			}
			free(real);
			if (o->disk[0]) {
				lh_usage_error(TOOL, "--disk given twice; give one disk (or trace "
					       "all of them with --per-disk)");
				return -EINVAL;
			}
			if (bio_dev_of(optarg, &o->dev)) {
				lh_usage_error(TOOL, "--disk '%s': no such block device; give a name "
					       "from lsblk or /sys/class/block, e.g. vda", typed);
				return -EINVAL;
			}
			err = disk_traceable(optarg, parent, sizeof(parent), beneath,
					     sizeof(beneath));
			if (err == -EXDEV) {
				lh_usage_error(TOOL, "--disk '%s': is a partition of %s, and requests "
					       "reach the tracepoints remapped onto the whole disk; give "
					       "--disk %s (all its partitions)", optarg, parent, parent);
				return -EINVAL;
			}
			if (err == -ENOTBLK) {
				if (beneath[0])
					lh_usage_error(TOOL, "--disk '%s': is a bio-based device (no "
						       "blk-mq queue), whose I/O never becomes a request; "
						       "give a disk beneath it: %s", optarg, beneath);
				else
					lh_usage_error(TOOL, "--disk '%s': is a bio-based device (no "
						       "blk-mq queue) with no disk beneath it: its I/O never "
						       "reaches the request tracepoints, so lathist bio cannot "
						       "see it", optarg);
				return -EINVAL;
			}
			snprintf(o->disk, sizeof(o->disk), "%s", optarg);
			disk_medium_note(optarg);
			break;
		}
		case OPT_MAX_REQUESTS:
			if (o->max_requests) {
				lh_usage_error(TOOL, "--max-requests given twice; give one size");
				return -EINVAL;
			}
			if (lh_parse_u32(optarg, 1, 1U << 22, &o->max_requests)) {
				lh_usage_error(TOOL, "--max-requests '%s': give a number from 1 to "
					       "4194304", optarg);
				return -EINVAL;
			}
			break;
		default:
			lh_bad_option(TOOL, opt, argv, longopts);
			return -EINVAL;
		}
	}
	if (o->c.help) {
		lh_print_help(bio_help, TOOL, lh_help_verbose(&o->c, argc, argv));
		return 1;
	}
	if (optind < argc) {
		lh_usage_error(TOOL, "unexpected argument '%s'; see lathist bio -h", argv[optind]);
		return -EINVAL;
	}
	if (lh_text_grouped(o->c.text_given, o->group != 0,
			    "add a grouping (--per-...), or drop it", TOOL))
		return -EINVAL;

	/* outside the host's PID namespace, what takes or shows pids is refused */
	if (o->c.pid)
		snprintf(ids, sizeof(ids), "-p %u", o->c.pid);
	else
		snprintf(ids, sizeof(ids), "%s", (o->group & BIO_GROUP_PROCESS) ? "--per-process" :
			 o->c.slower_than_ns != UINT64_MAX ? "--slower-than (records show pids)" : "");
	if (lh_check_pidns(TOOL, ids[0] ? ids : NULL))
		return -EINVAL;
	return lh_common_finish(&o->c, TOOL) ? -EINVAL : 0;
}

/* ---- loader ---- */

struct bio_attach_plan {
	enum lh_attach_mode type;
	bool has_io_start;	/* block_io_start exists (6.5+) */
	bool issue_has_q;
	bool insert_has_q;
	bool has_merge;		/* block_rq_merge exists */
	int sweep_err;		/* the end sweep (a map iterator) cannot load: -errno */
};

#define BIO_MAX_UNSEEN 16

/* A bio-based device with no disk beneath it (zram, brd, pmem): its I/O never
 * becomes a request, so no request tracepoint shows it. Its completed I/Os
 * (/sys/block/DEV/stat reads + writes) at the start, to tell what it did. */
struct unseen_dev {
	char name[32];
	uint64_t ios0;
};

#define BIO_RECORD_DISKS 8
#define DISK_NAME_NS 100000000ULL	/* how long a record's disk name is reused */

struct bio_ctx {
	struct bio_opts *o;
	struct bio_bpf *skel;
	struct bio_attach_plan plan;	/* of the attach type being loaded */
	struct unseen_dev unseen[BIO_MAX_UNSEEN];
	int nunseen;
	char unchecked[300];		/* meta.unchecked as the load left it */
	struct record_disk {		/* disk names of records (record_disk) */
		uint32_t dev;		/* 0: unused */
		uint64_t ts_ns;		/* the record it was looked up for */
		char name[32];
	} disks[BIO_RECORD_DISKS];
	unsigned int next_disk;		/* the entry to reuse next */
};

/* "total", or the groupings joined by commas in one order ("process,disk,op,cgroup"). */
static void grouping_name(unsigned int g, char *buf, size_t len)
{
	static const struct { unsigned int bit; const char *name; } parts[] = {
		{ BIO_GROUP_PROCESS, "process" }, { BIO_GROUP_DISK, "disk" },
		{ BIO_GROUP_OP, "op" }, { BIO_GROUP_CGROUP, "cgroup" },
	};
	size_t n = 0;

	snprintf(buf, len, "total");
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]) && n < len; i++)
		if (g & parts[i].bit)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "," : "", parts[i].name);
}

extern const struct lh_tool_desc bio_tool;	/* at the end of this file */

static void init_meta(struct lh_session *s, struct bio_opts *o, char *grouping)
{
	struct lh_meta *m = &s->report.meta;

	lh_session_init(s, &o->c, TOOL, bio_kinds, BIO_NR_HISTS, grouping);
	m->desc = &bio_tool;
	m->has_bytes = true;
	if (o->disk[0])
		lh_meta_add_filter(m, "disk", false, "%s", o->disk);
	lh_context_add_disks(m->context, o->disk[0] ? o->disk : NULL);
}

/* What this kernel has for type t: its tracepoints' BTF prototypes, the sweep. */
static void plan_for(struct bio_attach_plan *p, enum lh_attach_mode t, bool no_sweep)
{
	p->type = t;
	p->has_io_start = lh_tp_nargs("block_io_start") >= 1;
	p->issue_has_q = lh_tp_nargs("block_rq_issue") == 2;
	p->insert_has_q = lh_tp_nargs("block_rq_insert") == 2;
	p->has_merge = lh_tp_nargs("block_rq_merge") >= 1;
	/* bpf_for_each_map_elem (5.13) run by BPF_PROG_TEST_RUN (5.10) */
	p->sweep_err = no_sweep ? -EPERM : libbpf_probe_bpf_helper(BPF_PROG_TYPE_RAW_TRACEPOINT,
					BPF_FUNC_for_each_map_elem, NULL) == 1 ? 0 : -EOPNOTSUPP;
}

/* The tracepoints bio attaches, all of one type. */
static void meta_attach(struct lh_meta *m, const struct bio_attach_plan *p)
{
	const char *type = lh_attach_name(p->type);

	m->attach[m->nattach++] = (struct lh_attach){
		p->has_io_start ? "block_io_start" : "block_rq_insert", type };
	m->attach[m->nattach++] = (struct lh_attach){ "block_rq_issue", type };
	m->attach[m->nattach++] = (struct lh_attach){ "block_rq_complete", type };
	if (p->has_merge)
		m->attach[m->nattach++] = (struct lh_attach){ "block_rq_merge", type };
}

/* Block devices in /sys/block (at least 1). */
static uint32_t count_disks(void)
{
	DIR *d = opendir("/sys/block");
	struct dirent *e;
	uint32_t n = 0;

	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n ? n : 1;
}

/*
 * Entries of the in-flight request map when --max-requests is not given: a
 * request exists from its tag's allocation to its completion, so no more are
 * in flight than the disks have tags: per blk-mq disk, nr_requests (per
 * hardware queue; the scheduler's tags when it has one) x its hardware
 * queues (/sys/block/DEV/mq/N). Half again for disks added while tracing,
 * plus 1024; at most 1 << 22. *tags gets the sum.
 */
static uint32_t auto_max_requests(uint32_t *tags)
{
	DIR *d = opendir("/sys/block"), *q;
	struct dirent *e, *h;
	uint64_t sum = 0, n;
	char path[PATH_MAX];

	while (d && (e = readdir(d))) {
		unsigned long long nr = 0;
		uint32_t queues = 0;
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/block/%s/queue/nr_requests", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%llu", &nr) != 1)
			nr = 0;
		fclose(f);
		snprintf(path, sizeof(path), "/sys/block/%s/mq", e->d_name);
		q = opendir(path);
		while (q && (h = readdir(q)))
			queues += h->d_name[0] >= '0' && h->d_name[0] <= '9';
		if (q)
			closedir(q);
		sum += nr * (queues ? queues : 1);
	}
	if (d)
		closedir(d);
	*tags = sum > UINT32_MAX ? UINT32_MAX : (uint32_t)sum;
	if (!sum)		/* none read: the fixed size lathist had */
		return 16384;
	n = sum * 3 / 2 + 1024;
	return n > (1U << 22) ? 1U << 22 : (uint32_t)n;
}

static size_t configure(struct bio_bpf *s, struct bio_opts *o, const struct bio_attach_plan *p)
{
	uint32_t nslots = LH_NSLOTS(o->c.precision);
	size_t hist_size = sizeof(struct lh_hist_head) + 8 * nslots;
	size_t value_size = BIO_NR_HISTS * hist_size;
	bool btf = p->type == LH_ATTACH_TP_BTF, raw = p->type == LH_ATTACH_RAW_TP;
	uint32_t max_keys = o->c.max_keys, keys = 0, max_requests = o->max_requests, tags;

	if (!max_keys) {
		/* one entry per key holds its three histograms: processes (a cgroup's
		 * keys are no more than its processes) x disks x operations */
		bool procs = o->group & (BIO_GROUP_PROCESS | BIO_GROUP_CGROUP);

		max_keys = lh_auto_max_keys(procs ? LH_KEYS_PROCESSES : LH_KEYS_FEW, 1,
					    (o->group & BIO_GROUP_DISK ? count_disks() : 1) *
					    (o->group & BIO_GROUP_OP ? BIO_OP_OTHER + 1 : 1), true, 10240, 0,
					    &keys);
		if (o->c.verbose)
			fprintf(stderr, keys ? "--max-keys: %u entries, for %u keys now, x 2 + "
				"1024\n" : "--max-keys: %u entries (the keys could not be counted)\n",
				max_keys, keys);
	}
	if (!max_requests) {
		max_requests = auto_max_requests(&tags);
		if (o->c.verbose)
			fprintf(stderr, tags ? "--max-requests: %u entries, for the disks' %u "
				"request tags now, x 1.5 + 1024\n" : "--max-requests: %u entries "
				"(no disk's request tags could be read)\n", max_requests, tags);
	}

	s->rodata->hist_precision = o->c.precision;
	s->rodata->hist_nslots = nslots;
	s->rodata->hist_unit_ns = o->c.unit_ns;
	s->rodata->group = o->group;
	s->rodata->filter_tgid = o->c.pid;
	LH_SET_BIRTH_FILTER(s->rodata, &o->c);
	s->rodata->filter_dev = o->dev;
	s->rodata->filter_cgroup_id = o->c.cgroup_id;
	s->rodata->issue_has_q = p->issue_has_q;
	s->rodata->insert_has_q = p->insert_has_q;
	s->rodata->hist_size = (uint32_t)hist_size;

	lh_session_configure_records(&o->c, s->maps.lathist_events, &s->rodata->slower_than_ns,
				     &s->rodata->rb_wakeup_bytes);
	bpf_map__set_value_size(s->maps.bio_hist, value_size);
	bpf_map__set_value_size(s->maps.lathist_zero_hist, value_size);
	bpf_map__set_max_entries(s->maps.bio_hist, max_keys);
	if (o->group & BIO_GROUP_PROCESS)	/* many keys, created in bursts */
		lh_prealloc_if_small(s->maps.bio_hist, max_keys, value_size);
	bpf_map__set_max_entries(s->maps.bio_requests, max_requests);

	bpf_program__set_autoload(s->progs.bio_io_start_btf, btf && p->has_io_start);
	bpf_program__set_autoload(s->progs.bio_insert_btf, btf && !p->has_io_start);
	bpf_program__set_autoload(s->progs.bio_issue_btf, btf);
	bpf_program__set_autoload(s->progs.bio_complete_btf, btf);
	bpf_program__set_autoload(s->progs.bio_merge_btf, btf && p->has_merge);
	bpf_program__set_autoload(s->progs.bio_io_start_raw, raw && p->has_io_start);
	bpf_program__set_autoload(s->progs.bio_insert_raw, raw && !p->has_io_start);
	bpf_program__set_autoload(s->progs.bio_issue_raw, raw);
	bpf_program__set_autoload(s->progs.bio_complete_raw, raw);
	bpf_program__set_autoload(s->progs.bio_merge_raw, raw && p->has_merge);
	/* the end-of-run sweep (plan_for) */
	bpf_program__set_autoload(s->progs.bio_sweep, !p->sweep_err);
	lh_session_configure_cgroups(s->maps.lathist_cgroup_paths, s->progs.lathist_cgroup_mkdir,
				     o->group & BIO_GROUP_CGROUP);
	return value_size;
}

static int attach(void *skel, bool verbose)
{
	struct bio_bpf *s = skel;

	/* completion first, creation last: no start is recorded whose end is missed */
	struct lh_prog_link order[] = {
		{ s->progs.lathist_cgroup_mkdir, &s->links.lathist_cgroup_mkdir },
		{ s->progs.bio_complete_btf, &s->links.bio_complete_btf },
		{ s->progs.bio_complete_raw, &s->links.bio_complete_raw },
		{ s->progs.bio_merge_btf, &s->links.bio_merge_btf },
		{ s->progs.bio_merge_raw, &s->links.bio_merge_raw },
		{ s->progs.bio_issue_btf, &s->links.bio_issue_btf },
		{ s->progs.bio_issue_raw, &s->links.bio_issue_raw },
		{ s->progs.bio_insert_btf, &s->links.bio_insert_btf },
		{ s->progs.bio_insert_raw, &s->links.bio_insert_raw },
		{ s->progs.bio_io_start_btf, &s->links.bio_io_start_btf },
		{ s->progs.bio_io_start_raw, &s->links.bio_io_start_raw },
	};
	int err = lh_attach_in_order(TOOL, order, sizeof(order) / sizeof(order[0]), verbose);

	if (!err)
		lh_session_cgroups_attached(s->progs.lathist_cgroup_mkdir);
	return err;
}

static int add_keyed(struct lh_session *s, const void *k, const void *values)
{
	const struct bio_hist_key *bk = k;
	struct bio_ctx *x = s->tool;
	size_t hsz = s->value_size / BIO_NR_HISTS;
	struct lh_key key = {};
	int err = 0;

	if (x->o->group & BIO_GROUP_PROCESS) {
		key.fields |= LH_KEY_PID | LH_KEY_COMM;
		key.pid = bk->tgid;
		key.birth_ns = bk->birth_ns;
	}
	if (x->o->group & BIO_GROUP_DISK) {
		key.fields |= LH_KEY_DISK;
		bio_dev_name(bk->dev, key.disk, sizeof(key.disk));
	}
	if (x->o->group & BIO_GROUP_OP) {
		key.fields |= LH_KEY_OP;
		snprintf(key.op, sizeof(key.op), "%s", op_name(bk->op));
	}
	if (x->o->group & BIO_GROUP_CGROUP) {
		key.fields |= LH_KEY_CGROUP;
		key.cgroup_id = bk->cgroup_id;
		key.cgroup = lh_cgroup_name(bk->cgroup_id,
					    bpf_map__fd(x->skel->maps.lathist_cgroup_paths));
	}
	/* the comm lives in the first histogram's head */
	for (int cpu = 0; (key.fields & LH_KEY_COMM) && !key.comm[0] && cpu < s->ncpus; cpu++) {
		const struct lh_hist_head *h = (const void *)((const char *)values +
			(size_t)cpu * lh_percpu_stride(s->value_size));

		memcpy(key.comm, h->comm, sizeof(key.comm));
	}
	for (int kind = 0; kind < BIO_NR_HISTS && !err; kind++) {
		const char *base = (const char *)values + (size_t)kind * hsz;
		bool any = false;

		/* a key's queue or device histogram may be empty: leave it out */
		for (int cpu = 0; cpu < s->ncpus && !any; cpu++)
			any = !lh_hist_raw_empty(base + (size_t)cpu * lh_percpu_stride(s->value_size),
						 LH_NSLOTS(x->o->c.precision));
		if (any)
			err = lh_session_add_percpu(s, bio_kinds[kind].name, &key, values,
						    (size_t)kind * hsz);
	}
	return err;
}

/* Completed I/Os of a device (/sys/block/DEV/stat: reads and writes); -1 if unreadable. */
static int64_t dev_ios(const char *name)
{
	char path[PATH_MAX];
	unsigned long long r, w;
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "/sys/block/%s/stat", name);
	f = fopen(path, "re");
	if (!f)
		return -1;
	n = fscanf(f, "%llu %*u %*u %*u %llu", &r, &w);
	fclose(f);
	return n == 2 ? (int64_t)(r + w) : -1;
}

/* The bio-based devices with nothing beneath (unseen_dev), and their I/Os now. */
static void unseen_start(struct bio_ctx *x)
{
	struct dirent *e;
	DIR *d = opendir("/sys/block");
	int64_t ios;

	while (d && (e = readdir(d)) && x->nunseen < BIO_MAX_UNSEEN) {
		char parent[NAME_MAX + 1], beneath[256];
		struct unseen_dev *u = &x->unseen[x->nunseen];

		if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof(u->name) ||
		    disk_traceable(e->d_name, parent, sizeof(parent), beneath,
				   sizeof(beneath)) != -ENOTBLK || beneath[0] ||
		    (ios = dev_ios(e->d_name)) < 0)
			continue;
		memcpy(u->name, e->d_name, strlen(e->d_name) + 1);
		u->ios0 = (uint64_t)ios;
		x->nunseen++;
	}
	if (d)
		closedir(d);
}

/*
 * meta.unchecked: what the load left there, and the bio-based devices that
 * did I/O since the start (not under --disk, which names one request-based
 * disk): never "no loss" over I/O no tracepoint could show.
 */
static void unseen_say(struct lh_session *s, struct bio_ctx *x)
{
	char list[160] = "";
	size_t used = 0;
	struct bio_ctx now = { .o = x->o };

	/* as they are now: a device made during the run counts from 0, and one
	 * reset since counts from its reset (at least that many) */
	unseen_start(&now);
	for (int i = 0; i < now.nunseen && !x->o->disk[0] && used < sizeof(list); i++) {
		int64_t ios = (int64_t)now.unseen[i].ios0, was = 0;

		for (int j = 0; j < x->nunseen; j++)
			if (!strcmp(x->unseen[j].name, now.unseen[i].name) &&
			    ios >= (int64_t)x->unseen[j].ios0)
				was = (int64_t)x->unseen[j].ios0;
		if (ios > was)
			used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s %lld I/Os",
						 used ? ", " : "", now.unseen[i].name,
						 (long long)(ios - was));
	}
	snprintf(s->report.meta.unchecked, sizeof(s->report.meta.unchecked), "%s%s%s%s",
		 x->unchecked, x->unchecked[0] && list[0] ? "; " : "", list[0] ?
		 "bio-based devices did I/O that never becomes a request, so no tracepoint "
		 "shows it: " : "", list);
}

static int read_hists(struct lh_session *s, uint32_t buf)
{
	struct bio_ctx *x = s->tool;

	unseen_say(s, x);

	return lh_read_keyed(s, bpf_map__fd(x->skel->maps.bio_hist), sizeof(struct bio_hist_key),
			     s->value_size, offsetof(struct bio_hist_key, buf), buf, add_keyed);
}

/* A stage's time: ns in JSON (null when the request had no such stage, ~0); in
 * text, in the unit with 3 decimals ("-" without the stage). */
static void json_ns(struct lh_line *l, const char *key, unsigned long long ns)
{
	if (ns == ~0ULL)
		lh_json_null(l, key);
	else
		lh_json_u64(l, key, ns);
}

static void text_stage(struct lh_line *l, unsigned long long ns, double unit_ns)
{
	if (ns == ~0ULL)
		lh_line_char(l, '-');
	else
		lh_line_fixed(l, (double)ns / unit_ns, 3, 0);
}

int bio_record_line(const struct bio_record *r, const char *disk, bool json, uint64_t unit_ns,
		    const char *unit, char *buf, size_t len)
{
	const char *op = op_name(r->op);
	double u = (double)unit_ns;
	char comm[65];
	struct lh_line l;

	lh_printable(r->comm, sizeof(r->comm), comm, sizeof(comm));
	lh_line_init(&l, buf, len);
	if (json) {
		lh_json_begin(&l);
		lh_json_u64(&l, "ts_ns", r->ts_ns);
		json_ns(&l, "total_ns", r->total_ns);
		json_ns(&l, "queue_ns", r->queue_ns);
		json_ns(&l, "device_ns", r->device_ns);
		lh_json_u64(&l, "pid", r->pid);
		lh_json_string(&l, "comm", comm);
		lh_json_string(&l, "disk", disk);
		lh_json_string(&l, "op", op);
		lh_json_u64(&l, "bytes", r->bytes);
		lh_json_end(&l);
		return lh_line_end(&l);
	}
	/* "%.6f total %10.3f %s (queue %s, device %s)  %s %u bytes  disk %s  pid %u comm %s\n",
	 * the stages "%.3f" or "-" */
	lh_line_fixed(&l, (double)r->ts_ns / 1e9, 6, 0);
	lh_line_mem(&l, " total ", 7);
	lh_line_fixed(&l, (double)r->total_ns / u, 3, 10);
	lh_line_char(&l, ' ');
	lh_line_str(&l, unit);
	lh_line_mem(&l, " (queue ", 8);
	text_stage(&l, r->queue_ns, u);
	lh_line_mem(&l, ", device ", 9);
	text_stage(&l, r->device_ns, u);
	lh_line_mem(&l, ")  ", 3);
	lh_line_str(&l, op);
	lh_line_char(&l, ' ');
	lh_line_u64(&l, r->bytes);
	lh_line_mem(&l, " bytes  disk ", 13);
	lh_line_str(&l, disk);
	lh_line_mem(&l, "  pid ", 6);
	lh_line_u64(&l, r->pid);
	lh_line_mem(&l, " comm ", 6);
	lh_line_str(&l, comm);
	return lh_line_end(&l);
}

/*
 * A record's disk name: looked up (bio_dev_name, a readlink of ~5 us) once per
 * device per 100 ms of completions, not once per record; "?" for dev 0.
 */
static const char *record_disk(struct bio_ctx *x, uint32_t dev, uint64_t ts_ns)
{
	struct record_disk *d = NULL;

	if (!dev)
		return "?";
	for (size_t i = 0; i < BIO_RECORD_DISKS; i++)
		if (x->disks[i].dev == dev) {
			d = &x->disks[i];
			break;
		}
	if (d && (ts_ns - d->ts_ns < DISK_NAME_NS || d->ts_ns - ts_ns < DISK_NAME_NS))
		return d->name;
	if (!d)
		d = &x->disks[x->next_disk++ % BIO_RECORD_DISKS];
	d->dev = dev;
	d->ts_ns = ts_ns;
	bio_dev_name(dev, d->name, sizeof(d->name));
	return d->name;
}

/* One --slower-than record as a text or JSON line (lh_format_record_fn). */
static int format_record(void *ctx, const void *data, size_t size, bool json, char *buf,
			 size_t len)
{
	struct lh_session *s = ctx;
	struct bio_record anon;
	const struct bio_record *r = data;

	if (size < sizeof(*r) || r->type != LH_REC_BIO)
		return 0;
	if (s->c->anonymize) {
		anon = *r;
		anon.pid = lh_anon_id(&s->anon, r->pid);
		lh_anon_comm(&s->anon, anon.comm, sizeof(anon.comm));
		r = &anon;
	}
	return bio_record_line(r, record_disk(s->tool, r->dev, r->ts_ns), json,
			       s->report.meta.scheme.unit_ns, s->report.meta.unit, buf, len);
}

static void *skel_open(void)
{
	return bio_bpf__open();
}

static size_t skel_configure(void *skel, void *tool, enum lh_attach_mode type)
{
	struct bio_ctx *x = tool;

	plan_for(&x->plan, type, x->o->c.test_no_sweep);
	return configure(skel, x->o, &x->plan);
}

static int skel_load(void *skel)
{
	return bio_bpf__load(skel);
}

static void skel_destroy(void *skel)
{
	bio_bpf__destroy(skel);
}

static const struct lh_skel_ops skel_ops = { skel_open, skel_configure, skel_load, skel_destroy };

/* Before the last read: the requests whose completion came with no event and
 * that no later request in their struct showed (bpf/bio.bpf.c bio_sweep). */
static void sweep(struct lh_session *s, bool last)
{
	struct bio_ctx *x = s->tool;
	int err;

	if (!last || !bpf_program__autoload(x->skel->progs.bio_sweep))
		return;
	err = lh_run_prog(x->skel->progs.bio_sweep);
	if (err)
		fprintf(stderr, "lathist bio: the end-of-run sweep of requests in flight failed (%s): "
			"a completion with no event of a request still tracked is not counted\n",
			strerror(-err));
}

/* lathist bio: its registry descriptor's entry point (argv[0] is the verb). */
static int bio_main(int argc, char **argv)
{
	struct bio_opts o;
	struct bio_ctx x = { .o = &o };
	enum lh_attach_mode types[2], type = LH_ATTACH_AUTO;
	struct lh_session s;
	char grouping[32], what[64];
	size_t value_size = 0;
	void *skel;
	int err, ntypes, rc = LH_EXIT_RUNTIME;

	err = bio_parse_args(argc, argv, &o);
	if (err)
		return err > 0 ? LH_EXIT_OK : LH_EXIT_USAGE;
	if (lh_preflight(TOOL, &o.c))
		return LH_EXIT_RUNTIME;
	/* tp_btf needs BTF and kernel 5.5+; the tracepoints' prototypes decide the rest */
	ntypes = lh_attach_candidates(TOOL, o.c.attach, lh_tp_nargs("block_rq_issue") > 0,
				      "block_rq_issue in its BTF", types);
	if (!ntypes)
		return LH_EXIT_RUNTIME;
	grouping_name(o.group, grouping, sizeof(grouping));
	init_meta(&s, &o, grouping);
	s.read_hists = read_hists;
	s.sweep = sweep;
	s.format_record = format_record;
	s.tool = &x;
	err = lh_load_first(TOOL, &o.c, types, ntypes, &skel_ops, &x, &skel, &type, &value_size);
	if (!skel)
		goto out;
	x.skel = skel;
	meta_attach(&s.report.meta, &x.plan);
	/* meta.unchecked from each read on: this, and the I/O no tracepoint showed */
	if (x.plan.sweep_err)
		snprintf(x.unchecked, sizeof(x.unchecked),
			 "the end-of-run sweep cannot run here (%s), so a request whose completion "
			 "no event showed and whose struct was not reused is not counted "
			 "(missed_completion)", x.plan.sweep_err == -EOPNOTSUPP ?
			 "bpf_for_each_map_elem, 5.13+, is missing" : strerror(-x.plan.sweep_err));
	unseen_start(&x);
	if (!err) {
		LH_SESSION_BIND(&s, x.skel);
		lh_session_read_early(&s, bpf_map__max_entries(x.skel->maps.bio_hist));
	}
	snprintf(what, sizeof(what), "block I/O latency (%s)", lh_attach_name(type));
	rc = lh_session_main(&s, err, x.skel->obj, value_size, attach, x.skel, what);
out:
	if (x.skel)
		bio_bpf__destroy(x.skel);
	return rc;
}

static const char *const bio_groupings[] = { "process", "disk", "op", "cgroup", NULL };
static const unsigned int bio_grouping_fields[] = {
	LH_KEY_PID | LH_KEY_COMM, LH_KEY_DISK, LH_KEY_OP, LH_KEY_CGROUP,
};
/* each request in total once (queue and device: those that have the stage) */
static const char *const bio_paired[] = { "total", NULL };

/* What each counter means in bio (text -v, -h -v, the man page; docs/losses.md
 * explains each at length). */
static const char *const bio_counter_desc[LH_NR_COUNTERS] = {
	[LH_EV_ENDS] = "final completions of traced requests seen",
	[LH_EV_PAIRED] = "completions paired with their request's start: the requests in the "
			 "histograms",
	[LH_EV_FILTERED] = "requests the filters (-p, --cgroup, --disk) left out: not a loss",
	[LH_EV_BEFORE_TRACE] = "completions of requests in flight when tracing began: not a loss",
	[LH_EV_BIO_CREATED] = "requests created (block_io_start, or block_rq_insert before 6.5)",
	[LH_EV_BIO_ISSUED] = "requests issued to the driver (block_rq_issue)",
	[LH_EV_BIO_NO_QUEUE] = "requests first seen at issue: device and total only",
	[LH_EV_BIO_PARTIAL] = "completions of part of a request (counted once, at the end)",
	[LH_EV_BIO_REQUEUED] = "requests issued again after a requeue (device time from the last "
			       "issue)",
	[LH_EV_BIO_MERGED] = "requests merged into another before issue (counted with it)",
	[LH_EV_BIO_UNISSUED] = "requests completed without reaching the driver (e.g. empty "
			       "flushes): total only",
	[LH_EV_RB_ELIGIBLE] = "requests at or over --slower-than: one record each",
	[LH_LOSS_UNPAIRED] = "completions whose request's start no event showed",
	[LH_LOSS_OVERWRITTEN] = "starts replaced by a newer start of the same request",
	[LH_LOSS_MISSED_COMPLETION] = "requests whose completion no event showed (the request "
				      "struct came back for a new request, or the kernel had freed "
				      "it by the end of the run)",
	[LH_LOSS_NEGATIVE] = "completions timestamped before their start",
	[LH_LOSS_ABSURD] = "requests over one hour: broken pairings, not latencies",
	[LH_LOSS_START_E2BIG] = "the request map was full (raise --max-requests)",
	[LH_LOSS_START_ENOMEM] = "the request map was out of memory",
	[LH_LOSS_START_OTHER] = "a request map update failed (other errno)",
	[LH_LOSS_HIST_E2BIG] = "the keyed histogram map was full (raise --max-keys)",
	[LH_LOSS_HIST_ENOMEM] = "the histogram map was out of memory",
	[LH_LOSS_HIST_OTHER] = "a histogram map update failed (other errno)",
	[LH_LOSS_RINGBUF] = "records not written: the ring buffer was full (the histograms still "
			    "count the requests; raise --ringbuf-size)",
	[LH_LOSS_PROG_MISSED] = "runs of lathist's programs the kernel skipped (the program was "
				"already running on that CPU): each may lose an event",
};

static const struct lh_tool_tp bio_tps[] = {
	{ "block/block_io_start", false, 1, "bio: request creation (6.5+; else block_rq_insert)" },
	{ "block/block_rq_insert", false, 1, "bio: request creation before 6.5" },
	{ "block/block_rq_issue", true, 0, "bio: requests reaching the driver" },
	{ "block/block_rq_complete", true, 0, "bio: completions" },
	{ "block/block_rq_merge", false, 0, "bio: merged requests (else seen as reuse)" },
};

/* What bio needs beyond its tracepoints, for lathist doctor: bpf_for_each_map_elem
 * (5.13) for its end-of-run sweep of the requests in flight; without it bio runs
 * and says NOT CHECKED. */
static void bio_doctor(struct lh_doctor *d)
{
	int r;

	if (!lh_doctor_privileged(d)) {
		lh_doctor_say(d, "bio sweep", LH_CHECK_DENIED, "cannot check without CAP_BPF");
		return;
	}
	r = libbpf_probe_bpf_helper(BPF_PROG_TYPE_RAW_TRACEPOINT, BPF_FUNC_for_each_map_elem,
				    NULL);
	lh_doctor_say(d, "bio sweep", r == 1 ? LH_CHECK_OK : LH_CHECK_INFO, "%s", r == 1 ?
		      "bpf_for_each_map_elem: the end-of-run sweep of requests in flight runs" :
		      "no bpf_for_each_map_elem (5.13+): bio runs without its end-of-run sweep, "
		      "and says NOT CHECKED");
}

/* bio's registry descriptor (src/registry.h). */
const struct lh_tool_desc bio_tool = {
	.name = "bio",
	.summary = "block I/O latency: queue and device time, per process, disk, op",
	.main = bio_main,
	.doctor = bio_doctor,
	.counter_desc = bio_counter_desc,
	.noun = "requests",
	.everyone = "all requests",
	.kinds = bio_kinds,
	.nkinds = BIO_NR_HISTS,
	.has_bytes = true,
	.bytes_hist = "total",
	.bytes_help = "Bytes of the requests completed (taken at issue).",
	.groupings = bio_groupings,
	.grouping_fields = bio_grouping_fields,
	.paired_hists = bio_paired,
	.serve_opts = (const char *const[]){ "per-process", "per-disk", "per-op", "per-cgroup",
					     "disk", "max-requests", NULL },
	.groupings_combine = true,
	.om_label = "stage",
	.om_help = "Block I/O latency per request by stage: queue (created to issued), device "
		   "(issued to completed), total; buckets hold lo < v <= le.",
	.tps = bio_tps,
	.ntps = sizeof(bio_tps) / sizeof(bio_tps[0]),
	.any_of_check = "bio queue stage",
	.any_of_missing = "neither block_io_start nor block_rq_insert: bio measures device "
			  "time only",
};
