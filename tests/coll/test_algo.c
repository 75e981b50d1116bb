/*
 * test_algo.c — the collective-algorithm registry (src/coll/algo.c): every
 * name ASTRA-sim's system file takes maps to its algorithm (the list is
 * ASTRA-sim's own, astra-sim/system/astraccl/CollectiveImplLookup.cc), an
 * unknown name or a name a collective cannot use is refused with the
 * names it could have given, and an impossible pair ASTRA-sim accepts in
 * the file (halvingDoubling for all-to-all) is refused when it runs.
 */
#include "test_util.h"

#include "coll/coll_int.h"
#include "etsim/net.h"

typedef struct astra_name {
  const char *name;
  etsim_algo_kind_t kind;
  int32_t window;
} astra_name_t;

/* ASTRA-sim's generate_collective_impl_from_input, name by name (directN
 * and oneDirectN: a window of N outstanding sends), and etsim's tree. */
static const astra_name_t names[] = {
    {"ring", ETSIM_ALGO_RING, -1},
    {"oneRing", ETSIM_ALGO_ONE_RING, -1},
    {"doubleBinaryTree", ETSIM_ALGO_DOUBLE_BINARY_TREE, -1},
    {"direct", ETSIM_ALGO_DIRECT, -1},
    {"direct4", ETSIM_ALGO_DIRECT, 4},
    {"direct12", ETSIM_ALGO_DIRECT, 12},
    {"oneDirect", ETSIM_ALGO_ONE_DIRECT, -1},
    {"oneDirect8", ETSIM_ALGO_ONE_DIRECT, 8},
    {"halvingDoubling", ETSIM_ALGO_HALVING_DOUBLING, -1},
    {"oneHalvingDoubling", ETSIM_ALGO_ONE_HALVING_DOUBLING, -1},
    {"tree", ETSIM_ALGO_TREE, -1},
};

static void test_every_astra_name_maps(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    etsim_coll_impl_t im = {ETSIM_ALGO_N, 0};
    if (etsim_coll_impl_parse(names[i].name, &im)) fail_msg("\"%s\" is refused", names[i].name);
    TU_EQ((int)im.kind, (int)names[i].kind);
    TU_EQ(im.window, names[i].window);
    /* the name a row gives back is the name without its window */
    const char *back = etsim_algo_name(im.kind);
    TU_EQ(strncmp(names[i].name, back, strlen(back)), 0);
  }
  /* every row: at its kind's index; a one* name runs its base on one ring */
  for (int k = 0; k < ETSIM_ALGO_N; k++) {
    const etsim_coll__algo_t *a = etsim_coll__algo(k);
    TU_EQ((int)a->kind, k);
    int32_t w;
    if (!(a->flags & AF_IMPLIED)) assert_ptr_equal(etsim_coll__algo_find(a->name, &w), a);
    if (a->flags & AF_ONE) {
      const etsim_coll__algo_t *b = etsim_coll__algo(a->base);
      TU_EQ(b->flags & AF_ONE, 0);
      TU_EQ(b->ops, a->ops);
      /* "oneRing" runs "ring" */
      char base[64];
      snprintf(base, sizeof base, "%c%s", a->name[3] - 'A' + 'a', a->name + 4);
      TU_EQ(strcmp(base, b->name), 0);
    } else {
      TU_EQ((int)a->base, (int)a->kind);
    }
  }
}

static void test_unknown_names(void **state) {
  (void)state;
  /* inNetwork is chosen by in-network-collectives, never by name; a
   * window must be a positive number; names are case-sensitive */
  static const char *const bad[] = {"rign",     "inNetwork",  "direct0",  "directx",
                                    "direct-3", "",           "Ring",     "ring2",
                                    "tree4",    "oneDirect0", "oneRingX", "halvingDoubling2"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    etsim_coll_impl_t im;
    if (etsim_coll_impl_parse(bad[i], &im) != ETSIM_EINVAL) fail_msg("\"%s\" is taken", bad[i]);
  }
  TU_EQ(strcmp(etsim_algo_name(ETSIM_ALGO_N), "?"), 0);
}

/* Load a system file with one implementation key; 0 or the error. */
static int load(const char *key, const char *list, etsim_sys_config_t *c, etsim_error_t *err) {
  char path[4200], body[512];
  snprintf(path, sizeof path, "%s/sys.json", tmp);
  snprintf(body, sizeof body, "{\"preferred-dataset-splits\": 1, \"local-mem-bw\": 50, \"%s\": %s}",
           key, list);
  assert_int_equal(tu_write(path, body, strlen(body)), 0);
  memset(err, 0, sizeof *err);
  return etsim_sys_config_load(path, c, err);
}

static void test_config_errors(void **state) {
  (void)state;
  etsim_sys_config_t c;
  etsim_error_t err;
  char want[1024];
  /* an unknown name lists every name a file may give */
  TU_EQ(load("all-reduce-implementation", "[\"ring\", \"rign\"]", &c, &err), ETSIM_EFORMAT);
  snprintf(want, sizeof want,
           "%s/sys.json: key \"all-reduce-implementation\"[1]: unknown algorithm \"rign\" "
           "(expected ring, direct, directN, halvingDoubling, doubleBinaryTree, oneRing, "
           "oneDirect, oneDirectN, oneHalvingDoubling or tree)",
           tmp);
  TU_EQ(strcmp(err.msg, want), 0);
  TU_EQ(load("all-gather-implementation", "[3]", &c, &err), ETSIM_EFORMAT);
  TU_CONTAINS(err.msg, "[0]: unknown algorithm \"(not a string)\" (expected ring, ");
  /* a name the collective cannot use lists the ones it can */
  TU_EQ(load("all-reduce-implementation", "[\"tree\"]", &c, &err), ETSIM_EFORMAT);
  TU_CONTAINS(err.msg,
              "[0]: tree is not an algorithm for all-reduce (ring, direct, directN, "
              "halvingDoubling, doubleBinaryTree, oneRing, oneDirect, oneDirectN or "
              "oneHalvingDoubling)");
  TU_EQ(load("broadcast-implementation", "[\"ring\", \"doubleBinaryTree\"]", &c, &err),
        ETSIM_EFORMAT);
  TU_CONTAINS(err.msg,
              "[1]: doubleBinaryTree is not an algorithm for broadcast (ring, direct, "
              "directN, oneRing, oneDirect, oneDirectN or tree)");
  TU_EQ(load("reduce-implementation", "[\"halvingDoubling\"]", &c, &err), ETSIM_EFORMAT);
  TU_CONTAINS(err.msg, "halvingDoubling is not an algorithm for reduce");
  /* what is allowed loads, windows included */
  TU_OK(load("barrier-implementation", "[\"halvingDoubling\", \"tree\"]", &c, &err), err);
  TU_EQ(c.n_impl[ETSIM_COP_BARRIER], 2);
  TU_EQ((int)c.impl[ETSIM_COP_BARRIER][0].kind, ETSIM_ALGO_HALVING_DOUBLING);
  TU_EQ((int)c.impl[ETSIM_COP_BARRIER][1].kind, ETSIM_ALGO_TREE);
  etsim_sys_config_free(&c);
  TU_OK(load("all-reduce-implementation", "[\"direct3\", \"oneDirect5\"]", &c, &err), err);
  TU_EQ((int)c.impl[ETSIM_COP_ALL_REDUCE][0].kind, ETSIM_ALGO_DIRECT);
  TU_EQ(c.impl[ETSIM_COP_ALL_REDUCE][0].window, 3);
  TU_EQ((int)c.impl[ETSIM_COP_ALL_REDUCE][1].kind, ETSIM_ALGO_ONE_DIRECT);
  TU_EQ(c.impl[ETSIM_COP_ALL_REDUCE][1].window, 5);
  etsim_sys_config_free(&c);
}

static void done_count(void *user, uint32_t npu, uint64_t token) {
  (void)npu, (void)token;
  ++*(int *)user;
}

/* halvingDoubling for all-to-all: ASTRA-sim reads the file and refuses the
 * pair when a collective runs; etsim refuses it when checked or issued. */
static void test_refused_when_run(void **state) {
  (void)state;
  etsim_sys_config_t c;
  etsim_error_t err;
  TU_OK(load("all-to-all-implementation", "[\"halvingDoubling\"]", &c, &err), err);
  static const etsim_topo_kind_t kind[1] = {ETSIM_TOPO_SWITCH};
  static const uint32_t npus[1] = {4};
  static const double bw[1] = {50}, lat[1] = {500};
  etsim_topo_t topo;
  TU_OK(etsim_topo_init(&topo, 1, kind, npus, bw, lat, "test", &err), err);
  etsim_des_t q;
  etsim_des_init(&q);
  etsim_net_t *net = NULL;
  TU_OK(etsim_net_create(&net, "analytical", &topo, &q, ETSIM_COLL_EV_DELIVER, ETSIM_COLL_EV_HOP,
                         NULL, &err),
        err);
  int n_done = 0;
  etsim_coll_t *coll = NULL;
  TU_OK(etsim_coll_create(&coll, &c, &topo, net, &q, done_count, &n_done, &err), err);
  const char *want =
      "all-to-all cannot use halvingDoubling (ASTRA-sim rejects it too): use ring or direct";
  memset(&err, 0, sizeof err);
  TU_EQ(etsim_coll_check(coll, ETSIM_COP_ALL_TO_ALL, NULL, &err), ETSIM_EUNSUPPORTED);
  TU_EQ(strcmp(err.msg, want), 0);
  memset(&err, 0, sizeof err);
  TU_EQ(etsim_coll_issue(coll, 0, ETSIM_COP_ALL_TO_ALL, 1 << 20, ~0u, NULL, 0, 1, &err),
        ETSIM_EUNSUPPORTED);
  TU_EQ(strcmp(err.msg, want), 0);
  /* the same list's all-reduce (ring by default) runs: 4 NPUs, one done each */
  for (uint32_t n = 0; n < 4; n++)
    TU_OK(etsim_coll_issue(coll, n, ETSIM_COP_ALL_REDUCE, 1 << 20, ~0u, NULL, 0, n, &err), err);
  etsim_des_event_t ev;
  while (etsim_des_pop(&q, &ev)) TU_OK(etsim_coll_event(coll, &ev, &err), err);
  TU_OK(etsim_coll_check_idle(coll, &err), err);
  TU_EQ(n_done, 4);
  etsim_coll_destroy(coll);
  etsim_net_destroy(net);
  etsim_des_free(&q);
  etsim_sys_config_free(&c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_astra_name_maps),
      cmocka_unit_test(test_unknown_names),
      cmocka_unit_test(test_config_errors),
      cmocka_unit_test(test_refused_when_run),
  };
  return TU_RUN(tests, tu_setup, tu_teardown);
}
