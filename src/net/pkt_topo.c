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

/* The reader of configuration, topology and flow files: text, and never a
 * gigabyte (ten million flows take 400 MB); FLOW_FILE /dev/zero was read
 * forever.  It lives here and pkt_config.c calls it, so calls between the
 * two files go one way. */
int etsim_net__pkt_read_file(const char *path, char **out, etsim_error_t *err) {
  return etsim_read_text(path, (size_t)1 << 30, out, NULL, err);
}

int etsim_netpkt_topo_init(etsim_netpkt_topo_t *t, uint32_t n_nodes) {
  memset(t, 0, sizeof *t);
  t->n_nodes = n_nodes;
  t->is_switch = etsim_calloc(n_nodes ? n_nodes : 1, 1);
  return t->is_switch ? 0 : ETSIM_ENOMEM;
}

void etsim_netpkt_topo_free(etsim_netpkt_topo_t *t) {
  if (!t) return;
  etsim_free(t->is_switch);
  etsim_free(t->links);
  etsim_free(t->name);
  memset(t, 0, sizeof *t);
}

int etsim_netpkt_topo_add_link(etsim_netpkt_topo_t *t, uint32_t a, uint32_t b, uint64_t rate_bps,
                               int64_t delay_ps, double error_rate, etsim_error_t *err) {
  if (a >= t->n_nodes || b >= t->n_nodes)
    return etsim_error_set(err, ETSIM_EINVAL, "link %u-%u: node id out of range (%u nodes)", a, b,
                           t->n_nodes);
  if (a == b)
    return etsim_error_set(err, ETSIM_EINVAL, "link %u-%u: a node linked to itself", a, b);
  if (rate_bps == 0) return etsim_error_set(err, ETSIM_EINVAL, "link %u-%u: rate 0", a, b);
  if (delay_ps < 0) return etsim_error_set(err, ETSIM_EINVAL, "link %u-%u: negative delay", a, b);
  if (!(error_rate >= 0 && error_rate < 1))
    return etsim_error_set(err, ETSIM_EINVAL, "link %u-%u: error rate %g not in [0, 1)", a, b,
                           error_rate);
  if (etsim_grow((void **)&t->links, &t->cap_links, t->n_links + 1, sizeof *t->links))
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

int etsim_netpkt_topo_star(etsim_netpkt_topo_t *t, uint32_t n_hosts, uint64_t rate_bps,
                           int64_t delay_ps) {
  int rc = etsim_netpkt_topo_init(t, n_hosts + 1);
  if (rc) return rc;
  t->is_switch[n_hosts] = 1;
  for (uint32_t h = 0; h < n_hosts; h++)
    if ((rc = etsim_netpkt_topo_add_link(t, h, n_hosts, rate_bps, delay_ps, 0, NULL))) return rc;
  return 0;
}

int etsim_netpkt_topo_clos2(etsim_netpkt_topo_t *t, uint32_t leaves, uint32_t hosts_per_leaf,
                            uint32_t spines, uint64_t host_bps, uint64_t fabric_bps,
                            int64_t delay_ps) {
  uint32_t nh = leaves * hosts_per_leaf;
  int rc = etsim_netpkt_topo_init(t, nh + leaves + spines);
  if (rc) return rc;
  for (uint32_t s = nh; s < t->n_nodes; s++) t->is_switch[s] = 1;
  for (uint32_t h = 0; h < nh; h++)
    if ((rc = etsim_netpkt_topo_add_link(t, h, nh + h / hosts_per_leaf, host_bps, delay_ps, 0,
                                         NULL)))
      return rc;
  for (uint32_t l = 0; l < leaves; l++)
    for (uint32_t s = 0; s < spines; s++)
      if ((rc = etsim_netpkt_topo_add_link(t, nh + l, nh + leaves + s, fabric_bps, delay_ps, 0,
                                           NULL)))
        return rc;
  return 0;
}

int etsim_netpkt_topo_fattree(etsim_netpkt_topo_t *t, uint32_t k, uint32_t hosts_per_edge,
                              uint64_t rate_bps, int64_t delay_ps) {
  if (k < 2 || k % 2 || !hosts_per_edge || k > 256) return ETSIM_EINVAL;
  uint32_t h2 = k / 2, ne = k * h2, nh = ne * hosts_per_edge, nc = h2 * h2;
  uint32_t e0 = nh, a0 = nh + ne, c0 = nh + 2 * ne;
  int rc = etsim_netpkt_topo_init(t, c0 + nc);
  if (rc) return rc;
  for (uint32_t v = nh; v < t->n_nodes; v++) t->is_switch[v] = 1;
  for (uint32_t h = 0; h < nh; h++)
    if ((rc = etsim_netpkt_topo_add_link(t, h, e0 + h / hosts_per_edge, rate_bps, delay_ps, 0,
                                         NULL)))
      return rc;
  for (uint32_t p = 0; p < k; p++)
    for (uint32_t e = 0; e < h2; e++)
      for (uint32_t a = 0; a < h2; a++)
        if ((rc = etsim_netpkt_topo_add_link(t, e0 + p * h2 + e, a0 + p * h2 + a, rate_bps,
                                             delay_ps, 0, NULL)))
          return rc;
  for (uint32_t p = 0; p < k; p++)
    for (uint32_t a = 0; a < h2; a++)
      for (uint32_t c = 0; c < h2; c++)
        if ((rc = etsim_netpkt_topo_add_link(t, a0 + p * h2 + a, c0 + a * h2 + c, rate_bps,
                                             delay_ps, 0, NULL)))
          return rc;
  return 0;
}

int etsim_netpkt_topo_rail(etsim_netpkt_topo_t *t, uint32_t nodes, uint32_t gpus, uint32_t spines,
                           uint64_t nic_bps, uint64_t nvlink_bps, uint64_t fabric_bps,
                           int64_t delay_ps) {
  if (!nodes || !gpus) return ETSIM_EINVAL;
  uint32_t nh = nodes * gpus, r0 = nh, u0 = nh + gpus, s0 = u0 + nodes;
  int rc = etsim_netpkt_topo_init(t, s0 + spines);
  if (rc) return rc;
  for (uint32_t v = nh; v < t->n_nodes; v++) t->is_switch[v] = 1;
  for (uint32_t n = 0; n < nodes; n++)
    for (uint32_t g = 0; g < gpus; g++) {
      uint32_t h = n * gpus + g;
      if ((rc = etsim_netpkt_topo_add_link(t, h, r0 + g, nic_bps, delay_ps, 0, NULL)) ||
          (rc = etsim_netpkt_topo_add_link(t, h, u0 + n, nvlink_bps, delay_ps, 0, NULL)))
        return rc;
    }
  for (uint32_t g = 0; g < gpus; g++)
    for (uint32_t s = 0; s < spines; s++)
      if ((rc = etsim_netpkt_topo_add_link(t, r0 + g, s0 + s, fabric_bps, delay_ps, 0, NULL)))
        return rc;
  return 0;
}

/* ------------------------------------------------------------ unit parsing */

int etsim_netpkt_parse_rate(const char *s, uint64_t *out_bps) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || errno || !(v >= 0) || !isfinite(v)) return ETSIM_EINVAL;
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
      if (r < 1 || r > 1e15) return ETSIM_EINVAL;
      *out_bps = (uint64_t)llround(r);
      return 0;
    }
  return ETSIM_EINVAL;
}

int etsim_netpkt_parse_time(const char *s, int64_t *out_ps) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || errno || !(v >= 0) || !isfinite(v)) return ETSIM_EINVAL;
  static const struct {
    const char *u;
    double f;
  } units[] = {{"", 1e12},  {"s", 1e12}, {"ms", 1e9},  {"us", 1e6},
               {"ns", 1e3}, {"ps", 1},   {"min", 6e13}};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (strcmp(end, units[i].u) == 0) {
      double r = v * units[i].f;
      if (r > 9.2e18) return ETSIM_EINVAL;
      *out_ps = (int64_t)llround(r);
      return 0;
    }
  return ETSIM_EINVAL;
}

int etsim_net__pkt_parse_u64(const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  if (*s == '-' || *s == '+' || *s == 0) return ETSIM_EINVAL;
  unsigned long long v = strtoull(s, &end, 10);
  if (*end || errno) return ETSIM_EINVAL;
  *out = v;
  return 0;
}

int etsim_net__pkt_parse_double(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end || errno || !isfinite(v)) return ETSIM_EINVAL;
  *out = v;
  return 0;
}

/* ----------------------------------------------------------------- reader */

static int tok_u32(pk_tok_t *tk, const char *what, uint32_t *out, etsim_error_t *err) {
  if (!pk_tok_next(tk))
    return etsim_error_set(err, ETSIM_EFORMAT, "%s:%u: missing %s (file ends)", tk->name,
                           tk->tok_line, what);
  uint64_t v;
  if (etsim_net__pkt_parse_u64(tk->tok, &v) || v > UINT32_MAX)
    return etsim_error_set(err, ETSIM_EFORMAT, "%s:%u: %s '%s' is not a non-negative integer",
                           tk->name, tk->tok_line, what, tk->tok);
  *out = (uint32_t)v;
  return 0;
}

int etsim_netpkt_topo_parse(etsim_netpkt_topo_t *t, const char *text, const char *name,
                            etsim_error_t *err) {
  pk_tok_t tk;
  pk_tok_init(&tk, text, name);
  uint32_t nn, ns, nl;
  int rc;
  etsim_u64map_t seen;
  etsim_u64map_init(&seen);
  memset(t, 0, sizeof *t);
  if ((rc = tok_u32(&tk, "node count", &nn, err)) ||
      (rc = tok_u32(&tk, "switch count", &ns, err)) || (rc = tok_u32(&tk, "link count", &nl, err)))
    return rc;
  if (nn == 0) return etsim_error_set(err, ETSIM_EFORMAT, "%s:1: no nodes", name);
  if (ns > nn)
    return etsim_error_set(err, ETSIM_EFORMAT, "%s:1: %u switches but only %u nodes", name, ns, nn);
  if (nn > (1u << 24))
    return etsim_error_set(err, ETSIM_EFORMAT, "%s:1: %u nodes is too many", name, nn);
  if ((rc = etsim_netpkt_topo_init(t, nn)))
    return etsim_error_set(err, rc, "%s: out of memory", name);
  t->name = etsim_strdup(name);
  for (uint32_t i = 0; i < ns; i++) {
    uint32_t id;
    if ((rc = tok_u32(&tk, "switch id", &id, err))) goto fail;
    if (id >= nn) {
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%u: switch id %u out of range (%u nodes)", name,
                           tk.tok_line, id, nn);
      goto fail;
    }
    if (t->is_switch[id]) {
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%u: switch id %u listed twice", name,
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
    if ((rc = tok_u32(&tk, "link source", &a, err))) goto fail;
    line = tk.tok_line;
    if ((rc = tok_u32(&tk, "link destination", &b, err))) goto fail;
    if (!pk_tok_next(&tk)) {
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%u: missing link rate", name, line);
      goto fail;
    }
    if (etsim_netpkt_parse_rate(tk.tok, &rate)) {
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%u: bad link rate '%s' (e.g. 100Gbps)", name,
                           tk.tok_line, tk.tok);
      goto fail;
    }
    if (!pk_tok_next(&tk)) {
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%u: missing link delay", name, line);
      goto fail;
    }
    if (etsim_netpkt_parse_time(tk.tok, &delay)) {
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%u: bad link delay '%s' (e.g. 0.001ms)", name,
                           tk.tok_line, tk.tok);
      goto fail;
    }
    if (!pk_tok_next(&tk)) {
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%u: missing error rate", name, line);
      goto fail;
    }
    if (etsim_net__pkt_parse_double(tk.tok, &er)) {
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%u: bad error rate '%s'", name, tk.tok_line,
                           tk.tok);
      goto fail;
    }
    etsim_error_t e2 = {0};
    if ((rc = etsim_netpkt_topo_add_link(t, a, b, rate, delay, er, &e2))) {
      etsim_error_set(err, rc, "%s:%u: %s", name, line, e2.msg);
      goto fail;
    }
    t->links[t->n_links - 1].line = line;
    /* node pairs seen so far, by hash: a fabric of 200 k links used to
     * spend minutes comparing each link with all the earlier ones */
    uint32_t first;
    uint64_t pair = a < b ? (uint64_t)a << 32 | b : (uint64_t)b << 32 | a;
    int put = etsim_u64map_put(&seen, pair, line, &first);
    if (put < 0) {
      rc = etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", name);
      goto fail;
    }
    if (put == 0) {
      rc = etsim_error_set(err, ETSIM_EFORMAT,
                           "%s:%u: second link between %u and %u (first on "
                           "line %u)",
                           name, line, a, b, first);
      goto fail;
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
    rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%u: unexpected '%s' after %u links", name,
                         tk.tok_line, tk.tok, nl);
    goto fail;
  }
  etsim_u64map_free(&seen);
  return 0;
fail:
  etsim_u64map_free(&seen);
  etsim_netpkt_topo_free(t);
  return rc;
}

int etsim_netpkt_topo_load(etsim_netpkt_topo_t *t, const char *path, etsim_error_t *err) {
  if (etsim_netpkt_topo_is_spec(path)) return etsim_netpkt_topo_spec(t, path, err);
  char *text;
  int rc = etsim_net__pkt_read_file(path, &text, err);
  if (rc) return rc;
  rc = etsim_netpkt_topo_parse(t, text, path, err);
  etsim_free(text);
  return rc;
}

/* ------------------------------------------------- generator specs, writer */

/* Value of `key` in a spec's "k=v,k=v" list (NULL when absent); the value
 * runs to the next comma.  `len` gets its length. */
static const char *spec_get(const char *list, const char *key, size_t *len) {
  size_t kl = strlen(key);
  for (const char *p = list; p && *p;) {
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n > kl && strncmp(p, key, kl) == 0 && p[kl] == '=') {
      *len = n - kl - 1;
      return p + kl + 1;
    }
    p = end ? end + 1 : NULL;
  }
  return NULL;
}

/* A count (1.., or 0.. for SPEC_COUNT0), rate or time field of a spec:
 * `def` when absent, or an error when def is SPEC_REQUIRED. */
typedef enum { SPEC_COUNT, SPEC_COUNT0, SPEC_RATE, SPEC_TIME } spec_kind_t;
#define SPEC_REQUIRED UINT64_MAX
static int spec_num(const char *spec, const char *list, const char *key, spec_kind_t kind,
                    uint64_t def, uint64_t *out, etsim_error_t *err) {
  size_t len;
  const char *v = spec_get(list, key, &len);
  if (!v) {
    if (def == SPEC_REQUIRED)
      return etsim_error_set(err, ETSIM_EINVAL, "%s: '%s' is required", spec, key);
    *out = def;
    return 0;
  }
  char buf[64];
  if (len == 0 || len >= sizeof buf)
    return etsim_error_set(err, ETSIM_EINVAL, "%s: bad value for '%s'", spec, key);
  memcpy(buf, v, len);
  buf[len] = 0;
  if (kind == SPEC_RATE) {
    if (etsim_netpkt_parse_rate(buf, out) || !*out)
      return etsim_error_set(err, ETSIM_EINVAL, "%s: %s '%s' is not a rate like 100Gbps", spec, key,
                             buf);
    return 0;
  }
  if (kind == SPEC_TIME) {
    int64_t ps;
    if (etsim_netpkt_parse_time(buf, &ps) || ps < 0)
      return etsim_error_set(err, ETSIM_EINVAL, "%s: %s '%s' is not a time like 1us", spec, key,
                             buf);
    *out = (uint64_t)ps;
    return 0;
  }
  char *e;
  errno = 0;
  unsigned long long n = strtoull(buf, &e, 10);
  unsigned long long lo = kind == SPEC_COUNT0 ? 0 : 1;
  if (*e || errno || buf[0] == '-' || n < lo || n > 1000000)
    return etsim_error_set(err, ETSIM_EINVAL, "%s: %s '%s' is not a count in %llu..1000000", spec,
                           key, buf, lo);
  *out = n;
  return 0;
}

int etsim_netpkt_topo_is_spec(const char *s) {
  static const char *kinds[] = {"star:", "clos2:", "fattree:", "rail:"};
  for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
    if (strncmp(s, kinds[k], strlen(kinds[k])) == 0) return 1;
  return 0;
}

int etsim_netpkt_topo_spec(etsim_netpkt_topo_t *t, const char *spec, etsim_error_t *err) {
  static const char *known[] = {"hosts", "rate",  "delay", "leaves", "spines", "fabric",
                                "k",     "nodes", "gpus",  "nic",    "nvlink"};
  const char *list = strchr(spec, ':');
  if (!etsim_netpkt_topo_is_spec(spec) || !list)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "%s: not a topology spec (star:, clos2:, fattree: "
                           "or rail: followed by key=value,...)",
                           spec);
  list++;
  /* Every key must be one the generators know: a typo is an error, not a
   * silently defaulted fabric. */
  for (const char *p = list; *p;) {
    const char *eq = strchr(p, '=');
    const char *end = strchr(p, ',');
    if (!eq || (end && eq > end))
      return etsim_error_set(err, ETSIM_EINVAL,
                             "%s: expected key=value at "
                             "'%.*s'",
                             spec, end ? (int)(end - p) : (int)strlen(p), p);
    size_t kl = (size_t)(eq - p), k;
    for (k = 0; k < sizeof known / sizeof *known; k++)
      if (strlen(known[k]) == kl && strncmp(p, known[k], kl) == 0) break;
    if (k == sizeof known / sizeof *known)
      return etsim_error_set(err, ETSIM_EINVAL, "%s: unknown key '%.*s'", spec, (int)kl, p);
    p = end ? end + 1 : p + strlen(p);
  }
  uint64_t rate, delay, a, b, c, fabric, nvlink;
  int rc;
  const uint64_t G100 = 100000000000ull, US = 1000000;
  if ((rc = spec_num(spec, list, "rate", SPEC_RATE, G100, &rate, err))) return rc;
  if ((rc = spec_num(spec, list, "delay", SPEC_TIME, US, &delay, err))) return rc;
  memset(t, 0, sizeof *t);
  if (strncmp(spec, "star:", 5) == 0) {
    if ((rc = spec_num(spec, list, "hosts", SPEC_COUNT, SPEC_REQUIRED, &a, err))) return rc;
    rc = etsim_netpkt_topo_star(t, (uint32_t)a, rate, (int64_t)delay);
  } else if (strncmp(spec, "clos2:", 6) == 0) {
    if ((rc = spec_num(spec, list, "leaves", SPEC_COUNT, SPEC_REQUIRED, &a, err)) ||
        (rc = spec_num(spec, list, "hosts", SPEC_COUNT, SPEC_REQUIRED, &b, err)) ||
        (rc = spec_num(spec, list, "spines", SPEC_COUNT, SPEC_REQUIRED, &c, err)) ||
        (rc = spec_num(spec, list, "fabric", SPEC_RATE, rate, &fabric, err)))
      return rc;
    rc = etsim_netpkt_topo_clos2(t, (uint32_t)a, (uint32_t)b, (uint32_t)c, rate, fabric,
                                 (int64_t)delay);
  } else if (strncmp(spec, "fattree:", 8) == 0) {
    if ((rc = spec_num(spec, list, "k", SPEC_COUNT, SPEC_REQUIRED, &a, err))) return rc;
    if (a % 2) return etsim_error_set(err, ETSIM_EINVAL, "%s: k must be even", spec);
    if ((rc = spec_num(spec, list, "hosts", SPEC_COUNT, a / 2, &b, err))) return rc;
    rc = etsim_netpkt_topo_fattree(t, (uint32_t)a, (uint32_t)b, rate, (int64_t)delay);
  } else {
    if ((rc = spec_num(spec, list, "nodes", SPEC_COUNT, SPEC_REQUIRED, &a, err)) ||
        (rc = spec_num(spec, list, "gpus", SPEC_COUNT, SPEC_REQUIRED, &b, err)) ||
        (rc = spec_num(spec, list, "spines", SPEC_COUNT0, 0, &c, err)) ||
        (rc = spec_num(spec, list, "nic", SPEC_RATE, rate, &rate, err)) ||
        (rc = spec_num(spec, list, "nvlink", SPEC_RATE, 9 * rate, &nvlink, err)) ||
        (rc = spec_num(spec, list, "fabric", SPEC_RATE, rate, &fabric, err)))
      return rc;
    rc = etsim_netpkt_topo_rail(t, (uint32_t)a, (uint32_t)b, (uint32_t)c, rate, nvlink, fabric,
                                (int64_t)delay);
  }
  if (rc) {
    etsim_netpkt_topo_free(t);
    return etsim_error_set(err, rc, "%s: %s", spec,
                           rc == ETSIM_ENOMEM ? "out of memory" : "these sizes make no network");
  }
  if (!(t->name = etsim_malloc(strlen(spec) + 1))) {
    etsim_netpkt_topo_free(t);
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  memcpy(t->name, spec, strlen(spec) + 1);
  return 0;
}

/* A rate as the ns-3 files write it: whole Gbps or Mbps when exact. */
static void put_rate(FILE *f, uint64_t bps) {
  if (bps % 1000000000ull == 0) fprintf(f, "%lluGbps", (unsigned long long)(bps / 1000000000ull));
  else if (bps % 1000000ull == 0) fprintf(f, "%lluMbps", (unsigned long long)(bps / 1000000ull));
  else fprintf(f, "%llubps", (unsigned long long)bps);
}

int etsim_netpkt_topo_write(const etsim_netpkt_topo_t *t, const char *path, etsim_error_t *err) {
  etsim_outfile_t o;
  int rc = etsim_outfile_open(&o, path, err);
  if (rc) return rc;
  FILE *f = o.fp;
  uint32_t n_sw = 0;
  for (uint32_t v = 0; v < t->n_nodes; v++) n_sw += t->is_switch[v] != 0;
  fprintf(f, "%u %u %zu\n", t->n_nodes, n_sw, t->n_links);
  for (uint32_t v = 0, k = 0; v < t->n_nodes; v++)
    if (t->is_switch[v]) fprintf(f, "%s%u", k++ ? " " : "", v);
  fputc('\n', f);
  for (size_t l = 0; l < t->n_links; l++) {
    const etsim_netpkt_link_t *e = &t->links[l];
    fprintf(f, "%u %u ", e->a, e->b);
    put_rate(f, e->rate_bps);
    /* ms with enough digits for whole ps, as the ns-3 reader takes it */
    fprintf(f, " %.9gms %.17g\n", (double)e->delay_ps / 1e9, e->error_rate);
  }
  if (ferror(f)) {
    etsim_outfile_abort(&o);
    return etsim_error_set(err, ETSIM_EIO, "%s: write failed", path);
  }
  return etsim_outfile_commit(&o, err);
}
