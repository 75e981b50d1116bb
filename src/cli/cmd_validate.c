/*
 * cmd_validate.c — `etsim validate FILE|PREFIX`.
 */
#include "cli/cli.h"

#include "etsim/etcheck.h"

#include <string.h>

static const char *usage =
    "usage: etsim validate [--quiet] FILE|PREFIX\n"
    "\n"
    "Check a trace or rank set: duplicate ids, dependencies on absent ids\n"
    "(data and control apart, with examples), cycles (one printed), empty\n"
    "messages, well-known attributes of the wrong kind, communication nodes\n"
    "without comm_type/comm_size; across ranks, collectives in the same order,\n"
    "type and size on every rank, and every send matched by a receive.\n"
    "Notes (readable but non-canonical attribute kinds) do not count.\n"
    "exit: 0 clean, 1 problems found, 2 unreadable input\n";

static void print_finding(void *user, int severity, const char *line) {
  (void)user;
  printf("%s: %s\n", severity == ETSIM_CHECK_PROBLEM ? "problem" : "note", line);
}

int etsim_cmd_validate(int argc, char **argv) {
  const char *input = NULL;
  int quiet = 0;
  for (int i = 1; i < argc; i++) {
    if (cli_is_help(argv[i])) {
      fputs(usage, stdout);
      return ETSIM_EXIT_OK;
    } else if (strcmp(argv[i], "--quiet") == 0 || strcmp(argv[i], "-q") == 0)
      quiet = 1;
    else if (argv[i][0] == '-' && argv[i][1])
      return cli_usage_error("validate: unknown option %s", argv[i]);
    else if (input)
      return cli_usage_error("validate: one input only");
    else
      input = argv[i];
  }
  if (!input) {
    fputs(usage, stderr);
    return ETSIM_EXIT_USAGE;
  }
  etsim_error_t err = {0};
  etsim_et_set_t *set;
  if (etsim_et_set_load(&set, input, 0, &err))
    return cli_fail(&err);
  long problems = etsim_et_validate_set(set, quiet ? NULL : print_finding, NULL);
  size_t nodes = 0;
  for (size_t k = 0; k < set->n_traces; k++)
    nodes += set->traces[k]->n_nodes;
  size_t ranks = set->n_ranks;
  etsim_et_set_free(set);
  if (problems < 0) {
    fprintf(stderr, "etsim: %s: out of memory\n", input);
    return ETSIM_EXIT_INTERNAL;
  }
  if (!quiet)
    printf("%s: %zu rank(s), %zu node(s): %ld problem(s)\n", input, ranks,
           nodes, problems);
  return problems ? ETSIM_EXIT_PROBLEMS : ETSIM_EXIT_OK;
}
