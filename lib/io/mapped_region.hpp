// A read-only memory mapping of a byte range of a file. The mapping itself starts on a page
// boundary (mmap requires it); bytes() is exactly the requested range. Zero-copy placements import
// these pages into devices, so a region must outlive every device buffer made from it: hold it by
// shared_ptr from whatever owns those buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace lwload {

class RandomAccessFile;

enum class MapAdvice { normal, sequential, will_need, random };

class MappedRegion {
 public:
  // Throws Error(io) when the file has no descriptor or mmap fails, Error(bad_input) when the
  // range lies past the end of the file.
  static std::shared_ptr<MappedRegion> map(const RandomAccessFile& file, std::uint64_t offset,
                                           std::uint64_t length, MapAdvice advice = MapAdvice::normal);
  ~MappedRegion();
  MappedRegion(const MappedRegion&) = delete;
  MappedRegion& operator=(const MappedRegion&) = delete;

  std::span<const std::byte> bytes() const noexcept { return {data_, length_}; }
  std::uint64_t file_offset() const noexcept { return offset_; }

 private:
  MappedRegion(void* base, std::size_t map_length, const std::byte* data, std::uint64_t offset,
               std::uint64_t length)
      : base_(base), map_length_(map_length), data_(data), offset_(offset), length_(length) {}

  void* base_;
  std::size_t map_length_;
  const std::byte* data_;
  std::uint64_t offset_;
  std::uint64_t length_;
};

std::size_t page_size() noexcept;

}  // namespace lwload
