/*
 * pkt_topo.c — the network graph: building it in code, the generators, and
 * the reader for the ns-3 RDMA topology file
 *
 *     nodes switches links
 *     switch-id ...
 *     src dst rate delay error_rate      (one line per link)
 *
 * The reader works on whitespace-separated tokens (as ns-3's stream reader
 * does) but remembers each token's line, so every error names FILE:LINE.
 */
#include "pkt_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int etsim_netpkt_topo_init(etsim_netpkt_topo_t *t, uint32_t n_nodes) {
  memset(t, 0, sizeof *t);
  t->n_nodes = n_nodes;
  t->is_switch = etsim_calloc(n_nodes ? n_nodes : 1, 1);
  return t->is_switch ? 0 : ETSIM_ENOMEM;
}

void etsim_netpkt_topo_free(etsim_netpkt_topo_t *t) {
  if (!t)
    return;
  etsim_free(t->is_switch);
  etsim_free(t->links);
  etsim_free(t->name);
  memset(t, 0, sizeof *t);
}

int etsim_netpkt_topo_add_link(etsim_netpkt_topo_t *t, uint32_t a, uint32_t b,
                               uint64_t rate_bps, int64_t delay_ps,
                               double error_rate, etsim_error_t *err) {
  if (a >= t->n_nodes || b >= t->n_nodes)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "link %u-%u: node id out of range (%u nodes)", a, b,
                           t->n_nodes);
  if (a == b)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "link %u-%u: a node linked to itself", a, b);
  if (rate_bps == 0)
    return etsim_error_set(err, ETSIM_EINVAL, "link %u-%u: rate 0", a, b);
  if (delay_ps < 0)
    return etsim_error_set(err, ETSIM_EINVAL, "link %u-%u: negative delay", a,
                           b);
  if (!(error_rate >= 0 && error_rate < 1))
    return etsim_error_set(err, ETSIM_EINVAL,
                           "link %u-%u: error rate %g not in [0, 1)", a, b,
                           error_rate);
  if (etsim_grow((void **)&t->links, &t->cap_links, t->n_links + 1,
                 sizeof *t->links))
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  etsim_netpkt_link_t *l = &t->links[t->n_links++];
  l->a = a;
  l->b = b;
  l->rate_bps = rate_bps;
  l->delay_ps = delay_ps;
  l->error_rate = error_rate;
  l->line = 0;
  return 0;
}

int etsim_netpkt_topo_star(etsim_netpkt_topo_t *t, uint32_t n_hosts,
                           uint64_t rate_bps, int64_t delay_ps) {
  int rc = etsim_netpkt_topo_init(t, n_hosts + 1);
  if (rc)
    return rc;
  t->is_switch[n_hosts] = 1;
  for (uint32_t h = 0; h < n_hosts; h++)
    if ((rc = etsim_netpkt_topo_add_link(t, h, n_hosts, rate_bps, delay_ps, 0,
                                         NULL)))
      return rc;
  return 0;
}

int etsim_netpkt_topo_clos2(etsim_netpkt_topo_t *t, uint32_t leaves,
                            uint32_t hosts_per_leaf, uint32_t spines,
                            uint64_t host_bps, uint64_t fabric_bps,
                            int64_t delay_ps) {
  uint32_t nh = leaves * hosts_per_leaf;
  int rc = etsim_netpkt_topo_init(t, nh + leaves + spines);
  if (rc)
    return rc;
  for (uint32_t s = nh; s < t->n_nodes; s++)
    t->is_switch[s] = 1;
  for (uint32_t h = 0; h < nh; h++)
    if ((rc = etsim_netpkt_topo_add_link(t, h, nh + h / hosts_per_leaf,
                                         host_bps, delay_ps, 0, NULL)))
      return rc;
  for (uint32_t l = 0; l < leaves; l++)
    for (uint32_t s = 0; s < spines; s++)
      if ((rc = etsim_netpkt_topo_add_link(t, nh + l, nh + leaves + s,
                                           fabric_bps, delay_ps, 0, NULL)))
        return rc;
  return 0;
}

int etsim_netpkt_topo_fattree(etsim_netpkt_topo_t *t, uint32_t k,
                              uint32_t hosts_per_edge, uint64_t rate_bps,
                              int64_t delay_ps) {
  if (k < 2 || k % 2 || !hosts_per_edge || k > 256)
    return ETSIM_EINVAL;
  uint32_t h2 = k / 2, ne = k * h2, nh = ne * hosts_per_edge, nc = h2 * h2;
  uint32_t e0 = nh, a0 = nh + ne, c0 = nh + 2 * ne;
  int rc = etsim_netpkt_topo_init(t, c0 + nc);
  if (rc)
    return rc;
  for (uint32_t v = nh; v < t->n_nodes; v++)
    t->is_switch[v] = 1;
  for (uint32_t h = 0; h < nh; h++)
    if ((rc = etsim_netpkt_topo_add_link(t, h, e0 + h / hosts_per_edge,
                                         rate_bps, delay_ps, 0, NULL)))
      return rc;
  for (uint32_t p = 0; p < k; p++)
    for (uint32_t e = 0; e < h2; e++)
      for (uint32_t a = 0; a < h2; a++)
        if ((rc =
                 etsim_netpkt_topo_add_link(t, e0 + p * h2 + e, a0 + p * h2 + a,
                                            rate_bps, delay_ps, 0, NULL)))
          return rc;
  for (uint32_t p = 0; p < k; p++)
    for (uint32_t a = 0; a < h2; a++)
      for (uint32_t c = 0; c < h2; c++)
        if ((rc =
                 etsim_netpkt_topo_add_link(t, a0 + p * h2 + a, c0 + a * h2 + c,
                                            rate_bps, delay_ps, 0, NULL)))
          return rc;
  return 0;
}

int etsim_netpkt_topo_rail(etsim_netpkt_topo_t *t, uint32_t nodes,
                           uint32_t gpus, uint32_t spines, uint64_t nic_bps,
                           uint64_t nvlink_bps, uint64_t fabric_bps,
                           int64_t delay_ps) {
  if (!nodes || !gpus)
    return ETSIM_EINVAL;
  uint32_t nh = nodes * gpus, r0 = nh, u0 = nh + gpus, s0 = u0 + nodes;
  int rc = etsim_netpkt_topo_init(t, s0 + spines);
  if (rc)
    return rc;
  for (uint32_t v = nh; v < t->n_nodes; v++)
    t->is_switch[v] = 1;
  for (uint32_t n = 0; n < nodes; n++)
    for (uint32_t g = 0; g < gpus; g++) {
      uint32_t h = n * gpus + g;
      if ((rc = etsim_netpkt_topo_add_link(t, h, r0 + g, nic_bps, delay_ps, 0,
                                           NULL)) ||
          (rc = etsim_netpkt_topo_add_link(t, h, u0 + n, nvlink_bps, delay_ps,
                                           0, NULL)))
        return rc;
    }
  for (uint32_t g = 0; g < gpus; g++)
    for (uint32_t s = 0; s < spines; s++)
      if ((rc = etsim_netpkt_topo_add_link(t, r0 + g, s0 + s, fabric_bps,
                                           delay_ps, 0, NULL)))
        return rc;
  return 0;
}

/* ------------------------------------------------------------ unit parsing */

int etsim_netpkt_parse_rate(const char *s, uint64_t *out_bps) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || errno || !(v >= 0) || !isfinite(v))
    return ETSIM_EINVAL;
  static const struct {
    const char *u;
    double f;
  } units[] = {{"", 1},
               {"bps", 1},
               {"b/s", 1},
               {"Kbps", 1e3},
               {"kbps", 1e3},
               {"Kb/s", 1e3},
               {"kb/s", 1e3},
               {"Mbps", 1e6},
               {"Mb/s", 1e6},
               {"Gbps", 1e9},
               {"Gb/s", 1e9},
               {"Tbps", 1e12},
               {"Tb/s", 1e12},
               {"KBps", 8e3},
               {"KB/s", 8e3},
               {"MBps", 8e6},
               {"MB/s", 8e6},
               {"GBps", 8e9},
               {"GB/s", 8e9},
               {"Kibps", 1024.0},
               {"Mibps", 1048576.0},
               {"Gibps", 1073741824.0}};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (strcmp(end, units[i].u) == 0) {
      double r = v * units[i].f;
      if (r < 1 || r > 1e15)
        return ETSIM_EINVAL;
      *out_bps = (uint64_t)llround(r);
      return 0;
    }
  return ETSIM_EINVAL;
}

int etsim_netpkt_parse_time(const char *s, int64_t *out_ps) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || errno || !(v >= 0) || !isfinite(v))
    return ETSIM_EINVAL;
  static const struct {
    const char *u;
    double f;
  } units[] = {{"", 1e12},  {"s", 1e12}, {"ms", 1e9},  {"us", 1e6},
               {"ns", 1e3}, {"ps", 1},   {"min", 6e13}};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (strcmp(end, units[i].u) == 0) {
      double r = v * units[i].f;
      if (r > 9.2e18)
        return ETSIM_EINVAL;
      *out_ps = (int64_t)llround(r);
      return 0;
    }
  return ETSIM_EINVAL;
}

int pk_parse_u64(const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  if (*s == '-' || *s == '+' || *s == 0)
    return ETSIM_EINVAL;
  unsigned long long v = strtoull(s, &end, 10);
  if (*end || errno)
    return ETSIM_EINVAL;
  *out = v;
  return 0;
}

int pk_parse_double(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end || errno || !isfinite(v))
    return ETSIM_EINVAL;
  *out = v;
  return 0;
}

/* ----------------------------------------------------------------- reader */

static int tok_u32(pk_tok_t *tk, const char *what, uint32_t *out,
                   etsim_error_t *err) {
  if (!pk_tok_next(tk))
    return etsim_error_set(err, ETSIM_EFORMAT, "%s:%u: missing %s (file ends)",
                           tk->name, tk->tok_line, what);
  uint64_t v;
  if (pk_parse_u64(tk->tok, &v) || v > UINT32_MAX)
    return etsim_error_set(err, ETSIM_EFORMAT,
                           "%s:%u: %s '%s' is not a non-negative integer",
                           tk->name, tk->tok_line, what, tk->tok);
  *out = (uint32_t)v;
  return 0;
}

int etsim_netpkt_topo_parse(etsim_netpkt_topo_t *t, const char *text,
                            const char *name, etsim_error_t *err) {
  pk_tok_t tk;
  pk_tok_init(&tk, text, name);
  uint32_t nn, ns, nl;
  int rc;
  memset(t, 0, sizeof *t);
  if ((rc = tok_u32(&tk, "node count", &nn, err)) ||
      (rc = tok_u32(&tk, "switch count", &ns, err)) ||
      (rc = tok_u32(&tk, "link count", &nl, err)))
    return rc;
  if (nn == 0)
    return etsim_error_set(err, ETSIM_EFORMAT, "%s:1: no nodes", name);
  if (ns > nn)
    return etsim_error_set(err, ETSIM_EFORMAT,
                           "%s:1: %u switches but only %u nodes", name, ns, nn);
  if (nn > (1u << 24))
    return etsim_error_set(err, ETSIM_EFORMAT, "%s:1: %u nodes is too many",
                           name, nn);
  if ((rc = etsim_netpkt_topo_init(t, nn)))
    return etsim_error_set(err, rc, "%s: out of memory", name);
  t->name = etsim_strdup(name);
  for (uint32_t i = 0; i < ns; i++) {
    uint32_t id;
    if ((rc = tok_u32(&tk, "switch id", &id, err)))
      goto fail;
    if (id >= nn) {
      rc = etsim_error_set(err, ETSIM_EFORMAT,
                           "%s:%u: switch id %u out of range (%u nodes)", name,
                           tk.tok_line, id, nn);
      goto fail;
    }
    if (t->is_switch[id]) {
      rc = etsim_error_set(err, ETSIM_EFORMAT,
                           "%s:%u: switch id %u listed twice", name,
                           tk.tok_line, id);
      goto fail;
    }
    t->is_switch[id] = 1;
  }
  for (uint32_t i = 0; i < nl; i++) {
    uint32_t a, b, line;
    uint64_t rate;
    int64_t delay;
    double er;
    if ((rc = tok_u32(&tk, "link source", &a, err)))
      goto fail;
    line = tk.tok_line;
    if ((rc = tok_u32(&tk, "link destination", &b, err)))
      goto fail;
    if (!pk_tok_next(&tk)) {
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%u: missing link rate", name,
                           line);
      goto fail;
    }
    if (etsim_netpkt_parse_rate(tk.tok, &rate)) {
      rc = etsim_error_set(err, ETSIM_EFORMAT,
                           "%s:%u: bad link rate '%s' (e.g. 100Gbps)", name,
                           tk.tok_line, tk.tok);
      goto fail;
    }
    if (!pk_tok_next(&tk)) {
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%u: missing link delay",
                           name, line);
      goto fail;
    }
    if (etsim_netpkt_parse_time(tk.tok, &delay)) {
      rc = etsim_error_set(err, ETSIM_EFORMAT,
                           "%s:%u: bad link delay '%s' (e.g. 0.001ms)", name,
                           tk.tok_line, tk.tok);
      goto fail;
    }
    if (!pk_tok_next(&tk)) {
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%u: missing error rate",
                           name, line);
      goto fail;
    }
    if (pk_parse_double(tk.tok, &er)) {
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%u: bad error rate '%s'",
                           name, tk.tok_line, tk.tok);
      goto fail;
    }
    etsim_error_t e2 = {0};
    if ((rc = etsim_netpkt_topo_add_link(t, a, b, rate, delay, er, &e2))) {
      etsim_error_set(err, rc, "%s:%u: %s", name, line, e2.msg);
      goto fail;
    }
    t->links[t->n_links - 1].line = line;
    for (size_t k = 0; k + 1 < t->n_links; k++) {
      etsim_netpkt_link_t *o = &t->links[k];
      if ((o->a == a && o->b == b) || (o->a == b && o->b == a)) {
        rc = etsim_error_set(err, ETSIM_EFORMAT,
                             "%s:%u: second link between %u and %u (first on "
                             "line %u)",
                             name, line, a, b, o->line);
        goto fail;
      }
    }
    if (!t->is_switch[a] && !t->is_switch[b]) {
      rc = etsim_error_set(err, ETSIM_EFORMAT,
                           "%s:%u: link joins two hosts (%u, %u); hosts "
                           "connect to switches",
                           name, line, a, b);
      goto fail;
    }
  }
  if (pk_tok_next(&tk)) {
    rc = etsim_error_set(err, ETSIM_EFORMAT,
                         "%s:%u: unexpected '%s' after %u links", name,
                         tk.tok_line, tk.tok, nl);
    goto fail;
  }
  return 0;
fail:
  etsim_netpkt_topo_free(t);
  return rc;
}

int etsim_netpkt_topo_load(etsim_netpkt_topo_t *t, const char *path,
                           etsim_error_t *err) {
  char *text;
  int rc = pk_read_file(path, &text, err);
  if (rc)
    return rc;
  rc = etsim_netpkt_topo_parse(t, text, path, err);
  etsim_free(text);
  return rc;
}
