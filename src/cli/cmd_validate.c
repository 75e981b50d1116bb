/*
 * cmd_validate.c — `etsim validate FILE|PREFIX`: report problems in a trace
 * or rank set.  Exit 0 clean, 1 problems found, 2 unreadable input.
 * NOTE lines (e.g. a well-known attribute in a non-canonical integer kind,
 * which readers accept) are printed but do not change the exit status.
 */
#include "cli/cli.h"
#include "etsim/etcheck.h"

#include <stdio.h>

static void usage(FILE *fp) {
  fprintf(fp, "usage: etsim validate FILE|PREFIX\n\n"
              "Check a trace or rank set: duplicate ids, dependencies on absent\n"
              "ids, cycles, empty messages, well-known attributes of the wrong\n"
              "kind, communication nodes without comm_type/comm_size; across\n"
              "ranks: collective order per communicator, send/recv matching.\n"
              "Exit 0 clean, 1 problems found, 2 unreadable input.\n");
}

static void print_finding(void *user, int sev, const char *line) {
  (void)user;
  printf("%s: %s\n", sev == ETSIM_CHECK_PROBLEM ? "problem" : "note", line);
}

int etsim_cmd_validate(int argc, char **argv) {
  const char *in = NULL;
  for (int i = 1; i < argc; i++) {
    if (cli_is_help(argv[i])) {
      usage(stdout);
      return ETSIM_EXIT_OK;
    }
    if (argv[i][0] == '-' && argv[i][1])
      return cli_usage_error("validate: unknown option '%s'", argv[i]);
    if (in)
      return cli_usage_error("validate: one input only");
    in = argv[i];
  }
  if (!in) {
    usage(stderr);
    return ETSIM_EXIT_USAGE;
  }
  etsim_error_t err = {0};
  etsim_et_set_t *s = NULL;
  if (etsim_et_set_load(&s, in, 0, &err))
    return cli_fail(&err);
  long n = etsim_et_validate_set(s, print_finding, NULL);
  etsim_et_set_free(s);
  if (n < 0)
    return ETSIM_EXIT_INTERNAL;
  printf("%s: %ld problem%s\n", in, n, n == 1 ? "" : "s");
  return n ? ETSIM_EXIT_PROBLEMS : ETSIM_EXIT_OK;
}
