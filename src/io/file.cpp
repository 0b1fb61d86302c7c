#include "cvattn/io/file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "cvattn/core/error.hpp"
#include "cvattn/core/tensor.hpp"

namespace cvattn::io {

std::vector<char> read_file(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  // A directory opens as a stream whose "size" is absurd (it ended in bad_alloc).
  CVATTN_CHECK(status.type() != std::filesystem::file_type::directory, IoError, "cannot read '",
               path, "': it is a directory");
  std::ifstream in(path, std::ios::binary);
  CVATTN_CHECK(in.is_open(), IoError, "cannot open '", path, "': ", std::strerror(errno));
  if (status.type() == std::filesystem::file_type::regular) {
    in.seekg(0, std::ios::end);
    const std::streamoff size = in.tellg();
    CVATTN_CHECK(size >= 0, IoError, "cannot read '", path, "'");
    in.seekg(0, std::ios::beg);
    std::vector<char> bytes(static_cast<std::size_t>(size));
    if (size > 0) in.read(bytes.data(), size);
    CVATTN_CHECK(in.good() || (size == 0 && !in.bad()), IoError, "cannot read '", path, "'");
    return bytes;
  }
  // A device or pipe has no size: read it in chunks, up to what any tensor file could need.
  const std::int64_t limit = max_tensor_bytes() + (std::int64_t{100} << 20);
  std::vector<char> bytes;
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    bytes.insert(bytes.end(), chunk, chunk + in.gcount());
    CVATTN_CHECK(static_cast<std::int64_t>(bytes.size()) <= limit, IoError, "cannot read '", path,
                 "': not a regular file, and longer than ", limit, " bytes");
  }
  CVATTN_CHECK(!in.bad(), IoError, "cannot read '", path, "'");
  return bytes;
}

void write_file_atomic(const std::string& path, const std::string& bytes) {
  std::random_device rd;
  const std::string tmp = path + ".tmp" + std::to_string(rd());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    CVATTN_CHECK(out.is_open(), IoError, "cannot write '", path, "': ", std::strerror(errno));
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out.good()) {
      out.close();
      std::remove(tmp.c_str());
      throw IoError(detail::concat("cannot write '", path, "': write failed"));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    throw IoError(detail::concat("cannot write '", path, "': ", std::strerror(err)));
  }
}

}  // namespace cvattn::io
