// SPDX-License-Identifier: MIT
/*
 * Runs lathist's runq raw_tp programs with BPF_PROG_TEST_RUN on fake tasks
 * and runqueues (tests/bpf/faketask.bpf.c) through sequences where the kernel
 * reports some events and not others, as it does on some machines (no event
 * while a thread of PID 1 runs) and on any machine when a program run is
 * skipped. This program plays the kernel: it keeps each task's switch count
 * and sched_info, each CPU's rq->nr_switches and clock, and calls the
 * programs only for the events marked seen. After each step it prints one
 * JSON line: the step's name, every non-zero counter of that step, the step's
 * paired waits (count, max_ns) from the total histograms, and whether the pid
 * entry of the step's task is left. The second part groups per thread, where
 * a lost wait is charged to its task's key; the third plays the first part's
 * steps again on programs loaded for a kernel whose sched_switch has no
 * prev_state argument (before 5.18: the state is read from the task); the
 * last runs the sweeps alone on a real process.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "counters.h"
#include "bpfcommon.h"
#include "counters_user.h"
#include "faketask.skel.h"
#include "hist_slot.h"
#include "runq.h"
#include "runq.skel.h"

#define NCPUS 2
#define MS 1000000ULL
#define TASK_DEAD 0x80

struct task {
	unsigned int idx, pid, tgid;
	unsigned long long start, nsw, queued, addr;
	unsigned long long exec_task;	/* signal->group_exec_task (its address) */
	unsigned int cpu, state;
	int running;
};

static struct runq_bpf *rq;
static int keyed_mode;		/* --per-thread: losses charged to keys */
static int state_mode;		/* sched_switch without prev_state (pre-5.18) */
static int sweep_pid;		/* the sweeps alone, tracing (-p) this real process */
static struct faketask_bpf *ft;
static int ncpus, ntasks;
static unsigned long long nr_switches[NCPUS];
static struct task *curr[NCPUS];

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void die(const char *what)
{
	fprintf(stderr, "runq_synth: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Run prog with up to 4 u64 arguments on cpu. */
static void run(struct bpf_program *p, unsigned int cpu, int nargs, unsigned long long a0,
		unsigned long long a1, unsigned long long a2, unsigned long long a3)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .flags = BPF_F_TEST_RUN_ON_CPU, .cpu = cpu);
	unsigned long long args[4] = { a0, a1, a2, a3 };

	o.ctx_in = args;
	o.ctx_size_in = (unsigned int)(nargs * sizeof(args[0]));
	if (bpf_prog_test_run_opts(bpf_program__fd(p), &o) || o.retval)
		die(bpf_program__name(p));
}

/* Write t's fields into its fake task_struct. */
static void push(struct task *t)
{
	ft->bss->which = t->idx;
	ft->bss->pid = t->pid;
	ft->bss->tgid = t->tgid;
	ft->bss->start_time = t->start;
	ft->bss->nvcsw = t->nsw;
	ft->bss->nivcsw = 0;
	ft->bss->on_cpu = (unsigned int)t->running;
	ft->bss->last_queued = t->queued;
	ft->bss->state = t->state;
	ft->bss->cpu = t->cpu;
	ft->bss->exec_task = t->exec_task;
	snprintf(ft->bss->comm, sizeof(ft->bss->comm), "synth%u", t->pid);
	run(ft->progs.fake_task_set, 0, 1, 0, 0, 0, 0);
	t->addr = ft->bss->addr;
}

static void push_rq(unsigned int cpu)
{
	ft->bss->which = curr[cpu]->idx;
	ft->bss->cpu = cpu;
	ft->bss->nr_switches = nr_switches[cpu];
	ft->bss->clock = now_ns();
	run(ft->progs.fake_rq_set, 0, 1, 0, 0, 0, 0);
}

/* A task with this pid, born at start (CLOCK_MONOTONIC ns), switched nsw times. */
static struct task *task(unsigned int pid, unsigned long long start, unsigned long long nsw)
{
	struct task *t = calloc(1, sizeof(*t));

	t->idx = (unsigned int)ntasks++;
	t->pid = pid;
	t->tgid = pid;
	t->start = start;
	t->nsw = nsw;
	push(t);
	return t;
}

/* The kernel wakes t (new: sched_wakeup_new); the program sees it when seen. */
static void wakeup(struct task *t, int new_task, int seen)
{
	if (!t->queued)		/* sched_info_enqueue() */
		t->queued = now_ns();
	push(t);
	if (seen)
		run(new_task ? rq->progs.runq_wakeup_new_raw : rq->progs.runq_wakeup_raw, t->cpu, 1,
		    t->addr, 0, 0, 0);
}

/*
 * The kernel switches cpu from its current task to next, as __schedule()
 * does: rq->nr_switches and prev's switch count move, rq->curr is next, then
 * sched_switch (seen or not), then sched_info (kernel/sched/stats.h): prev is
 * queued again (last_queued) only if its state is running
 * (sched_info_depart()), and next's last_queued is cleared at its arrival.
 * prev_state: 0 running, 1 a sleep state (with preempt: preempted before it
 * slept), TASK_DEAD; also prev's __state for the pre-5.18 programs.
 */
static void sw(unsigned int cpu, struct task *next, int preempt, unsigned int prev_state, int seen)
{
	struct task *prev = curr[cpu];

	nr_switches[cpu]++;
	if (prev->pid)
		prev->nsw++;
	if (prev->pid && !prev_state && !prev->queued)
		prev->queued = now_ns();
	prev->state = prev_state;	/* __state, as the pre-5.18 programs read it */
	next->state = 0;
	next->cpu = cpu;
	curr[cpu] = next;
	push(prev);
	push(next);
	push_rq(cpu);
	if (seen)
		run(rq->progs.runq_switch_raw, cpu, 4, (unsigned long long)preempt, prev->addr,
		    next->addr, prev_state);
	prev->running = 0;
	next->running = 1;
	next->queued = 0;
}

static void task_exit(struct task *t, int seen)
{
	push(t);
	if (seen)
		run(rq->progs.runq_exit_raw, t->cpu, 1, t->addr, 0, 0, 0);
}

/* ,"charged":{"TID":N,...}: the lost waits charged to each thread's key. */
static void print_charged(void)
{
	struct runq_hist_key k, *prev = NULL;
	unsigned long long v[64];
	const char *sep = "";

	printf(",\"charged\":{");
	while (!bpf_map_get_next_key(bpf_map__fd(rq->maps.runq_lost_keyed), prev, &k)) {
		unsigned long long n = 0;

		if (!bpf_map_lookup_elem(bpf_map__fd(rq->maps.runq_lost_keyed), &k, v))
			for (int c = 0; c < ncpus && c < 64; c++)
				n += v[c];
		printf("%s\"%u\":%llu", sep, k.tid, n);
		sep = ",";
		prev = &k;
	}
	printf("}");
}

/* This step's counters and paired waits as one JSON line, with whether the
 * pid entry of t is left (no t: the caller began the line); then zero them. */
static void report(const char *step, const struct task *t)
{
	size_t hsz = sizeof(struct lh_hist_head) + 8 * LH_NSLOTS(0), stride = (hsz + 7) & ~7UL;
	struct lh_counters *pc = calloc((size_t)ncpus, sizeof(*pc));
	char *vals = calloc((size_t)ncpus, stride);
	unsigned long long v[LH_NR_COUNTERS] = {}, count = 0, max = 0;
	unsigned int zero = 0;
	struct runq_start entry;

	if (!pc || !vals)
		die("calloc");
	if (bpf_map_lookup_elem(bpf_map__fd(rq->maps.lathist_counters), &zero, pc))
		die("counters");
	for (int c = 0; c < ncpus; c++)
		for (int i = 0; i < LH_NR_COUNTERS; i++)
			v[i] += pc[c].v[i];
	for (unsigned int k = 0; k < RUNQ_NR_HISTS; k++) {	/* buffer 0: index kind - 1 */
		if (bpf_map_lookup_elem(bpf_map__fd(rq->maps.runq_hist), &k, vals))
			die("runq_hist");
		for (int c = 0; k < 2 && c < ncpus; c++) {
			struct lh_hist_head *h = (void *)(vals + (size_t)c * stride);
			unsigned long long *slots = (void *)(h + 1);

			for (unsigned int s = 0; s < LH_NSLOTS(0); s++)
				count += slots[s];
			if (h->max_ns > max)
				max = h->max_ns;
		}
		memset(vals, 0, (size_t)ncpus * stride);
		bpf_map_update_elem(bpf_map__fd(rq->maps.runq_hist), &k, vals, BPF_ANY);
	}
	if (t) {
		printf("{\"step\":\"%s%s\",\"entry\":%d", keyed_mode ? "keyed_" :
		       state_mode ? "state_" : "",
		       step, bpf_map_lookup_elem(bpf_map__fd(rq->maps.runq_pid_start), &t->pid,
						 &entry) == 0);
	}
	if (keyed_mode)
		print_charged();
	for (int i = 0; i < LH_NR_COUNTERS; i++)
		if (v[i])
			printf(",\"%s\":%llu", lh_counter_info(i)->name, v[i]);
	printf(",\"hist_count\":%llu,\"hist_max_ns\":%llu}\n", count, max);
	fflush(stdout);
	memset(pc, 0, (size_t)ncpus * sizeof(*pc));
	bpf_map_update_elem(bpf_map__fd(rq->maps.lathist_counters), &zero, pc, BPF_ANY);
	free(pc);
	free(vals);
}

/* Load the runq programs as the loader configures the raw_tp path, with --oncpu. */
static void load(void)
{
	size_t vsz = sizeof(struct lh_hist_head) + 8 * LH_NSLOTS(0);
	struct bpf_program *p;

	rq = runq_bpf__open();
	if (!rq)
		die("open runq");
	bpf_map__set_value_size(rq->maps.runq_hist, vsz);
	bpf_map__set_value_size(rq->maps.runq_hist_keyed, vsz);
	bpf_map__set_value_size(rq->maps.lathist_zero_hist, vsz);
	bpf_map__set_max_entries(rq->maps.runq_hist_keyed, keyed_mode ? 64 : 1);
	bpf_map__set_max_entries(rq->maps.runq_lost_keyed, keyed_mode ? 64 : 1);
	rq->rodata->group = keyed_mode ? RUNQ_GROUP_THREAD : RUNQ_GROUP_TOTAL;
	if (keyed_mode) {	/* preallocated, as the loader does where they are small */
		bpf_map__set_map_flags(rq->maps.runq_hist_keyed, 0);
		bpf_map__set_map_flags(rq->maps.runq_lost_keyed, 0);
	}
	bpf_map__set_max_entries(rq->maps.runq_pmu_keyed, 1);
	bpf_map__set_max_entries(rq->maps.runq_pid_start, 1024);
	rq->rodata->switch_has_prev_state = !state_mode;
	rq->rodata->oncpu_on = true;
	rq->rodata->pmu_ncpus = (unsigned int)ncpus;
	/* only raw_tp programs can be test-run; the sweeps are task iterators */
	bpf_object__for_each_program(p, rq->obj)
		bpf_program__set_autoload(p, !sweep_pid && strstr(bpf_program__name(p), "_raw"));
	bpf_program__set_autoload(rq->progs.runq_sweep_start, sweep_pid);
	bpf_program__set_autoload(rq->progs.runq_sweep_end, sweep_pid);
	rq->rodata->use_task_storage = sweep_pid;
	if (sweep_pid)
		rq->rodata->filter_tgid = (unsigned int)sweep_pid;
	if (runq_bpf__load(rq))
		die("load runq");
	memset(nr_switches, 0, sizeof(nr_switches));
	rq->bss->lh_start_ns = now_ns();
	rq->bss->lh_enabled = true;
}

/* Each CPU starts on its idle task. */
static void boot(struct task *idle[NCPUS])
{
	for (unsigned int c = 0; c < NCPUS; c++) {
		idle[c] = task(0, 0, 0);
		idle[c]->cpu = c;
		curr[c] = idle[c];
		push(idle[c]);
	}
}

/* Sequences every attach path shares: the raw_tp path's programs. */
static void raw_steps(void)
{
	unsigned long long t0 = rq->bss->lh_start_ns, old = 1;	/* born long before tracing */
	struct task *idle[NCPUS], *a, *b, *t, *x, *e;

	boot(idle);
	/* a task born while tracing, woken and switched in: one wait, paired */
	t = task(2001, t0 + 1, 0);
	wakeup(t, 1, 1);
	sw(0, t, 0, 0, 1);
	report("paired", t);

	/* the false wait: woken (seen), switched in and out with no event,
	 * woken again unseen, switched in (seen) 5 ms later: never a 5 ms wait */
	sw(0, idle[0], 0, 1, 1);		/* t sleeps (seen) */
	wakeup(t, 0, 1);
	x = task(2002, old, 3);			/* a task whose switches are not traced */
	sw(0, x, 0, 0, 0);
	sw(0, t, 1, 0, 0);			/* x -> t: no event */
	sw(0, x, 0, 1, 0);			/* t -> x, t sleeps: no event */
	wakeup(t, 0, 0);
	sleep_ms(5);
	sw(0, t, 1, 0, 1);			/* x -> t: seen */
	report("switched_since_start", t);

	/* t sleeps (seen); woken and switched in with no event, its switch-out
	 * seen: the CPU's switches do not follow on, and its switch count shows
	 * the wait no event showed */
	sw(0, x, 0, 1, 1);
	wakeup(t, 0, 0);
	sw(0, t, 1, 0, 0);
	sw(0, idle[0], 0, 1, 1);
	report("missed_switch_in_and_wait", t);

	/* two switches on CPU 1 with no event between two seen ones, the second
	 * back to the task the CPU ran: only rq->nr_switches shows them */
	a = task(2003, t0 + 1, 0);
	b = task(2004, t0 + 1, 0);
	wakeup(a, 1, 1);
	wakeup(b, 1, 1);
	sw(1, a, 0, 0, 1);
	sw(1, b, 1, 0, 0);
	sw(1, a, 1, 0, 0);
	sw(1, idle[1], 0, 1, 1);
	report("missed_switches", a);

	/* first sight at a switch-in: queued before tracing began is coverage,
	 * queued while tracing is a loss */
	a = task(2005, old, 7);
	a->queued = t0 - 1000 * MS;
	push(a);
	sw(1, a, 0, 0, 1);
	report("queued_before_trace", a);
	b = task(2006, old, 9);
	b->queued = now_ns();
	push(b);
	sw(1, b, 1, 0, 1);
	report("queued_while_tracing", b);

	/* first sight after a preemption in a sleep state: last_queued is 0, which
	 * says nothing about when the wait began: a loss, not before tracing */
	a = task(2009, old, 4);
	a->queued = 0;
	push(a);
	sw(1, a, 1, 0, 1);
	report("queued_unstamped", a);

	/* an exec from a thread: the thread takes the leader's pid and start time
	 * (fs/exec.c de_thread()) but keeps its own switch count; the pid entry
	 * is the leader's: a different task, never its count */
	a = task(2010, t0 + 1, 0);
	wakeup(a, 1, 1);
	sw(1, a, 1, 0, 1);
	sw(1, idle[1], 0, 1, 1);		/* the leader sleeps */
	b = task(2010, a->start, 40);		/* the thread, now pid 2010 */
	b->queued = now_ns();
	push(b);
	wakeup(b, 0, 1);
	sw(1, b, 0, 0, 1);
	report("exec_from_thread", b);

	/* an exec from a thread changes the thread's pid while it runs (fs/exec.c
	 * de_thread(): it takes its leader's): the CPU's next switch has it as
	 * prev under the new pid, and follows on (no gap) */
	a = task(2011, t0 + 1, 0);
	wakeup(a, 1, 1);
	sw(1, a, 0, 0, 1);
	a->pid = 2012;
	push(a);
	sw(1, idle[1], 0, 1, 1);		/* it sleeps */
	report("pid_changed_on_cpu", a);

	/* an exec from a thread whose leader's last switch comes before the
	 * thread takes the leader's pid (fs/exec.c de_thread(): the leader dies
	 * with the thread in signal->group_exec_task, then the thread gets its
	 * pid and start time): the leader's pid entry is the thread's next, and
	 * the thread's switch-ins so far are no missed waits */
	a = task(2013, t0 + 1, 0);		/* the leader */
	b = task(2014, t0 + 2, 0);		/* its thread */
	b->tgid = 2013;
	wakeup(a, 1, 1);
	sw(0, a, 0, 0, 1);
	wakeup(b, 1, 1);
	sw(0, b, 1, 0, 1);			/* a preempted */
	a->exec_task = b->addr;			/* b execs: a is killed */
	sw(0, a, 0, 1, 1);			/* b waits for a to die */
	task_exit(a, 1);
	sw(0, idle[0], 0, TASK_DEAD, 1);	/* a's last switch */
	b->pid = 2013;
	b->start = a->start;
	wakeup(b, 0, 1);
	sw(0, b, 0, 0, 1);
	sw(0, idle[0], 0, 1, 1);		/* it sleeps: CPU 0 as the next step wants */
	report("exec_leader_died_first", b);

	/* exits with a start whose switch-in no event showed */
	t = task(2007, t0 + 1, 0);
	wakeup(t, 1, 1);
	sw(0, t, 1, 0, 0);
	task_exit(t, 1);
	report("exit_with_start", t);

	/* preempted, woken while still queued: the preemption wait goes on */
	a = task(2008, t0 + 1, 0);
	wakeup(a, 1, 1);
	sw(0, a, 1, 0, 1);
	sw(0, x, 1, 0, 1);			/* a preempted (seen) */
	wakeup(a, 0, 1);
	sw(0, a, 1, 0, 1);
	report("wakeup_while_queued", a);

	/* woken twice with no switch between (the kernel does not do this): the
	 * later start replaces the earlier one of the same wait */
	sw(0, x, 0, 1, 1);			/* a sleeps */
	wakeup(a, 0, 1);
	wakeup(a, 0, 1);
	sw(0, a, 1, 0, 1);
	report("woken_twice", a);

	/* its last switch: the pid entry goes */
	sw(0, idle[0], 0, TASK_DEAD, 1);
	report("dead", a);

	/* preempted after its exit, switched back in with no event, then its last
	 * switch: that preemption's start lost its switch-in (missed_switch_in) */
	e = task(4005, t0 + 1, 0);
	wakeup(e, 1, 1);
	sw(0, e, 0, 0, 1);
	task_exit(e, 1);
	sw(0, idle[0], 1, 0, 1);
	sw(0, e, 0, 0, 0);
	sw(0, idle[0], 0, TASK_DEAD, 1);
	report("preempted_after_exit", e);
}

/* Move t's start (its pid entry's ts) by ns, as a clock would that jumped. */
static void start_shift(struct task *t, unsigned long long ns)
{
	int fd = bpf_map__fd(rq->maps.runq_pid_start);
	struct runq_start e;

	if (bpf_map_lookup_elem(fd, &t->pid, &e))
		die("start_shift lookup");
	e.ts += ns;
	if (bpf_map_update_elem(fd, &t->pid, &e, BPF_EXIST))
		die("start_shift update");
}

/* Fill the keyed histogram map with keys no program makes (kind 0xff) until
 * the kernel refuses one (E2BIG: preallocated, it is full). */
static void fill_hist_map(void)
{
	size_t vsz = sizeof(struct lh_hist_head) + 8 * LH_NSLOTS(0);
	char *v = calloc(1, vsz);
	struct runq_hist_key k = { .kind = 0xff };

	if (!v)
		die("calloc");
	for (k.tid = 1; !bpf_map_update_elem(bpf_map__fd(rq->maps.runq_hist_keyed), &k, v,
					     BPF_NOEXIST); k.tid++)
		;
	if (errno != E2BIG)
		die("fill runq_hist_keyed");
	free(v);
}

/* --per-thread: a lost wait is charged to its task's key, no other */
static void keyed_steps(void)
{
	unsigned long long t0 = rq->bss->lh_start_ns;
	struct task *idle[NCPUS], *a, *b, *c, *d;

	boot(idle);
	a = task(4001, t0 + 1, 0);
	b = task(4002, t0 + 1, 0);
	wakeup(a, 1, 1);
	wakeup(b, 1, 1);
	sw(0, a, 0, 0, 1);
	sw(0, b, 0, 1, 1);			/* a sleeps, b runs: paired */
	sw(0, a, 1, 0, 0);			/* b preempted, a back: no event */
	sw(0, b, 0, 1, 1);			/* a sleeps, b's wait: no start, and a's
						 * unseen switch-in */
	report("losses_of_one_task", a);

	/* the histogram map full: c's paired wait is refused (hist_map_full) and
	 * charged to c's key, as an unseen one is */
	fill_hist_map();
	c = task(4003, t0 + 1, 0);
	wakeup(c, 1, 1);
	sw(1, c, 0, 0, 1);
	report("wait_refused_by_full_map", c);

	/* a start after its end (a clock that went back): negative_delta, charged
	 * to d's key */
	d = task(4004, t0 + 1, 0);
	wakeup(d, 1, 1);
	start_shift(d, 1000 * MS);
	sw(1, d, 0, 1, 1);			/* c sleeps */
	report("negative_delta", d);
}

/* A real process's switch count (voluntary + nonvoluntary) and state letter. */
static unsigned long long real_switches(int pid, char *state)
{
	unsigned long long n = 0, v;
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "voluntary_ctxt_switches: %llu", &v) == 1 ||
		    sscanf(line, "nonvoluntary_ctxt_switches: %llu", &v) == 1)
			n += v;
		if (state)
			sscanf(line, "State: %c", state);
	}
	if (f)
		fclose(f);
	return n;
}

/* Wait until the process is asleep (blocked in its read) with a switch count past n. */
static unsigned long long wait_asleep(int pid, unsigned long long n)
{
	unsigned long long now;
	char state = 0;

	for (int i = 0; i < 2000; i++) {
		now = real_switches(pid, &state);
		if (state == 'S' && now > n)
			return now;
		sleep_ms(1);
	}
	die("child never slept");
	return 0;
}

/*
 * The sweeps alone, no event program attached, on a real child blocked in a
 * read: the start gives it its switch count as a baseline, it is woken 5 times
 * (no event seen), the end counts every switch-in since as missed_wait and
 * writes the tids it saw. The kernel's own count (/proc) is the truth.
 */
static void sweep_steps(int wr)
{
	unsigned long long n0, n1;
	char *seen = NULL;
	size_t len = 0;

	n0 = wait_asleep(sweep_pid, 0);
	if (lh_run_iter(rq->progs.runq_sweep_start, -1, NULL, NULL))
		die("start sweep");
	n0 = real_switches(sweep_pid, NULL);
	n1 = n0;
	for (int i = 0; i < 5; i++) {
		if (write(wr, "x", 1) != 1)
			die("write");
		n1 = wait_asleep(sweep_pid, n1);
	}
	if (lh_run_iter(rq->progs.runq_sweep_end, -1, &seen, &len))
		die("end sweep");
	printf("{\"step\":\"sweeps\",\"switch_ins\":%llu,\"seen\":%s", n1 - n0,
	       len == sizeof(unsigned int) && *(unsigned int *)seen == (unsigned int)sweep_pid ?
	       "true" : "false");
	free(seen);
	report("sweeps", NULL);
}

/* A child that blocks reading a pipe until it closes; the sweeps on it. */
static void sweep_part(void)
{
	int fds[2], status;
	char c;

	if (pipe(fds))
		die("pipe");
	sweep_pid = fork();
	if (sweep_pid < 0)
		die("fork");
	if (!sweep_pid) {
		close(fds[1]);
		while (read(fds[0], &c, 1) == 1)
			;
		_exit(0);
	}
	close(fds[0]);
	keyed_mode = state_mode = 0;
	load();
	sweep_steps(fds[1]);
	close(fds[1]);
	waitpid(sweep_pid, &status, 0);
	runq_bpf__destroy(rq);
}

int main(void)
{
	ncpus = libbpf_num_possible_cpus();
	if (ncpus < NCPUS) {
		fprintf(stderr, "runq_synth: needs %d CPUs\n", NCPUS);
		return 1;
	}
	ft = faketask_bpf__open_and_load();
	if (!ft)
		die("open faketask");
	for (int part = 0; part < 3; part++) {
		keyed_mode = part == 1;
		state_mode = part == 2;
		load();
		if (keyed_mode)
			keyed_steps();
		else
			raw_steps();
		runq_bpf__destroy(rq);
	}
	sweep_part();
	faketask_bpf__destroy(ft);
	return 0;
}
