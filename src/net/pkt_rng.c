/*
 * pkt_rng.c — the random numbers of ns-3's RDMA model, drawn as it draws
 * them, so that runs with ECN marked at random (Pmax < 1) equal ns-3's too.
 *
 * ns-3 (astra-network-ns3 8fd3604) creates a new UniformRandomVariable for
 * every draw: SwitchMmu::ShouldSendCN, for each packet a switch dequeues
 * from a data priority while its egress queue holds more than Kmin and at
 * most Kmax bytes, and QbbNetDevice::SendPfc, for each pause or resume
 * frame (its IP identification, which nothing reads).  Each new variable
 * takes the next automatic stream number and starts the MRG32k3a generator
 * of L'Ecuyer, Simard, Chen and Kelton ("An object-oriented random-number
 * package with many long streams and substreams", Operations Research 50(6),
 * 2002) from the seed (RngSeed, 1) in all six state words, moved on by
 * stream x 2^127 steps and then by run x 2^76 (RngRun); the draw is its
 * first output.  So the k-th draw of a run is a fixed function of k and the
 * run, computed here from two jump matrices, one matrix-vector product per
 * component a stream.  The constants are the published ones; the code is
 * written from the paper's recurrence.
 */
#include "pkt_int.h"

#define M1 4294967087ull /* 2^32 - 209 */
#define M2 4294944443ull /* 2^32 - 22853 */
#define A12 1403580ull
#define A13N 810728ull
#define A21 527612ull
#define A23N 1370589ull

typedef uint64_t mat3_t[9]; /* row-major, entries below the modulus */

static void mat_mul(mat3_t out, const mat3_t a, const mat3_t b, uint64_t m) {
  mat3_t r;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      uint64_t s = 0;
      for (int k = 0; k < 3; k++) s = (s + a[3 * i + k] * b[3 * k + j] % m) % m;
      r[3 * i + j] = s;
    }
  memcpy(out, r, sizeof r);
}

static void mat_vec(const mat3_t a, uint64_t v[3], uint64_t m) {
  uint64_t r[3];
  for (int i = 0; i < 3; i++)
    r[i] = (a[3 * i] * v[0] % m + a[3 * i + 1] * v[1] % m + a[3 * i + 2] * v[2] % m) % m;
  memcpy(v, r, sizeof r);
}

/* out = a^e */
static void mat_pow(mat3_t out, const mat3_t a, uint64_t e, uint64_t m) {
  mat3_t r = {1, 0, 0, 0, 1, 0, 0, 0, 1}, p;
  memcpy(p, a, sizeof p);
  for (; e; e >>= 1) {
    if (e & 1) mat_mul(r, r, p, m);
    mat_mul(p, p, p, m);
  }
  memcpy(out, r, sizeof r);
}

/* out = a^(2^k) */
static void mat_pow2(mat3_t out, const mat3_t a, int k, uint64_t m) {
  memcpy(out, a, sizeof(mat3_t));
  while (k--) mat_mul(out, out, out, m);
}

/* one step of each component: (s0, s1, s2) -> (s1, s2, a12 s1 - a13n s0),
 * (s3, s4, s5) -> (s4, s5, a21 s5 - a23n s3) */
static const mat3_t step1 = {0, 1, 0, 0, 0, 1, M1 - A13N, A12, 0};
static const mat3_t step2 = {0, 1, 0, 0, 0, 1, M2 - A23N, 0, A21};

void etsim_net__pkt_rng_jump(uint64_t out1[9], uint64_t out2[9], int log2_steps) {
  mat_pow2(out1, step1, log2_steps, M1);
  mat_pow2(out2, step2, log2_steps, M2);
}

void etsim_net__pkt_rng_init(pk_rng_t *r, uint64_t first_stream, uint64_t run) {
  mat3_t j1, j2;
  etsim_net__pkt_rng_jump(r->next1, r->next2, 127);
  etsim_net__pkt_rng_jump(j1, j2, 76);
  mat_pow(r->sub1, j1, run, M1);
  mat_pow(r->sub2, j2, run, M2);
  for (int i = 0; i < 6; i++) r->s[i] = 1; /* RngSeed */
  mat_pow(j1, r->next1, first_stream, M1);
  mat_pow(j2, r->next2, first_stream, M2);
  mat_vec(j1, r->s, M1);
  mat_vec(j2, r->s + 3, M2);
  r->stream = first_stream;
}

void etsim_net__pkt_rng_skip(pk_rng_t *r) {
  mat_vec(r->next1, r->s, M1);
  mat_vec(r->next2, r->s + 3, M2);
  r->stream++;
}

double etsim_net__pkt_rng_fresh(pk_rng_t *r) {
  uint64_t s[6];
  memcpy(s, r->s, sizeof s);
  mat_vec(r->sub1, s, M1);
  mat_vec(r->sub2, s + 3, M2);
  etsim_net__pkt_rng_skip(r);
  /* the first output: the components' new values, combined as
   * (p1 - p2) mod m1 scaled by 1 / (m1 + 1), in doubles as ns-3 does it
   * (every value before the product is an exact integer) */
  uint64_t p1 = (A12 * s[1] % M1 + (M1 - A13N) * s[0] % M1) % M1;
  uint64_t p2 = (A21 * s[5] % M2 + (M2 - A23N) * s[3] % M2) % M2;
  double d = (double)p1 - (double)p2;
  const double norm = 1.0 / ((double)M1 + 1.0);
  return p1 > p2 ? d * norm : (d + (double)M1) * norm;
}
