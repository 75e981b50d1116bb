/*
 * fuzz_netsim.c — libFuzzer target for the packet network's inputs: any
 * bytes as "KEY value" config lines, a "--" line, then an ns-3 topology
 * must either be refused with a message or give a network that carries
 * two flows between its first hosts to completion, a deadlock report or
 * the stop time — never a crash, a hang or a leak.  The flow level gets
 * the same topology.
 */
#include "etsim/netpkt.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return 0; /* small inputs keep runs short */
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = 0;
  char *topo_text = strstr(text, "\n--\n");
  if (topo_text) {
    *topo_text = 0;
    topo_text += 4;
  } else {
    topo_text = text; /* no config part */
  }
  etsim_error_t err = {0};
  etsim_netpkt_cfg_t cfg;
  etsim_netpkt_cfg_default(&cfg);
  if (topo_text != text) {
    /* Config lines: KEY value; errors are fine, they only stop here. */
    for (char *line = text, *next; line && *line; line = next) {
      next = strchr(line, '\n');
      if (next) *next++ = 0;
      char *sp = strchr(line, ' ');
      if (!sp) continue;
      *sp = 0;
      /* Files are not this target's business. */
      if (strstr(line, "FILE")) continue;
      if (etsim_netpkt_cfg_set(&cfg, line, sp + 1, &err)) goto out_cfg;
    }
  }
  /* Bounded: at most 2 ms of simulated time, small flows. */
  if (cfg.stop_ps <= 0 || cfg.stop_ps > 2000000000) cfg.stop_ps = 2000000000;
  etsim_netpkt_topo_t topo;
  if (etsim_netpkt_topo_parse(&topo, topo_text, "fuzz.topo", &err)) goto out_cfg;
  uint32_t hosts[2], nh = 0;
  for (uint32_t v = 0; v < topo.n_nodes && nh < 2; v++)
    if (!topo.is_switch[v]) hosts[nh++] = v;
  static const char *levels[] = {"packet", "flow"};
  for (int k = 0; k < 2; k++) {
    const etsim_netpkt_level_t *lv = etsim_netpkt_level_find(levels[k]);
    void *net = NULL;
    if (lv->create(&net, &topo, &cfg, &err)) continue;
    for (uint32_t h = 0; nh == 2 && h < 2; h++) {
      etsim_netpkt_msg_t m = {hosts[h], hosts[1 - h], 20000, 0, 3, 100, NULL, NULL};
      if (lv->send(net, &m, NULL, &err)) break;
    }
    (void)lv->run_until(net, cfg.stop_ps, &err);
    lv->destroy(net);
  }
  etsim_netpkt_topo_free(&topo);
out_cfg:
  free(text);
  return 0;
}
