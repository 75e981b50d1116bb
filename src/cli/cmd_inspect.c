/*
 * cmd_inspect.c — `etsim inspect FILE|PREFIX [--json]`.
 */
#include "cli/cli.h"

#include "etsim/etcheck.h"

#include <string.h>

static void print_text(const char *path, const etsim_et_stats_t *st) {
  char b1[32];
  printf("%s\n  nodes            %zu\n", path, st->n_nodes);
  for (int k = 0; k < ETSIM_ET_NODE_TYPE_COUNT; k++)
    if (st->by_type[k]) printf("    %-16s %zu\n", etsim_et_node_type_name(k), st->by_type[k]);
  for (int c = 0; c < ETSIM_COLL_TYPE_COUNT; c++)
    if (st->by_coll[c])
      printf("    %-16s %zu collectives, %llu bytes\n", etsim_coll_type_name(c), st->by_coll[c],
             (unsigned long long)st->coll_bytes[c]);
  printf("  data edges       %zu (%zu to absent ids)\n", st->data_edges, st->dangling_data);
  printf("  control edges    %zu (%zu to absent ids)\n", st->ctrl_edges, st->dangling_ctrl);
  printf("  sources / sinks  %zu / %zu\n", st->sources, st->sinks);
  if (st->cyclic) printf("  depth            undefined: the graph has a cycle\n");
  else {
    printf("  depth            %zu nodes\n", st->depth);
    printf("  critical path    %s us (node %llu .. node %llu)\n",
           cli_us(st->critical_path_ns, b1, sizeof b1), (unsigned long long)st->critical_first,
           (unsigned long long)st->critical_last);
  }
  printf("  compute time     %s us\n", cli_us(st->compute_ns, b1, sizeof b1));
  printf("  attributes\n");
  for (size_t a = 0; a < st->n_attr_uses; a++)
    printf("    %-20s %-13s %zu\n", st->attrs[a].name, etsim_attr_kind_name(st->attrs[a].kind),
           st->attrs[a].count);
}

static void print_json(const char *path, const etsim_et_stats_t *st) {
  char b1[32];
  printf("{\"file\": ");
  cli_json_str(path);
  printf(", \"nodes\": %zu, \"by_type\": {", st->n_nodes);
  int first = 1;
  for (int k = 0; k < ETSIM_ET_NODE_TYPE_COUNT; k++)
    if (st->by_type[k]) {
      printf("%s\"%s\": %zu", first ? "" : ", ", etsim_et_node_type_name(k), st->by_type[k]);
      first = 0;
    }
  printf("}, \"collectives\": {");
  first = 1;
  for (int c = 0; c < ETSIM_COLL_TYPE_COUNT; c++)
    if (st->by_coll[c]) {
      printf("%s\"%s\": {\"count\": %zu, \"bytes\": %llu}", first ? "" : ", ",
             etsim_coll_type_name(c), st->by_coll[c], (unsigned long long)st->coll_bytes[c]);
      first = 0;
    }
  printf(
      "}, \"data_edges\": %zu, \"ctrl_edges\": %zu, \"dangling_data\": %zu, "
      "\"dangling_ctrl\": %zu, \"sources\": %zu, \"sinks\": %zu, ",
      st->data_edges, st->ctrl_edges, st->dangling_data, st->dangling_ctrl, st->sources, st->sinks);
  if (st->cyclic) printf("\"cyclic\": true, ");
  else
    printf(
        "\"cyclic\": false, \"depth\": %zu, \"critical_path_us\": %s, "
        "\"critical_path_from\": %llu, \"critical_path_to\": %llu, ",
        st->depth, cli_us(st->critical_path_ns, b1, sizeof b1),
        (unsigned long long)st->critical_first, (unsigned long long)st->critical_last);
  printf("\"compute_us\": %s, \"attributes\": [", cli_us(st->compute_ns, b1, sizeof b1));
  for (size_t a = 0; a < st->n_attr_uses; a++) {
    printf("%s{\"name\": ", a ? ", " : "");
    cli_json_str(st->attrs[a].name);
    printf(", \"kind\": \"%s\", \"count\": %zu}", etsim_attr_kind_name(st->attrs[a].kind),
           st->attrs[a].count);
  }
  printf("]}");
}

/* The whole set: each distinct file counted once per rank that runs it. */
typedef struct {
  size_t ranks, nodes, data_edges, ctrl_edges;
  size_t by_type[ETSIM_ET_NODE_TYPE_COUNT], by_coll[ETSIM_COLL_TYPE_COUNT];
  uint64_t coll_bytes[ETSIM_COLL_TYPE_COUNT];
  uint64_t compute_min, compute_max, path_max; /* ns */
  size_t compute_max_file, path_max_file;
} total_t;

static void total_add(total_t *t, const etsim_et_stats_t *st, size_t mult, size_t file) {
  if (!mult) return;
  if (!t->ranks || st->compute_ns < t->compute_min) t->compute_min = st->compute_ns;
  if (!t->ranks || st->compute_ns > t->compute_max) {
    t->compute_max = st->compute_ns;
    t->compute_max_file = file;
  }
  if (!st->cyclic && (!t->ranks || st->critical_path_ns > t->path_max)) {
    t->path_max = st->critical_path_ns;
    t->path_max_file = file;
  }
  t->ranks += mult;
  t->nodes += mult * st->n_nodes;
  t->data_edges += mult * st->data_edges;
  t->ctrl_edges += mult * st->ctrl_edges;
  for (int k = 0; k < ETSIM_ET_NODE_TYPE_COUNT; k++) t->by_type[k] += mult * st->by_type[k];
  for (int c = 0; c < ETSIM_COLL_TYPE_COUNT; c++) {
    t->by_coll[c] += mult * st->by_coll[c];
    t->coll_bytes[c] += mult * st->coll_bytes[c];
  }
}

static void print_total(const total_t *t, const etsim_et_set_t *set, int json) {
  char b1[32], b2[32], b3[32];
  if (json) {
    printf("\"total\": {\"ranks\": %zu, \"nodes\": %zu, \"by_type\": {", t->ranks, t->nodes);
    int first = 1;
    for (int k = 0; k < ETSIM_ET_NODE_TYPE_COUNT; k++)
      if (t->by_type[k]) {
        printf("%s\"%s\": %zu", first ? "" : ", ", etsim_et_node_type_name(k), t->by_type[k]);
        first = 0;
      }
    printf("}, \"collectives\": {");
    first = 1;
    for (int c = 0; c < ETSIM_COLL_TYPE_COUNT; c++)
      if (t->by_coll[c]) {
        printf("%s\"%s\": {\"count\": %zu, \"bytes\": %llu}", first ? "" : ", ",
               etsim_coll_type_name(c), t->by_coll[c], (unsigned long long)t->coll_bytes[c]);
        first = 0;
      }
    printf(
        "}, \"data_edges\": %zu, \"ctrl_edges\": %zu, "
        "\"compute_us_min\": %s, \"compute_us_max\": %s, "
        "\"critical_path_us_max\": %s}",
        t->data_edges, t->ctrl_edges, cli_us(t->compute_min, b1, sizeof b1),
        cli_us(t->compute_max, b2, sizeof b2), cli_us(t->path_max, b3, sizeof b3));
    return;
  }
  printf("all %zu ranks\n  nodes            %zu\n", t->ranks, t->nodes);
  for (int k = 0; k < ETSIM_ET_NODE_TYPE_COUNT; k++)
    if (t->by_type[k]) printf("    %-16s %zu\n", etsim_et_node_type_name(k), t->by_type[k]);
  for (int c = 0; c < ETSIM_COLL_TYPE_COUNT; c++)
    if (t->by_coll[c])
      printf("    %-16s %zu collectives, %llu bytes (all ranks' share)\n", etsim_coll_type_name(c),
             t->by_coll[c], (unsigned long long)t->coll_bytes[c]);
  printf("  data edges       %zu\n  control edges    %zu\n", t->data_edges, t->ctrl_edges);
  printf("  compute time     %s .. %s us per rank (most: %s)\n",
         cli_us(t->compute_min, b1, sizeof b1), cli_us(t->compute_max, b2, sizeof b2),
         set->paths[t->compute_max_file]);
  printf("  critical path    at most %s us (%s)\n", cli_us(t->path_max, b3, sizeof b3),
         set->paths[t->path_max_file]);
}

int etsim_cmd_inspect(int argc, char **argv) {
  int json = 0;
  const cli_opt_t opts[] = {
      CLI_O_FLAG("--json", NULL, &json, "print the summary as JSON on stdout"), CLI_O_END};
  const cli_cmd_t cmd = {"inspect",
                         "[--json] FILE|PREFIX",
                         "Summarise a trace or rank set: node counts by type and collective type,\n"
                         "data and control edges (and how many name absent ids), sources, sinks,\n"
                         "depth, the duration-weighted critical path, total compute time, bytes\n"
                         "per collective type, and the attributes present with their kinds.",
                         opts,
                         1,
                         1,
                         "FILE|PREFIX",
                         NULL};
  const char *input;
  int code = cli_parse(&cmd, argc, argv, &input, NULL);
  if (code >= 0) return code;
  etsim_error_t err = {0};
  etsim_et_set_t *set;
  if (etsim_et_set_load(&set, input, 0, &err)) return cli_fail(&err);
  if (json) printf("{\"ranks\": %zu, \"traces\": [", set->n_ranks);
  else if (set->n_ranks > 1)
    printf("%s: %zu ranks in %zu file(s)\n", input, set->n_ranks, set->n_traces);
  int rc = ETSIM_EXIT_OK;
  total_t tot = {0};
  for (size_t k = 0; k < set->n_traces; k++) {
    size_t mult = 0; /* ranks that run this file */
    for (size_t r = 0; r < set->n_ranks; r++) mult += set->ranks[r] == set->traces[k];
    etsim_et_stats_t st;
    if (etsim_et_stats(set->traces[k], &st)) {
      fprintf(stderr, "etsim: %s: out of memory\n", set->paths[k]);
      rc = ETSIM_EXIT_INTERNAL;
      break;
    }
    if (json) {
      if (k) printf(", ");
      print_json(set->paths[k], &st);
    } else print_text(set->paths[k], &st);
    total_add(&tot, &st, mult, k);
    etsim_et_stats_free(&st);
  }
  if (json) {
    printf("]");
    if (set->n_ranks > 1 && rc == ETSIM_EXIT_OK) {
      printf(", ");
      print_total(&tot, set, 1);
    }
    printf("}\n");
  } else if (set->n_ranks > 1 && rc == ETSIM_EXIT_OK) {
    print_total(&tot, set, 0);
  }
  etsim_et_set_free(set);
  return rc;
}
