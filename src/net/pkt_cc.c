/*
 * pkt_cc.c — congestion control as method tables: none (PFC only), DCQCN
 * (Mellanox timer variant), HPCC (rate form, one rate for all hops),
 * TIMELY and DCTCP (rate emulation), each updating qp->rate (bits/s) from
 * ACK feedback and timers as the ns-3 RDMA model does (rdma-hw.cc; the
 * update rules are summarised in docs/netsim.md).  Parameters come from the
 * ns-3 config keys in etsim_netpkt_cfg_t.
 */
#include "pkt_int.h"

#include <math.h>

static uint64_t clamp_rate(uint64_t r, uint64_t lo, uint64_t hi) {
  if (r < lo) r = lo;
  if (r > hi) r = hi;
  return r;
}

static uint64_t scale(uint64_t r, double f) {
  double v = (double)r * f;
  return v <= 0 ? 0 : (uint64_t)v;
}

/* ------------------------------------------------------------------ none */

static void none_init(pk_net_t *n, pk_qp_t *q) {
  (void)n;
  (void)q;
}

const pk_cc_ops_t etsim_net__pkt_cc_none = {0, none_init, NULL, NULL};

/* ----------------------------------------------------------------- DCQCN */

enum { T_ALPHA = 0, T_DEC = 1, T_RP = 2 };

static void dcqcn_init(pk_net_t *n, pk_qp_t *q) {
  (void)n;
  q->cc.dcqcn.alpha = 1;
  q->cc.dcqcn.target = q->max_rate;
  q->cc.dcqcn.first_cnp = 1;
}

static int64_t us(double v) { return (int64_t)llround(v * 1e6); }

static void dcqcn_ack(pk_net_t *n, pk_qp_t *q, const pk_hdr_t *ack) {
  if (!(ack->flags & PK_HDR_ECN)) return;
  q->cc.dcqcn.alpha_cnp = 1;
  q->cc.dcqcn.dec_cnp = 1;
  if (q->cc.dcqcn.first_cnp) {
    q->cc.dcqcn.alpha = 1;
    q->cc.dcqcn.alpha_cnp = 0;
    pk_timer(n, q, T_ALPHA, us(n->cfg.alpha_resume_us));
    /* 1 ns later so the decrease follows the alpha update */
    pk_timer(n, q, T_DEC, us(n->cfg.rate_decrease_us) + 1000);
    q->cc.dcqcn.target = q->rate;
    q->cc.dcqcn.first_cnp = 0;
  }
}

static void dcqcn_timer(pk_net_t *n, pk_qp_t *q, int id) {
  double g = n->cfg.ewma_gain;
  if (id == T_ALPHA) {
    q->cc.dcqcn.alpha = (1 - g) * q->cc.dcqcn.alpha + (q->cc.dcqcn.alpha_cnp ? g : 0);
    q->cc.dcqcn.alpha_cnp = 0;
    pk_timer(n, q, T_ALPHA, us(n->cfg.alpha_resume_us));
  } else if (id == T_DEC) {
    pk_timer(n, q, T_DEC, us(n->cfg.rate_decrease_us));
    if (q->cc.dcqcn.dec_cnp) {
      if (n->cfg.clamp_target_rate || q->cc.dcqcn.stage != 0) q->cc.dcqcn.target = q->rate;
      uint64_t r = scale(q->rate, 1 - q->cc.dcqcn.alpha / 2);
      q->rate = r > n->cfg.min_rate_bps ? r : n->cfg.min_rate_bps;
      q->cc.dcqcn.stage = 0;
      q->cc.dcqcn.dec_cnp = 0;
      pk_timer_cancel(q, T_RP);
      pk_timer(n, q, T_RP, us(n->cfg.rp_timer_us));
    }
  } else {
    pk_timer(n, q, T_RP, us(n->cfg.rp_timer_us));
    uint32_t f = n->cfg.fast_recovery_times;
    if (q->cc.dcqcn.stage > f || q->cc.dcqcn.stage == f) {
      uint64_t inc = q->cc.dcqcn.stage == f ? n->cfg.rate_ai_bps : n->cfg.rate_hai_bps;
      q->cc.dcqcn.target += inc;
      if (q->cc.dcqcn.target > q->max_rate) q->cc.dcqcn.target = q->max_rate;
    }
    q->rate = q->rate / 2 + q->cc.dcqcn.target / 2;
    q->cc.dcqcn.stage++;
  }
}

const pk_cc_ops_t etsim_net__pkt_cc_dcqcn = {0, dcqcn_init, dcqcn_ack, dcqcn_timer};

/* ------------------------------------------------------------------ HPCC */

static void hpcc_init(pk_net_t *n, pk_qp_t *q) {
  (void)n;
  q->cc.hpcc.cur_rate = q->max_rate;
  q->cc.hpcc.u = 1;
}

static void hpcc_update(pk_net_t *n, pk_qp_t *q, const pk_hdr_t *ack, int fast) {
  uint64_t next_seq = q->snd_nxt;
  pk_hop_t *hop = n->qp_hops + (size_t)(q - n->qps) * PK_MAX_HOPS;
  if (q->cc.hpcc.last_seq == 0) { /* first RTT: remember the INT stack */
    q->cc.hpcc.last_seq = next_seq;
    q->cc.hpcc.nhop = ack->nhop;
    for (uint32_t i = 0; i < ack->nhop; i++) hop[i] = pk_hops(n, ack)[i];
    return;
  }
  double T = (double)q->base_rtt_ps;
  double win = q->win ? (double)q->win : (double)q->base_rtt_ps * 1e-12 * (double)q->max_rate / 8;
  double U = 0;
  int64_t dt = 0;
  int any = 0;
  for (uint32_t i = 0; i < ack->nhop; i++) {
    const pk_hop_t *h = &pk_hops(n, ack)[i];
    pk_hop_t *prev = &hop[i];
    if (n->cfg.sample_feedback && h->qlen_bytes == 0 && fast) continue;
    int64_t tau = h->ts_ps - prev->ts_ps;
    if (i >= q->cc.hpcc.nhop || tau <= 0) {
      *prev = *h;
      continue;
    }
    any = 1;
    double tx_rate = (double)(h->tx_bytes - prev->tx_bytes) * 8 / ((double)tau * 1e-12);
    uint64_t ql = h->qlen_bytes < prev->qlen_bytes ? h->qlen_bytes : prev->qlen_bytes;
    double u = tx_rate / (double)h->rate_bps +
               (double)ql * (double)q->max_rate / (double)h->rate_bps / win;
    if (u > U) {
      U = u;
      dt = tau;
    }
    *prev = *h;
  }
  if (ack->nhop > q->cc.hpcc.nhop) q->cc.hpcc.nhop = ack->nhop;
  if (any) {
    if ((double)dt > T) dt = (int64_t)T;
    q->cc.hpcc.u = (q->cc.hpcc.u * (T - (double)dt) + U * (double)dt) / T;
    double max_c = q->cc.hpcc.u / n->cfg.u_target;
    uint64_t new_rate;
    uint32_t new_stage;
    if (max_c >= 1 || q->cc.hpcc.inc_stage >= n->cfg.mi_thresh) {
      /* R_c / k, truncated as ns-3's DataRate / double */
      new_rate = (uint64_t)((double)q->cc.hpcc.cur_rate / max_c) + n->cfg.rate_ai_bps;
      new_stage = 0;
    } else {
      new_rate = q->cc.hpcc.cur_rate + n->cfg.rate_ai_bps;
      new_stage = q->cc.hpcc.inc_stage + 1;
    }
    new_rate = clamp_rate(new_rate, n->cfg.min_rate_bps, q->max_rate);
    pk_change_rate(n, q, new_rate);
    if (!fast) {
      q->cc.hpcc.cur_rate = new_rate;
      q->cc.hpcc.inc_stage = new_stage;
    }
  }
  if (!fast && next_seq > q->cc.hpcc.last_seq) q->cc.hpcc.last_seq = next_seq;
}

static void hpcc_ack(pk_net_t *n, pk_qp_t *q, const pk_hdr_t *ack) {
  if (ack->seq > q->cc.hpcc.last_seq) hpcc_update(n, q, ack, 0);
  else if (n->cfg.fast_react) hpcc_update(n, q, ack, 1);
}

/* INT header: 5 hops of 8 bytes + 2 (ns-3 IntHeader, NORMAL mode). */
const pk_cc_ops_t etsim_net__pkt_cc_hpcc = {42, hpcc_init, hpcc_ack, NULL};

/* ---------------------------------------------------------------- TIMELY */

static void timely_init(pk_net_t *n, pk_qp_t *q) {
  (void)n;
  q->cc.timely.cur_rate = q->max_rate;
}

static void timely_ack(pk_net_t *n, pk_qp_t *q, const pk_hdr_t *ack) {
  if (ack->seq <= q->cc.timely.last_seq) return; /* ns-3's TIMELY has no fast reaction */
  uint64_t next_seq = q->snd_nxt;
  int64_t rtt = (n->now - ack->ts_ps) / 1000; /* ns */
  if (q->cc.timely.last_seq != 0) {
    double a = n->cfg.timely_alpha, b = n->cfg.timely_beta;
    double new_diff = (double)(rtt - q->cc.timely.last_rtt);
    double diff = (1 - a) * q->cc.timely.rtt_diff + a * new_diff;
    double grad = diff / (double)n->cfg.timely_minrtt_ns;
    int inc = 0;
    double c = 0;
    if (rtt < n->cfg.timely_tlow_ns) inc = 1;
    else if (rtt > n->cfg.timely_thigh_ns)
      c = 1 - b * (1 - (double)n->cfg.timely_thigh_ns / (double)rtt);
    else if (grad <= 0) inc = 1;
    else {
      c = 1 - b * grad;
      if (c < 0) c = 0;
    }
    if (inc) {
      uint64_t add = q->cc.timely.inc_stage < 5 ? n->cfg.rate_ai_bps : n->cfg.rate_hai_bps;
      q->rate = q->cc.timely.cur_rate + add;
      if (q->rate > q->max_rate) q->rate = q->max_rate;
      q->cc.timely.inc_stage++;
    } else {
      uint64_t r = scale(q->cc.timely.cur_rate, c);
      q->rate = r > n->cfg.min_rate_bps ? r : n->cfg.min_rate_bps;
      q->cc.timely.inc_stage = 0;
    }
    q->cc.timely.cur_rate = q->rate;
    q->cc.timely.rtt_diff = diff;
  }
  if (next_seq > q->cc.timely.last_seq) {
    q->cc.timely.last_seq = next_seq;
    q->cc.timely.last_rtt = rtt;
  }
}

/* 8-byte timestamp header (ns-3 IntHeader, TS mode). */
const pk_cc_ops_t etsim_net__pkt_cc_timely = {8, timely_init, timely_ack, NULL};

/* ----------------------------------------------------------------- DCTCP */

static void dctcp_init(pk_net_t *n, pk_qp_t *q) {
  (void)n;
  q->cc.dctcp.alpha = 1;
}

static void dctcp_ack(pk_net_t *n, pk_qp_t *q, const pk_hdr_t *ack) {
  uint64_t seq = ack->seq, mtu = n->cfg.payload_bytes;
  int new_batch = 0;
  q->cc.dctcp.ecn_cnt += (ack->flags & PK_HDR_ECN) != 0;
  if (seq > q->cc.dctcp.last_seq) {
    new_batch = 1;
    if (q->cc.dctcp.last_seq == 0) {
      q->cc.dctcp.last_seq = q->snd_nxt;
      q->cc.dctcp.batch = q->snd_nxt / mtu + 1;
    } else {
      double frac = (double)q->cc.dctcp.ecn_cnt / (double)q->cc.dctcp.batch;
      if (frac > 1) frac = 1;
      double g = n->cfg.ewma_gain;
      q->cc.dctcp.alpha = (1 - g) * q->cc.dctcp.alpha + g * frac;
      q->cc.dctcp.last_seq = q->snd_nxt;
      q->cc.dctcp.ecn_cnt = 0;
      q->cc.dctcp.batch = (q->snd_nxt - seq) / mtu + 1;
    }
  }
  if (q->cc.dctcp.cwr && seq > q->cc.dctcp.high_seq) q->cc.dctcp.cwr = 0;
  if ((ack->flags & PK_HDR_ECN) && !q->cc.dctcp.cwr) {
    uint64_t r = scale(q->rate, 1 - q->cc.dctcp.alpha / 2);
    q->rate = r > n->cfg.min_rate_bps ? r : n->cfg.min_rate_bps;
    q->cc.dctcp.cwr = 1;
    q->cc.dctcp.high_seq = q->snd_nxt;
  }
  if (!q->cc.dctcp.cwr && new_batch) {
    uint64_t r = q->rate + n->cfg.dctcp_rate_ai_bps;
    q->rate = r < q->max_rate ? r : q->max_rate;
  }
}

const pk_cc_ops_t etsim_net__pkt_cc_dctcp = {0, dctcp_init, dctcp_ack, NULL};
