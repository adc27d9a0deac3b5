// SPDX-License-Identifier: MIT
/*
 * Test workload with known runqueue waits. Prints "ready PID", waits for a
 * line on stdin (so the tracer can attach first), runs, and prints one JSON
 * line per thread or child with the kernel's own accounting, read by the
 * thread itself just before it exits from /proc/self/task/TID/schedstat:
 * oncpu_ns (field 1), run_delay_ns (field 2), pcount (field 3).
 *
 *   runqwork mix   CPU SPINNERS SLEEPERS MS   threads pinned to CPU: spinners
 *                                             burn, sleepers sleep 1 ms and spin 100 us
 *   runqwork churn THREADS REUSE              a sleeper lives while THREADS short
 *                                             threads come and go, then REUSE child
 *                                             processes are created one after the other
 *                                             with the same pid (clone3 set_tid)
 *   runqwork pipe  CGROUP ROUNDS              a reader child in cgroup CGROUP is woken
 *                                             ROUNDS times by a writer outside it
 *   runqwork crowd THREADS MS                 THREADS threads, made before "ready",
 *                                             each sleeping MS ms in a loop; "go" ends
 *                                             them (each reports as it ends)
 *   runqwork forks CHILDREN SLEEPS [CHILDREN2 SLEEPS2]
 *                                             CHILDREN processes alive at once, each
 *                                             sleeping 1 ms SLEEPS times, then woken
 *                                             together to exit (read by the parent once
 *                                             dead: schedstat final, exit included);
 *                                             then a second wave of CHILDREN2
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "workload.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void spin_ns(uint64_t ns)
{
	uint64_t end = now_ns() + ns;

	while (now_ns() < end)
		;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL) };

	nanosleep(&ts, NULL);
}

/* This thread's schedstat: on-CPU ns, run_delay ns, pcount. */
static void schedstat_of(const char *path, unsigned long long *oncpu, unsigned long long *delay,
			 unsigned long long *pcount)
{
	char line[256];
	int fd, n;

	*oncpu = *delay = *pcount = 0;
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return;
	n = (int)read(fd, line, sizeof(line) - 1);
	close(fd);
	if (n > 0) {
		line[n] = 0;
		sscanf(line, "%llu %llu %llu", oncpu, delay, pcount);
	}
}

/* This thread's schedstat. */
static void schedstat(unsigned long long *oncpu, unsigned long long *delay,
		      unsigned long long *pcount)
{
	char path[96];

	snprintf(path, sizeof(path), "/proc/self/task/%ld/schedstat", (long)syscall(SYS_gettid));
	schedstat_of(path, oncpu, delay, pcount);
}

/* pcount when the measured part began (pipe reader: after joining the cgroup) */
static unsigned long long base_pcount;

/*
 * Report lines go to memory shared with every thread and child (MAP_SHARED),
 * printed by main at the end: a write to the pipe right after the reading would
 * wake the reader, and the writer's own waits after its last reading are what
 * the tests must allow for.
 */
#define REPORT_BYTES (8 << 20)
static char *reports;
static unsigned long *report_len;

static void reports_init(void)
{
	void *p = mmap(NULL, REPORT_BYTES + 64, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		       -1, 0);

	if (p == MAP_FAILED)
		exit(1);
	report_len = p;
	reports = (char *)p + 64;
}

static void reports_print(void)
{
	fwrite(reports, 1, *report_len, stdout);
	fflush(stdout);
}

/* Read this thread's schedstat and append one JSON line to the shared reports. */
/* One report line with the figures given (tid, pid: whose they are). */
static void report_line(const char *role, int index, long tid, long pid,
			unsigned long long oncpu, unsigned long long delay, unsigned long long pcount)
{
	char line[320];
	unsigned long off;
	int n;

	n = snprintf(line, sizeof(line),
		     "{\"role\":\"%s\",\"index\":%d,\"tid\":%ld,\"pid\":%ld,\"oncpu_ns\":%llu,"
		     "\"run_delay_ns\":%llu,\"pcount\":%llu,\"base_pcount\":%llu}\n",
		     role, index, tid, pid, oncpu, delay, pcount, base_pcount);
	off = __atomic_fetch_add(report_len, (unsigned long)n, __ATOMIC_RELAXED);
	if (off + (unsigned long)n > REPORT_BYTES)
		_exit(3);
	memcpy(reports + off, line, (size_t)n);
}

static void report(const char *role, int index)
{
	unsigned long long oncpu, delay, pcount;

	schedstat(&oncpu, &delay, &pcount);
	report_line(role, index, (long)syscall(SYS_gettid), (long)getpid(), oncpu, delay, pcount);
}

/* ---- mix ---- */

static uint64_t mix_end;

static void *spinner(void *arg)
{
	while (now_ns() < mix_end)
		spin_ns(100000);
	report("spinner", (int)(intptr_t)arg);
	return NULL;
}

static void *sleeper(void *arg)
{
	while (now_ns() < mix_end) {
		sleep_ns(1000000);
		spin_ns(100000);
	}
	report("sleeper", (int)(intptr_t)arg);
	return NULL;
}

static int run_mix(int cpu, int nspin, int nsleep, int ms)
{
	pthread_t th[64];
	pthread_attr_t attr;
	cpu_set_t set;
	int n = 0;

	if (nspin + nsleep > 64)
		return 2;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_attr_init(&attr);
	/* glibc applies this from the new thread itself: its first run may be elsewhere */
	pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	wait_go();
	mix_end = now_ns() + (uint64_t)ms * 1000000ULL;
	for (int i = 0; i < nspin; i++)
		pthread_create(&th[n++], &attr, spinner, (void *)(intptr_t)i);
	for (int i = 0; i < nsleep; i++)
		pthread_create(&th[n++], &attr, sleeper, (void *)(intptr_t)i);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	return 0;
}

/* ---- churn ---- */

static volatile int churn_done;

static void *churn_sleeper(void *arg __attribute__((unused)))
{
	while (!churn_done) {
		sleep_ns(1000000);
		spin_ns(20000);
	}
	report("sleeper", 0);
	return NULL;
}

static void *short_thread(void *arg)
{
	spin_ns(20000);
	report("short", (int)(intptr_t)arg);
	return NULL;
}

static pid_t clone_with_tid(pid_t tid)
{
	struct clone_args args = { 0 };

	args.exit_signal = SIGCHLD;
	args.set_tid = (uint64_t)(uintptr_t)&tid;
	args.set_tid_size = 1;
	return (pid_t)syscall(SYS_clone3, &args, sizeof(args));
}

/* A child whose pid a later child takes again: sleeps and wakes 20 times. */
static void reuse_child(void)
{
	for (int i = 0; i < 20; i++) {
		sleep_ns(500000);
		spin_ns(20000);
	}
	_exit(0);	/* its figures are read by its parent once it is dead (run_reuse) */
}

static int run_reuse(int n)
{
	pid_t want = 0;

	for (int i = 0; i < n; i++) {
		pid_t pid = -1;
		int status;

		if (!want) {
			/* find a free pid near ours, within [300, pid_max) */
			long max = 32768;
			FILE *f = fopen("/proc/sys/kernel/pid_max", "r");

			if (f) {
				if (fscanf(f, "%ld", &max) != 1)
					max = 32768;
				fclose(f);
			}
			for (long i = 0; i < 20000; i++) {
				pid_t cand = (pid_t)(300 + (getpid() + 500 + i - 300) % (max - 300));

				pid = clone_with_tid(cand);
				if (pid >= 0 || errno != EEXIST)
					break;
			}
		} else {
			for (int t = 0; t < 1000; t++) {
				pid = clone_with_tid(want);
				if (pid >= 0 || errno != EEXIST)
					break;
				usleep(1000);
			}
		}
		if (pid < 0) {
			fprintf(stderr, "runqwork: clone3 set_tid: %s\n", strerror(errno));
			return 1;
		}
		if (pid == 0)
			reuse_child();
		want = pid;
		{
			/* dead but not reaped: its schedstat is final, exit path included,
			 * so no wait of it comes after the reading */
			siginfo_t info;
			unsigned long long oncpu, delay, pcount;
			char path[64];

			if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT))
				return 1;
			snprintf(path, sizeof(path), "/proc/%d/schedstat", pid);
			schedstat_of(path, &oncpu, &delay, &pcount);
			report_line("reuse", i, pid, pid, oncpu, delay, pcount);
		}
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
			return 1;
	}
	return 0;
}

static int run_churn(int nthreads, int nreuse)
{
	pthread_t s;
	int err;

	wait_go();
	pthread_create(&s, NULL, churn_sleeper, NULL);
	for (int i = 0; i < nthreads; i++) {
		pthread_t t;

		if (pthread_create(&t, NULL, short_thread, (void *)(intptr_t)i))
			return 1;
		pthread_join(t, NULL);
	}
	fflush(stdout);
	err = run_reuse(nreuse);
	churn_done = 1;
	pthread_join(s, NULL);
	return err;
}

/* ---- crowd ---- */

static volatile int crowd_done;
static int crowd_ms;

static void *crowd_thread(void *arg __attribute__((unused)))
{
	struct timespec ts = { crowd_ms / 1000, (crowd_ms % 1000) * 1000000L };

	while (!crowd_done)
		nanosleep(&ts, NULL);
	report("crowd", 0);
	return NULL;
}

/* Many live threads when the tracer starts: each one's first event comes at once. */
static int run_crowd(int nthreads, int ms)
{
	pthread_t *t = calloc((size_t)nthreads, sizeof(*t));
	pthread_attr_t attr;
	int made = 0;

	if (!t || nthreads < 1 || ms < 1)
		return 2;
	crowd_ms = ms;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (; made < nthreads; made++)
		if (pthread_create(&t[made], &attr, crowd_thread, NULL))
			break;
	wait_go();
	crowd_done = 1;
	for (int i = 0; i < made; i++)
		pthread_join(t[i], NULL);
	free(t);
	return made == nthreads ? 0 : 1;
}

/* ---- pipe ---- */

static int run_pipe(const char *cgroup, int rounds)
{
	int to_reader[2], to_writer[2], status;
	char path[4096], c = 'x';
	pid_t child;

	if (pipe(to_reader) || pipe(to_writer))
		return 1;
	wait_go();
	child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		int fd;

		snprintf(path, sizeof(path), "%s/cgroup.procs", cgroup);
		fd = open(path, O_WRONLY);
		if (fd < 0 || write(fd, "0", 1) != 1) {
			fprintf(stderr, "runqwork: cannot join %s: %s\n", path, strerror(errno));
			_exit(1);
		}
		close(fd);
		{
			unsigned long long a, b;

			schedstat(&a, &b, &base_pcount);
		}
		if (write(to_writer[1], &c, 1) != 1)	/* "in the cgroup now" */
			_exit(1);
		for (int i = 0; i < rounds; i++) {
			if (read(to_reader[0], &c, 1) != 1 || write(to_writer[1], &c, 1) != 1)
				_exit(1);
		}
		report("reader", 0);
		_exit(0);
	}
	if (read(to_writer[0], &c, 1) != 1)
		return 1;
	for (int i = 0; i < rounds; i++) {
		if (write(to_reader[1], &c, 1) != 1 || read(to_writer[0], &c, 1) != 1)
			return 1;
	}
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status))
		return 1;
	report("writer", 0);
	return 0;
}

/* ---- forks ---- */

static int fork_wave(int wave, int n, int nsleep)
{
	pid_t *pids = calloc((size_t)n, sizeof(*pids));
	int gate[2], made = 0, err = 0;

	if (!pids || pipe(gate))
		return 1;
	for (; made < n; made++) {
		pid_t pid = fork();
		char c;

		if (pid < 0)
			break;
		if (pid == 0) {
			close(gate[1]);
			for (int i = 0; i < nsleep; i++) {
				sleep_ns(1000000);
				spin_ns(20000);
			}
			if (read(gate[0], &c, 1) != 0)	/* EOF: the parent made them all */
				_exit(1);
			_exit(0);
		}
		pids[made] = pid;
	}
	close(gate[1]);
	for (int i = 0; i < made; i++) {
		unsigned long long oncpu, delay, pcount;
		siginfo_t info;
		char path[64];
		int status;

		/* dead but not reaped: its schedstat is final, exit path included */
		if (waitid(P_PID, (id_t)pids[i], &info, WEXITED | WNOWAIT))
			return 1;
		snprintf(path, sizeof(path), "/proc/%d/schedstat", pids[i]);
		schedstat_of(path, &oncpu, &delay, &pcount);
		report_line(wave ? "fork2" : "fork", i, pids[i], pids[i], oncpu, delay, pcount);
		if (waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			err = 1;
	}
	close(gate[0]);
	free(pids);
	return made == n ? err : 1;
}

static int run_forks(int n, int nsleep, int n2, int nsleep2)
{
	wait_go();
	return fork_wave(0, n, nsleep) || (n2 && fork_wave(1, n2, nsleep2));
}

int main(int argc, char **argv)
{
	int rc = 2;

	setvbuf(stdout, NULL, _IOLBF, 0);
	reports_init();
	if (argc == 6 && !strcmp(argv[1], "mix"))
		rc = run_mix(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
	else if (argc == 4 && !strcmp(argv[1], "churn"))
		rc = run_churn(atoi(argv[2]), atoi(argv[3]));
	else if (argc == 4 && !strcmp(argv[1], "pipe"))
		rc = run_pipe(argv[2], atoi(argv[3]));
	else if (argc == 4 && !strcmp(argv[1], "crowd"))
		rc = run_crowd(atoi(argv[2]), atoi(argv[3]));
	else if ((argc == 4 || argc == 6) && !strcmp(argv[1], "forks"))
		rc = run_forks(atoi(argv[2]), atoi(argv[3]), argc == 6 ? atoi(argv[4]) : 0,
			       argc == 6 ? atoi(argv[5]) : 0);
	else
		fprintf(stderr, "usage: runqwork mix CPU SPINNERS SLEEPERS MS | churn THREADS REUSE"
			" | pipe CGROUP ROUNDS | crowd THREADS MS"
			" | forks CHILDREN SLEEPS [CHILDREN2 SLEEPS2]\n");
	reports_print();
	if (rc == 0)
		printf("done\n");
	return rc;
}
