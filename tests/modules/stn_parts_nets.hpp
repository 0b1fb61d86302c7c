#pragma once
// The torch TwoStage localisation net of tests/fixtures/stn_parts.py, built from cvattn layers:
// 3-channel 13 x 17 images -> conv/relu/pool/conv/relu -> 144 features -> Linear(16) -> theta.
#include <memory>

#include "cvattn/modules/activation.hpp"
#include "cvattn/modules/conv2d.hpp"
#include "cvattn/modules/localisation_net.hpp"
#include "cvattn/modules/pooling.hpp"

namespace cvattn::test {

inline std::shared_ptr<LocalisationNet> two_stage_localisation_net() {
  using Layers = std::initializer_list<std::shared_ptr<UnaryModule>>;
  auto features = std::make_shared<Sequential>(
      Layers{std::make_shared<Conv2d>(Conv2dOptions(3, 4, 3).padding(1)), std::make_shared<ReLU>(),
             std::make_shared<MaxPool2d>(functional::MaxPool2dOptions(Pair2(2))),
             std::make_shared<Conv2d>(Conv2dOptions(4, 6, 3)), std::make_shared<ReLU>()});
  auto regressor = std::make_shared<Sequential>(
      Layers{std::make_shared<Linear>(LinearOptions(144, 16)), std::make_shared<ReLU>(),
             std::make_shared<Linear>(LinearOptions(16, 6))});
  return std::make_shared<LocalisationNet>(
      features, regressor,
      LocalisationNetOptions().features_name("features").regressor_name("regressor"));
}

}  // namespace cvattn::test
