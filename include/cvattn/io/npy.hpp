#pragma once
// NumPy .npy files: header versions 1.0, 2.0 and 3.0, C order, little-endian float32 ('<f4');
// float64 ('<f8') is converted on read. Anything else is an IoError naming the file and why.
#include <string>

#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn::io {

[[nodiscard]] CVATTN_EXPORT Tensor read_npy(const std::string& path);
// Parses an in-memory .npy image; `name` is used in error messages.
[[nodiscard]] CVATTN_EXPORT Tensor parse_npy(const void* data, std::size_t size,
                                             const std::string& name = "<memory>");
// Writes '<f4' version 1.0 (2.0 when the header needs it), whole or not at all.
CVATTN_EXPORT void write_npy(const std::string& path, const Tensor& tensor);

}  // namespace cvattn::io
