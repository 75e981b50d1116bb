/* The simulated clock's horizon: no event is queued past 2^62 ps and no
 * delay added to a clock can wrap (include/etsim/des.h). */
#include "etsim/base.h"
#include "etsim/des.h"

#include "test_util.h"

static void test_push_refuses_past_horizon(void **state) {
  (void)state;
  etsim_des_t q;
  etsim_des_init(&q);
  assert_int_equal(etsim_des_push(&q, ETSIM_DES_HORIZON_PS, 1, 0, 0), 0);
  assert_int_equal(etsim_des_push(&q, ETSIM_DES_HORIZON_PS + 1, 1, 0, 0), ETSIM_ERANGE);
  assert_int_equal(etsim_des_push(&q, INT64_MAX, 1, 0, 0), ETSIM_ERANGE);
  assert_int_equal(etsim_des_pending(&q), 1);
  etsim_des_event_t ev;
  assert_int_equal(etsim_des_pop(&q, &ev), 1);
  assert_int_equal(ev.t_ps, ETSIM_DES_HORIZON_PS);
  etsim_des_free(&q);
}

static void test_at_ns_saturates(void **state) {
  (void)state;
  etsim_des_t q;
  etsim_des_init(&q);
  q.now_ps = 5000;
  assert_int_equal(etsim_des_at_ns(&q, 7), 12000);
  /* The largest delay that still lands on the horizon, and one more. */
  int64_t last = (ETSIM_DES_HORIZON_PS - 5000) / 1000;
  assert_int_equal(etsim_des_at_ns(&q, last), 5000 + last * 1000);
  TU_LE(etsim_des_at_ns(&q, last), ETSIM_DES_HORIZON_PS);
  assert_int_equal(etsim_des_at_ns(&q, last + 1), ETSIM_DES_HORIZON_PS + 1);
  assert_int_equal(etsim_des_at_ns(&q, INT64_MAX), ETSIM_DES_HORIZON_PS + 1);
  /* At the horizon itself nothing more fits, but 0 ns does. */
  q.now_ps = ETSIM_DES_HORIZON_PS;
  assert_int_equal(etsim_des_at_ns(&q, 0), ETSIM_DES_HORIZON_PS);
  assert_int_equal(etsim_des_at_ns(&q, 1), ETSIM_DES_HORIZON_PS + 1);
  etsim_des_free(&q);
}

static void test_ns_ok(void **state) {
  (void)state;
  assert_int_equal(etsim_des_ns_ok(0), 1);
  assert_int_equal(etsim_des_ns_ok((double)ETSIM_DES_HORIZON_NS), 1);
  assert_int_equal(etsim_des_ns_ok((double)ETSIM_DES_HORIZON_NS * 2), 0);
  assert_int_equal(etsim_des_ns_ok(-1), 0);
  assert_int_equal(etsim_des_ns_ok(NAN), 0);
  assert_int_equal(etsim_des_ns_ok(INFINITY), 0);
  assert_int_equal(etsim_des_ns_ok(1e300), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_push_refuses_past_horizon),
      cmocka_unit_test(test_at_ns_saturates),
      cmocka_unit_test(test_ns_ok),
  };
  return TU_RUN(tests, NULL, NULL);
}
