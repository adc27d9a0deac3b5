// SPDX-License-Identifier: MIT
/*
 * lathist doctor: can runq and bio run here, and if not, why? Read-only: it
 * loads none of lathist's programs, attaches nothing and changes no sysctl
 * (libbpf's feature probes create test maps and a 2-instruction program). One line per
 * check (ok / missing / denied / info), with the consequence and the fix;
 * -f json for machines. Exit 0 when runq and bio can run, 1 otherwise.
 */
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/magic.h>
#include <linux/perf_event.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <bpf/libbpf.h>
#include <json-c/json.h>
#include "bpfcommon.h"
#include "cli.h"
#include "doctor.h"
#include "pmu_user.h"
#include "registry.h"
#include "tool.h"
#include "verbs.h"

#define TOOL "doctor"

static const char *const status_names[] = { "ok", "info", "missing", "denied" };

#define ALL_TOOLS (~0U)

struct lh_doctor {
	bool json;
	json_object *checks;
	unsigned int cannot;		/* bit k: lh_tools[k] cannot run */
	bool privileged;		/* enough capabilities to load and probe */
};

void lh_doctor_say(struct lh_doctor *d, const char *name, enum lh_check_status st,
		   const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (d->json) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "check", json_object_new_string(name));
		json_object_object_add(o, "status", json_object_new_string(status_names[st]));
		json_object_object_add(o, "detail", json_object_new_string(msg));
		json_object_array_add(d->checks, o);
		return;
	}
	printf("%-8s %-24s %s\n", status_names[st], name, msg);
}

bool lh_doctor_privileged(const struct lh_doctor *d)
{
	return d->privileged;
}

void lh_doctor_cannot(struct lh_doctor *d, const struct lh_tool_desc *t)
{
	for (int k = 0; lh_tools[k]; k++)
		if (lh_tools[k] == t)
			d->cannot |= 1U << k;
}

static long read_long(const char *path, long dflt)
{
	FILE *f = fopen(path, "r");
	long v = dflt;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = dflt;
		fclose(f);
	}
	return v;
}

static void check_caps(struct lh_doctor *d)
{
	struct lh_caps c;
	char msg[256];
	int err = lh_read_caps(&c);

	if (err) {
		lh_doctor_say(d, "capabilities", LH_CHECK_DENIED, "cannot read them: %s", strerror(-err));
		d->cannot = ALL_TOOLS;
		return;
	}
	d->privileged = !lh_caps_verdict(&c, msg, sizeof(msg));
	if (!d->privileged) {
		lh_doctor_say(d, "capabilities", LH_CHECK_DENIED, "CAP_BPF %s, CAP_PERFMON %s, CAP_SYS_ADMIN %s: "
		    "lathist %s", c.bpf ? "yes" : "no", c.perfmon ? "yes" : "no",
		    c.admin ? "yes" : "no", msg);
		d->cannot = ALL_TOOLS;
	} else {
		lh_doctor_say(d, "capabilities", LH_CHECK_OK, "CAP_BPF %s, CAP_PERFMON %s, CAP_SYS_ADMIN %s",
		    c.bpf ? "yes" : "no", c.perfmon ? "yes" : "no", c.admin ? "yes" : "no");
	}
}

static void check_btf(struct lh_doctor *d)
{
	char msg[256];

	if (lh_check_btf(msg, sizeof(msg))) {
		lh_doctor_say(d, "btf", LH_CHECK_MISSING, "%s; no lathist verb can run", msg);
		d->cannot = ALL_TOOLS;
	} else {
		lh_doctor_say(d, "btf", LH_CHECK_OK, "/sys/kernel/btf/vmlinux: CO-RE relocations and tp_btf work");
	}
}

static void check_sysctls(struct lh_doctor *d)
{
	long paranoid = read_long("/proc/sys/kernel/perf_event_paranoid", -100);
	long unpriv = read_long("/proc/sys/kernel/unprivileged_bpf_disabled", -100);
	long stats = read_long("/proc/sys/kernel/bpf_stats_enabled", -100);
	char lock[128] = "";
	FILE *f = fopen("/sys/kernel/security/lockdown", "r");
	struct statfs sfs;

	lh_doctor_say(d, "perf_event_paranoid", LH_CHECK_INFO, "%ld (CAP_PERFMON or root is not limited by it)",
	    paranoid);
	lh_doctor_say(d, "unprivileged_bpf", LH_CHECK_INFO, "unprivileged_bpf_disabled %ld (lathist needs "
	    "CAP_BPF or root either way)", unpriv);
	lh_doctor_say(d, "bpf_stats_enabled", LH_CHECK_INFO, "%ld%s", stats, stats == 1 ?
	    " (every BPF program run costs ~60 ns more while it is 1)" : "");
	if (f) {
		if (!fgets(lock, sizeof(lock), f))
			lock[0] = 0;
		fclose(f);
		lock[strcspn(lock, "\n")] = 0;
	}
	if (strstr(lock, "[confidentiality]")) {
		lh_doctor_say(d, "lockdown", LH_CHECK_DENIED, "%s: the kernel refuses BPF reads of kernel memory; "
		    "lathist cannot run (boot with lockdown=integrity or none)", lock);
		d->cannot = ALL_TOOLS;
	} else if (f || (!statfs("/sys/kernel/security", &sfs) &&
			 sfs.f_type == SECURITYFS_MAGIC)) {
		lh_doctor_say(d, "lockdown", LH_CHECK_OK, "%s", lock[0] ? lock : "no lockdown LSM");
	} else {	/* securityfs not mounted: nothing tells */
		lh_doctor_say(d, "lockdown", LH_CHECK_INFO, "unknown: securityfs is not mounted (mount -t "
		    "securityfs none /sys/kernel/security to see it); confidentiality mode would "
		    "stop lathist");
	}
}

/* Tracepoints: in vmlinux BTF (tp_btf, and raw_tp with its argument count) or not. */
static void check_tracepoints(struct lh_doctor *d)
{
	for (int k = 0; lh_tools[k]; k++) {
		const struct lh_tool_desc *t = lh_tools[k];
		bool any = false, has_any = false;

		for (int i = 0; i < t->ntps; i++) {
			const struct lh_tool_tp *e = &t->tps[i];
			const char *tp = strchr(e->event, '/') + 1;
			int n = lh_tp_nargs(tp);
			char name[40];

			snprintf(name, sizeof(name), "tp %s", tp);
			if (e->any_of) {
				has_any = true;
				any |= n >= 0;
			}
			if (n >= 0) {
				lh_doctor_say(d, name, LH_CHECK_OK, "tp_btf and raw_tp (%d argument%s) (%s)", n,
				    n == 1 ? "" : "s", e->why);
				continue;
			}
			lh_doctor_say(d, name, e->needed ? LH_CHECK_MISSING : LH_CHECK_INFO, "not in vmlinux BTF (%s)%s",
			    e->why, e->needed ? ": cannot run" : "");
			if (e->needed)
				lh_doctor_cannot(d, t);
		}
		if (has_any && !any && t->any_of_missing)
			lh_doctor_say(d, t->any_of_check, LH_CHECK_INFO, "%s", t->any_of_missing);
	}
}

int lh_doctor_map_type(struct lh_doctor *d, const char *name, enum bpf_map_type type,
		       enum lh_check_status absent, const struct lh_tool_desc *needs,
		       const char *have, const char *lack)
{
	int r;

	if (!d->privileged) {
		/* without privilege the probe fails (libbpf then says "unsupported"),
		 * which says nothing about the kernel */
		lh_doctor_say(d, name, LH_CHECK_DENIED, "cannot check without CAP_BPF");
		return -EPERM;
	}
	r = libbpf_probe_bpf_map_type(type, NULL);
	if (r < 0)
		lh_doctor_say(d, name, LH_CHECK_DENIED, "cannot check: %s (needs CAP_BPF)", strerror(-r));
	else
		lh_doctor_say(d, name, r == 1 ? LH_CHECK_OK : absent, "%s", r == 1 ? have : lack);
	if (r == 0 && absent == LH_CHECK_MISSING) {
		if (needs)
			lh_doctor_cannot(d, needs);
		else
			d->cannot = ALL_TOOLS;
	}
	return r;
}

/* What every tool needs of the kernel beyond tracepoints: the ring buffer. */
static void check_maps(struct lh_doctor *d)
{
	/* every run creates its ring buffer, records or not */
	lh_doctor_map_type(d, "ring buffer", BPF_MAP_TYPE_RINGBUF, LH_CHECK_MISSING, NULL,
			   "BPF ring buffer: --slower-than records work",
			   "no BPF ring buffer (5.8+): lathist cannot run");
}

/* Each tool's own checks (its descriptor's doctor), in registry order. */
static void check_tools(struct lh_doctor *d)
{
	for (int k = 0; lh_tools[k]; k++)
		if (lh_tools[k]->doctor)
			lh_tools[k]->doctor(d);
}

/* Which perf events can be opened on CPU 0 (each opened and closed at once). */
static void check_perf(struct lh_doctor *d)
{
	static const char *const evs[] = { "cycles", "instructions", "cache-misses",
					   "cpu-clock", "page-faults" };

	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++) {
		struct lh_pmu_event ev;
		const char *why;
		char bad[32], name[40];
		int fd;

		if (lh_pmu_parse(evs[i], &ev, bad, sizeof(bad), &why) != 1)
			continue;
		snprintf(name, sizeof(name), "counter %s", evs[i]);
		if (lh_pmu_open(&ev, 1, 1, &fd) == 1) {
			close(fd);
			lh_doctor_say(d, name, LH_CHECK_OK, "can be counted (--counters %s)", evs[i]);
		} else {
			lh_doctor_say(d, name, lh_pmu_unsupported(ev.err) ? LH_CHECK_MISSING : LH_CHECK_DENIED, "%s "
			    "(perf_event_open: %s)", lh_pmu_why(ev.err), strerror(ev.err));
		}
	}
}

int doctor_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct lh_doctor d = { .cannot = 0 };
	struct utsname u;
	int opt, format_given = 0;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":f:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'f':
			if (format_given++) {
				lh_usage_error(TOOL, "-f given twice; give it once");
				return LH_EXIT_USAGE;
			}
			if (!strcmp(optarg, "json")) {
				d.json = true;
			} else if (strcmp(optarg, "text")) {
				lh_usage_error(TOOL, "-f '%s': unknown format; use text or json", optarg);
				return LH_EXIT_USAGE;
			}
			break;
		case 'h':
			printf("Usage: lathist doctor [-f text|json]\n"
			       "Can lathist run here? Checks privileges, BTF, tracepoints, BPF map types\n"
			       "and perf events without enabling any tracing. Exit 0 when runq and bio\n"
			       "can run, 1 otherwise.\n");
			return LH_EXIT_OK;
		default:
			lh_bad_option(TOOL, opt, argv, longopts);
			return LH_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		lh_usage_error(TOOL, "unexpected argument '%s'; see lathist doctor -h", argv[optind]);
		return LH_EXIT_USAGE;
	}
	if (lh_stdout_closed) {
		fprintf(stderr, "lathist doctor: standard output is closed; run it with stdout open\n");
		return LH_EXIT_RUNTIME;
	}
	lh_libbpf_setup(false);
	if (d.json)
		d.checks = json_object_new_array();
	uname(&u);
	lh_doctor_say(&d, "kernel", LH_CHECK_INFO, "%s %s", u.release, u.machine);
	check_caps(&d);
	check_btf(&d);
	check_sysctls(&d);
	if (!access("/sys/kernel/btf/vmlinux", R_OK)) {
		check_tracepoints(&d);
	}
	check_maps(&d);
	check_tools(&d);
	check_perf(&d);
	if (d.json) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "schema", json_object_new_string("lathist-doctor/1"));
		for (int k = 0; lh_tools[k]; k++)
			json_object_object_add(o, lh_tools[k]->name,
					       json_object_new_boolean(!(d.cannot & 1U << k)));
		json_object_object_add(o, "checks", d.checks);
		puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
						    JSON_C_TO_STRING_SPACED |
						    JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	} else {
		putchar('\n');
		for (int k = 0; lh_tools[k]; k++)
			printf("%s:%*s%s\n", lh_tools[k]->name,
			       strlen(lh_tools[k]->name) < 4 ? 5 - (int)strlen(lh_tools[k]->name) : 1,
			       "", d.cannot & 1U << k ? "cannot run (see above)" : "can run");
	}
	/* a failed write leaves the flag; a reader that quit early (| head) is none */
	if ((fflush(stdout) || ferror(stdout)) && errno != EPIPE) {
		fprintf(stderr, "lathist doctor: cannot write to standard output: %s\n",
			errno ? strerror(errno) : "a write to it failed");
		return LH_EXIT_RUNTIME;
	}
	return d.cannot ? LH_EXIT_RUNTIME : LH_EXIT_OK;
}
