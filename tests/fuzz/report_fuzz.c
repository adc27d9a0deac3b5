// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for lathist report's reader: any bytes are parsed as saved
 * lathist JSON (documents or JSON lines), merged, and rendered in every
 * format. Bad input must give an error, never a crash, a leak or a hang.
 * Seeds: tests/fuzz/seeds. Run: make fuzz (tests run it for a bounded time).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "verbs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1);

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = 0;
	lh_report_parse_buffer(buf, size);
	free(buf);
	return 0;
}
