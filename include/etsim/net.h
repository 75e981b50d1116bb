/*
 * etsim/net.h — the network layer: one interface, several backends.
 *
 * The simulator hands the network a message (source NPU, destination NPU,
 * bytes, and an opaque 64-bit token) at the current time; the backend
 * arranges for an event of type `ev_deliver` carrying the token to fire in
 * the shared event queue when the last byte reaches the destination.
 * Backends that need internal events (per-hop forwarding) use event type
 * `ev_internal` and get them back through etsim_net_event().
 *
 * Backends are method tables (etsim_net_ops_t) registered by name in one
 * table (src/net/net.c); etsim_net_backend_names lists them:
 *   analytical  ASTRA-sim's congestion-unaware model (alias
 *               "congestion-unaware"): a message costs
 *               floor(hops*latency + bytes/bandwidth) ns in the first
 *               dimension where the endpoints' addresses differ; stateless
 *               (with per-NPU link factors, etsim_net_npu_links_t: the sum
 *               of its links' latencies and the slowest link's bandwidth).
 *   congestion  every directed link is a FIFO server; a message is stored
 *               and forwarded whole at each hop; dimension-order routing on
 *               multi-dimensional networks (ASTRA-sim's congestion-aware
 *               backend, which supports one dimension only; alias
 *               "congestion-aware").
 *   flow        the RoCE network at flow level (etsim/netpkt.h): max-min
 *               fair rates on the links of a packet topology.
 *   packet      the RoCE network at packet level (etsim/netpkt.h): switch
 *               buffers, PFC, ECN and a congestion-control scheme
 *               (etsim_net_cc_mode names them).
 * flow and packet run their own event engines (next_ps / advance).
 */
#ifndef ETSIM_NET_H
#define ETSIM_NET_H

#include "etsim/base.h"
#include "etsim/des.h"
#include "etsim/topo.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct etsim_net etsim_net_t;

typedef struct etsim_net_ops {
  const char *name;
  int (*send)(etsim_net_t *net, uint32_t src, uint32_t dst, uint64_t bytes, uint64_t token);
  int (*event)(etsim_net_t *net, const etsim_des_event_t *ev);
  void (*destroy)(etsim_net_t *net);
  /* Backends with their own event engine (packet, flow): the time of their
   * next internal event (INT64_MAX when idle), and running it up to t_ps,
   * which pushes deliveries into the shared queue.  NULL otherwise. */
  int64_t (*next_ps)(const etsim_net_t *net);
  int (*advance)(etsim_net_t *net, int64_t t_ps, etsim_error_t *err);
  /* At the end of a successful run: bring `stats` up to date and commit
   * any output files (NULL: nothing to do). */
  int (*finish)(etsim_net_t *net, etsim_error_t *err);
  /* In-network collectives (NULL where unsupported): a message between NPU
   * npu and the switch of its group in Switch dimension d, up (NPU to
   * switch) or down (switch to NPU); delivered like send's.  One link:
   * floor(L + bytes/beta) analytically, the NPU's FIFO link to or from the
   * switch on the congestion backend. */
  int (*send_switch)(etsim_net_t *net, uint32_t npu, int d, int up, uint64_t bytes, uint64_t token);
  /* Start keeping per-link counters (links below); NULL: not available. */
  int (*links_enable)(etsim_net_t *net);
} etsim_net_ops_t;

/* Per-NPU link factors (docs/sim.md, "What-if": --link-degrade "D:N"):
 * bw[x * ndims + d] and lat[x * ndims + d] scale the bandwidth and the
 * latency of NPU x's links in dimension d (1: nominal), both arrays
 * borrowed and both set or both NULL.  NPU x's links in dimension d are
 * every directed link with x at one end: on a Ring the four links between
 * x and its two ring neighbours, on a Switch x's port up (x -> switch) and
 * down (switch -> x), on a FullyConnected group the links from x to every
 * peer and back.  A link between two NPUs takes the smaller bandwidth
 * factor of its ends and the larger latency factor; a switch port the
 * factors of its NPU. */
typedef struct etsim_net_npu_links {
  const double *bw, *lat;
} etsim_net_npu_links_t;

/* Options of the packet and flow backends (docs/netsim.md): a topology
 * file in etsim netsim's format whose first hosts are the NPUs (default: a
 * one-switch star at the network's dimension-0 bandwidth and latency, for a
 * one-dimensional Switch network), a netsim config file (KEY value), and a
 * congestion-control name (none, dcqcn, hpcc, timely, dctcp). */
typedef struct etsim_net_opts {
  const char *topology_file;
  const char *config_file;
  const char *cc;
  /* flow/packet: one line per message in ns-3's FCT format, and (packet
   * only) PFC pause/resume events; written only when the run succeeds */
  const char *fct_file, *pfc_file;
  /* packet: a Perfetto timeline of the network's ports and messages
   * (etsim/netpkt.h), sampled every timeline_step_ps (0: 1 us); flow: the
   * messages only.  Written only when the run succeeds. */
  const char *timeline_file;
  int64_t timeline_step_ps;
  /* What-if on the topology (docs/sim.md, "What-if"): applied to its link
   * records right after loading, before rates, delays or routes are
   * derived from them.  NULL/0: the topology as written. */
  const struct etsim_net_link_whatif *link_whatif;
  size_t n_link_whatif;
  /* What-if on the NPUs' links (analytical and congestion only; the
   * others refuse it): see etsim_net_npu_links_t.  {NULL, NULL}: nominal. */
  etsim_net_npu_links_t npu_links;
} etsim_net_opts_t;

/* One what-if on the cable(s) between topology nodes a and b, both
 * directions: rate times bw and delay times lat, or removed (down): from
 * the start (t_ps 0: before routes are built) or from t_ps on (routes are
 * searched again then; see etsim_netpkt_links_down).  With npu set, `a` is
 * an NPU and every cable of its host fails at t_ps (b unused).  `opt` and
 * `key` name it in messages ("--link-degrade", "link:3-17"). */
typedef struct etsim_net_link_whatif {
  uint32_t a, b;
  double bw, lat;
  int down, npu;
  int64_t t_ps;
  const char *opt;
  char key[64];
} etsim_net_link_whatif_t;

typedef struct etsim_net_stats {
  uint64_t messages;
  uint64_t bytes;
  uint64_t bytes_per_dim[ETSIM_TOPO_MAX_DIMS];
  uint64_t hops;        /* link traversals (congestion backend) */
  int64_t max_queue_ps; /* longest wait for a busy link (congestion) */
  /* packet backend */
  uint64_t pkt_events, data_pkts, pfc_pauses, ecn_marks, cnps, drops;
  int64_t paused_ps;
  uint64_t max_buffer_bytes;
  /* flow/packet: most messages in flight at once between one NPU pair */
  uint32_t max_inflight_pair, max_inflight_src, max_inflight_dst;
  /* flow/packet: the fabric simulated, when it is not the YAML's ("" else) */
  char fabric[256];
  /* flow/packet: messages a failure left without a route (held, never
   * delivered), kept current as the run goes; `held` names what failed and
   * the first such message */
  uint64_t held_msgs;
  char held[320];
  /* flow/packet: the time the network's engine last ran to */
  int64_t last_ps;
} etsim_net_stats_t;

/* Per-link counters, once etsim_net_links_enable() succeeded: bytes sent
 * and time spent sending, per link (etsim_net_link_name says which).  The
 * analytical backend has no links: it counts per NPU and dimension what the
 * NPU injects there, so its busy time can exceed the run when messages
 * overlap (the model does not make them share). */
typedef struct etsim_net_links {
  size_t n; /* 0: not kept */
  uint64_t *bytes;
  int64_t *busy_ps;
} etsim_net_links_t;

struct etsim_net {
  const etsim_net_ops_t *ops;
  const etsim_topo_t *topo; /* borrowed */
  etsim_des_t *q;           /* borrowed: the simulation's event queue */
  uint32_t ev_deliver, ev_internal;
  etsim_net_stats_t stats;
  etsim_net_links_t links;
};

/* Create backend `name` (one of etsim_net_backend_names, or an alias) on
 * topology `topo` and queue `q` (both borrowed; they must outlive the
 * network); opts (may be NULL) are read by flow and packet, but for
 * npu_links, read by analytical and congestion (ETSIM_EUNSUPPORTED on flow
 * and packet, whose links are the topology file's).  0, or ETSIM_EINVAL
 * for an unknown name (err lists the backends) and whatever the backend's
 * constructor returns (a bad topology or option file names the file). */
int etsim_net_create(etsim_net_t **out, const char *name, const etsim_topo_t *topo, etsim_des_t *q,
                     uint32_t ev_deliver, uint32_t ev_internal, const etsim_net_opts_t *opts,
                     etsim_error_t *err);
void etsim_net_destroy(etsim_net_t *net);

/* Names of the backends, NULL-terminated (for --help and errors). */
extern const char *const etsim_net_backend_names[];

/* Congestion control of the flow and packet backends, by name (--cc,
 * etsim_net_opts_t.cc): "none" (also "pfc": PFC alone), "dcqcn", "hpcc",
 * "timely", "dctcp", to ETSIM_NETPKT_CC_* (ns-3's CC_MODE numbers 0, 1, 3,
 * 7, 8).  0, or ETSIM_EINVAL with the names listed in err. */
int etsim_net_cc_mode(const char *name, int *out_mode, etsim_error_t *err);
/* The name of ETSIM_NETPKT_CC_* `mode` ("none" for 0), or NULL. */
const char *etsim_net_cc_name(int mode);
/* The names etsim_net_cc_mode takes, NULL-terminated ("pfc" left out). */
extern const char *const etsim_net_cc_names[];

/* Keep per-link counters from now on: 0, ETSIM_EUNSUPPORTED (backend has
 * none: flow and packet report ports through their timeline), ENOMEM. */
int etsim_net_links_enable(etsim_net_t *net);
/* The name of link k of a backend (`name` as given to etsim_net_create) on
 * topo, e.g. "NPU 3 -> NPU 4 (dim 0 Ring)" or "NPU 5 -> switch (dim 1)";
 * for the analytical backend "NPU 3 dim 0 (Ring) out". */
void etsim_net_link_name(const char *backend, const etsim_topo_t *topo, size_t k, char *buf,
                         size_t n);
/* Free counters taken out of a network (links.bytes, links.busy_ps). */
void etsim_net_links_free(etsim_net_links_t *l);

/* Whether the backend runs its own engine (see next_ps / advance). */
static inline int etsim_net_has_engine(const etsim_net_t *net) { return net->ops->next_ps != NULL; }

static inline int etsim_net_send(etsim_net_t *net, uint32_t src, uint32_t dst, uint64_t bytes,
                                 uint64_t token) {
  return net->ops->send(net, src, dst, bytes, token);
}
static inline int etsim_net_event(etsim_net_t *net, const etsim_des_event_t *ev) {
  return net->ops->event ? net->ops->event(net, ev) : ETSIM_EINTERNAL;
}

/* The congestion-unaware message time in whole ns (ASTRA-sim truncates), or
 * -1 when it is beyond the simulated clock's horizon (ETSIM_DES_HORIZON_NS). */
int64_t etsim_net_analytical_ns(const etsim_topo_t *topo, uint32_t src, uint32_t dst,
                                uint64_t bytes);

/* The links a message from src to dst crosses on the analytical backend
 * (the lowest dimension where their addresses differ; a Ring the shorter
 * way round, clockwise on a tie; a Switch up and down; FullyConnected
 * direct) under per-NPU link factors f: *bw the smallest bandwidth factor
 * of those links (the message's rate is the slowest link's) and *lat the
 * sum of their latency factors (the hop count when nominal).  Both 0 when
 * src == dst.  f may have NULL arrays (every factor 1). */
void etsim_net_route_factors(const etsim_topo_t *topo, const etsim_net_npu_links_t *f, uint32_t src,
                             uint32_t dst, double *bw, double *lat);

#ifdef __cplusplus
}
#endif
#endif /* ETSIM_NET_H */
