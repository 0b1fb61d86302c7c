#pragma once
// Image <-> tensor conversion with cv::dnn::blobFromImage's semantics, plus a per-channel std:
//   blob = ((resize(image) - mean) * scale) / std,   channels optionally swapped BGR -> RGB.
// `mean` and `std` are given in the blob's channel order, as blobFromImage documents for its mean:
// (R, G, B) for a BGR image with swap_rb.
#include <opencv2/core.hpp>
#include <vector>

#include "cvattn/core/options.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn {

struct ImageOptions {
  CVATTN_ARG(double, scale) = 1.0;
  CVATTN_ARG(cv::Scalar, mean) = cv::Scalar();
  CVATTN_ARG(cv::Scalar, std) = cv::Scalar(1, 1, 1, 1);
  CVATTN_ARG(bool, swap_rb) = false;
  CVATTN_ARG(cv::Size, size) = cv::Size();  // empty: keep the image size
  CVATTN_ARG(bool, crop) = false;           // resize keeping aspect ratio, then centre-crop
};

// 8U or 32F image with 1, 3 or 4 channels -> [1, C, H, W].
[[nodiscard]] CVATTN_EXPORT Tensor from_image(const cv::Mat& image,
                                              const ImageOptions& options = {});
// Images of one size and type -> [N, C, H, W].
[[nodiscard]] CVATTN_EXPORT Tensor from_images(const std::vector<cv::Mat>& images,
                                               const ImageOptions& options = {});
// Sample n of [N, C, H, W] (C = 1, 3 or 4) back to an 8U image: the inverse of from_image with
// the same options (without the resize), saturated to [0, 255] (+Inf gives 255, -Inf and NaN 0).
[[nodiscard]] CVATTN_EXPORT cv::Mat to_image(const Tensor& blob, std::int64_t n = 0,
                                             const ImageOptions& options = {});

}  // namespace cvattn
