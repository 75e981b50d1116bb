/*
 * fuzz_flows.c — libFuzzer target for ns-3 flow files (FLOW_FILE): any
 * bytes must load as flows with sizes and start times in range, or be
 * refused with a message naming the line — never a crash or a leak.
 */
#include "fuzz_util.h"

#include "etsim/netpkt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 65536) return 0;
  const char *p = fz_write(0, "x.flows", data, size);
  if (!p) return 0;
  etsim_error_t err = {0};
  etsim_netpkt_flow_t *f = NULL;
  size_t n = 0;
  int rc = etsim_netpkt_flows_load(p, &f, &n, &err);
  if (rc) {
    fz_refused(rc, &err);
    return 0;
  }
  for (size_t i = 0; i < n; i++)
    if (f[i].start_ps < 0 || f[i].line < 1) __builtin_trap();
  etsim_free(f);
  return 0;
}
