// SPDX-License-Identifier: MIT
/* lathist: where is time lost? Verb dispatch. */
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>
#include <string.h>
#include "tool.h"
#include "version.h"

static const char usage[] =
	"Usage: lathist VERB [OPTIONS]\n"
	"In-kernel latency histograms with honest loss accounting.\n"
	"\n"
	"Verbs:\n"
	"  runq      runqueue latency: wakeup latency and preemption wait\n"
	"  bio       block I/O latency: queue and device time, per process, disk, op\n"
	"  report    read saved JSON, merge runs by addition, print any format, heatmap\n"
	"  doctor    can lathist run here? privileges, BTF, tracepoints, perf events\n"
	"\n"
	"lathist VERB -h shows a verb's options. lathist --version prints the version.\n"
	"Exit status: 0 success, 1 runtime failure, 2 usage error.\n";

/*
 * Started with fd 0, 1 or 2 closed, the next file opened would take its
 * number and get what was meant for the stream: fill the gap with /dev/null,
 * and remember that standard output is not there.
 */
static void guard_std_fds(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) >= 0)
			continue;
		if (fd == STDOUT_FILENO)
			lh_stdout_closed = true;
		int nfd = open("/dev/null", fd ? O_WRONLY : O_RDONLY);

		if (nfd >= 0 && nfd != fd) {
			dup2(nfd, fd);
			close(nfd);
		}
	}
}

int main(int argc, char **argv)
{
	guard_std_fds();
	/* a closed pipe is a write error to report (EPIPE), not a silent death */
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2) {
		fputs("lathist: missing verb (runq, bio, report or doctor); see lathist -h\n", stderr);
		return LH_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(usage, stdout);
		return LH_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("lathist %s\n", LATHIST_VERSION);
		return LH_EXIT_OK;
	}
	if (!strcmp(argv[1], "runq"))
		return runq_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "bio"))
		return bio_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "report"))
		return report_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "doctor"))
		return doctor_main(argc - 1, argv + 1);
	if (argv[1][0] == '-')
		fprintf(stderr, "lathist: '%s' before the verb; options go after it, e.g. "
			"lathist runq %s\n", argv[1], argv[1]);
	else
		fprintf(stderr, "lathist: unknown verb '%s'; see lathist -h\n", argv[1]);
	return LH_EXIT_USAGE;
}
