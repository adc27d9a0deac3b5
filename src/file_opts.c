// SPDX-License-Identifier: MIT
/* Options that name a file to write (-o, --events, --series, --heatmap): checked
 * before anything is loaded, each refusal one line naming the fix. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libgen.h>
#include <limits.h>
#include <sys/stat.h>
#include "cli.h"
#include "file_opts.h"
#include "util.h"

/* An output path lh_output_check found too long (-ENAMETOOLONG): the path, its
 * name, or a folder's name in it. The path comes last: a message is cut at
 * 1 KiB, and the reason must not be what is cut. */
static void name_too_long(const char *tool, const char *opt, const char *arg, bool atomic)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(arg, '/');
	size_t extra = atomic ? lh_tmp_name_extra() + 2 : 0;

	if (strlen(arg) + extra >= PATH_MAX) {
		if (atomic)
			lh_usage_error(tool, "%s: the path is %zu bytes (%zu with its temporary "
				       "name), over the %d of PATH_MAX; give a shorter one", opt,
				       strlen(arg), strlen(arg) + extra, PATH_MAX - 1);
		else
			lh_usage_error(tool, "%s: the path is %zu bytes, over the %d of PATH_MAX; "
				       "give a shorter one", opt, strlen(arg), PATH_MAX - 1);
		return;
	}
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - arg) + 1 : 1,
		 slash ? arg : ".");
	if (lh_output_name_len(arg) > lh_output_name_max(dir, atomic))
		lh_usage_error(tool, "%s: its file name is %zu bytes, over the %zu its folder "
			       "takes%s; give a shorter one than '%s'", opt, lh_output_name_len(arg),
			       lh_output_name_max(dir, atomic), atomic ? " (it is written under a "
			       "longer temporary name first)" : "", arg);
	else
		lh_usage_error(tool, "%s: a folder in '%s' has a name longer than its file system "
			       "takes; give another path", opt, arg);
}

/* An output path ending in '/' (lh_output_check's -EISDIR for it): a folder's name. */
static void ends_in_slash(const char *tool, const char *opt, const char *arg)
{
	lh_usage_error(tool, "%s '%s': ends in '/', which names a folder; give a file name", opt,
		       arg);
}

/* Why output arg of option opt cannot be written (err: lh_output_check's), in
 * one line: "OPT 'ARG': cannot be written (why); give WHAT in a writable folder"
 * or the reason's own words. */
static void say_file_error(const char *tool, const char *opt, const char *arg, int err,
			   const char *what, bool atomic)
{
	if (err == -EMLINK)
		lh_usage_error(tool, "%s '%s': has other hard links, whose content would change "
			       "too; give a file with one name", opt, arg);
	else if (err == -ENAMETOOLONG)
		name_too_long(tool, opt, arg, atomic);
	else if (err == -EISDIR && arg[strlen(arg) - 1] == '/')
		ends_in_slash(tool, opt, arg);
	else if (err == -EPERM)
		lh_usage_error(tool, "%s '%s': is immutable or append-only (chattr +i or +a): it "
			       "cannot be written; give another file, or clear the flag (chattr -i, "
			       "-a)", opt, arg);
	else
		lh_usage_error(tool, "%s '%s': cannot be written (%s); give %s in a writable "
			       "folder", opt, arg, err == -ELOOP ? "a symbolic link" :
			       err == -EINVAL ? "not a regular file" : strerror(-err), what);
}

int lh_output_opt(const char **output, const char *arg, const char *tool)
{
	int err;

	if (!strcmp(arg, "-")) {	/* the usual name for standard output */
		*output = NULL;
		return 0;
	}
	if (!arg[0]) {
		lh_usage_error(tool, "-o '': empty; give a file path, or - for standard output");
		return -EINVAL;
	}
	err = lh_output_check(arg, true);
	if (!err) {
		*output = arg;
		return 0;
	}
	if (err == -ELOOP)
		lh_usage_error(tool, "-o '%s': is a symbolic link; lathist never writes through "
			       "one, give the real path", arg);
	else if (err == -EINVAL)
		lh_usage_error(tool, "-o '%s': is not a regular file (a device, FIFO or socket); "
			       "give a file path, or - for standard output", arg);
	else if (err == -EROFS)
		lh_usage_error(tool, "-o '%s': its folder takes no new file (read-only, or /proc or "
			       "/sys); give a file in a writable folder", arg);
	else
		say_file_error(tool, "-o", arg, err, "a file", true);
	return -EINVAL;
}

int lh_stream_opt(const char **path, const char *opt, const char *arg, bool dash_ok,
		       const char *tool)
{
	if (*path) {
		lh_usage_error(tool, "%s given twice; give one file", opt);
		return -EINVAL;
	}
	if (!arg[0]) {	/* as -o '' says it */
		lh_usage_error(tool, "%s '': empty; give a file path%s", opt,
			       dash_ok ? ", or - for standard output" : "");
		return -EINVAL;
	}
	if (!(dash_ok && !strcmp(arg, "-")) &&
	    lh_check_file_opt(opt, arg, "a regular file", false, tool))
		return -EINVAL;
	*path = arg;
	return 0;
}

int lh_check_file_opt(const char *opt, const char *arg, const char *what, bool atomic,
		      const char *tool)
{
	int err = lh_output_check(arg, atomic);

	if (!err)
		return 0;
	say_file_error(tool, opt, arg, err, what, atomic);
	return -EINVAL;
}

bool lh_same_file(const char *a, const char *b)
{
	char *ca = strdup(a), *cb = strdup(b), *da = NULL, *db = NULL;
	struct stat x, y;
	bool same;

	if (!stat(a, &x) && !stat(b, &y))
		same = x.st_dev == y.st_dev && x.st_ino == y.st_ino;
	else if (!ca || !cb || !(da = strdup(a)) || !(db = strdup(b)))
		same = !strcmp(a, b);
	else	/* the folders by inode, as a bind mount shows one under two paths */
		same = !stat(dirname(da), &x) && !stat(dirname(db), &y) &&
		       x.st_dev == y.st_dev && x.st_ino == y.st_ino &&
		       !strcmp(basename(ca), basename(cb));
	free(ca);
	free(cb);
	free(da);
	free(db);
	return same;
}
