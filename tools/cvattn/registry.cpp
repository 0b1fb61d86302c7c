// The explicit table of ops (no static self-registration, which a static library can drop).
// Adding an op is one line here plus its file in ops/.
#include "op.hpp"
#include "ops/ops.hpp"

namespace cvattn::cli {

const std::vector<OpSpec>& all_ops() {
  static const std::vector<OpSpec> ops = {
      ops::conv2d(),
      ops::se(),
      ops::eca(),
      ops::cbam(),
      ops::sk(),
      ops::deform_conv2d(),
      ops::deform_conv(),
      ops::affine_grid(),
      ops::grid_sample(),
      ops::grid_sample_backward(),
      ops::stn(),
      ops::scaled_dot_product_attention(),
      ops::position_encoding(),
      ops::mha(),
      ops::nonlocal(),
      // --- models: Whole timm networks (issue 20) ---
      ops::timm_model(),

      // --- layers ---

      // --- containers ---

      // --- gates ---

      // --- spatial ---

      // --- onnx ---

      // --- simd ---

      // --- data ---

  };
  return ops;
}

}  // namespace cvattn::cli
