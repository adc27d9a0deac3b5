// SPDX-License-Identifier: MIT
/* lathist: where is time lost? Verb dispatch. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>
#include <string.h>
#include "registry.h"
#include "tool.h"
#include "version.h"
#include "verbs.h"

/* The verbs that are not tracing tools (those come from the registry). */
static const struct {
	const char *name, *summary;
	int (*main)(int argc, char **argv);
} others[] = {
	{ "report", "read saved JSON, merge runs by addition, print any format, heatmap",
	  report_main },
	{ "serve", "the tools in one process, served to Prometheus on /metrics", serve_main },
	{ "doctor", "can lathist run here? privileges, BTF, tracepoints, perf events",
	  doctor_main },
};

#define NOTHERS (sizeof(others) / sizeof(others[0]))

static void usage(void)
{
	puts("Usage: lathist VERB [OPTIONS]\n"
	     "In-kernel latency histograms with honest loss accounting.\n\nVerbs:");
	for (int i = 0; lh_tools[i]; i++)
		printf("  %-9s %s\n", lh_tools[i]->name, lh_tools[i]->summary);
	for (size_t i = 0; i < NOTHERS; i++)
		printf("  %-9s %s\n", others[i].name, others[i].summary);
	puts("\nlathist VERB -h shows a verb's options. lathist --version prints the version.\n"
	     "Exit status: 0 success, 1 runtime failure, 2 usage error.");
}

/*
 * Started with fd 0, 1 or 2 closed, the next file opened would take its
 * number and get what was meant for the stream: fill the gap (stdout with
 * /dev/full, the others with /dev/null), and remember that standard output is
 * not there.
 */
static void guard_std_fds(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) >= 0)
			continue;
		if (fd == STDOUT_FILENO)
			lh_stdout_closed = true;
		/* stdout: /dev/full, so that what stdio writes there fails (finish) */
		int nfd = open(fd == STDOUT_FILENO ? "/dev/full" : "/dev/null",
			       fd ? O_WRONLY : O_RDONLY);

		if (nfd >= 0 && nfd != fd) {
			dup2(nfd, fd);
			close(nfd);
		}
	}
}

/*
 * What went to stdout through stdio (help, --version, doctor, report) must have
 * been written: a full disk or a closed stdout is exit 1 with one line, said
 * here when the verb said nothing (rc 0). A reader that quit early (| head:
 * EPIPE, from this flush or from the write that set the error flag) is not a
 * failure of the text. Returns the exit status.
 */
static int finish(int rc)
{
	int before = errno, failed = fflush(stdout), err = failed ? errno : before;

	if ((failed || ferror(stdout)) && err == EPIPE)
		return rc;
	if ((failed || ferror(stdout)) && rc == LH_EXIT_OK) {
		fprintf(stderr, "lathist: cannot write to standard output: %s\n",
			lh_stdout_closed ? "it was closed when lathist started" :
			failed ? strerror(err) : "a write to it failed");
		rc = LH_EXIT_RUNTIME;
	}
	return rc;
}

int main(int argc, char **argv)
{
	const struct lh_tool_desc *t;

	guard_std_fds();
	/* a closed pipe is a write error to report (EPIPE), not a silent death */
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2) {
		fputs("lathist: missing verb; see lathist -h for the list\n", stderr);
		return LH_EXIT_USAGE;
	}
	if ((!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	     !strcmp(argv[1], "--version")) && argc > 2) {
		fprintf(stderr, "lathist: %s takes nothing after it ('%s'); give lathist %s, or "
			"lathist VERB -h for a verb's options\n", argv[1], argv[2], argv[1]);
		return LH_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage();
		return finish(LH_EXIT_OK);
	}
	if (!strcmp(argv[1], "--version")) {
		printf("lathist %s\n", LATHIST_VERSION);
		return finish(LH_EXIT_OK);
	}
	if ((t = lh_tool_find(argv[1])))
		return finish(t->main(argc - 1, argv + 1));
	for (size_t i = 0; i < NOTHERS; i++)
		if (!strcmp(argv[1], others[i].name))
			return finish(others[i].main(argc - 1, argv + 1));
	if (argv[1][0] == '-')	/* not "lathist runq -V": no verb may take it either */
		fprintf(stderr, "lathist: '%s' before the verb: lathist itself takes only -h and "
			"--version; a verb's options go after it (see lathist VERB -h)\n", argv[1]);
	else
		fprintf(stderr, "lathist: unknown verb '%s'; see lathist -h\n", argv[1]);
	return LH_EXIT_USAGE;
}
