#pragma once
// Spatial transformer network of the official PyTorch tutorial (MODULES.md §9): a localisation
// CNN regresses an affine theta from the image, which is then resampled with affine_grid +
// grid_sample (bilinear, zeros padding). StnClassifier is the tutorial's whole `Net` (the
// transformer followed by a small MNIST classifier) giving log-softmax logits.
//
// State_dict keys are the tutorial's own: `localization.{0,3}.*`, `fc_loc.{0,2}.*` and, for the
// classifier, `conv1.*`, `conv2.*`, `fc1.*`, `fc2.*`, so a torch checkpoint loads unchanged.
#include <memory>
#include <string>

#include "cvattn/core/attention_maps.hpp"
#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/export.hpp"
#include "cvattn/modules/conv2d.hpp"
#include "cvattn/modules/linear.hpp"
#include "cvattn/modules/sequential.hpp"

namespace cvattn {

struct SpatialTransformerOptions {
  // The tutorial never passes align_corners; PyTorch >= 1.3 then uses false. Checkpoints
  // trained with PyTorch < 1.3 had true semantics.
  CVATTN_ARG(bool, align_corners) = false;
};

class CVATTN_EXPORT SpatialTransformer final : public UnaryModule {
 public:
  // Zero localisation weights and the tutorial's identity init of fc_loc.2 (weight 0, bias
  // [1,0,0,0,1,0]), so an unloaded transformer reproduces its input.
  explicit SpatialTransformer(const SpatialTransformerOptions& options = {});

  // A transformer loaded from `dict`: either the stn keys alone or a whole tutorial Net
  // state_dict (only the localization.* / fc_loc.* keys are read). ValueError on a missing key
  // or a shape mismatch.
  [[nodiscard]] static std::shared_ptr<SpatialTransformer> from_state_dict(
      const StateDict& dict, const SpatialTransformerOptions& options = {});
  // The localization.* and fc_loc.* entries of dict.
  [[nodiscard]] static StateDict select_keys(const StateDict& dict);

  // x [N, 1, H, W] with H, W in 26..29 -> the warped image [N, 1, H, W].
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // The warped image plus maps "theta" [N, 2, 3] and "grid" [N, H, W, 2].
  [[nodiscard]] Attended forward_with_maps(const Tensor& x) const;
  // Only the regressed theta [N, 2, 3].
  [[nodiscard]] Tensor theta(const Tensor& x) const;

  [[nodiscard]] const SpatialTransformerOptions& options() const noexcept { return options_; }
  [[nodiscard]] const std::shared_ptr<Sequential>& localization() const noexcept {
    return localization_;
  }
  [[nodiscard]] const std::shared_ptr<Sequential>& fc_loc() const noexcept { return fc_loc_; }
  [[nodiscard]] std::string describe() const override;

 private:
  SpatialTransformerOptions options_;
  std::shared_ptr<Sequential> localization_;
  std::shared_ptr<Sequential> fc_loc_;
};

class CVATTN_EXPORT StnClassifier final : public UnaryModule {
 public:
  // The transformer (identity init) and a zero classifier.
  explicit StnClassifier(const SpatialTransformerOptions& options = {});

  // Loads a whole tutorial Net state_dict (strict: every key present, no unknown key).
  [[nodiscard]] static std::shared_ptr<StnClassifier> from_state_dict(
      const StateDict& dict, const SpatialTransformerOptions& options = {});
  // True when dict holds any classifier key (conv1.*, conv2.*, fc1.*, fc2.*).
  [[nodiscard]] static bool has_classifier_keys(const StateDict& dict);

  // x [N, 1, H, W] with H, W in 28..29 (the classifier's flatten needs 20*4*4 = 320 features)
  // -> log-softmax logits [N, 10].
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // Output = logits, maps "theta", "grid", "output" (the warped image) and "logits".
  [[nodiscard]] Attended forward_with_maps(const Tensor& x) const;

  [[nodiscard]] const std::shared_ptr<SpatialTransformer>& stn() const noexcept { return stn_; }
  [[nodiscard]] std::string describe() const override { return "StnClassifier"; }

 private:
  Tensor classify(const Tensor& warped) const;
  std::shared_ptr<SpatialTransformer> stn_;
  std::shared_ptr<Conv2d> conv1_, conv2_;
  std::shared_ptr<Linear> fc1_, fc2_;
};

}  // namespace cvattn
