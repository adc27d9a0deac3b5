// SPDX-License-Identifier: MIT
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <zlib.h>
#include <json-c/json.h>
#include <bpf/libbpf.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include "context.h"
#include "gitrev.h"
#include "util.h"
#include "version.h"

#define MAX_DISKS 32

/* The first line of path, without its newline, into buf: its length, or -1. */
static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	size_t n;

	buf[0] = '\0';
	if (!f)
		return -1;
	if (!fgets(buf, (int)len, f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	n = strcspn(buf, "\n");
	buf[n] = '\0';
	return (int)n;
}

static json_object *str_or_null(const char *s)
{
	return s && s[0] ? json_object_new_string(s) : NULL;
}

/* "none voluntary (full) lazy": the word in parentheses into out. */
static bool selected_mode(const char *text, char out[16])
{
	const char *a = strchr(text, '('), *b = a ? strchr(a, ')') : NULL;

	if (!a || !b || b - a - 1 <= 0 || b - a - 1 >= 16)
		return false;
	memcpy(out, a + 1, (size_t)(b - a - 1));
	out[b - a - 1] = '\0';
	return true;
}

/*
 * debugfs's sched/preempt (PREEMPT_DYNAMIC kernels): where debugfs is not
 * mounted, a child mounts it in a mount namespace of its own (nothing changes
 * for the rest of the system; it needs CAP_SYS_ADMIN, else the file stays
 * unread) and passes the text back through a pipe. Only async-signal-safe calls
 * in the child: lathist serve forks from a process with threads.
 */
static bool debugfs_preempt(char *buf, size_t len)
{
	static const char path[] = "/sys/kernel/debug/sched/preempt";
	int p[2], status;
	ssize_t n, got = 0;
	pid_t pid;

	if (read_line(path, buf, len) > 0)
		return true;
	if (access("/sys/kernel/debug", F_OK) || pipe2(p, O_CLOEXEC))
		return false;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return false;
	}
	if (pid == 0) {
		char b[256];
		int fd;

		close(p[0]);
		if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
			_exit(1);
		/* under lockdown (integrity, confidentiality) debugfs's files refuse to open
		 * and each try is a line in the kernel log: ask securityfs first. (Nor can the
		 * mode then change after boot: cmdline and config tell it.) */
		mount("securityfs", "/sys/kernel/security", "securityfs",
		      MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
		fd = open("/sys/kernel/security/lockdown", O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && (n = read(fd, b, sizeof(b) - 1)) > 0) {
			b[n] = '\0';
			if (!strstr(b, "[none]"))
				_exit(1);
		}
		if (mount("debugfs", "/sys/kernel/debug", "debugfs",
			  MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
			_exit(1);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			_exit(1);
		n = read(fd, b, sizeof(b));
		if (n > 0 && write(p[1], b, (size_t)n) != n)
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	while (got < (ssize_t)len - 1 && (n = read(p[0], buf + got, len - 1 - (size_t)got)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		got += n;
	}
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	buf[got] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return got > 0;
}

/* The build's default preemption model from the kernel config (CONFIG_PREEMPT_*=y). */
static bool config_preempt(char out[16])
{
	static const struct { const char *opt, *model; } opts[] = {
		{ "CONFIG_PREEMPT_RT=y", "rt" }, { "CONFIG_PREEMPT_LAZY=y", "lazy" },
		{ "CONFIG_PREEMPT=y", "full" }, { "CONFIG_PREEMPT_VOLUNTARY=y", "voluntary" },
		{ "CONFIG_PREEMPT_NONE=y", "none" },
	};
	char path[200], line[256];
	struct utsname u;
	int found = -1;
	gzFile f;

	uname(&u);
	/* /proc/config.gz (CONFIG_IKCONFIG_PROC), else the distribution's copy; gzread
	 * reads plain files too */
	f = gzopen("/proc/config.gz", "rb");
	if (!f) {
		snprintf(path, sizeof(path), "/boot/config-%s", u.release);
		f = gzopen(path, "rb");
	}
	if (!f)
		return false;
	while (gzgets(f, line, sizeof(line))) {
		line[strcspn(line, "\n")] = '\0';
		for (int i = 0; i < (int)(sizeof(opts) / sizeof(opts[0])); i++)
			if (!strcmp(line, opts[i].opt) && (found < 0 || i < found))
				found = i;	/* RT over LAZY: an RT kernel may set both */
	}
	gzclose(f);
	if (found < 0)
		return false;
	snprintf(out, 16, "%s", opts[found].model);
	return true;
}

/* The kernel command line up to "--" (what follows is init's) into buf. */
static int kernel_cmdline(char *buf, size_t len)
{
	char *dd;

	if (read_line("/proc/cmdline", buf, len) < 0)
		return -1;
	dd = strstr(buf, " -- ");
	if (dd)
		*dd = '\0';
	else if (!strncmp(buf, "-- ", 3))
		buf[0] = '\0';
	return 0;
}

/* Is NAME on the command line: as NAME=VALUE (its value, the last one as the kernel
 * takes it, into out), as a flag NAME alone, or not at all. */
enum cmdline_word { CMD_ABSENT, CMD_FLAG, CMD_VALUE };

static enum cmdline_word cmdline_word(const char *cmdline, const char *name, char *out,
				      size_t len)
{
	enum cmdline_word found = CMD_ABSENT;
	size_t nl = strlen(name);

	for (const char *w = cmdline; *w; ) {
		size_t wl;

		while (*w == ' ')
			w++;
		wl = strcspn(w, " ");
		if (wl > nl && !strncmp(w, name, nl) && w[nl] == '=') {
			snprintf(out, len, "%.*s", (int)(wl - nl - 1), w + nl + 1);
			found = CMD_VALUE;
		} else if (wl == nl && !strncmp(w, name, nl) && found == CMD_ABSENT) {
			found = CMD_FLAG;	/* a value anywhere wins over the flag */
		}
		w += wl;
	}
	return found;
}

/*
 * The preemption model a kernel runs ("none", "voluntary", "full", "lazy", "rt";
 * "" unknown) and where it was read ("version", "debugfs", "cmdline", "config";
 * "" unknown): docs/schema.md, meta.context.preempt.
 */
static void context_preempt(char model[16], char source[16])
{
	char text[256], cmdline[4096];
	struct utsname u;

	model[0] = source[0] = '\0';
	uname(&u);
	/* scripts/mkcompile_h: uname -v says PREEMPT_RT, PREEMPT_DYNAMIC or PREEMPT */
	if (strstr(u.version, "PREEMPT_RT")) {
		snprintf(model, 16, "rt");
		snprintf(source, 16, "version");
		return;
	}
	if (debugfs_preempt(text, sizeof(text)) && selected_mode(text, model)) {
		snprintf(source, 16, "debugfs");
		return;
	}
	if (strstr(u.version, "PREEMPT_DYNAMIC") && !kernel_cmdline(cmdline, sizeof(cmdline)) &&
	    cmdline_word(cmdline, "preempt", text, sizeof(text)) == CMD_VALUE &&
	    (!strcmp(text, "none") || !strcmp(text, "voluntary") || !strcmp(text, "full") ||
	     !strcmp(text, "lazy"))) {
		snprintf(model, 16, "%.15s", text);
		snprintf(source, 16, "cmdline");
		return;
	}
	if (config_preempt(model)) {
		snprintf(source, 16, "config");
		return;
	}
	if (strstr(u.version, " PREEMPT ")) {
		snprintf(model, 16, "full");
		snprintf(source, 16, "version");
	}
}

/*
 * The command-line settings that move latency (kernel-parameters.txt), as
 * {name: value}, true for a flag; {} when none is given, NULL when
 * /proc/cmdline cannot be read.
 */
const char *const lh_context_cmdline_names[] = {
	"isolcpus", "nohz_full", "nohz", "rcu_nocbs", "rcu_nocb_poll", "threadirqs",
	"preempt", "mitigations", "nosmt", "irqaffinity", "idle", "skew_tick",
	"intel_idle.max_cstate", "processor.max_cstate", "intel_pstate", "nosoftlockup", NULL,
};

static json_object *latency_cmdline(void)
{
	const char *const *names = lh_context_cmdline_names;
	char cmdline[4096], v[512];
	json_object *o;

	if (kernel_cmdline(cmdline, sizeof(cmdline)))
		return NULL;
	o = json_object_new_object();
	for (size_t i = 0; o && names[i]; i++) {
		enum cmdline_word w = cmdline_word(cmdline, names[i], v, sizeof(v));

		if (w == CMD_VALUE)
			json_object_object_add(o, names[i], json_object_new_string(v));
		else if (w == CMD_FLAG)
			json_object_object_add(o, names[i], json_object_new_boolean(true));
	}
	return o;
}

/* /proc/cpuinfo's first "model name" (x86) or "Hardware"/"cpu model" line. */
static json_object *cpu_model(void)
{
	static const char *const keys[] = { "model name", "cpu model", "Hardware" };
	FILE *f = fopen("/proc/cpuinfo", "re");
	char line[512];
	json_object *o = NULL;

	if (!f)
		return NULL;
	while (!o && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		for (size_t i = 0; colon && i < sizeof(keys) / sizeof(keys[0]); i++) {
			size_t kl = strlen(keys[i]);

			if (!strncmp(line, keys[i], kl) && (line[kl] == '\t' || line[kl] == ' ' ||
							    line[kl] == ':')) {
				char *v = colon + 1;

				while (*v == ' ')
					v++;
				v[strcspn(v, "\n")] = '\0';
				o = str_or_null(v);
				break;
			}
		}
	}
	fclose(f);
	return o;
}

/*
 * Every online CPU's cpufreq scaling_governor, summarized: "performance" when
 * all agree, else "performance (0-3), powersave (4-7)"; NULL without cpufreq
 * (a VM without a cpufreq driver has none). The first LH_MAX_CPU_WORDS * 64 CPUs.
 */
static json_object *governors(void)
{
	enum { MAXG = 8, NCPU = LH_MAX_CPU_WORDS * 64 };
	uint64_t online[LH_MAX_CPU_WORDS], mask[MAXG][LH_MAX_CPU_WORDS];
	char names[MAXG][32], out[512] = "", path[96], g[32], list[256];
	int ng = 0;

	if (lh_online_cpus(online, LH_MAX_CPU_WORDS, NCPU))
		return NULL;
	memset(mask, 0, sizeof(mask));
	for (int c = 0; c < NCPU; c++) {
		int k;

		if (!(online[c / 64] >> (c % 64) & 1))
			continue;
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor", c);
		if (read_line(path, g, sizeof(g)) <= 0)
			continue;
		for (k = 0; k < ng && strcmp(names[k], g); k++)
			;
		if (k == ng && ng == MAXG)
			continue;
		if (k == ng)
			snprintf(names[ng++], sizeof(names[0]), "%s", g);
		mask[k][c / 64] |= 1ULL << (c % 64);
	}
	if (!ng)
		return NULL;
	if (ng == 1)
		return json_object_new_string(names[0]);
	for (int k = 0; k < ng; k++) {
		size_t n = strlen(out);

		lh_format_cpulist(mask[k], LH_MAX_CPU_WORDS, list, sizeof(list));
		snprintf(out + n, sizeof(out) - n, "%s%s (%s)", k ? ", " : "", names[k], list);
	}
	return json_object_new_string(out);
}

/*
 * The hypervisor: x86 cpuid leaf 1 ECX bit 31 says one is there, leaf
 * 0x40000000 names its vendor (the signatures Linux's arch/x86/kernel/cpu/
 * hypervisor.c and QEMU use); elsewhere /sys/hypervisor/type. "none" on bare
 * metal, NULL when it cannot be told.
 */
static json_object *hypervisor(void)
{
	char buf[64];
#if defined(__x86_64__) || defined(__i386__)
	static const struct { const char *sig, *name; } sigs[] = {
		{ "KVMKVMKVM", "KVM" }, { "Microsoft Hv", "Hyper-V" }, { "VMwareVMware", "VMware" },
		{ "XenVMMXenVMM", "Xen" }, { "TCGTCGTCGTCG", "QEMU TCG" }, { "bhyve bhyve ", "bhyve" },
		{ "ACRNACRNACRN", "ACRN" }, { " lrpepyh  vr", "Parallels" }, { "QNXQVMBSQG", "QNX" },
		{ "VBoxVBoxVBox", "VirtualBox" }, { "Linux KVM Hv", "KVM" },
	};
	unsigned int a, b, c, d;
	char sig[13];

	if (!__get_cpuid(1, &a, &b, &c, &d))
		return NULL;
	if (!(c & (1U << 31)))
		return json_object_new_string("none");
	__cpuid(0x40000000, a, b, c, d);
	memcpy(sig, &b, 4);
	memcpy(sig + 4, &c, 4);
	memcpy(sig + 8, &d, 4);
	sig[12] = '\0';
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (!strcmp(sig, sigs[i].sig))
			return json_object_new_string(sigs[i].name);
	for (int i = 0; i < 12; i++)
		if (!sig[i])
			break;
		else if (!isprint((unsigned char)sig[i]))
			sig[i] = '?';
	snprintf(buf, sizeof(buf), "unknown (%s)", sig);
	return json_object_new_string(buf);
#else
	if (read_line("/sys/hypervisor/type", buf, sizeof(buf)) > 0)
		return json_object_new_string(buf);
	return NULL;
#endif
}

static json_object *file_str(const char *path)
{
	char buf[256];

	return read_line(path, buf, sizeof(buf)) > 0 ? json_object_new_string(buf) : NULL;
}

/* The preemption model, read once per process: its debugfs read forks, and lathist
 * serve gathers a context for each of its tools. */
static pthread_once_t preempt_once = PTHREAD_ONCE_INIT;
static char preempt_model[16], preempt_source[16];

static void read_preempt(void)
{
	context_preempt(preempt_model, preempt_source);
}

void *lh_context_gather(void)
{
	json_object *o = json_object_new_object();
	char buf[64];
	struct utsname u;

	if (!o)
		return NULL;
	uname(&u);
	json_object_object_add(o, "boot_id", file_str("/proc/sys/kernel/random/boot_id"));
	json_object_object_add(o, "kernel_release", json_object_new_string(u.release));
	json_object_object_add(o, "kernel_version", json_object_new_string(u.version));
	json_object_object_add(o, "machine", json_object_new_string(u.machine));
	pthread_once(&preempt_once, read_preempt);
	json_object_object_add(o, "preempt", str_or_null(preempt_model));
	json_object_object_add(o, "preempt_source", str_or_null(preempt_source));
	json_object_object_add(o, "cmdline", latency_cmdline());
	json_object_object_add(o, "cpu_model", cpu_model());
	json_object_object_add(o, "cpus_online", file_str("/sys/devices/system/cpu/online"));
	json_object_object_add(o, "smt", file_str("/sys/devices/system/cpu/smt/control"));
	json_object_object_add(o, "governor", governors());
	json_object_object_add(o, "hypervisor", hypervisor());
	json_object_object_add(o, "lathist_version", json_object_new_string(LATHIST_VERSION));
	json_object_object_add(o, "git_revision", str_or_null(LATHIST_GIT_REVISION));
	snprintf(buf, sizeof(buf), "%s", libbpf_version_string());
	json_object_object_add(o, "libbpf_version", str_or_null(buf[0] == 'v' ? buf + 1 : buf));
	return o;
}

/* /sys/block/NAME/FILE as a whole number; NULL when absent. */
static json_object *sys_int(const char *name, const char *file)
{
	char path[256], buf[64], *end;
	long long v;

	snprintf(path, sizeof(path), "/sys/block/%s/%s", name, file);
	if (read_line(path, buf, sizeof(buf)) <= 0)
		return NULL;
	v = strtoll(buf, &end, 10);
	return *end ? NULL : json_object_new_int64(v);
}

static json_object *disk_json(const char *name)
{
	json_object *d = json_object_new_object(), *rot, *qd;
	char path[256], buf[256], sched[32] = "";

	json_object_object_add(d, "name", json_object_new_string(name));
	snprintf(path, sizeof(path), "/sys/block/%s/queue/scheduler", name);
	if (read_line(path, buf, sizeof(buf)) > 0 && !selected_mode(buf, sched)) {
		/* "[mq-deadline] none" style: the bracketed one; "none" alone when only it */
		char *a = strchr(buf, '['), *b = a ? strchr(a, ']') : NULL;

		if (a && b && b - a - 1 > 0 && b - a - 1 < (long)sizeof(sched))
			snprintf(sched, sizeof(sched), "%.*s", (int)(b - a - 1), a + 1);
		else
			snprintf(sched, sizeof(sched), "%.31s", buf);
	}
	json_object_object_add(d, "scheduler", str_or_null(sched));
	json_object_object_add(d, "nr_requests", sys_int(name, "queue/nr_requests"));
	rot = sys_int(name, "queue/rotational");
	json_object_object_add(d, "rotational",
			       rot ? json_object_new_boolean(json_object_get_int64(rot) != 0) : NULL);
	json_object_put(rot);
	qd = sys_int(name, "device/queue_depth");
	if (!qd)
		qd = sys_int(name, "mq/0/nr_tags");
	json_object_object_add(d, "queue_depth", qd);
	return d;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void lh_context_add_disks(void *ctx, const char *only)
{
	json_object *arr = json_object_new_array();
	char *names[MAX_DISKS];
	int n = 0;
	DIR *dir;
	struct dirent *e;

	if (!ctx || !arr)
		return;
	if (only && only[0]) {
		json_object_array_add(arr, disk_json(only));
		json_object_object_add(ctx, "disks", arr);
		return;
	}
	dir = opendir("/sys/block");
	while (dir && (e = readdir(dir)) && n < MAX_DISKS) {
		char path[300], size[32];

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/block/%s/mq", e->d_name);
		if (access(path, F_OK))
			continue;	/* bio-based: its I/O never becomes a request */
		snprintf(path, sizeof(path), "/sys/block/%s/size", e->d_name);
		if (read_line(path, size, sizeof(size)) <= 0 || !strcmp(size, "0"))
			continue;	/* no medium (a loop device with no file) */
		names[n] = strdup(e->d_name);
		if (names[n])
			n++;
	}
	if (dir)
		closedir(dir);
	qsort(names, (size_t)n, sizeof(names[0]), name_cmp);
	for (int i = 0; i < n; i++) {
		json_object_array_add(arr, disk_json(names[i]));
		free(names[i]);
	}
	json_object_object_add(ctx, "disks", arr);
}

void lh_usage_sample(struct lh_usage *u, uint64_t mono_ns)
{
	unsigned long long v[8] = { 0 };
	long hz = sysconf(_SC_CLK_TCK), cpus;
	char line[512];
	FILE *f;

	memset(u, 0, sizeof(*u));
	u->mono_ns = mono_ns;
	cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (hz <= 0 || cpus <= 0)
		return;
	u->cpus = (unsigned long)cpus;
	f = fopen("/proc/stat", "re");
	if (!f)
		return;
	/* cpu user nice system idle iowait irq softirq steal guest guest_nice (proc(5);
	 * guest time is in user already) */
	if (!fgets(line, sizeof(line), f) ||
	    sscanf(line, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
		   &v[4], &v[5], &v[6], &v[7]) != 8) {
		fclose(f);
		return;
	}
	fclose(f);
	u->steal_ns = v[7] * (1000000000ULL / (unsigned long long)hz);
	f = fopen("/proc/loadavg", "re");
	if (!f)
		return;
	u->ok = fscanf(f, "%lf", &u->loadavg) == 1;
	fclose(f);
}

void lh_load_between(struct lh_load *l, const struct lh_usage *a, const struct lh_usage *b)
{
	memset(l, 0, sizeof(*l));
	if (!a->ok || !b->ok || b->mono_ns < a->mono_ns || b->steal_ns < a->steal_ns)
		return;
	l->known = true;
	l->cpu_ns = (b->mono_ns - a->mono_ns) * b->cpus;
	l->steal_ns = b->steal_ns - a->steal_ns;
	if (l->steal_ns > l->cpu_ns)	/* ticks of 10 ms against a shorter aggregate */
		l->steal_ns = l->cpu_ns;
	l->loadavg_start = a->loadavg;
	l->loadavg_end = b->loadavg;
	l->loadavg_max = a->loadavg > b->loadavg ? a->loadavg : b->loadavg;
	l->ends = true;
}
