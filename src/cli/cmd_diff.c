/*
 * cmd_diff.c — `etsim diff A B`: what differs between two traces or rank
 * sets.  Exit 0 when equal, 1 when different, 2 for bad input.
 */
#include "cli/cli.h"

#include "etsim/edit.h"

#include <stdlib.h>
#include <string.h>

static long long delta(uint64_t a, uint64_t b) { return (long long)b - (long long)a; }

static void print_text(const char *pa, const char *pb, const etsim_diff_report_t *r) {
  const etsim_diff_side_t *a = &r->a, *b = &r->b;
  printf("A %s: %zu rank(s)\nB %s: %zu rank(s)\n", pa, a->ranks, pb, b->ranks);
  uint64_t add = 0, rem = 0, chg = 0;
  for (int t = 0; t < ETSIM_ET_NODE_TYPE_COUNT; t++) {
    add += r->added[t];
    rem += r->removed[t];
    chg += r->changed[t];
  }
  printf("nodes            %llu -> %llu (%+lld): %llu added, %llu removed, %llu changed (by id)\n",
         (unsigned long long)a->nodes, (unsigned long long)b->nodes, delta(a->nodes, b->nodes),
         (unsigned long long)add, (unsigned long long)rem, (unsigned long long)chg);
  for (int t = 0; t < ETSIM_ET_NODE_TYPE_COUNT; t++) {
    if (!a->by_type[t] && !b->by_type[t]) continue;
    printf("  %-16s %llu -> %llu", etsim_et_node_type_name(t), (unsigned long long)a->by_type[t],
           (unsigned long long)b->by_type[t]);
    if (r->added[t] || r->removed[t] || r->changed[t])
      printf(" (+%llu -%llu ~%llu)", (unsigned long long)r->added[t],
             (unsigned long long)r->removed[t], (unsigned long long)r->changed[t]);
    if (a->dur_us_by_type[t] || b->dur_us_by_type[t])
      printf(", duration %llu -> %llu us", (unsigned long long)a->dur_us_by_type[t],
             (unsigned long long)b->dur_us_by_type[t]);
    printf("\n");
  }
  printf("edges            data %llu -> %llu (+%llu -%llu), control %llu -> %llu (+%llu -%llu)\n",
         (unsigned long long)a->data_edges, (unsigned long long)b->data_edges,
         (unsigned long long)r->edges_added[0], (unsigned long long)r->edges_removed[0],
         (unsigned long long)a->ctrl_edges, (unsigned long long)b->ctrl_edges,
         (unsigned long long)r->edges_added[1], (unsigned long long)r->edges_removed[1]);
  if (a->num_ops || b->num_ops)
    printf("num_ops          %llu -> %llu\n", (unsigned long long)a->num_ops,
           (unsigned long long)b->num_ops);
  for (int c = 0; c < ETSIM_COLL_TYPE_COUNT; c++) {
    if (!a->coll_count[c] && !b->coll_count[c]) continue;
    printf("  %-16s %llu -> %llu collectives, %llu -> %llu bytes\n", etsim_coll_type_name(c),
           (unsigned long long)a->coll_count[c], (unsigned long long)b->coll_count[c],
           (unsigned long long)a->coll_bytes[c], (unsigned long long)b->coll_bytes[c]);
  }
  if (r->coll_resized)
    printf("  %llu collective(s) resized\n", (unsigned long long)r->coll_resized);
  if (a->p2p_bytes || b->p2p_bytes)
    printf("  sends            %llu -> %llu bytes\n", (unsigned long long)a->p2p_bytes,
           (unsigned long long)b->p2p_bytes);
  char ua[32], ub[32];
  printf("critical path    %s us (rank %zu)%s -> %s us (rank %zu)%s\n",
         cli_us(a->critical_path_ns, ua, sizeof ua), a->critical_rank, a->cyclic ? ", a cycle" : "",
         cli_us(b->critical_path_ns, ub, sizeof ub), b->critical_rank,
         b->cyclic ? ", a cycle" : "");
  if (r->metadata_differs) printf("metadata         differs\n");
  if (r->have_first) {
    if (r->first_index == UINT64_MAX) printf("first difference: %s\n", r->first);
    else
      printf("first difference: rank %zu, node index %llu: %s\n", r->first_rank,
             (unsigned long long)r->first_index, r->first);
  }
  printf("%s\n", r->equal ? "equal" : "different");
}

static void json_side(const etsim_diff_side_t *s) {
  char cp[32];
  printf(
      "{\"ranks\": %zu, \"nodes\": %llu, \"data_edges\": %llu, \"ctrl_edges\": %llu, \"by_type\": "
      "{",
      s->ranks, (unsigned long long)s->nodes, (unsigned long long)s->data_edges,
      (unsigned long long)s->ctrl_edges);
  int first = 1;
  for (int t = 0; t < ETSIM_ET_NODE_TYPE_COUNT; t++)
    if (s->by_type[t]) {
      printf("%s\"%s\": {\"count\": %llu, \"duration_us\": %llu}", first ? "" : ", ",
             etsim_et_node_type_name(t), (unsigned long long)s->by_type[t],
             (unsigned long long)s->dur_us_by_type[t]);
      first = 0;
    }
  printf("}, \"collectives\": {");
  first = 1;
  for (int c = 0; c < ETSIM_COLL_TYPE_COUNT; c++)
    if (s->coll_count[c]) {
      printf("%s\"%s\": {\"count\": %llu, \"bytes\": %llu}", first ? "" : ", ",
             etsim_coll_type_name(c), (unsigned long long)s->coll_count[c],
             (unsigned long long)s->coll_bytes[c]);
      first = 0;
    }
  printf(
      "}, \"num_ops\": %llu, \"send_bytes\": %llu, \"critical_path_us\": %s, "
      "\"critical_rank\": %zu, \"cyclic\": %s}",
      (unsigned long long)s->num_ops, (unsigned long long)s->p2p_bytes,
      cli_us(s->critical_path_ns, cp, sizeof cp), s->critical_rank, s->cyclic ? "true" : "false");
}

static void print_json(const etsim_diff_report_t *r) {
  printf("{\"equal\": %s, \"a\": ", r->equal ? "true" : "false");
  json_side(&r->a);
  printf(", \"b\": ");
  json_side(&r->b);
  static const char *const what[3] = {"added", "removed", "changed"};
  const uint64_t *arr[3] = {r->added, r->removed, r->changed};
  for (int w = 0; w < 3; w++) {
    printf(", \"%s\": {", what[w]);
    int first = 1;
    for (int t = 0; t < ETSIM_ET_NODE_TYPE_COUNT; t++)
      if (arr[w][t]) {
        printf("%s\"%s\": %llu", first ? "" : ", ", etsim_et_node_type_name(t),
               (unsigned long long)arr[w][t]);
        first = 0;
      }
    printf("}");
  }
  printf(
      ", \"edges_added\": {\"data\": %llu, \"ctrl\": %llu}, \"edges_removed\": {\"data\": %llu, "
      "\"ctrl\": %llu}, \"collectives_resized\": %llu, \"metadata_differs\": %s",
      (unsigned long long)r->edges_added[0], (unsigned long long)r->edges_added[1],
      (unsigned long long)r->edges_removed[0], (unsigned long long)r->edges_removed[1],
      (unsigned long long)r->coll_resized, r->metadata_differs ? "true" : "false");
  if (r->have_first) {
    printf(", \"first_difference\": {\"rank\": %zu, ", r->first_rank);
    if (r->first_index != UINT64_MAX)
      printf("\"node_index\": %llu, ", (unsigned long long)r->first_index);
    printf("\"what\": ");
    cli_json_str(r->first);
    printf("}");
  }
  printf("}\n");
}

int etsim_cmd_diff(int argc, char **argv) {
  int json = 0, quiet = 0, ign_names = 0, ign_meta = 0, ign_io = 0;
  cli_list_t ign_attrs = {0};
  const cli_opt_t opts[] = {
      CLI_O_FLAG("--ignore-names", NULL, &ign_names,
                 "leave node names, string attributes and doc strings out"),
      CLI_O_FLAG("--ignore-metadata", NULL, &ign_meta, "leave the GlobalMetadata out"),
      CLI_O_FLAG("--ignore-io", NULL, &ign_io, "leave inputs/outputs (IOInfo) out"),
      {.name = "--ignore-attr",
       .kind = CLI_LIST,
       .out = &ign_attrs,
       .metavar = "NAME",
       .help = "leave attribute NAME out (repeatable)"},
      CLI_O_FLAG("--json", NULL, &json, "print the comparison as JSON"),
      CLI_O_FLAG("--quiet", "-q", &quiet, "print nothing: the exit status only"),
      CLI_O_END};
  const cli_cmd_t cmd = {
      "diff",
      "[options] A B",
      "Compare two traces or rank sets (files, prefixes or manifests), rank by\n"
      "rank: nodes matched by id (added, removed, changed, by type), edges by\n"
      "kind, per-type counts and durations, num_ops, collectives and their bytes,\n"
      "the critical path, and the first node in file order where they differ.\n"
      "Dependencies compare as sets and attributes in name order.",
      opts,
      2,
      2,
      "A B",
      "exit: 0 equal, 1 different, 2 bad usage or unreadable input"};
  const char *args[2];
  int n_args = 0;
  int code = cli_parse(&cmd, argc, argv, args, &n_args);
  if (code >= 0) return code;
  etsim_diff_opts_t o = {0};
  o.flags = (ign_names ? ETSIM_DIFF_IGNORE_NAMES : 0) |
            (ign_meta ? ETSIM_DIFF_IGNORE_METADATA : 0) | (ign_io ? ETSIM_DIFF_IGNORE_IO : 0);
  o.attrs = ign_attrs.v;
  o.n_attrs = ign_attrs.n;
  etsim_diff_report_t r;
  etsim_error_t err = {0};
  int rc = etsim_diff(args[0], args[1], &o, &r, &err);
  cli_lists_free(opts);
  if (rc) return cli_fail(&err);
  if (json) print_json(&r);
  else if (!quiet) print_text(args[0], args[1], &r);
  return r.equal ? ETSIM_EXIT_OK : ETSIM_EXIT_PROBLEMS;
}
