#pragma once
// AttentionShapesNet: the small demo CNN shipped as assets/weights/attention_shapes.safetensors
// (model card assets/weights/attention_shapes.md), composed from cvattn's modules:
//
//   stem    Conv(3,16,3,s2,p1)-BN-ReLU-Conv(16,24,3,p1)-BN-ReLU-MaxPool(2)    H/4 x W/4
//   sk      SelectiveKernel(24), timm defaults                                 "sk_attention"
//   dcn     ModulatedDeformConv2dPack(24,32,3,p1)                              "offset", "mask"
//   dcn_bn  BatchNorm2d(32), ReLU
//   cbam    CbamModule(32), timm defaults         "channel_attention", "spatial_attention"
//   global average pooling, head Linear(32, 4)                                 "logits"
//
// It was trained on 64x64 RGB images (find the striped triangle, class = stripe direction), but
// everything before the global pooling is convolutional, so any input of at least 4x4 runs and
// gives maps of size ceil(H/2)/2 x ceil(W/2)/2 (16x16 for 64x64).
#include <memory>
#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "cvattn/core/attention_maps.hpp"
#include "cvattn/core/module.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"
#include "cvattn/modules/batch_norm2d.hpp"
#include "cvattn/modules/cbam.hpp"
#include "cvattn/modules/deform_conv.hpp"
#include "cvattn/modules/linear.hpp"
#include "cvattn/modules/selective_kernel.hpp"
#include "cvattn/modules/sequential.hpp"

namespace cvattn {

namespace attention_shapes {
inline constexpr int kInputSize = 64;  // training resolution
inline constexpr int kNumClasses = 4;
inline constexpr int kFeatureStride = 4;  // input pixels per map cell
// Extra map names (the others are maps::kChannelAttention, kSpatialAttention, kOffset, kMask,
// kLogits).
inline constexpr const char* kSkAttention = "sk_attention";  // [N, 2, 24], softmax over paths
inline constexpr const char* kFeatures = "features";         // CBAM's output [N, 32, h, w]
// Per pixel, the share of SK's output that comes from its dilated path:
// sum_c a[1,c] f1[c] / sum_c y[c] in [0, 1] (0.5 where the output is all zero) [N, 1, h, w].
// SK selects per channel; this shows where in the image that choice matters.
inline constexpr const char* kSkPathShare = "sk_path_share";
// "stripes_0", "stripes_45", "stripes_90", "stripes_135": the target's stripe direction.
[[nodiscard]] CVATTN_EXPORT const std::vector<std::string>& class_names();
}  // namespace attention_shapes

class CVATTN_EXPORT AttentionShapesNet final : public UnaryModule {
 public:
  // Zero weights (BatchNorms as fresh PyTorch ones); load with load_state_dict.
  AttentionShapesNet();
  // Strict load of the model card's state_dict (every key, no extra one).
  [[nodiscard]] static std::shared_ptr<AttentionShapesNet> from_state_dict(
      const StateDict& dict, const std::string& prefix = "");
  // from_state_dict(io::load_safetensors(path)).
  [[nodiscard]] static std::shared_ptr<AttentionShapesNet> load(const std::string& path);

  // The model card's input convention: RGB / 255, no mean or std, resized to `size` (empty: keep
  // the image's size, for running fully convolutionally). 8-bit BGR (or gray / BGRA) image in.
  [[nodiscard]] static Tensor input_from_image(
      const cv::Mat& bgr,
      cv::Size size = cv::Size(attention_shapes::kInputSize, attention_shapes::kInputSize));

  // x [N, 3, H, W], H, W >= 4 -> logits [N, 4]. ShapeError otherwise.
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // Output = logits; maps "sk_attention" [N, 2, 24], "sk_path_share" [N, 1, h, w], "offset" [N, 18,
  // h, w] ((dy, dx) per tap, in the 16x16-for-64 feature grid's pixels), "mask" [N, 9, h, w],
  // "channel_attention" [N, 32], "spatial_attention" [N, 1, h, w], "features" [N, 32, h, w],
  // "logits" [N, 4].
  [[nodiscard]] Attended forward_with_maps(const Tensor& x) const override;

  [[nodiscard]] std::string describe() const override { return "AttentionShapesNet"; }
  [[nodiscard]] const DeformConv2d& dcn() const noexcept { return *dcn_; }

 protected:
  void on_weights_loaded() override;

 private:
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const;
  [[nodiscard]] Tensor sk_path_share(const Tensor& stem, const Attended& sk) const;

  std::shared_ptr<Sequential> stem_;
  std::shared_ptr<SelectiveKernel> sk_;
  std::shared_ptr<DeformConv2d> dcn_;
  std::shared_ptr<BatchNorm2d> dcn_bn_;
  std::shared_ptr<Cbam> cbam_;
  std::shared_ptr<Linear> head_;
  Tensor dilated_weight_, dilated_bias_;  // SK's path 1 with its BatchNorm folded in
};

}  // namespace cvattn
