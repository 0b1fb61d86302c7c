#pragma once
// File helpers shared by the readers and writers.
#include <string>
#include <vector>

#include "cvattn/export.hpp"

namespace cvattn::io {

// Whole file as bytes; IoError naming the path when it cannot be read.
[[nodiscard]] CVATTN_EXPORT std::vector<char> read_file(const std::string& path);
// Writes to a temporary name in the same folder, then renames: the file appears whole or not at
// all. IoError naming the path on failure (the temporary is removed).
CVATTN_EXPORT void write_file_atomic(const std::string& path, const std::string& bytes);

}  // namespace cvattn::io
