#pragma once
// OpenCV dnn custom layers backed by cvattn's kernels, so cv::dnn::readNetFromONNX runs models
// with the ONNX ops OpenCV 4.6 lacks (docs/dnn.md):
//   GridSample (opset 16/20, 2-D and 5-D)  attributes mode, padding_mode, align_corners;
//                          inputs X, grid
//   AffineGrid (opset 20, 2-D and 3-D)  attribute align_corners; inputs theta and a constant
//                          size tensor (N is taken from theta)
//   DeformConv (opset 19)  attributes strides, pads (may be asymmetric), dilations, group,
//                          offset_group, kernel_shape; inputs X, W, offset, optional B, mask
// and other producers' spellings: com.microsoft.GridSample, mmcv.grid_sampler,
// mmcv.MMCVModulatedDeformConv2d (input, offset, mask, weight, bias), mmcv.MMCVDeformConv2d.
// Registration is explicit (no static registrars, which a static libcvattn would let the linker
// drop). Errors in a model (unknown mode, asymmetric pads, inconsistent shapes) surface as
// cv::Exception from readNetFromONNX or Net::forward, naming the layer.
#include <string>
#include <vector>

#include "cvattn/export.hpp"

namespace cvattn::dnn {

// Registers the layer types of layerTypes() with cv::dnn::LayerFactory. Idempotent and thread-safe;
// call it once before readNetFromONNX.
CVATTN_EXPORT void registerLayers();

// Removes the registrations made by registerLayers() (a later registerLayers() restores them).
CVATTN_EXPORT void unregisterLayers();

// The layer types registerLayers() provides: "GridSample", "AffineGrid", "DeformConv", then the
// aliases (docs/dnn.md lists them with their input orders and attributes).
[[nodiscard]] CVATTN_EXPORT std::vector<std::string> layerTypes();

}  // namespace cvattn::dnn
