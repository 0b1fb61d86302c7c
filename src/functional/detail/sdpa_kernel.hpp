#pragma once
// The scaled dot-product attention engine behind scaled_dot_product_attention and its packed-
// heads variant: a list of independent "heads", each a set of row-major matrices given by a
// base offset and a row stride, so heads can be column blocks of packed projections (MHA)
// without copies. Private to cvattn; callers validate everything first.
#include <cstdint>
#include <vector>

namespace cvattn::detail {

struct SdpaPlan {
  std::int64_t heads = 0;  // independent (batch, head) problems
  std::int64_t L = 0, S = 0, E = 0, Ev = 0;
  float scale = 1.0f;
  bool causal = false;

  const float* q = nullptr;  // head i: q + q_off[i], L rows of E, row stride q_rs
  const float* k = nullptr;  // S x E
  const float* v = nullptr;  // S x Ev
  std::int64_t q_rs = 0, k_rs = 0, v_rs = 0;
  std::vector<std::int64_t> q_off, k_off, v_off;

  float* out = nullptr;  // L x Ev, row stride out_rs
  std::int64_t out_rs = 0;
  std::vector<std::int64_t> out_off;

  float* weights = nullptr;  // null, or [heads, L, S] contiguous
  // Or (weights null) the mean over each run of avg_group consecutive heads, [heads / avg_group,
  // L, S] contiguous: MHA's averaged map, accumulated without the per-head maps.
  float* weights_avg = nullptr;
  std::int64_t avg_group = 1;

  const float* mask = nullptr;            // additive; element (i, j) of head h at
  std::int64_t mask_rs = 0, mask_cs = 0;  // mask + mask_off[h] + i*mask_rs + j*mask_cs
  std::vector<std::int64_t> mask_off;     // (mask_cs is 0 or 1)
};

// Runs every head (parallel over heads x blocks of query rows). Allocates its scratch before
// the parallel region; never throws once running.
void run_sdpa(const SdpaPlan& plan);

}  // namespace cvattn::detail
