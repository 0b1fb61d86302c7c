// The explicit table of ops (no static self-registration, which a static library can drop).
// Adding an op is one line here plus its file in ops/.
#include "op.hpp"
#include "ops/ops.hpp"

namespace cvattn::cli {

const std::vector<OpSpec>& all_ops() {
  static const std::vector<OpSpec> ops = {
      ops::conv2d(), ops::se(), ops::eca(), ops::cbam(), ops::sk(), ops::deform_conv2d(),
      ops::deform_conv(), ops::affine_grid(), ops::grid_sample(), ops::grid_sample_backward(),
      ops::stn(), ops::scaled_dot_product_attention(), ops::position_encoding(), ops::mha(),
      ops::nonlocal(),
      // --- models: Whole timm networks (issue 20) ---
      ops::timm_model(),

      // --- layers ---
      ops::layer_norm(), ops::group_norm(), ops::gelu(), ops::silu(), ops::hardswish(),
      ops::hardsigmoid(), ops::mish(), ops::interpolate(),

      // --- containers ---

      // --- gates ---
      ops::ese(), ops::ceca(), ops::ge(), ops::lcbam(), ops::gc(), ops::coord_attn(), ops::splat(),
      ops::dynamic_conv(), ops::cond_conv(),

      // --- spatial ---
      ops::bottleneck_attn(), ops::halo_attn(), ops::lambda(), ops::bat(),
      ops::generalized_attention(),

      // --- onnx ---

      // --- simd ---

      // --- data ---

      // --- mobile ---

      // --- swin ---

      // --- byob ---

      // --- simd-attn ---

      // --- simd-sample ---

  };
  return ops;
}

}  // namespace cvattn::cli
