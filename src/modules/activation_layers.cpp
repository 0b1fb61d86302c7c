#include "cvattn/modules/activation_layers.hpp"

#include "cvattn/core/error.hpp"

namespace cvattn {

Tensor GELU::forward(const Tensor& x) const { return functional::gelu(x, approximate_); }
std::string GELU::describe() const {
  return std::string("GELU(approximate='") + to_string(approximate_) + "')";
}
Tensor SiLU::forward(const Tensor& x) const { return functional::silu(x); }
Tensor Hardswish::forward(const Tensor& x) const { return functional::hardswish(x); }
Tensor Hardsigmoid::forward(const Tensor& x) const { return functional::hardsigmoid(x); }
Tensor Mish::forward(const Tensor& x) const { return functional::mish(x); }
Tensor ReLU6::forward(const Tensor& x) const { return functional::relu6(x); }
Tensor Identity::forward(const Tensor& x) const {
  return functional::activation(x, ActLayer::identity);
}

Tensor Activation::forward(const Tensor& x) const { return functional::activation(x, act_); }

std::string Activation::describe() const {
  switch (act_) {
    case ActLayer::identity: return "Identity()";
    case ActLayer::relu: return "ReLU()";
    case ActLayer::relu6: return "ReLU6()";
    case ActLayer::sigmoid: return "Sigmoid()";
    case ActLayer::tanh: return "Tanh()";
    case ActLayer::silu: return "SiLU()";
    case ActLayer::gelu: return "GELU(approximate='none')";
    case ActLayer::gelu_tanh: return "GELU(approximate='tanh')";
    case ActLayer::hard_swish: return "Hardswish()";
    case ActLayer::hard_sigmoid: return "Hardsigmoid()";
    case ActLayer::mish: return "Mish()";
  }
  return "Activation()";
}

}  // namespace cvattn
