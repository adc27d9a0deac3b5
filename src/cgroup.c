// SPDX-License-Identifier: MIT
/*
 * cgroup v2 ids to paths, for --per-cgroup keys. BPF gives a cgroup's kernfs
 * node id (lh_task_cgroup_id, bpf_get_current_cgroup_id); on 64-bit kernels
 * it is the inode number of the cgroup's folder, and name_to_handle_at(2) on
 * a cgroup2 file system hands out that id as an 8-byte FILEID_KERNFS handle.
 * So open_by_handle_at(2) opens the folder from the id (CAP_DAC_READ_SEARCH),
 * and its /proc/self/fd link names it. Without that capability the cgroup2
 * tree is walked once per unknown id (a folder's st_ino is its id). A cgroup
 * gone by then is named from what the start scan (lh_cgroup_scan) saw, or
 * from the path BPF kept when it was made (lathist_cgroup_paths).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include "cgroup.h"
#include "util.h"
#include "cgroup_path.h"
#include "cli.h"
#include "report.h"
#include "target.h"

#define FILEID_KERNFS 0xfe	/* include/linux/exportfs.h */

static char mnt[PATH_MAX];
static int mnt_fd = -1;
/* mnt, mnt_fd and the walk's context, for lathist serve's tools at once */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* The cgroup2 mount, opened once; -errno when there is none. */
static int cgroup2_fd(void)
{
	if (mnt_fd >= 0)
		return mnt_fd;
	if (lh_cgroup2_mount(mnt, sizeof(mnt)))
		return -ENOENT;
	mnt_fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return mnt_fd >= 0 ? mnt_fd : -errno;
}

/* path relative to the mount ("/" for the root) of an absolute one in it */
static void relative(const char *abs, char *out, size_t len)
{
	size_t n = strlen(mnt);

	if (lh_path_under(abs, mnt))
		abs += n + (abs[n] == '/');
	snprintf(out, len, "%s", abs[0] ? abs : "/");
}

static int by_handle(uint64_t id, char *out, size_t len)
{
	struct {
		struct file_handle fh;
		uint64_t id;
	} h = { .fh = { .handle_bytes = sizeof(uint64_t), .handle_type = FILEID_KERNFS },
		.id = id };
	char link[64], abs[PATH_MAX];
	ssize_t n;
	int fd;

	fd = open_by_handle_at(mnt_fd, &h.fh, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, abs, sizeof(abs) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	abs[n] = 0;
	relative(abs, out, len);
	return 0;
}

/* The walk's target and result (nftw passes no context). */
static uint64_t walk_id;
static char *walk_out;
static size_t walk_len;

static int walk_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)ftw;
	if (type != FTW_D || (uint64_t)st->st_ino != walk_id)
		return 0;
	relative(path, walk_out, walk_len);
	return 1;
}

static int by_walk(uint64_t id, char *out, size_t len)
{
	walk_id = id;
	walk_out = out;
	walk_len = len;
	return nftw(mnt, walk_one, 16, FTW_PHYS | FTW_MOUNT) == 1 ? 0 : -ENOENT;
}

/* One folder of the start scan: interned. */
static int scan_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	char rel[PATH_MAX];

	(void)ftw;
	if (type == FTW_D) {
		relative(path, rel, sizeof(rel));
		lh_cgroup_intern((uint64_t)st->st_ino, rel);
	}
	return 0;
}

int lh_cgroup_scan(void)
{
	int err;

	pthread_mutex_lock(&lock);
	err = cgroup2_fd();
	if (err >= 0)
		err = nftw(mnt, scan_one, 16, FTW_PHYS | FTW_MOUNT) ? -errno : 0;
	pthread_mutex_unlock(&lock);
	return err;
}

/* The path BPF kept when the cgroup was made ("/a/b": within the hierarchy). */
static int by_map(uint64_t id, int paths_fd, char *out, size_t len)
{
	struct lh_cgroup_path v;

	if (paths_fd < 0 || bpf_map_lookup_elem(paths_fd, &id, &v))
		return -ENOENT;
	v.path[sizeof(v.path) - 1] = 0;
	snprintf(out, len, "%s", v.path[0] == '/' && v.path[1] ? v.path + 1 : v.path);
	return 0;
}

static const char *name_locked(uint64_t id, int paths_fd);

const char *lh_cgroup_name(uint64_t id, int paths_fd)
{
	const char *known = lh_cgroup_lookup(id), *p;

	if (known)	/* resolved once: ids are not reused */
		return known;
	pthread_mutex_lock(&lock);
	p = name_locked(id, paths_fd);
	pthread_mutex_unlock(&lock);
	return p;
}

bool lh_cgroup_alive(uint64_t id)
{
	char path[PATH_MAX];
	int err;

	pthread_mutex_lock(&lock);
	err = cgroup2_fd();
	if (err >= 0) {
		err = by_handle(id, path, sizeof(path));
		if (err && err != -ESTALE && err != -ENOENT)
			err = by_walk(id, path, sizeof(path));
	}
	pthread_mutex_unlock(&lock);
	return !err;
}

static const char *name_locked(uint64_t id, int paths_fd)
{
	char path[PATH_MAX] = "";
	int err;

	err = cgroup2_fd();
	if (err >= 0) {
		err = by_handle(id, path, sizeof(path));
		if (err && err != -ESTALE && err != -ENOENT)	/* no capability: walk */
			err = by_walk(id, path, sizeof(path));
	}
	if (err)	/* removed since: made while tracing? */
		err = by_map(id, paths_fd, path, sizeof(path));
	if (err)	/* removed before lathist read it, or no cgroup2 mount */
		snprintf(path, sizeof(path), "(gone)");
	return lh_cgroup_intern(id, path);
}
