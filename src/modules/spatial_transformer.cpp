#include "cvattn/modules/spatial_transformer.hpp"

#include <string>
#include <utility>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/activation.hpp"
#include "cvattn/functional/linear.hpp"
#include "cvattn/functional/pooling.hpp"
#include "modules/detail/key_scope.hpp"

namespace cvattn {

namespace F = cvattn::functional;

namespace {

// x must be [N, 1, H, W] with H, W in [lo, hi]; `why` says where the limits come from.
void check_tutorial_input(const Tensor& x, const char* who, std::int64_t lo, std::int64_t hi,
                          const char* why) {
  check_defined(x, "input", who);
  check_shape(x, {kAny, 1, kAny, kAny}, "input", who);
  const std::int64_t h = x.dim(2), w = x.dim(3);
  CVATTN_CHECK(x.dim(0) >= 1, ShapeError, who, ": tensor 'input' ", to_string(x.shape()),
               " is an empty batch");
  CVATTN_CHECK(h >= lo && h <= hi && w >= lo && w <= hi, ShapeError, who, ": tensor 'input' ",
               to_string(x.shape()), " must have H and W in ", lo, "..", hi, " (", why, ")");
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

const F::MaxPool2dOptions kPool2 = F::MaxPool2dOptions(Pair2(2));

}  // namespace

SpatialTransformer::SpatialTransformer(const SpatialTransformerOptions& options)
    : SpatialTransformer(LocalisationNet::tutorial(), options) {
  tutorial_ = true;
}

SpatialTransformer::SpatialTransformer(std::shared_ptr<LocalisationNet> localisation,
                                       const SpatialTransformerOptions& options)
    : options_(options), tutorial_(false), localisation_(std::move(localisation)) {
  CVATTN_CHECK(localisation_ != nullptr, ValueError,
               "SpatialTransformer: localisation net is null");
  // The localisation net's stages sit at the top level, so the keys stay the tutorial's
  // (`localization.0.weight`, not `localisation.localization.0.weight`).
  for (const auto& [name, child] : localisation_->children()) register_module(name, child);
  grid_generator_ = register_module(
      "grid_generator",
      std::make_shared<AffineGridGenerator>(AffineGridGeneratorOptions()
                                                .output_size(options_.output_size())
                                                .align_corners(options_.align_corners())));
  sampler_ = register_module(
      "sampler", std::make_shared<BilinearSampler>(BilinearSamplerOptions()
                                                       .mode(options_.mode())
                                                       .padding_mode(options_.padding_mode())
                                                       .align_corners(options_.align_corners())));
}

StateDict SpatialTransformer::select_keys(const StateDict& dict) {
  StateDict out;
  for (const auto& e : dict.entries()) {
    if (starts_with(e.key, "localization.") || starts_with(e.key, "fc_loc.")) {
      out.set(e.key, e.value, e.integer);
    }
  }
  return out;
}

std::shared_ptr<SpatialTransformer> SpatialTransformer::from_state_dict(
    const StateDict& dict, const std::string& prefix, const SpatialTransformerOptions& options) {
  if (prefix.empty()) return from_state_dict(dict, options);
  return detail::with_key_scope(dict, prefix,
                                [&](const StateDict& d) { return from_state_dict(d, options); });
}

std::shared_ptr<SpatialTransformer> SpatialTransformer::from_state_dict(
    const StateDict& dict, const SpatialTransformerOptions& options) {
  auto module = std::make_shared<SpatialTransformer>(options);
  module->load_state_dict(select_keys(dict));
  return module;
}

void SpatialTransformer::check_input(const Tensor& x, const char* who) const {
  if (tutorial_) {
    check_tutorial_input(x, who, 26, 29,
                         "the localisation net must pool each axis down to 3 for its 90 features");
  }
  // Other nets check their own layers' shapes (LocalisationNet::forward).
}

Tensor SpatialTransformer::theta(const Tensor& x) const {
  check_input(x, "SpatialTransformer");
  return localisation_->forward(x);  // [N, 2, 3]
}

Attended SpatialTransformer::forward_with_maps(const Tensor& x) const {
  Tensor t = theta(x);                                   // [N, 2, 3]
  Tensor grid = grid_generator_->forward(t, x.shape());  // [N, Ho, Wo, 2]
  Attended r;
  r.output = sampler_->forward(x, grid);  // [N, C, Ho, Wo]
  r.maps.add(maps::kTheta, std::move(t));
  r.maps.add(maps::kGrid, std::move(grid));
  return r;
}

Tensor SpatialTransformer::forward(const Tensor& x) const { return forward_with_maps(x).output; }

std::string SpatialTransformer::describe() const {
  // Only the options that differ from the tutorial's are listed after align_corners.
  std::string out = std::string("SpatialTransformer(align_corners=") +
                    (options_.align_corners() ? "True" : "False");
  if (options_.mode() != F::Interpolation::bilinear) {
    out += std::string(", mode='") + F::interpolation_name(options_.mode()) + "'";
  }
  if (options_.padding_mode() != F::PaddingMode::zeros) {
    out += std::string(", padding_mode='") + F::padding_mode_name(options_.padding_mode()) + "'";
  }
  const Pair2 s = options_.output_size();
  if (s.h > 0 || s.w > 0) {
    out += ", output_size=(" + std::to_string(s.h) + ", " + std::to_string(s.w) + ")";
  }
  return out + ")";
}

StnClassifier::StnClassifier(const SpatialTransformerOptions& options)
    : stn_(std::make_shared<SpatialTransformer>(options)) {
  CVATTN_CHECK(options.output_size() == Pair2(0), ValueError,
               "StnClassifier: output_size must be left input-sized (the classifier needs the "
               "28 x 28 warp)");
  // The transformer's children sit at the top level, as in the tutorial Net.
  for (const auto& [name, child] : stn_->children()) register_module(name, child);
  conv1_ = register_module("conv1", std::make_shared<Conv2d>(Conv2dOptions(1, 10, 5)));
  conv2_ = register_module("conv2", std::make_shared<Conv2d>(Conv2dOptions(10, 20, 5)));
  fc1_ = register_module("fc1", std::make_shared<Linear>(LinearOptions(320, 50)));
  fc2_ = register_module("fc2", std::make_shared<Linear>(LinearOptions(50, 10)));
}

std::shared_ptr<StnClassifier> StnClassifier::from_state_dict(
    const StateDict& dict, const std::string& prefix, const SpatialTransformerOptions& options) {
  if (prefix.empty()) return from_state_dict(dict, options);
  return detail::with_key_scope(dict, prefix,
                                [&](const StateDict& d) { return from_state_dict(d, options); });
}

std::shared_ptr<StnClassifier> StnClassifier::from_state_dict(
    const StateDict& dict, const SpatialTransformerOptions& options) {
  auto module = std::make_shared<StnClassifier>(options);
  module->load_state_dict(dict);
  return module;
}

bool StnClassifier::has_classifier_keys(const StateDict& dict) {
  return dict.has_prefix("conv1") || dict.has_prefix("conv2") || dict.has_prefix("fc1") ||
         dict.has_prefix("fc2");
}

Tensor StnClassifier::classify(const Tensor& warped) const {
  const std::int64_t n = warped.dim(0);
  Tensor u = F::relu(F::max_pool2d(conv1_->forward(warped), kPool2));  // [N, 10, 12, 12]
  u = F::relu(F::max_pool2d(conv2_->forward(u), kPool2));              // [N, 20, 4, 4]
  u = F::relu(fc1_->forward(u.reshape({n, 320})));
  return F::log_softmax(fc2_->forward(u), 1);
}

Attended StnClassifier::forward_with_maps(const Tensor& x) const {
  check_tutorial_input(x, "StnClassifier", 28, 29,
                       "the classifier's flatten needs 20 x 4 x 4 = 320 features");
  Attended s = stn_->forward_with_maps(x);
  Attended r;
  r.output = classify(s.output);
  r.maps.add(maps::kTheta, s.maps.at(maps::kTheta));
  r.maps.add(maps::kGrid, s.maps.at(maps::kGrid));
  r.maps.add("output", s.output);
  r.maps.add(maps::kLogits, r.output);
  return r;
}

Tensor StnClassifier::forward(const Tensor& x) const { return forward_with_maps(x).output; }

}  // namespace cvattn
