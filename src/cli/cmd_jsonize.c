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

static void usage(FILE *fp) {
  fprintf(fp,
          "usage: etsim jsonize [-o PATH] [--skip-unknown] FILE\n"
          "\n"
          "Write the Chakra trace FILE (.et, plain or gzip) as JSON: the\n"
          "GlobalMetadata object, then one object per node, one per line\n"
          "(protobuf JSON mapping, as chakra_jsonizer writes it: camelCase\n"
          "keys, 64-bit integers as strings, bytes as base64).\n"
          "'etsim convert --from json' turns it back into the same .et bytes.\n"
          "\n"
          "options:\n"
          "  -o, --output PATH  where to write (default '-', stdout)\n"
          "  --skip-unknown     skip protobuf fields the schema does not know\n"
          "  -h, --help         show this help\n");
}

int etsim_cmd_jsonize(int argc, char **argv) {
  const char *out = "-", *in = NULL;
  unsigned flags = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    int m;
    if (cli_is_help(a)) {
      usage(stdout);
      return ETSIM_EXIT_OK;
    }
    if ((m = cli_opt(argc, argv, &i, "--output", &v)) || (m = cli_opt(argc, argv, &i, "-o", &v))) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      out = v;
    } else if (strcmp(a, "--skip-unknown") == 0) {
      flags |= ETSIM_ET_READ_SKIP_UNKNOWN;
    } else if (a[0] == '-' && a[1]) {
      return cli_usage_error(
          "jsonize: unknown option '%s' (see 'etsim "
          "jsonize --help')",
          a);
    } else if (in) {
      return cli_usage_error("jsonize: one input file only ('%s' and '%s')", in, a);
    } else {
      in = a;
    }
  }
  if (!in) {
    usage(stderr);
    return ETSIM_EXIT_USAGE;
  }
  etsim_error_t err = {0};
  if (etsim_etjson_jsonize(in, out, flags, NULL, &err)) return cli_fail(&err);
  return ETSIM_EXIT_OK;
}
