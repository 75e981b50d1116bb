/*
 * convert_pytorch.c — the `etsim convert --from pytorch` front end: parse
 * its options, call etsim_convpt_convert, print the summary.  Lives apart
 * from cmd_convert.c so that the format table there needs one line only.
 */
#include "cli/cli.h"
#include "etsim/convpt.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

extern const cli_opt_t etsim_cli_pytorch_opts[];
int etsim_cli_convert_pytorch(const char *input, const char *output);

static void print_summary(const etsim_convpt_summary_t *s, FILE *fp) {
  fprintf(fp,
          "%s: %" PRIu64 " node(s) (rank %" PRId64 ") from %" PRIu64 " host node(s), schema %s%s\n",
          s->out_path, s->nodes_written, s->rank, s->host_nodes, s->schema[0] ? s->schema : "?",
          s->legacy ? " (1.0.1 layout)" : "");
  fprintf(fp, "  by type:");
  for (int t = 0; t < ETSIM_ET_NODE_TYPE_COUNT; t++)
    if (s->by_type[t]) fprintf(fp, " %s %" PRIu64, etsim_et_node_type_name(t), s->by_type[t]);
  fprintf(fp, "\n");
  int any = 0;
  for (int k = 0; k < ETSIM_COLL_TYPE_COUNT; k++)
    if (s->by_coll[k]) {
      fprintf(fp, "%s %s %" PRIu64, any ? "," : "  collectives:", etsim_coll_type_name(k),
              s->by_coll[k]);
      any = 1;
    }
  if (any) fprintf(fp, " (%" PRIu64 " bytes)\n", s->comm_bytes);
  fprintf(fp,
          "  edges: %" PRIu64 " data (%" PRIu64 " cross-thread tensor, %" PRIu64
          " inter-thread, %" PRIu64 " wait, %" PRIu64 " sync), %" PRIu64 " ctrl\n",
          s->data_edges, s->tensor_edges, s->inter_thread_edges, s->wait_edges, s->sync_edges,
          s->ctrl_edges);
  if (s->kineto_events)
    fprintf(fp,
            "  kineto: %" PRIu64 " events, %" PRIu64 "/%" PRIu64 " operators timed, %" PRIu64
            " kernels\n",
            s->kineto_events, s->linked_ops, s->host_ops, s->kernels);
  if (s->groups_path[0])
    fprintf(fp, "  groups: %s (%" PRIu64 " process group(s))\n", s->groups_path, s->process_groups);
  fprintf(fp,
          "  degraded: unknown comm %" PRIu64 ", unmatched waits %" PRIu64 ", orphans %" PRIu64
          ", unlinked ops %" PRIu64 ", unlaunched kernels %" PRIu64 ", unknown kernels %" PRIu64
          ", dropped edges %" PRIu64 ", missing pg record %" PRIu64 ", schema guessed %d\n",
          s->unknown_comm, s->unmatched_waits, s->orphans, s->unlinked_ops, s->unlaunched_kernels,
          s->unknown_kernels, s->dropped_edges, s->missing_pg_init, s->schema_guessed);
}

static const char *kineto, *groups;
static int gzip_out, quiet, rank_given;
static uint64_t rank;
const cli_opt_t etsim_cli_pytorch_opts[] = {
    CLI_O_STR("--kineto", NULL, &kineto, "FILE", "join a Kineto trace (see docs/pytorch.md)"),
    CLI_O_UINT_GIVEN("--rank", NULL, &rank, "R", 0, 16777215, &rank_given,
                     "the rank this trace is (default: inferred from its communication)"),
    CLI_O_STR("--groups", NULL, &groups, "PATH",
              "where to write the process groups (default next to the output)"),
    CLI_O_FLAG("--gzip", NULL, &gzip_out, "write a gzip-compressed .et"),
    CLI_O_FLAG("--quiet", "-q", &quiet, "print no summary"),
    CLI_O_END};

int etsim_cli_convert_pytorch(const char *input, const char *output) {
  etsim_convpt_opts_t o = {0};
  o.rank = rank_given ? (int64_t)rank : -1;
  o.kineto_path = kineto;
  o.groups_path = groups;
  if (gzip_out) o.write_flags |= ETSIM_ET_WRITE_GZIP;
  etsim_error_t err = {0};
  etsim_convpt_summary_t s;
  cli_ticker_t tk;
  cli_ticker_start(&tk, "convert", input, quiet);
  int rc = etsim_convpt_convert(input, output, &o, &s, &err);
  cli_ticker_stop(&tk);
  if (rc) return cli_fail(&err);
  if (!quiet) /* on stderr when the trace itself goes to stdout */
    print_summary(&s, strcmp(output, "-") == 0 ? stderr : stdout);
  return ETSIM_EXIT_OK;
}
