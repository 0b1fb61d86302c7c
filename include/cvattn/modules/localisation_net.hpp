#pragma once
// LocalisationNet: the part of a spatial transformer (Jaderberg et al., 2015) that regresses the
// affine theta [N, 2, 3] from the image. Two Sequential stages, as in the PyTorch tutorial:
//   theta = regressor(flatten(features(x))).reshape(N, 2, 3)
// `features` works on the image (conv / pool / relu / batch norm ...), `regressor` on the
// flattened features (linear / relu ...) and must end in a Linear with 6 outputs. A single
// nn.Sequential that already contains a Flatten works too: pass it as `features` and no
// regressor. State_dict keys are "<features_name>.<i>.*" and "<regressor_name>.<i>.*", by default
// the tutorial's `localization.*` and `fc_loc.*`.
#include <memory>
#include <string>

#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/export.hpp"
#include "cvattn/modules/linear.hpp"
#include "cvattn/modules/sequential.hpp"

namespace cvattn {

struct CVATTN_EXPORT LocalisationNetOptions {
  // The two stages' names in the state_dict (an unused stage may be left empty).
  CVATTN_ARG(std::string, features_name) = "localization";
  CVATTN_ARG(std::string, regressor_name) = "fc_loc";
};

class CVATTN_EXPORT LocalisationNet final : public UnaryModule {
 public:
  // Takes the layers as built by the caller and applies the identity initialisation: the last
  // Linear gets weight 0 and bias [1, 0, 0, 0, 1, 0], so theta is the identity whatever the
  // other weights are (the tutorial's initialisation). ValueError when both stages are empty,
  // when the last layer is not a Linear with 6 outputs, or when a non-empty stage has no name.
  // A null stage counts as empty.
  LocalisationNet(std::shared_ptr<Sequential> features, std::shared_ptr<Sequential> regressor,
                  const LocalisationNetOptions& options = {});

  // The tutorial's layers (docs/modules.md §9): localization = Conv2d(1,8,7), MaxPool2d(2), ReLU,
  // Conv2d(8,10,5), MaxPool2d(2), ReLU; fc_loc = Linear(90,32), ReLU, Linear(32,6); identity
  // initialised (the other weights are zero).
  [[nodiscard]] static std::shared_ptr<LocalisationNet> tutorial();
  // tutorial() loaded from `dict`, which may be a whole tutorial Net state_dict (only the
  // localization.* / fc_loc.* keys are read). ValueError on a missing key or a shape mismatch.
  [[nodiscard]] static std::shared_ptr<LocalisationNet> tutorial_from_state_dict(
      const StateDict& dict);

  // Loads this net's keys from `dict`, ignoring keys outside its two stages (so a whole model's
  // state_dict can be passed). Every key of the net must be present with its shape, else
  // ValueError naming them.
  void load_from(const StateDict& dict);
  // The entries of dict under this net's two stage names.
  [[nodiscard]] StateDict select_keys(const StateDict& dict) const;

  // x [N, C, H, W] -> theta [N, 2, 3]. ShapeError when the flattened features do not fit the
  // regressor's first Linear (naming the input shape and both sizes).
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // "LocalisationNet(features='localization', regressor='fc_loc')"
  [[nodiscard]] std::string describe() const override;

  [[nodiscard]] const LocalisationNetOptions& options() const noexcept { return options_; }
  // Never null: an empty Sequential for an absent stage.
  [[nodiscard]] const std::shared_ptr<Sequential>& features() const noexcept { return features_; }
  [[nodiscard]] const std::shared_ptr<Sequential>& regressor() const noexcept { return regressor_; }
  // The final Linear(*, 6).
  [[nodiscard]] const std::shared_ptr<Linear>& head() const noexcept { return head_; }

 private:
  LocalisationNetOptions options_;
  std::shared_ptr<Sequential> features_;
  std::shared_ptr<Sequential> regressor_;
  std::shared_ptr<Linear> head_;
};

}  // namespace cvattn
