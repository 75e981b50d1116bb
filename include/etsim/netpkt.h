/*
 * etsim/netpkt.h — the packet-level RoCE network (and its flow-level twin).
 *
 * A network of hosts (RDMA NICs) and switches joined by full-duplex links.
 * Messages ("flows", one queue pair each) are cut into packets that cross
 * switches with a Broadcom-style shared buffer, priority flow control (PFC
 * pause/resume per ingress port and priority), ECN marking at dequeue
 * (RED-style Kmin/Kmax/Pmax) and in-band telemetry, under one of the
 * congestion-control schemes none (PFC only), DCQCN, DCTCP, TIMELY or HPCC.
 * The model follows the ns-3 RDMA simulator that ASTRA-sim uses (HPCC
 * repository); docs/netsim.md lists what is modelled and where it differs.
 *
 * The network owns its event queue (int64 picoseconds, ties broken by
 * insertion order), so it runs on its own (`etsim netsim`) or under a
 * caller's clock:
 *
 *     etsim_netpkt_topo_t topo;            // or etsim_netpkt_topo_load()
 *     etsim_netpkt_cfg_t cfg;
 *     etsim_netpkt_cfg_default(&cfg);      // then _cfg_set()/_cfg_load()
 *     etsim_netpkt_t *net;
 *     etsim_netpkt_create(&net, &topo, &cfg, &err);
 *     etsim_netpkt_send(net, src, dst, bytes, start_ps, &msg, &id, &err);
 *     while (etsim_netpkt_next_time(net) <= horizon_ps)
 *       etsim_netpkt_run_until(net, horizon_ps, &err);   // callbacks fire
 *     etsim_netpkt_free(net);
 *
 * Completion callbacks run inside run_until; they may call
 * etsim_netpkt_send (with a start time >= the current time).  Nothing here
 * prints: result lines go to FILE streams the caller passes in.
 *
 * The flow level (etsim_netflow_*) has the same calls; code that runs
 * either drives it through the level table (etsim_netpkt_level_t).
 */
#ifndef ETSIM_NETPKT_H
#define ETSIM_NETPKT_H

#include "etsim/base.h"

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- topology */

/* One full-duplex link between nodes a and b. */
typedef struct etsim_netpkt_link {
  uint32_t a, b;
  uint64_t rate_bps; /* each direction */
  int64_t delay_ps;  /* propagation, one way */
  double error_rate; /* packet loss probability at each receiver, [0, 1) */
  uint32_t line;     /* line in the topology file (0 when built in code) */
} etsim_netpkt_link_t;

/*
 * A graph of hosts and switches.  Node ids are 0..n_nodes-1; a node is a
 * host unless is_switch[id].  A node's ports are numbered 1, 2, ... in the
 * order its links appear (the ns-3 interface index).  Owned arrays.
 */
typedef struct etsim_netpkt_topo {
  uint32_t n_nodes;
  uint8_t *is_switch; /* n_nodes entries */
  etsim_netpkt_link_t *links;
  size_t n_links, cap_links;
  char *name; /* file name for messages, may be NULL */
} etsim_netpkt_topo_t;

/* An empty graph of n_nodes hosts.  0 or ETSIM_ENOMEM. */
int etsim_netpkt_topo_init(etsim_netpkt_topo_t *t, uint32_t n_nodes);
void etsim_netpkt_topo_free(etsim_netpkt_topo_t *t);
/* Add a link; 0, ETSIM_EINVAL (bad node, a == b, rate 0) or ETSIM_ENOMEM. */
int etsim_netpkt_topo_add_link(etsim_netpkt_topo_t *t, uint32_t a, uint32_t b, uint64_t rate_bps,
                               int64_t delay_ps, double error_rate, etsim_error_t *err);
/*
 * Read the ns-3 RDMA topology format: "nodes switches links", then the
 * switch ids, then one "src dst rate delay error_rate" line per link
 * (e.g. "0 9 100Gbps 0.001ms 0").  Errors name FILE:LINE.  The text form
 * parses `text` with `name` used in messages.
 */
int etsim_netpkt_topo_load(etsim_netpkt_topo_t *t, const char *path, etsim_error_t *err);
int etsim_netpkt_topo_parse(etsim_netpkt_topo_t *t, const char *text, const char *name,
                            etsim_error_t *err);

/* Generators.  Node ids: hosts first (0..), then switches.
 * star: n_hosts on one switch.
 * clos2: `leaves` leaf switches with hosts_per_leaf hosts each and `spines`
 *   spine switches, every leaf joined to every spine (oversubscription =
 *   hosts_per_leaf * host_bps / (spines * fabric_bps)). */
int etsim_netpkt_topo_star(etsim_netpkt_topo_t *t, uint32_t n_hosts, uint64_t rate_bps,
                           int64_t delay_ps);
int etsim_netpkt_topo_clos2(etsim_netpkt_topo_t *t, uint32_t leaves, uint32_t hosts_per_leaf,
                            uint32_t spines, uint64_t host_bps, uint64_t fabric_bps,
                            int64_t delay_ps);

/* fattree: k-ary three-tier fat-tree (k even): k pods of k/2 edge and k/2
 *   aggregation switches, (k/2)^2 cores; hosts_per_edge hosts on each edge
 *   switch (k/2 gives 1:1, more oversubscribes the edge).  Ids: hosts, then
 *   edges (pod-major), aggregations, cores.
 * rail: `nodes` servers of `gpus` NPUs each.  NPU g of every server links
 *   to rail switch g (nic_bps); each server's NPUs share one NVLink-style
 *   scale-up switch (nvlink_bps); `spines` switches join all rails
 *   (fabric_bps, 0 spines: no cross-rail path).  Ids: NPUs (server-major),
 *   then rail switches, scale-up switches, spines. */
int etsim_netpkt_topo_fattree(etsim_netpkt_topo_t *t, uint32_t k, uint32_t hosts_per_edge,
                              uint64_t rate_bps, int64_t delay_ps);
int etsim_netpkt_topo_rail(etsim_netpkt_topo_t *t, uint32_t nodes, uint32_t gpus, uint32_t spines,
                           uint64_t nic_bps, uint64_t nvlink_bps, uint64_t fabric_bps,
                           int64_t delay_ps);

/* A generator spec names a fabric in one word, wherever a topology file
 * is read (etsim_netpkt_topo_load, TOPOLOGY_FILE, --net-topology):
 *   star:hosts=N
 *   clos2:leaves=L,hosts=H,spines=S[,fabric=RATE]   (H hosts per leaf)
 *   fattree:k=K[,hosts=H]                           (H per edge, default K/2)
 *   rail:nodes=N,gpus=G[,spines=S][,nic=RATE][,nvlink=RATE][,fabric=RATE]
 * each with [,rate=RATE][,delay=TIME] (default 100Gbps and 1us; rail's nic
 * defaults to rate, nvlink to 9x nic, fabric to rate, spines to 0).
 * Unknown keys and missing required ones are errors naming the spec. */
int etsim_netpkt_topo_is_spec(const char *s);
int etsim_netpkt_topo_spec(etsim_netpkt_topo_t *t, const char *spec, etsim_error_t *err);
/* Write `t` in the ns-3 topology format (through a temporary file). */
int etsim_netpkt_topo_write(const etsim_netpkt_topo_t *t, const char *path, etsim_error_t *err);

/* Parse "100Gbps", "50Mb/s", "25000000000" into bits/s; 0 or ETSIM_EINVAL. */
int etsim_netpkt_parse_rate(const char *s, uint64_t *out_bps);
/* Parse "0.001ms", "1us", "500ns", "2" (seconds) into ps; 0 or EINVAL. */
int etsim_netpkt_parse_time(const char *s, int64_t *out_ps);

/* ----------------------------------------------------------- configuration */

enum {
  ETSIM_NETPKT_CC_NONE = 0,   /* PFC only (CC_MODE 0 or 12) */
  ETSIM_NETPKT_CC_DCQCN = 1,  /* CC_MODE 1, Mellanox timer variant */
  ETSIM_NETPKT_CC_HPCC = 3,   /* CC_MODE 3, rate form */
  ETSIM_NETPKT_CC_TIMELY = 7, /* CC_MODE 7 */
  ETSIM_NETPKT_CC_DCTCP = 8   /* CC_MODE 8, rate form */
};

#define ETSIM_NETPKT_MAX_ECN_RATES 16
#define ETSIM_NETPKT_PATH_MAX 1024

/*
 * Every parameter, under the ns-3 config key it comes from.  Times are in
 * the units the key uses (µs for DCQCN timers, ns for the monitor window),
 * rates in bits/s.  etsim_netpkt_cfg_default gives the sample config.txt
 * that ASTRA-sim ships, with CC_MODE 0.
 */
typedef struct etsim_netpkt_cfg {
  int enable_qcn;               /* ENABLE_QCN: ECN marking at switches */
  int use_dynamic_pfc;          /* USE_DYNAMIC_PFC_THRESHOLD (always dynamic) */
  uint32_t payload_bytes;       /* PACKET_PAYLOAD_SIZE */
  int cc_mode;                  /* CC_MODE */
  double alpha_resume_us;       /* ALPHA_RESUME_INTERVAL */
  double rate_decrease_us;      /* RATE_DECREASE_INTERVAL */
  int clamp_target_rate;        /* CLAMP_TARGET_RATE */
  double rp_timer_us;           /* RP_TIMER */
  double ewma_gain;             /* EWMA_GAIN (DCQCN and DCTCP g) */
  uint32_t fast_recovery_times; /* FAST_RECOVERY_TIMES */
  uint64_t rate_ai_bps;         /* RATE_AI */
  uint64_t rate_hai_bps;        /* RATE_HAI */
  uint64_t min_rate_bps;        /* MIN_RATE */
  uint64_t dctcp_rate_ai_bps;   /* DCTCP_RATE_AI */
  double error_rate_per_link;   /* ERROR_RATE_PER_LINK (links with 0) */
  uint32_t l2_chunk_size;       /* L2_CHUNK_SIZE */
  uint32_t l2_ack_interval;     /* L2_ACK_INTERVAL */
  int l2_back_to_zero;          /* L2_BACK_TO_ZERO */
  int has_win;                  /* HAS_WIN */
  int global_t;                 /* GLOBAL_T */
  int var_win;                  /* VAR_WIN */
  int fast_react;               /* FAST_REACT */
  double u_target;              /* U_TARGET */
  uint32_t mi_thresh;           /* MI_THRESH */
  uint32_t int_multi;           /* INT_MULTI (accepted; INT is exact here) */
  int multi_rate;               /* MULTI_RATE (only 0) */
  int sample_feedback;          /* SAMPLE_FEEDBACK */
  int rate_bound;               /* RATE_BOUND */
  int ack_high_prio;            /* ACK_HIGH_PRIO: NICs only (pause 0, not 3, blocks ACKs) */
  uint32_t n_ecn;               /* KMIN/KMAX/PMAX_MAP entries */
  uint64_t ecn_rate_bps[ETSIM_NETPKT_MAX_ECN_RATES];
  uint32_t kmin_kb[ETSIM_NETPKT_MAX_ECN_RATES];
  uint32_t kmax_kb[ETSIM_NETPKT_MAX_ECN_RATES];
  double pmax[ETSIM_NETPKT_MAX_ECN_RATES];
  uint32_t buffer_mb;        /* BUFFER_SIZE (MiB per switch) */
  int64_t qlen_mon_start_ns; /* QLEN_MON_START */
  int64_t qlen_mon_end_ns;   /* QLEN_MON_END */
  int64_t stop_ps; /* SIMULATOR_STOP_TIME (s in the file): events before it run (docs/netsim.md) */
  /* TIMELY class defaults (not ns-3 config keys; etsim extensions). */
  double timely_alpha, timely_beta;
  int64_t timely_tlow_ns, timely_thigh_ns, timely_minrtt_ns;
  double nack_interval_us; /* receiver NACK suppression (500 µs) */
  /* etsim extensions */
  uint64_t seed;            /* SEED: ECN and loss draws */
  int64_t tx_round_ps;      /* TX_ROUND_PS: round serialisation (ns-3: 1000) */
  int64_t stall_ps;         /* STALL_TIMEOUT_US: no progress -> report */
  int64_t qlen_interval_ns; /* QLEN_MON_INTERVAL (100 ns) */
  int flow_ack_load;        /* FLOW_ACK_LOAD: flow level charges ACK bytes */
  /* not a config key: hosts without a route between them are accepted and
   * a message between them is held, never delivered (etsim sim's failures) */
  int allow_disconnected;
  /* not a config key: a message's statistics are dropped once it is done
   * and its record taken by a later message (etsim_netpkt_msg_stat then
   * gives ETSIM_ENOTFOUND), so memory follows the messages in flight, not
   * all messages sent (etsim sim without --net-timeline) */
  int forget_done;
  /* files (FILE keys), resolved by etsim_netpkt_cfg_load */
  char topology_file[ETSIM_NETPKT_PATH_MAX];
  char flow_file[ETSIM_NETPKT_PATH_MAX];
  char fct_file[ETSIM_NETPKT_PATH_MAX];
  char pfc_file[ETSIM_NETPKT_PATH_MAX];
  char qlen_file[ETSIM_NETPKT_PATH_MAX];
} etsim_netpkt_cfg_t;

void etsim_netpkt_cfg_default(etsim_netpkt_cfg_t *c);
/* Set one key from the rest of its line ("100Gbps", "3 25000000000 100 ...").
 * 0, or ETSIM_EINVAL/ENOTFOUND/EUNSUPPORTED with a message naming the key. */
int etsim_netpkt_cfg_set(etsim_netpkt_cfg_t *c, const char *key, const char *value,
                         etsim_error_t *err);
/* Read a "KEY value" file.  Relative file names inside are resolved against
 * the config file's folder.  Errors name FILE:LINE and the key. */
int etsim_netpkt_cfg_load(etsim_netpkt_cfg_t *c, const char *path, etsim_error_t *err);

/* ------------------------------------------------------------------- flows */

/* One flow-file entry ("src dst pg dport size start_s"). */
typedef struct etsim_netpkt_flow {
  uint32_t src, dst, pg, dport;
  uint64_t size_bytes;
  int64_t start_ps;
  uint32_t line; /* line in the flow file */
} etsim_netpkt_flow_t;

/* Read a flow file (count, then one flow per line).  *out is owned by the
 * caller (etsim_free).  Errors name FILE:LINE. */
int etsim_netpkt_flows_load(const char *path, etsim_netpkt_flow_t **out, size_t *n_out,
                            etsim_error_t *err);

/* ----------------------------------------------------------------- network */

typedef struct etsim_netpkt etsim_netpkt_t;

enum {
  ETSIM_NETPKT_DELIVERED = 1, /* last payload byte reached the receiver */
  ETSIM_NETPKT_ACKED = 2      /* sender saw the final ACK (ns-3 "QP done") */
};

/* Called once with DELIVERED and once with ACKED per message, at simulated
 * time t_ps, from inside etsim_netpkt_run_until. */
typedef void (*etsim_netpkt_done_fn)(void *ctx, uint64_t msg_id, int what, int64_t t_ps);

/* What to send.  pg: priority 1..7 (ASTRA-sim uses 3); dport as in the
 * flow file; fn/ctx may be NULL. */
typedef struct etsim_netpkt_msg {
  uint32_t src, dst;
  uint64_t bytes;
  int64_t start_ps;
  uint8_t pg;
  uint16_t dport;
  etsim_netpkt_done_fn fn;
  void *ctx;
} etsim_netpkt_msg_t;

/*
 * Build the network: routes (BFS shortest paths, ECMP over equal ones with
 * the switch-seeded murmur hash of (sip, dip, sport, dport)), switch
 * buffers, per-port ECN thresholds.  The topology and config are copied
 * (borrowed only during the call).  Errors: a host unreachable from
 * another (names both), a missing ECN map entry for a link rate, a buffer
 * smaller than its reserve and headroom, an unknown CC_MODE.
 */
int etsim_netpkt_create(etsim_netpkt_t **out, const etsim_netpkt_topo_t *topo,
                        const etsim_netpkt_cfg_t *cfg, etsim_error_t *err);
void etsim_netpkt_free(etsim_netpkt_t *n);

/* Result line sinks (borrowed; may be NULL): FCT lines as ns-3 writes them,
 * PFC events "time_ns node node_type ifindex 1|0", and at the end of the run
 * queue-length histograms (see docs/netsim.md). */
void etsim_netpkt_set_outputs(etsim_netpkt_t *n, FILE *fct, FILE *pfc, FILE *qlen);

/* Queue a message; *out_id (may be NULL) gets its id (0, 1, ...).  Errors:
 * src/dst not hosts, src == dst, bytes 0, start before now. */
int etsim_netpkt_send(etsim_netpkt_t *n, const etsim_netpkt_msg_t *m, uint64_t *out_id,
                      etsim_error_t *err);

/* Process every event with time <= t_ps (INT64_MAX: until idle or stop).
 * Returns 0, or ETSIM_EDEADLOCK when flows stall (a PFC cycle is named in
 * the message when there is one; otherwise the stuck flows). */
int etsim_netpkt_run_until(etsim_netpkt_t *n, int64_t t_ps, etsim_error_t *err);
/* Time of the earliest pending event, INT64_MAX when none. */
int64_t etsim_netpkt_next_time(const etsim_netpkt_t *n);
int64_t etsim_netpkt_now(const etsim_netpkt_t *n);

/* Write the queue-length histogram (if a sink was set) — call once after
 * the run. */
void etsim_netpkt_finish(etsim_netpkt_t *n);

/* Per-message result. */
typedef struct etsim_netpkt_msg_stat {
  uint32_t src, dst;
  uint16_t sport, dport;
  uint64_t bytes;
  int64_t start_ps, delivered_ps, acked_ps; /* -1 while pending */
  int64_t standalone_ps;                    /* ns-3 "standalone" FCT */
  /* what the sender was given, as ns-3's third.cc gives it: the window
   * (0: none) and base RTT, per pair or the largest of all pairs with
   * GLOBAL_T 1 (HPCC's T) */
  uint64_t win_bytes;
  int64_t base_rtt_ps;
  /* a failure left it no route (etsim_netpkt_links_down, or a network
   * created with allow_disconnected): it will never be delivered */
  uint8_t held;
} etsim_netpkt_msg_stat_t;
int etsim_netpkt_msg_stat(const etsim_netpkt_t *n, uint64_t id, etsim_netpkt_msg_stat_t *out);

/* Whole-network counters. */
typedef struct etsim_netpkt_stats {
  uint64_t events, data_pkts, ack_pkts, pfc_frames;
  uint64_t drops_buffer, drops_error, ecn_marks, cnps;
  uint64_t pauses, resumes; /* pause/resume frames received */
  int64_t paused_ps;        /* sum over ports/priorities of paused time */
  uint64_t msgs, msgs_done;
  int64_t first_start_ps;           /* earliest start of the messages sent (0: none) */
  int64_t last_done_ps;             /* last ACKED time */
  uint64_t max_switch_buffer_bytes; /* peak shared-buffer occupancy */
  /* queue-pair records (flow level: flow records) allocated: a message's record is reused once it
   * is done, unless a packet was lost (then it may still have one in flight) */
  uint64_t qp_records;
} etsim_netpkt_stats_t;
void etsim_netpkt_get_stats(const etsim_netpkt_t *n, etsim_netpkt_stats_t *s);

/* Per-port view (node, ifindex 1..): bytes sent, pauses received, paused
 * time, current and peak egress queue.  ifindex out of range gives
 * ETSIM_ERANGE.  `etsim netsim --ports` divides tx_bytes by what the port
 * could send over the traffic's span, from the stats' first_start_ps to
 * last_done_ps. */
typedef struct etsim_netpkt_port_stat {
  uint32_t peer;
  uint64_t rate_bps, tx_bytes, pauses_rx;
  int64_t paused_ps; /* summed over priorities, up to the last event */
  uint64_t qbytes, qbytes_peak;
  uint8_t paused_prios; /* bit q: priority q is paused now */
} etsim_netpkt_port_stat_t;
int etsim_netpkt_port_stat(const etsim_netpkt_t *n, uint32_t node, uint32_t ifindex,
                           etsim_netpkt_port_stat_t *out);
/* Number of ports of a node (its ifindex range is 1..count). */
uint32_t etsim_netpkt_port_count(const etsim_netpkt_t *n, uint32_t node);

/*
 * Failures (etsim sim --fail, docs/sim.md "Failures"): every cable between
 * nodes ab[2i] and ab[2i+1] (i < n_pairs) fails at t_ps, both directions,
 * before any event of that instant; run the network up to t_ps - 1 first.
 * Routes are searched again over the cables left (shortest paths, ECMP as
 * before); a message whose route crossed a failed cable takes a new one,
 * the others keep theirs.  Packets: those on a failed cable's wire arrive;
 * those queued at its ports are re-routed at that node; those elsewhere
 * whose remaining route crosses it are re-routed from the next node they
 * reach.  A message with no route left is held (never delivered; see
 * msg_stat.held) and its queued packets are dropped.  Pause frames on a
 * failed cable are lost.  0, ETSIM_EINVAL (no cable between a pair, a
 * time in the past) or ETSIM_ENOMEM.
 */
int etsim_netpkt_links_down(etsim_netpkt_t *net, const uint32_t *ab, size_t n_pairs, int64_t t_ps,
                            etsim_error_t *err);

/* Current sending rate of a message (bits/s), 0 once finished. */
uint64_t etsim_netpkt_msg_rate(const etsim_netpkt_t *n, uint64_t id);

/* -------------------------------------------------------------- flow level */

/*
 * The same network at flow level: each message is one flow over the route
 * the packet level would take (same BFS/ECMP hash); link capacity is shared
 * max-min fairly, recomputed (progressive filling) only over the connected
 * group of flows and links that a start or finish touches.  A flow's rate
 * is also capped at its NIC rate and, with HAS_WIN, at window / base RTT.
 * Bytes on the wire include the per-packet headers of the configured CC
 * (36 B, +42 B with HPCC INT, +8 B TIMELY).  Completion adds what a packet
 * would see on an empty path: propagation, one MTU of store-and-forward per
 * extra hop and, for ACKED, the ACK's return.  No queues, PFC or CC
 * dynamics.  Same message/callback/stat types as the packet level.
 */
typedef struct etsim_netflow etsim_netflow_t;

int etsim_netflow_create(etsim_netflow_t **out, const etsim_netpkt_topo_t *topo,
                         const etsim_netpkt_cfg_t *cfg, etsim_error_t *err);
void etsim_netflow_free(etsim_netflow_t *n);
void etsim_netflow_set_outputs(etsim_netflow_t *n, FILE *fct);
int etsim_netflow_send(etsim_netflow_t *n, const etsim_netpkt_msg_t *m, uint64_t *out_id,
                       etsim_error_t *err);
int etsim_netflow_run_until(etsim_netflow_t *n, int64_t t_ps, etsim_error_t *err);
int64_t etsim_netflow_next_time(const etsim_netflow_t *n);
/* Time of the last event processed (ps). */
int64_t etsim_netflow_now(const etsim_netflow_t *n);
int etsim_netflow_msg_stat(const etsim_netflow_t *n, uint64_t id, etsim_netpkt_msg_stat_t *out);
/* The flow level's failure: as etsim_netpkt_links_down; a flow crossing
 * a failed cable keeps what it has sent, its remaining bytes take the new
 * route and every rate is computed again at t_ps.  A flow whose last byte
 * left the sender before t_ps is delivered. */
int etsim_netflow_links_down(etsim_netflow_t *net, const uint32_t *ab, size_t n_pairs, int64_t t_ps,
                             etsim_error_t *err);
/* Current max-min rate of a message in bits/s (0 before start / after). */
double etsim_netflow_msg_rate(const etsim_netflow_t *n, uint64_t id);

typedef struct etsim_netflow_stats {
  uint64_t events, recomputes, flows_rated; /* rated: flow-rate assignments */
  uint64_t msgs, msgs_done;
  int64_t first_start_ps; /* earliest start of the messages sent (0: none) */
  int64_t last_done_ps;
  uint64_t records; /* flow records allocated: an acknowledged flow's is reused */
} etsim_netflow_stats_t;
void etsim_netflow_get_stats(const etsim_netflow_t *n, etsim_netflow_stats_t *s);

/* Per-port view of the flow level, as etsim_netpkt_port_stat: tx_bytes is
 * what the model put on the port up to now (data wire bytes with their
 * headers, and the ACK load when FLOW_ACK_LOAD is 1; no ACKs otherwise),
 * so it equals the packet level's count of data bytes; pauses, paused
 * time and queues are 0 (not modelled). */
int etsim_netflow_port_stat(const etsim_netflow_t *n, uint32_t node, uint32_t ifindex,
                            etsim_netpkt_port_stat_t *out);
uint32_t etsim_netflow_port_count(const etsim_netflow_t *n, uint32_t node);

/* ----------------------------------------------------------- either level */

/*
 * Both levels behind one table, as SQLite puts every file system behind a
 * sqlite3_vfs: a caller that can drive either (the simulator's network,
 * `etsim netsim`, sweeps) holds a level and its network and never asks
 * which one it has.  `net` is that level's own network (etsim_netpkt_t or
 * etsim_netflow_t); each entry is the function of the same name above,
 * with its contract, except:
 *   - get_stats fills what both levels count (events, msgs, msgs_done,
 *     first_start_ps, last_done_ps); the flow level's other fields are 0
 *     (etsim_netflow_get_stats has its own counters);
 *   - set_outputs's pfc and qlen sinks and finish are for the packet
 *     level's queues: the flow level has none and ignores them;
 *   - msg_rate is in bits/s at both levels.
 * `queues` says whether the level models queues, PFC and congestion
 * control (and so has PFC/queue outputs and a port recorder): only the
 * packet level does.
 */
typedef struct etsim_netpkt_level {
  const char *name; /* "packet" or "flow" */
  int queues;
  int (*create)(void **out, const etsim_netpkt_topo_t *topo, const etsim_netpkt_cfg_t *cfg,
                etsim_error_t *err);
  void (*destroy)(void *net);
  void (*set_outputs)(void *net, FILE *fct, FILE *pfc, FILE *qlen);
  int (*send)(void *net, const etsim_netpkt_msg_t *m, uint64_t *out_id, etsim_error_t *err);
  int (*run_until)(void *net, int64_t t_ps, etsim_error_t *err);
  int64_t (*next_time)(const void *net);
  int64_t (*now)(const void *net);
  void (*finish)(void *net);
  int (*msg_stat)(const void *net, uint64_t id, etsim_netpkt_msg_stat_t *out);
  double (*msg_rate)(const void *net, uint64_t id);
  void (*get_stats)(const void *net, etsim_netpkt_stats_t *out);
  uint32_t (*port_count)(const void *net, uint32_t node);
  int (*port_stat)(const void *net, uint32_t node, uint32_t ifindex, etsim_netpkt_port_stat_t *out);
  int (*links_down)(void *net, const uint32_t *ab, size_t n_pairs, int64_t t_ps,
                    etsim_error_t *err);
} etsim_netpkt_level_t;

/* The level named "packet" or "flow"; NULL for any other name. */
const etsim_netpkt_level_t *etsim_netpkt_level_find(const char *name);

/* Send every flow of a flow file to `net` of level `lv`, each as its
 * message (no callback).  A node outside topo, or a message the network
 * refuses, is an error naming path:LINE and the flow ("flow I: node N does
 * not exist (M nodes)"). */
int etsim_netpkt_flows_send(const etsim_netpkt_level_t *lv, void *net,
                            const etsim_netpkt_topo_t *topo, const etsim_netpkt_flow_t *flows,
                            size_t n_flows, const char *path, etsim_error_t *err);

/* ns-3 address of a host: 0x0b000001 + (id/256)*0x10000 + (id%256)*0x100. */
uint32_t etsim_netpkt_host_ip(uint32_t node);

/* --------------------------------------------------------------- timeline */

/* Network timelines: a packet-level network's counters over time, and
 * its messages, as a Perfetto / Chrome traceEvents file.
 *
 * The recorder samples every port of a running packet-level network
 * (etsim_netpkt_t) at a fixed simulated interval: bytes sent, paused time
 * and the egress queue.  The caller drives the network up to each sample
 * time (etsim_netpkt_run_until) and then calls etsim_netpkt_tl_sample, so the
 * network itself needs no hook and runs exactly as it would in one go.
 * Memory is bounded: when a port has `cap` samples, neighbouring samples
 * merge and the interval doubles, so a long run keeps its whole span at a
 * coarser step instead of growing without limit.
 *
 * The writer lays the file out the way a network study reads it:
 *   - one process per node ("host 3", "switch 16") with three counters,
 *     each with one series per port ("p2>16": port 2, towards node 16):
 *     "tx Gb/s" (mean over the interval), "queue KB" (the largest sampled
 *     egress queue in the interval) and "paused %" (time the port spent
 *     paused by PFC, summed over priorities, over the interval);
 *   - a "messages" process: every message as an async slice from its start
 *     to its completion (ACKed when known, else delivered), grouped by
 *     source host, and "rate Gb/s" counters for the first messages
 *     (ETSIM_NETPKT_TL_RATE_MSGS), the sending rate congestion control set.
 * A counter event is only written when a value changed, so idle ports cost
 * nothing.  Files go through a temporary name and are renamed when complete.
 */
/* Messages whose sending rate is recorded (ids 0 .. this-1). */
#define ETSIM_NETPKT_TL_RATE_MSGS 64

typedef struct etsim_netpkt_tl etsim_netpkt_tl_t;

/* A recorder for `net` on `topo` (both borrowed; they must outlive it),
 * first sampling every `interval_ps` (> 0) from time 0, recording the rate
 * of messages 0 .. min(n_msgs, ETSIM_NETPKT_TL_RATE_MSGS)-1.
 * ETSIM_EINVAL for a non-positive interval, ETSIM_ENOMEM. */
int etsim_netpkt_tl_create(etsim_netpkt_tl_t **out, const etsim_netpkt_t *net,
                           const etsim_netpkt_topo_t *topo, int64_t interval_ps, uint64_t n_msgs,
                           etsim_error_t *err);
void etsim_netpkt_tl_free(etsim_netpkt_tl_t *tl);

/* Simulated time (ps) of the next sample: run the network until it, then
 * call etsim_netpkt_tl_sample. */
int64_t etsim_netpkt_tl_next(const etsim_netpkt_tl_t *tl);

/* Record every port at etsim_netpkt_tl_next(tl); the network must have run
 * exactly up to that time.  Never fails: memory was set aside at create. */
void etsim_netpkt_tl_sample(etsim_netpkt_tl_t *tl);

/* The current interval (ps): the first one, doubled at each merge. */
int64_t etsim_netpkt_tl_interval(const etsim_netpkt_tl_t *tl);

/* Run `net` (the recorder's network) up to t_ps as etsim_netpkt_run_until
 * does, stopping at each sample time on the way to sample it.  Sampling
 * pauses, and the rest runs in one go, once the samples reach the last
 * completion with every message done, or reach the network's clock with
 * nothing left to run; a later call catches up (idle samples are zero).
 * Events run in the same order as in one call, so every other output is
 * the same with or without the recorder.  Returns run_until's result. */
int etsim_netpkt_tl_run_until(etsim_netpkt_tl_t *tl, etsim_netpkt_t *net, int64_t t_ps,
                              etsim_error_t *err);

/* Write the timeline of a run to `path`: messages 0 .. n_msgs-1 of `net`,
 * a network of level `lv` (ids that are not messages are left out), and
 * the recorder's counters when `tl` is not NULL (the flow level has none).
 * All borrowed.  Errors name the path. */
int etsim_netpkt_tl_write(const char *path, const etsim_netpkt_tl_t *tl,
                          const etsim_netpkt_topo_t *topo, const etsim_netpkt_level_t *lv,
                          const void *net, size_t n_msgs, etsim_error_t *err);

#ifdef __cplusplus
}
#endif
#endif /* ETSIM_NETPKT_H */
