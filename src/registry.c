// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <string.h>
#include "registry.h"

extern const struct lh_tool_desc runq_tool, bio_tool;

/* Adding a tool: its BPF file, its loader file (which defines its descriptor),
 * one line here and one word in the Makefile's TOOLS. */
const struct lh_tool_desc *const lh_tools[] = {
	&runq_tool,
	&bio_tool,
	NULL,
};

const struct lh_tool_desc *lh_tool_find(const char *name)
{
	for (int i = 0; lh_tools[i]; i++)
		if (!strcmp(lh_tools[i]->name, name))
			return lh_tools[i];
	return NULL;
}

const char *lh_tool_max_keys_with(const struct lh_tool_desc *t, char *buf, size_t len)
{
	const char *const *w = t->max_keys_with;
	size_t n = 0;

	buf[0] = 0;
	for (size_t j = 0; w && w[j] && n < len; j++)
		n += (size_t)snprintf(buf + n, len - n, "%s--%s", !j ? "" : w[j + 1] ? ", " : " or ",
				      w[j]);
	return buf;
}

unsigned int lh_tool_grouping_fields(const struct lh_tool_desc *t, const char *g)
{
	unsigned int fields = 0;

	for (size_t i = 0; t->groupings[i]; i++) {
		size_t n = strlen(t->groupings[i]);

		for (const char *p = g; (p = strstr(p, t->groupings[i])); p += n)
			if ((p == g || p[-1] == ',') && (!p[n] || p[n] == ','))
				fields |= t->grouping_fields[i];
	}
	return fields;
}

bool lh_tool_paired_hist(const struct lh_tool_desc *t, const char *name)
{
	for (size_t i = 0; t->paired_hists[i]; i++)
		if (!strcmp(t->paired_hists[i], name))
			return true;
	return false;
}

bool lh_tool_grouping_known(const struct lh_tool_desc *t, const char *g)
{
	size_t next = 0, n;

	if (!strcmp(g, "total"))
		return true;
	if (!t->groupings_combine) {
		for (size_t i = 0; t->groupings[i]; i++)
			if (!strcmp(g, t->groupings[i]))
				return true;
		return false;
	}
	while (*g) {
		n = strcspn(g, ",");
		while (t->groupings[next] && (strlen(t->groupings[next]) != n ||
					     strncmp(g, t->groupings[next], n)))
			next++;
		if (!t->groupings[next])
			return false;
		next++;
		g += n;
		if (*g == ',' && *++g == 0)
			return false;	/* a trailing comma */
	}
	return true;
}
