#pragma once
// Spatial transformer network (Jaderberg et al., 2015; docs/modules.md §9): a LocalisationNet
// regresses an affine theta from the image, an AffineGridGenerator maps the output lattice through
// it and a BilinearSampler resamples the input there. By default the localisation net is the
// official PyTorch tutorial's; any other LocalisationNet can be given. StnClassifier is the
// tutorial's whole `Net` (the transformer followed by a small MNIST classifier) giving log-softmax
// logits.
//
// State_dict keys are the localisation net's (for the tutorial `localization.{0,3}.*`,
// `fc_loc.{0,2}.*`) and, for the classifier, `conv1.*`, `conv2.*`, `fc1.*`, `fc2.*`, so a torch
// checkpoint loads unchanged. The grid generator and the sampler have no keys.
#include <memory>
#include <string>

#include "cvattn/core/attention_maps.hpp"
#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/export.hpp"
#include "cvattn/functional/sampling.hpp"
#include "cvattn/modules/affine_grid_generator.hpp"
#include "cvattn/modules/bilinear_sampler.hpp"
#include "cvattn/modules/conv2d.hpp"
#include "cvattn/modules/linear.hpp"
#include "cvattn/modules/localisation_net.hpp"
#include "cvattn/modules/sequential.hpp"

namespace cvattn {

struct SpatialTransformerOptions {
  // The tutorial never passes align_corners; PyTorch >= 1.3 then uses false. Checkpoints
  // trained with PyTorch < 1.3 had true semantics. Used by both the grid and the sampler.
  CVATTN_ARG(bool, align_corners) = false;
  // The sampler's mode and padding (the tutorial's grid_sample defaults).
  CVATTN_ARG(functional::Interpolation, mode) = functional::Interpolation::bilinear;
  CVATTN_ARG(functional::PaddingMode, padding_mode) = functional::PaddingMode::zeros;
  // The warped output's (H, W); a 0 part keeps the input's size, as the tutorial does.
  CVATTN_ARG(Pair2, output_size) = Pair2(0);
};

class CVATTN_EXPORT SpatialTransformer final : public UnaryModule {
 public:
  // The tutorial's localisation net with its identity init (fc_loc.2 weight 0, bias
  // [1,0,0,0,1,0]; the other weights zero), so an unloaded transformer reproduces its input.
  explicit SpatialTransformer(const SpatialTransformerOptions& options = {});
  // Any localisation net (its keys become this module's keys). ValueError if null.
  explicit SpatialTransformer(std::shared_ptr<LocalisationNet> localisation,
                              const SpatialTransformerOptions& options = {});

  // The tutorial transformer loaded from `dict`: either the stn keys alone or a whole tutorial
  // Net state_dict (only the localization.* / fc_loc.* keys are read). ValueError on a missing
  // key or a shape mismatch.
  [[nodiscard]] static std::shared_ptr<SpatialTransformer> from_state_dict(
      const StateDict& dict, const SpatialTransformerOptions& options = {});
  // The same with the keys under `prefix` ("stn." in a bigger model).
  [[nodiscard]] static std::shared_ptr<SpatialTransformer> from_state_dict(
      const StateDict& dict, const std::string& prefix,
      const SpatialTransformerOptions& options = {});
  // The localization.* and fc_loc.* entries of dict.
  [[nodiscard]] static StateDict select_keys(const StateDict& dict);

  // x [N, C, H, W] -> the warped image [N, C, Ho, Wo] (Ho, Wo = H, W unless output_size is
  // set). The tutorial net needs C = 1 and H, W in 26..29.
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // The whole forward: the warped image as output, plus maps "theta" [N, 2, 3] and "grid"
  // [N, Ho, Wo, 2].
  [[nodiscard]] Attended forward_with_maps(const Tensor& x) const override;
  // Only the regressed theta [N, 2, 3].
  [[nodiscard]] Tensor theta(const Tensor& x) const;

  [[nodiscard]] const SpatialTransformerOptions& options() const noexcept { return options_; }
  [[nodiscard]] const std::shared_ptr<LocalisationNet>& localisation() const noexcept {
    return localisation_;
  }
  [[nodiscard]] const std::shared_ptr<AffineGridGenerator>& grid_generator() const noexcept {
    return grid_generator_;
  }
  [[nodiscard]] const std::shared_ptr<BilinearSampler>& sampler() const noexcept {
    return sampler_;
  }
  // The localisation net's two stages (the tutorial's `localization` and `fc_loc`).
  [[nodiscard]] const std::shared_ptr<Sequential>& localization() const noexcept {
    return localisation_->features();
  }
  [[nodiscard]] const std::shared_ptr<Sequential>& fc_loc() const noexcept {
    return localisation_->regressor();
  }
  [[nodiscard]] std::string describe() const override;

 private:
  void check_input(const Tensor& x, const char* who) const;

  SpatialTransformerOptions options_;
  bool tutorial_;  // the tutorial's layers: input checked against their fixed sizes
  std::shared_ptr<LocalisationNet> localisation_;
  std::shared_ptr<AffineGridGenerator> grid_generator_;
  std::shared_ptr<BilinearSampler> sampler_;
};

class CVATTN_EXPORT StnClassifier final : public UnaryModule {
 public:
  // The transformer (identity init) and a zero classifier.
  explicit StnClassifier(const SpatialTransformerOptions& options = {});

  // Loads a whole tutorial Net state_dict (strict: every key present, no unknown key).
  [[nodiscard]] static std::shared_ptr<StnClassifier> from_state_dict(
      const StateDict& dict, const SpatialTransformerOptions& options = {});
  // The same with the keys under `prefix`.
  [[nodiscard]] static std::shared_ptr<StnClassifier> from_state_dict(
      const StateDict& dict, const std::string& prefix,
      const SpatialTransformerOptions& options = {});
  // True when dict holds any classifier key (conv1.*, conv2.*, fc1.*, fc2.*).
  [[nodiscard]] static bool has_classifier_keys(const StateDict& dict);

  // x [N, 1, H, W] with H, W in 28..29 (the classifier's flatten needs 20*4*4 = 320 features)
  // -> log-softmax logits [N, 10].
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // Output = logits, maps "theta", "grid", "output" (the warped image) and "logits".
  [[nodiscard]] Attended forward_with_maps(const Tensor& x) const override;

  [[nodiscard]] const std::shared_ptr<SpatialTransformer>& stn() const noexcept { return stn_; }
  [[nodiscard]] std::string describe() const override { return "StnClassifier"; }

 private:
  Tensor classify(const Tensor& warped) const;
  std::shared_ptr<SpatialTransformer> stn_;
  std::shared_ptr<Conv2d> conv1_, conv2_;
  std::shared_ptr<Linear> fc1_, fc2_;
};

}  // namespace cvattn
