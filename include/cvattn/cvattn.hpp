#pragma once
// Umbrella header: everything public in cvattn.
#include "cvattn/core/attention_maps.hpp"
#include "cvattn/core/error.hpp"
#include "cvattn/core/image.hpp"
#include "cvattn/core/make_divisible.hpp"
#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/core/parallel.hpp"
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
// --- layers ---

// --- containers ---
#include "cvattn/modules/containers.hpp"
#include "cvattn/modules/multihead_self_attention.hpp"

// --- gates ---

// --- spatial ---

// --- onnx ---

// --- simd ---

// --- data ---

#include "cvattn/version.hpp"
