#pragma once
// FashionCnn: the small Fashion-MNIST classifier of assets/weights/fashion_cnn.md, composed in the
// samples from cvattn's public modules (the library has no such network; this is how a user
// rebuilds one of their own PyTorch models). tools/train/fashion_models.py trains it:
//
//   stem   Conv2d(1, 32, 3, p1, no bias) - BatchNorm2d - ReLU             28x28
//   se     SqueezeExcitation(32), timm SEModule                           "se" [N, 32]
//          MaxPool2d(2)                                                   14x14
//   sk     SelectiveKernel(32 -> 64), timm defaults                       "sk" [N, 2, 64]
//          MaxPool2d(2)                                                   7x7
//   conv3  Conv2d(64, 96, 3, p1, no bias) - BatchNorm2d - ReLU
//   cbam   Cbam(96), timm CbamModule    "channel_attention" [N, 96], "spatial_attention" [N,1,7,7]
//   global average pooling, head Linear(96, 10)                           output: logits [N, 10]
//
// Maps also hold "features" (CBAM's output [N, 96, 7, 7]) and "cam" [N, 10, 7, 7], the class
// activation maps of Zhou et al. 2016: cam_k = sum_c head.weight[k, c] features[c] + bias_k, whose
// spatial mean is logit k (the head is linear after the global average pooling).
#include <filesystem>
#include <memory>
#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "cvattn/cvattn.hpp"

namespace demo {

class FashionCnn final : public cvattn::UnaryModule {
 public:
  FashionCnn();
  // Strict load of fashion_cnn.safetensors.
  [[nodiscard]] static std::shared_ptr<FashionCnn> load(const std::filesystem::path& path);
  // The model card's input: an 8-bit gray (or BGR, converted) image resized to 28x28 (area),
  // / 255 -> [1, 1, 28, 28].
  [[nodiscard]] static cvattn::Tensor input_from_image(const cv::Mat& image);

  [[nodiscard]] cvattn::Tensor forward(const cvattn::Tensor& x) const override;
  [[nodiscard]] cvattn::Attended forward_with_maps(const cvattn::Tensor& x) const;
  [[nodiscard]] std::string describe() const override { return "FashionCnn"; }

 private:
  [[nodiscard]] cvattn::Attended run(const cvattn::Tensor& x, bool keep_maps) const;

  std::shared_ptr<cvattn::Sequential> stem_, conv3_;
  std::shared_ptr<cvattn::SqueezeExcitation> se_;
  std::shared_ptr<cvattn::SelectiveKernel> sk_;
  std::shared_ptr<cvattn::Cbam> cbam_;
  std::shared_ptr<cvattn::Linear> head_;
};

// The ten Fashion-MNIST class names, "t-shirt/top" .. "ankle boot".
[[nodiscard]] const std::vector<std::string>& fashion_classes();

}  // namespace demo
