/*
 * cmd_jsonize.c — `etsim jsonize`: write a Chakra trace in its JSON form
 * (the protobuf JSON mapping Chakra's chakra_jsonizer produces), one object
 * per line: the GlobalMetadata, then each node.  `etsim convert --from json`
 * reads it back to the identical `.et`.
 */
#include "cli/cli.h"
#include "etsim/etjson.h"

#include <stdio.h>
#include <string.h>

int etsim_cmd_jsonize(int argc, char **argv) {
  const char *out = "-", *in = NULL;
  int skip = 0;
  const cli_opt_t opts[] = {
      CLI_O_STR("--output", "-o", &out, "PATH", "where to write (default '-', stdout)"),
      CLI_O_FLAG("--skip-unknown", NULL, &skip, "skip protobuf fields the schema does not know"),
      CLI_O_END};
  const cli_cmd_t cmd = {"jsonize",
                         "[-o PATH] [--skip-unknown] FILE",
                         "Write the Chakra trace FILE (.et, plain or gzip) as JSON: the\n"
                         "GlobalMetadata object, then one object per node, one per line\n"
                         "(protobuf JSON mapping, as chakra_jsonizer writes it: camelCase\n"
                         "keys, 64-bit integers as strings, bytes as base64).\n"
                         "'etsim convert --from json' turns it back into the same .et bytes.",
                         opts,
                         1,
                         1,
                         "FILE",
                         NULL};
  int code = cli_parse(&cmd, argc, argv, &in, NULL);
  if (code >= 0) return code;
  etsim_error_t err = {0};
  if (etsim_etjson_jsonize(in, out, skip ? ETSIM_ET_READ_SKIP_UNKNOWN : 0, NULL, &err))
    return cli_fail(&err);
  return ETSIM_EXIT_OK;
}
