#include "cvattn/io/npy.hpp"

#include <cctype>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "cvattn/core/error.hpp"
#include "cvattn/io/file.hpp"

namespace cvattn::io {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMaxHeader = 1 << 20;  // numpy itself refuses headers over 10 KB by default

// A tiny reader for the Python-literal dict of an .npy header.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& name) : s_(text), name_(name) {}

  void parse(std::string& descr, bool& fortran, Shape& shape) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    expect('{');
    while (true) {
      skip_ws();
      if (peek() == '}') break;
      const std::string key = string_literal();
      expect(':');
      if (key == "descr") {
        fail_if(have_descr, "duplicated key 'descr'");
        descr = string_literal();
        have_descr = true;
      } else if (key == "fortran_order") {
        fail_if(have_fortran, "duplicated key 'fortran_order'");
        fortran = boolean();
        have_fortran = true;
      } else if (key == "shape") {
        fail_if(have_shape, "duplicated key 'shape'");
        shape = tuple();
        have_shape = true;
      } else {
        fail("unknown header key '" + key + "'");
      }
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      skip_ws();
      if (peek() == '}') break;
      fail("expected ',' or '}' in the header");
    }
    ++pos_;
    skip_ws();
    fail_if(pos_ != s_.size(), "trailing characters after the header dict");
    fail_if(!have_descr || !have_fortran || !have_shape,
            "the header must have 'descr', 'fortran_order' and 'shape'");
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw IoError(detail::concat("read_npy: '", name_, "': malformed header: ", why));
  }
  void fail_if(bool cond, const std::string& why) const {
    if (cond) fail(why);
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  void expect(char c) {
    skip_ws();
    fail_if(peek() != c, std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string string_literal() {
    skip_ws();
    const char q = peek();
    fail_if(q != '\'' && q != '"', "expected a quoted string");
    const std::size_t end = s_.find(q, pos_ + 1);
    fail_if(end == std::string_view::npos, "unterminated string");
    std::string out(s_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return out;
  }
  bool boolean() {
    skip_ws();
    if (s_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (s_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    fail("'fortran_order' must be True or False");
  }
  std::int64_t integer() {
    skip_ws();
    fail_if(!std::isdigit(static_cast<unsigned char>(peek())),
            "expected a non-negative integer in 'shape'");
    std::int64_t v = 0;
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      const int d = peek() - '0';
      fail_if(v > (INT64_MAX - d) / 10, "a dimension in 'shape' overflows 64 bits");
      v = v * 10 + d;
      ++pos_;
    }
    if (peek() == 'L') ++pos_;  // Python 2 longs
    return v;
  }
  Shape tuple() {
    expect('(');
    Shape out;
    while (true) {
      skip_ws();
      if (peek() == ')') break;
      out.push_back(integer());
      fail_if(out.size() > static_cast<std::size_t>(Tensor::kMaxRank),
              "more than 6 dimensions in 'shape'");
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      skip_ws();
      fail_if(peek() != ')', "expected ',' or ')' in 'shape'");
    }
    ++pos_;
    return out;
  }

  std::string_view s_;
  const std::string& name_;
  std::size_t pos_ = 0;
};

std::uint32_t read_le(const unsigned char* p, int bytes) {
  std::uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

Tensor parse_npy(const void* data, std::size_t size, const std::string& name) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  CVATTN_CHECK(size >= 10 && std::memcmp(bytes, kMagic, 6) == 0, IoError, "read_npy: '", name,
               "' is not a .npy file (bad magic)");
  const int major = bytes[6];
  CVATTN_CHECK(major >= 1 && major <= 3, IoError, "read_npy: '", name,
               "': unsupported format version ", major, ".", int{bytes[7]});
  const int len_bytes = major == 1 ? 2 : 4;
  CVATTN_CHECK(size >= static_cast<std::size_t>(8 + len_bytes), IoError, "read_npy: '", name,
               "': truncated header");
  const std::size_t header_len = read_le(bytes + 8, len_bytes);
  const std::size_t data_start = 8 + static_cast<std::size_t>(len_bytes) + header_len;
  CVATTN_CHECK(header_len <= kMaxHeader, IoError, "read_npy: '", name, "': header length ",
               header_len, " is absurd");
  CVATTN_CHECK(data_start <= size, IoError, "read_npy: '", name, "': header length ", header_len,
               " runs past the end of the ", size, "-byte file");
  const std::string_view header(reinterpret_cast<const char*>(bytes) + 8 + len_bytes, header_len);
  CVATTN_CHECK(header.find('\0') == std::string_view::npos, IoError, "read_npy: '", name,
               "': malformed header: NUL byte");

  std::string descr;
  bool fortran = false;
  Shape shape;
  HeaderParser(header, name).parse(descr, fortran, shape);
  CVATTN_CHECK(!fortran, IoError, "read_npy: '", name,
               "': Fortran-order arrays are not supported (save with np.ascontiguousarray)");
  int itemsize = 0;
  if (descr == "<f4") itemsize = 4;
  if (descr == "<f8") itemsize = 8;
  CVATTN_CHECK(itemsize != 0, IoError, "read_npy: '", name, "': dtype '", descr,
               "' is not supported (expected '<f4' float32 or '<f8' float64)");

  std::int64_t numel;
  try {
    numel = checked_numel(shape, "read_npy: '" + name + "'");
  } catch (const Error& e) {
    throw IoError(e.what());  // a file that claims an absurd size is a malformed file
  }
  const std::size_t payload = size - data_start;
  CVATTN_CHECK(payload / static_cast<std::size_t>(itemsize) == static_cast<std::size_t>(numel) &&
                   payload % static_cast<std::size_t>(itemsize) == 0,
               IoError, "read_npy: '", name, "': shape ", to_string(shape), " needs ",
               numel * itemsize, " data bytes, the file has ", payload);
  Tensor t = Tensor::empty(shape);
  const unsigned char* src = bytes + data_start;
  if (itemsize == 4) {
    if (numel > 0) std::memcpy(t.data(), src, static_cast<std::size_t>(numel) * 4);
  } else {
    float* dst = t.data();
    for (std::int64_t i = 0; i < numel; ++i) {
      double v;
      std::memcpy(&v, src + i * 8, 8);
      dst[i] = static_cast<float>(v);
    }
  }
  return t;
}

Tensor read_npy(const std::string& path) {
  const std::vector<char> bytes = read_file(path);
  return parse_npy(bytes.data(), bytes.size(), path);
}

void write_npy(const std::string& path, const Tensor& tensor) {
  CVATTN_CHECK(tensor.defined(), ValueError, "write_npy: '", path, "': undefined tensor");
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (std::size_t i = 0; i < tensor.shape().size(); ++i) {
    dict += std::to_string(tensor.shape()[i]);
    if (tensor.shape().size() == 1 || i + 1 < tensor.shape().size()) dict += ",";
    if (i + 1 < tensor.shape().size()) dict += " ";
  }
  dict += "), }";
  // Pad with spaces so that the data starts on a 64-byte boundary, ending with '\n'.
  const bool v2 = dict.size() + 1 + 10 > 65535;
  const std::size_t prefix = v2 ? 12 : 10;
  std::size_t total = prefix + dict.size() + 1;
  total = (total + 63) / 64 * 64;
  const std::size_t header_len = total - prefix;
  dict.append(header_len - dict.size() - 1, ' ');
  dict += '\n';
  std::string out(kMagic, 6);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  for (std::size_t i = 0; i < (v2 ? 4u : 2u); ++i) {
    out += static_cast<char>((header_len >> (8 * i)) & 0xff);
  }
  out += dict;
  out.append(reinterpret_cast<const char*>(tensor.data()),
             static_cast<std::size_t>(tensor.nbytes()));
  write_file_atomic(path, out);
}

}  // namespace cvattn::io
