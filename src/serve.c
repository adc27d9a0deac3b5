// SPDX-License-Identifier: MIT
/*
 * lathist serve: the tracing tools in one long-running process, served to
 * Prometheus. Each tool runs its own main in a thread of its own with
 * lh_session_sink set (src/session.h), so it parses, loads, attaches and reads
 * its maps every interval exactly as `lathist TOOL -i SEC` does; only its
 * intervals come here instead of its outputs, into a cumulative aggregate with
 * a bounded number of series (src/report/fold.c). libmicrohttpd answers
 * GET /metrics from its own thread: each tool's aggregate is rendered under its
 * lock (never half an interval), Prometheus text 0.0.4 by default, OpenMetrics
 * 1.0 when the scraper's Accept asks for it. A slow client holds only its own
 * connection: rendering is done in memory before anything is sent.
 */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include "bpfcommon.h"
#include "cgroup.h"
#include "cli.h"
#include "fold.h"
#include "registry.h"
#include "session.h"
#include "tool.h"
#include "util.h"
#include "verbs.h"
#ifndef LH_NO_SERVE
#include <microhttpd.h>
#endif

#define TOOL "serve"
#define MAX_ARGS 64

#ifndef LH_NO_SERVE

static const char serve_help[] =
	"Usage: lathist serve [OPTIONS]\n"
	"The tracing tools in one process: their histograms, losses and kernel gaps\n"
	"served to Prometheus on GET /metrics, cumulative since start.\n"
	"\n"
	"      --tools LIST       runq,bio (default: both, those that load)\n"
	"      --listen ADDR:PORT\n"
	"                         where to serve (default 127.0.0.1:9581; [::1]:9581)\n"
	"  -i, --interval SEC     how often the kernel's aggregates are read (default 1)\n"
	"      --max-series N     keys with series of their own, per tool (default 100);\n"
	"                         the others fold into one key whose fields read \"other\"\n"
	"      --fold-idle DUR    a task's or cgroup's key with no event this long loses\n"
	"                         its series, its later events go to other (an exited\n"
	"                         task, a removed cgroup; default 5m; 0: never)\n"
	"      --buckets SPEC     the le buckets: MIN..MAX (default 1us..1m) or bounds\n"
	"      --label NAME=VALUE\n"
	"                         a label on every series (repeatable)\n"
	"Given to every tool: -p PID, --cgroup PATH, -u UNIT, --precision P,\n"
	"  --attach TYPE, --max-keys N, -v. To those that take them (lathist runq -h,\n"
	"  lathist bio -h): --per-process, --per-thread, --per-cpu, --per-cgroup,\n"
	"  -t TID, --cpus LIST, --oncpu, --max-tasks N (runq); --per-process,\n"
	"  --per-disk, --per-op, --per-cgroup, --disk NAME, --max-requests N (bio).\n"
	"  -h, --help             this help\n";

enum {
	OPT_TOOLS = 0x400,
	OPT_LISTEN,
	OPT_MAX_SERIES,
	OPT_FOLD_IDLE,
	OPT_FORWARD,		/* + i: forwards[i], an option a tool takes, forwarded by name */
};

/* The options serve hands on: to every tool (common), or by registry serve_opts. */
static const struct {
	const char *name;
	int has_arg;
	int val;		/* short option, or 0 */
	bool common;
} forwards[] = {
	{ "pid", required_argument, 'p', true }, { "cgroup", required_argument, 0, true },
	{ "unit", required_argument, 'u', true }, { "precision", required_argument, 0, true },
	{ "attach", required_argument, 0, true }, { "max-keys", required_argument, 0, true },
	{ "verbose", no_argument, 'v', true },
	{ "per-process", no_argument, 0, false }, { "per-thread", no_argument, 0, false },
	{ "per-cpu", no_argument, 0, false }, { "per-cgroup", no_argument, 0, false },
	{ "tid", required_argument, 't', false }, { "cpus", required_argument, 0, false },
	{ "oncpu", no_argument, 0, false }, { "max-tasks", required_argument, 0, false },
	{ "per-disk", no_argument, 0, false }, { "per-op", no_argument, 0, false },
	{ "disk", required_argument, 0, false }, { "max-requests", required_argument, 0, false },
};
#define NFORWARDS (sizeof(forwards) / sizeof(forwards[0]))

enum { T_STARTING, T_ATTACHED, T_ENDED };

/* One tool being served. */
struct served {
	const struct lh_tool_desc *desc;
	struct lh_sink sink;		/* first: the sink callbacks find their tool */
	char *argv[MAX_ARGS];
	int argc;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;		/* the state and the aggregate */
	pthread_cond_t cond;
	int state, rc;
	bool asked;			/* named by --tools, or given an option of its own */
	bool attached_once;		/* it traced */
	struct lh_fold fold;
	char attach[16];		/* its attach type, for the Serving line */
};

struct serve {
	struct lh_common_opts c;	/* --buckets, --label, -u, --precision */
	char listen[128];
	const char *tools_arg;		/* --tools as given, NULL: every tool */
	char interval[32];
	size_t max_series;
	uint64_t fold_idle_ns;
	struct served tools[8];
	int ntools;
	int fd;				/* the listening socket */
	bool owned_by_http;		/* fd passed to libmicrohttpd, which closes it */
};

/* ---- the tools' threads ---- */

static void on_attached(struct lh_sink *k, struct lh_session *s)
{
	struct served *t = (struct served *)((char *)k - offsetof(struct served, sink));

	pthread_mutex_lock(&t->lock);
	snprintf(t->attach, sizeof(t->attach), "%s", s->report.meta.nattach ?
		 s->report.meta.attach[0].type : "?");
	t->state = T_ATTACHED;
	t->attached_once = true;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

static int on_interval(struct lh_sink *k, struct lh_session *s)
{
	struct served *t = (struct served *)((char *)k - offsetof(struct served, sink));
	int err;

	pthread_mutex_lock(&t->lock);
	err = lh_fold_add(&t->fold, &s->report, lh_now_ns());
	pthread_mutex_unlock(&t->lock);
	if (err)
		fprintf(stderr, "lathist serve: %s: adding an interval failed: %s; it stops\n",
			t->desc->name, strerror(-err));
	return err;
}

static void *tool_thread(void *arg)
{
	struct served *t = arg;
	int rc;

	lh_session_sink = &t->sink;
	rc = t->desc->main(t->argc, t->argv);
	pthread_mutex_lock(&t->lock);
	t->rc = rc;
	t->state = T_ENDED;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

/* A key's task or cgroup may still show up (fold.h may_return). */
static bool may_return(const struct lh_key *k)
{
	if (k->fields & LH_KEY_CGROUP)
		return lh_cgroup_alive(k->cgroup_id);
	if (k->fields & LH_KEY_TID)
		return lh_task_alive(k->tid, k->birth_ns);
	if (k->fields & LH_KEY_PID)
		return lh_process_alive(k->pid, k->birth_ns);
	return true;		/* CPUs, disks, operations: few, and they stay */
}

/* Start tool t and wait until it traces or ends; its state then. One at a time:
 * the tools parse their options with getopt, which is not thread-safe. */
static int start_tool(struct served *t)
{
	int state;

	if (pthread_create(&t->thread, NULL, tool_thread, t)) {
		fprintf(stderr, "lathist serve: cannot start a thread for %s\n", t->desc->name);
		return T_ENDED;
	}
	t->started = true;
	pthread_mutex_lock(&t->lock);
	while (t->state == T_STARTING)
		pthread_cond_wait(&t->cond, &t->lock);
	state = t->state;
	pthread_mutex_unlock(&t->lock);
	return state;
}

/* ---- options ---- */

/* Does tool d take forwarded option i? */
static bool takes(const struct lh_tool_desc *d, size_t i)
{
	if (forwards[i].common)
		return true;
	for (size_t j = 0; d->serve_opts && d->serve_opts[j]; j++)
		if (!strcmp(d->serve_opts[j], forwards[i].name))
			return true;
	return false;
}

/* An option given to serve: which one (forwards[fwd]) and its argument. */
struct given_opt {
	size_t fwd;
	const char *arg;
};

/* Does --max-keys size one of d's maps with these options (d->max_keys_with)? */
static bool sizes_keys(const struct lh_tool_desc *d, const struct given_opt *g, int n)
{
	if (!d->max_keys_with)
		return true;
	for (int i = 0; i < n; i++)
		for (size_t j = 0; d->max_keys_with[j]; j++)
			if (!strcmp(d->max_keys_with[j], forwards[g[i].fwd].name))
				return true;
	return false;
}

static int add_arg(struct served *t, const char *a)
{
	if (t->argc + 1 >= MAX_ARGS || !(t->argv[t->argc] = strdup(a)))
		return -E2BIG;
	t->argc++;
	return 0;
}

/* The tools to serve, from --tools (NULL: every one). 0 or an exit status. */
static int pick_tools(struct serve *sv)
{
	const char *p = sv->tools_arg;

	if (!p) {
		for (int i = 0; lh_tools[i] && sv->ntools < 8; i++)
			sv->tools[sv->ntools++].desc = lh_tools[i];
		return 0;
	}
	if (*p && lh_list_has_empty(p)) {
		lh_usage_error(TOOL, "--tools '%s': an empty name; give tools separated by single "
			       "commas, e.g. runq,bio", p);
		return LH_EXIT_USAGE;
	}
	while (*p) {
		size_t n = strcspn(p, ",");
		char name[32];
		const struct lh_tool_desc *d;

		snprintf(name, sizeof(name), "%.*s", (int)(n < sizeof(name) ? n : sizeof(name) - 1), p);
		d = lh_tool_find(name);
		for (int i = 0; d && i < sv->ntools; i++)
			if (sv->tools[i].desc == d)
				d = NULL;
		if (!d || sv->ntools == 8) {
			if (lh_tool_find(name))
				lh_usage_error(TOOL, "--tools '%s': '%s' is given twice; give each "
					       "tool once", sv->tools_arg, name);
			else
				lh_usage_error(TOOL, "--tools '%s': '%s' is not a tracing tool; give "
					       "a list of runq, bio", sv->tools_arg, name);
			return LH_EXIT_USAGE;
		}
		sv->tools[sv->ntools++].desc = d;
		p += n;
		if (*p == ',')
			p++;
	}
	if (!sv->ntools) {
		lh_usage_error(TOOL, "--tools '': empty; give runq, bio or both");
		return LH_EXIT_USAGE;
	}
	return 0;
}

static int parse(struct serve *sv, int argc, char **argv)
{
	struct option longopts[NFORWARDS + 10] = {
		{ "tools", required_argument, NULL, OPT_TOOLS },
		{ "listen", required_argument, NULL, OPT_LISTEN },
		{ "interval", required_argument, NULL, 'i' },
		{ "max-series", required_argument, NULL, OPT_MAX_SERIES },
		{ "fold-idle", required_argument, NULL, OPT_FOLD_IDLE },
		{ "buckets", required_argument, NULL, LH_OPT_BUCKETS },
		{ "label", required_argument, NULL, LH_OPT_LABEL },
		{ "help", no_argument, NULL, 'h' },
	};
	struct given_opt given[MAX_ARGS];
	int ngiven = 0, nopts = 8, opt, err;
	uint64_t ns;

	for (size_t i = 0; i < NFORWARDS; i++)
		/* a value each: getopt takes an abbreviation that fits several options
		 * of one value as the first of them, silently */
		longopts[nopts++] = (struct option){ forwards[i].name, forwards[i].has_arg, NULL,
						     OPT_FORWARD + (int)i };
	unsigned int seen = 0;

	memset(sv, 0, sizeof(*sv));
	lh_common_defaults(&sv->c);
	sv->c.serving = true;
	snprintf(sv->listen, sizeof(sv->listen), "127.0.0.1:9581");
	snprintf(sv->interval, sizeof(sv->interval), "1");
	sv->max_series = 100;
	sv->fold_idle_ns = 300ULL * 1000000000ULL;
	sv->fd = -1;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+:i:p:u:t:vh", longopts, NULL)) != -1) {
		/* serve's own one-value options: a repeat is refused, as the tools' are */
		static const struct { int opt; const char *name; } once[] = {
			{ OPT_TOOLS, "--tools" }, { OPT_LISTEN, "--listen" }, { 'i', "-i" },
			{ OPT_MAX_SERIES, "--max-series" }, { OPT_FOLD_IDLE, "--fold-idle" },
		};
		size_t f = NFORWARDS;

		for (size_t i = 0; i < sizeof(once) / sizeof(once[0]); i++)
			if (once[i].opt == opt && lh_opt_once(&seen, 1U << i, once[i].name, TOOL))
				return LH_EXIT_USAGE;
		switch (opt) {
		case 'h':
			fputs(serve_help, stdout);
			return -1;
		case OPT_TOOLS:
			sv->tools_arg = optarg;
			continue;
		case OPT_LISTEN:
			if (strlen(optarg) >= sizeof(sv->listen) || !strchr(optarg, ':')) {
				lh_usage_error(TOOL, "--listen '%s': give ADDRESS:PORT, e.g. "
					       "127.0.0.1:9581 or [::1]:9581", optarg);
				return LH_EXIT_USAGE;
			}
			snprintf(sv->listen, sizeof(sv->listen), "%s", optarg);
			continue;
		case 'i':
			if (lh_parse_duration(optarg, false, &ns) || ns < 100000000ULL ||
			    ns > 3600ULL * 1000000000ULL) {
				lh_usage_error(TOOL, "-i '%s': give an interval from 0.1 s to 1 hour, "
					       "e.g. 1 or 500ms", optarg);
				return LH_EXIT_USAGE;
			}
			snprintf(sv->interval, sizeof(sv->interval), "%s", optarg);
			continue;
		case OPT_MAX_SERIES: {
			uint32_t n;

			if (lh_parse_u32(optarg, 1, 1000000, &n)) {
				lh_usage_error(TOOL, "--max-series '%s': give a number from 1 to "
					       "1000000 (keys per tool)", optarg);
				return LH_EXIT_USAGE;
			}
			sv->max_series = n;
			continue;
		}
		case OPT_FOLD_IDLE:
			if (lh_parse_duration(optarg, true, &sv->fold_idle_ns) ||
			    (sv->fold_idle_ns && sv->fold_idle_ns < 1000000000ULL)) {
				lh_usage_error(TOOL, "--fold-idle '%s': give a duration of at least "
					       "1s, e.g. 5m (0: never)", optarg);
				return LH_EXIT_USAGE;
			}
			continue;
		case LH_OPT_BUCKETS:
		case LH_OPT_LABEL:
			if (lh_common_opt(&sv->c, opt, optarg, TOOL) < 0)
				return LH_EXIT_USAGE;
			continue;
		default:
			if (opt >= OPT_FORWARD && opt < OPT_FORWARD + (int)NFORWARDS) {
				f = (size_t)(opt - OPT_FORWARD);
				break;
			}
			for (size_t i = 0; i < NFORWARDS && f == NFORWARDS; i++)
				if (forwards[i].val && forwards[i].val == opt)
					f = i;
			if (f == NFORWARDS) {
				lh_bad_option(TOOL, opt, argv, longopts);
				return LH_EXIT_USAGE;
			}
		}
		/* -u and --precision set the scheme a --buckets list is checked against */
		if (!strcmp(forwards[f].name, "unit") || !strcmp(forwards[f].name, "precision"))
			if (lh_common_opt(&sv->c, !strcmp(forwards[f].name, "unit") ? 'u' :
					  LH_OPT_PRECISION, optarg, TOOL) < 0)
				return LH_EXIT_USAGE;
		if (ngiven == MAX_ARGS / 2) {
			lh_usage_error(TOOL, "too many options");
			return LH_EXIT_USAGE;
		}
		given[ngiven].fwd = f;
		given[ngiven++].arg = forwards[f].has_arg ? optarg : NULL;
	}
	if (optind < argc) {
		lh_usage_error(TOOL, "unexpected argument '%s'; see lathist serve -h", argv[optind]);
		return LH_EXIT_USAGE;
	}
	if ((err = pick_tools(sv)))
		return err;
	if (sv->c.nle && lh_buckets_usable(&sv->c, &(struct lh_scheme){ sv->c.precision,
								      sv->c.unit_ns }, TOOL))
		return LH_EXIT_USAGE;
	/* each tool: its name, -i, and what it takes of the rest */
	for (int i = 0; i < ngiven; i++) {
		bool any = false;

		for (int t = 0; t < sv->ntools; t++)
			any |= takes(sv->tools[t].desc, given[i].fwd) &&
			       (strcmp(forwards[given[i].fwd].name, "max-keys") ||
				sizes_keys(sv->tools[t].desc, given, ngiven));
		if (!any && !strcmp(forwards[given[i].fwd].name, "max-keys")) {
			/* every tool served has options that make its keyed maps: name them */
			const struct lh_tool_desc *d = sv->tools[0].desc;
			char with[160];

			lh_usage_error(TOOL, "--max-keys %s sizes %s's %s maps: add one, or drop "
				       "--max-keys", given[i].arg, d->name,
				       lh_tool_max_keys_with(d, with, sizeof(with)));
			return LH_EXIT_USAGE;
		}
		if (!any) {
			lh_usage_error(TOOL, "--%s: none of the tools served takes it (see lathist "
				       "serve -h)", forwards[given[i].fwd].name);
			return LH_EXIT_USAGE;
		}
	}
	for (int t = 0; t < sv->ntools; t++) {
		struct served *s = &sv->tools[t];
		char opt_name[40];

		if (add_arg(s, s->desc->name) || add_arg(s, "-i") || add_arg(s, sv->interval))
			return LH_EXIT_USAGE;
		s->asked = sv->tools_arg != NULL;
		for (int i = 0; i < ngiven; i++) {
			if (!takes(s->desc, given[i].fwd))
				continue;
			s->asked |= !forwards[given[i].fwd].common;	/* --disk: bio is wanted */
			snprintf(opt_name, sizeof(opt_name), "--%s", forwards[given[i].fwd].name);
			if (add_arg(s, opt_name) || (given[i].arg && add_arg(s, given[i].arg))) {
				lh_usage_error(TOOL, "too many options");
				return LH_EXIT_USAGE;
			}
		}
	}
	return 0;
}

/* ---- the listening socket ---- */

/* Bind and listen on sv->listen: 0, or an exit status after one line. */
static int bind_listen(struct serve *sv)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE |
				  AI_NUMERICSERV }, *res = NULL;
	char host[128], *port;
	uint32_t pnum;
	int one = 1, err;

	snprintf(host, sizeof(host), "%s", sv->listen);
	/* "[::1]" has colons but no port: the last one is the address's */
	if (host[0] == '[' && (!(port = strchr(host, ']')) || port[1] != ':')) {
		lh_usage_error(TOOL, "--listen '%s': no port after the bracketed address; give "
			       "[ADDRESS]:PORT, e.g. [::1]:9581", sv->listen);
		return LH_EXIT_USAGE;
	}
	port = strrchr(host, ':');
	/* "::1:9583" reads as an IPv6 address with or without a port: refused */
	if (host[0] != '[' && strchr(host, ':') != port) {
		lh_usage_error(TOOL, "--listen '%s': an IPv6 address goes in brackets before its "
			       "port; give [ADDRESS]:PORT, e.g. [::1]:9581", sv->listen);
		return LH_EXIT_USAGE;
	}
	*port++ = 0;
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = 0;
	}
	if (lh_parse_u32(port, 1, 65535, &pnum)) {
		lh_usage_error(TOOL, "--listen '%s': port '%s': give a port from 1 to 65535, "
			       "e.g. 127.0.0.1:9581", sv->listen, port);
		return LH_EXIT_USAGE;
	}
	err = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
	if (err) {
		lh_usage_error(TOOL, "--listen '%s': %s; give ADDRESS:PORT, e.g. 127.0.0.1:9581",
			       sv->listen, gai_strerror(err));
		return LH_EXIT_USAGE;
	}
	sv->fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sv->fd >= 0)
		setsockopt(sv->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (sv->fd < 0 || bind(sv->fd, res->ai_addr, res->ai_addrlen) || listen(sv->fd, 64)) {
		err = errno;
		fprintf(stderr, "lathist serve: --listen %s: %s%s\n", sv->listen, strerror(err),
			err == EADDRINUSE ? " (another lathist serve or exporter?); give another "
			"port" : err == EADDRNOTAVAIL ? "; give an address of this host" : "");
		freeaddrinfo(res);
		return LH_EXIT_RUNTIME;
	}
	freeaddrinfo(res);
	return 0;
}

/* The address the socket is bound to, numeric (IPv6 in brackets); --listen as given
 * when it cannot be read. */
static void bound_address(const struct serve *sv, char *buf, size_t len)
{
	struct sockaddr_storage sa;
	socklen_t salen = sizeof(sa);
	char host[INET6_ADDRSTRLEN], port[8];

	if (getsockname(sv->fd, (struct sockaddr *)&sa, &salen) ||
	    getnameinfo((struct sockaddr *)&sa, salen, host, sizeof(host), port, sizeof(port),
			NI_NUMERICHOST | NI_NUMERICSERV)) {
		snprintf(buf, len, "%s", sv->listen);
		return;
	}
	snprintf(buf, len, sa.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, port);
}

/* ---- HTTP ---- */

static const char index_page[] =
	"<!DOCTYPE html>\n<html><head><title>lathist serve</title></head><body>\n"
	"<h1>lathist serve</h1>\n<p>Runqueue and block I/O latency histograms, with their "
	"losses and kernel gaps: <a href=\"/metrics\">/metrics</a> (Prometheus text 0.0.4, "
	"or OpenMetrics 1.0 when Accept asks for it).</p>\n</body></html>\n";

/* Every served tool's families, then # EOF for OpenMetrics; malloc'd, NULL on ENOMEM. */
static char *render(struct serve *sv, bool strict, size_t *len)
{
	char *buf = NULL, name[96];
	FILE *f = open_memstream(&buf, len);

	if (!f)
		return NULL;
	for (int i = 0; i < sv->ntools; i++) {
		struct served *t = &sv->tools[i];
		struct lh_label labels[LH_MAX_LABELS];
		struct lh_om_opts o;

		pthread_mutex_lock(&t->lock);
		if (t->fold.first_ns) {		/* an interval read: the aggregate is whole */
			lh_om_for(&sv->c, &t->fold.cum.meta, strict, &o, labels);
			o.no_eof = true;
			lh_render_openmetrics(f, &t->fold.cum, &o);
			snprintf(name, sizeof(name), "lathist_%s_series", t->desc->name);
			lh_render_om_sample(f, &o, name, "gauge", "Keys with series of their own "
					    "now (at most --max-series; the others are in the "
					    "\"other\" key).", t->fold.nown);
			snprintf(name, sizeof(name), "lathist_%s_series_folded_total", t->desc->name);
			lh_render_om_sample(f, &o, name, "counter", "Keys without a series of "
					    "their own (past --max-series; or idle for --fold-idle, "
					    "their series dropped), each once.", t->fold.folded);
			{
				const char *kinds[LH_FOLD_MAX_KINDS];
				uint64_t counts[LH_FOLD_MAX_KINDS];
				const struct lh_meta *m = &t->fold.cum.meta;
				int n = 0;

				/* every kind of the tool, 0 until a series of it retires */
				for (int k = 0; k < m->nkinds && n < LH_FOLD_MAX_KINDS; k++) {
					kinds[n] = m->kinds[k].name;
					counts[n] = 0;
					for (int j = 0; j < t->fold.nretired; j++)
						if (!strcmp(t->fold.retired[j].name, kinds[n]))
							counts[n] = t->fold.retired[j].count;
					n++;
				}
				snprintf(name, sizeof(name), "lathist_%s_retired_events_total",
					 t->desc->name);
				lh_render_om_labeled(f, &o, name, "counter", "Events of the series "
						     "dropped when their key idled for --fold-idle "
						     "(an exited task, a removed cgroup): with the "
						     "series' _count they add up to every event since "
						     "the start.", "kind", kinds, counts, n);
			}
		}
		pthread_mutex_unlock(&t->lock);
	}
	if (strict)
		fputs("# EOF\n", f);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned int code, const char *type,
			     char *body, size_t len, bool owned)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, owned ?
								 MHD_RESPMEM_MUST_FREE :
								 MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ok;

	if (!r) {
		if (owned)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, "Accept");	/* /metrics negotiates */
	if (code == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ok = MHD_queue_response(conn, code, r);
	MHD_destroy_response(r);
	return ok;
}

/* One media range of Accept ("text/plain;version=0.0.4;q=0.5", NUL-terminated, in
 * place): its q (1 when absent) and what it names: 3 OpenMetrics, 2 text/plain,
 * 1 text/ *, 0 * / *, -1 another type. */
static int media_range(char *range, double *q)
{
	char *t = range, *semi = strchr(range, ';');
	size_t tl;

	*q = 1;
	for (char *p = semi; p && (p = strchr(p, ';')); p++) {
		char *v = p + 1;

		while (*v == ' ' || *v == '\t')
			v++;
		if ((v[0] == 'q' || v[0] == 'Q') && v[1] == '=') {
			*q = strtod(v + 2, NULL);
			break;
		}
	}
	while (*t == ' ' || *t == '\t')
		t++;
	tl = semi ? (size_t)(semi - t) : strlen(t);
	while (tl && (t[tl - 1] == ' ' || t[tl - 1] == '\t'))
		tl--;
	return tl == 28 && !strncasecmp(t, "application/openmetrics-text", 28) ? 3 :
	       tl == 10 && !strncasecmp(t, "text/plain", 10) ? 2 :
	       tl == 6 && !strncasecmp(t, "text/*", 6) ? 1 :
	       tl == 3 && !strncmp(t, "*/*", 3) ? 0 : -1;
}

/*
 * Does an Accept header prefer OpenMetrics to the text format? Each media range
 * with its q (RFC 9110 12.5.1; 1 when absent; case-insensitive types):
 * OpenMetrics when application/openmetrics-text has a q above 0 and at least
 * that of text/plain (or text/ *, * / *, whichever is most specific), so q=0 refuses
 * it. Prometheus sends openmetrics-text first at q 1, text/plain at 0.5.
 */
static bool wants_openmetrics(const char *accept)
{
	double q_om = -1, q_text = -1;
	int spec_text = -1;

	for (const char *p = accept; p && *p; ) {
		size_t n = strcspn(p, ",");
		char range[256];
		double q;
		int kind;

		snprintf(range, sizeof(range), "%.*s", (int)(n < sizeof(range) ? n : sizeof(range) - 1),
			 p);
		p += n + (p[n] == ',');
		kind = media_range(range, &q);
		if (kind == 3 && q > q_om) {
			q_om = q;
		} else if (kind >= 0 && kind < 3 &&
			   (kind > spec_text || (kind == spec_text && q > q_text))) {
			spec_text = kind;	/* the most specific text range decides */
			q_text = q;
		}
	}
	return q_om > 0 && q_om >= q_text;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **req)
{
	static const char not_found[] = "not found: lathist serve answers /metrics\n";
	static const char not_allowed[] = "lathist serve answers GET (and HEAD)\n";
	struct serve *sv = cls;
	const char *accept;
	bool strict;
	size_t len = 0;
	char *body;

	(void)version;
	(void)upload;
	(void)upload_size;
	(void)req;
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8",
			     (char *)not_allowed, sizeof(not_allowed) - 1, false);
	if (!strcmp(url, "/"))
		return reply(conn, MHD_HTTP_OK, "text/html; charset=utf-8", (char *)index_page,
			     sizeof(index_page) - 1, false);
	if (strcmp(url, "/metrics"))
		return reply(conn, MHD_HTTP_NOT_FOUND, "text/plain; charset=utf-8",
			     (char *)not_found, sizeof(not_found) - 1, false);
	accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	strict = wants_openmetrics(accept);
	body = render(sv, strict, &len);
	if (!body)
		return reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain; charset=utf-8",
			     (char *)"out of memory\n", 14, false);
	return reply(conn, MHD_HTTP_OK, strict ?
		     "application/openmetrics-text; version=1.0.0; charset=utf-8" :
		     "text/plain; version=0.0.4; charset=utf-8", body, len, true);
}

static void http_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	fputs("lathist serve: http: ", stderr);
	vfprintf(stderr, fmt, ap);
}

/* ---- the run ---- */

static void on_wake(int sig)
{
	(void)sig;
}

/*
 * End every tool thread and join it. Each one's wait (clock_nanosleep, epoll_wait) is
 * interrupted by SIGUSR1, whose handler does nothing (SIGTERM again would kill:
 * SA_RESETHAND), so that it sees the run is ending now, not at its next interval;
 * again every 100 ms, as a thread that looked at the run's end just before a
 * wake-up would sleep out its interval.
 */
static void stop_tools(struct serve *sv)
{
	struct sigaction sa = { .sa_handler = on_wake };

	sigaction(SIGUSR1, &sa, NULL);
	for (int i = 0; i < sv->ntools; i++)	/* all at once: they detach side by side */
		if (sv->tools[i].started)
			pthread_kill(sv->tools[i].thread, SIGUSR1);
	for (int i = 0; i < sv->ntools; i++) {
		if (!sv->tools[i].started)
			continue;
		for (;;) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 100000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			if (pthread_timedjoin_np(sv->tools[i].thread, NULL, &ts) != ETIMEDOUT)
				break;
			pthread_kill(sv->tools[i].thread, SIGUSR1);
		}
	}
}

static int serve_run(struct serve *sv)
{
	struct MHD_Daemon *d = NULL;
	char line[256] = "";
	char failed[128] = "";
	int ok = 0, nfailed = 0, rc = LH_EXIT_OK;
	size_t n = 0, nf = 0;

	for (int i = 0; i < sv->ntools; i++) {
		struct served *t = &sv->tools[i];
		struct lh_fold_opts fo = { .max_series = sv->max_series, .idle_ns = sv->fold_idle_ns,
					   .may_return = may_return };

		pthread_mutex_init(&t->lock, NULL);
		pthread_cond_init(&t->cond, NULL);
		t->sink.attached = on_attached;
		t->sink.interval = on_interval;
		lh_fold_init(&t->fold, &fo);
		if (lh_session_exiting())
			break;
		if (start_tool(t) == T_ATTACHED) {
			ok++;
			n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%s (%s)", n ? ", " : "",
					      t->desc->name, t->attach);
		} else if (t->rc == LH_EXIT_USAGE) {	/* a forwarded option it refused */
			rc = LH_EXIT_USAGE;
			break;
		} else if (t->asked) {	/* asked for: no run without it */
			fprintf(stderr, "lathist serve: %s did not start (see above)\n",
				t->desc->name);
			rc = LH_EXIT_RUNTIME;
			break;
		} else {	/* said once it is known whether another one started */
			if (nf < sizeof(failed))
				nf += (size_t)snprintf(failed + nf, sizeof(failed) - nf, "%s%s",
						       nf ? " and " : "", t->desc->name);
			nfailed++;
		}
	}
	if (nfailed && rc == LH_EXIT_OK && !lh_session_exiting())
		fprintf(stderr, "lathist serve: %s did not start (see above)%s\n", failed,
			ok ? "; serving the others" : "; nothing to serve");
	if (!ok && rc == LH_EXIT_OK)
		rc = LH_EXIT_RUNTIME;
	if (rc == LH_EXIT_OK && !lh_session_exiting()) {
		d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL,
				     NULL, answer, sv, MHD_OPTION_EXTERNAL_LOGGER, http_log, NULL,
				     MHD_OPTION_LISTEN_SOCKET, sv->fd,
				     MHD_OPTION_CONNECTION_LIMIT, (unsigned int)64,
				     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)10, MHD_OPTION_END);
		if (!d) {
			fprintf(stderr, "lathist serve: cannot start the HTTP server on %s\n",
				sv->listen);
			rc = LH_EXIT_RUNTIME;
		} else {
			sv->owned_by_http = true;	/* MHD_stop_daemon closes it */
		}
	}
	if (d) {
		char where[160];

		bound_address(sv, where, sizeof(where));
		fprintf(stderr, "Serving %s on http://%s/metrics (every %s s)... Hit Ctrl-C to "
			"end.\n", line, where, sv->interval);
	}
	/* until a signal, or every tool has stopped (a failure, said by the tool) */
	while (d && !lh_session_exiting()) {
		struct timespec ts = { 0, 100000000L };
		int running = 0;

		for (int i = 0; i < sv->ntools; i++) {
			pthread_mutex_lock(&sv->tools[i].lock);
			running += sv->tools[i].state == T_ATTACHED;
			pthread_mutex_unlock(&sv->tools[i].lock);
		}
		if (running < ok) {
			/* a tool that stops while serving would leave its series frozen with
			 * nothing saying so: end, exit 1, and let the service manager restart */
			fprintf(stderr, "lathist serve: a tool stopped while serving (see above); "
				"ending (exit 1)\n");
			rc = LH_EXIT_RUNTIME;
			break;
		}
		nanosleep(&ts, NULL);
	}
	if (d)
		MHD_stop_daemon(d);
	if (!lh_session_exiting())
		raise(SIGTERM);		/* tells the tools still running to end */
	stop_tools(sv);
	for (int i = 0; i < sv->ntools; i++) {
		/* a tool that failed on its way out (one that did not start is said above) */
		if (sv->tools[i].attached_once && sv->tools[i].rc && rc == LH_EXIT_OK)
			rc = LH_EXIT_RUNTIME;
		lh_fold_free(&sv->tools[i].fold);
	}
	return rc;
}

int serve_main(int argc, char **argv)
{
	struct serve *sv = calloc(1, sizeof(*sv));
	char priv[256];
	int rc;

	if (!sv)
		return LH_EXIT_RUNTIME;
	rc = parse(sv, argc, argv);
	/* said once for all the tools, not once by each, and before the port is taken */
	if (!rc && lh_check_bpf_ready(priv, sizeof(priv))) {
		fprintf(stderr, "lathist serve: %s\n", priv);
		rc = LH_EXIT_RUNTIME;
	}
	if (!rc)
		rc = bind_listen(sv);
	if (!rc) {
		lh_session_signals();	/* Ctrl-C from here on ends everything cleanly */
		rc = serve_run(sv);
	}
	if (sv->fd >= 0 && !sv->owned_by_http)
		close(sv->fd);
	for (int i = 0; i < sv->ntools; i++)
		for (int j = 0; j < sv->tools[i].argc; j++)
			free(sv->tools[i].argv[j]);
	free(sv);
	return rc < 0 ? LH_EXIT_OK : rc;
}

#else	/* LH_NO_SERVE: the static build, without libmicrohttpd */

int serve_main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "lathist serve: this binary is built without an HTTP server (make static "
		"leaves out libmicrohttpd); run the dynamically linked lathist\n");
	return LH_EXIT_RUNTIME;
}

#endif
