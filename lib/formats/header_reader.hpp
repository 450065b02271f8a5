// A bounds-checked little-endian cursor over a file's header region, fetched in small buffered
// chunks through the FileSystem seam. Readers that walk binary headers (GGUF, the ONNX protobuf
// scan) use it so that skipping tensor data costs no I/O and every failure names the file, the
// field being read and its offset.
#pragma once

#include "formats/layer.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "lwload/error.hpp"
#include "lwload/file_system.hpp"

namespace lwload::formats {

static_assert(std::endian::native == std::endian::little,
              "lwload targets little-endian hosts; every format it reads is little-endian");

// The little-endian T at p (the bytes must be there: callers bounds-check first).
template <typename T>
T load_le(const std::byte* p) noexcept {
  T value;
  std::memcpy(&value, p, sizeof value);
  return value;
}

class HeaderReader {
 public:
  // Reads [begin, end) of `file`; `end` defaults to the file's size.
  explicit HeaderReader(const RandomAccessFile& file, std::uint64_t begin = 0);
  HeaderReader(const RandomAccessFile& file, std::uint64_t begin, std::uint64_t end);

  const RandomAccessFile& file() const noexcept { return file_; }
  std::uint64_t offset() const noexcept { return pos_; }
  std::uint64_t end() const noexcept { return end_; }
  std::uint64_t remaining() const noexcept { return end_ - pos_; }
  bool at_end() const noexcept { return pos_ >= end_; }
  // Bytes actually fetched from the file so far (the "headers only" measurement).
  std::uint64_t bytes_fetched() const noexcept { return fetched_; }

  std::uint8_t u8(std::string_view what);
  std::uint16_t u16(std::string_view what);
  std::uint32_t u32(std::string_view what);
  std::uint64_t u64(std::string_view what);
  std::int8_t i8(std::string_view what) { return static_cast<std::int8_t>(u8(what)); }
  std::int16_t i16(std::string_view what) { return static_cast<std::int16_t>(u16(what)); }
  std::int32_t i32(std::string_view what) { return static_cast<std::int32_t>(u32(what)); }
  std::int64_t i64(std::string_view what) { return static_cast<std::int64_t>(u64(what)); }
  float f32(std::string_view what);
  double f64(std::string_view what);
  // Protobuf base-128 varint (at most 10 bytes).
  std::uint64_t varint(std::string_view what);

  // Up to n bytes at the cursor (fewer only where the region ends), fetched if need be; the
  // cursor stays. For fast paths that decode in memory and leave errors to the checked reads.
  std::span<const std::byte> peek(std::size_t n, std::string_view what) {
    const auto available = static_cast<std::size_t>(std::min<std::uint64_t>(n, remaining()));
    return {available ? fetch(available, what) : nullptr, available};
  }
  // Copies n bytes; n is checked against remaining() before anything is allocated.
  std::string string(std::uint64_t n, std::string_view what);
  void read(std::span<std::byte> dst, std::string_view what);
  void skip(std::uint64_t n, std::string_view what);
  void seek(std::uint64_t offset, std::string_view what);

  // Throws Error(bad_input): "<file>: <what> at offset <offset>: <detail>".
  template <typename... Parts>
  [[noreturn]] void fail_at(std::uint64_t offset, std::string_view what, const Parts&... detail) const {
    fail(ErrorCode::bad_input, file_.path().string(), ": ", what, " at offset ", offset, ": ", detail...);
  }

 private:
  void need(std::uint64_t n, std::string_view what) const;
  // Makes at least n (<= buffer size) bytes from pos_ available in the buffer.
  const std::byte* fetch(std::size_t n, std::string_view what);
  // A little-endian T at the cursor, which then moves past it.
  template <typename T>
  T scalar(std::string_view what);

  const RandomAccessFile& file_;
  std::uint64_t pos_;
  std::uint64_t end_;
  std::uint64_t fetched_ = 0;
  std::uint64_t buffer_start_ = 0;
  std::size_t buffer_len_ = 0;
  std::array<std::byte, 64 * 1024> buffer_;
};

}  // namespace lwload::formats
