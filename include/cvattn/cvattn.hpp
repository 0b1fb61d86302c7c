#pragma once
// Umbrella header: everything public in cvattn.
#include "cvattn/core/attention_maps.hpp"
#include "cvattn/core/error.hpp"
#include "cvattn/core/image.hpp"
#include "cvattn/core/make_divisible.hpp"
#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/core/parallel.hpp"
#include "cvattn/core/simd.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/dnn/layers.hpp"
#include "cvattn/functional/activation.hpp"
#include "cvattn/functional/attention.hpp"
#include "cvattn/functional/batch_norm.hpp"
#include "cvattn/functional/conv.hpp"
#include "cvattn/functional/deform_conv.hpp"
#include "cvattn/functional/linear.hpp"
#include "cvattn/functional/pooling.hpp"
#include "cvattn/functional/position_encoding.hpp"
#include "cvattn/functional/sampling.hpp"
#include "cvattn/functional/score.hpp"
#include "cvattn/functional/sparse_attention.hpp"
#include "cvattn/io/file.hpp"
#include "cvattn/io/npy.hpp"
#include "cvattn/io/safetensors.hpp"
#include "cvattn/models/attention_shapes.hpp"
#include "cvattn/modules/activation.hpp"
#include "cvattn/modules/affine_grid_generator.hpp"
#include "cvattn/modules/batch_norm2d.hpp"
#include "cvattn/modules/bilinear_sampler.hpp"
#include "cvattn/modules/cbam.hpp"
#include "cvattn/modules/conv2d.hpp"
#include "cvattn/modules/deform_conv.hpp"
#include "cvattn/modules/eca.hpp"
#include "cvattn/modules/flatten.hpp"
#include "cvattn/modules/layer_kinds.hpp"
#include "cvattn/modules/linear.hpp"
#include "cvattn/modules/localisation_net.hpp"
#include "cvattn/modules/multihead_attention.hpp"
#include "cvattn/modules/non_local.hpp"
#include "cvattn/modules/pooling.hpp"
#include "cvattn/modules/position_encoding.hpp"
#include "cvattn/modules/selective_kernel.hpp"
#include "cvattn/modules/sequential.hpp"
#include "cvattn/modules/spatial_transformer.hpp"
#include "cvattn/modules/squeeze_excitation.hpp"
#include "cvattn/viz/viz.hpp"
// --- models: Whole timm networks (issue 20) ---
#include "cvattn/functional/residual.hpp"
#include "cvattn/functional/saliency.hpp"
#include "cvattn/functional/tokens.hpp"
#include "cvattn/models/data_config.hpp"
#include "cvattn/models/network.hpp"
#include "cvattn/models/resnet.hpp"
#include "cvattn/models/timm.hpp"
#include "cvattn/models/vision_transformer.hpp"

// --- layers ---
#include "cvattn/functional/interpolate.hpp"
#include "cvattn/functional/normalization.hpp"
#include "cvattn/functional/tensor_ops.hpp"
#include "cvattn/modules/activation_layers.hpp"
#include "cvattn/modules/dropout.hpp"
#include "cvattn/modules/normalization.hpp"

// --- containers ---
#include "cvattn/modules/containers.hpp"
#include "cvattn/modules/multihead_self_attention.hpp"

// --- gates ---
#include "cvattn/functional/dynamic_conv.hpp"
#include "cvattn/functional/gates.hpp"
#include "cvattn/modules/ceca.hpp"
#include "cvattn/modules/cond_conv.hpp"
#include "cvattn/modules/coord_attn.hpp"
#include "cvattn/modules/dynamic_conv.hpp"
#include "cvattn/modules/effective_se.hpp"
#include "cvattn/modules/gather_excite.hpp"
#include "cvattn/modules/global_context.hpp"
#include "cvattn/modules/light_cbam.hpp"
#include "cvattn/modules/split_attn.hpp"

// --- spatial ---
#include "cvattn/functional/bilinear_attention.hpp"
#include "cvattn/functional/generalized_attention.hpp"
#include "cvattn/functional/rel_pos_attention.hpp"
#include "cvattn/functional/survey_attention.hpp"
#include "cvattn/modules/bat.hpp"
#include "cvattn/modules/bottleneck_attn.hpp"
#include "cvattn/modules/generalized_attention.hpp"
#include "cvattn/modules/halo_attn.hpp"
#include "cvattn/modules/lambda_layer.hpp"

// --- onnx ---
#include "cvattn/functional/sampling3d.hpp"

// --- simd ---

// --- data ---

// --- mobile ---
#include "cvattn/models/efficientnet.hpp"

// --- swin ---
#include "cvattn/functional/window_attention.hpp"
#include "cvattn/models/swin_transformer.hpp"

// --- byob ---
#include "cvattn/models/byobnet.hpp"

// --- simd-attn ---

// --- simd-sample ---

#include "cvattn/version.hpp"
