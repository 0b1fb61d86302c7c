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
OpSpec layer_norm();
OpSpec group_norm();
OpSpec gelu();
OpSpec silu();
OpSpec hardswish();
OpSpec hardsigmoid();
OpSpec mish();
OpSpec interpolate();

// --- containers ---

// --- gates ---
OpSpec ese();
OpSpec ceca();
OpSpec ge();
OpSpec lcbam();
OpSpec gc();
OpSpec coord_attn();
OpSpec splat();
OpSpec dynamic_conv();
OpSpec cond_conv();

// --- spatial ---
OpSpec bottleneck_attn();
OpSpec halo_attn();
OpSpec lambda();
OpSpec bat();
OpSpec generalized_attention();

// --- onnx ---

// --- simd ---

// --- data ---

// --- mobile ---

// --- swin ---

// --- byob ---

// --- simd-attn ---

// --- simd-sample ---

}  // namespace cvattn::cli::ops
