// SPDX-License-Identifier: MIT
/*
 * The merge's input: a file, standard input or a buffer, read in chunks and
 * tokenized into documents (one, or JSON lines), each given to merge_add_doc.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "merge.h"

#define MAX_DOC_BYTES (512ULL << 20)	/* refuse a larger document */
#define READ_CHUNK (1U << 20)		/* bytes read at a time */

/*
 * An integer literal past 2^64-1 in one document's text (len bytes), outside
 * strings: json-c reads it as 2^64-1, so it is looked for here, to be refused
 * with the value as written. Returns its offset, or len when there is none;
 * *key is the last string before it (its field name), *klen its length.
 */
static size_t big_number(const char *t, size_t len, const char **key, size_t *klen)
{
	static const char max[] = "18446744073709551615";
	size_t str = 0;

	*key = "";
	*klen = 0;
	for (size_t i = 0; i < len; i++) {
		size_t j = i;

		if (t[i] == '"') {	/* a string: skip it, escapes and all */
			for (j = i + 1; j < len && t[j] != '"'; j++)
				if (t[j] == '\\')
					j++;
			str = i + 1;
			*key = t + str;
			*klen = j < len ? j - str : 0;
			i = j;
			continue;
		}
		if (t[i] < '0' || t[i] > '9')
			continue;
		while (j < len && t[j] >= '0' && t[j] <= '9')
			j++;
		if ((i == 0 || t[i - 1] != '-') &&
		    !(j < len && (t[j] == '.' || t[j] == 'e' || t[j] == 'E')) &&
		    (j - i > sizeof(max) - 1 ||
		     (j - i == sizeof(max) - 1 && memcmp(t + i, max, j - i) > 0)))
			return i;
		i = j - 1;
	}
	return len;
}

/*
 * An input read a chunk at a time: buf holds its bytes from offset base on,
 * from the document being parsed to what was read last, so memory follows
 * the largest document, not the input (a day of -i 1 is one file).
 */
struct input {
	FILE *f;		/* NULL: buf is the whole input, not owned */
	char *buf;
	size_t len, cap;
	uint64_t base;		/* input offset of buf[0] */
	bool eof;
};

/*
 * Keep buf[keep..len) (moved to the front) and read the next chunk after it.
 * 0, or an error said: -EIO (read error), -EFBIG (a document past
 * MAX_DOC_BYTES), -ENOMEM; a NUL byte is refused here, where each byte is
 * first seen.
 */
static int fill(struct merge *m, struct input *in, size_t keep)
{
	const char *nul;
	size_t got;

	memmove(in->buf, in->buf + keep, in->len - keep);
	in->len -= keep;
	in->base += keep;
	if (in->len > MAX_DOC_BYTES) {
		m->cur.line++;	/* the one being parsed */
		return bad(m, "a document is larger than 512 MiB");
	}
	if (in->cap - in->len < READ_CHUNK) {
		size_t cap = in->len + READ_CHUNK;
		char *nb = realloc(in->buf, cap);

		if (!nb)
			return -ENOMEM;
		in->buf = nb;
		in->cap = cap;
	}
	got = fread(in->buf + in->len, 1, in->cap - in->len, in->f);
	if (!got && ferror(in->f)) {
		fprintf(stderr, "lathist report: cannot read %s: %s\n", m->cur.path, strerror(errno));
		return -EIO;
	}
	in->eof = !got;
	nul = memchr(in->buf + in->len, 0, got);
	if (nul) {
		m->cur.line = 0;	/* named by its byte: it may lie between documents */
		return bad(m, "holds a NUL byte at byte %" PRIu64,
			   in->base + (uint64_t)(nul - in->buf));
	}
	in->len += got;
	return 0;
}

/* One parsed document, or the error said: its bytes are in->buf[*off..*end). */
static int parse_doc(struct merge *m, json_tokener *tok, struct input *in, size_t *off,
		     size_t *end, json_object **doc)
{
	size_t fed = *off, pe;
	int err;

	json_tokener_reset(tok);
	for (;;) {
		size_t n = in->len - fed;
		enum json_tokener_error je;

		*doc = json_tokener_parse_ex(tok, in->buf + fed, (int)(n > INT32_MAX ? INT32_MAX : n));
		je = json_tokener_get_error(tok);
		pe = json_tokener_get_parse_end(tok);
		if (!*doc && je == json_tokener_continue && (!in->f || in->eof)) {
			/* a number or literal at the very end (42, null) ends only at what
			 * follows it: a space tells the tokener so; input cut inside one
			 * ({"a": tru) stays an unexpected end */
			*doc = json_tokener_parse_ex(tok, " ", 1);
			if (*doc || json_tokener_get_error(tok) == json_tokener_success) {
				je = json_tokener_success;
				pe = n;
			}
		}
		if (*doc || je != json_tokener_continue || !in->f || in->eof) {
			if (*doc) {
				*end = fed + pe;
				return 0;
			}
			m->cur.line++;
			if (je == json_tokener_success)	/* "null": JSON, but nothing */
				return bad(m, "a document is not a JSON object (null)");
			return bad(m, "not JSON at byte %" PRIu64 " (json-c: %s)", in->base + fed + pe,
				   je == json_tokener_continue ? "unexpected end" :
				   json_tokener_error_desc(je));
		}
		/* the tokener took all of it: read on, keeping the document's bytes */
		fed = in->len - *off;
		err = fill(m, in, *off);
		*off = 0;
		if (err)
			return err;
	}
}

/* Every JSON document of in (one, or JSON lines), in order. */
static int read_input(struct merge *m, struct input *in)
{
	json_tokener *tok = json_tokener_new();
	size_t off = 0, end = 0, big, klen;
	const char *key;
	int err = 0;

	if (!tok)
		return -ENOMEM;
	if (!in->f && (key = memchr(in->buf, 0, in->len)))
		err = bad(m, "holds a NUL byte at byte %zu", (size_t)(key - in->buf));
	while (!err) {
		json_object *doc;

		while (off < in->len && (in->buf[off] == ' ' || in->buf[off] == '\n' ||
					 in->buf[off] == '\r' || in->buf[off] == '\t'))
			off++;
		if (off >= in->len) {
			if (!in->f || in->eof)
				break;
			err = fill(m, in, off);
			off = 0;
			continue;
		}
		err = parse_doc(m, tok, in, &off, &end, &doc);
		if (err)
			break;
		big = big_number(in->buf + off, end - off, &key, &klen);
		if (!json_object_is_type(doc, json_type_object)) {
			m->cur.line++;
			err = bad(m, "a document is not a JSON object");
		} else if (big < end - off) {
			const char *v = in->buf + off + big;
			size_t n = strspn(v, "0123456789");

			m->cur.line++;
			err = bad(m, "\"%.*s\": %.*s%s is past 2^64-1, more than lathist ever counts",
				  (int)(klen > 40 ? 40 : klen), key, (int)(n > 40 ? 40 : n), v,
				  n > 40 ? "..." : "");
		} else {
			err = merge_add_doc(m, doc);
		}
		off = end;
		json_object_put(doc);
	}
	json_tokener_free(tok);
	if (!err && !m->cur.line) {
		m->cur.line = 1;
		err = bad(m, "holds no document");
	}
	return err;
}

/* Every JSON document in buf (len bytes: one document, or JSON lines). */
int merge_read_buffer(struct merge *m, const char *buf, size_t len)
{
	struct input in = { .buf = (char *)buf, .len = len, .eof = true };

	return read_input(m, &in);
}

int merge_read_file(struct merge *m, const char *path)
{
	struct input in = { 0 };
	int err;

	m->cur.path = strcmp(path, "-") ? path : "standard input";
	m->cur.line = 0;
	in.f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	if (!in.f) {
		fprintf(stderr, "lathist report: cannot read %s: %s\n", m->cur.path, strerror(errno));
		return -EIO;
	}
	err = read_input(m, &in);
	if (in.f != stdin)
		fclose(in.f);
	free(in.buf);
	return err;
}

