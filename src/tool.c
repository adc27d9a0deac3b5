// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <bpf/btf.h>
#include "bpfcommon.h"
#include "cli.h"
#include "tool.h"
#include "util.h"
#include "target.h"

#define LH_MIN_NOFILE 64

/* r in o's format to f; 0, or -ENOMEM / -EIO (f's error). */
static int render_to(FILE *f, const struct lh_report *r, const struct lh_common_opts *o)
{
	if (o->format == LH_FMT_JSON) {
		/* with -i one compact line per interval, on stdout and in -o's file
		 * alike: pretty-printed, 10,000 keys took 22 MB a second, compact 10 */
		int err = lh_render_json_file(f, r, o->interval_ns != 0);

		fputc('\n', f);	/* terminate the document with a newline */
		if (err)
			return err;
	} else if (o->format == LH_FMT_CSV) {	/* one header on stdout; each file has its own */
		lh_render_csv(f, r, o->output || r->meta.interval_index <= 1);
	} else if (o->format == LH_FMT_OPENMETRICS || o->format == LH_FMT_PROMETHEUS) {
		struct lh_label labels[LH_MAX_LABELS];
		struct lh_om_opts om;

		lh_om_for(o, &r->meta, o->format == LH_FMT_OPENMETRICS, &om, labels);
		lh_render_openmetrics(f, r, &om);
	} else {
		lh_render_text(f, r, &o->text);
	}
	return ferror(f) ? -EIO : 0;
}

struct emit { const struct lh_report *r; const struct lh_common_opts *o; };

/* lh_write_atomic_with's fill: render into the unnamed file as it is made. */
static int render_fd(int fd, void *ctx)
{
	const struct emit *e = ctx;
	int dfd = dup(fd), err;
	FILE *f = dfd < 0 ? NULL : fdopen(dfd, "w");

	if (!f) {
		err = -errno;
		if (dfd >= 0)
			close(dfd);
		return err;
	}
	errno = 0;
	err = render_to(f, e->r, e->o);
	if (err == -EIO)
		err = errno ? -errno : -EIO;
	if (fclose(f) && !err)
		err = -errno;
	return err;
}

/* With -i the same failure at every interval is said once, and so is the first write
 * that works again (a disk that filled up and was freed). Per thread: each of serve's
 * tools runs in a thread of its own (and writes no report), so none shares them.
 * out_err: the last write's error (0: written); out_unwritten: the reports not written
 * since the last that was. */
static __thread int out_err;
static __thread uint64_t out_unwritten;

bool lh_stdout_gone;

/* Say that output (NULL: stdout) could not be written (err: negative errno), once for
 * a run of the same error, and that it was written again after one; returns err. */
static int write_failed(const char *who, const char *output, int err)
{
	struct stat st;

	if (err == -EPIPE && !output)
		lh_stdout_gone = true;
	if (err && err != out_err && output) {
		const char *why = strerror(-err), *then = "the previous file, if any, is unchanged";

		/* EINVAL: lh_write_atomic found no regular file there, or the file
		 * system refuses write(2) itself (hugetlbfs, mqueue) */
		if (err == -ELOOP)
			why = "it is now a symbolic link";
		else if (err == -EINVAL && !lstat(output, &st) && !S_ISREG(st.st_mode))
			why = "it is no longer a regular file";
		else if (err == -EINVAL)
			then = "the file system there refuses the write; give a file on another one";
		fprintf(stderr, "lathist %s: cannot write %s: %s (%s)\n", who, output, why, then);
	} else if (err && err != out_err)		/* stdout: nothing stays in its place */
		fprintf(stderr, "lathist %s: cannot write to standard output: %s\n", who,
			strerror(-err));
	if (!err && out_err)
		fprintf(stderr, "lathist %s: %s written again (%" PRIu64 " report%s not written "
			"before it)\n", who, output ? output : "standard output", out_unwritten,
			out_unwritten == 1 ? " was" : "s were");
	out_unwritten = err ? out_unwritten + 1 : 0;
	out_err = err;
	return err;
}

void lh_emit_end(const char *who, const struct lh_common_opts *o)
{
	const char *name = o->output ? o->output : "standard output";

	/* a closed pipe ended the run at once: said when it closed; a run of one report
	 * (no -i) said its one failure */
	if (!out_err || out_err == -EPIPE || !o->interval_ns)
		return;
	if (out_unwritten == 1)
		fprintf(stderr, "lathist %s: the last report could not be written to %s%s\n", who,
			name, o->output ? " (it holds an older one, if any)" : "");
	else
		fprintf(stderr, "lathist %s: the last %" PRIu64 " reports could not be written "
			"to %s%s\n", who, out_unwritten, name,
			o->output ? " (it holds an older one, if any)" : "");
}

int lh_emit_bytes(const char *who, const char *output, const char *buf, size_t len)
{
	int err = 0;

	errno = 0;
	if (output)
		return write_failed(who, output, lh_write_atomic(output, buf, len));
	if (lh_stdout_gone)		/* nobody reads it (said when that was seen) */
		return -EPIPE;
	/* the document in one write(2) where the kernel takes it whole (stdio would cut it
	 * at its buffer's 4 KiB), after whatever stdio holds */
	if (fflush(stdout)) {
		err = errno ? -errno : -EIO;
		clearerr(stdout);
	} else {
		struct lh_lines l;

		lh_lines_use(&l, STDOUT_FILENO);
		err = lh_lines_write(&l, buf, len);
	}
	return write_failed(who, NULL, err);
}

/*
 * The stdout document, its pages kept from one interval to the next and grown
 * with mremap (in place, or moved without a copy): a document of N bytes costs
 * N bytes once, where each doubling of an open_memstream buffer allocates the
 * next, copies into it and frees the last (three times the document at the
 * end). Pages never written are never resident.
 */
struct doc_buf {
	char *p;
	size_t len, cap;
};
static __thread struct doc_buf doc;

/* fopencookie's write: append n bytes; -1 (ENOMEM) when no memory is left. */
static ssize_t doc_write(void *c, const char *buf, size_t n)
{
	struct doc_buf *d = c;

	if (n > d->cap - d->len) {
		size_t cap = d->cap ? d->cap : (size_t)1 << 20;
		void *p;

		while (cap - d->len < n)
			cap *= 2;
		p = d->p ? mremap(d->p, d->cap, cap, MREMAP_MAYMOVE) :
			   mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			errno = ENOMEM;
			return -1;
		}
		d->p = p;
		d->cap = cap;
	}
	memcpy(d->p + d->len, buf, n);
	d->len += n;
	return (ssize_t)n;
}

int lh_emit(const struct lh_report *r, const struct lh_common_opts *o)
{
	const char *who = o->verb ? o->verb : r->meta.tool;
	cookie_io_functions_t io = { .write = doc_write };
	struct emit e = { r, o };
	FILE *f;
	int err;

	if (o->output) {	/* written as it is rendered: a large report is not held */
		errno = 0;
		return write_failed(who, o->output, lh_write_atomic_with(o->output, render_fd, &e));
	}
	/* stdout: each document in one write, so interval lines never tear */
	doc.len = 0;
	f = fopencookie(&doc, "w", io);
	err = f ? render_to(f, r, o) : -ENOMEM;
	if (f && fclose(f) && !err)
		err = -ENOMEM;
	if (err) {
		fprintf(stderr, "lathist %s: out of memory rendering the report\n", who);
		return -ENOMEM;
	}
	return lh_emit_bytes(who, NULL, doc.p, doc.len);
}

int lh_attach_candidates(const char *tool, enum lh_attach_mode mode, bool btf_ok,
			 const char *btf_why, enum lh_attach_mode out[2])
{
	int n = 0;

	switch (mode) {
	case LH_ATTACH_TP_BTF:
		if (!btf_ok) {
			fprintf(stderr, "lathist %s: --attach tp_btf: this kernel lacks %s; use "
				"--attach auto (or raw_tp)\n", tool, btf_why);
			return 0;
		}
		out[n++] = mode;
		break;
	case LH_ATTACH_RAW_TP:
		out[n++] = mode;
		break;
	default:
		if (btf_ok)
			out[n++] = LH_ATTACH_TP_BTF;
		out[n++] = LH_ATTACH_RAW_TP;
	}
	return n;
}

/*
 * Why the kernel's BTF cannot be loaded, in buf; NULL when it can. libbpf
 * returns -ESRCH ("No such process") for any failure to load it, an
 * address-space limit (ulimit -v) running out of memory included.
 */
static const char *kernel_btf_why(char *buf, size_t len)
{
	/* the file libbpf reads first, read raw: its errno is the real one */
	struct btf *b = btf__parse_raw("/sys/kernel/btf/vmlinux");
	struct rlimit rl;
	int e = errno;

	if (b) {
		btf__free(b);
		return NULL;
	}
	if (e == ENOMEM && !getrlimit(RLIMIT_AS, &rl) && rl.rlim_cur != RLIM_INFINITY)
		snprintf(buf, len, "loading the kernel's BTF (/sys/kernel/btf/vmlinux) ran out of "
			 "memory under the address-space limit (ulimit -v %llu KiB); raise it "
			 "(ulimit -v unlimited)", (unsigned long long)rl.rlim_cur / 1024);
	else
		snprintf(buf, len, "the kernel's BTF (/sys/kernel/btf/vmlinux) cannot be loaded: %s",
			 strerror(e));
	return buf;
}

int lh_load_first(const char *tool, const struct lh_common_opts *o,
		  const enum lh_attach_mode *types, int n, const struct lh_skel_ops *ops,
		  void *ctx, void **skel, enum lh_attach_mode *type, size_t *value_size)
{
	char why[256];
	int err = -EINVAL;

	for (int i = 0; i < n; i++) {
		*type = types[i];
		*skel = ops->open();
		if (!*skel) {
			err = -errno;
			fprintf(stderr, "lathist %s: cannot open the BPF object: %s\n", tool,
				strerror(-err));
			return err;
		}
		*value_size = ops->configure(*skel, ctx, types[i]);
		err = (o->test_reject & (1U << types[i])) ? -EINVAL : ops->load(*skel);
		/* EPERM without the privileges, or no kernel BTF (no CO-RE): another
		 * attach type would fail the same way */
		if (!err || i + 1 == n ||
		    (err == -EPERM && lh_check_privileges(why, sizeof(why))) ||
		    (err == -ESRCH && kernel_btf_why(why, sizeof(why))))
			break;
		fprintf(stderr, "lathist %s: the %s programs did not load (%s%s); trying %s\n",
			tool, lh_attach_name(types[i]), strerror(-err),
			o->verbose ? "" : ", -v shows the verifier log", lh_attach_name(types[i + 1]));
		ops->destroy(*skel);
		*skel = NULL;
	}
	return err;
}

void lh_load_error(const char *tool, int err, bool verbose)
{
	const char *why;
	char buf[256];

	switch (-err) {
	case ESRCH:	/* libbpf: no kernel BTF */
		why = kernel_btf_why(buf, sizeof(buf));
		if (!why)
			why = strerror(-err);
		break;
	case EPERM:
		if (!lh_check_privileges(buf, sizeof(buf)))	/* privileged: not that */
			why = "the kernel refused a program (EPERM) although lathist has CAP_BPF "
			      "and CAP_PERFMON: a kernel restriction (lockdown, an LSM, a program "
			      "type this kernel forbids); -v names the program, lathist doctor "
			      "lists what loads";
		else
			why = "operation not permitted: needs root (CAP_BPF, CAP_PERFMON) and no "
			      "lockdown forbidding BPF (see /sys/kernel/security/lockdown)";
		break;
	case EACCES:
	case EINVAL:
		why = "the kernel's verifier rejected a program (this kernel may lack a feature "
		      "lathist needs; lathist doctor says which, and another --attach type "
		      "may load)";
		break;
	case ENOMEM:
		why = "out of memory for maps; lower --max-keys or --precision";
		break;
	case E2BIG:
		why = "over a kernel limit: a map value too large, or a program past the "
		      "verifier's instruction limit; lower --precision, --max-keys or the number "
		      "of --counters (-v says which)";
		break;
	default:
		why = strerror(-err);
	}
	fprintf(stderr, "lathist %s: cannot load the BPF programs: %s%s\n", tool, why,
		verbose || why == buf ? "" : " (run with -v for the verifier log)");
}

/* The long options of opts that name starts (up to any '='), as ", --a, --b"
 * into buf (cut to len); how many there are. */
static int prefix_of(const struct option *opts, const char *name, char *buf, size_t len)
{
	size_t n = strcspn(name, "="), o = 0;
	int found = 0;

	buf[0] = '\0';
	for (; n && opts && opts->name; opts++) {	/* "--=x" names none */
		if (strncmp(opts->name, name, n))
			continue;
		if (o < len)
			o += (size_t)snprintf(buf + o, len - o, "%s--%s", found ? ", " : "",
					      opts->name);
		found++;
	}
	return found;
}

void lh_bad_option(const char *tool, int opt, char **argv, const struct option *longopts)
{
	const char *arg = argv[optind - 1];
	char names[160];

	/* GNU getopt may have moved non-options (a value given to an unknown
	 * option) in front: the option is the last word that starts with '-' */
	for (int i = optind - 1; i > 1 && arg[0] != '-'; i--)
		arg = argv[i - 1];

	if (opt == ':')
		lh_usage_error(tool, "option '%s' needs a value; see lathist %s -h", arg, tool);
	else if (optopt > 0 && optopt < 0x80 && arg[0] == '-' && arg[1] != '-')
		lh_usage_error(tool, "unknown option '-%c'; see lathist %s -h", optopt, tool);
	else if (optopt)	/* a long option given a value it does not take */
		lh_usage_error(tool, "option '%s' takes no value; see lathist %s -h", arg, tool);
	else if (arg[0] == '-' && arg[1] == '-' && prefix_of(longopts, arg + 2, names,
							   sizeof(names)) > 1)
		lh_usage_error(tool, "option '%.*s' is ambiguous (%s); give it whole",
			       (int)strcspn(arg, "="), arg, names);
	else
		lh_usage_error(tool, "unknown option '%s'; see lathist %s -h", arg, tool);
}

bool lh_stdout_closed;

/*
 * Every map, program, link and perf event is a file descriptor: raise the
 * soft RLIMIT_NOFILE to the hard one, and say so plainly when even that is
 * too few (the kernel's EMFILE would otherwise surface as a load failure).
 */
static int raise_nofile(const char *tool)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 0;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur < LH_MIN_NOFILE) {
		fprintf(stderr, "lathist %s: only %llu file descriptors allowed (ulimit -n); "
			"BPF maps, programs and perf events need at least %d plus one per counter "
			"and CPU: raise ulimit -n\n", tool, (unsigned long long)rl.rlim_cur,
			LH_MIN_NOFILE);
		return -1;
	}
	return 0;
}

int lh_preflight(const char *tool, const struct lh_common_opts *o)
{
	bool to_stdout = !o->output || !strcmp(o->output, "-");
	char msg[256];
	int err;

	/* text records also go to stdout when the report does (or with --events -) */
	if (o->slower_than_ns != UINT64_MAX && o->events_path && !strcmp(o->events_path, "-"))
		to_stdout = true;
	if (lh_stdout_closed && to_stdout) {
		fprintf(stderr, "lathist %s: standard output is closed; give -o FILE (and "
			"--events FILE) or run with stdout open\n", tool);
		return -EBADF;
	}

	if (raise_nofile(tool))
		return -EMFILE;
	err = lh_check_bpf_ready(msg, sizeof(msg));
	if (err) {
		fprintf(stderr, "lathist %s: %s\n", tool, msg);
		return err;
	}
	lh_libbpf_setup(o->verbose);
	return 0;
}

int lh_attach_in_order(const char *tool, const struct lh_prog_link *progs, size_t n, bool verbose)
{
	for (size_t i = 0; i < n; i++) {
		if (!bpf_program__autoload(progs[i].prog))
			continue;
		*progs[i].link = bpf_program__attach(progs[i].prog);
		if (!*progs[i].link) {
			int err = -errno;

			fprintf(stderr, "lathist %s: cannot attach %s: %s%s\n", tool,
				bpf_program__section_name(progs[i].prog), strerror(-err),
				verbose ? "" : " (run with -v for details)");
			return err;
		}
	}
	return 0;
}

/* Processes in /proc (this pid namespace's), 0 when it cannot be read. */
static uint32_t count_processes(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	uint32_t n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (e->d_name[0] >= '1' && e->d_name[0] <= '9')
			n++;
	closedir(d);
	return n;
}

/* The kernel's thread count (nr_threads: /proc/loadavg "R/T"), 0 unknown. */
static uint32_t count_threads(void)
{
	FILE *f = fopen("/proc/loadavg", "r");
	unsigned int running, total = 0;

	if (f) {
		if (fscanf(f, "%*s %*s %*s %u/%u", &running, &total) != 2)
			total = 0;
		fclose(f);
	}
	return total;
}

uint32_t lh_auto_max_keys(enum lh_key_unit unit, uint32_t per_key, uint32_t mult,
			  bool two_halves, uint32_t fallback, uint32_t floor, uint32_t *keys)
{
	uint64_t k = 1, n;

	/* in a PID namespace of its own /proc shows the container's processes, and
	 * the programs see the host's: its threads (loadavg's count is not
	 * namespaced) bound those */
	if (unit == LH_KEYS_PROCESSES && !lh_in_init_pidns())
		unit = LH_KEYS_THREADS;
	if (unit != LH_KEYS_FEW) {
		k = unit == LH_KEYS_THREADS ? count_threads() : count_processes();
		if (!k) {	/* unknown: the fixed size lathist had */
			*keys = 0;
			return fallback;
		}
	}
	k *= mult ? mult : 1;
	*keys = k > UINT32_MAX ? UINT32_MAX : (uint32_t)k;
	n = (two_halves ? k * per_key * 2 : k * per_key * 3 / 2) + 1024;
	if (n < floor)
		n = floor;
	return n > (1U << 24) ? 1U << 24 : (uint32_t)n;
}
