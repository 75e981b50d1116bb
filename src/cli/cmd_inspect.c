/*
 * cmd_inspect.c — `etsim inspect FILE|PREFIX`: per-rank summary of a trace
 * or rank set (counts, edges, depth, critical path, compute time, bytes per
 * collective, attribute kinds).  --json prints one JSON object per rank.
 */
#include "cli/cli.h"
#include "etsim/etcheck.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *fp) {
  fprintf(fp, "usage: etsim inspect [--json] FILE|PREFIX\n\n"
              "Summarise each distinct trace of a file or rank set.\n");
}

static void print_text(const char *path, const etsim_et_stats_t *st) {
  printf("%s\n  nodes %zu\n", path, st->n_nodes);
  for (int k = 0; k < ETSIM_ET_NODE_TYPE_COUNT; k++)
    if (st->by_type[k])
      printf("    %-20s %zu\n", etsim_et_node_type_name(k), st->by_type[k]);
  for (int k = 0; k < ETSIM_COLL_TYPE_COUNT; k++)
    if (st->by_coll[k])
      printf("  collective %-16s %zu  bytes %llu\n", etsim_coll_type_name(k),
             st->by_coll[k], (unsigned long long)st->coll_bytes[k]);
  printf("  edges data %zu ctrl %zu (dangling %zu / %zu)\n", st->data_edges,
         st->ctrl_edges, st->dangling_data, st->dangling_ctrl);
  printf("  sources %zu sinks %zu\n", st->sources, st->sinks);
  if (st->cyclic)
    printf("  cyclic: depth and critical path undefined\n");
  else
    printf("  depth %zu  critical path %llu us (node %llu -> %llu)\n", st->depth,
           (unsigned long long)st->critical_path_us,
           (unsigned long long)st->critical_first,
           (unsigned long long)st->critical_last);
  printf("  compute %llu us\n  attributes:\n", (unsigned long long)st->compute_us);
  for (size_t a = 0; a < st->n_attr_uses; a++)
    printf("    %-24s %-12s %zu\n", st->attrs[a].name,
           etsim_attr_kind_name(st->attrs[a].kind), st->attrs[a].count);
}

static void print_json(const char *path, const etsim_et_stats_t *st) {
  printf("{\"path\":\"%s\",\"nodes\":%zu,\"by_type\":{", path, st->n_nodes);
  const char *sep = "";
  for (int k = 0; k < ETSIM_ET_NODE_TYPE_COUNT; k++)
    if (st->by_type[k]) {
      printf("%s\"%s\":%zu", sep, etsim_et_node_type_name(k), st->by_type[k]);
      sep = ",";
    }
  printf("},\"data_edges\":%zu,\"ctrl_edges\":%zu,\"sources\":%zu,"
         "\"sinks\":%zu,\"depth\":%zu,\"critical_path_us\":%llu,"
         "\"compute_us\":%llu,\"cyclic\":%s}\n",
         st->data_edges, st->ctrl_edges, st->sources, st->sinks, st->depth,
         (unsigned long long)st->critical_path_us,
         (unsigned long long)st->compute_us, st->cyclic ? "true" : "false");
}

int etsim_cmd_inspect(int argc, char **argv) {
  const char *in = NULL;
  int json = 0;
  for (int i = 1; i < argc; i++) {
    if (cli_is_help(argv[i])) {
      usage(stdout);
      return ETSIM_EXIT_OK;
    }
    if (strcmp(argv[i], "--json") == 0)
      json = 1;
    else if (argv[i][0] == '-' && argv[i][1])
      return cli_usage_error("inspect: unknown option '%s'", argv[i]);
    else if (in)
      return cli_usage_error("inspect: one input only");
    else
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
  int rc = ETSIM_EXIT_OK;
  for (size_t k = 0; k < s->n_traces && rc == ETSIM_EXIT_OK; k++) {
    etsim_et_stats_t st;
    if (etsim_et_stats(s->traces[k], &st)) {
      rc = ETSIM_EXIT_INTERNAL;
      break;
    }
    (json ? print_json : print_text)(s->paths[k], &st);
    etsim_et_stats_free(&st);
  }
  etsim_et_set_free(s);
  return rc;
}
