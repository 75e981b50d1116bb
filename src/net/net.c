/*
 * net.c — the network interface: which backends exist, by name.
 *
 * Each pluggable kind has one registry, as SQLite's VFS list does: the
 * backends are the rows of BACKENDS below (name, ASTRA-sim's alias, the
 * constructor, how its links are numbered), and the congestion-control
 * schemes of the flow and packet backends the rows of cc_table.  Adding a
 * backend is one constructor plus one row; names for --help and for error
 * messages come from the same rows.
 */
#include "etsim/net.h"
#include "etsim/netpkt.h"

#include "net_int.h"
#include "pkt_int.h"

#include <stdio.h>
#include <string.h>

/* --------------------------------------------------------------- backends */

/* Every constructor has one shape; q and ev_deliver are set by
 * etsim_net_create afterwards, so constructors that need no options ignore
 * them. */
typedef int (*create_fn)(etsim_net_t **out, const etsim_topo_t *topo, const etsim_net_opts_t *opts,
                         etsim_error_t *err);
typedef void (*link_name_fn)(const etsim_topo_t *t, size_t k, char *buf, size_t n);

static int make_analytical(etsim_net_t **out, const etsim_topo_t *topo,
                           const etsim_net_opts_t *opts, etsim_error_t *err) {
  return etsim_net__analytical_create(out, topo, opts ? &opts->npu_links : NULL, err);
}

static int make_congestion(etsim_net_t **out, const etsim_topo_t *topo,
                           const etsim_net_opts_t *opts, etsim_error_t *err) {
  return etsim_net__congestion_create(out, topo, opts ? &opts->npu_links : NULL, err);
}

/* The flow and packet networks are the topology file's cables: NPU link
 * factors by dimension have nothing to apply to there (cables are degraded
 * by link_whatif instead). */
static int no_npu_links(const etsim_net_opts_t *opts, const char *name, etsim_error_t *err) {
  if (opts && (opts->npu_links.bw || opts->npu_links.lat))
    return etsim_error_set(err, ETSIM_EUNSUPPORTED,
                           "network: per-NPU link factors (--link-degrade \"D:N\") need the "
                           "analytical or congestion backend; on %s degrade cables of the "
                           "topology file (\"link:A-B\")",
                           name);
  return 0;
}

static int make_flow(etsim_net_t **out, const etsim_topo_t *topo, const etsim_net_opts_t *opts,
                     etsim_error_t *err) {
  int rc = no_npu_links(opts, "flow", err);
  return rc ? rc : etsim_net__rdma_create(out, topo, "flow", opts, err);
}

static int make_packet(etsim_net_t **out, const etsim_topo_t *topo, const etsim_net_opts_t *opts,
                       etsim_error_t *err) {
  int rc = no_npu_links(opts, "packet", err);
  return rc ? rc : etsim_net__rdma_create(out, topo, "packet", opts, err);
}

static void npu_dim_link_name(const etsim_topo_t *t, size_t k, char *buf, size_t n);
static void fifo_link_name(const etsim_topo_t *t, size_t k, char *buf, size_t n);

/* X(name, ASTRA-sim's name or NULL, constructor, link naming).  Flow and
 * packet keep no per-link counters; their names follow the NPU/dimension
 * form, as for a name no backend has. */
#define BACKENDS(X)                                                         \
  X("analytical", "congestion-unaware", make_analytical, npu_dim_link_name) \
  X("congestion", "congestion-aware", make_congestion, fifo_link_name)      \
  X("flow", NULL, make_flow, npu_dim_link_name)                             \
  X("packet", NULL, make_packet, npu_dim_link_name)

typedef struct backend {
  const char *name, *alias;
  create_fn create;
  link_name_fn link_name;
} backend_t;

#define BACKEND_ROW(name, alias, create, link_name) {name, alias, create, link_name},
#define BACKEND_NAME(name, alias, create, link_name) name,
static const backend_t backends[] = {BACKENDS(BACKEND_ROW)};
const char *const etsim_net_backend_names[] = {BACKENDS(BACKEND_NAME) NULL};
#undef BACKEND_ROW
#undef BACKEND_NAME

enum { N_BACKENDS = sizeof backends / sizeof *backends };

/* The backend called `name` (its own name or its alias), or NULL. */
static const backend_t *backend_find(const char *name) {
  for (size_t i = 0; i < N_BACKENDS; i++)
    if (strcmp(name, backends[i].name) == 0 ||
        (backends[i].alias && strcmp(name, backends[i].alias) == 0))
      return &backends[i];
  return NULL;
}

/* "a, b, c or d" from a NULL-terminated list, into buf. */
static const char *name_list(const char *const *names, char *buf, size_t n) {
  size_t len = 0, count = 0;
  buf[0] = 0;
  while (names[count]) count++;
  for (size_t i = 0; i < count && len < n; i++) {
    const char *sep = i == 0 ? "" : i + 1 == count ? " or " : ", ";
    int w = snprintf(buf + len, n - len, "%s%s", sep, names[i]);
    if (w < 0) break;
    len += (size_t)w;
  }
  return buf;
}

int etsim_net_create(etsim_net_t **out, const char *name, const etsim_topo_t *topo, etsim_des_t *q,
                     uint32_t ev_deliver, uint32_t ev_internal, const etsim_net_opts_t *opts,
                     etsim_error_t *err) {
  const backend_t *b = backend_find(name);
  if (!b) {
    char list[256];
    return etsim_error_set(err, ETSIM_EINVAL, "unknown network backend \"%s\" (expected %s)", name,
                           name_list(etsim_net_backend_names, list, sizeof list));
  }
  etsim_net_t *n = NULL;
  int rc = b->create(&n, topo, opts, err);
  if (rc) return rc;
  ETSIM_ASSERT(n && n->ops && n->ops->send && n->ops->destroy);
  n->topo = topo;
  n->q = q;
  n->ev_deliver = ev_deliver;
  n->ev_internal = ev_internal;
  *out = n;
  return 0;
}

void etsim_net_destroy(etsim_net_t *net) {
  if (!net) return;
  etsim_net_links_free(&net->links);
  net->ops->destroy(net);
}

int etsim_net_links_enable(etsim_net_t *net) {
  if (net->links.n) return 0;
  return net->ops->links_enable ? net->ops->links_enable(net) : ETSIM_EUNSUPPORTED;
}

int etsim_net__links_alloc(etsim_net_t *net, size_t n) {
  net->links.bytes = etsim_calloc(n ? n : 1, sizeof *net->links.bytes);
  net->links.busy_ps = etsim_calloc(n ? n : 1, sizeof *net->links.busy_ps);
  if (!net->links.bytes || !net->links.busy_ps) {
    etsim_net_links_free(&net->links);
    return ETSIM_ENOMEM;
  }
  net->links.n = n;
  return 0;
}

void etsim_net_links_free(etsim_net_links_t *l) {
  etsim_free(l->bytes);
  etsim_free(l->busy_ps);
  memset(l, 0, sizeof *l);
}

/* ------------------------------------------------------------ link names */

void etsim_net_link_name(const char *backend, const etsim_topo_t *t, size_t k, char *buf,
                         size_t n) {
  const backend_t *b = backend_find(backend);
  (b ? b->link_name : npu_dim_link_name)(t, k, buf, n);
}

/* Analytical counters: per NPU, per dimension it injects into. */
static void npu_dim_link_name(const etsim_topo_t *t, size_t k, char *buf, size_t n) {
  size_t nd = (size_t)t->ndims;
  int d = (int)(k % nd);
  snprintf(buf, n, "NPU %zu dim %d (%s) out", k / nd, d, etsim_topo_kind_name(t->kind[d]));
}

/* Link numbering of the congestion backend (congestion.c): per dimension
 * in order, per NPU, 2 links for a Ring (+, -) or a Switch (up, down),
 * n for a FullyConnected group (one to each coordinate). */
static void fifo_link_name(const etsim_topo_t *t, size_t k, char *buf, size_t n) {
  for (int d = 0; d < t->ndims; d++) {
    size_t per = t->kind[d] == ETSIM_TOPO_FULLY_CONNECTED ? t->npus[d] : 2;
    size_t span = (size_t)t->total * per;
    if (k >= span) {
      k -= span;
      continue;
    }
    uint32_t a = (uint32_t)(k / per), j = (uint32_t)(k % per);
    const char *kind = etsim_topo_kind_name(t->kind[d]);
    if (t->kind[d] == ETSIM_TOPO_SWITCH)
      snprintf(buf, n, j ? "switch -> NPU %u (dim %d %s)" : "NPU %u -> switch (dim %d %s)", a, d,
               kind);
    else if (t->kind[d] == ETSIM_TOPO_RING)
      snprintf(buf, n, "NPU %u -> NPU %u (dim %d %s)", a, etsim_topo_step(t, a, d, j ? -1 : 1), d,
               kind);
    else
      snprintf(buf, n, "NPU %u -> NPU %u (dim %d %s)", a,
               a + (j - etsim_topo_coord(t, a, d)) * t->stride[d], d, kind);
    return;
  }
  snprintf(buf, n, "link %zu", k);
}

/* ------------------------------------------------------ congestion control */

/* The schemes of the flow and packet backends: the names etsim takes
 * (--cc, etsim_net_opts_t.cc), ns-3's CC_MODE numbers and the packet
 * engine's rules for each.  "pfc" is a second name for none (PFC alone),
 * accepted but not listed. */
#define CC_SCHEMES(X)                                            \
  X("none", ETSIM_NETPKT_CC_NONE, &etsim_net__pkt_cc_none)       \
  X("dcqcn", ETSIM_NETPKT_CC_DCQCN, &etsim_net__pkt_cc_dcqcn)    \
  X("hpcc", ETSIM_NETPKT_CC_HPCC, &etsim_net__pkt_cc_hpcc)       \
  X("timely", ETSIM_NETPKT_CC_TIMELY, &etsim_net__pkt_cc_timely) \
  X("dctcp", ETSIM_NETPKT_CC_DCTCP, &etsim_net__pkt_cc_dctcp)

typedef struct cc_scheme {
  const char *name;
  int mode;
  const pk_cc_ops_t *ops;
} cc_scheme_t;

#define CC_ROW(name, mode, ops) {name, mode, ops},
#define CC_NAME(name, mode, ops) name,
static const cc_scheme_t cc_table[] = {
    CC_SCHEMES(CC_ROW){"pfc", ETSIM_NETPKT_CC_NONE, &etsim_net__pkt_cc_none}};
const char *const etsim_net_cc_names[] = {CC_SCHEMES(CC_NAME) NULL};
#undef CC_ROW
#undef CC_NAME

enum { N_CC = sizeof cc_table / sizeof *cc_table };

int etsim_net_cc_mode(const char *name, int *out_mode, etsim_error_t *err) {
  for (size_t i = 0; i < N_CC; i++)
    if (strcmp(name, cc_table[i].name) == 0) {
      *out_mode = cc_table[i].mode;
      return 0;
    }
  char list[128];
  return etsim_error_set(err, ETSIM_EINVAL, "unknown congestion control \"%s\" (expected %s)", name,
                         name_list(etsim_net_cc_names, list, sizeof list));
}

const char *etsim_net_cc_name(int mode) {
  for (size_t i = 0; i < N_CC; i++)
    if (cc_table[i].mode == mode) return cc_table[i].name;
  return NULL;
}

const char *etsim_net__pkt_cc_modes(char *buf, size_t n) {
  size_t len = 0;
  buf[0] = 0;
  for (size_t i = 0; etsim_net_cc_names[i] && len < n; i++) {
    int w =
        snprintf(buf + len, n - len, "%s%d %s", i ? ", " : "", cc_table[i].mode, cc_table[i].name);
    if (w < 0) break;
    len += (size_t)w;
  }
  return buf;
}

const pk_cc_ops_t *etsim_net__pkt_cc_ops(int mode) {
  for (size_t i = 0; i < N_CC; i++)
    if (cc_table[i].mode == mode) return cc_table[i].ops;
  return NULL;
}
