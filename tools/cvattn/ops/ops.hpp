#pragma once
// One factory per op; registry.cpp lists them.
#include "op.hpp"

namespace cvattn::cli::ops {

OpSpec affine_grid();
OpSpec cbam();
OpSpec conv2d();
OpSpec eca();
OpSpec grid_sample();
OpSpec grid_sample_backward();
OpSpec se();
OpSpec sk();
OpSpec deform_conv2d();
OpSpec deform_conv();
OpSpec stn();
OpSpec scaled_dot_product_attention();
OpSpec position_encoding();
OpSpec mha();
OpSpec nonlocal();

// --- models: Whole timm networks (issue 20) ---
OpSpec timm_model();

// --- layers ---

// --- containers ---

// --- gates ---

// --- spatial ---

// --- onnx ---

// --- simd ---

// --- data ---

}  // namespace cvattn::cli::ops
