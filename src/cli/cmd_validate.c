/*
 * cmd_validate.c — `etsim validate FILE|PREFIX`.
 */
#include "cli/cli.h"

#include "etsim/etcheck.h"

#include <string.h>

static void print_finding(void *user, int severity, const char *line) {
  (void)user;
  printf("%s: %s\n", severity == ETSIM_CHECK_PROBLEM ? "problem" : "note", line);
}

int etsim_cmd_validate(int argc, char **argv) {
  int quiet = 0;
  const cli_opt_t opts[] = {
      CLI_O_FLAG("--quiet", "-q", &quiet, "no findings and no summary: the exit status only"),
      CLI_O_END};
  const cli_cmd_t cmd = {
      "validate",
      "[--quiet] FILE|PREFIX",
      "Check a trace or rank set: duplicate ids, dependencies on absent ids\n"
      "(data and control apart, with examples), cycles (one printed), empty\n"
      "messages, well-known attributes of the wrong kind, communication nodes\n"
      "without comm_type/comm_size; across ranks, collectives in the same order,\n"
      "type and size on every rank, and every send matched by a receive.\n"
      "Notes (readable but non-canonical attribute kinds) do not count.",
      opts,
      1,
      1,
      "FILE|PREFIX",
      "exit: 0 clean, 1 problems found, 2 unreadable input"};
  const char *input;
  int code = cli_parse(&cmd, argc, argv, &input, NULL);
  if (code >= 0) return code;
  etsim_error_t err = {0};
  etsim_et_set_t *set;
  if (etsim_et_set_load(&set, input, 0, &err)) return cli_fail(&err);
  long problems = etsim_et_validate_set(set, quiet ? NULL : print_finding, NULL);
  size_t nodes = 0;
  for (size_t k = 0; k < set->n_traces; k++) nodes += set->traces[k]->n_nodes;
  size_t ranks = set->n_ranks;
  etsim_et_set_free(set);
  if (problems < 0) {
    fprintf(stderr, "etsim: %s: out of memory\n", input);
    return ETSIM_EXIT_INTERNAL;
  }
  if (!quiet)
    printf("%s: %zu rank(s), %zu node(s): %ld problem(s)\n", input, ranks, nodes, problems);
  return problems ? ETSIM_EXIT_PROBLEMS : ETSIM_EXIT_OK;
}
