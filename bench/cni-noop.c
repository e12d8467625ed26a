/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cni-noop: a CNI plugin that does nothing -- reads its config, answers an
 * empty result (or its prevResult) -- linked statically like nshash's.
 * bench/cni-add puts it first in a chain to show what one more plugin exec
 * costs by itself. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
	char buf[65536];
	size_t used = 0;
	ssize_t n;
	while (used < sizeof(buf) - 1 && (n = read(STDIN_FILENO, buf + used, sizeof(buf) - 1 - used)) > 0)
		used += (size_t)n;
	buf[used] = '\0';
	json_object *conf = json_tokener_parse(buf), *prev;
	if (conf && json_object_object_get_ex(conf, "prevResult", &prev))
		puts(json_object_to_json_string_ext(prev, JSON_C_TO_STRING_PLAIN));
	else
		puts("{\"cniVersion\":\"1.0.0\",\"interfaces\":[],\"ips\":[]}");
	return 0;
}
