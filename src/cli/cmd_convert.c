/*
 * cmd_convert.c — `etsim convert`: other formats to Chakra ET (work in
 * progress: this first version only answers --help so the binary links).
 */
#include "cli/cli.h"

#include <stdio.h>

int etsim_cmd_convert(int argc, char **argv) {
  if (argc >= 2 && cli_is_help(argv[1])) {
    printf("usage: etsim convert --from FORMAT -o PATH INPUT\n");
    return ETSIM_EXIT_OK;
  }
  return cli_usage_error("convert: not available yet");
}
