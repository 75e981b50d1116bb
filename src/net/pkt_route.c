/*
 * pkt_route.c — routes of the packet-level network (and of the flow level,
 * which uses the same ones), found as ns-3's CalculateRoute finds them but
 * without its tables of one entry per host pair.
 *
 * ns-3 runs a breadth-first search from every host through switches only
 * (hosts never transit) and keeps, per node and destination host, the
 * neighbours one step closer in the order the search expanded them; a
 * switch picks one of them by the ECMP hash of the packet's tuple.  It also
 * keeps per host pair the delay, serialisation and bottleneck of the path
 * the search found first (the base RTT, window and standalone FCT).  Both
 * are quadratic in hosts: a 8,192-host fat-tree took 2.6 GB and 39 s before
 * the first packet.
 *
 * Here set-up only orders each node's neighbours (linear in links) and
 * gives every host a "key": the switch it hangs from when it has one link
 * (the search from such a host expands that switch first and then exactly
 * as a search from the switch would), otherwise the host itself.  The
 * search from a key is run the first time a flow needs it and keeps, per
 * switch, the distance and the expansion rank: the next hops of a switch
 * are its neighbours one step closer, in rank order; the first of them is
 * the one the search discovered it from, so following first next hops
 * retraces ns-3's per-pair path.  Memory is 8 bytes per switch per key in
 * use (a k = 64 fat-tree: 2,048 keys x 5,120 switches, 84 MB if every host
 * receives).
 */
#include "pkt_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ns-3's address of a host (the ECMP hash reads it); here rather than in
 * pkt_engine.c so that calls between the two files go one way. */
uint32_t etsim_netpkt_host_ip(uint32_t node) {
  return 0x0b000001u + (node / 256u) * 0x00010000u + (node % 256u) * 0x100u;
}

/* MurmurHash3 (x86, 32-bit) over 12 bytes, as the ns-3 switches use. */
uint32_t etsim_net__pkt_murmur12(uint32_t w0, uint32_t w1, uint32_t w2, uint32_t seed) {
  uint32_t h = seed, w[3] = {w0, w1, w2};
  for (int i = 0; i < 3; i++) {
    uint32_t k = w[i] * 0xcc9e2d51u;
    k = (k << 15) | (k >> 17);
    k *= 0x1b873593u;
    h ^= k;
    h = (h << 13) | (h >> 19);
    h = h * 5u + 0xe6546b64u;
  }
  h ^= 12u;
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Union-find over switches, for the connectivity check. */
static uint32_t uf_find(uint32_t *p, uint32_t x) {
  while (p[x] != x) {
    p[x] = p[p[x]];
    x = p[x];
  }
  return x;
}

/* Every pair of hosts must reach each other through switches.  Hosts never
 * transit, so host a reaches host b when some switch of a and some switch
 * of b are in one component of the switch-only graph.  Nearly always one
 * component holds a switch of every host; otherwise the pairs are checked
 * (only on such broken or unusual fabrics), naming the first pair a search
 * from each host in turn would find, as before. */
static int check_connected(pk_net_t *n, const char *tn, etsim_error_t *err) {
  uint32_t ns = n->n_sw;
  uint32_t *par = etsim_malloc((ns ? ns : 1) * sizeof *par);
  uint32_t *cnt = etsim_calloc(ns ? ns : 1, sizeof *cnt);
  uint32_t *mark = etsim_malloc((ns ? ns : 1) * sizeof *mark);
  int rc = 0;
  if (!par || !cnt || !mark) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto done;
  }
  for (uint32_t i = 0; i < ns; i++) par[i] = i;
  for (uint32_t i = 0; i < n->n_ports; i++) {
    const pk_port_t *p = &n->ports[i];
    if (!p->is_switch || !n->nodes[p->peer].is_switch) continue;
    uint32_t a = uf_find(par, n->nodes[p->node].sw_idx), b = uf_find(par, n->nodes[p->peer].sw_idx);
    if (a != b) par[a] = b;
  }
  /* components touched by every host: count each host once per component */
  for (uint32_t i = 0; i < ns; i++) mark[i] = PK_NONE;
  for (uint32_t hi = 0; hi < n->n_hosts; hi++) {
    const pk_node_t *h = &n->nodes[n->hosts[hi]];
    for (uint32_t k = 0; k < h->nports; k++) {
      uint32_t c = uf_find(par, n->nodes[n->ports[h->port0 + k].peer].sw_idx);
      if (mark[c] != hi) {
        mark[c] = hi;
        cnt[c]++;
      }
    }
  }
  for (uint32_t i = 0; i < ns; i++)
    if (cnt[i] == n->n_hosts) goto done;
  for (uint32_t hi = 0; hi < n->n_hosts; hi++) {
    const pk_node_t *h = &n->nodes[n->hosts[hi]];
    for (uint32_t i = 0; i < ns; i++) mark[i] = 0;
    for (uint32_t k = 0; k < h->nports; k++)
      mark[uf_find(par, n->nodes[n->ports[h->port0 + k].peer].sw_idx)] = 1;
    for (uint32_t hj = 0; hj < n->n_hosts; hj++) {
      const pk_node_t *g = &n->nodes[n->hosts[hj]];
      int ok = hj == hi;
      for (uint32_t k = 0; k < g->nports && !ok; k++)
        ok = mark[uf_find(par, n->nodes[n->ports[g->port0 + k].peer].sw_idx)];
      if (!ok) {
        rc = etsim_error_set(err, ETSIM_EINVAL,
                             "%s: topology is disconnected: host %u cannot reach host %u", tn,
                             n->hosts[hj], n->hosts[hi]);
        goto done;
      }
    }
  }
done:
  etsim_free(par);
  etsim_free(cnt);
  etsim_free(mark);
  return rc;
}

/* Drop every key's search and cached next hops (the links changed). */
static void keys_free(pk_net_t *n) {
  for (uint32_t k = 0; k < n->n_keys; k++) {
    if (n->key_d) etsim_free(n->key_d[k]);
    if (n->key_nh) etsim_free(n->key_nh[k]);
  }
  etsim_free(n->key_d);
  etsim_free(n->key_nh);
  n->key_d = NULL;
  n->key_nh = NULL;
  n->n_nh_pool = 0;
}

/* The switch-only graph of the searches, the hosts' keys and the ports'
 * routing copies (pk_rlink_t), over the cables that are up
 * (pk_port_t.down).  Run at set-up and again after a failure, when every
 * search and every cached next hop is thrown away. */
static int build_graph(pk_net_t *n) {
  uint32_t nn = n->n_nodes;
  keys_free(n);
  for (uint32_t i = 0; i < n->n_ports; i++) {
    const pk_port_t *p = &n->ports[i];
    n->rlink[i] = (pk_rlink_t){p->peer, p->peer_gport, n->nodes[p->peer].sw_idx,
                               (uint16_t)(i - n->nodes[p->node].port0), p->down};
  }
  etsim_free(n->sw_adj_off);
  etsim_free(n->sw_adj);
  n->sw_adj = NULL;
  uint32_t *sw_key = etsim_malloc((nn ? nn : 1) * sizeof *sw_key);
  if (!sw_key) return ETSIM_ENOMEM;
  /* the switch-only graph, compact, for the searches */
  size_t na = 0;
  n->sw_adj_off = etsim_malloc(((size_t)n->n_sw + 1) * sizeof *n->sw_adj_off);
  if (!n->sw_adj_off) {
    etsim_free(sw_key);
    return ETSIM_ENOMEM;
  }
  for (uint32_t s = 0; s < n->n_sw; s++) {
    const pk_node_t *nd = &n->nodes[n->sw_node[s]];
    n->sw_adj_off[s] = (uint32_t)na;
    for (uint32_t k = 0; k < nd->nports; k++)
      na += n->nodes[n->ports[nd->port0 + k].peer].is_switch && !n->ports[nd->port0 + k].down;
  }
  n->sw_adj_off[n->n_sw] = (uint32_t)na;
  n->sw_adj = etsim_malloc((2 * na + 1) * sizeof *n->sw_adj);
  if (!n->sw_adj) {
    etsim_free(sw_key);
    return ETSIM_ENOMEM;
  }
  for (uint32_t s = 0; s < n->n_sw; s++) {
    const pk_node_t *nd = &n->nodes[n->sw_node[s]];
    uint32_t *a = n->sw_adj + 2 * (size_t)n->sw_adj_off[s];
    for (uint32_t k = 0; k < nd->nports; k++) {
      uint32_t gp = nd->port0 + n->nbr[nd->port0 + k];
      const pk_node_t *w = &n->nodes[n->ports[gp].peer];
      if (!w->is_switch || n->ports[gp].down) continue;
      *a++ = w->sw_idx;
      *a++ = gp;
    }
  }
  /* keys: a host with one link shares its switch's search */
  for (uint32_t v = 0; v < nn; v++) sw_key[v] = PK_NONE;
  n->n_keys = 0;
  for (uint32_t hi = 0; hi < n->n_hosts; hi++) {
    uint32_t h = n->hosts[hi];
    const pk_node_t *nd = &n->nodes[h];
    /* links that are up: a host with none left is a key of its own whose
     * search reaches nothing */
    uint32_t live = 0, last = 0;
    for (uint32_t j = 0; j < nd->nports; j++)
      if (!n->ports[nd->port0 + j].down) live++, last = j;
    uint32_t root = live == 1 ? n->ports[nd->port0 + last].peer : h;
    if (live == 1 && sw_key[root] != PK_NONE) {
      n->host_key[hi] = sw_key[root];
      continue;
    }
    if (live == 1) sw_key[root] = n->n_keys;
    n->key_root[n->n_keys] = root;
    n->host_key[hi] = n->n_keys++;
  }
  n->key_d = etsim_calloc(n->n_keys ? n->n_keys : 1, sizeof *n->key_d);
  n->key_nh = etsim_calloc(n->n_keys ? n->n_keys : 1, sizeof *n->key_nh);
  etsim_free(sw_key);
  return n->key_d && n->key_nh ? 0 : ETSIM_ENOMEM;
}

int etsim_net__pkt_route_rebuild(pk_net_t *n) {
  for (size_t i = 0; i < n->n_pairs; i++) n->pairs[i].rtt_ps = -1; /* paths may have changed */
  return build_graph(n);
}

uint32_t etsim_net__pkt_pair_index(pk_net_t *n, uint32_t src, uint32_t dst) {
  uint32_t slot = (uint32_t)n->n_pairs;
  if (n->n_pairs >= PK_NONE - 1) return PK_NONE;
  int r = etsim_u64map_put(&n->pair_map, (uint64_t)src << 32 | dst, slot, &slot);
  if (r < 0) return PK_NONE;
  if (r == 1) {
    if (etsim_grow((void **)&n->pairs, &n->cap_pairs, n->n_pairs + 1, sizeof *n->pairs)) {
      etsim_u64map_del(&n->pair_map, (uint64_t)src << 32 | dst);
      return PK_NONE;
    }
    n->pairs[n->n_pairs++] = (pk_pair_t){-1, 0, 10000};
  }
  return slot;
}

int etsim_net__pkt_route_init(pk_net_t *n, const char *tn, etsim_error_t *err) {
  uint32_t nn = n->n_nodes;
  n->nbr = etsim_malloc((n->n_ports ? n->n_ports : 1) * sizeof *n->nbr);
  n->sw_node = etsim_malloc((nn ? nn : 1) * sizeof *n->sw_node);
  n->host_key = etsim_malloc((n->n_hosts ? n->n_hosts : 1) * sizeof *n->host_key);
  n->key_root = etsim_malloc((n->n_hosts ? n->n_hosts : 1) * sizeof *n->key_root);
  uint64_t *tmp = NULL;
  int rc = 0;
  if (!n->nbr || !n->sw_node || !n->host_key || !n->key_root) goto oom;
  n->n_sw = 0;
  uint32_t max_deg = 1;
  for (uint32_t v = 0; v < nn; v++) {
    pk_node_t *nd = &n->nodes[v];
    nd->sw_idx = PK_NONE;
    if (nd->is_switch) {
      nd->sw_idx = n->n_sw;
      n->sw_node[n->n_sw++] = v;
    }
    if (nd->nports > max_deg) max_deg = nd->nports;
  }
  /* Each node's neighbours in the order ns-3's CalculateRoute visits them:
   * its map keyed by Ptr<Node>, i.e. by the address of the node object.
   * Every SwitchNode holds a 1025 x 1025 x 8 byte counter (33.6 MB), so
   * glibc gives each its own mmap, and Linux places each new mapping below
   * the previous one: switches sort by decreasing id, after the hosts
   * (small objects on the heap below).  This decides the order of equal
   * next hops, so which one a flow's ECMP hash picks: on the 16-host Clos
   * ns-3 sends every flow by the spine etsim would pick with increasing
   * ids (the results are the same by symmetry, the PFC file's uplink port
   * numbers are not). */
  tmp = etsim_malloc(max_deg * sizeof *tmp);
  n->route_scratch = etsim_malloc(max_deg * sizeof *n->route_scratch);
  n->bfs_q = etsim_malloc((n->n_sw + 1) * sizeof *n->bfs_q);
  n->rlink = etsim_malloc((n->n_ports ? n->n_ports : 1) * sizeof *n->rlink);
  if (!tmp || !n->route_scratch || !n->bfs_q || !n->rlink) goto oom;
  for (uint32_t v = 0; v < nn; v++) {
    const pk_node_t *nd = &n->nodes[v];
    for (uint32_t k = 0; k < nd->nports; k++) {
      uint32_t w = n->ports[nd->port0 + k].peer;
      uint64_t key = n->nodes[w].is_switch ? 0x80000000u | (0x7fffffffu - w) : w;
      tmp[k] = key << 32 | k;
    }
    etsim_qsort(tmp, nd->nports, sizeof *tmp, cmp_u64);
    for (uint32_t k = 0; k < nd->nports; k++) n->nbr[nd->port0 + k] = (uint32_t)tmp[k];
  }
  if (build_graph(n)) goto oom;
  /* A fabric with hosts cut apart is an input error unless the caller
   * holds messages that have no route (the simulator's failures do). */
  rc = n->cfg.allow_disconnected ? 0 : check_connected(n, tn, err);
  goto done;
oom:
  rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
done:
  etsim_free(tmp);
  return rc;
}

void etsim_net__pkt_route_free(pk_net_t *n) {
  keys_free(n);
  etsim_free(n->nh_pool);
  etsim_free(n->nbr);
  etsim_free(n->sw_adj_off);
  etsim_free(n->sw_adj);
  etsim_free(n->sw_node);
  etsim_free(n->host_key);
  etsim_free(n->key_root);
  etsim_free(n->route_scratch);
  etsim_free(n->bfs_q);
  etsim_free(n->rlink);
}

/* The search from key k (see the top of the file): per switch, distance to
 * the key's hosts (the hosts themselves at 0, so the switch a host hangs
 * from is at 1) and expansion rank. */
static int key_search(pk_net_t *n, uint32_t k) {
  uint32_t ns = n->n_sw;
  uint32_t *d = etsim_malloc(((size_t)ns * 2 + 1) * sizeof *d);
  if (!d) return ETSIM_ENOMEM;
  for (size_t i = 0; i < (size_t)ns * 2; i++) d[i] = UINT32_MAX;
  uint32_t root = n->key_root[k], *q = n->bfs_q, rank = 1;
  size_t qh = 0, qt = 0;
  if (n->nodes[root].is_switch) {
    uint32_t s = n->nodes[root].sw_idx;
    d[2 * s] = 1;
    d[2 * s + 1] = rank++;
    q[qt++] = s;
  } else {
    const pk_node_t *nd = &n->nodes[root];
    for (uint32_t j = 0; j < nd->nports; j++) {
      const pk_port_t *p = &n->ports[nd->port0 + n->nbr[nd->port0 + j]];
      uint32_t s = n->nodes[p->peer].sw_idx;
      if (p->down || s == PK_NONE || d[2 * s] != UINT32_MAX) continue;
      d[2 * s] = 1;
      d[2 * s + 1] = rank++;
      q[qt++] = s;
    }
  }
  while (qh < qt) {
    uint32_t u = q[qh++], du = d[2 * u];
    const uint32_t *a = n->sw_adj + 2 * (size_t)n->sw_adj_off[u];
    const uint32_t *e = n->sw_adj + 2 * (size_t)n->sw_adj_off[u + 1];
    for (; a < e; a += 2) {
      uint32_t w = a[0];
      if (d[2 * w] != UINT32_MAX) continue;
      d[2 * w] = du + 1;
      d[2 * w + 1] = rank++;
      q[qt++] = w;
    }
  }
  n->key_d[k] = d;
  return 0;
}

int etsim_net__pkt_route_ready(pk_net_t *n, uint32_t host) {
  uint32_t k = n->host_key[n->nodes[host].host_idx];
  return n->key_d[k] ? 0 : key_search(n, k);
}

/* The distance the search d gives the switch at the far end of a host's
 * port gp; UINT32_MAX when the cable is down (or leads to a host). */
static uint32_t link_dist(const pk_net_t *n, const uint32_t *d, uint32_t gp) {
  const pk_rlink_t *l = &n->rlink[gp];
  return l->down || l->peer_sw == PK_NONE ? UINT32_MAX : d[2 * l->peer_sw];
}

/* The last hop: switch v's port to host `to`, looked up from the host's
 * side (a host has a link or a few, a switch dozens): the lowest local
 * port of v whose cable to `to` is up, as a scan of v's ports finds it. */
static uint32_t last_hop(pk_net_t *n, uint32_t v, uint32_t to) {
  const pk_node_t *h = &n->nodes[to], *sw = &n->nodes[v];
  uint32_t best = UINT32_MAX;
  for (uint32_t j = 0; j < h->nports; j++) {
    const pk_rlink_t *hl = &n->rlink[h->port0 + j];
    if (hl->peer != v || n->rlink[hl->peer_gport].down) continue;
    uint32_t l = hl->peer_gport - sw->port0;
    if (l < best) best = l;
  }
  if (best == UINT32_MAX) return 0;
  n->route_scratch[0] = best;
  return 1;
}

/* Cache switch index s's next hops towards key k, the cnt in
 * route_scratch, when memory allows (the cache only saves work: without
 * it next_hops finds them again).  The pool is bounded (128 MB). */
#define PK_NH_POOL_MAX ((size_t)64 << 20)
static void nh_put(pk_net_t *n, uint32_t k, uint32_t s, uint32_t cnt) {
  size_t need = n->n_nh_pool + 1 + cnt;
  if (need > PK_NH_POOL_MAX || need >= UINT32_MAX) return;
  if (!n->key_nh[k] && !(n->key_nh[k] = etsim_calloc(n->n_sw, sizeof **n->key_nh))) return;
  if (etsim_grow((void **)&n->nh_pool, &n->cap_nh_pool, need, sizeof *n->nh_pool)) return;
  uint16_t *e = n->nh_pool + n->n_nh_pool;
  e[0] = (uint16_t)cnt;
  for (uint32_t i = 0; i < cnt; i++) e[1 + i] = (uint16_t)n->route_scratch[i];
  n->key_nh[k][s] = (uint32_t)n->n_nh_pool + 1;
  n->n_nh_pool = need;
}

/* The next hops from node v towards host `to` (of key k, whose search is
 * done): local port indices in ns-3's order, into n->route_scratch (as
 * rank << 32 | port, or the port alone when cached); returns their count.
 * A switch's hops towards a key other than its last hop are found once. */
static uint32_t next_hops(pk_net_t *n, uint32_t k, uint32_t v, uint32_t to) {
  const uint32_t *d = n->key_d[k];
  const pk_node_t *nd = &n->nodes[v];
  uint64_t *c = n->route_scratch;
  uint32_t cnt = 0, want;
  if (nd->is_switch) {
    want = d[2 * nd->sw_idx];
    if (want == 1) return last_hop(n, v, to); /* the switch `to` hangs from */
    const uint32_t *nh = n->key_nh[k];
    if (nh && nh[nd->sw_idx]) {
      const uint16_t *e = n->nh_pool + nh[nd->sw_idx] - 1;
      for (uint32_t i = 0; i < e[0]; i++) c[i] = e[1 + i];
      return e[0];
    }
    want--;
  } else { /* a host: its switches closest to `to` */
    want = UINT32_MAX;
    for (uint32_t j = 0; j < nd->nports; j++) {
      uint32_t dw = link_dist(n, d, nd->port0 + j);
      if (dw < want) want = dw;
    }
  }
  if (want != UINT32_MAX)
    for (uint32_t j = 0; j < nd->nports; j++) {
      const pk_rlink_t *l = &n->rlink[nd->port0 + j];
      if (l->peer_sw != PK_NONE && !l->down && d[2 * l->peer_sw] == want)
        c[cnt++] = (uint64_t)d[2 * l->peer_sw + 1] << 32 | j;
    }
  /* by rank: usually few candidates, so insertion (qsort's call per hop
   * cost as much as the rest of setting up a flow) */
  if (cnt > 64) etsim_qsort(c, cnt, sizeof *c, cmp_u64);
  else
    for (uint32_t i = 1; i < cnt; i++) {
      uint64_t x = c[i];
      uint32_t j = i;
      for (; j > 0 && c[j - 1] > x; j--) c[j] = c[j - 1];
      c[j] = x;
    }
  if (nd->is_switch) nh_put(n, k, nd->sw_idx, cnt);
  return cnt;
}

/* Distance in links from node v (a host or a switch) to host `to`. */
static uint32_t dist_to(const pk_net_t *n, const uint32_t *d, uint32_t v) {
  const pk_node_t *nd = &n->nodes[v];
  if (nd->is_switch) return d[2 * nd->sw_idx];
  uint32_t m = UINT32_MAX;
  for (uint32_t j = 0; j < nd->nports; j++) {
    uint32_t dw = link_dist(n, d, nd->port0 + j);
    if (dw < m) m = dw;
  }
  return m == UINT32_MAX ? m : m + 1;
}

uint32_t etsim_net__pkt_hops(pk_net_t *n, uint32_t src, uint32_t dst) {
  const uint32_t *d = n->key_d[n->host_key[n->nodes[dst].host_idx]];
  return dist_to(n, d, src);
}

/* Walk from host `from` to host `to`: switches hash the tuple `sw` (seeded
 * with their id), the NIC (seed 0, as etsim_netpkt_send) the tuple `nic`.
 * Writes up to max ports and returns the hop count (0: no route). */
static uint32_t walk(pk_net_t *n, uint32_t from, uint32_t to, const uint32_t sw[3],
                     const uint32_t nic[3], uint32_t *out, uint32_t max) {
  uint32_t key = n->host_key[n->nodes[to].host_idx];
  uint32_t hops = dist_to(n, n->key_d[key], from), v = from, k = 0;
  if (hops == UINT32_MAX) return 0;
  while (v != to) {
    const pk_node_t *nd = &n->nodes[v];
    uint32_t c = next_hops(n, key, v, to);
    if (!c) return 0; /* a failure cut `to` off */
    uint32_t h = nd->is_switch ? etsim_net__pkt_murmur12(sw[0], sw[1], sw[2], v)
                               : etsim_net__pkt_murmur12(nic[0], nic[1], nic[2], 0);
    uint32_t gp = nd->port0 + (uint32_t)n->route_scratch[c > 1 ? h % c : 0];
    if (k < max) out[k] = gp;
    k++;
    v = n->rlink[gp].peer;
  }
  return k == hops ? k : 0;
}

uint32_t etsim_net__pkt_path(pk_net_t *n, uint32_t src, uint32_t dst, uint16_t sport,
                             uint16_t dport, uint32_t *out, uint32_t max) {
  const uint32_t t[3] = {etsim_netpkt_host_ip(src), etsim_netpkt_host_ip(dst),
                         sport | ((uint32_t)dport << 16)};
  return walk(n, src, dst, t, t, out, max);
}

uint32_t etsim_net__pkt_ack_path(pk_net_t *n, uint32_t src, uint32_t dst, uint16_t sport,
                                 uint16_t dport, uint32_t *out, uint32_t max) {
  const uint32_t fwd[3] = {etsim_netpkt_host_ip(src), etsim_netpkt_host_ip(dst),
                           sport | ((uint32_t)dport << 16)};
  const uint32_t rev[3] = {fwd[1], fwd[0], dport | ((uint32_t)sport << 16)};
  return walk(n, dst, src, rev, fwd, out, max);
}

uint32_t etsim_net__pkt_path_from(pk_net_t *n, uint32_t v, uint32_t src, uint32_t dst,
                                  uint16_t sport, uint16_t dport, int ack, uint32_t *out,
                                  uint32_t max) {
  const uint32_t fwd[3] = {etsim_netpkt_host_ip(src), etsim_netpkt_host_ip(dst),
                           sport | ((uint32_t)dport << 16)};
  const uint32_t rev[3] = {fwd[1], fwd[0], dport | ((uint32_t)sport << 16)};
  return ack ? walk(n, v, src, rev, fwd, out, max) : walk(n, v, dst, fwd, fwd, out, max);
}

/* Serialisation of one payload on a link, whole ns, as ns-3's txDelay. */
static int64_t payload_ns(const pk_net_t *n, uint64_t rate) {
  return (int64_t)((uint64_t)n->cfg.payload_bytes * 1000000000ull * 8 / rate);
}

void etsim_net__pkt_pair(pk_net_t *n, uint32_t src, uint32_t dst, uint32_t pair, int64_t *rtt_ps,
                         uint64_t *bw) {
  pk_pair_t *pr = &n->pairs[pair];
  if (pr->rtt_ps >= 0) {
    *rtt_ps = pr->rtt_ps;
    *bw = pr->bw;
    return;
  }
  uint32_t key = n->host_key[n->nodes[dst].host_idx];
  int64_t dly = 0, txd = 0;
  uint64_t b = UINT64_MAX;
  uint32_t v = src;
  /* the path ns-3's search found first: the lowest-ranked next hop */
  while (v != dst && next_hops(n, key, v, dst)) {
    const pk_port_t *p = &n->ports[n->nodes[v].port0 + (uint32_t)n->route_scratch[0]];
    dly += p->delay_ps / 1000;
    txd += payload_ns(n, p->rate_bps);
    if (p->rate_bps < b) b = p->rate_bps;
    v = p->peer;
  }
  *rtt_ps = pr->rtt_ps = (2 * dly + txd) * 1000;
  *bw = pr->bw = b;
}

/* A set of hosts with one link each, hanging from one switch by links of
 * one delay and rate: for the largest RTT and BDP they are alike. */
typedef struct pk_hgroup {
  uint32_t port;  /* global index of the switch's port towards one of them */
  uint32_t count; /* hosts in the group */
} pk_hgroup_t;

/* Fold a pair's delay, serialisation (ns) and bottleneck into the maxima. */
static void pair_max(int64_t dly, int64_t txd, uint64_t bw, int64_t *mr, uint64_t *mb) {
  int64_t rtt = 2 * dly + txd;
  uint64_t bdp = (uint64_t)rtt * bw / 1000000000ull / 8;
  if (rtt > *mr) *mr = rtt;
  if (bdp > *mb) *mb = bdp;
}

static int same_link(const pk_port_t *a, const pk_port_t *b) {
  return a->delay_ps / 1000 == b->delay_ps / 1000 && a->rate_bps == b->rate_bps;
}

/* ns-3's largest base RTT and BDP over all host pairs (GLOBAL_T 1).  Per
 * key, the search's first-discovery tree gives every switch's delay,
 * serialisation and bottleneck to the key (as ns-3's CalculateRoute sums
 * them); a source host adds the link to its first-expanded switch.  Hosts
 * with one link are taken by group (switch, link delay, link rate), so the
 * work is keys x (links + groups), not hosts squared; the search per key
 * makes it the one part of set-up that is not linear in links. */
int etsim_net__pkt_route_global(pk_net_t *n, uint64_t *max_bdp, int64_t *max_rtt_ps) {
  uint32_t ns = n->n_sw, nh = n->n_hosts;
  int64_t *dly = etsim_malloc(((size_t)ns + 1) * 2 * sizeof *dly), *txd = dly ? dly + ns + 1 : NULL;
  uint64_t *bw = etsim_malloc(((size_t)ns + 1) * sizeof *bw);
  pk_hgroup_t *g = etsim_malloc(((size_t)nh + 1) * sizeof *g);
  uint32_t *g0 = etsim_malloc(((size_t)ns + 2) * sizeof *g0); /* groups of switch s: g0[s].. */
  uint32_t *multi = etsim_malloc(((size_t)nh + 1) * sizeof *multi);
  uint32_t ng = 0, nm = 0;
  int rc = 0;
  uint64_t mb = 0;
  int64_t mr = 0;
  if (!dly || !bw || !g || !g0 || !multi) {
    rc = ETSIM_ENOMEM;
    goto done;
  }
  for (uint32_t s = 0; s < ns; s++) {
    const pk_node_t *sw = &n->nodes[n->sw_node[s]];
    g0[s] = ng;
    for (uint32_t j = 0; j < sw->nports; j++) {
      const pk_port_t *p = &n->ports[sw->port0 + j];
      const pk_node_t *h = &n->nodes[p->peer];
      if (h->is_switch || h->nports != 1 || p->down) continue;
      uint32_t c;
      for (c = g0[s]; c < ng && !same_link(&n->ports[g[c].port], p); c++) continue;
      if (c == ng) {
        g[ng].port = sw->port0 + j;
        g[ng++].count = 0;
      }
      g[c].count++;
    }
  }
  g0[ns] = ng;
  for (uint32_t hi = 0; hi < nh; hi++)
    if (n->nodes[n->hosts[hi]].nports != 1) multi[nm++] = n->hosts[hi];
  for (uint32_t k = 0; k < n->n_keys; k++) {
    if (!n->key_d[k] && (rc = key_search(n, k))) goto done;
    const uint32_t *d = n->key_d[k];
    uint32_t root = n->key_root[k];
    int root_sw = n->nodes[root].is_switch;
    /* switches in expansion order: each takes its values from the
     * lowest-ranked neighbour one step closer (its discoverer) */
    uint32_t *q = n->bfs_q, qt = 0;
    for (uint32_t s = 0; s < ns; s++)
      if (d[2 * s] != UINT32_MAX) {
        q[d[2 * s + 1] - 1] = s; /* ranks are 1, 2, ... */
        qt++;
      }
    for (uint32_t i = 0; i < qt; i++) {
      uint32_t s = q[i];
      const pk_node_t *v = &n->nodes[n->sw_node[s]];
      if (d[2 * s] == 1) { /* next to the key's hosts: a root host adds its link */
        dly[s] = txd[s] = 0;
        bw[s] = UINT64_MAX;
        for (uint32_t j = 0; j < v->nports && !root_sw; j++) {
          const pk_port_t *p = &n->ports[v->port0 + j];
          if (p->peer != root) continue;
          dly[s] = p->delay_ps / 1000;
          txd[s] = payload_ns(n, p->rate_bps);
          bw[s] = p->rate_bps;
        }
        continue;
      }
      uint32_t best = 0, best_rank = UINT32_MAX, u = 0;
      const uint32_t *a = n->sw_adj + 2 * (size_t)n->sw_adj_off[s];
      const uint32_t *e = n->sw_adj + 2 * (size_t)n->sw_adj_off[s + 1];
      for (; a < e; a += 2)
        if (d[2 * a[0]] == d[2 * s] - 1 && d[2 * a[0] + 1] < best_rank) {
          best_rank = d[2 * a[0] + 1];
          best = a[1];
          u = a[0];
        }
      const pk_port_t *p = &n->ports[best];
      dly[s] = dly[u] + p->delay_ps / 1000;
      txd[s] = txd[u] + payload_ns(n, p->rate_bps);
      bw[s] = bw[u] < p->rate_bps ? bw[u] : p->rate_bps;
    }
    /* destinations: the groups of the root switch (their link added), or
     * the root host (its link is in the values already) */
    uint32_t d0 = root_sw ? g0[n->nodes[root].sw_idx] : 0;
    uint32_t d1 = root_sw ? g0[n->nodes[root].sw_idx + 1] : 1;
    for (uint32_t dg = d0; dg < d1; dg++) {
      int64_t ddly = 0, dtxd = 0;
      uint64_t dbw = UINT64_MAX;
      if (root_sw) {
        const pk_port_t *p = &n->ports[g[dg].port];
        ddly = p->delay_ps / 1000;
        dtxd = payload_ns(n, p->rate_bps);
        dbw = p->rate_bps;
      }
      /* sources with one link, by group */
      for (uint32_t sg = 0; sg < ng; sg++) {
        const pk_port_t *p = &n->ports[g[sg].port];
        uint32_t s = n->nodes[p->node].sw_idx;
        if (d[2 * s] == UINT32_MAX) continue;
        if (root_sw && sg == dg && g[sg].count < 2) continue; /* only itself */
        uint64_t b = bw[s] < p->rate_bps ? bw[s] : p->rate_bps;
        pair_max(dly[s] + p->delay_ps / 1000 + ddly, txd[s] + payload_ns(n, p->rate_bps) + dtxd,
                 b < dbw ? b : dbw, &mr, &mb);
      }
      /* sources with several links: the first-expanded of their switches */
      for (uint32_t i = 0; i < nm; i++) {
        if (multi[i] == root) continue;
        const pk_node_t *h = &n->nodes[multi[i]];
        uint32_t bj = PK_NONE, br = UINT32_MAX;
        for (uint32_t j = 0; j < h->nports; j++) {
          uint32_t s = n->nodes[n->ports[h->port0 + j].peer].sw_idx;
          if (n->ports[h->port0 + j].down || s == PK_NONE) continue;
          if (d[2 * s + 1] < br) {
            br = d[2 * s + 1];
            bj = j;
          }
        }
        if (bj == PK_NONE) continue;
        const pk_port_t *p = &n->ports[h->port0 + bj];
        uint32_t s = n->nodes[p->peer].sw_idx;
        uint64_t b = bw[s] < p->rate_bps ? bw[s] : p->rate_bps;
        pair_max(dly[s] + p->delay_ps / 1000 + ddly, txd[s] + payload_ns(n, p->rate_bps) + dtxd,
                 b < dbw ? b : dbw, &mr, &mb);
      }
    }
  }
done:
  etsim_free(dly);
  etsim_free(bw);
  etsim_free(g);
  etsim_free(g0);
  etsim_free(multi);
  *max_bdp = mb;
  *max_rtt_ps = mr * 1000;
  return rc;
}
