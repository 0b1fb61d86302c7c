#include "cvattn/io/safetensors.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/io/file.hpp"

namespace cvattn::io {
namespace {

using json = nlohmann::json;
constexpr std::uint64_t kMaxHeader = 100u << 20;  // the reference implementation's limit

struct DType {
  const char* name;
  int size;
  bool integer;
};
constexpr DType kDTypes[] = {
    {"F32", 4, false}, {"F16", 2, false}, {"BF16", 2, false}, {"F64", 8, false}, {"I64", 8, true},
    {"I32", 4, true},  {"I16", 2, true},  {"I8", 1, true},    {"U8", 1, true},   {"BOOL", 1, true}};

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t mant = h & 0x3ffu;
  float magnitude;
  if (exp == 0) {
    magnitude = std::ldexp(static_cast<float>(mant), -24);  // zero or subnormal
  } else if (exp == 31) {
    magnitude =
        mant ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    magnitude = std::ldexp(static_cast<float>(mant | 0x400u), static_cast<int>(exp) - 25);
  }
  std::uint32_t bits;
  std::memcpy(&bits, &magnitude, 4);
  bits |= sign;
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

template <class T>
T load(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

void convert(const DType& dt, const unsigned char* src, std::int64_t n, float* dst) {
  const std::string name = dt.name;
  for (std::int64_t i = 0; i < n; ++i) {
    const unsigned char* p = src + i * dt.size;
    if (name == "F32") {
      dst[i] = load<float>(p);
    } else if (name == "F16") {
      dst[i] = half_to_float(load<std::uint16_t>(p));
    } else if (name == "BF16") {
      const std::uint32_t bits = static_cast<std::uint32_t>(load<std::uint16_t>(p)) << 16;
      std::memcpy(&dst[i], &bits, 4);
    } else if (name == "F64") {
      dst[i] = static_cast<float>(load<double>(p));
    } else if (name == "I64") {
      dst[i] = static_cast<float>(load<std::int64_t>(p));
    } else if (name == "I32") {
      dst[i] = static_cast<float>(load<std::int32_t>(p));
    } else if (name == "I16") {
      dst[i] = static_cast<float>(load<std::int16_t>(p));
    } else if (name == "I8") {
      dst[i] = static_cast<float>(load<std::int8_t>(p));
    } else {  // U8, BOOL
      dst[i] = static_cast<float>(*p);
    }
  }
}

struct Range {
  std::uint64_t begin, end;
  std::string key;
};

// The name to suggest for the converted file: in.pt -> in.safetensors.
std::string converted_name(const std::string& name) {
  const std::size_t slash = name.find_last_of("/\\");
  const std::size_t dot = name.find_last_of('.');
  const bool has_ext = dot != std::string::npos && (slash == std::string::npos || dot > slash);
  return (has_ext ? name.substr(0, dot) : name) + ".safetensors";
}

// Files that are often given as weights but are not safetensors get a message that says what
// they are and how to convert them, instead of a nonsensical header length. Only called when
// the ninth byte is not the '{' that opens every safetensors header.
void reject_other_formats(const unsigned char* b, std::size_t size, const std::string& where,
                          const std::string& name) {
  const std::string convert = detail::concat("; convert it with: python3 tools/export_weights.py ",
                                             name, " ", converted_name(name));
  if (size >= 30 && b[0] == 'P' && b[1] == 'K' && b[2] == 3 && b[3] == 4) {
    const std::size_t name_len = b[26] | (static_cast<std::size_t>(b[27]) << 8);
    const std::string first(reinterpret_cast<const char*>(b + 30), std::min(name_len, size - 30));
    const bool npz = first.size() >= 4 && first.compare(first.size() - 4, 4, ".npy") == 0;
    if (npz) {
      throw IoError(
          detail::concat(where, ": is a NumPy .npz archive, not a .safetensors file", convert));
    }
    throw IoError(detail::concat(
        where, ": is a zip archive (first entry '", first,
        "'): a PyTorch checkpoint saved by torch.save (.pt/.pth, PyTorch >= 1.6) or a "
        "TorchScript file, not a .safetensors file",
        convert));
  }
  if (size >= 2 && b[0] == 0x80 && b[1] >= 2 && b[1] <= 5) {
    throw IoError(detail::concat(
        where, ": is a Python pickle (protocol ", static_cast<int>(b[1]),
        "): a PyTorch checkpoint in the legacy torch.save format (PyTorch < 1.6 or "
        "_use_new_zipfile_serialization=False) or a pickled object, not a .safetensors file",
        convert));
  }
  if (size >= 6 && b[0] == 0x93 && std::memcmp(b + 1, "NUMPY", 5) == 0) {
    throw IoError(detail::concat(where,
                                 ": is a NumPy .npy array (one unnamed tensor), not a "
                                 ".safetensors file (a state_dict: names and tensors)"));
  }
}

}  // namespace

StateDict parse_safetensors(const void* data, std::size_t size, const std::string& name) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  const std::string where = "read_safetensors: '" + name + "'";
  if (size < 9 || bytes[8] != '{') reject_other_formats(bytes, size, where, name);
  CVATTN_CHECK(size >= 8, IoError, where, ": ", size,
               "-byte file is too short for the 8-byte header length");
  std::uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];
  CVATTN_CHECK(header_len <= kMaxHeader, IoError, where, ": header length ", header_len,
               " exceeds the limit of ", kMaxHeader, " bytes");
  CVATTN_CHECK(header_len <= size - 8, IoError, where, ": header length ", header_len,
               " runs past the end of the ", size, "-byte file");
  const char* header = reinterpret_cast<const char*>(bytes + 8);
  const unsigned char* section = bytes + 8 + header_len;
  const std::uint64_t section_size = size - 8 - header_len;

  // Duplicate top-level keys would silently shadow each other in the parsed object.
  std::set<std::string> seen;
  std::string duplicate;
  json::parser_callback_t on_event = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::key && depth == 1) {
      const std::string key = parsed.get<std::string>();
      if (!seen.insert(key).second && duplicate.empty()) duplicate = key;
    }
    return true;
  };
  json doc;
  try {
    doc = json::parse(header, header + header_len, on_event);
  } catch (const json::exception& e) {
    throw IoError(detail::concat(where, ": header is not valid JSON (", e.what(), ")"));
  }
  CVATTN_CHECK(duplicate.empty(), IoError, where, ": tensor '", duplicate,
               "' appears twice in the header");
  CVATTN_CHECK(doc.is_object(), IoError, where, ": header must be a JSON object");

  StateDict out;
  std::vector<Range> ranges;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const std::string& key = it.key();
    const json& v = it.value();
    if (key == "__metadata__") {
      CVATTN_CHECK(v.is_object(), IoError, where, ": '__metadata__' must be an object");
      for (const auto& m : v.items()) {
        CVATTN_CHECK(m.value().is_string(), IoError, where, ": metadata '", m.key(),
                     "' must be a string");
      }
      continue;
    }
    const std::string what = where + ": tensor '" + key + "'";
    CVATTN_CHECK(v.is_object(), IoError, what, " must be an object");
    for (const auto& field : v.items()) {
      CVATTN_CHECK(
          field.key() == "dtype" || field.key() == "shape" || field.key() == "data_offsets",
          IoError, what, " has an unknown field '", field.key(), "'");
    }
    CVATTN_CHECK(v.contains("dtype") && v["dtype"].is_string(), IoError, what,
                 " needs a string 'dtype'");
    CVATTN_CHECK(v.contains("shape") && v["shape"].is_array(), IoError, what,
                 " needs an array 'shape'");
    CVATTN_CHECK(
        v.contains("data_offsets") && v["data_offsets"].is_array() && v["data_offsets"].size() == 2,
        IoError, what, " needs 'data_offsets' [begin, end]");
    const std::string dtype_name = v["dtype"].get<std::string>();
    const DType* dt = nullptr;
    for (const auto& d : kDTypes) {
      if (dtype_name == d.name) dt = &d;
    }
    CVATTN_CHECK(dt != nullptr, IoError, what, " has unsupported dtype '", dtype_name,
                 "' (supported: F32, F16, BF16, F64 and integer types)");
    Shape shape;
    for (const auto& d : v["shape"]) {
      CVATTN_CHECK(d.is_number_unsigned(), IoError, what,
                   " shape entries must be non-negative integers");
      const std::uint64_t dim = d.get<std::uint64_t>();
      CVATTN_CHECK(dim <= static_cast<std::uint64_t>(INT64_MAX), IoError, what,
                   " has an absurd dimension ", dim);
      shape.push_back(static_cast<std::int64_t>(dim));
    }
    for (const auto& o : v["data_offsets"]) {
      CVATTN_CHECK(o.is_number_unsigned(), IoError, what,
                   " data_offsets must be non-negative integers");
    }
    const std::uint64_t begin = v["data_offsets"][0].get<std::uint64_t>();
    const std::uint64_t end = v["data_offsets"][1].get<std::uint64_t>();
    CVATTN_CHECK(begin <= end, IoError, what, " data offsets [", begin, ", ", end,
                 ") are reversed");
    CVATTN_CHECK(end <= section_size, IoError, what, " data offsets [", begin, ", ", end,
                 ") exceed the ", section_size, "-byte data section");
    std::int64_t numel;
    try {
      numel = checked_numel(shape, what);
    } catch (const Error& e) {
      throw IoError(e.what());
    }
    CVATTN_CHECK(
        static_cast<std::uint64_t>(numel) * static_cast<std::uint64_t>(dt->size) == end - begin,
        IoError, what, " is ", dtype_name, " ", to_string(shape), " (", numel * dt->size,
        " bytes) but its data offsets [", begin, ", ", end, ") span ", end - begin, " bytes");
    ranges.push_back({begin, end, key});
    Tensor t = Tensor::empty(shape);
    convert(*dt, section + begin, numel, t.data());
    out.set(key, std::move(t), dt->integer);
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& a, const Range& b) { return a.begin < b.begin; });
  for (std::size_t i = 1; i < ranges.size(); ++i) {
    CVATTN_CHECK(ranges[i].begin >= ranges[i - 1].end, IoError, where, ": tensors '",
                 ranges[i - 1].key, "' [", ranges[i - 1].begin, ", ", ranges[i - 1].end, ") and '",
                 ranges[i].key, "' [", ranges[i].begin, ", ", ranges[i].end, ") overlap");
  }
  return out;
}

StateDict load_safetensors(const std::string& path) {
  const std::vector<char> bytes = read_file(path);
  return parse_safetensors(bytes.data(), bytes.size(), path);
}

void save_safetensors(const std::string& path, const StateDict& dict,
                      const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  std::string data;
  for (const auto& e : dict.entries()) {
    CVATTN_CHECK(e.value.defined(), ValueError, "save_safetensors: '", path, "': tensor '", e.key,
                 "' is undefined");
    CVATTN_CHECK(e.key != "__metadata__", ValueError, "save_safetensors: '", path,
                 "': '__metadata__' is reserved");
    const std::uint64_t begin = data.size();
    if (e.integer) {
      for (std::int64_t i = 0; i < e.value.numel(); ++i) {
        const auto v = static_cast<std::int64_t>(e.value[i]);
        data.append(reinterpret_cast<const char*>(&v), 8);
      }
    } else {
      data.append(reinterpret_cast<const char*>(e.value.data()),
                  static_cast<std::size_t>(e.value.nbytes()));
    }
    header[e.key] = {{"dtype", e.integer ? "I64" : "F32"},
                     {"shape", e.value.shape()},
                     {"data_offsets", {begin, static_cast<std::uint64_t>(data.size())}}};
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i)
    out[static_cast<std::size_t>(i)] = static_cast<char>((text.size() >> (8 * i)) & 0xff);
  out += text;
  out += data;
  write_file_atomic(path, out);
}

}  // namespace cvattn::io
