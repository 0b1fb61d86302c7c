#include "cvattn/modules/sequential.hpp"

#include "cvattn/core/error.hpp"

namespace cvattn {

Sequential::Sequential(std::initializer_list<std::shared_ptr<UnaryModule>> modules) {
  for (const auto& m : modules) append(m);
}

void Sequential::append(std::shared_ptr<UnaryModule> module) {
  CVATTN_CHECK(module != nullptr, ValueError, "Sequential: module ", layers_.size(), " is null");
  register_module(std::to_string(layers_.size()), module);
  layers_.push_back(std::move(module));
}

const std::shared_ptr<UnaryModule>& Sequential::at(std::size_t i) const {
  CVATTN_CHECK(i < layers_.size(), ValueError, "Sequential::at: index ", i, " out of range for ",
               layers_.size(), " modules");
  return layers_[i];
}

Tensor Sequential::forward(const Tensor& x) const {
  Tensor y = x;
  for (const auto& layer : layers_) y = layer->forward(y);
  return y;
}

}  // namespace cvattn
