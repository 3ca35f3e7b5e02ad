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
#include <initializer_list>
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
  X(dnnl_version) \
  X(dnnl_primitive_attr_create) \
  X(dnnl_primitive_attr_set_scratchpad_mode) \
  X(dnnl_primitive_get_primitive_desc) \
  X(dnnl_pooling_forward_primitive_desc_create) \
  X(dnnl_pooling_backward_primitive_desc_create) \
  X(dnnl_memory_desc_get_size) \
  X(dnnl_memory_desc_destroy) \
  X(dnnl_batch_normalization_forward_primitive_desc_create) \
  X(dnnl_batch_normalization_backward_primitive_desc_create)

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
  std::string t;  // the same reading as Python's build(): surrounding spaces dropped, any case
  for (char ch : s)
    if (!std::isspace(static_cast<unsigned char>(ch))) t += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  s = t;
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
#define dnnl_primitive_attr_create (api().dnnl_primitive_attr_create)
#define dnnl_primitive_attr_set_scratchpad_mode (api().dnnl_primitive_attr_set_scratchpad_mode)
#define dnnl_primitive_get_primitive_desc (api().dnnl_primitive_get_primitive_desc)
#define dnnl_pooling_forward_primitive_desc_create (api().dnnl_pooling_forward_primitive_desc_create)
#define dnnl_pooling_backward_primitive_desc_create (api().dnnl_pooling_backward_primitive_desc_create)
#define dnnl_memory_desc_get_size (api().dnnl_memory_desc_get_size)
#define dnnl_memory_desc_destroy (api().dnnl_memory_desc_destroy)
#define dnnl_batch_normalization_forward_primitive_desc_create (api().dnnl_batch_normalization_forward_primitive_desc_create)
#define dnnl_batch_normalization_backward_primitive_desc_create (api().dnnl_batch_normalization_backward_primitive_desc_create)

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

// Every primitive is made with a user-managed scratchpad (its temporary memory), allocated for each call.
// oneDNN's default ("library" mode) keeps the scratchpad with the thread that created the primitive. MindSpore
// creates and runs these kernels on different threads (the Python thread in PyNative mode, its actor threads in
// graph mode): measured, a primitive cached in PyNative mode then run in graph mode crashed in the private
// oneDNN's gemm convolution (tests/test_fast_conv_backend.py).
const_dnnl_primitive_attr_t scratch_attr() {
  static dnnl_primitive_attr_t attr = [] {
    dnnl_primitive_attr_t a = nullptr;
    dnnl_primitive_attr_create(&a);
    dnnl_primitive_attr_set_scratchpad_mode(a, dnnl_scratchpad_mode_user);
    return a;
  }();
  return attr;
}

int execute(Ctx *c, dnnl_primitive_t prim, std::vector<dnnl_exec_arg_t> args) {
  const_dnnl_primitive_desc_t pd = nullptr;
  CHECK(dnnl_primitive_get_primitive_desc(prim, &pd));
  const_dnnl_memory_desc_t smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  dnnl_memory_t scratch = nullptr;
  if (smd && dnnl_memory_desc_get_size(smd) > 0) {
    CHECK(dnnl_memory_create(&scratch, smd, c->eng, DNNL_MEMORY_ALLOCATE));
    args.push_back({DNNL_ARG_SCRATCHPAD, scratch});
  }
  dnnl_status_t status = dnnl_primitive_execute(prim, c->stream, static_cast<int>(args.size()), args.data());
  if (status == dnnl_success) status = dnnl_stream_wait(c->stream);
  if (scratch) dnnl_memory_destroy(scratch);
  if (status != dnnl_success) {
    std::fprintf(stderr, "fast_conv: a oneDNN primitive failed with status %d\n", static_cast<int>(status));
    return 1;
  }
  return 0;
}

// ---- tensors as MindSpore passes them --------------------------------------------------------------------
// A data tensor is plain NCHW (4-D) or *blocked* (5-D: N, C/B, H, W, B with B = 8 or 16, oneDNN's aBcd8b /
// aBcd16b, "nChw8c" / "nChw16c"): channel c sits at [n, c / B, h, w, c % B]. Blocked tensors stay blocked
// between FastConv2d, BatchNorm, ReLU and Add (the last two are MindSpore's elementwise ops), so no reorder is
// needed between layers.
struct Tensor {
  int64_t dims[4];  // logical N, C, H, W
  int block;        // 0 = plain NCHW, else B
};

bool tensor_of(int rank, const int64_t *shape, Tensor *t) {
  if (rank == 4) {
    for (int i = 0; i < 4; ++i) t->dims[i] = shape[i];
    t->block = 0;
    return true;
  }
  if (rank == 5 && (shape[4] == 8 || shape[4] == 16)) {
    t->dims[0] = shape[0];
    t->dims[1] = shape[1] * shape[4];
    t->dims[2] = shape[2];
    t->dims[3] = shape[3];
    t->block = static_cast<int>(shape[4]);
    return true;
  }
  return false;
}

void user_md(dnnl_memory_desc_t *md, const Tensor &t) {
  const int64_t *d = t.dims;
  dnnl_dims_t dims = {d[0], d[1], d[2], d[3]};
  if (t.block) {
    dnnl_memory_desc_create_with_tag(md, 4, dims, dnnl_f32, t.block == 16 ? dnnl_aBcd16b : dnnl_aBcd8b);
  } else {
    dnnl_dims_t strides = {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1};
    dnnl_memory_desc_create_with_strides(md, 4, dims, dnnl_f32, strides);
  }
}

void any_md(dnnl_memory_desc_t *md, const int64_t *d) {
  dnnl_dims_t dims = {d[0], d[1], d[2], d[3]};
  dnnl_memory_desc_create_with_tag(md, 4, dims, dnnl_f32, dnnl_format_tag_any);
}

void vector_md(dnnl_memory_desc_t *md, int64_t n) {
  dnnl_dims_t dims = {n};
  dnnl_memory_desc_create_with_tag(md, 1, dims, dnnl_f32, dnnl_a);
}

std::string key_of(const char *kind, std::initializer_list<int64_t> values) {
  std::string k(kind);
  for (int64_t v : values) k += "," + std::to_string(v);
  return k;
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

// ---- convolution ----------------------------------------------------------------------------------------
// One cached entry per (kind, shapes, layouts, config): the conv primitive and the reorders around it.
struct Entry {
  dnnl_primitive_t conv = nullptr;
  // md's chosen by oneDNN for the three operands (a = data in, b = weights, c = data out).
  const_dnnl_memory_desc_t md[3] = {nullptr, nullptr, nullptr};
  dnnl_memory_desc_t user[3] = {nullptr, nullptr, nullptr};
  dnnl_primitive_t reorder[3] = {nullptr, nullptr, nullptr};  // user->chosen for inputs, chosen->user for output
  bool need[3] = {false, false, false};
  dnnl_primitive_desc_t pd = nullptr;
};

std::mutex g_mu;

// The object cached under key, made by make() the first time (under g_mu, so it is made once). A failed make()
// (nullptr) is not cached: the next call tries again and reports again.
template <class T, class Make>
T *cached(std::map<std::string, T *> &cache, const std::string &key, Make make) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  T *made = make();
  if (made) cache[key] = made;
  return made;
}
// One kernel at a time: the stream is shared, and MindSpore's graph runtime may launch independent kernels (e.g.
// the two backward passes of a convolution) on different threads. Each kernel uses every core through its own
// threads, so running two at once would only oversubscribe the cores.
std::mutex g_exec;
std::map<std::string, Entry *> g_cache;

// kind 0 = forward (x, w -> y), 1 = backward data (dy, w -> dx), 2 = backward weights (dy, x -> dw).
// Plain data: oneDNN picks the layout (format_tag::any) and we reorder around the kernel. Blocked data: the
// kernel must run on that layout, so the data operands are given as they are (only the weights are reordered).
Entry *get_entry(int kind, const Tensor &xt, const int64_t *ws, const Tensor &yt, const int32_t *cfg) {
  const int64_t *xs = xt.dims, *ys = yt.dims;
  std::string key = key_of("conv", {kind, xs[0], xs[1], xs[2], xs[3], xt.block, ws[0], ws[1], ws[2], ws[3], ys[0],
                                    ys[1], ys[2], ys[3], yt.block, cfg[0], cfg[1], cfg[2], cfg[3], cfg[4], cfg[5],
                                    cfg[6]});
  return cached(g_cache, key, [&]() -> Entry * {
    Ctx *c = ctx();
    const bool keep = xt.block || yt.block;
    dnnl_memory_desc_t xa, wa, ya, ba = nullptr;
    if (keep) {
      user_md(&xa, xt);
      user_md(&ya, yt);
    } else {
      any_md(&xa, xs);
      any_md(&ya, ys);
    }
    any_md(&wa, ws);
    dnnl_dims_t strides = {cfg[0], cfg[1]}, dil = {0, 0}, pl, pr;
    int64_t l[2], r[2];
    pads(cfg, xs, ws, l, r);
    pl[0] = l[0]; pl[1] = l[1]; pr[0] = r[0]; pr[1] = r[1];
    dnnl_primitive_desc_t fwd = nullptr, pd = nullptr;
    if (dnnl_convolution_forward_primitive_desc_create(&fwd, c->eng, dnnl_forward_training, dnnl_convolution_direct,
                                                       xa, wa, ba, ya, strides, dil, pl, pr, scratch_attr()) != dnnl_success)
      return nullptr;
    Entry *e = new Entry();
    dnnl_query_t q[3];
    Tensor w4 = {{ws[0], ws[1], ws[2], ws[3]}, 0};
    const Tensor *shp[3];
    if (kind == 0) {
      pd = fwd;
      q[0] = dnnl_query_src_md; q[1] = dnnl_query_weights_md; q[2] = dnnl_query_dst_md;
      shp[0] = &xt; shp[1] = &w4; shp[2] = &yt;
    } else if (kind == 1) {
      if (dnnl_convolution_backward_data_primitive_desc_create(&pd, c->eng, dnnl_convolution_direct, xa, wa, ya, strides,
                                                               dil, pl, pr, fwd, scratch_attr()) != dnnl_success)
        return nullptr;
      q[0] = dnnl_query_diff_dst_md; q[1] = dnnl_query_weights_md; q[2] = dnnl_query_diff_src_md;
      shp[0] = &yt; shp[1] = &w4; shp[2] = &xt;
    } else {
      if (dnnl_convolution_backward_weights_primitive_desc_create(&pd, c->eng, dnnl_convolution_direct, xa, wa, nullptr,
                                                                  ya, strides, dil, pl, pr, fwd,
                                                                  scratch_attr()) != dnnl_success)
        return nullptr;
      q[0] = dnnl_query_diff_dst_md; q[1] = dnnl_query_src_md; q[2] = dnnl_query_diff_weights_md;
      shp[0] = &yt; shp[1] = &xt; shp[2] = &w4;
    }
    e->pd = pd;
    if (dnnl_primitive_create(&e->conv, pd) != dnnl_success) return nullptr;
    for (int i = 0; i < 3; ++i) {
      e->md[i] = dnnl_primitive_desc_query_md(pd, q[i], 0);
      user_md(&e->user[i], *shp[i]);
      e->need[i] = !dnnl_memory_desc_equal(e->md[i], e->user[i]);
      if (e->need[i]) {
        dnnl_primitive_desc_t rpd;
        const_dnnl_memory_desc_t from = i < 2 ? e->user[i] : e->md[i];
        const_dnnl_memory_desc_t to = i < 2 ? e->md[i] : e->user[i];
        if (dnnl_reorder_primitive_desc_create(&rpd, from, c->eng, to, c->eng, scratch_attr()) != dnnl_success) return nullptr;
        dnnl_primitive_create(&e->reorder[i], rpd);
        dnnl_primitive_desc_destroy(rpd);
      }
    }
    return e;
  });
}

int reorder(Ctx *c, dnnl_primitive_t r, dnnl_memory_t from, dnnl_memory_t to) {
  return execute(c, r, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

bool ready() {
  if (!api().ok) {
    std::fprintf(stderr, "fast_conv: %s\n", api().error);
    return false;
  }
  return true;
}

int run(int kind, int nparam, void **params, int *ndims, int64_t **shapes) {
  const int o = nparam - 1;  // the output is the last parameter (backward ops get one extra shape-only input)
  if (!ready()) return 1;
  std::lock_guard<std::mutex> one_at_a_time(g_exec);
  Ctx *c = ctx();
  const int32_t *cfg = static_cast<const int32_t *>(params[2]);
  int xi, yi;
  const int64_t *ws;
  if (kind == 0) { xi = 0; ws = shapes[1]; yi = o; }
  else if (kind == 1) { yi = 0; ws = shapes[1]; xi = o; }
  else { yi = 0; xi = 1; ws = shapes[o]; }
  Tensor xt, yt;
  if (!tensor_of(ndims[xi], shapes[xi], &xt) || !tensor_of(ndims[yi], shapes[yi], &yt)) {
    std::fprintf(stderr, "fast_conv: data tensors must be 4-D NCHW or 5-D blocked (N, C/B, H, W, B), B = 8 or 16\n");
    return 1;
  }
  Entry *e = get_entry(kind, xt, ws, yt, cfg);
  if (!e) { std::fprintf(stderr, "fast_conv: oneDNN could not create the convolution primitive\n"); return 1; }
  void *user[3] = {params[0], params[1], params[o]};
  dnnl_memory_t um[3], km[3];
  for (int i = 0; i < 3; ++i) {
    CHECK(dnnl_memory_create(&um[i], e->user[i], c->eng, user[i]));
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
  if (execute(c, e->conv, {{a0, km[0]}, {a1, km[1]}, {a2, km[2]}})) return 1;
  if (e->need[2] && reorder(c, e->reorder[2], km[2], um[2])) return 1;
  CHECK(dnnl_stream_wait(c->stream));
  for (int i = 0; i < 3; ++i) {
    if (e->need[i]) dnnl_memory_destroy(km[i]);
    dnnl_memory_destroy(um[i]);
  }
  return 0;
}

// ---- layout changes: plain NCHW <-> blocked ---------------------------------------------------------------
int relayout(void **params, int *ndims, int64_t **shapes) {
  if (!ready()) return 1;
  std::lock_guard<std::mutex> one_at_a_time(g_exec);
  Ctx *c = ctx();
  Tensor a, b;
  if (!tensor_of(ndims[0], shapes[0], &a) || !tensor_of(ndims[1], shapes[1], &b) ||
      std::memcmp(a.dims, b.dims, sizeof a.dims) != 0) {
    std::fprintf(stderr, "fast_conv: relayout needs the same N, C, H, W on both sides\n");
    return 1;
  }
  std::string key = key_of("reorder", {a.dims[0], a.dims[1], a.dims[2], a.dims[3], a.block, b.block});
  dnnl_memory_desc_t amd, bmd;
  user_md(&amd, a);
  user_md(&bmd, b);
  static std::map<std::string, dnnl_primitive *> relayouts;
  dnnl_primitive_t prim = cached(relayouts, key, [&]() -> dnnl_primitive_t {
    dnnl_primitive_desc_t rpd;
    dnnl_primitive_t made = nullptr;
    if (dnnl_reorder_primitive_desc_create(&rpd, amd, c->eng, bmd, c->eng, scratch_attr()) != dnnl_success)
      return nullptr;
    if (dnnl_primitive_create(&made, rpd) != dnnl_success) made = nullptr;
    dnnl_primitive_desc_destroy(rpd);
    return made;
  });
  if (!prim) {
    std::fprintf(stderr, "fast_conv: oneDNN could not create the layout change\n");
    return 1;
  }
  dnnl_memory_t am, bm;
  CHECK(dnnl_memory_create(&am, amd, c->eng, params[0]));
  CHECK(dnnl_memory_create(&bm, bmd, c->eng, params[1]));
  if (reorder(c, prim, am, bm)) return 1;
  CHECK(dnnl_stream_wait(c->stream));
  dnnl_memory_destroy(am);
  dnnl_memory_destroy(bm);
  dnnl_memory_desc_destroy(amd);
  dnnl_memory_desc_destroy(bmd);
  return 0;
}

// ---- batch normalization on plain or blocked tensors, optionally fused with ReLU --------------------------
// fuse 0 = BN; 1 = ReLU(BN(x)). oneDNN applies the ReLU in the same pass over memory; training keeps a bit mask
// of the ReLU ("workspace") for the backward. (oneDNN 3.2 has no CPU kernel for dnnl_fuse_norm_add_relu, so the
// end of a residual block uses add_relu() below.)
// kind 0 = training forward: (x, gamma, beta, cfg) -> (y, mean, biased variance, [workspace])
// kind 1 = backward:         (dy, x, gamma, mean, variance, [workspace], cfg) -> (dx, dgamma, dbeta)
// kind 2 = inference:        (x, gamma, beta, mean, variance, cfg) -> y, with the given (moving) statistics
// [workspace] is there when fuse == 1. cfg is a float32 tensor [epsilon].
struct Norm {
  dnnl_primitive_t prim = nullptr;
  dnnl_memory_desc_t data = nullptr, vec = nullptr;
  const_dnnl_memory_desc_t workspace = nullptr;
};

std::map<std::string, Norm *> g_norm;

unsigned fuse_flags(int fuse) {
  return fuse == 1 ? dnnl_fuse_norm_relu : 0u;
}

Norm *norm_entry(int kind, int fuse, const Tensor &t, float eps) {
  int32_t bits;
  std::memcpy(&bits, &eps, sizeof eps);
  std::string key = key_of("norm", {kind, fuse, t.dims[0], t.dims[1], t.dims[2], t.dims[3], t.block, bits});
  return cached(g_norm, key, [&]() -> Norm * {
    Ctx *c = ctx();
    Norm *n = new Norm();
    user_md(&n->data, t);
    vector_md(&n->vec, t.dims[1]);
    const unsigned flags = dnnl_use_scale | dnnl_use_shift | fuse_flags(fuse);
    dnnl_primitive_desc_t fwd = nullptr, pd = nullptr;
    if (kind == 2) {
      if (dnnl_batch_normalization_forward_primitive_desc_create(&pd, c->eng, dnnl_forward_inference, n->data, n->data,
                                                                 eps, flags | dnnl_use_global_stats,
                                                                 scratch_attr()) != dnnl_success)
        return nullptr;
    } else {
      if (dnnl_batch_normalization_forward_primitive_desc_create(&fwd, c->eng, dnnl_forward_training, n->data, n->data,
                                                                 eps, flags, scratch_attr()) != dnnl_success)
        return nullptr;
      if (kind == 0) {
        pd = fwd;
      } else if (dnnl_batch_normalization_backward_primitive_desc_create(&pd, c->eng, dnnl_backward, n->data, n->data,
                                                                        n->data, eps, flags, fwd,
                                                                        scratch_attr()) != dnnl_success) {
        return nullptr;
      }
    }
    if (dnnl_primitive_create(&n->prim, pd) != dnnl_success) return nullptr;
    if (fuse && kind != 2) n->workspace = dnnl_primitive_desc_query_md(pd, dnnl_query_workspace_md, 0);
    return n;
  });
}

int norm(int kind, int fuse, void **params, int *ndims, int64_t **shapes) {
  if (!ready()) return 1;
  std::lock_guard<std::mutex> one_at_a_time(g_exec);
  Ctx *c = ctx();
  Tensor t;
  if (!tensor_of(ndims[0], shapes[0], &t)) {
    std::fprintf(stderr, "fast_conv: batch norm needs a 4-D NCHW or 5-D blocked tensor\n");
    return 1;
  }
  enum Kind { DATA, VEC, WS };
  struct Arg { int arg; Kind what; };
  std::vector<Arg> in, out;  // in the order of the parameters; cfg sits between the inputs and the outputs
  if (kind == 0) {
    in = {{DNNL_ARG_SRC, DATA}, {DNNL_ARG_SCALE, VEC}, {DNNL_ARG_SHIFT, VEC}};
    out = {{DNNL_ARG_DST, DATA}, {DNNL_ARG_MEAN, VEC}, {DNNL_ARG_VARIANCE, VEC}};
    if (fuse) out.push_back({DNNL_ARG_WORKSPACE, WS});
  } else if (kind == 1) {
    in = {{DNNL_ARG_DIFF_DST, DATA}, {DNNL_ARG_SRC, DATA}, {DNNL_ARG_SCALE, VEC}, {DNNL_ARG_MEAN, VEC},
          {DNNL_ARG_VARIANCE, VEC}};
    if (fuse) in.push_back({DNNL_ARG_WORKSPACE, WS});
    out = {{DNNL_ARG_DIFF_SRC, DATA}, {DNNL_ARG_DIFF_SCALE, VEC}, {DNNL_ARG_DIFF_SHIFT, VEC}};
  } else {
    in = {{DNNL_ARG_SRC, DATA}, {DNNL_ARG_SCALE, VEC}, {DNNL_ARG_SHIFT, VEC}, {DNNL_ARG_MEAN, VEC},
          {DNNL_ARG_VARIANCE, VEC}};
    out = {{DNNL_ARG_DST, DATA}};
  }
  const int cfg_at = static_cast<int>(in.size());
  const float eps = static_cast<const float *>(params[cfg_at])[0];
  Norm *n = norm_entry(kind, fuse, t, eps);
  if (!n) { std::fprintf(stderr, "fast_conv: oneDNN could not create the batch-norm primitive\n"); return 1; }
  std::vector<dnnl_exec_arg_t> args;
  std::vector<dnnl_memory_t> mems;
  for (size_t i = 0; i < in.size() + out.size(); ++i) {
    const Arg &a = i < in.size() ? in[i] : out[i - in.size()];
    const int at = i < in.size() ? static_cast<int>(i) : static_cast<int>(i) + 1;  // skip cfg
    const_dnnl_memory_desc_t md = a.what == DATA ? n->data : a.what == VEC ? n->vec : n->workspace;
    dnnl_memory_t m;
    CHECK(dnnl_memory_create(&m, md, c->eng, params[at]));
    mems.push_back(m);
    args.push_back({a.arg, m});
  }
  if (execute(c, n->prim, args)) return 1;
  CHECK(dnnl_stream_wait(c->stream));
  for (dnnl_memory_t m : mems) dnnl_memory_destroy(m);
  return 0;
}

// Bytes of the ReLU mask that training with fuse == 1 keeps for the backward pass; -1 if oneDNN refuses.
int64_t norm_workspace_bytes(const int64_t *shape, int rank, int fuse, float eps) {
  Tensor t;
  if (!ready() || !tensor_of(rank, shape, &t)) return -1;
  Norm *n = norm_entry(0, fuse, t, eps);
  if (!n || !n->workspace) return -1;
  return static_cast<int64_t>(dnnl_memory_desc_get_size(n->workspace));
}

// ---- max pooling on plain or blocked tensors --------------------------------------------------------------
// cfg is an int32 tensor [kernel, stride, padding] (square; padding on every side; floor rounding, padded cells
// never win, as MindSpore's and PyTorch's max-pool). Training keeps the winners' positions ("workspace").
// kind 0 = training forward: (x, cfg) -> (y, workspace); 1 = backward: (dy, workspace, cfg, x) -> dx (x for its
// shape only); 2 = inference: (x, cfg) -> y.
struct Pool {
  dnnl_primitive_t prim = nullptr;
  dnnl_memory_desc_t src = nullptr, dst = nullptr;
  const_dnnl_memory_desc_t workspace = nullptr;
};

std::map<std::string, Pool *> g_pool;

Pool *pool_entry(int kind, const Tensor &xt, const int32_t *cfg) {
  const int64_t k = cfg[0], s = cfg[1], p = cfg[2];
  std::string key = key_of("pool", {kind, xt.dims[0], xt.dims[1], xt.dims[2], xt.dims[3], xt.block, k, s, p});
  return cached(g_pool, key, [&]() -> Pool * {
    Ctx *c = ctx();
    Pool *e = new Pool();
    Tensor yt = xt;
    int64_t pr[2];
    for (int i = 0; i < 2; ++i) {
      const int64_t n = xt.dims[2 + i], out = (n + 2 * p - k) / s + 1;
      yt.dims[2 + i] = out;
      pr[i] = (out - 1) * s + k - n - p;
    }
    user_md(&e->src, xt);
    user_md(&e->dst, yt);
    dnnl_dims_t strides = {s, s}, kernel = {k, k}, dil = {0, 0}, pl = {p, p}, pright = {pr[0], pr[1]};
    dnnl_primitive_desc_t fwd = nullptr, pd = nullptr;
    if (dnnl_pooling_forward_primitive_desc_create(&fwd, c->eng, kind == 2 ? dnnl_forward_inference
                                                                             : dnnl_forward_training,
                                                   dnnl_pooling_max, e->src, e->dst, strides, kernel, dil, pl, pright,
                                                   scratch_attr()) != dnnl_success)
      return nullptr;
    if (kind == 1) {
      if (dnnl_pooling_backward_primitive_desc_create(&pd, c->eng, dnnl_pooling_max, e->src, e->dst, strides, kernel,
                                                      dil, pl, pright, fwd, scratch_attr()) != dnnl_success)
        return nullptr;
    } else {
      pd = fwd;
    }
    if (dnnl_primitive_create(&e->prim, pd) != dnnl_success) return nullptr;
    if (kind != 2) e->workspace = dnnl_primitive_desc_query_md(pd, dnnl_query_workspace_md, 0);
    return e;
  });
}

int pool(int kind, int nparam, void **params, int *ndims, int64_t **shapes) {
  if (!ready()) return 1;
  std::lock_guard<std::mutex> one_at_a_time(g_exec);
  Ctx *c = ctx();
  const int o = nparam - 1;
  const int xi = kind == 1 ? 3 : 0, cfg_at = kind == 1 ? 2 : 1;
  Tensor xt;
  if (!tensor_of(ndims[xi], shapes[xi], &xt)) {
    std::fprintf(stderr, "fast_conv: max pooling needs a 4-D NCHW or 5-D blocked tensor\n");
    return 1;
  }
  Pool *e = pool_entry(kind, xt, static_cast<const int32_t *>(params[cfg_at]));
  if (!e) { std::fprintf(stderr, "fast_conv: oneDNN could not create the pooling primitive\n"); return 1; }
  std::vector<std::pair<int, std::pair<const_dnnl_memory_desc_t, void *>>> list;
  if (kind == 0) {
    list = {{DNNL_ARG_SRC, {e->src, params[0]}}, {DNNL_ARG_DST, {e->dst, params[2]}},
            {DNNL_ARG_WORKSPACE, {e->workspace, params[3]}}};
  } else if (kind == 1) {
    list = {{DNNL_ARG_DIFF_DST, {e->dst, params[0]}}, {DNNL_ARG_WORKSPACE, {e->workspace, params[1]}},
            {DNNL_ARG_DIFF_SRC, {e->src, params[o]}}};
  } else {
    list = {{DNNL_ARG_SRC, {e->src, params[0]}}, {DNNL_ARG_DST, {e->dst, params[o]}}};
  }
  std::vector<dnnl_exec_arg_t> args;
  for (auto &a : list) {
    dnnl_memory_t m;
    CHECK(dnnl_memory_create(&m, a.second.first, c->eng, a.second.second));
    args.push_back({a.first, m});
  }
  if (execute(c, e->prim, args)) return 1;
  CHECK(dnnl_stream_wait(c->stream));
  for (auto &a : args) dnnl_memory_destroy(a.memory);
  return 0;
}

int64_t pool_workspace_bytes(const int64_t *shape, int rank, const int32_t *cfg) {
  Tensor t;
  if (!ready() || !tensor_of(rank, shape, &t)) return -1;
  Pool *e = pool_entry(0, t, cfg);
  if (!e || !e->workspace) return -1;
  return static_cast<int64_t>(dnnl_memory_desc_get_size(e->workspace));
}

// ---- the end of a residual block: y = ReLU(a + r), and its gradient g = dy * (y > 0) for both a and r --------
// Elementwise, so the layout does not matter (a, r, y have the same shape). OpenMP threads, like oneDNN's.
int64_t elements(int rank, const int64_t *shape) {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= shape[i];
  return n;
}

int add_relu(void **params, int *ndims, int64_t **shapes) {
  const float *a = static_cast<const float *>(params[0]);
  const float *r = static_cast<const float *>(params[1]);
  float *y = static_cast<float *>(params[2]);
  const int64_t n = elements(ndims[0], shapes[0]);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const float v = a[i] + r[i];
    y[i] = v > 0.f ? v : 0.f;
  }
  return 0;
}

int add_relu_backward(void **params, int *ndims, int64_t **shapes) {
  const float *dy = static_cast<const float *>(params[0]);
  const float *y = static_cast<const float *>(params[1]);
  float *g = static_cast<float *>(params[2]);
  const int64_t n = elements(ndims[0], shapes[0]);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) g[i] = y[i] > 0.f ? dy[i] : 0.f;
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
  return run(0, nparam, params, ndims, shapes);
}
// Backward data: (dy, w, cfg, x) -> dx   (x is read for its shape only)
int FastConvBackwardData(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *stream,
                         void *extra) {
  return run(1, nparam, params, ndims, shapes);
}
// Backward weights: (dy, x, cfg, w) -> dw   (w is read for its shape only)
int FastConvBackwardWeights(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes,
                            void *stream, void *extra) {
  return run(2, nparam, params, ndims, shapes);
}
// Layout change: (x) -> y, plain NCHW to blocked or back (the output's shape says which).
int FastRelayout(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *stream,
                 void *extra) {
  return relayout(params, ndims, shapes);
}
// Batch norm (see norm() for the parameters of each kind and fusion).
#define NORM_EXPORT(name, kind, fuse)                                                                      \
  int name(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *stream,  \
           void *extra) {                                                                                \
    return norm(kind, fuse, params, ndims, shapes);                                                      \
  }
NORM_EXPORT(FastNormTrain, 0, 0)
NORM_EXPORT(FastNormBackward, 1, 0)
NORM_EXPORT(FastNormInfer, 2, 0)
NORM_EXPORT(FastNormReluTrain, 0, 1)
NORM_EXPORT(FastNormReluBackward, 1, 1)
NORM_EXPORT(FastNormReluInfer, 2, 1)

// (a, r) -> ReLU(a + r)
int FastAddRelu(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *stream,
                void *extra) {
  return add_relu(params, ndims, shapes);
}
// (dy, y) -> dy * (y > 0), the gradient for both a and r
int FastAddReluBackward(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *stream,
                        void *extra) {
  return add_relu_backward(params, ndims, shapes);
}

// Max pooling (see pool() for the parameters of each kind)
int FastMaxPoolTrain(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *stream,
                     void *extra) {
  return pool(0, nparam, params, ndims, shapes);
}
int FastMaxPoolBackward(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *stream,
                        void *extra) {
  return pool(1, nparam, params, ndims, shapes);
}
int FastMaxPoolInfer(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *stream,
                     void *extra) {
  return pool(2, nparam, params, ndims, shapes);
}
int64_t FastPoolWorkspaceBytes(const int64_t *shape, int rank, const int32_t *cfg) {
  return pool_workspace_bytes(shape, rank, cfg);
}

// For Python (ctypes), at graph-build time: the size of the training workspace (the ReLU mask).
int64_t FastNormWorkspaceBytes(const int64_t *shape, int rank, int fuse, float eps) {
  return norm_workspace_bytes(shape, rank, fuse, eps);
}
}
