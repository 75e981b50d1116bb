/*
 * test_pkt_rng.c — the packet engine draws ECN marks as ns-3 does (pkt_rng.c):
 * the first value of stream s, run r of ns-3's MRG32k3a with seed 1.
 *
 * The expected values are ns-3's own output (astra-network-ns3 8fd3604,
 * src/core): a program printing ns3::RngStream(1, s, r).RandU01() with
 * "%.17g", built against that tree as examples/netsim/ns3/README.md builds
 * it, which is what a new UniformRandomVariable with automatic stream s
 * returns first under RngRun=r.  The jump matrices are also checked against
 * the recurrence stepped one value at a time.
 */
#include "test_util.h"

#include "net/pkt_int.h"

#define M1 4294967087ull
#define M2 4294944443ull

/* ns-3's first value for (stream, run) */
static const struct {
  uint64_t stream, run;
  double u;
} ns3[] = {
    {0, 0, 0.0003395772237870988},   {1, 0, 0.16644822611036503},
    {1298, 0, 0.16722204391429787},  {12098, 0, 0.32822286646588622},
    {0, 1, 0.81653204416825098},     {1, 1, 0.83515007368084404},
    {29, 1, 0.75958035187626105},    {92, 1, 0.56313437645601816},
    {1298, 1, 0.59961000520709928},  {12098, 1, 0.4493128711956268},
    {0, 2, 0.68354149702392319},     {1298, 2, 0.4003268932616324},
    {12098, 2, 0.10891916548255516}, {0, 7, 0.32818322192461002},
    {1298, 7, 0.29232450057833836},  {12098, 7, 0.60994543760750708},
    {1, 1000, 0.93966903641148469},  {12098, 1000, 0.33742054928640702},
};

static void first_values_are_ns3s(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof ns3 / sizeof ns3[0]; i++) {
    pk_rng_t r;
    etsim_net__pkt_rng_init(&r, ns3[i].stream, ns3[i].run);
    double u = etsim_net__pkt_rng_fresh(&r);
    if (u != ns3[i].u)
      fail_msg("stream %llu run %llu: %.17g, ns-3 %.17g", (unsigned long long)ns3[i].stream,
               (unsigned long long)ns3[i].run, u, ns3[i].u);
    assert_int_equal(r.stream, ns3[i].stream + 1);
  }
}

/* A run's draws take consecutive streams, skipped ones included: from
 * stream 0, draw, skip 1,297 (as PFC frames do), draw: streams 0 and 1298. */
static void skips_take_streams(void **state) {
  (void)state;
  pk_rng_t r;
  etsim_net__pkt_rng_init(&r, 0, 1);
  assert_true(etsim_net__pkt_rng_fresh(&r) == 0.81653204416825098);
  for (int i = 0; i < 1297; i++) etsim_net__pkt_rng_skip(&r);
  assert_true(etsim_net__pkt_rng_fresh(&r) == 0.59961000520709928);
  assert_int_equal(r.stream, 1299);
}

/* The matrix to the power 2^k against 2^k steps of the recurrences
 * x1[n] = (1403580 x1[n-2] - 810728 x1[n-3]) mod m1 and
 * x2[n] = (527612 x2[n-1] - 1370589 x2[n-3]) mod m2. */
static void jumps_match_steps(void **state) {
  (void)state;
  for (int k = 0; k <= 10; k++) {
    uint64_t j1[9], j2[9];
    etsim_net__pkt_rng_jump(j1, j2, k);
    uint64_t a[3] = {12345, 67890, 4000000000u}, b[3] = {54321, 9876, 3000000000u};
    uint64_t ja[3], jb[3];
    for (int i = 0; i < 3; i++) {
      ja[i] = (j1[3 * i] * a[0] % M1 + j1[3 * i + 1] * a[1] % M1 + j1[3 * i + 2] * a[2] % M1) % M1;
      jb[i] = (j2[3 * i] * b[0] % M2 + j2[3 * i + 1] * b[1] % M2 + j2[3 * i + 2] * b[2] % M2) % M2;
    }
    for (uint64_t s = 0; s < (1ull << k); s++) {
      uint64_t x = (1403580ull * a[1] % M1 + (M1 - 810728ull) * a[0] % M1) % M1;
      a[0] = a[1], a[1] = a[2], a[2] = x;
      uint64_t y = (527612ull * b[2] % M2 + (M2 - 1370589ull) * b[0] % M2) % M2;
      b[0] = b[1], b[1] = b[2], b[2] = y;
    }
    for (int i = 0; i < 3; i++) {
      assert_int_equal(ja[i], a[i]);
      assert_int_equal(jb[i], b[i]);
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(first_values_are_ns3s),
      cmocka_unit_test(skips_take_streams),
      cmocka_unit_test(jumps_match_steps),
  };
  return TU_RUN(tests, NULL, NULL);
}
