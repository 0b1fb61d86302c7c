#pragma once
// .safetensors files (the format of safetensors.torch.save_file). The header is never trusted:
// its length is bounded, the JSON must be well formed, every dtype, shape and offset pair is
// checked against the others and against the file, and data ranges may not overlap.
//
// F32 tensors load as they are; F16, BF16 and F64 are converted to float32; integer tensors
// (I64, I32, I16, I8, U8, BOOL: e.g. BatchNorm's num_batches_tracked) load as float32 flagged
// `integer`, which Module::load_state_dict accepts only for integer buffers.
#include <map>
#include <string>

#include "cvattn/core/state_dict.hpp"
#include "cvattn/export.hpp"

namespace cvattn::io {

[[nodiscard]] CVATTN_EXPORT StateDict load_safetensors(const std::string& path);
// Parses an in-memory image; `name` is used in error messages.
[[nodiscard]] CVATTN_EXPORT StateDict parse_safetensors(const void* data, std::size_t size,
                                                        const std::string& name = "<memory>");
// Writes F32 tensors (integer-flagged entries as I64), whole or not at all.
CVATTN_EXPORT void save_safetensors(const std::string& path, const StateDict& dict,
                                    const std::map<std::string, std::string>& metadata = {});

}  // namespace cvattn::io
