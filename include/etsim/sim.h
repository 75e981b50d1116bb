/*
 * etsim/sim.h — the workload layer and the simulation driver.
 *
 * Runs a rank set of Chakra traces on a modelled platform: per NPU, nodes
 * issue when all their data and control parents have finished and their
 * resource is free (ASTRA-sim's rule: one CPU op, one GPU compute op, one
 * GPU communication op in flight; receives exempt; optionally any number of
 * communication ops).  COMP nodes take their trace duration or a roofline
 * time; COMM_COLL nodes run through the system layer (coll.h); COMM_SEND and
 * COMM_RECV match by (source, destination, size, tag); MEM_LOAD/MEM_STORE go
 * to the remote-memory model; METADATA and INVALID nodes finish at once.
 *
 * Ranks that share a trace (a manifest, one file for all, or per-rank
 * files with identical content: et.h) share its memory; each NPU keeps
 * only a dependency counter per node.
 *
 * Two paths give the same picoseconds on every NPU (docs/sim.md, "Speed"):
 *  - exact (opts.exact, and whenever no reduction applies): every NPU is
 *    simulated, message by message, on one event queue (des.h: FIFO
 *    buckets per distinct time, so equal-time events run in push order);
 *  - classes: src/sim/reduce.c looks for shifts of NPUs (along network
 *    dimensions and families of communicator groups) that map every NPU's
 *    trace, communicators, peers and message costs onto another's, and
 *    simulates one representative per class (coll.h:
 *    etsim_coll_set_symmetry maps messages to representatives).  The run
 *    checks itself as it goes (simultaneous events from different NPUs
 *    that may not commute, costs of the pairs used) and falls back to the
 *    exact path when the check fails.  The result says which path ran
 *    (representative, n_simulated, class_size, reduction / reduction_why).
 *
 * For extensions that make NPUs differ (stragglers, failures, several jobs
 * on one network): anything that changes one NPU's timing or behaviour but
 * not its class's breaks the equivalence.  Such a feature must either be
 * visible to etsim_sim__find_symmetry (src/sim/reduce.c: refuse, with the
 * reason in `why`, or keep only the shifts that preserve it) or set
 * opts.exact; results copied from a representative (collect() in sim.c)
 * are only valid for NPUs its class really stands for.
 */
#ifndef ETSIM_SIM_H
#define ETSIM_SIM_H

#include "etsim/base.h"
#include "etsim/coll.h"
#include "etsim/et.h"
#include "etsim/net.h"
#include "etsim/topo.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  ETSIM_MEM_NONE = 0, /* NO_MEMORY_EXPANSION */
  ETSIM_MEM_PER_NODE, /* PER_NODE_MEMORY_EXPANSION: one server per node */
  ETSIM_MEM_PER_NPU,  /* PER_NPU_MEMORY_EXPANSION: one server per NPU */
  ETSIM_MEM_POOL,     /* MEMORY_POOL: one server for everyone */
  /* HIERARCHICAL_MEMORY_POOL (etsim's extension, after ASTRA-sim 2.0's
   * paper): an in-node pool per node behind the node's switch, and one
   * out-node pool behind the out-node switch; with in-switch reduction the
   * switches reduce the NPUs' reducing stores on their way to the pool */
  ETSIM_MEM_HIER_POOL
} etsim_mem_type_t;

typedef struct etsim_mem_config {
  etsim_mem_type_t type;
  uint32_t num_nodes, npus_per_node;
  double latency_ns;
  double bw_bytes_per_ns; /* remote-mem-bw */
  /* HIERARCHICAL_MEMORY_POOL (bytes/ns and ns, as remote-mem-*; the in-node
   * ones default to remote-mem-latency and remote-mem-bw) */
  double in_latency_ns, in_bw_bytes_per_ns;
  double out_latency_ns, out_bw_bytes_per_ns;
  int in_switch_reduction;
  double reduction_bw_bytes_per_ns; /* 0: the switches reduce at no cost */
} etsim_mem_config_t;

/* ASTRA-sim's remote-memory JSON. */
int etsim_mem_config_load(const char *path, etsim_mem_config_t *m, etsim_error_t *err);

/* Communicator groups: ASTRA-sim's JSON {"<id>": [ranks...]}. */
typedef struct etsim_comm_groups {
  size_t n;
  etsim_comm_t *g; /* members arrays owned */
} etsim_comm_groups_t;

int etsim_comm_groups_load(const char *path, uint32_t n_npus, etsim_comm_groups_t *out,
                           etsim_error_t *err);
void etsim_comm_groups_free(etsim_comm_groups_t *g);

/* Where a run is, for a progress line (etsim_sim_opts_t.progress). */
typedef struct etsim_sim_progress {
  int64_t now_ps;     /* simulated time */
  uint32_t npus_done; /* NPUs finished (classes count all their NPUs) */
  uint32_t npus;      /* NPUs in the network */
  double frac;        /* nodes completed / nodes to complete, over simulated NPUs */
  double elapsed_s;   /* wall time since the run started */
  uint64_t events;
} etsim_sim_progress_t;

typedef struct etsim_sim_opts {
  const char *backend;               /* "analytical" (default) or "congestion" */
  int multi_comm;                    /* lift the one-communication-op rule */
  int record_nodes;                  /* keep start/end of every node (CSV, timeline) */
  int exact;                         /* simulate every NPU even when classes of equivalent
                                        NPUs could be simulated once each */
  int duration_micros;               /* read only duration_micros (as ASTRA-sim), not the
                                        finer duration_ns etsim's generators also write */
  const etsim_mem_config_t *memory;  /* NULL: none */
  const etsim_comm_groups_t *groups; /* NULL: none */
  const etsim_net_opts_t *net;       /* flow/packet backend options, NULL: defaults */
  int link_stats;                    /* keep bytes and busy time per link (analytical,
                                        congestion): etsim_sim_result_t.links */
  /* Memory (docs/sim.md, "Memory"): the NPUs' capacity in bytes (0: none);
   * offload: add the price of moving what exceeds it to remote memory
   * (the `memory` model) and back to each NPU's iteration */
  double hbm_bytes;
  int offload;
  unsigned deps; /* edges enforced: ETSIM_ET_DEPS_DATA | ETSIM_ET_DEPS_CTRL (etcheck.h);
                    0 means both, as ASTRA-sim */
  /* Called about twice a second of wall time during long runs (NULL: never). */
  void (*progress)(void *user, const etsim_sim_progress_t *p);
  void *progress_user;
  /* What-if (docs/sim.md, "What-if"): compute times are multiplied by
   * compute_scale and divided by the NPU's npu_speed[id] (NULL: all 1);
   * comm_scale multiplies every collective and point-to-point comm_size
   * (0 means 1 for both scales).  With speeds that differ, the run is
   * repeated with the slowest NPU at speed 1 to price it (straggler_*). */
  double compute_scale, comm_scale;
  const double *npu_speed;
  /* What-if: NPU fail_npu fails at fail_ps (fail_set): from then on it
   * computes, sends and receives nothing, and its links carry nothing new.
   * A run that cannot finish then returns a result with `failed` set. */
  int fail_set;
  uint32_t fail_npu;
  int64_t fail_ps;
  /* Several jobs (etsim_sim_run_jobs): also run each job alone on its
   * placement, for its slowdown (not on the analytical backend, where the
   * shared run already is every job alone). */
  int job_alone;
} etsim_sim_opts_t;

/* --fail: "npu:N@T" with T a time in ns, or with a unit: 1500us, 1.5ms, 2s.
 * "link:..." is refused here (these backends have no cables; the flow and
 * packet ones take etsim_sim_fail_link_parse).  Errors name `opt` and the
 * part. */
int etsim_sim_fail_parse(const char *spec, const char *opt, uint32_t n_npus, uint32_t *npu,
                         int64_t *t_ps, etsim_error_t *err);

/* --fail on the flow and packet backends: "link:A-B@T", the cable(s)
 * between nodes A and B of the topology file down from time T on (as
 * etsim_sim_fail_parse reads it; 0: before routes are built).  Fills *out
 * (opt, key and t_ps set).  Errors name `opt` and the part. */
int etsim_sim_fail_link_parse(const char *spec, const char *opt, etsim_net_link_whatif_t *out,
                              etsim_error_t *err);

/* --link-degrade on the flow and packet backends: a JSON object keyed by
 * cables of the topology file, {"link:3-17": 0.5} or {"link:3-17": {"bw":
 * 0.5, "latency": 2}}, inline or a file.  *out (etsim_free) gets one entry
 * per key; whether the cable exists is checked when the topology is
 * loaded.  Errors name `opt`, the file and the key. */
int etsim_sim_link_whatif_parse(const char *spec, const char *opt, etsim_net_link_whatif_t **out,
                                size_t *n_out, etsim_error_t *err);

/* --npu-speed: a JSON object {"17": 0.7, "32-47": 0.9} (NPU ids or
 * inclusive ranges; others 1), inline when spec starts with '{' or else
 * the path of a file holding one, or "lognormal:sigma=S[,mu=M][,seed=N]"
 * (docs/sim.md gives the generator).  Fills out[0..n).  Errors name
 * `opt`, the file and the offending key. */
int etsim_sim_speed_parse(const char *spec, const char *opt, uint32_t n, double *out,
                          etsim_error_t *err);

/* --link-degrade on the analytical and congestion backends: a JSON object
 * (inline or a file as above) keyed by dimension, {"1": 0.5} (bandwidth x
 * 0.5) or {"1": {"bw": 0.5, "latency": 2}}, applied to *topo; or by NPUs
 * of a dimension, "D:N" or "D:A-B" (also spelled "dimD:npuN",
 * "dimD:npuA-B"): NPU N's links in dimension D (net.h,
 * etsim_net_npu_links_t), relative to the dimension's, each NPU and
 * dimension once.  Those fill *out (pass it as etsim_net_opts_t.npu_links;
 * free with etsim_sim_npu_links_free), left {NULL, NULL} when the spec
 * names no NPU.  out NULL: such keys are refused.  Cables of a topology
 * file are etsim_sim_link_whatif_parse's.  Errors name `opt`, the file
 * and the key. */
int etsim_sim_link_degrade_npus(const char *spec, const char *opt, etsim_topo_t *topo,
                                etsim_net_npu_links_t *out, etsim_error_t *err);
/* The same, dimensions only (out NULL). */
int etsim_sim_link_degrade(const char *spec, const char *opt, etsim_topo_t *topo,
                           etsim_error_t *err);
void etsim_sim_npu_links_free(etsim_net_npu_links_t *l);

/* ------------------------------------------------- several jobs, one fabric */

/* One job of a multi-job run (docs/sim.md, "Several jobs"): its own rank
 * set and communicators, its local rank r running on NPU npus[r].  Sets
 * must be loaded without ETSIM_ET_SET_SHARE_LABELS (a job's peers and
 * communicators are translated from its local ranks to NPU ids). */
typedef struct etsim_sim_job {
  const char *name;                  /* for reports */
  const etsim_et_set_t *set;         /* borrowed */
  const etsim_comm_groups_t *groups; /* members in local ranks, NULL: none */
  const uint32_t *npus;              /* set->n_ranks distinct NPU ids */
} etsim_sim_job_t;

/* A job's placement, PLACE in `--job PREFIX@PLACE`: a list of NPU ids and
 * inclusive ranges ("0,2,4-7", local rank r on the r-th), or a packing
 * policy over the NPUs no job holds yet (taken[] nonzero): "contiguous"
 * (the first run of n free NPUs in id order), "strided:S" (o, o+S, ...,
 * the lowest free such o) or "random[:seed=N]" (n free NPUs drawn with
 * splitmix64 from seed N, default 1; ranks in ascending NPU order).  Fills
 * out[0..n) and marks them taken.  Errors name `opt` and the part. */
int etsim_sim_job_place(const char *place, const char *opt, uint32_t n, uint32_t n_npus,
                        uint8_t *taken, uint32_t *out, etsim_error_t *err);
/* Whether place is an explicit list (placed before any policy). */
int etsim_sim_job_place_is_list(const char *place);

/* A change of an NPU's live tensor bytes (the timeline's memory track). */
typedef struct etsim_sim_mem_sample {
  uint32_t npu;
  int64_t t_ps;
  uint64_t bytes;
} etsim_sim_mem_sample_t;

typedef struct etsim_sim_npu {
  int64_t finish_ps;
  int64_t gpu_comp_ps; /* sum of GPU compute node times (ASTRA-sim's tics) */
  int64_t cpu_ps;
  int64_t comm_busy_ps;    /* union of intervals with communication in flight */
  int64_t exposed_ps;      /* finish - gpu_comp (ASTRA-sim's definition) */
  int64_t exposed_true_ps; /* communication time not overlapped by GPU compute */
  uint64_t comm_bytes;     /* collective + send payload issued */
  uint64_t nodes;
  int64_t exposed_by_op[ETSIM_COP_N + 2];           /* + point-to-point, + memory */
  int64_t coll_busy_by_dim[ETSIM_TOPO_MAX_DIMS];    /* collective chunks running */
  int64_t coll_exposed_by_dim[ETSIM_TOPO_MAX_DIMS]; /* ... with no compute */
  uint64_t peak_mem_bytes; /* most live tensor bytes at once (when tracked) */
  uint64_t offload_bytes;  /* of that, over hbm_bytes */
  int64_t offload_ps;      /* moving them out and back (queue included) */
} etsim_sim_npu_t;

typedef struct etsim_sim_node_rec {
  uint32_t npu, node; /* node index in the NPU's trace */
  int64_t start_ps, end_ps;
  uint32_t dims; /* communication: network dimensions its messages crossed (bit d) */
} etsim_sim_node_rec_t;

typedef struct etsim_sim_result {
  uint32_t n_npus;
  int ndims; /* network dimensions */
  etsim_sim_npu_t *npu;
  int64_t total_ps; /* max finish */
  uint64_t events;
  size_t max_pending;
  double wall_s;
  double cpu_s;            /* CPU time of the run (this process's user + system) */
  int representative;      /* classes of equivalent NPUs were simulated once each */
  uint32_t n_simulated;    /* NPUs simulated (n_npus without a reduction) */
  uint64_t class_size;     /* NPUs per class (1 without) */
  char reduction[240];     /* the symmetries used, when representative */
  char reduction_why[240]; /* no reduction: why not (for the summary) */
  uint64_t dur_ns_nodes;   /* COMP node runs whose duration_ns differs from duration_micros
                              x 1000 (used unless duration_micros), over all NPUs */
  int64_t dur_ns_delta_ps; /* total time those differences add (sum over NPUs) */
  etsim_net_stats_t net;
  etsim_coll_stats_t coll;
  uint64_t bytes_by_op[ETSIM_COP_N + 2];
  uint64_t count_by_op[ETSIM_COP_N + 2];
  etsim_sim_node_rec_t *recs; /* record_nodes: in completion order (with classes:
                                 grouped by NPU, each in its representative's order) */
  size_t n_recs;
  /* link_stats: per link (etsim_net_link_name(links_backend, &topo, k)),
   * owned; with classes, every NPU's entries are its representative's */
  etsim_net_links_t links;
  const char *links_backend;
  etsim_topo_t topo;
  /* memory: tracked when a trace names tensors ("inputs"/"outputs") */
  int mem_tracked;
  double hbm_bytes;            /* the capacity asked for (0: none) */
  int offload_priced;          /* offload_ps holds a price (a remote memory was given) */
  int offload_applied;         /* ... and it was added to the NPUs' times */
  etsim_sim_mem_sample_t *mem; /* record_nodes: every change, in time order per NPU */
  size_t n_mem;
  /* What-if: NPUs ran at different speeds (opts.npu_speed).  The slowest
   * NPU (lowest speed, lowest id on ties), its speed, the iteration with it
   * at speed 1 (the rest unchanged) and the difference: what it costs. */
  int straggler;
  uint32_t straggler_npu;
  double straggler_speed;
  int64_t straggler_nominal_ps, straggler_cost_ps;
  uint32_t last_npu; /* the NPU that finished last (lowest id on ties) */
  /* What-if failure (opts.fail_set): the run could not finish; `failure`
   * says which NPU failed when, which collectives are blocked and which NPUs
   * wait.  NPUs that finished have their times; the others finish_ps 0.
   * fail_after_end: the failure came after the last NPU finished. */
  int failed, fail_after_end;
  uint32_t n_blocked; /* NPUs that could not finish */
  char failure[1400];
  /* A run with failures that finished (cables down, on flow or packet):
   * the iteration without any failure (fail_priced: a second run). */
  int fail_priced;
  int64_t fail_nominal_ps;
  /* Several jobs (etsim_sim_run_jobs): per job its iteration (every job
   * starts at 0; the last finish among its NPUs), and, with opts.job_alone
   * on a backend where jobs share links, the same job run alone on its
   * placement.  npu_job[i] is NPU i's job (UINT32_MAX: idle), npu_rank[i]
   * its local rank there. */
  uint32_t n_jobs;
  struct etsim_sim_job_result {
    char name[160];
    uint32_t n_npus;
    uint32_t *npus; /* owned: local rank -> NPU */
    int64_t finish_ps;
    uint32_t last_npu;
    int64_t alone_ps; /* -1: not run */
    uint64_t comm_bytes;
  } * jobs;
  uint32_t *npu_job, *npu_rank;
  int jobs_share_links; /* 0 on the analytical backend: jobs cannot meet */
} etsim_sim_result_t;

/* Run the set on the platform.  On success *out is owned by the caller
 * (etsim_sim_result_free).  Errors: bad attribute values name the file and
 * node id; a rank count that disagrees with the network, a collective the
 * model cannot run, or a deadlock (which NPUs wait on which nodes) are
 * ETSIM_EINVAL / ETSIM_EUNSUPPORTED / ETSIM_EDEADLOCK with a message. */
int etsim_sim_run(const etsim_et_set_t *set, const etsim_topo_t *topo,
                  const etsim_sys_config_t *sys, const etsim_sim_opts_t *opts,
                  etsim_sim_result_t **out, etsim_error_t *err);
void etsim_sim_result_free(etsim_sim_result_t *r);
/* Several jobs on one network: every job's ranks run on its NPUs, each
 * job's world collectives on a communicator of its NPUs (in local-rank
 * order), its groups and peers translated; NPUs of no job idle.  Messages
 * of all jobs share the network's links on the congestion, flow and packet
 * backends; on the analytical one they cannot meet.  Always simulates
 * every NPU (the classes of equivalent NPUs are not looked for).  Errors:
 * overlapping placements, NPUs outside the network, a placement whose size
 * differs from its job's ranks (naming the job), and those of
 * etsim_sim_run. */
/* The jobs' ranks as one set over the network's n_npus NPUs, as
 * etsim_sim_run_jobs runs them (NPUs of no job have a trace of no nodes),
 * for the reports, which take a set (etsim_report_json, ..._timeline).
 * Traces are borrowed from the jobs' sets, which must outlive *out; free
 * it with etsim_sim_jobs_view_free (never etsim_et_set_free). */
int etsim_sim_jobs_view(const etsim_sim_job_t *jobs, uint32_t n_jobs, uint32_t n_npus,
                        etsim_et_set_t **out, etsim_error_t *err);
void etsim_sim_jobs_view_free(etsim_et_set_t *view);
int etsim_sim_run_jobs(const etsim_sim_job_t *jobs, uint32_t n_jobs, const etsim_topo_t *topo,
                       const etsim_sys_config_t *sys, const etsim_sim_opts_t *opts,
                       etsim_sim_result_t **out, etsim_error_t *err);

/* Names for exposed_by_op / bytes_by_op slots. */
const char *etsim_sim_op_name(int slot);

#ifdef __cplusplus
}
#endif
#endif
