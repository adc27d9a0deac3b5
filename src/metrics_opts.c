// SPDX-License-Identifier: MIT
/* The metric outputs' options: --buckets and --label, and what they make of a
 * report's meta for OpenMetrics and Prometheus (lh_om_for). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "util.h"

/*
 * --buckets MIN..MAX (durations; the slot bounds from MIN up to the first at or
 * over MAX) or B1,B2,... (each a slot bound, checked against the slot scheme by
 * lh_common_finish). 0, or -EINVAL after the message.
 */
int lh_opt_buckets(struct lh_common_opts *o, const char *arg, const char *tool)
{
	const char *dots = strstr(arg, "..");
	char *copy, *save = NULL, *w;
	int err = 0;

	if (o->buckets_set) {
		lh_usage_error(tool, "--buckets given twice; give one range or list");
		return -EINVAL;
	}
	o->buckets_set = true;
	if (dots) {
		char min[64];
		size_t n = (size_t)(dots - arg);

		/* a MIN too long for min is no duration: not cut to one */
		snprintf(min, sizeof(min), "%.*s", (int)(n < sizeof(min) ? n : sizeof(min) - 1), arg);
		if (n >= sizeof(min) || lh_parse_duration(min, true, &o->le_min_ns) ||
		    lh_parse_duration(dots + 2, false, &o->le_max_ns) || o->le_max_ns < o->le_min_ns) {
			lh_usage_error(tool, "--buckets '%s': not a range; give MIN..MAX durations, "
				       "e.g. 1us..1m, or slot bounds, e.g. 256us,1024us", arg);
			return -EINVAL;
		}
		return 0;
	}
	if (!(copy = strdup(arg)))
		return -ENOMEM;
	/* "1ms,,4ms" and ",1ms" are no list of bounds ("" is refused below) */
	if (*arg && lh_list_has_empty(arg))
		err = -EINVAL;
	for (w = strtok_r(copy, ",", &save); w && !err; w = strtok_r(NULL, ",", &save)) {
		uint64_t b;

		if (lh_parse_duration(w, false, &b) || o->nle == LH_MAX_LE ||
		    (o->nle && b <= o->le_ns[o->nle - 1]))
			err = -EINVAL;
		else
			o->le_ns[o->nle++] = b;
	}
	free(copy);
	if (err || !o->nle) {
		lh_usage_error(tool, "--buckets '%s': not a list of bounds; give up to %d "
			       "ascending slot bounds, e.g. 256us,1024us, or a range MIN..MAX",
			       arg, LH_MAX_LE);
		return -EINVAL;
	}
	return 0;
}

/* Label names lathist's own series use (and le): --label cannot take them. */
static bool reserved_label(const char *name)
{
	static const char *const names[] = {
		"le", "quantile", "class", "kind", "stage", "lathist_run", "version", "kernel",
		"clock", "grouping", "unit", "precision",
		"instance", "job",	/* Prometheus's target labels: a scrape replaces them */
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return true;
	for (int i = 0; i < LH_MAX_KEY_FIELDS; i++)
		if (!strcmp(name, lh_key_field_names[i]))
			return true;
	return !strncmp(name, "attach_", 7) || !strncmp(name, "filter_", 7) ||
	       !strncmp(name, "__", 2);
}

/* --label KEY=VALUE: KEY a Prometheus label name lathist does not use. */
int lh_opt_label(struct lh_common_opts *o, const char *arg, const char *tool)
{
	const char *eq = strchr(arg, '=');
	size_t n = eq ? (size_t)(eq - arg) : 0;
	char name[64];
	long bad;

	if (o->nlabels == LH_MAX_LABELS - 1) {
		lh_usage_error(tool, "--label: at most %d labels; give fewer", LH_MAX_LABELS - 1);
		return -EINVAL;
	}
	if (!eq || !n || n >= sizeof(name) || strlen(eq + 1) >= sizeof(o->labels[0].value) ||
	    strspn(arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != n ||
	    (arg[0] >= '0' && arg[0] <= '9')) {
		lh_usage_error(tool, "--label '%s': give NAME=VALUE, NAME of letters, digits and _ "
			       "(not first a digit, at most 63), VALUE at most 255 bytes", arg);
		return -EINVAL;
	}
	snprintf(name, sizeof(name), "%.*s", (int)n, arg);
	if (!eq[1]) {	/* Prometheus: a label with an empty value is no label */
		lh_usage_error(tool, "--label %s=: an empty value, which Prometheus takes as no "
			       "label; give a value, or leave --label %s out", name, name);
		return -EINVAL;
	}
	if ((bad = lh_bad_text_byte(eq + 1)) >= 0) {	/* the value is not echoed: it may hold a newline */
		lh_usage_error(tool, "--label %s: its value has byte 0x%02x at %ld, which is not "
			       "printable UTF-8; give printable text", name,
			       (unsigned char)eq[1 + bad], bad);
		return -EINVAL;
	}
	if (reserved_label(name)) {
		lh_usage_error(tool, "--label '%s': %s %s; give another name", arg, name,
			       !strncmp(name, "__", 2) ? "begins with __, which Prometheus keeps for "
			       "its own labels" : !strcmp(name, "instance") || !strcmp(name, "job") ?
			       "is a target label, which Prometheus sets on every series it scrapes" :
			       "is a label lathist sets itself");
		return -EINVAL;
	}
	for (int i = 0; i < o->nlabels; i++)
		if (!strcmp(o->labels[i].name, name)) {
			lh_usage_error(tool, "--label '%s': label %s given twice; give each label once",
				       arg, name);
			return -EINVAL;
		}
	snprintf(o->labels[o->nlabels].name, sizeof(o->labels[0].name), "%s", name);
	snprintf(o->labels[o->nlabels].value, sizeof(o->labels[0].value), "%s", eq + 1);
	o->nlabels++;
	return 0;
}

void lh_om_for(const struct lh_common_opts *c, const struct lh_meta *m, bool strict,
	       struct lh_om_opts *o, struct lh_label labels[LH_MAX_LABELS])
{
	struct lh_label *run = &labels[c->nlabels];
	size_t n;

	memset(o, 0, sizeof(*o));
	o->strict = strict;
	o->le_min_ns = c->le_min_ns;
	o->le_max_ns = c->le_max_ns;
	o->le_ns = c->le_ns;
	o->nle = c->nle;
	memcpy(labels, c->labels, (size_t)c->nlabels * sizeof(*labels));
	/* tells this run's series from another's in one textfile folder */
	snprintf(run->name, sizeof(run->name), "lathist_run");
	n = (size_t)snprintf(run->value, sizeof(run->value), "%s", m->grouping ? m->grouping : "");
	for (int i = 0; i < m->nfilters && n < sizeof(run->value); i++)
		n += (size_t)snprintf(run->value + n, sizeof(run->value) - n, ",%s=%s",
				      m->filters[i].name, m->filters[i].value);
	o->labels = labels;
	o->nlabels = c->nlabels + 1;
}

int lh_buckets_usable(const struct lh_common_opts *c, const struct lh_scheme *s,
		      const char *tool)
{
	struct lh_om_opts o = { .le_ns = c->le_ns, .nle = c->nle };
	uint64_t bad, below, above;
	char b[3][32];

	if (!lh_buckets_check(&o, s, &bad, &below, &above))
		return 0;
	lh_usage_error(tool, "--buckets: %s is not a bound of the histogram slots (the bounds "
		       "around it: %s and %s); give slot bounds (-u and --precision set them), or "
		       "a range MIN..MAX", lh_duration_str(bad, b[0], sizeof(b[0])),
		       below ? lh_duration_str(below, b[1], sizeof(b[1])) : "none",
		       above ? lh_duration_str(above, b[2], sizeof(b[2])) : "none");
	return -EINVAL;
}
