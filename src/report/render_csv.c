// SPDX-License-Identifier: MIT
/* CSV renderer: one row per (histogram, key, slot), RFC 4180 quoting. */
#include <inttypes.h>
#include <string.h>
#include "report.h"

/* A field, quoted when it holds a comma, a quote or a line break (RFC 4180 2.6-2.7). */
static void field(FILE *f, const char *s, bool last)
{
	if (strpbrk(s, ",\"\r\n")) {
		fputc('"', f);
		for (; *s; s++) {
			if (*s == '"')
				fputc('"', f);
			fputc(*s, f);
		}
		fputc('"', f);
	} else {
		fputs(s, f);
	}
	fputs(last ? "\r\n" : ",", f);
}

void lh_render_csv(FILE *f, const struct lh_report *r, bool with_header)
{
	const struct lh_meta *m = &r->meta;
	uint64_t u = m->scheme.unit_ns;

	if (with_header) {
		fputs("tool,interval_index,start_realtime_ns,duration_ns,histogram,", f);
		for (int i = 0; i < LH_MAX_KEY_FIELDS; i++)
			fprintf(f, "%s,", lh_key_field_names[i]);
		fputs("lo_ns,hi_ns,count,hist_count,hist_sum_ns,hist_max_ns,hist_bytes\r\n", f);
	}
	for (size_t h = 0; h < r->nhists; h++) {
		const struct lh_hist *hist = &r->hists[h];
		struct lh_kv kv[LH_MAX_KEY_FIELDS];
		int n = lh_key_fields(&hist->key, kv);

		for (uint32_t s = 0; s < hist->nslots; s++) {
			uint64_t lo = lh_slot_lo(s, m->scheme.precision);
			uint64_t hi = lh_slot_hi(s, m->scheme.precision);
			char buf[32];

			if (!hist->slots[s])
				continue;
			field(f, m->tool, false);
			fprintf(f, "%" PRIu32 ",%" PRIu64 ",%" PRIu64 ",", m->interval_index,
				m->start_realtime_ns, m->duration_ns);
			field(f, hist->name, false);
			for (int i = 0; i < LH_MAX_KEY_FIELDS; i++) {
				const char *v = "";

				for (int j = 0; j < n; j++)
					if (!strcmp(kv[j].name, lh_key_field_names[i]))
						v = kv[j].value;
				field(f, v, false);
			}
			fprintf(f, "%" PRIu64 ",", lo * u);
			if (hi == UINT64_MAX)
				buf[0] = 0;
			else
				snprintf(buf, sizeof(buf), "%" PRIu64, hi * u);
			fprintf(f, "%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",", buf,
				hist->slots[s], hist->count, hist->sum_ns, hist->max_ns);
			if (m->has_bytes)	/* bio: the histogram's bytes; runq: empty */
				fprintf(f, "%" PRIu64, hist->bytes);
			fputs("\r\n", f);
		}
	}
}
