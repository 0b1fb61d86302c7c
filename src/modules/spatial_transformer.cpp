#include "cvattn/modules/spatial_transformer.hpp"

#include <string>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/activation.hpp"
#include "cvattn/functional/linear.hpp"
#include "cvattn/functional/pooling.hpp"
#include "cvattn/functional/sampling.hpp"
#include "cvattn/modules/activation.hpp"
#include "cvattn/modules/pooling.hpp"

namespace cvattn {

namespace F = cvattn::functional;

namespace {

std::string shape_text(const Shape& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// x must be [N, 1, H, W] with H, W in [lo, hi]; `why` says where the limits come from.
void check_input(const Tensor& x, const char* who, std::int64_t lo, std::int64_t hi,
                 const char* why) {
  check_defined(x, "input", who);
  check_shape(x, {kAny, 1, kAny, kAny}, "input", who);
  const std::int64_t h = x.dim(2), w = x.dim(3);
  CVATTN_CHECK(x.dim(0) >= 1, ShapeError, who, ": tensor 'input' ", shape_text(x.shape()),
               " is an empty batch");
  CVATTN_CHECK(h >= lo && h <= hi && w >= lo && w <= hi, ShapeError, who, ": tensor 'input' ",
               shape_text(x.shape()), " must have H and W in ", lo, "..", hi, " (", why, ")");
}

bool starts_with(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

const F::MaxPool2dOptions kPool2 = F::MaxPool2dOptions(Pair2(2));

}  // namespace

SpatialTransformer::SpatialTransformer(const SpatialTransformerOptions& options)
    : options_(options) {
  localization_ = register_module("localization", std::make_shared<Sequential>());
  localization_->push_back(std::make_shared<Conv2d>(Conv2dOptions(1, 8, 7)));
  localization_->push_back(std::make_shared<MaxPool2d>(kPool2));
  localization_->push_back(std::make_shared<ReLU>());
  localization_->push_back(std::make_shared<Conv2d>(Conv2dOptions(8, 10, 5)));
  localization_->push_back(std::make_shared<MaxPool2d>(kPool2));
  localization_->push_back(std::make_shared<ReLU>());
  fc_loc_ = register_module("fc_loc", std::make_shared<Sequential>());
  fc_loc_->push_back(std::make_shared<Linear>(LinearOptions(90, 32)));
  fc_loc_->push_back(std::make_shared<ReLU>());
  auto regressor = fc_loc_->push_back(std::make_shared<Linear>(LinearOptions(32, 6)));
  // The tutorial's identity initialisation of the regressor (its weight is already zero).
  Tensor bias = regressor->bias();
  const float identity[6] = {1, 0, 0, 0, 1, 0};
  for (int i = 0; i < 6; ++i) bias.data()[i] = identity[i];
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
    const StateDict& dict, const SpatialTransformerOptions& options) {
  auto module = std::make_shared<SpatialTransformer>(options);
  module->load_state_dict(select_keys(dict));
  return module;
}

Tensor SpatialTransformer::theta(const Tensor& x) const {
  check_input(x, "SpatialTransformer", 26, 29,
              "the localisation net must pool each axis down to 3 for its 90 features");
  const Tensor features = localization_->forward(x);  // [N, 10, 3, 3]
  const std::int64_t n = x.dim(0);
  return fc_loc_->forward(features.reshape({n, 90})).reshape({n, 2, 3});
}

Attended SpatialTransformer::forward_with_maps(const Tensor& x) const {
  Tensor t = theta(x);
  Tensor grid = F::affine_grid(t, x.shape(), options_.align_corners());
  Attended r;
  r.output = F::grid_sample(x, grid, F::GridSampleOptions().align_corners(options_.align_corners()));
  r.maps.add(maps::kTheta, std::move(t));
  r.maps.add(maps::kGrid, std::move(grid));
  return r;
}

Tensor SpatialTransformer::forward(const Tensor& x) const { return forward_with_maps(x).output; }

std::string SpatialTransformer::describe() const {
  return std::string("SpatialTransformer(align_corners=") +
         (options_.align_corners() ? "True" : "False") + ")";
}

StnClassifier::StnClassifier(const SpatialTransformerOptions& options)
    : stn_(std::make_shared<SpatialTransformer>(options)) {
  // The transformer's children sit at the top level, as in the tutorial Net.
  register_module("localization", stn_->localization());
  register_module("fc_loc", stn_->fc_loc());
  conv1_ = register_module("conv1", std::make_shared<Conv2d>(Conv2dOptions(1, 10, 5)));
  conv2_ = register_module("conv2", std::make_shared<Conv2d>(Conv2dOptions(10, 20, 5)));
  fc1_ = register_module("fc1", std::make_shared<Linear>(LinearOptions(320, 50)));
  fc2_ = register_module("fc2", std::make_shared<Linear>(LinearOptions(50, 10)));
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
  check_input(x, "StnClassifier", 28, 29,
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
