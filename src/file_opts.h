/* SPDX-License-Identifier: MIT */
/* Options that name a file to write: checked before anything is loaded. */
#ifndef LATHIST_FILE_OPTS_H
#define LATHIST_FILE_OPTS_H

#include <stdbool.h>

/* -o ARG into *output (NULL for "-": standard output), refused when it could not
 * be replaced atomically there: 0, or -EINVAL after the message. */
int lh_output_opt(const char **output, const char *arg, const char *tool);

/* A file lathist streams into as it runs (--events, --series: opt) into *path:
 * given once, and writable later (see lh_output_check); "-" is stdout where
 * dash_ok. 0, or -EINVAL after the message. */
int lh_stream_opt(const char **path, const char *opt, const char *arg, bool dash_ok,
		  const char *tool);

/*
 * Check a file option (see lh_output_check; atomic: written through a
 * temporary name) and, when it cannot be written, say "OPT 'ARG': cannot be
 * written (why); give WHAT in a writable folder".
 * 0 or -EINVAL after the message.
 */
int lh_check_file_opt(const char *opt, const char *arg, const char *what, bool atomic,
		      const char *tool);

/* Do two paths name one file: the same existing inode, or (a file not created
 * yet) the same name in the same folder, the folders compared by inode (a
 * symlink, `..` or a bind mount spells one folder two ways)? */
bool lh_same_file(const char *a, const char *b);

#endif /* LATHIST_FILE_OPTS_H */
