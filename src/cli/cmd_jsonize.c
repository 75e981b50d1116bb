/*
 * cmd_jsonize.c — `etsim jsonize`: write a trace as JSON (work in progress:
 * this first version only answers --help so the binary links).
 */
#include "cli/cli.h"

#include <stdio.h>

int etsim_cmd_jsonize(int argc, char **argv) {
  if (argc >= 2 && cli_is_help(argv[1])) {
    printf("usage: etsim jsonize [-o PATH] FILE\n");
    return ETSIM_EXIT_OK;
  }
  return cli_usage_error("jsonize: not available yet");
}
