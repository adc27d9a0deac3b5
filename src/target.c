// SPDX-License-Identifier: MIT
/* Which tasks a run traces: processes, cgroup v2 folders, the PID namespace. */
#include <errno.h>
#include <stdio.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include "cli.h"
#include "target.h"
#include "util.h"

long lh_tgid_of(uint32_t id)
{
	char path[64], line[256];
	long tgid = -ESRCH;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/status", id);
	f = fopen(path, "r");
	if (!f)
		return -ESRCH;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %ld", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}

int lh_cgroup2_mount(char *mnt, size_t len)
{
	char dev[256], dir[4096], type[64];
	int found = -ENOENT;
	FILE *f = fopen("/proc/self/mounts", "r");

	if (!f)
		return -errno;
	while (fscanf(f, "%255s %4095s %63s %*[^\n]", dev, dir, type) == 3) {
		if (!strcmp(type, "cgroup2")) {
			snprintf(mnt, len, "%s", dir);
			found = 0;
			break;
		}
	}
	fclose(f);
	return found;
}

int lh_check_per_cgroup(const char *tool)
{
	char mnt[4096];

	if (!lh_cgroup2_mount(mnt, sizeof(mnt)))
		return 0;
	lh_usage_error(tool, "--per-cgroup: no cgroup v2 file system is mounted, which names "
		       "the cgroups; mount one (mount -t cgroup2 none /sys/fs/cgroup/unified)");
	return -EINVAL;
}

int lh_cgroup_id(const char *path, char *resolved, size_t len, uint64_t *id)
{
	struct statfs sfs;
	struct stat st;
	char mnt[4096];

	if (path[0] == '/') {
		/* an absolute path that is no file, or the file system's root (/, //, /.),
		 * is a cgroup's path under the mount, as /proc/PID/cgroup and
		 * --per-cgroup's labels write it (/system.slice, / for the root) */
		char *real = realpath(path, NULL);
		bool fs_root = real && !strcmp(real, "/"), none = !real && errno == ENOENT;

		free(real);
		if (fs_root || none) {
			if (lh_cgroup2_mount(mnt, sizeof(mnt)))
				return none ? -ENOENT : -EMEDIUMTYPE;
			/* a missing folder under the mount is named as given, not twice */
			snprintf(resolved, len, "%s%s", lh_path_under(path, mnt) ? "" : mnt, path);
		} else {
			snprintf(resolved, len, "%s", path);
		}
	} else {
		if (lh_cgroup2_mount(mnt, sizeof(mnt)))
			return -EMEDIUMTYPE;
		snprintf(resolved, len, "%s/%s", mnt, path);
	}
	{
		/* recorded as the folder it is: a symlink, .. or a trailing / would name
		 * one cgroup two ways (or another one: nctest/..) */
		char *real = realpath(resolved, NULL);

		if (!real)
			return -errno;
		snprintf(resolved, len, "%s", real);
		free(real);
	}
	if (stat(resolved, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (statfs(resolved, &sfs))
		return -errno;
	if (sfs.f_type != CGROUP2_SUPER_MAGIC)
		return -EMEDIUMTYPE;
	/* on 64-bit kernels a cgroup v2 inode number is its kernfs id (fs/kernfs) */
	*id = st.st_ino;
	return 0;
}

bool lh_in_init_pidns(void)
{
	char link[64];
	ssize_t n = readlink("/proc/self/ns/pid", link, sizeof(link) - 1);

	if (n <= 0)
		return false;
	link[n] = 0;
	return !strcmp(link, "pid:[4026531836]");
}

int lh_check_pidns(const char *tool, const char *uses_ids)
{
	if (!uses_ids || lh_in_init_pidns())
		return 0;
	lh_usage_error(tool, "%s: lathist runs in a PID namespace of its own (a container), "
		       "and BPF sees the host's pids, not this namespace's; run it in the host's "
		       "(nsenter -t 1 -p, docker run --pid=host), or leave out what takes or shows "
		       "pids", uses_ids);
	return -EINVAL;
}

static int by_tid(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

long lh_proc_tids(uint32_t pid_filter, uint32_t tid_filter, uint32_t **out)
{
	uint32_t *v = NULL;
	size_t n = 0, cap = 0;
	DIR *procs, *tasks;
	struct dirent *p, *t;
	char path[64];

	procs = opendir("/proc");
	if (!procs)
		return -1;
	while ((p = readdir(procs))) {
		uint32_t pid;

		if (lh_parse_u32(p->d_name, 1, UINT32_MAX, &pid) ||
		    (pid_filter && pid != pid_filter))
			continue;
		snprintf(path, sizeof(path), "/proc/%u/task", pid);
		tasks = opendir(path);
		while (tasks && (t = readdir(tasks))) {
			uint32_t tid;

			if (lh_parse_u32(t->d_name, 1, UINT32_MAX, &tid) || (tid_filter && tid != tid_filter))
				continue;
			if (n == cap) {
				uint32_t *nv = realloc(v, (cap = cap ? 2 * cap : 1024) * sizeof(*v));

				if (!nv) {
					closedir(tasks);
					closedir(procs);
					free(v);
					return -1;
				}
				v = nv;
			}
			v[n++] = tid;
		}
		if (tasks)
			closedir(tasks);
	}
	closedir(procs);
	if (n)
		qsort(v, n, sizeof(*v), by_tid);
	*out = v;
	return (long)n;
}

uint64_t lh_uptime_ticks(void)
{
	FILE *f = fopen("/proc/uptime", "re");
	double up = 0;
	long hz = sysconf(_SC_CLK_TCK);

	if (!f)
		return 0;
	if (fscanf(f, "%lf", &up) != 1)
		up = 0;
	fclose(f);
	return hz > 0 && up > 0 ? (uint64_t)(up * (double)hz) : 0;
}

bool lh_task_started_since(uint32_t tid, uint64_t since)
{
	uint64_t start;

	return lh_task_start_ticks(tid, &start) || start >= since;	/* gone: not alive all through */
}
