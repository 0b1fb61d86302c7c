#include "cvattn/modules/localisation_net.hpp"

#include <utility>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/pooling.hpp"
#include "cvattn/modules/activation.hpp"
#include "cvattn/modules/conv2d.hpp"
#include "cvattn/modules/pooling.hpp"

namespace cvattn {

namespace {

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.size() > prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

LocalisationNet::LocalisationNet(std::shared_ptr<Sequential> features,
                                 std::shared_ptr<Sequential> regressor,
                                 const LocalisationNetOptions& options)
    : options_(options),
      features_(features ? std::move(features) : std::make_shared<Sequential>()),
      regressor_(regressor ? std::move(regressor) : std::make_shared<Sequential>()) {
  CVATTN_CHECK(!features_->empty() || !regressor_->empty(), ValueError,
               "LocalisationNet: both stages are empty; the last layer must be a Linear with 6 "
               "outputs");
  const std::shared_ptr<Sequential>& last_stage = regressor_->empty() ? features_ : regressor_;
  const std::string& last_name =
      regressor_->empty() ? options_.features_name() : options_.regressor_name();
  const std::size_t last = last_stage->size() - 1;
  head_ = std::dynamic_pointer_cast<Linear>(last_stage->at(last));
  CVATTN_CHECK(head_ && head_->options().out_features() == 6 && head_->options().bias(), ValueError,
               "LocalisationNet: layer '", last_name, ".", last,
               "' expected a Linear with 6 outputs and a bias (theta), got ",
               last_stage->at(last)->describe());
  // Children carry the stage names so the keys are the reference model's.
  if (!features_->empty()) {
    CVATTN_CHECK(!options_.features_name().empty(), ValueError,
                 "LocalisationNet: the features stage needs a name for its state_dict keys");
    register_module(options_.features_name(), features_);
  }
  if (!regressor_->empty()) {
    CVATTN_CHECK(
        !options_.regressor_name().empty() && options_.regressor_name() != options_.features_name(),
        ValueError, "LocalisationNet: the regressor stage needs a name of its own (got '",
        options_.regressor_name(), "')");
    register_module(options_.regressor_name(), regressor_);
  }
  // The identity initialisation: whatever the features say, theta starts as the identity.
  Tensor weight = head_->weight();
  for (std::int64_t i = 0; i < weight.numel(); ++i) weight.data()[i] = 0.0f;
  Tensor bias = head_->bias();
  const float identity[6] = {1, 0, 0, 0, 1, 0};
  for (int i = 0; i < 6; ++i) bias.data()[i] = identity[i];
}

std::shared_ptr<LocalisationNet> LocalisationNet::tutorial() {
  const functional::MaxPool2dOptions pool2(Pair2(2));
  auto features = std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<UnaryModule>>{
      std::make_shared<Conv2d>(Conv2dOptions(1, 8, 7)), std::make_shared<MaxPool2d>(pool2),
      std::make_shared<ReLU>(), std::make_shared<Conv2d>(Conv2dOptions(8, 10, 5)),
      std::make_shared<MaxPool2d>(pool2), std::make_shared<ReLU>()});
  auto regressor = std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<UnaryModule>>{
      std::make_shared<Linear>(LinearOptions(90, 32)), std::make_shared<ReLU>(),
      std::make_shared<Linear>(LinearOptions(32, 6))});
  return std::make_shared<LocalisationNet>(std::move(features), std::move(regressor));
}

std::shared_ptr<LocalisationNet> LocalisationNet::tutorial_from_state_dict(const StateDict& dict) {
  auto net = tutorial();
  net->load_from(dict);
  return net;
}

StateDict LocalisationNet::select_keys(const StateDict& dict) const {
  StateDict out;
  for (const auto& e : dict.entries()) {
    for (const auto& [name, child] : children()) {
      if (starts_with(e.key, name + ".")) {
        out.set(e.key, e.value, e.integer);
        break;
      }
    }
  }
  return out;
}

void LocalisationNet::load_from(const StateDict& dict) { load_state_dict(select_keys(dict)); }

Tensor LocalisationNet::forward(const Tensor& x) const {
  const char* who = "LocalisationNet";
  check_defined(x, "input", who);
  check_shape(x, {kAny, kAny, kAny, kAny}, "input", who);
  const std::int64_t n = x.dim(0);
  CVATTN_CHECK(n >= 1, ShapeError, who, ": tensor 'input' ", to_string(x.shape()),
               " is an empty batch");
  Tensor f = features_->forward(x);
  if (regressor_->empty()) {
    CVATTN_CHECK(f.numel() == n * 6, ShapeError, who, ": input ", to_string(x.shape()), " gives ",
                 to_string(f.shape()), " after '", options_.features_name(), "', expected [", n,
                 ", 6] (add a Flatten before the Linear)");
    return f.reshape({n, 2, 3});
  }
  f = f.reshape({n, f.numel() / n});  // the tutorial's view(-1, c*h*w)
  if (auto first = std::dynamic_pointer_cast<Linear>(regressor_->at(0))) {
    CVATTN_CHECK(f.dim(1) == first->options().in_features(), ShapeError, who, ": input ",
                 to_string(x.shape()), " gives ", f.dim(1), " features per sample after '",
                 options_.features_name(), "', but '", options_.regressor_name(),
                 ".0' expects in_features = ", first->options().in_features());
  }
  return regressor_->forward(f).reshape({n, 2, 3});
}

std::string LocalisationNet::describe() const {
  return "LocalisationNet(features='" + options_.features_name() + "', regressor='" +
         options_.regressor_name() + "')";
}

}  // namespace cvattn
