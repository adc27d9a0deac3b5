// SPDX-License-Identifier: MIT
/* Which tasks a run traces: processes, cgroup v2 folders, the PID namespace. */
#include <errno.h>
#include <stdio.h>
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
