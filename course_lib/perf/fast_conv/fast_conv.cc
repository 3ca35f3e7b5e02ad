// FastConv2d kernels for MindSpore's ops.Custom(func_type="aot") on CPU.
// Uses only oneDNN's C API (stable across 3.x). The library is not linked: on first use the kernels dlopen the
// oneDNN named by FAST_CONV_DNNL (a full path, set at compile time) with RTLD_LOCAL | RTLD_DEEPBIND and look up
// every function they call with dlsym. Two cases:
//  * a private oneDNN (the onednn-cpu-gomp wheel): loaded by full path beside MindSpore's copy, which has the
//    same SONAME. Nothing of it enters the global symbol scope, so neither copy can bind to the other. Its ISA is
//    set with dnnl_set_max_cpu_isa before its first primitive (FAST_CONV_MAX_CPU_ISA, default: all), so MindSpore's
//    own kernels keep their ONEDNN_MAX_CPU_ISA cap while these kernels use the CPU's best instruction set;
//  * MindSpore's own oneDNN (mindspore/lib/libdnnl.so.3, the fallback): already loaded, so dlopen returns it.
//    It is built with the "threadpool" runtime, so we hand it a small OpenMP-backed threadpool; its ISA is
//    MindSpore's (capped by ONEDNN_MAX_CPU_ISA).
// Every kernel gets: inputs..., outputs; the last input is an int32 config tensor
// [stride_h, stride_w, mode, pad_top, pad_bottom, pad_left, pad_right]  (mode 0 = pad, 1 = same, 2 = valid).
#include <dlfcn.h>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>
#include <omp.h>
#include "oneapi/dnnl/dnnl.h"
#include "oneapi/dnnl/dnnl_threadpool.h"
#include "oneapi/dnnl/dnnl_threadpool_iface.hpp"

#ifndef FAST_CONV_DNNL
#error "compile with -DFAST_CONV_DNNL=\"/full/path/libdnnl.so.3\""
#endif

namespace {

// ---- the oneDNN C API, looked up in the library named by FAST_CONV_DNNL -------------------------------------
#define FAST_CONV_API(X) \
  X(dnnl_convolution_backward_data_primitive_desc_create) \
  X(dnnl_convolution_backward_weights_primitive_desc_create) \
  X(dnnl_convolution_forward_primitive_desc_create) \
  X(dnnl_engine_create) \
  X(dnnl_memory_create) \
  X(dnnl_memory_desc_create_with_strides) \
  X(dnnl_memory_desc_create_with_tag) \
  X(dnnl_memory_desc_equal) \
  X(dnnl_memory_destroy) \
  X(dnnl_primitive_create) \
  X(dnnl_primitive_desc_destroy) \
  X(dnnl_primitive_desc_query_md) \
  X(dnnl_primitive_execute) \
  X(dnnl_reorder_primitive_desc_create) \
  X(dnnl_stream_wait) \
  X(dnnl_threadpool_interop_stream_create) \
  X(dnnl_stream_create) \
  X(dnnl_set_max_cpu_isa) \
  X(dnnl_get_effective_cpu_isa) \
  X(dnnl_version)

struct Api {
#define X(f) decltype(&::f) f = nullptr;
  FAST_CONV_API(X)
#undef X
  bool ok = false;
  bool threadpool = false;  // MindSpore's copy: DNNL_RUNTIME_THREADPOOL; the private wheel: OpenMP
  char error[600] = {0};
};

int isa_from_env() {
  // FAST_CONV_MAX_CPU_ISA: the same names as ONEDNN_MAX_CPU_ISA; ALL (the default) leaves oneDNN uncapped.
  const char *v = std::getenv("FAST_CONV_MAX_CPU_ISA");
  std::string s = v ? v : "ALL";
  for (auto &ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  static const std::map<std::string, int> names = {
      {"SSE41", dnnl_cpu_isa_sse41}, {"AVX", dnnl_cpu_isa_avx}, {"AVX2", dnnl_cpu_isa_avx2},
      {"AVX2_VNNI", dnnl_cpu_isa_avx2_vnni}, {"AVX512_CORE", dnnl_cpu_isa_avx512_core},
      {"AVX512_CORE_VNNI", dnnl_cpu_isa_avx512_core_vnni}, {"AVX512_CORE_BF16", dnnl_cpu_isa_avx512_core_bf16},
      {"AVX512_CORE_AMX", dnnl_cpu_isa_avx512_core_amx}, {"ALL", dnnl_cpu_isa_avx512_core_amx_fp16}};
  auto it = names.find(s);
  return it == names.end() ? -1 : it->second;
}

Api *load_api() {
  Api *a = new Api();
  void *h = dlopen(FAST_CONV_DNNL, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (!h) {
    std::snprintf(a->error, sizeof a->error, "cannot load %s: %s", FAST_CONV_DNNL, dlerror());
    return a;
  }
#define X(f) a->f = reinterpret_cast<decltype(a->f)>(dlsym(h, #f));
  FAST_CONV_API(X)
#undef X
  const char *missing = nullptr;
#define X(f) if (!a->f && !std::strstr("dnnl_get_effective_cpu_isa dnnl_set_max_cpu_isa dnnl_stream_create dnnl_threadpool_interop_stream_create", #f)) missing = #f;
  FAST_CONV_API(X)
#undef X
  if (missing) {
    std::snprintf(a->error, sizeof a->error, "%s has no %s", FAST_CONV_DNNL, missing);
    return a;
  }
  a->threadpool = a->dnnl_version()->cpu_runtime == DNNL_RUNTIME_THREADPOOL;
  if (a->threadpool ? !a->dnnl_threadpool_interop_stream_create : !a->dnnl_stream_create) {
    std::snprintf(a->error, sizeof a->error, "%s has no stream constructor for its CPU runtime", FAST_CONV_DNNL);
    return a;
  }
#ifdef FAST_CONV_PRIVATE
  int isa = isa_from_env();
  if (isa < 0) {
    std::snprintf(a->error, sizeof a->error, "FAST_CONV_MAX_CPU_ISA=%s is not an ISA name (e.g. AVX2, "
                  "AVX512_CORE, ALL)", std::getenv("FAST_CONV_MAX_CPU_ISA"));
    return a;
  }
  if (!a->dnnl_set_max_cpu_isa || a->dnnl_set_max_cpu_isa(static_cast<dnnl_cpu_isa_t>(isa)) != dnnl_success) {
    std::snprintf(a->error, sizeof a->error, "dnnl_set_max_cpu_isa failed in %s", FAST_CONV_DNNL);
    return a;
  }
#endif
  a->ok = true;
  return a;
}

Api &api() {
  static Api *a = load_api();
  return *a;
}

#define dnnl_convolution_backward_data_primitive_desc_create (api().dnnl_convolution_backward_data_primitive_desc_create)
#define dnnl_convolution_backward_weights_primitive_desc_create (api().dnnl_convolution_backward_weights_primitive_desc_create)
#define dnnl_convolution_forward_primitive_desc_create (api().dnnl_convolution_forward_primitive_desc_create)
#define dnnl_engine_create (api().dnnl_engine_create)
#define dnnl_memory_create (api().dnnl_memory_create)
#define dnnl_memory_desc_create_with_strides (api().dnnl_memory_desc_create_with_strides)
#define dnnl_memory_desc_create_with_tag (api().dnnl_memory_desc_create_with_tag)
#define dnnl_memory_desc_equal (api().dnnl_memory_desc_equal)
#define dnnl_memory_destroy (api().dnnl_memory_destroy)
#define dnnl_primitive_create (api().dnnl_primitive_create)
#define dnnl_primitive_desc_destroy (api().dnnl_primitive_desc_destroy)
#define dnnl_primitive_desc_query_md (api().dnnl_primitive_desc_query_md)
#define dnnl_primitive_execute (api().dnnl_primitive_execute)
#define dnnl_reorder_primitive_desc_create (api().dnnl_reorder_primitive_desc_create)
#define dnnl_stream_wait (api().dnnl_stream_wait)
#define dnnl_threadpool_interop_stream_create (api().dnnl_threadpool_interop_stream_create)
#define dnnl_stream_create (api().dnnl_stream_create)
#define dnnl_set_max_cpu_isa (api().dnnl_set_max_cpu_isa)
#define dnnl_get_effective_cpu_isa (api().dnnl_get_effective_cpu_isa)
#define dnnl_version (api().dnnl_version)

class OmpPool : public dnnl::threadpool_interop::threadpool_iface {
 public:
  int get_num_threads() const override { return omp_get_max_threads(); }
  bool get_in_parallel() const override { return omp_in_parallel(); }
  void parallel_for(int n, const std::function<void(int, int)> &fn) override {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; ++i) fn(i, n);
  }
  uint64_t get_flags() const override { return 0; }  // synchronous
  void wait() {}  // overrides where the header declares it (newer oneDNN); unused for a synchronous pool
};

#define CHECK(call)                                                              \
  do {                                                                           \
    dnnl_status_t s_ = (call);                                                   \
    if (s_ != dnnl_success) {                                                    \
      std::fprintf(stderr, "fast_conv: %s failed with status %d\n", #call, (int)s_); \
      return 1;                                                                  \
    }                                                                            \
  } while (0)

struct Ctx {
  dnnl_engine_t eng = nullptr;
  dnnl_stream_t stream = nullptr;
  OmpPool pool;
};

Ctx *ctx() {
  static Ctx *c = [] {
    Ctx *c = new Ctx();
    dnnl_engine_create(&c->eng, dnnl_cpu, 0);
    if (api().threadpool)
      dnnl_threadpool_interop_stream_create(&c->stream, c->eng, &c->pool);
    else
      dnnl_stream_create(&c->stream, c->eng, dnnl_stream_default_flags);
    return c;
  }();
  return c;
}

// One cached entry per (kind, shapes, config): the conv primitive and the reorders around it.
struct Entry {
  dnnl_primitive_t conv = nullptr;
  // md's chosen by oneDNN for the three operands (a = data in, b = weights, c = data out).
  const_dnnl_memory_desc_t md[3] = {nullptr, nullptr, nullptr};
  dnnl_memory_desc_t plain[3] = {nullptr, nullptr, nullptr};
  dnnl_primitive_t reorder[3] = {nullptr, nullptr, nullptr};  // plain->chosen for inputs, chosen->plain for output
  bool need[3] = {false, false, false};
  dnnl_primitive_desc_t pd = nullptr;
};

std::mutex g_mu;
std::map<std::string, Entry *> g_cache;

void plain_md(dnnl_memory_desc_t *md, const int64_t *d) {
  dnnl_dims_t dims = {d[0], d[1], d[2], d[3]};
  dnnl_dims_t strides = {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1};
  dnnl_memory_desc_create_with_strides(md, 4, dims, dnnl_f32, strides);
}

void any_md(dnnl_memory_desc_t *md, const int64_t *d) {
  dnnl_dims_t dims = {d[0], d[1], d[2], d[3]};
  dnnl_memory_desc_create_with_tag(md, 4, dims, dnnl_f32, dnnl_format_tag_any);
}

// Resolve padding for an input of size n, kernel k, stride s.
void pads(const int32_t *cfg, const int64_t *x, const int64_t *w, int64_t *pl, int64_t *pr) {
  for (int i = 0; i < 2; ++i) {
    int64_t n = x[2 + i], k = w[2 + i], s = cfg[i];
    if (cfg[2] == 1) {
      int64_t out = (n + s - 1) / s;
      int64_t total = (out - 1) * s + k - n;
      if (total < 0) total = 0;
      pl[i] = total / 2;
      pr[i] = total - total / 2;
    } else if (cfg[2] == 2) {
      pl[i] = 0;
      // right padding so that oneDNN's output size equals floor((n - k) / s) + 1
      int64_t out = (n - k) / s + 1;
      pr[i] = (out - 1) * s + k - n;
    } else {
      pl[i] = cfg[3 + 2 * i];
      int64_t out = (n + cfg[3 + 2 * i] + cfg[4 + 2 * i] - k) / s + 1;
      pr[i] = (out - 1) * s + k - n - pl[i];
    }
  }
}

// kind 0 = forward (x, w -> y), 1 = backward data (dy, w -> dx), 2 = backward weights (dy, x -> dw)
Entry *get_entry(int kind, const int64_t *xs, const int64_t *ws, const int64_t *ys, const int32_t *cfg) {
  char key[512];
  std::snprintf(key, sizeof key, "%d|%ld,%ld,%ld,%ld|%ld,%ld,%ld,%ld|%ld,%ld,%ld,%ld|%d,%d,%d,%d,%d,%d,%d", kind,
                (long)xs[0], (long)xs[1], (long)xs[2], (long)xs[3], (long)ws[0], (long)ws[1], (long)ws[2],
                (long)ws[3], (long)ys[0], (long)ys[1], (long)ys[2], (long)ys[3], cfg[0], cfg[1], cfg[2], cfg[3],
                cfg[4], cfg[5], cfg[6]);
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_cache.find(key);
  if (it != g_cache.end()) return it->second;
  Ctx *c = ctx();
  dnnl_memory_desc_t xa, wa, ya, ba = nullptr;
  any_md(&xa, xs);
  any_md(&wa, ws);
  any_md(&ya, ys);
  dnnl_dims_t strides = {cfg[0], cfg[1]}, dil = {0, 0}, pl, pr;
  int64_t l[2], r[2];
  pads(cfg, xs, ws, l, r);
  pl[0] = l[0]; pl[1] = l[1]; pr[0] = r[0]; pr[1] = r[1];
  dnnl_primitive_desc_t fwd = nullptr, pd = nullptr;
  if (dnnl_convolution_forward_primitive_desc_create(&fwd, c->eng, dnnl_forward_training, dnnl_convolution_direct,
                                                     xa, wa, ba, ya, strides, dil, pl, pr, nullptr) != dnnl_success)
    return nullptr;
  Entry *e = new Entry();
  dnnl_query_t q[3];
  const int64_t *shp[3];
  if (kind == 0) {
    pd = fwd;
    q[0] = dnnl_query_src_md; q[1] = dnnl_query_weights_md; q[2] = dnnl_query_dst_md;
    shp[0] = xs; shp[1] = ws; shp[2] = ys;
  } else if (kind == 1) {
    if (dnnl_convolution_backward_data_primitive_desc_create(&pd, c->eng, dnnl_convolution_direct, xa, wa, ya, strides,
                                                             dil, pl, pr, fwd, nullptr) != dnnl_success)
      return nullptr;
    q[0] = dnnl_query_diff_dst_md; q[1] = dnnl_query_weights_md; q[2] = dnnl_query_diff_src_md;
    shp[0] = ys; shp[1] = ws; shp[2] = xs;
  } else {
    if (dnnl_convolution_backward_weights_primitive_desc_create(&pd, c->eng, dnnl_convolution_direct, xa, wa, nullptr,
                                                                ya, strides, dil, pl, pr, fwd,
                                                                nullptr) != dnnl_success)
      return nullptr;
    q[0] = dnnl_query_diff_dst_md; q[1] = dnnl_query_src_md; q[2] = dnnl_query_diff_weights_md;
    shp[0] = ys; shp[1] = xs; shp[2] = ws;
  }
  e->pd = pd;
  if (dnnl_primitive_create(&e->conv, pd) != dnnl_success) return nullptr;
  for (int i = 0; i < 3; ++i) {
    e->md[i] = dnnl_primitive_desc_query_md(pd, q[i], 0);
    plain_md(&e->plain[i], shp[i]);
    e->need[i] = !dnnl_memory_desc_equal(e->md[i], e->plain[i]);
    if (e->need[i]) {
      dnnl_primitive_desc_t rpd;
      const_dnnl_memory_desc_t from = i < 2 ? e->plain[i] : e->md[i];
      const_dnnl_memory_desc_t to = i < 2 ? e->md[i] : e->plain[i];
      if (dnnl_reorder_primitive_desc_create(&rpd, from, c->eng, to, c->eng, nullptr) != dnnl_success) return nullptr;
      dnnl_primitive_create(&e->reorder[i], rpd);
      dnnl_primitive_desc_destroy(rpd);
    }
  }
  g_cache[key] = e;
  return e;
}

int reorder(Ctx *c, dnnl_primitive_t r, dnnl_memory_t from, dnnl_memory_t to) {
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
  CHECK(dnnl_primitive_execute(r, c->stream, 2, args));
  return 0;
}

int run(int kind, int nparam, void **params, int64_t **shapes) {
  const int o = nparam - 1;  // the output is the last parameter (backward ops get one extra shape-only input)
  if (!api().ok) {
    std::fprintf(stderr, "fast_conv: %s\n", api().error);
    return 1;
  }
  Ctx *c = ctx();
  const int32_t *cfg = static_cast<const int32_t *>(params[2]);
  const int64_t *xs, *ws, *ys;
  if (kind == 0) { xs = shapes[0]; ws = shapes[1]; ys = shapes[o]; }
  else if (kind == 1) { ys = shapes[0]; ws = shapes[1]; xs = shapes[o]; }
  else { ys = shapes[0]; xs = shapes[1]; ws = shapes[o]; }
  if (getenv("FAST_CONV_DEBUG")) fprintf(stderr, "kind %d x %ld %ld %ld %ld w %ld %ld %ld %ld y %ld %ld %ld %ld cfg %d %d %d %d %d %d %d\n", kind, xs[0], xs[1], xs[2], xs[3], ws[0], ws[1], ws[2], ws[3], ys[0], ys[1], ys[2], ys[3], cfg[0], cfg[1], cfg[2], cfg[3], cfg[4], cfg[5], cfg[6]);
  Entry *e = get_entry(kind, xs, ws, ys, cfg);
  if (!e) { std::fprintf(stderr, "fast_conv: oneDNN could not create the convolution primitive\n"); return 1; }
  void *user[3] = {params[0], params[1], params[o]};
  dnnl_memory_t um[3], km[3];
  for (int i = 0; i < 3; ++i) {
    CHECK(dnnl_memory_create(&um[i], e->plain[i], c->eng, user[i]));
    if (e->need[i]) {
      CHECK(dnnl_memory_create(&km[i], e->md[i], c->eng, DNNL_MEMORY_ALLOCATE));
      if (i < 2 && reorder(c, e->reorder[i], um[i], km[i])) return 1;
    } else {
      km[i] = um[i];
    }
  }
  int a0, a1, a2;
  if (kind == 0) { a0 = DNNL_ARG_SRC; a1 = DNNL_ARG_WEIGHTS; a2 = DNNL_ARG_DST; }
  else if (kind == 1) { a0 = DNNL_ARG_DIFF_DST; a1 = DNNL_ARG_WEIGHTS; a2 = DNNL_ARG_DIFF_SRC; }
  else { a0 = DNNL_ARG_DIFF_DST; a1 = DNNL_ARG_SRC; a2 = DNNL_ARG_DIFF_WEIGHTS; }
  // Scratchpad memory stays in oneDNN's default "library" mode: it manages it.
  dnnl_exec_arg_t args[3] = {{a0, km[0]}, {a1, km[1]}, {a2, km[2]}};
  CHECK(dnnl_primitive_execute(e->conv, c->stream, 3, args));
  if (e->need[2] && reorder(c, e->reorder[2], km[2], um[2])) return 1;
  CHECK(dnnl_stream_wait(c->stream));
  for (int i = 0; i < 3; ++i) {
    if (e->need[i]) dnnl_memory_destroy(km[i]);
    dnnl_memory_destroy(um[i]);
  }
  return 0;
}

}  // namespace

extern "C" {
// For Python (ctypes): which oneDNN the kernels use, its version, CPU runtime and the ISA it will run.
// Returns 0 and fills buf, or 1 and the reason in buf.
int FastConvInfo(char *buf, int size) {
  Api &a = api();
  if (!a.ok) {
    std::snprintf(buf, size, "%s", a.error);
    return 1;
  }
  const dnnl_version_t *v = dnnl_version();  // the macros below name the loaded library's functions
  int isa = dnnl_get_effective_cpu_isa != nullptr ? static_cast<int>(dnnl_get_effective_cpu_isa()) : -1;
  std::snprintf(buf, size, "{\"version\": \"%d.%d.%d\", \"runtime\": \"%s\", \"isa_code\": %d}", v->major,
                v->minor, v->patch, a.threadpool ? "threadpool" : "openmp", isa);
  return 0;
}

// Forward: (x, w, cfg) -> y
int FastConvForward(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *stream,
                    void *extra) {
  return run(0, nparam, params, shapes);
}
// Backward data: (dy, w, cfg, x) -> dx   (x is read for its shape only)
int FastConvBackwardData(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *stream,
                         void *extra) {
  return run(1, nparam, params, shapes);
}
// Backward weights: (dy, x, cfg, w) -> dw   (w is read for its shape only)
int FastConvBackwardWeights(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes,
                            void *stream, void *extra) {
  return run(2, nparam, params, shapes);
}
}
