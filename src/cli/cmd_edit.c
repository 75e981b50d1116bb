/*
 * cmd_edit.c — `etsim edit INPUT -o OUTPUT [operations...]`.
 *
 * Every operation is a repeatable option whose table entry comes from the
 * library's list (etsim_edit_ops), so the help cannot drift from what the
 * library accepts.  The parser keeps each value's position on the command
 * line; the values of all operations are merged back into that order,
 * because the operations are applied in the order given.
 */
#include "cli/cli.h"

#include "etsim/edit.h"

#include <stdlib.h>
#include <string.h>

enum { MAX_OPS = 48 };

static const char *output, *comm_group, *marker, *salt, *sharded;
static int out_format, renumber, gzip_out, json, quiet;
static uint64_t dp_stride;

static const cli_opt_t settings[] = {
    {.name = "--output",
     .alias = "-o",
     .kind = CLI_STR,
     .out = &output,
     .metavar = "PATH",
     .help = "the file, or the prefix of the rank set, to write (required)",
     .flags = CLI_REQUIRED},
    CLI_O_STR("--comm-group", NULL, &comm_group, "PATH",
              "the input's communicator groups (default INPUT.comm_group.json)"),
    CLI_O_STR("--iter-marker", NULL, &marker, "ERE",
              "nodes that start an iteration (default ^ProfilerStep#)"),
    CLI_O_STR("--salt", NULL, &salt, "S", "key of --anonymize hash (keep it secret)"),
    CLI_O_STR("--dp-sharded", NULL, &sharded, "ERE",
              "compute nodes whose work --dp divides (ZeRO's optimizer)"),
    CLI_O_UINT("--dp-stride", NULL, &dp_stride, "S", 1, 16777216,
               "ranks between data-parallel replicas (default: inferred)"),
    CLI_O_CHOICE("--out-format", NULL, &out_format, "F", "auto|manifest|et",
                 "auto (like the input), manifest or et (one file per rank)"),
    CLI_O_FLAG("--renumber", NULL, &renumber, "ids 0, 1, ... in output order"),
    CLI_O_FLAG("--gzip", NULL, &gzip_out, "write .et.gz files"),
    CLI_O_FLAG("--json", NULL, &json, "print what was done as JSON"),
    CLI_O_FLAG("--quiet", "-q", &quiet, "print nothing on success"),
    CLI_O_END};

static const char *const group_titles[ETSIM_EDIT_GROUP_COUNT] = {
    "select (dropped nodes are bridged: what depended on them waits for their ancestors)", "scale",
    "retarget", "compose", "obfuscate"};

static void usage(FILE *f, const cli_opt_t *ops, size_t n_ops, const etsim_edit_op_info_t *info) {
  fprintf(f,
          "usage: etsim edit INPUT -o OUTPUT [operations...] [options]\n"
          "\n"
          "Change a trace or rank set (a file, PREFIX.<r>.et or PREFIX.manifest.json).\n"
          "Operations apply in the order given; the output always validates: ids\n"
          "unique, dependencies closed, collectives and sends/receives still matched.\n");
  for (int g = 0; g < ETSIM_EDIT_GROUP_COUNT; g++) {
    fprintf(f, "\n%s:\n", group_titles[g]);
    for (size_t i = 0; i < n_ops; i++) {
      if (info[i].group != g) continue;
      cli_opt_t one[2] = {ops[i], CLI_O_END};
      cli_help_opts(one, f);
    }
  }
  fprintf(f,
          "\npredicates (PRED): terms joined by ';', all must hold; name= comes last\n"
          "  name=ERE      the node name matches (POSIX extended regular expression)\n"
          "  type=T[,T]    node types: COMP_NODE or comp, coll, send, recv, comm, meta, mem\n"
          "  id=A-B        ids A..B          coll=C[,C]  collectives (all-reduce, ...)\n"
          "  cpu=0|1       is_cpu_op         attr=NAME   has the attribute\n"
          "  all           every node\n"
          "\noptions:\n");
  cli_help_opts(settings, f);
  fprintf(f,
          "\nexit: 0 written, 2 bad usage or input (nothing written), 3 internal error\n"
          "docs/edit.md has the details and a Mystique-style workflow.\n");
}

typedef struct {
  int at;
  size_t op;
  const char *val;
} step_t;

static int cmp_step(const void *a, const void *b) {
  const step_t *x = a, *y = b;
  return x->at - y->at;
}

int etsim_cmd_edit(int argc, char **argv) {
  size_t n_info;
  const etsim_edit_op_info_t *info = etsim_edit_ops(&n_info);
  if (n_info > MAX_OPS) n_info = MAX_OPS;
  static char names[MAX_OPS][40];
  static cli_list_t lists[MAX_OPS];
  cli_opt_t opts[MAX_OPS + 16];
  size_t n = 0;
  for (size_t i = 0; i < n_info; i++) {
    snprintf(names[i], sizeof names[i], "--%s", info[i].name);
    opts[n++] = (cli_opt_t){.name = names[i],
                            .kind = CLI_LIST,
                            .out = &lists[i],
                            .metavar = info[i].metavar,
                            .help = info[i].help};
  }
  for (const cli_opt_t *o = settings; o->name; o++) opts[n++] = *o;
  opts[n] = (cli_opt_t)CLI_O_END;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0) break;
    if (cli_is_help(argv[i])) {
      usage(stdout, opts, n_info, info);
      return ETSIM_EXIT_OK;
    }
  }
  const cli_cmd_t cmd = {"edit", "INPUT -o OUTPUT [operations...]", NULL, opts, 1, 1, "INPUT",
                         NULL};
  const char *input;
  int code = cli_parse(&cmd, argc, argv, &input, NULL);
  if (code >= 0) return code;
  /* The operations in command-line order. */
  size_t n_steps = 0;
  for (size_t i = 0; i < n_info; i++) n_steps += lists[i].n;
  step_t *steps = calloc(n_steps + 1, sizeof *steps);
  if (!steps) {
    cli_lists_free(opts);
    return cli_usage_error("out of memory");
  }
  size_t k = 0;
  for (size_t i = 0; i < n_info; i++)
    for (size_t j = 0; j < lists[i].n; j++) steps[k++] = (step_t){lists[i].at[j], i, lists[i].v[j]};
  qsort(steps, n_steps, sizeof *steps, cmp_step);
  cli_lists_free(opts); /* the values stay in argv, and steps has them */
  etsim_edit_opts_t eo = {.comm_group = comm_group,
                          .iter_marker = marker,
                          .salt = salt,
                          .dp_sharded = sharded,
                          .dp_stride = (size_t)dp_stride,
                          .out_format = out_format == 1   ? ETSIM_EDIT_OUT_MANIFEST
                                        : out_format == 2 ? ETSIM_EDIT_OUT_ET
                                                          : ETSIM_EDIT_OUT_AUTO,
                          .renumber = renumber,
                          .gzip = gzip_out};
  etsim_error_t err = {0};
  etsim_edit_t *e;
  if (etsim_edit_new(&e, &eo, &err)) {
    free(steps);
    return cli_fail(&err);
  }
  for (size_t i = 0; i < n_steps; i++)
    if (etsim_edit_add(e, info[steps[i].op].name, steps[i].val, &err)) {
      free(steps);
      etsim_edit_free(e);
      return cli_fail(&err);
    }
  free(steps);
  etsim_edit_report_t rep;
  int rc = etsim_edit_run(e, input, output, &rep, &err);
  etsim_edit_free(e);
  if (rc) return cli_fail(&err);
  if (json) {
    printf("{\"input\": ");
    cli_json_str(input);
    printf(", \"output\": ");
    cli_json_str(output);
    printf(
        ", \"ranks_in\": %zu, \"ranks_out\": %zu, \"files_in\": %zu, \"files_out\": %zu, "
        "\"nodes_in\": %llu, \"nodes_out\": %llu, \"dropped\": %llu, \"inserted\": %llu, "
        "\"bridged\": %llu, \"dangling_dropped\": %llu, \"join_edges\": %llu, \"restored\": %llu, "
        "\"changed\": %llu, \"bytes_out\": %llu, \"notes\": [",
        rep.ranks_in, rep.ranks_out, rep.files_in, rep.files_out, (unsigned long long)rep.nodes_in,
        (unsigned long long)rep.nodes_out, (unsigned long long)rep.dropped,
        (unsigned long long)rep.inserted, (unsigned long long)rep.bridged,
        (unsigned long long)rep.dangling, (unsigned long long)rep.join_edges,
        (unsigned long long)rep.restored, (unsigned long long)rep.changed,
        (unsigned long long)rep.bytes_out);
    for (size_t i = 0; i < rep.n_notes; i++) {
      if (i) printf(", ");
      cli_json_str(rep.notes[i]);
    }
    printf("]}\n");
  } else if (!quiet && strcmp(output, "-") != 0) {
    for (size_t i = 0; i < rep.n_notes; i++) printf("note: %s\n", rep.notes[i]);
    printf("%s: %zu rank(s) in %zu file(s), %llu node(s) written from %llu read", output,
           rep.ranks_out, rep.files_out, (unsigned long long)rep.nodes_out,
           (unsigned long long)rep.nodes_in);
    printf(
        " (%llu dropped, %llu inserted, %llu changed, %llu bridging and %llu joining "
        "dependencies added, %llu restored)\n",
        (unsigned long long)rep.dropped, (unsigned long long)rep.inserted,
        (unsigned long long)rep.changed, (unsigned long long)rep.bridged,
        (unsigned long long)rep.join_edges, (unsigned long long)rep.restored);
  }
  etsim_edit_report_free(&rep);
  return ETSIM_EXIT_OK;
}
