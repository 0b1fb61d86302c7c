#include "cvattn/modules/activation.hpp"

#include "cvattn/functional/activation.hpp"

namespace cvattn {

Tensor ReLU::forward(const Tensor& x) const { return functional::relu(x); }
Tensor Sigmoid::forward(const Tensor& x) const { return functional::sigmoid(x); }
Tensor Tanh::forward(const Tensor& x) const { return functional::tanh(x); }

}  // namespace cvattn
