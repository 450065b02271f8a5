// A read-only memory mapping of a byte range of a file: the FileMapping the POSIX file system
// hands out. The mapping itself starts on a page boundary (mmap requires it); bytes() is exactly
// the requested range. Zero-copy placements import these pages into devices, so a region must
// outlive every device buffer made from it: hold it by shared_ptr from whatever owns those buffers.
#pragma once

#include "io/layer.hpp"

#include "core/align.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>

#include "lwload/file_system.hpp"

namespace lwload {

class MmapMapping final : public FileMapping {
 public:
  // Throws Error(io) when the file has no descriptor or mmap fails. The range must lie inside the
  // file: RandomAccessFile::map(), which calls this, checks it.
  static std::shared_ptr<MmapMapping> map(const RandomAccessFile& file, std::uint64_t offset, std::uint64_t length,
                                          MapAccess access = MapAccess::normal);
  ~MmapMapping() override;
  MmapMapping(const MmapMapping&) = delete;
  MmapMapping& operator=(const MmapMapping&) = delete;

  std::span<const std::byte> bytes() const noexcept override { return {data_, static_cast<std::size_t>(length_)}; }
  void will_need(std::uint64_t offset, std::uint64_t length) const override;
  // MADV_POPULATE_READ (Linux ≥ 5.14), which reports a lost page as EFAULT instead of SIGBUS.
  // Older kernels: a mapping made for MapAccess::resident was populated by MAP_POPULATE, and a
  // guarded read of the range's last byte checks that the file still holds it; any other mapping
  // gets MADV_WILLNEED and a guarded read of every page.
  void make_resident(std::uint64_t offset, std::uint64_t length) const override;
  std::uint64_t resident_bytes() const override;  // mincore

 private:
  MmapMapping(std::filesystem::path path, void* base, std::size_t map_length, const std::byte* data,
              std::uint64_t offset, std::uint64_t length, bool populated)
      : path_(std::move(path)),
        base_(base),
        map_length_(map_length),
        data_(data),
        offset_(offset),
        length_(length),
        populated_(populated) {}
  // The whole pages of the mapping that hold bytes()[offset, +length).
  std::span<std::byte> pages_of(std::uint64_t offset, std::uint64_t length) const noexcept;

  std::filesystem::path path_;
  void* base_;
  std::size_t map_length_;
  const std::byte* data_;
  std::uint64_t offset_;  // file offset of bytes()[0], for error messages
  std::uint64_t length_;
  bool populated_;  // by MAP_POPULATE when made (MapAccess::resident without MADV_POPULATE_READ)
};

}  // namespace lwload
