/* Writing simulation results: text, JSON, CSV, Perfetto timeline. */
#include "report_int.h"
#include "html_int.h"

#include <jansson.h>
#include <string.h>

#define NS(ps) ((long long)((ps) / 1000))

void etsim_report_astra_lines(FILE *f, const etsim_sim_result_t *r) {
  for (uint32_t i = 0; i < r->n_npus; i++)
    fprintf(f, "sys[%u] finished, %lld cycles, exposed communication %lld cycles.\n", i,
            NS(r->npu[i].finish_ps), NS(r->npu[i].exposed_ps));
}

static void human_bytes(char *buf, size_t n, double b) {
  const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int k = 0;
  while (b >= 1024 && k < 5) {
    b /= 1024;
    k++;
  }
  snprintf(buf, n, k ? "%.2f %s" : "%.0f %s", b, u[k]);
}

/* Several jobs (etsim sim --job): one line per job. */
static void jobs_summary(FILE *f, const etsim_sim_result_t *r) {
  if (!r->n_jobs) return;
  uint32_t idle = 0;
  for (uint32_t i = 0; i < r->n_npus; i++) idle += r->npu_job[i] == UINT32_MAX;
  fprintf(f, "jobs          %u on one network, %u NPUs idle; %s\n", r->n_jobs, idle,
          r->jobs_share_links ? "their messages share the links"
                              : "analytical backend: jobs never meet on a link, each runs as "
                                "alone (congestion, flow or packet share links)");
  for (uint32_t k = 0; k < r->n_jobs; k++) {
    const struct etsim_sim_job_result *j = &r->jobs[k];
    char pl[96];
    etsim_format_ranges(pl, sizeof pl, j->npus, j->n_npus);
    fprintf(f, "  job %u %-16s %4u NPUs (%s): iteration %.3f us (NPU %u last)", k, j->name,
            j->n_npus, pl, (double)j->finish_ps / 1e6, j->last_npu);
    if (j->alone_ps > 0)
      fprintf(f, "; alone %.3f us, slowdown %.4fx", (double)j->alone_ps / 1e6,
              (double)j->finish_ps / (double)j->alone_ps);
    fprintf(f, "\n");
  }
}

void etsim_report_summary(FILE *f, const etsim_sim_result_t *r, const etsim_topo_t *topo) {
  /* Sums over NPUs are doubles: each time is below 2^62 ps, their sum over
   * thousands of NPUs need not be below 2^63. */
  int64_t max_comp = 0;
  double sum_exposed = 0, sum_true = 0, sum_comp = 0;
  uint32_t slowest = 0;
  for (uint32_t i = 0; i < r->n_npus; i++) {
    const etsim_sim_npu_t *p = &r->npu[i];
    if (p->gpu_comp_ps > max_comp) max_comp = p->gpu_comp_ps;
    if (p->finish_ps > r->npu[slowest].finish_ps) slowest = i;
    sum_exposed += (double)p->exposed_ps;
    sum_true += (double)p->exposed_true_ps;
    sum_comp += (double)p->gpu_comp_ps;
  }
  double n = r->n_npus ? r->n_npus : 1;
  char b1[32];
  fprintf(f, "\n== etsim summary ==\n");
  fprintf(f, "network       ");
  if (r->net.fabric[0]) { /* --net-topology: the YAML gave only the NPU count */
    fprintf(f, "%s\n", r->net.fabric);
  } else {
    for (int d = 0; d < topo->ndims; d++)
      fprintf(f, "%s%s(%u, %g GB/s, %g ns)", d ? " x " : "", etsim_topo_kind_name(topo->kind[d]),
              topo->npus[d], topo->bw_gbps[d], topo->lat_ns[d]);
    fprintf(f, "  = %u NPUs\n", topo->total);
  }
  fprintf(f, "iteration     %.3f us  (slowest NPU %u)\n", (double)r->total_ps / 1e6, slowest);
  jobs_summary(f, r);
  fprintf(f, "compute       %.3f us on average per NPU (max %.3f us)\n", sum_comp / n / 1e6,
          (double)max_comp / 1e6);
  fprintf(f,
          "exposed comm  %.3f us on average per NPU (finish - compute, ASTRA-sim's measure); "
          "%.3f us with no compute running\n",
          sum_exposed / n / 1e6, sum_true / n / 1e6);
  fprintf(f, "by collective   count    bytes/NPU       exposed us/NPU\n");
  for (int k = 0; k < ETSIM_COP_N + 2; k++) {
    if (!r->count_by_op[k]) continue;
    double ex = 0;
    for (uint32_t i = 0; i < r->n_npus; i++) ex += (double)r->npu[i].exposed_by_op[k];
    human_bytes(b1, sizeof b1, (double)r->bytes_by_op[k] / n);
    fprintf(f, "  %-14s %6.0f  %14s  %12.3f\n", etsim_sim_op_name(k), (double)r->count_by_op[k] / n,
            b1, ex / n / 1e6);
  }
  fprintf(f, "by dimension  collectives running / exposed (no compute), us per NPU:");
  for (int d = 0; d < topo->ndims; d++) {
    double b = 0, e = 0;
    for (uint32_t i = 0; i < r->n_npus; i++) {
      b += (double)r->npu[i].coll_busy_by_dim[d];
      e += (double)r->npu[i].coll_exposed_by_dim[d];
    }
    fprintf(f, "%s dim %d %.3f / %.3f", d ? "," : "", d, b / n / 1e6, e / n / 1e6);
  }
  fprintf(f, "\n");
  fprintf(f, "network bytes ");
  for (int d = 0; d < topo->ndims; d++) {
    human_bytes(b1, sizeof b1, (double)r->net.bytes_per_dim[d]);
    fprintf(f, "%sdim %d: %s", d ? ", " : "", d, b1);
  }
  fprintf(f, "  (%llu messages)\n", (unsigned long long)r->net.messages);
  if (r->net.pkt_events)
    fprintf(
        f,
        "RoCE network  %llu network events, %llu data packets, %llu PFC pauses (%.3f us paused), "
        "%llu ECN marks, %llu CNPs, %llu drops, peak switch buffer %.1f KiB\n",
        (unsigned long long)r->net.pkt_events, (unsigned long long)r->net.data_pkts,
        (unsigned long long)r->net.pfc_pauses, (double)r->net.paused_ps / 1e6,
        (unsigned long long)r->net.ecn_marks, (unsigned long long)r->net.cnps,
        (unsigned long long)r->net.drops, (double)r->net.max_buffer_bytes / 1024);
  if (r->net.max_inflight_pair > 1)
    fprintf(f, "in flight     up to %u messages at once from NPU %u to NPU %u%s\n",
            r->net.max_inflight_pair, r->net.max_inflight_src, r->net.max_inflight_dst,
            r->net.max_inflight_pair > 2 ? " (ring pieces caught up and share a link; see "
                                           "docs/netsim.md)"
                                         : "");
  etsim_report_links_summary(f, r);
  etsim_report__mem_summary(f, r);
  if (r->representative)
    fprintf(f,
            "reduction     %u of %u NPUs simulated, each standing for a class of %llu equivalent "
            "NPUs (symmetries: %s; --exact simulates each)\n",
            r->n_simulated, r->n_npus, (unsigned long long)r->class_size, r->reduction);
  else if (r->reduction_why[0])
    fprintf(f, "reduction     none: every NPU simulated (%s)\n", r->reduction_why);
  if (r->straggler)
    fprintf(f,
            "straggler     NPU %u (speed %g) is the slowest; at speed 1 the iteration takes "
            "%.3f us: it costs %.3f us (%.1f%%); NPU %u finishes last\n",
            r->straggler_npu, r->straggler_speed, (double)r->straggler_nominal_ps / 1e6,
            (double)r->straggler_cost_ps / 1e6,
            r->total_ps ? 100.0 * (double)r->straggler_cost_ps / (double)r->total_ps : 0.0,
            r->last_npu);
  if (r->fail_priced)
    fprintf(f,
            "failure       iteration %.3f us; without the failure(s) %.3f us: slowdown %.4fx "
            "(%+.3f us)\n",
            (double)r->total_ps / 1e6, (double)r->fail_nominal_ps / 1e6,
            r->fail_nominal_ps ? (double)r->total_ps / (double)r->fail_nominal_ps : 0.0,
            (double)(r->total_ps - r->fail_nominal_ps) / 1e6);
  if (r->dur_ns_nodes)
    fprintf(f,
            "durations     duration_ns timed %llu compute node runs instead of duration_micros, "
            "%+.3f us per NPU on average (ASTRA-sim reads duration_micros only; "
            "--duration-micros does too)\n",
            (unsigned long long)r->dur_ns_nodes,
            (double)r->dur_ns_delta_ps / (r->n_npus ? r->n_npus : 1) / 1e6);
  fprintf(f,
          "simulation    %.3f s CPU (%.3f s wall), %llu events, %.2f M events/s of CPU, peak %zu "
          "pending\n",
          r->cpu_s, r->wall_s, (unsigned long long)r->events,
          r->cpu_s > 0 ? (double)r->events / r->cpu_s / 1e6 : 0, r->max_pending);
}

static int write_json(const char *path, json_t *root, etsim_error_t *err) {
  etsim_outfile_t o;
  int rc = etsim_outfile_open(&o, path, err);
  if (rc) {
    json_decref(root);
    return rc;
  }
  if (json_dumpf(root, o.fp, JSON_COMPACT) != 0 || fputc('\n', o.fp) == EOF) {
    json_decref(root);
    etsim_outfile_abort(&o);
    return etsim_error_set(err, ETSIM_EIO, "%s: write failed", path);
  }
  json_decref(root);
  return etsim_outfile_commit(&o, err);
}

int etsim_report_json(const char *path, const etsim_sim_result_t *r, const etsim_et_set_t *set,
                      etsim_error_t *err) {
  json_t *root = etsim_report__sim_json(r, set);
  if (!root) return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
  return write_json(path, root, err);
}

/* The result document etsim_report_json writes (the HTML report reads the
 * same, from a file or from this). */
json_t *etsim_report__sim_json(const etsim_sim_result_t *r, const etsim_et_set_t *set) {
  json_t *root = json_object(), *npus = json_array();
  for (uint32_t i = 0; i < r->n_npus; i++) {
    const etsim_sim_npu_t *p = &r->npu[i];
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer(i));
    json_object_set_new(o, "finish_ns", json_integer(NS(p->finish_ps)));
    json_object_set_new(o, "compute_ns", json_integer(NS(p->gpu_comp_ps)));
    json_object_set_new(o, "cpu_ns", json_integer(NS(p->cpu_ps)));
    json_object_set_new(o, "exposed_comm_ns", json_integer(NS(p->exposed_ps)));
    json_object_set_new(o, "exposed_comm_no_compute_ns", json_integer(NS(p->exposed_true_ps)));
    json_object_set_new(o, "comm_busy_ns", json_integer(NS(p->comm_busy_ps)));
    json_object_set_new(o, "comm_bytes", json_integer((json_int_t)p->comm_bytes));
    json_object_set_new(o, "nodes", json_integer((json_int_t)p->nodes));
    if (r->n_jobs) {
      int idle = r->npu_job[i] == UINT32_MAX;
      json_object_set_new(o, "job", idle ? json_null() : json_integer(r->npu_job[i]));
      json_object_set_new(o, "rank", idle ? json_null() : json_integer(r->npu_rank[i]));
    }
    json_t *bd = json_array(), *ed = json_array();
    for (int d = 0; d < r->ndims; d++) {
      json_array_append_new(bd, json_integer(NS(p->coll_busy_by_dim[d])));
      json_array_append_new(ed, json_integer(NS(p->coll_exposed_by_dim[d])));
    }
    json_object_set_new(o, "coll_busy_ns_by_dim", bd);
    json_object_set_new(o, "coll_exposed_ns_by_dim", ed);
    if (r->mem_tracked || r->hbm_bytes > 0) {
      json_object_set_new(o, "peak_mem_bytes", json_integer((json_int_t)p->peak_mem_bytes));
      if (r->hbm_bytes > 0) {
        json_object_set_new(o, "offload_bytes", json_integer((json_int_t)p->offload_bytes));
        if (r->offload_priced)
          json_object_set_new(o, "offload_ns", json_integer(NS(p->offload_ps)));
      }
    }
    json_array_append_new(npus, o);
  }
  json_object_set_new(root, "npus", npus);
  json_object_set_new(root, "total_ns", json_integer(NS(r->total_ps)));
  json_object_set_new(root, "wall_s", json_real(r->wall_s));
  json_object_set_new(root, "cpu_s", json_real(r->cpu_s));
  json_object_set_new(root, "npus_simulated", json_integer(r->n_simulated));
  json_object_set_new(root, "reduction", json_string(r->representative ? r->reduction : ""));
  json_object_set_new(root, "reduction_why", json_string(r->reduction_why));
  json_object_set_new(root, "events", json_integer((json_int_t)r->events));
  json_object_set_new(root, "last_npu", json_integer(r->last_npu));
  if (r->n_jobs) {
    json_t *ja = json_array();
    for (uint32_t k = 0; k < r->n_jobs; k++) {
      const struct etsim_sim_job_result *j = &r->jobs[k];
      json_t *o = json_object(), *ids = json_array();
      for (uint32_t x = 0; x < j->n_npus; x++) json_array_append_new(ids, json_integer(j->npus[x]));
      json_object_set_new(o, "name", json_string(j->name));
      json_object_set_new(o, "npus", ids);
      json_object_set_new(o, "iteration_ns", json_integer(NS(j->finish_ps)));
      json_object_set_new(o, "iteration_ps", json_integer(j->finish_ps));
      json_object_set_new(o, "last_npu", json_integer(j->last_npu));
      json_object_set_new(o, "comm_bytes", json_integer((json_int_t)j->comm_bytes));
      if (j->alone_ps > 0) {
        json_object_set_new(o, "alone_ns", json_integer(NS(j->alone_ps)));
        json_object_set_new(o, "alone_ps", json_integer(j->alone_ps));
        json_object_set_new(o, "slowdown", json_real((double)j->finish_ps / (double)j->alone_ps));
      }
      json_array_append_new(ja, o);
    }
    json_object_set_new(root, "jobs", ja);
    json_object_set_new(root, "jobs_share_links", json_boolean(r->jobs_share_links));
  }
  if (r->straggler) {
    json_t *st = json_object();
    json_object_set_new(st, "npu", json_integer(r->straggler_npu));
    json_object_set_new(st, "speed", json_real(r->straggler_speed));
    json_object_set_new(st, "nominal_total_ns", json_integer(NS(r->straggler_nominal_ps)));
    json_object_set_new(st, "cost_ns", json_integer(NS(r->straggler_cost_ps)));
    json_object_set_new(root, "straggler", st);
  }
  if (r->fail_priced) {
    json_t *fo = json_object();
    json_object_set_new(fo, "total_ps", json_integer((json_int_t)r->total_ps));
    json_object_set_new(fo, "nominal_total_ps", json_integer((json_int_t)r->fail_nominal_ps));
    json_object_set_new(fo, "nominal_total_ns", json_integer(NS(r->fail_nominal_ps)));
    json_object_set_new(
        fo, "slowdown",
        json_real(r->fail_nominal_ps ? (double)r->total_ps / (double)r->fail_nominal_ps : 0.0));
    json_object_set_new(root, "failure", fo);
  }
  if (r->net.pkt_events) {
    json_t *n = json_object();
    json_object_set_new(n, "events", json_integer((json_int_t)r->net.pkt_events));
    json_object_set_new(n, "data_packets", json_integer((json_int_t)r->net.data_pkts));
    json_object_set_new(n, "pfc_pauses", json_integer((json_int_t)r->net.pfc_pauses));
    json_object_set_new(n, "paused_ns", json_integer(NS(r->net.paused_ps)));
    json_object_set_new(n, "ecn_marks", json_integer((json_int_t)r->net.ecn_marks));
    json_object_set_new(n, "cnps", json_integer((json_int_t)r->net.cnps));
    json_object_set_new(n, "drops", json_integer((json_int_t)r->net.drops));
    json_object_set_new(n, "max_switch_buffer_bytes",
                        json_integer((json_int_t)r->net.max_buffer_bytes));
    json_object_set_new(n, "max_inflight_pair", json_integer(r->net.max_inflight_pair));
    json_object_set_new(root, "network", n);
  }
  json_t *ops = json_array();
  for (int k = 0; k < ETSIM_COP_N + 2; k++) {
    if (!r->count_by_op[k]) continue;
    json_t *o = json_object();
    json_object_set_new(o, "type", json_string(etsim_sim_op_name(k)));
    json_object_set_new(o, "count", json_integer((json_int_t)r->count_by_op[k]));
    json_object_set_new(o, "bytes", json_integer((json_int_t)r->bytes_by_op[k]));
    double ex = 0;
    for (uint32_t i = 0; i < r->n_npus; i++) ex += (double)r->npu[i].exposed_by_op[k];
    json_object_set_new(o, "exposed_ns_sum", json_integer(NS(ex)));
    json_array_append_new(ops, o);
  }
  json_object_set_new(root, "by_type", ops);
  /* Per-collective records when nodes were recorded. */
  json_t *colls = json_array();
  for (size_t k = 0; k < r->n_recs; k++) {
    const etsim_sim_node_rec_t *e = &r->recs[k];
    const etsim_et_trace_t *t = set->ranks[e->npu];
    int ty = t->type[e->node];
    if (ty != ETSIM_ET_COMM_COLL_NODE && ty != ETSIM_ET_COMM_SEND_NODE &&
        ty != ETSIM_ET_COMM_RECV_NODE)
      continue;
    json_t *o = json_object();
    int64_t v = 0;
    json_object_set_new(o, "npu", json_integer(e->npu));
    json_object_set_new(o, "node", json_integer((json_int_t)t->id[e->node]));
    json_object_set_new(o, "name", json_string(t->name[e->node] ? t->name[e->node] : ""));
    if (ty == ETSIM_ET_COMM_COLL_NODE &&
        etsim_et_trace_attr_int(t, e->node, t->k_comm_type, &v) == 1)
      json_object_set_new(o, "type", json_string(etsim_coll_type_name((int)v)));
    else json_object_set_new(o, "type", json_string(etsim_et_node_type_name(ty)));
    if (etsim_et_trace_attr_int(t, e->node, t->k_comm_size, &v) == 1)
      json_object_set_new(o, "bytes", json_integer(v));
    json_object_set_new(o, "start_ns", json_integer(NS(e->start_ps)));
    json_object_set_new(o, "end_ns", json_integer(NS(e->end_ps)));
    json_t *dims = json_array();
    for (int d = 0; d < r->ndims; d++)
      if (e->dims >> d & 1u) json_array_append_new(dims, json_integer(d));
    json_object_set_new(o, "dims", dims);
    json_array_append_new(colls, o);
  }
  json_object_set_new(root, "collectives", colls);
  etsim_report__links_json(root, r);
  return root;
}

static void csv_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; s && *s; s++) {
    if (*s == '"') fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

int etsim_report_csv(const char *path, const etsim_sim_result_t *r, const etsim_et_set_t *set,
                     etsim_error_t *err) {
  etsim_outfile_t o;
  int rc = etsim_outfile_open(&o, path, err);
  if (rc) return rc;
  FILE *f = o.fp;
  fprintf(f, "npu,node_id,name,type,start_ns,end_ns,dims\n");
  for (size_t k = 0; k < r->n_recs; k++) {
    const etsim_sim_node_rec_t *e = &r->recs[k];
    const etsim_et_trace_t *t = set->ranks[e->npu];
    fprintf(f, "%u,%llu,", e->npu, (unsigned long long)t->id[e->node]);
    csv_str(f, t->name[e->node]);
    fprintf(f, ",%s,%lld,%lld,", etsim_et_node_type_name(t->type[e->node]), NS(e->start_ps),
            NS(e->end_ps));
    /* the dimensions a communication node's messages crossed: "0+2" */
    for (int d = 0, first = 1; d < 32; d++)
      if (e->dims >> d & 1u) {
        fprintf(f, "%s%d", first ? "" : "+", d);
        first = 0;
      }
    fputc('\n', f);
  }
  if (ferror(f)) {
    etsim_outfile_abort(&o);
    return etsim_error_set(err, ETSIM_EIO, "%s: write failed", path);
  }
  return etsim_outfile_commit(&o, err);
}

/* Communication tracks: one per communicator (pg_name), up to a limit;
 * tid 2 is the world communicator, point-to-point and memory. */
#define MAX_PG_TRACKS 62
typedef struct pgs {
  const char *name[MAX_PG_TRACKS];
  int n;
} pgs_t;

static int pg_track(pgs_t *g, const char *pg) {
  if (!pg || !*pg || strcmp(pg, "0") == 0) return 2;
  for (int k = 0; k < g->n; k++)
    if (strcmp(g->name[k], pg) == 0) return 10 + k;
  if (g->n == MAX_PG_TRACKS) return 9; /* "other communicators" */
  g->name[g->n] = pg;
  return 10 + g->n++;
}

static int track_of_pg(const etsim_et_set_t *set, uint32_t npu, uint32_t i, pgs_t *g) {
  const etsim_et_trace_t *t = set->ranks[npu];
  int ty = t->type[i];
  int64_t cpu = 0;
  if (t->k_is_cpu_op != UINT32_MAX) etsim_et_trace_attr_int(t, i, t->k_is_cpu_op, &cpu);
  if (ty == ETSIM_ET_COMP_NODE && !cpu) return 1;
  if (ty == ETSIM_ET_COMM_COLL_NODE)
    return pg_track(g, etsim_et_set_attr_str(set, npu, i, t->k_pg_name)); /* npu's own label */
  if (ty >= ETSIM_ET_COMM_SEND_NODE || ty == ETSIM_ET_MEM_LOAD_NODE ||
      ty == ETSIM_ET_MEM_STORE_NODE)
    return 2;
  return 3;
}

int etsim_report_timeline(const char *path, const etsim_sim_result_t *r, const etsim_et_set_t *set,
                          etsim_error_t *err) {
  /* Where each (NPU, node) record is, for dependency arrows. */
  size_t *base = NULL, total = 0;
  uint32_t *at = NULL;
  if (r->n_recs <= 4000000) {
    base = etsim_malloc((r->n_npus + 1) * sizeof *base);
    if (base) {
      for (uint32_t i = 0; i < r->n_npus; i++) {
        base[i] = total;
        total += set->ranks[i]->n_nodes;
      }
      base[r->n_npus] = total;
      at = etsim_malloc((total ? total : 1) * sizeof *at);
      if (at) {
        memset(at, 0xff, total * sizeof *at);
        for (size_t k = 0; k < r->n_recs; k++)
          at[base[r->recs[k].npu] + r->recs[k].node] = (uint32_t)k;
      }
    }
  }
  pgs_t pgs = {{0}, 0};
  for (size_t k = 0; k < r->n_recs; k++)
    (void)track_of_pg(set, r->recs[k].npu, r->recs[k].node, &pgs);
  etsim_outfile_t o;
  int rc = etsim_outfile_open(&o, path, err);
  if (rc) {
    etsim_free(base);
    etsim_free(at);
    return rc;
  }
  FILE *f = o.fp;
  fprintf(f, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
  int first = 1;
  for (uint32_t i = 0; i < r->n_npus; i++) {
    if (r->n_jobs && r->npu_job[i] == UINT32_MAX) continue; /* idle: nothing to show */
    if (r->n_jobs) {
      /* --job: processes named and sorted by job, then local rank */
      const struct etsim_sim_job_result *j = &r->jobs[r->npu_job[i]];
      char nm[200];
      snprintf(nm, sizeof nm, "job %u %s: rank %u (NPU %u)", r->npu_job[i], j->name, r->npu_rank[i],
               i);
      json_t *js = json_string(nm);
      if (!js) js = json_string("job");
      fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%u,\"args\":{\"name\":",
              first ? "" : ",\n", i);
      json_dumpf(js, f, JSON_ENCODE_ANY);
      json_decref(js);
      fprintf(f,
              "}},\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%u,\"args\":{"
              "\"sort_index\":%llu}}",
              i, (unsigned long long)r->npu_job[i] * r->n_npus + r->npu_rank[i]);
    } else {
      fprintf(f,
              "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%u,\"args\":{\"name\":"
              "\"NPU %u\"}}",
              first ? "" : ",\n", i, i);
    }
    first = 0;
    fprintf(f,
            ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%u,\"tid\":1,\"args\":{\"name\":"
            "\"compute\"}}",
            i);
    fprintf(f,
            ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%u,\"tid\":2,\"args\":{\"name\":"
            "\"communication (world, p2p, memory)\"}}",
            i);
    for (int k = 0; k < pgs.n; k++) {
      fprintf(f,
              ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%u,\"tid\":%d,\"args\":{\"name\":",
              i, 10 + k);
      json_t *nm = json_pack("s+", "communicator ", pgs.name[k]);
      if (nm) json_dumpf(nm, f, JSON_ENCODE_ANY);
      else fputs("\"communicator\"", f);
      json_decref(nm);
      fputs("}}", f);
    }
    if (pgs.n == MAX_PG_TRACKS)
      fprintf(f,
              ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%u,\"tid\":9,\"args\":{\"name\":"
              "\"other communicators\"}}",
              i);
    fprintf(f,
            ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%u,\"tid\":3,\"args\":{\"name\":"
            "\"cpu / other\"}}",
            i);
  }
  for (size_t k = 0; k < r->n_recs; k++) {
    const etsim_sim_node_rec_t *e = &r->recs[k];
    const etsim_et_trace_t *t = set->ranks[e->npu];
    int ty = t->type[e->node];
    int tid = track_of_pg(set, e->npu, e->node, &pgs);
    fprintf(f, ",\n{\"ph\":\"X\",\"pid\":%u,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"name\":", e->npu,
            tid, (double)e->start_ps / 1e6, (double)(e->end_ps - e->start_ps) / 1e6);
    json_t *nm = json_string(t->name[e->node] ? t->name[e->node] : "");
    if (!nm) nm = json_string("(invalid UTF-8 name)");
    json_dumpf(nm, f, JSON_ENCODE_ANY);
    json_decref(nm);
    fprintf(f, ",\"args\":{\"node\":%llu,\"type\":\"%s\"}}", (unsigned long long)t->id[e->node],
            etsim_et_node_type_name(ty));
    /* A flow arrow from the parent that released this node (the one that
     * finished last, at this node's start) to the node. */
    if (at) {
      for (uint32_t d = t->data_off[e->node]; d < t->data_off[e->node + 1]; d++) {
        uint32_t par = t->data_par[d];
        if (par & ETSIM_ET_DANGLING) continue;
        uint32_t pk = at[base[e->npu] + par];
        if (pk == UINT32_MAX || r->recs[pk].end_ps != e->start_ps) continue;
        fprintf(f,
                ",\n{\"ph\":\"s\",\"id\":%zu,\"pid\":%u,\"tid\":%d,\"ts\":%.3f,\"name\":\"dep\","
                "\"cat\":\"dep\"}",
                k, e->npu, track_of_pg(set, e->npu, par, &pgs), (double)r->recs[pk].end_ps / 1e6);
        fprintf(f,
                ",\n{\"ph\":\"f\",\"bp\":\"e\",\"id\":%zu,\"pid\":%u,\"tid\":%d,\"ts\":%.3f,"
                "\"name\":\"dep\",\"cat\":\"dep\"}",
                k, e->npu, tid, (double)e->start_ps / 1e6);
        break;
      }
    }
  }
  /* the memory counter track: live tensor bytes per NPU, in GiB */
  for (size_t k = 0; k < r->n_mem; k++)
    fprintf(f,
            ",\n{\"ph\":\"C\",\"pid\":%u,\"ts\":%.3f,\"name\":\"memory\",\"args\":{\"GiB\":%.6f}}",
            r->mem[k].npu, (double)r->mem[k].t_ps / 1e6,
            (double)r->mem[k].bytes / (1024.0 * 1024.0 * 1024.0));
  fprintf(f, "\n]}\n");
  etsim_free(base);
  etsim_free(at);
  if (ferror(f)) {
    etsim_outfile_abort(&o);
    return etsim_error_set(err, ETSIM_EIO, "%s: write failed", path);
  }
  return etsim_outfile_commit(&o, err);
}
