// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>
#include "pmu_user.h"
#include "util.h"

/* perf's names (tools/perf/util/parse-events.c, the generic event tables). */
static const struct {
	const char *name;
	uint32_t type;
	uint64_t config;
} names[] = {
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ "cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
	{ "branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
	{ "bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES },
	{ "stalled-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND },
	{ "stalled-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND },
	{ "ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES },
	{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
	{ "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN },
	{ "major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ },
	{ "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "alignment-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS },
	{ "emulation-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS },
};

static int parse_one(const char *item, struct lh_pmu_event *e, const char **why)
{
	if (strlen(item) >= sizeof(e->name)) {
		*why = "too long";
		return -EINVAL;
	}
	memset(e, 0, sizeof(*e));
	snprintf(e->name, sizeof(e->name), "%s", item);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(item, names[i].name)) {
			e->type = names[i].type;
			e->config = names[i].config;
			return 0;
		}
	if (item[0] == 'r' && item[1]) {
		char *end;

		errno = 0;
		e->config = strtoull(item + 1, &end, 16);
		if (!errno && !*end && item[1] != '-' && item[1] != '+' && item[1] != ' ') {
			e->type = PERF_TYPE_RAW;
			return 0;
		}
		*why = "a raw event is r and hex digits, e.g. r01c2";
		return -EINVAL;
	}
	*why = "not a known event; give e.g. cycles, instructions, cache-misses, cpu-clock, "
	       "page-faults or a raw rNNNN";
	return -EINVAL;
}

int lh_pmu_parse(const char *list, struct lh_pmu_event *ev, char *bad, size_t badlen,
		 const char **why)
{
	char *copy = strdup(list ? list : ""), *save = NULL, *item;
	int n = 0, err = 0;

	if (!copy)
		return -ENOMEM;
	if (lh_list_has_empty(copy)) {
		snprintf(bad, badlen, "%s", list ? list : "");
		*why = "an empty name; give names separated by single commas";
		free(copy);
		return -EINVAL;
	}
	for (item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		snprintf(bad, badlen, "%s", item);
		if (n == LH_MAX_PMU) {
			*why = "one counter too many; give at most 8";
			err = -EINVAL;
			break;
		}
		err = parse_one(item, &ev[n], why);
		if (err)
			break;
		for (int j = 0; j < n && !err; j++)
			if (ev[j].type == ev[n].type && ev[j].config == ev[n].config) {
				/* another name of the same event (faults, page-faults) */
				static __thread char same[96];

				err = -EINVAL;
				*why = "given twice; give each counter once";
				if (strcmp(item, ev[j].name)) {
					snprintf(same, sizeof(same), "the same counter as %s; give "
						 "each counter once", ev[j].name);
					*why = same;
				}
			}
		if (err)
			break;
		n++;
	}
	free(copy);
	return err ? err : n;
}

bool lh_pmu_unsupported(int err)
{
	return err == ENOENT || err == EOPNOTSUPP || err == ENODEV || err == EINVAL;
}

const char *lh_pmu_why(int err)
{
	switch (err) {
	case ENOENT:
	case EOPNOTSUPP:
	case ENODEV:
		return "this machine's PMU does not count it (hardware events are missing in most "
		       "VMs; software events such as cpu-clock or page-faults work everywhere)";
	case EACCES:
	case EPERM:
		return "not allowed: run as root or with CAP_PERFMON";
	case EMFILE:
	case ENFILE:
		return "too many open files (one per counter and CPU): raise ulimit -n";
	case EINVAL:
		return "the kernel refused this event's configuration";
	default:
		return strerror(err);
	}
}

static int perf_open(const struct lh_pmu_event *e, int cpu)
{
	struct perf_event_attr a = {
		.size = sizeof(a),
		.type = e->type,
		.config = e->config,
		.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
	};

	return (int)syscall(SYS_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

int lh_pmu_open(struct lh_pmu_event *ev, int n, int ncpus, int *fds)
{
	uint64_t online[LH_MAX_CPU_WORDS] = { 0 };
	int opened = 0;

	if (lh_online_cpus(online, LH_MAX_CPU_WORDS, ncpus))
		memset(online, 0xff, sizeof(online));
	for (int i = 0; i < n; i++) {
		ev[i].err = 0;
		for (int cpu = 0; cpu < ncpus; cpu++) {
			int *fd = &fds[i * ncpus + cpu];

			*fd = -1;
			if (ev[i].err || !((online[cpu / 64] >> (cpu % 64)) & 1))
				continue;
			*fd = perf_open(&ev[i], cpu);
			if (*fd < 0)
				ev[i].err = errno;
		}
		if (ev[i].err) {
			for (int cpu = 0; cpu < ncpus; cpu++) {
				if (fds[i * ncpus + cpu] >= 0)
					close(fds[i * ncpus + cpu]);
				fds[i * ncpus + cpu] = -1;
			}
		} else {
			opened++;
		}
	}
	return opened;
}

void lh_pmu_close(int *fds, int n, int ncpus)
{
	for (int i = 0; fds && i < n * ncpus; i++)
		if (fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
		}
}

bool lh_pmu_estimate(uint64_t raw, uint64_t enabled, uint64_t running, double *est,
		     bool *estimated)
{
	if (!running)
		return false;
	*estimated = running < enabled;
	*est = *estimated ? (double)raw * ((double)enabled / (double)running) : (double)raw;
	return true;
}

bool lh_pmu_ratio(uint64_t num_raw, uint64_t num_enabled, uint64_t num_running,
		  uint64_t den_raw, uint64_t den_enabled, uint64_t den_running, double *ratio,
		  bool *estimated)
{
	double n, d;
	bool en, ed;

	if (!lh_pmu_estimate(num_raw, num_enabled, num_running, &n, &en) ||
	    !lh_pmu_estimate(den_raw, den_enabled, den_running, &d, &ed) || d == 0.0)
		return false;
	*ratio = n / d;
	*estimated = en || ed;
	return true;
}
