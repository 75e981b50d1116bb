/*
 * pkt_config.c — the ns-3 RDMA simulator's "KEY value" configuration and
 * its flow file.
 *
 * Every key of the ns-3 config (HPCC repository and ASTRA-sim's fork) is
 * accepted; those without a meaning here (packet traces) are read and
 * ignored, those that would change behaviour we do not model
 * (MULTI_RATE 1, LINK_DOWN, HPCC-PINT) are refused with the key named.
 * Unknown keys are errors: a misspelt key must not silently fall back to a
 * default.
 */
#include "pkt_int.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void etsim_netpkt_cfg_default(etsim_netpkt_cfg_t *c) {
  memset(c, 0, sizeof *c);
  c->enable_qcn = 1;
  c->use_dynamic_pfc = 1;
  c->payload_bytes = 1000;
  c->cc_mode = ETSIM_NETPKT_CC_NONE;
  c->alpha_resume_us = 1;
  c->rate_decrease_us = 4;
  c->clamp_target_rate = 0;
  c->rp_timer_us = 900;
  c->ewma_gain = 0.00390625;
  c->fast_recovery_times = 1;
  c->rate_ai_bps = 50000000ull;
  c->rate_hai_bps = 100000000ull;
  c->min_rate_bps = 100000000ull;
  c->dctcp_rate_ai_bps = 1000000000ull;
  c->l2_chunk_size = 4000;
  c->l2_ack_interval = 1;
  c->has_win = 1;
  c->global_t = 0;
  c->var_win = 1;
  c->fast_react = 1;
  c->u_target = 0.95;
  c->mi_thresh = 0;
  c->int_multi = 1;
  c->rate_bound = 1;
  c->ack_high_prio = 0;
  /* ASTRA-sim's sample KMAX/KMIN/PMAX maps (KB, per link rate). */
  static const uint64_t r[] = {25000000000ull,  40000000000ull,  100000000000ull,
                               200000000000ull, 400000000000ull, 2400000000000ull};
  static const uint32_t kmax[] = {400, 800, 1600, 2400, 3200, 3200};
  static const uint32_t kmin[] = {100, 200, 400, 600, 800, 800};
  c->n_ecn = 6;
  for (int i = 0; i < 6; i++) {
    c->ecn_rate_bps[i] = r[i];
    c->kmax_kb[i] = kmax[i];
    c->kmin_kb[i] = kmin[i];
    c->pmax[i] = 0.2;
  }
  c->buffer_mb = 32;
  c->qlen_mon_start_ns = 0;
  c->qlen_mon_end_ns = 0;
  c->stop_ps = INT64_MAX;
  c->timely_alpha = 0.875;
  c->timely_beta = 0.8;
  c->timely_tlow_ns = 50000;
  c->timely_thigh_ns = 500000;
  c->timely_minrtt_ns = 20000;
  c->nack_interval_us = 500;
  c->seed = 1;
  c->tx_round_ps = 0;
  c->stall_ps = 10000000000ll; /* 10 ms of simulated time */
  c->qlen_interval_ns = 100;
}

/* Split `value` into at most `max` tokens; returns the count. */
static int split(const char *value, char tok[][64], int max) {
  int n = 0;
  const char *p = value;
  while (*p) {
    while (*p == ' ' || *p == '\t' || *p == '\r') p++;
    if (!*p) break;
    if (n == max) return max + 1;
    int k = 0;
    while (*p && *p != ' ' && *p != '\t' && *p != '\r') {
      if (k < 63) tok[n][k++] = *p;
      p++;
    }
    tok[n][k] = 0;
    n++;
  }
  return n;
}

/* A key whose value is a whole line of its own: an ECN map, a mode with
 * refused values, a unit conversion.  Gets the value's n tokens. */
typedef int (*key_set_fn)(etsim_netpkt_cfg_t *c, const char *key, char t[][64], int n,
                          etsim_error_t *err);
/* A key's range, checked after its one value is stored. */
typedef int (*key_check_fn)(const etsim_netpkt_cfg_t *c, const char *key, etsim_error_t *err);

static int set_ecn_map(etsim_netpkt_cfg_t *c, const char *key, char t[][64], int n,
                       etsim_error_t *err) {
  uint64_t cnt;
  if (n < 1 || etsim_net__pkt_parse_u64(t[0], &cnt) || cnt == 0 || cnt > ETSIM_NETPKT_MAX_ECN_RATES)
    return etsim_error_set(err, ETSIM_EINVAL, "%s: expected a count 1..%d then rate/value pairs",
                           key, ETSIM_NETPKT_MAX_ECN_RATES);
  if ((uint64_t)n != 1 + 2 * cnt)
    return etsim_error_set(err, ETSIM_EINVAL, "%s: count %llu needs %llu values, found %d", key,
                           (unsigned long long)cnt, (unsigned long long)(2 * cnt), n - 1);
  /* The three maps may list rates in different orders; keep a union. */
  int which = strcmp(key, "KMAX_MAP") == 0 ? 0 : strcmp(key, "KMIN_MAP") == 0 ? 1 : 2;
  for (uint64_t i = 0; i < cnt; i++) {
    uint64_t rate;
    double v;
    if (etsim_netpkt_parse_rate(t[1 + 2 * i], &rate))
      return etsim_error_set(err, ETSIM_EINVAL, "%s: bad rate '%s'", key, t[1 + 2 * i]);
    if (etsim_net__pkt_parse_double(t[2 + 2 * i], &v) || v < 0)
      return etsim_error_set(err, ETSIM_EINVAL, "%s: bad value '%s'", key, t[2 + 2 * i]);
    if (which == 2 && v > 1)
      return etsim_error_set(err, ETSIM_EINVAL, "%s: probability %g above 1", key, v);
    uint32_t k;
    for (k = 0; k < c->n_ecn; k++)
      if (c->ecn_rate_bps[k] == rate) break;
    if (k == c->n_ecn) {
      if (k == ETSIM_NETPKT_MAX_ECN_RATES)
        return etsim_error_set(err, ETSIM_EINVAL, "%s: more than %d rates", key,
                               ETSIM_NETPKT_MAX_ECN_RATES);
      c->n_ecn++;
      c->ecn_rate_bps[k] = rate;
      c->kmin_kb[k] = UINT32_MAX; /* unset markers */
      c->kmax_kb[k] = UINT32_MAX;
      c->pmax[k] = -1;
    }
    if (which == 0) c->kmax_kb[k] = (uint32_t)v;
    else if (which == 1) c->kmin_kb[k] = (uint32_t)v;
    else c->pmax[k] = v;
  }
  return 0;
}

static int set_cc_mode(etsim_netpkt_cfg_t *c, const char *key, char t[][64], int n,
                       etsim_error_t *err) {
  (void)key;
  uint64_t v;
  if (n != 1 || etsim_net__pkt_parse_u64(t[0], &v))
    return etsim_error_set(err, ETSIM_EINVAL, "CC_MODE: expected an integer");
  if (v == 12) v = ETSIM_NETPKT_CC_NONE; /* ns-3's second number for PFC alone */
  if (v == 10)
    return etsim_error_set(err, ETSIM_EUNSUPPORTED, "CC_MODE 10 (HPCC-PINT) is not implemented");
  if (v > INT_MAX || !etsim_net__pkt_cc_ops((int)v)) {
    char list[128];
    return etsim_error_set(err, ETSIM_EINVAL, "CC_MODE %llu unknown (%s; 12 none too)",
                           (unsigned long long)v, etsim_net__pkt_cc_modes(list, sizeof list));
  }
  c->cc_mode = (int)v;
  return 0;
}

static int set_stop_time(etsim_netpkt_cfg_t *c, const char *key, char t[][64], int n,
                         etsim_error_t *err) {
  (void)key;
  double s;
  if (n != 1 || etsim_net__pkt_parse_double(t[0], &s) || s < 0)
    return etsim_error_set(err, ETSIM_EINVAL, "SIMULATOR_STOP_TIME: expected seconds >= 0");
  c->stop_ps = s * 1e12 >= 9.2e18 ? INT64_MAX : (int64_t)llround(s * 1e12);
  return 0;
}

static int set_link_down(etsim_netpkt_cfg_t *c, const char *key, char t[][64], int n,
                         etsim_error_t *err) {
  (void)c, (void)key;
  uint64_t a = 0, b = 0, d = 0;
  if (n != 3 || etsim_net__pkt_parse_u64(t[0], &a) || etsim_net__pkt_parse_u64(t[1], &b) ||
      etsim_net__pkt_parse_u64(t[2], &d))
    return etsim_error_set(err, ETSIM_EINVAL, "LINK_DOWN: expected 'time_us node node'");
  if (a || b || d)
    return etsim_error_set(err, ETSIM_EUNSUPPORTED,
                           "LINK_DOWN: taking links down is not modelled "
                           "(only '0 0 0')");
  return 0;
}

static int set_nic_pause(etsim_netpkt_cfg_t *c, const char *key, char t[][64], int n,
                         etsim_error_t *err) {
  (void)c, (void)key;
  uint64_t v;
  if (n != 1 || etsim_net__pkt_parse_u64(t[0], &v))
    return etsim_error_set(err, ETSIM_EINVAL, "NIC_TOTAL_PAUSE_TIME: expected an integer");
  if (v)
    return etsim_error_set(err, ETSIM_EUNSUPPORTED,
                           "NIC_TOTAL_PAUSE_TIME: NIC pause injection is "
                           "not modelled (only 0)");
  return 0;
}

/* PINT_LOG_BASE, PINT_PROB: only used by HPCC-PINT, read and ignored. */
static int set_pint(etsim_netpkt_cfg_t *c, const char *key, char t[][64], int n,
                    etsim_error_t *err) {
  (void)c;
  double v;
  if (n != 1 || etsim_net__pkt_parse_double(t[0], &v))
    return etsim_error_set(err, ETSIM_EINVAL, "%s: expected a number", key);
  return 0;
}

static int set_seed(etsim_netpkt_cfg_t *c, const char *key, char t[][64], int n,
                    etsim_error_t *err) {
  (void)key;
  uint64_t v;
  if (n != 1 || etsim_net__pkt_parse_u64(t[0], &v))
    return etsim_error_set(err, ETSIM_EINVAL, "SEED: expected an integer");
  c->seed = v;
  return 0;
}

static int set_stall(etsim_netpkt_cfg_t *c, const char *key, char t[][64], int n,
                     etsim_error_t *err) {
  (void)key;
  double v;
  if (n != 1 || etsim_net__pkt_parse_double(t[0], &v) || v <= 0)
    return etsim_error_set(err, ETSIM_EINVAL, "STALL_TIMEOUT_US: expected microseconds > 0");
  c->stall_ps = (int64_t)llround(v * 1e6);
  return 0;
}

static int check_payload(const etsim_netpkt_cfg_t *c, const char *key, etsim_error_t *err) {
  if (c->payload_bytes < 1 || c->payload_bytes > 65000)
    return etsim_error_set(err, ETSIM_EINVAL, "%s: %u not in 1..65000", key, c->payload_bytes);
  return 0;
}

static int check_multi_rate(const etsim_netpkt_cfg_t *c, const char *key, etsim_error_t *err) {
  (void)key;
  if (c->multi_rate)
    return etsim_error_set(err, ETSIM_EUNSUPPORTED,
                           "MULTI_RATE 1 (per-hop HPCC rates) is not "
                           "implemented");
  return 0;
}

static int check_u_target(const etsim_netpkt_cfg_t *c, const char *key, etsim_error_t *err) {
  (void)key;
  if (!(c->u_target > 0 && c->u_target <= 1))
    return etsim_error_set(err, ETSIM_EINVAL, "U_TARGET: %g not in (0, 1]", c->u_target);
  return 0;
}

static int check_ewma_gain(const etsim_netpkt_cfg_t *c, const char *key, etsim_error_t *err) {
  (void)key;
  if (!(c->ewma_gain > 0 && c->ewma_gain <= 1))
    return etsim_error_set(err, ETSIM_EINVAL, "EWMA_GAIN: %g not in (0, 1]", c->ewma_gain);
  return 0;
}

static int check_error_rate(const etsim_netpkt_cfg_t *c, const char *key, etsim_error_t *err) {
  (void)key;
  if (c->error_rate_per_link >= 1)
    return etsim_error_set(err, ETSIM_EINVAL, "ERROR_RATE_PER_LINK: %g not below 1",
                           c->error_rate_per_link);
  return 0;
}

static int check_back_to_zero(const etsim_netpkt_cfg_t *c, const char *key, etsim_error_t *err) {
  (void)key;
  if (c->l2_back_to_zero && !c->l2_chunk_size)
    return etsim_error_set(err, ETSIM_EINVAL, "L2_BACK_TO_ZERO 1 needs L2_CHUNK_SIZE > 0");
  return 0;
}

static int check_int_multi(const etsim_netpkt_cfg_t *c, const char *key, etsim_error_t *err) {
  (void)key;
  if (c->int_multi < 1) return etsim_error_set(err, ETSIM_EINVAL, "INT_MULTI must be >= 1");
  return 0;
}

static int check_qlen_interval(const etsim_netpkt_cfg_t *c, const char *key, etsim_error_t *err) {
  (void)key;
  if (c->qlen_interval_ns <= 0)
    return etsim_error_set(err, ETSIM_EINVAL, "QLEN_MON_INTERVAL must be > 0");
  return 0;
}

/* How a key's value is read: one token of a kind stored at an offset of
 * the config (then its range checked), or K_SET, a function that reads
 * all the tokens. */
typedef enum {
  K_BOOL,
  K_U32,
  K_DBL,
  K_RATE,
  K_PATH,
  K_IGNORE_PATH,
  K_IGNORE_INT,
  K_I64,
  K_SET
} kind_t;

typedef struct {
  const char *key;
  kind_t kind;
  size_t off;         /* where the value goes (K_BOOL .. K_I64) */
  key_set_fn set;     /* K_SET: reads the value */
  key_check_fn check; /* the stored value's range (NULL: any) */
} key_t_;

#define OFF(f) offsetof(etsim_netpkt_cfg_t, f)
static const key_t_ keys[] = {
    {"KMAX_MAP", K_SET, 0, set_ecn_map, NULL},
    {"KMIN_MAP", K_SET, 0, set_ecn_map, NULL},
    {"PMAX_MAP", K_SET, 0, set_ecn_map, NULL},
    {"CC_MODE", K_SET, 0, set_cc_mode, NULL},
    {"SIMULATOR_STOP_TIME", K_SET, 0, set_stop_time, NULL},
    {"LINK_DOWN", K_SET, 0, set_link_down, NULL},
    {"NIC_TOTAL_PAUSE_TIME", K_SET, 0, set_nic_pause, NULL},
    {"PINT_LOG_BASE", K_SET, 0, set_pint, NULL},
    {"PINT_PROB", K_SET, 0, set_pint, NULL},
    {"SEED", K_SET, 0, set_seed, NULL},
    {"STALL_TIMEOUT_US", K_SET, 0, set_stall, NULL},
    {"ENABLE_QCN", K_BOOL, OFF(enable_qcn), NULL, NULL},
    {"USE_DYNAMIC_PFC_THRESHOLD", K_BOOL, OFF(use_dynamic_pfc), NULL, NULL},
    {"PACKET_PAYLOAD_SIZE", K_U32, OFF(payload_bytes), NULL, check_payload},
    {"TOPOLOGY_FILE", K_PATH, OFF(topology_file), NULL, NULL},
    {"FLOW_FILE", K_PATH, OFF(flow_file), NULL, NULL},
    {"TRACE_FILE", K_IGNORE_PATH, 0, NULL, NULL},
    {"TRACE_OUTPUT_FILE", K_IGNORE_PATH, 0, NULL, NULL},
    {"FCT_OUTPUT_FILE", K_PATH, OFF(fct_file), NULL, NULL},
    {"PFC_OUTPUT_FILE", K_PATH, OFF(pfc_file), NULL, NULL},
    {"QLEN_MON_FILE", K_PATH, OFF(qlen_file), NULL, NULL},
    {"ALPHA_RESUME_INTERVAL", K_DBL, OFF(alpha_resume_us), NULL, NULL},
    {"RATE_DECREASE_INTERVAL", K_DBL, OFF(rate_decrease_us), NULL, NULL},
    {"CLAMP_TARGET_RATE", K_BOOL, OFF(clamp_target_rate), NULL, NULL},
    {"RP_TIMER", K_DBL, OFF(rp_timer_us), NULL, NULL},
    {"EWMA_GAIN", K_DBL, OFF(ewma_gain), NULL, check_ewma_gain},
    {"FAST_RECOVERY_TIMES", K_U32, OFF(fast_recovery_times), NULL, NULL},
    {"RATE_AI", K_RATE, OFF(rate_ai_bps), NULL, NULL},
    {"RATE_HAI", K_RATE, OFF(rate_hai_bps), NULL, NULL},
    {"MIN_RATE", K_RATE, OFF(min_rate_bps), NULL, NULL},
    {"DCTCP_RATE_AI", K_RATE, OFF(dctcp_rate_ai_bps), NULL, NULL},
    {"ERROR_RATE_PER_LINK", K_DBL, OFF(error_rate_per_link), NULL, check_error_rate},
    {"L2_CHUNK_SIZE", K_U32, OFF(l2_chunk_size), NULL, NULL},
    {"L2_ACK_INTERVAL", K_U32, OFF(l2_ack_interval), NULL, NULL},
    {"L2_BACK_TO_ZERO", K_BOOL, OFF(l2_back_to_zero), NULL, check_back_to_zero},
    {"HAS_WIN", K_BOOL, OFF(has_win), NULL, NULL},
    {"GLOBAL_T", K_BOOL, OFF(global_t), NULL, NULL},
    {"VAR_WIN", K_BOOL, OFF(var_win), NULL, NULL},
    {"FAST_REACT", K_BOOL, OFF(fast_react), NULL, NULL},
    {"U_TARGET", K_DBL, OFF(u_target), NULL, check_u_target},
    {"MI_THRESH", K_U32, OFF(mi_thresh), NULL, NULL},
    {"INT_MULTI", K_U32, OFF(int_multi), NULL, check_int_multi},
    {"MULTI_RATE", K_BOOL, OFF(multi_rate), NULL, check_multi_rate},
    {"SAMPLE_FEEDBACK", K_BOOL, OFF(sample_feedback), NULL, NULL},
    {"RATE_BOUND", K_BOOL, OFF(rate_bound), NULL, NULL},
    {"ACK_HIGH_PRIO", K_BOOL, OFF(ack_high_prio), NULL, NULL},
    {"FLOW_ACK_LOAD", K_BOOL, OFF(flow_ack_load), NULL, NULL},
    {"ENABLE_TRACE", K_IGNORE_INT, 0, NULL, NULL},
    {"BUFFER_SIZE", K_U32, OFF(buffer_mb), NULL, NULL},
    {"QLEN_MON_START", K_I64, OFF(qlen_mon_start_ns), NULL, NULL},
    {"QLEN_MON_END", K_I64, OFF(qlen_mon_end_ns), NULL, NULL},
    {"QLEN_MON_INTERVAL", K_I64, OFF(qlen_interval_ns), NULL, check_qlen_interval},
    {"TIMELY_T_LOW", K_I64, OFF(timely_tlow_ns), NULL, NULL},
    {"TIMELY_T_HIGH", K_I64, OFF(timely_thigh_ns), NULL, NULL},
    {"TIMELY_MIN_RTT", K_I64, OFF(timely_minrtt_ns), NULL, NULL},
    {"TIMELY_ALPHA", K_DBL, OFF(timely_alpha), NULL, NULL},
    {"TIMELY_BETA", K_DBL, OFF(timely_beta), NULL, NULL},
    {"NACK_INTERVAL", K_DBL, OFF(nack_interval_us), NULL, NULL},
    {"TX_ROUND_PS", K_I64, OFF(tx_round_ps), NULL, NULL},
};

/* Key k's one value v into the config at k->off, by its kind. */
static int store_value(etsim_netpkt_cfg_t *c, const key_t_ *k, const char *v, etsim_error_t *err) {
  const char *key = k->key;
  char *f = (char *)c + k->off;
  uint64_t u;
  double d;
  switch (k->kind) {
    case K_BOOL:
      if (etsim_net__pkt_parse_u64(v, &u) || u > 1)
        return etsim_error_set(err, ETSIM_EINVAL, "%s: expected 0 or 1, not '%s'", key, v);
      *(int *)f = (int)u;
      break;
    case K_U32:
      if (etsim_net__pkt_parse_u64(v, &u) || u > UINT32_MAX)
        return etsim_error_set(err, ETSIM_EINVAL, "%s: expected a non-negative integer, not '%s'",
                               key, v);
      *(uint32_t *)f = (uint32_t)u;
      break;
    case K_I64:
      if (etsim_net__pkt_parse_u64(v, &u) || u > INT64_MAX)
        return etsim_error_set(err, ETSIM_EINVAL, "%s: expected a non-negative integer, not '%s'",
                               key, v);
      *(int64_t *)f = (int64_t)u;
      break;
    case K_IGNORE_INT:
      if (etsim_net__pkt_parse_u64(v, &u))
        return etsim_error_set(err, ETSIM_EINVAL, "%s: expected an integer", key);
      break;
    case K_DBL:
      if (etsim_net__pkt_parse_double(v, &d) || d < 0)
        return etsim_error_set(err, ETSIM_EINVAL, "%s: expected a number >= 0, not '%s'", key, v);
      *(double *)f = d;
      break;
    case K_RATE:
      if (etsim_netpkt_parse_rate(v, &u))
        return etsim_error_set(err, ETSIM_EINVAL, "%s: bad rate '%s' (e.g. 50Mb/s)", key, v);
      *(uint64_t *)f = u;
      break;
    case K_PATH:
      snprintf(f, ETSIM_NETPKT_PATH_MAX, "%s", v);
      break;
    case K_IGNORE_PATH:
    case K_SET:
      break;
  }
  return 0;
}

int etsim_netpkt_cfg_set(etsim_netpkt_cfg_t *c, const char *key, const char *value,
                         etsim_error_t *err) {
  char t[1 + 2 * ETSIM_NETPKT_MAX_ECN_RATES + 1][64];
  int n = split(value, t, 1 + 2 * ETSIM_NETPKT_MAX_ECN_RATES);
  if (n > 1 + 2 * ETSIM_NETPKT_MAX_ECN_RATES)
    return etsim_error_set(err, ETSIM_EINVAL, "%s: too many values", key);
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    const key_t_ *k = &keys[i];
    if (strcmp(k->key, key)) continue;
    if (k->kind == K_SET) return k->set(c, key, t, n, err);
    if (n != 1)
      return etsim_error_set(err, ETSIM_EINVAL, "%s: expected one value, found %d", key, n);
    int rc = store_value(c, k, t[0], err);
    if (rc) return rc;
    return k->check ? k->check(c, key, err) : 0;
  }
  return etsim_error_set(err, ETSIM_ENOTFOUND, "unknown key '%s'", key);
}

/* Resolve a relative path against the folder of `base`. */
static void resolve(char *path, const char *base) {
  if (!path[0] || path[0] == '/' || etsim_netpkt_topo_is_spec(path)) return;
  const char *slash = strrchr(base, '/');
  if (!slash) return;
  char tmp[ETSIM_NETPKT_PATH_MAX];
  int len = (int)(slash - base);
  if (snprintf(tmp, sizeof tmp, "%.*s/%s", len, base, path) < (int)sizeof tmp)
    memcpy(path, tmp, strlen(tmp) + 1);
}

int etsim_netpkt_cfg_load(etsim_netpkt_cfg_t *c, const char *path, etsim_error_t *err) {
  char *text;
  int rc = etsim_net__pkt_read_file(path, &text, err);
  if (rc) return rc;
  char *line = text;
  uint32_t lineno = 0;
  int maps_seen = 0;
  while (line && *line) {
    lineno++;
    char *nl = strchr(line, '\n');
    if (nl) *nl = 0;
    char *p = line;
    while (*p == ' ' || *p == '\t') p++;
    char *hash = strchr(p, '#');
    if (hash) *hash = 0;
    char *k = p;
    while (*p && *p != ' ' && *p != '\t' && *p != '\r') p++;
    if (*p) *p++ = 0;
    if (*k && *k != '\r') {
      /* The first ECN map in a file replaces the default maps. */
      if (!maps_seen &&
          (!strcmp(k, "KMAX_MAP") || !strcmp(k, "KMIN_MAP") || !strcmp(k, "PMAX_MAP"))) {
        maps_seen = 1;
        c->n_ecn = 0;
      }
      etsim_error_t e2 = {0};
      if ((rc = etsim_netpkt_cfg_set(c, k, p, &e2))) {
        etsim_error_set(err, rc, "%s:%u: %s", path, lineno, e2.msg);
        etsim_free(text);
        return rc;
      }
    }
    line = nl ? nl + 1 : NULL;
  }
  etsim_free(text);
  for (uint32_t i = 0; i < c->n_ecn; i++)
    if (c->kmin_kb[i] == UINT32_MAX || c->kmax_kb[i] == UINT32_MAX || c->pmax[i] < 0)
      return etsim_error_set(err, ETSIM_EINVAL,
                             "%s: rate %llu b/s is in one ECN map but not in "
                             "all of KMIN_MAP, KMAX_MAP and PMAX_MAP",
                             path, (unsigned long long)c->ecn_rate_bps[i]);
  resolve(c->topology_file, path);
  resolve(c->flow_file, path);
  resolve(c->fct_file, path);
  resolve(c->pfc_file, path);
  resolve(c->qlen_file, path);
  return 0;
}

int etsim_netpkt_flows_load(const char *path, etsim_netpkt_flow_t **out, size_t *n_out,
                            etsim_error_t *err) {
  char *text;
  int rc = etsim_net__pkt_read_file(path, &text, err);
  if (rc) return rc;
  pk_tok_t tk;
  pk_tok_init(&tk, text, path);
  uint64_t cnt;
  etsim_netpkt_flow_t *f = NULL;
  if (!pk_tok_next(&tk)) {
    rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:1: missing flow count", path);
    goto done;
  }
  if (etsim_net__pkt_parse_u64(tk.tok, &cnt) || cnt > 100000000) {
    rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%u: bad flow count '%s'", path, tk.tok_line,
                         tk.tok);
    goto done;
  }
  /* A flow is six numbers and their separators, 12 bytes at least: a
   * count the file cannot hold would allocate for nothing (a 60-byte file
   * claiming 8e7 flows asked for 3.2 GB).  A short file a little under its
   * count reads on, to name the first flow missing. */
  if (cnt > strlen(text) / 11 + 1024) {
    rc = etsim_error_set(err, ETSIM_EFORMAT,
                         "%s:%u: %llu flows claimed in a file of %zu bytes (a flow takes 12 at "
                         "least)",
                         path, tk.tok_line, (unsigned long long)cnt, strlen(text));
    goto done;
  }
  f = etsim_calloc(cnt ? cnt : 1, sizeof *f);
  if (!f) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
    goto done;
  }
  static const char *what[] = {"source",           "destination", "priority group",
                               "destination port", "size",        "start time"};
  for (uint64_t i = 0; i < cnt; i++) {
    uint64_t v[5];
    double start = 0;
    uint32_t line = 0;
    for (int k = 0; k < 6; k++) {
      if (!pk_tok_next(&tk)) {
        if (k)
          rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%u: flow %llu: missing %s (line ends)", path,
                               line, (unsigned long long)i + 1, what[k]);
        else
          rc = etsim_error_set(err, ETSIM_EFORMAT,
                               "%s:%u: flow %llu of %llu: missing source (file "
                               "ends)",
                               path, tk.tok_line, (unsigned long long)i + 1,
                               (unsigned long long)cnt);
        goto done;
      }
      if (k == 0) line = tk.tok_line;
      if (tk.tok_line != line) {
        rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%u: flow %llu: missing %s (line ends)", path,
                             line, (unsigned long long)i + 1, what[k]);
        goto done;
      }
      int bad = k < 5 ? etsim_net__pkt_parse_u64(tk.tok, &v[k])
                      : (etsim_net__pkt_parse_double(tk.tok, &start) || !(start >= 0) ||
                         start > 4.6e6); /* s: under the 2^62 ps horizon (fuzz_flows) */
      if (!bad && k < 5 && v[k] > UINT32_MAX && k != 4) bad = 1;
      if (bad) {
        rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%u: bad %s '%s'", path, tk.tok_line, what[k],
                             tk.tok);
        goto done;
      }
    }
    if (v[2] < 1 || v[2] > 7) {
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%u: priority group %llu not in 1..7", path, line,
                           (unsigned long long)v[2]);
      goto done;
    }
    if (v[3] > 65535) {
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%u: port %llu above 65535", path, line,
                           (unsigned long long)v[3]);
      goto done;
    }
    if (v[4] == 0) {
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%u: flow of 0 bytes", path, line);
      goto done;
    }
    f[i].src = (uint32_t)v[0];
    f[i].dst = (uint32_t)v[1];
    f[i].pg = (uint32_t)v[2];
    f[i].dport = (uint32_t)v[3];
    f[i].size_bytes = v[4];
    f[i].start_ps = (int64_t)llround(start * 1e12);
    f[i].line = line;
  }
  if (pk_tok_next(&tk)) {
    rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%u: unexpected '%s' after %llu flows", path,
                         tk.tok_line, tk.tok, (unsigned long long)cnt);
    goto done;
  }
  *out = f;
  *n_out = (size_t)cnt;
  f = NULL;
  rc = 0;
done:
  etsim_free(f);
  etsim_free(text);
  return rc;
}

int etsim_netpkt_flows_send(const etsim_netpkt_level_t *lv, void *net,
                            const etsim_netpkt_topo_t *topo, const etsim_netpkt_flow_t *flows,
                            size_t n_flows, const char *path, etsim_error_t *err) {
  for (size_t i = 0; i < n_flows; i++) {
    const etsim_netpkt_flow_t *f = &flows[i];
    if (f->src >= topo->n_nodes || f->dst >= topo->n_nodes)
      return etsim_error_set(err, ETSIM_EINVAL,
                             "%s:%u: flow %zu: node %u does not exist (%u nodes)", path, f->line, i,
                             f->src >= topo->n_nodes ? f->src : f->dst, topo->n_nodes);
    etsim_netpkt_msg_t m = {
        f->src, f->dst, f->size_bytes, f->start_ps, (uint8_t)f->pg, (uint16_t)f->dport, NULL, NULL};
    int rc = lv->send(net, &m, NULL, err);
    if (rc) {
      etsim_error_prefix(err, "%s:%u", path, f->line);
      return rc;
    }
  }
  return 0;
}
