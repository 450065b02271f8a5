// The central directory of a zip archive (ZIP64 included), as PyTorch checkpoints use it: records
// that are stored, never compressed or encrypted, so each record's bytes sit at a fixed file offset
// a loader can map. Hand-written because the job is small (find the end record, walk the
// directory, read each local header's length fields) and a zip library (libzip, minizip) would
// hide the one thing we need: the absolute offset of each record's data.
#pragma once

#include "formats/pytorch/layer.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lwload/file_system.hpp"

namespace lwload::formats {

struct ZipRecord {
  std::string name;
  std::uint64_t data_offset = 0;  // absolute offset of the stored bytes
  std::uint64_t size = 0;
  // False for a compressed record (TorchScript's code/ and debug records): listed, never readable
  // in place; a reader that needs one refuses it by name.
  bool stored = true;
  std::uint16_t method = 0;        // 0 stored, 8 deflate, ...
  std::uint64_t uncompressed = 0;  // the directory's uncompressed size
};

// The bytes of `record`, stored or deflated (TorchScript's code/ records), at most `limit` of
// them: Error(bad_input) for a corrupt stream or one whose length disagrees with the directory,
// Error(unsupported) for another method or a record past `limit`. A small inflater of its own
// (RFC 1951, as zlib's puff.c): lwload links no compression library for the few kilobytes of
// source it reads.
std::vector<std::byte> read_record(const RandomAccessFile& file, const ZipRecord& record, std::uint64_t limit);

class ZipArchive {
 public:
  // Reads the directory and every local header. Throws Error(bad_input) naming the file, the
  // record and the field for a truncated or inconsistent archive, a record past the end of the file
  // or a size that overflows; Error(unsupported) for a compressed or encrypted record.
  explicit ZipArchive(const RandomAccessFile& file);

  const std::vector<ZipRecord>& records() const noexcept { return records_; }
  const ZipRecord* find(std::string_view name) const noexcept;

 private:
  std::vector<ZipRecord> records_;
  std::unordered_map<std::string, std::size_t> by_name_;  // index into records_
};

}  // namespace lwload::formats
