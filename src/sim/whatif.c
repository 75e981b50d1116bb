/*
 * whatif.c — the what-if specs: per-NPU compute speed (--npu-speed) and
 * link degradation (--link-degrade) per dimension or per NPU and
 * dimension, parsed into plain arrays the simulator and network read; on the flow and packet
 * backends the same options by cable of the topology file, which the network applies (docs/sim.md,
 * "What-if").
 */
#include "sim_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

/* Speeds and factors are kept in a range where times stay far inside the
 * clock's horizon and a typo (0.0007 for 0.7) is not silently simulated
 * for days. */
#define FACTOR_MIN 1e-3
#define FACTOR_MAX 1e3

/* The spec as JSON: inline when it starts with '{', else a file.  `where`
 * receives what error messages call it. */
static json_t *load_spec(const char *spec, const char *opt, char *where, size_t n_where,
                         etsim_error_t *err) {
  json_error_t je;
  json_t *root;
  const char *s = spec;
  while (*s == ' ' || *s == '\t') s++;
  if (*s == '{') {
    snprintf(where, n_where, "%s", opt);
    root = json_loads(s, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
      etsim_error_set(err, ETSIM_EFORMAT, "%s: inline JSON, column %d: %s", opt, je.column,
                      je.text);
      return NULL;
    }
  } else {
    snprintf(where, n_where, "%s %s", opt, spec);
    /* Checked as an input: a folder or a missing file is named as such,
     * and no output of the run may replace the file. */
    etsim_error_t e2 = {0};
    if (etsim_json_load(spec, JSON_REJECT_DUPLICATES, &root, &e2)) {
      etsim_error_set(err, e2.code, "%s: %s", opt, e2.msg);
      return NULL;
    }
  }
  if (!json_is_object(root)) {
    etsim_error_set(err, ETSIM_EFORMAT, "%s: expected a JSON object {\"key\": value, ...}", where);
    json_decref(root);
    return NULL;
  }
  return root;
}

int etsim_sim__parse_u32(const char **s, uint32_t *out) {
  const char *p = *s;
  if (*p < '0' || *p > '9') return -1;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(p, &end, 10);
  if (errno || v > UINT32_MAX) return -1;
  *out = (uint32_t)v;
  *s = end;
  return 0;
}

static int factor_ok(double x) { return x >= FACTOR_MIN && x <= FACTOR_MAX; }

/* splitmix64 (Steele, Lea, Flood 2014): the generator docs/sim.md names,
 * chosen because it is a few lines and gives the same stream everywhere. */
static uint64_t splitmix64(uint64_t *st) {
  uint64_t z = (*st += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* A uniform double in (0, 1]: 53 random bits, never 0 (log below). */
static double unit(uint64_t *st) { return (double)((splitmix64(st) >> 11) + 1) * 0x1p-53; }

static int lognormal(const char *spec, const char *opt, uint32_t n, double *out,
                     etsim_error_t *err) {
  double sigma = -1, mu = 0;
  uint64_t seed = 1;
  const char *p = spec + strlen("lognormal:");
  while (*p) {
    const char *eq = strchr(p, '=');
    const char *comma = strchr(p, ',');
    if (!comma) comma = p + strlen(p);
    if (!eq || eq > comma)
      return etsim_error_set(err, ETSIM_EINVAL, "%s: '%.*s' in '%s' is not KEY=VALUE", opt,
                             (int)(comma - p), p, spec);
    size_t kl = (size_t)(eq - p);
    char val[64];
    size_t vl = (size_t)(comma - eq - 1);
    if (vl == 0 || vl >= sizeof val)
      return etsim_error_set(err, ETSIM_EINVAL, "%s: key \"%.*s\" has no usable value", opt,
                             (int)kl, p);
    memcpy(val, eq + 1, vl);
    val[vl] = 0;
    char *end;
    errno = 0;
    if (kl == 4 && strncmp(p, "seed", 4) == 0) {
      unsigned long long v = strtoull(val, &end, 10);
      if (errno || *end || val[0] == '-')
        return etsim_error_set(err, ETSIM_EINVAL,
                               "%s: key \"seed\": '%s' is not a whole number >= 0", opt, val);
      seed = v;
    } else if ((kl == 5 && strncmp(p, "sigma", 5) == 0) || (kl == 2 && strncmp(p, "mu", 2) == 0)) {
      double v = strtod(val, &end);
      int is_sigma = kl == 5;
      if (errno || *end || !isfinite(v) || (is_sigma && !(v >= 0 && v <= 2)) ||
          (!is_sigma && !(v >= -5 && v <= 5)))
        return etsim_error_set(err, ETSIM_EINVAL, "%s: key \"%s\": '%s' is not a number in %s", opt,
                               is_sigma ? "sigma" : "mu", val, is_sigma ? "[0, 2]" : "[-5, 5]");
      if (is_sigma) sigma = v;
      else mu = v;
    } else {
      return etsim_error_set(err, ETSIM_EINVAL,
                             "%s: unknown key \"%.*s\" in '%s' (lognormal takes sigma, mu, seed)",
                             opt, (int)kl, p, spec);
    }
    p = *comma ? comma + 1 : comma;
  }
  if (sigma < 0)
    return etsim_error_set(err, ETSIM_EINVAL, "%s: '%s' needs sigma= (e.g. lognormal:sigma=0.05)",
                           opt, spec);
  /* Box-Muller, one normal per NPU in id order from two uniforms. */
  uint64_t st = seed;
  for (uint32_t i = 0; i < n; i++) {
    double u1 = unit(&st), u2 = unit(&st);
    double z = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
    double x = exp(mu + sigma * z);
    if (!factor_ok(x))
      return etsim_error_set(err, ETSIM_EINVAL,
                             "%s: '%s' draws speed %g for NPU %u, outside [%g, %g]: use a smaller "
                             "sigma or mu",
                             opt, spec, x, i, FACTOR_MIN, FACTOR_MAX);
    out[i] = x;
  }
  return 0;
}

int etsim_sim_speed_parse(const char *spec, const char *opt, uint32_t n, double *out,
                          etsim_error_t *err) {
  for (uint32_t i = 0; i < n; i++) out[i] = 1.0;
  if (strncmp(spec, "lognormal:", 10) == 0) return lognormal(spec, opt, n, out, err);
  const char *colon = strchr(spec, ':');
  if (colon && spec[0] != '{' && colon - spec < 16 && strchr(spec, '=') > colon)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "%s: unknown distribution \"%.*s\" (lognormal is the one offered)", opt,
                           (int)(colon - spec), spec);
  char where[512];
  json_t *root = load_spec(spec, opt, where, sizeof where, err);
  if (!root) return err->code;
  /* Each NPU once: a key naming an NPU another key already set is a
   * mistake, not an override. */
  uint8_t *seen = etsim_calloc(n ? n : 1, 1);
  if (!seen) {
    json_decref(root);
    return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", opt);
  }
  int rc = 0;
  const char *key;
  json_t *v;
  json_object_foreach(root, key, v) {
    const char *p = key;
    uint32_t a, b;
    if (etsim_sim__parse_u32(&p, &a)) goto bad_key;
    b = a;
    if (*p == '-') {
      p++;
      if (etsim_sim__parse_u32(&p, &b)) goto bad_key;
    }
    if (*p) goto bad_key;
    if (a > b) {
      rc = etsim_error_set(err, ETSIM_EINVAL, "%s: key \"%s\": the range runs backwards", where,
                           key);
      break;
    }
    if (b >= n) {
      rc =
          etsim_error_set(err, ETSIM_EINVAL, "%s: key \"%s\": NPU %u is outside the %u-NPU network",
                          where, key, b, n);
      break;
    }
    if (!json_is_number(v) || !factor_ok(json_number_value(v))) {
      rc = etsim_error_set(err, ETSIM_EINVAL,
                           "%s: key \"%s\": the speed must be a number in [%g, %g] (1 = nominal, "
                           "0.5 = half speed)",
                           where, key, FACTOR_MIN, FACTOR_MAX);
      break;
    }
    for (uint32_t i = a; i <= b; i++) {
      if (seen[i]) {
        rc = etsim_error_set(err, ETSIM_EINVAL, "%s: key \"%s\": NPU %u is given a speed twice",
                             where, key, i);
        break;
      }
      seen[i] = 1;
      out[i] = json_number_value(v);
    }
    if (rc) break;
    continue;
  bad_key:
    rc = etsim_error_set(err, ETSIM_EINVAL,
                         "%s: key \"%s\" is not an NPU id or an inclusive range like \"32-47\"",
                         where, key);
    break;
  }
  etsim_free(seen);
  json_decref(root);
  return rc;
}

/* One dimension's factors from a number (bandwidth) or an object. */
static int degrade_entry(const char *where, const char *key, json_t *v, double *bw, double *lat,
                         etsim_error_t *err) {
  *bw = *lat = 1.0;
  if (json_is_number(v)) {
    *bw = json_number_value(v);
  } else if (json_is_object(v)) {
    const char *k;
    json_t *x;
    json_object_foreach(v, k, x) {
      double *dst = strcmp(k, "bw") == 0 ? bw : strcmp(k, "latency") == 0 ? lat : NULL;
      if (!dst)
        return etsim_error_set(err, ETSIM_EINVAL,
                               "%s: key \"%s\": unknown key \"%s\" (bw and latency are known)",
                               where, key, k);
      if (!json_is_number(x))
        return etsim_error_set(err, ETSIM_EINVAL, "%s: key \"%s\".\"%s\": expected a number", where,
                               key, k);
      *dst = json_number_value(x);
    }
  } else {
    return etsim_error_set(err, ETSIM_EINVAL,
                           "%s: key \"%s\": expected a bandwidth factor or {\"bw\": F, "
                           "\"latency\": F}",
                           where, key);
  }
  if (!factor_ok(*bw) || !factor_ok(*lat))
    return etsim_error_set(err, ETSIM_EINVAL, "%s: key \"%s\": factors must be in [%g, %g]", where,
                           key, FACTOR_MIN, FACTOR_MAX);
  return 0;
}

/* A --link-degrade key naming NPUs of a dimension: "D:N", "D:A-B" or
 * the spelled-out "dimD:npuN", "dimD:npuA-B".  0 with *d, *a, *b; -1 when
 * the key is not of that shape. */
static int parse_npu_key(const char *key, uint32_t *d, uint32_t *a, uint32_t *b) {
  const char *p = key;
  int spelled = strncmp(p, "dim", 3) == 0;
  if (spelled) p += 3;
  if (etsim_sim__parse_u32(&p, d) || *p++ != ':') return -1;
  if (spelled && strncmp(p, "npu", 3) != 0) return -1;
  if (spelled) p += 3;
  if (etsim_sim__parse_u32(&p, a)) return -1;
  *b = *a;
  if (*p == '-') {
    p++;
    if (etsim_sim__parse_u32(&p, b)) return -1;
  }
  return *p ? -1 : 0;
}

/* NPUs a..b's factors in dimension d, each (NPU, dimension) once. */
static int degrade_npus(const char *where, const char *key, const etsim_topo_t *topo, uint32_t d,
                        uint32_t a, uint32_t b, double bw, double lat, double *f_bw, double *f_lat,
                        etsim_error_t *err) {
  if (a > b)
    return etsim_error_set(err, ETSIM_EINVAL, "%s: key \"%s\": the range runs backwards", where,
                           key);
  if (b >= topo->total)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "%s: key \"%s\": NPU %u is outside the %u-NPU network", where, key, b,
                           topo->total);
  size_t nd = (size_t)topo->ndims;
  for (uint32_t x = a; x <= b; x++) {
    size_t k = (size_t)x * nd + d;
    /* 0 marks "not given yet": every factor given is >= FACTOR_MIN */
    if (f_bw[k] != 0)
      return etsim_error_set(err, ETSIM_EINVAL,
                             "%s: key \"%s\": NPU %u's links in dimension %u are given twice",
                             where, key, x, d);
    f_bw[k] = bw;
    f_lat[k] = lat;
  }
  return 0;
}

int etsim_sim_link_degrade(const char *spec, const char *opt, etsim_topo_t *topo,
                           etsim_error_t *err) {
  return etsim_sim_link_degrade_npus(spec, opt, topo, NULL, err);
}

int etsim_sim_link_degrade_npus(const char *spec, const char *opt, etsim_topo_t *topo,
                                etsim_net_npu_links_t *out, etsim_error_t *err) {
  if (out) out->bw = out->lat = NULL;
  char where[512];
  json_t *root = load_spec(spec, opt, where, sizeof where, err);
  if (!root) return err->code;
  double bw[ETSIM_TOPO_MAX_DIMS], lat[ETSIM_TOPO_MAX_DIMS];
  size_t nf = (size_t)topo->total * (size_t)topo->ndims;
  double *f = NULL; /* per NPU and dimension: bw factors, then lat factors */
  int rc = 0;
  const char *key;
  json_t *v;
  json_object_foreach(root, key, v) {
    const char *p = key;
    uint32_t d, a, b;
    if (parse_npu_key(key, &d, &a, &b) == 0) {
      if (!out) {
        rc = etsim_error_set(err, ETSIM_EUNSUPPORTED,
                             "%s: key \"%s\": per-NPU link factors are not taken here (the "
                             "dimension alone, \"%u\", is)",
                             where, key, d);
        break;
      }
      if (d >= (uint32_t)topo->ndims) {
        rc =
            etsim_error_set(err, ETSIM_EINVAL, "%s: key \"%s\": the network has dimensions 0 to %d",
                            where, key, topo->ndims - 1);
        break;
      }
      if (!f && !(f = etsim_calloc(2 * nf, sizeof *f))) {
        rc = etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", opt);
        break;
      }
      double fb, fl;
      if ((rc = degrade_entry(where, key, v, &fb, &fl, err)) ||
          (rc = degrade_npus(where, key, topo, d, a, b, fb, fl, f, f + nf, err)))
        break;
      continue;
    }
    if (etsim_sim__parse_u32(&p, &d) || *p) {
      rc = etsim_error_set(err, ETSIM_EINVAL,
                           "%s: key \"%s\" is not a dimension number (0 to %d) or NPUs of one, "
                           "\"D:N\", \"D:A-B\" (also \"dimD:npuN\"); cables of a topology "
                           "file (\"link:A-B\") need --backend flow or packet",
                           where, key, topo->ndims - 1);
      break;
    }
    if (d >= (uint32_t)topo->ndims) {
      rc = etsim_error_set(err, ETSIM_EINVAL, "%s: key \"%s\": the network has dimensions 0 to %d",
                           where, key, topo->ndims - 1);
      break;
    }
    if ((rc = degrade_entry(where, key, v, &bw[d], &lat[d], err))) break;
    topo->bw_gbps[d] *= bw[d];
    /* as topo.c converts, so a degraded network equals one written so */
    topo->bw_bytes_per_ns[d] = topo->bw_gbps[d] * 1073741824.0 / 1e9;
    topo->lat_ns[d] *= lat[d];
  }
  json_decref(root);
  if (rc || !f) {
    etsim_free(f);
    return rc;
  }
  for (size_t k = 0; k < nf; k++)
    if (f[k] == 0) f[k] = f[nf + k] = 1; /* not named: nominal */
  out->bw = f;
  out->lat = f + nf;
  return 0;
}

void etsim_sim_npu_links_free(etsim_net_npu_links_t *l) {
  etsim_free((void *)l->bw);
  l->bw = l->lat = NULL;
}

/* The time after '@' of a --fail spec at p: ns, or with a unit (ns, us,
 * ms, s), >= 0 and within the clock's horizon. */
static int fail_time(const char *p, const char *opt, const char *spec, int64_t *t_ps,
                     etsim_error_t *err) {
  errno = 0;
  char *end;
  double v = strtod(p, &end);
  double unit = 1;
  if (strcmp(end, "ns") == 0 || *end == 0) unit = 1;
  else if (strcmp(end, "us") == 0) unit = 1e3;
  else if (strcmp(end, "ms") == 0) unit = 1e6;
  else if (strcmp(end, "s") == 0) unit = 1e9;
  else
    return etsim_error_set(err, ETSIM_EINVAL, "%s: '%s': unknown time unit '%s' (ns, us, ms, s)",
                           opt, spec, end);
  double ns = v * unit;
  if (end == p || errno || !(v >= 0) || !etsim_des_ns_ok(ns))
    return etsim_error_set(err, ETSIM_EINVAL,
                           "%s: '%s': the time must be a number >= 0 within the clock's horizon",
                           opt, spec);
  *t_ps = llround(ns * ETSIM_PS_PER_NS);
  return 0;
}

int etsim_sim_fail_parse(const char *spec, const char *opt, uint32_t n_npus, uint32_t *npu,
                         int64_t *t_ps, etsim_error_t *err) {
  if (strncmp(spec, "link", 4) == 0)
    return etsim_error_set(err, ETSIM_EUNSUPPORTED,
                           "%s: '%s': link failures need --backend flow or packet (links of "
                           "--net-topology; an NPU's failure, npu:N@T, works here)",
                           opt, spec);
  const char *p = spec;
  if (strncmp(p, "npu:", 4) != 0)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "%s: '%s' is not npu:N@T or link:A-B@T (e.g. npu:5@1.5ms)", opt, spec);
  p += 4;
  if (etsim_sim__parse_u32(&p, npu) || *p != '@')
    return etsim_error_set(err, ETSIM_EINVAL, "%s: '%s': expected an NPU id after 'npu:', then '@'",
                           opt, spec);
  if (*npu >= n_npus)
    return etsim_error_set(err, ETSIM_EINVAL, "%s: '%s': NPU %u is outside the %u-NPU network", opt,
                           spec, *npu, n_npus);
  return fail_time(p + 1, opt, spec, t_ps, err);
}

/* "link:A-B" at *s (advanced past it): 0, or -1 when it is not one. */
static int parse_link(const char **s, uint32_t *a, uint32_t *b) {
  const char *p = *s;
  if (strncmp(p, "link:", 5) != 0) return -1;
  p += 5;
  if (etsim_sim__parse_u32(&p, a) || *p != '-') return -1;
  p++;
  if (etsim_sim__parse_u32(&p, b)) return -1;
  *s = p;
  return 0;
}

int etsim_sim_link_whatif_parse(const char *spec, const char *opt, etsim_net_link_whatif_t **out,
                                size_t *n_out, etsim_error_t *err) {
  *out = NULL;
  *n_out = 0;
  char where[512];
  json_t *root = load_spec(spec, opt, where, sizeof where, err);
  if (!root) return err->code;
  size_t n = json_object_size(root);
  etsim_net_link_whatif_t *lw = etsim_calloc(n ? n : 1, sizeof *lw);
  if (!lw) {
    json_decref(root);
    return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", opt);
  }
  int rc = 0;
  size_t k = 0;
  const char *key;
  json_t *v;
  json_object_foreach(root, key, v) {
    const char *p = key;
    uint32_t a, b;
    if (parse_link(&p, &a, &b) || *p) {
      rc = etsim_error_set(err, ETSIM_EINVAL,
                           "%s: key \"%s\" is not a cable of the topology file, \"link:A-B\" "
                           "(nodes A and B); the flow and packet backends take their links from "
                           "--net-topology, not from the network's dimensions",
                           where, key);
      break;
    }
    if (a == b) {
      rc = etsim_error_set(err, ETSIM_EINVAL, "%s: key \"%s\": a cable joins two different nodes",
                           where, key);
      break;
    }
    /* one cable once: "link:3-17" and "link:17-3" are the same cable */
    for (size_t j = 0; j < k && !rc; j++)
      if ((lw[j].a == a && lw[j].b == b) || (lw[j].a == b && lw[j].b == a))
        rc = etsim_error_set(err, ETSIM_EINVAL, "%s: key \"%s\": the cable is given twice", where,
                             key);
    if (rc) break;
    if ((rc = degrade_entry(where, key, v, &lw[k].bw, &lw[k].lat, err))) break;
    lw[k].a = a;
    lw[k].b = b;
    lw[k].opt = opt;
    snprintf(lw[k].key, sizeof lw[k].key, "%s", key);
    k++;
  }
  json_decref(root);
  if (rc) {
    etsim_free(lw);
    return rc;
  }
  *out = lw;
  *n_out = k;
  return 0;
}

int etsim_sim_fail_link_parse(const char *spec, const char *opt, etsim_net_link_whatif_t *out,
                              etsim_error_t *err) {
  const char *p = spec;
  memset(out, 0, sizeof *out);
  if (parse_link(&p, &out->a, &out->b) || *p != '@')
    return etsim_error_set(err, ETSIM_EINVAL,
                           "%s: '%s' is not link:A-B@T (the cable between nodes A and B of the "
                           "topology file, down from time T on)",
                           opt, spec);
  if (out->a == out->b)
    return etsim_error_set(err, ETSIM_EINVAL, "%s: '%s': a cable joins two different nodes", opt,
                           spec);
  snprintf(out->key, sizeof out->key, "%.*s", (int)(p - spec), spec);
  int rc = fail_time(p + 1, opt, spec, &out->t_ps, err);
  if (rc) return rc;
  out->bw = out->lat = 1.0;
  out->down = 1;
  out->opt = opt;
  return 0;
}
