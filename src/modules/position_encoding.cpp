#include "cvattn/modules/position_encoding.hpp"

#include "cvattn/core/error.hpp"
#include "cvattn/functional/position_encoding.hpp"
#include "modules/detail/key_scope.hpp"
#include "modules/detail/state_dict_shapes.hpp"

namespace cvattn {

LearnedPositionEncodingOptions LearnedPositionEncodingOptions::from_state_dict(
    const StateDict& dict, const std::string& prefix) {
  if (!prefix.empty()) {
    return detail::with_key_scope(dict, prefix,
                                  [](const StateDict& d) { return from_state_dict(d); });
  }
  const Shape& s = detail::require_shape(dict, "pos_embed", {1, kAny, kAny, kAny},
                                         "LearnedPositionEncodingOptions::from_state_dict");
  return {s[1], s[2], s[3]};
}

LearnedPositionEncoding::LearnedPositionEncoding(const LearnedPositionEncodingOptions& options)
    : options_(options) {
  CVATTN_CHECK(options_.channels() >= 1 && options_.height() >= 1 && options_.width() >= 1,
               ValueError,
               "LearnedPositionEncodingOptions: channels, height and width must be "
               ">= 1, got ",
               options_.channels(), ", ", options_.height(), ", ", options_.width());
  pos_embed_ = register_parameter("pos_embed",
                                  {1, options_.channels(), options_.height(), options_.width()});
}

Tensor LearnedPositionEncoding::forward(const Tensor& x) const {
  check_shape(x, {kAny, options_.channels(), options_.height(), options_.width()}, "x",
              "LearnedPositionEncoding::forward");
  return functional::add_position_encoding(x, pos_embed_);
}

std::string LearnedPositionEncoding::describe() const {
  return "LearnedPositionEncoding(channels=" + std::to_string(options_.channels()) +
         ", height=" + std::to_string(options_.height()) +
         ", width=" + std::to_string(options_.width()) + ")";
}

}  // namespace cvattn
