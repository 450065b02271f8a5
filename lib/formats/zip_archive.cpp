// Zip central directory reader (APPNOTE.TXT 6.3): end of central directory record, ZIP64 end
// record via its locator, central directory entries with their ZIP64 extra fields, then each local
// header (whose name and extra lengths may differ from the directory's) to find where data starts.
#include "formats/zip_archive.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <optional>

#include "formats/format.hpp"
#include "formats/header_reader.hpp"
#include "lwload/error.hpp"

namespace lwload::formats {
namespace {

constexpr std::uint32_t kEndSignature = 0x06054b50;
constexpr std::uint32_t kZip64EndSignature = 0x06064b50;
constexpr std::uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr std::uint32_t kCentralSignature = 0x02014b50;
constexpr std::uint32_t kLocalSignature = 0x04034b50;
constexpr std::uint64_t kEndBytes = 22;             // end record without its comment
constexpr std::uint64_t kLocatorBytes = 20;
constexpr std::uint64_t kMaxComment = 0xFFFF;
constexpr std::uint64_t kCentralBytes = 46;          // fixed part of a directory entry
constexpr std::uint64_t kLocalBytes = 30;            // fixed part of a local header
constexpr std::uint16_t kZip64ExtraId = 0x0001;
constexpr std::uint16_t kEncryptedFlag = 0x0001;
constexpr std::uint16_t kStored = 0;

struct Directory {
  std::uint64_t entries = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

// The end record, found as PyTorchStreamReader's miniz (mz_zip_reader_locate_header_sig) and
// Python's zipfile find it: the last end signature in the final 64 KiB + 22 bytes with a whole
// record after it. A second signature earlier whose comment length reaches exactly the file's
// end is what a reader trusting comment lengths would take: two readers, two central
// directories, so that is refused as ambiguous, naming both offsets.
std::uint64_t find_end_record(const RandomAccessFile& file) {
  const std::uint64_t size = file.size();
  if (size < kEndBytes)
    fail(ErrorCode::bad_input, file.path().string(), ": zip archive of ", size,
         " bytes is too short to hold an end of central directory record (truncated?)");
  const std::uint64_t window = std::min(size, kEndBytes + kMaxComment);
  std::vector<std::byte> tail(static_cast<std::size_t>(window));
  file.read_exact(size - window, tail, "zip end of central directory");
  std::optional<std::uint64_t> last, exact;
  for (std::uint64_t i = window - kEndBytes + 1; i-- > 0;) {
    if (load_le<std::uint32_t>(tail.data() + i) != kEndSignature) continue;
    const std::uint16_t comment = load_le<std::uint16_t>(tail.data() + i + 20);
    if (!last) last = i;
    else if (!exact && i + kEndBytes + comment == window) exact = i;
  }
  if (!last)
    fail(ErrorCode::bad_input, file.path().string(),
         ": no zip end of central directory record in the last ", window, " bytes (truncated archive?)");
  if (exact)
    fail(ErrorCode::bad_input, file.path().string(), ": two zip end of central directory records, at offsets ",
         size - window + *exact, " (its comment reaches the end of the file) and ", size - window + *last,
         " (the last, which torch's reader takes): readers disagree on the central directory");
  return size - window + *last;
}

Directory read_directory(HeaderReader& in, std::uint64_t end_offset) {
  in.seek(end_offset + 4, "zip end record");
  const std::uint16_t disk = in.u16("zip end record disk number");
  const std::uint16_t cd_disk = in.u16("zip end record directory disk");
  in.skip(2, "zip end record");
  Directory dir;
  dir.entries = in.u16("zip end record entry count");
  dir.size = in.u32("zip end record directory size");
  dir.offset = in.u32("zip end record directory offset");
  if (disk != 0 || cd_disk != 0)
    fail(ErrorCode::unsupported, in.file().path().string(), ": multi-disk zip archives are not supported");
  const bool zip64 = dir.entries == 0xFFFF || dir.size == 0xFFFFFFFF || dir.offset == 0xFFFFFFFF;
  // miniz takes the ZIP64 record whenever its locator precedes the end record, saturated fields
  // or not; so does lwload, or the two would read different directories.
  bool has_locator = false;
  if (end_offset >= kLocatorBytes) {
    in.seek(end_offset - kLocatorBytes, "ZIP64 end locator");
    has_locator = in.u32("ZIP64 end locator signature") == kZip64LocatorSignature;
  }
  if (!has_locator) {
    if (zip64) in.fail_at(end_offset, "ZIP64 end locator", "missing although the end record needs it");
    return dir;
  }
  in.seek(end_offset - kLocatorBytes + 8, "ZIP64 end locator");
  const std::uint64_t record = in.u64("ZIP64 end record offset");
  in.seek(record, "ZIP64 end record");
  if (in.u32("ZIP64 end record signature") != kZip64EndSignature) {
    if (!zip64) return dir;  // miniz ignores a locator without its record
    in.fail_at(record, "ZIP64 end record", "signature not found at the offset its locator names");
  }
  in.skip(8 + 2 + 2 + 4 + 4 + 8, "ZIP64 end record");  // size, versions, disks, entries on this disk
  dir.entries = in.u64("ZIP64 end record entry count");
  dir.size = in.u64("ZIP64 end record directory size");
  dir.offset = in.u64("ZIP64 end record directory offset");
  return dir;
}

// Reads the ZIP64 extra field's 64-bit values for the fields the entry marked 0xFFFFFFFF.
void read_zip64_extra(HeaderReader& in, std::uint64_t extra_end, const std::string& what,
                      std::uint64_t& size, std::uint64_t& compressed, std::uint64_t& local) {
  while (in.offset() + 4 <= extra_end) {
    const std::uint16_t id = in.u16(what);
    const std::uint16_t length = in.u16(what);
    const std::uint64_t field_end = checked_end(in.file().path(), what, in.offset(), length);
    if (field_end > extra_end) in.fail_at(in.offset() - 4, what, "extra field runs past its entry");
    if (id == kZip64ExtraId) {
      for (std::uint64_t* value : {&size, &compressed, &local}) {
        if (*value != 0xFFFFFFFF) continue;
        if (in.offset() + 8 > field_end) in.fail_at(in.offset(), what, "ZIP64 extra field too short");
        *value = in.u64(what);
      }
    }
    in.seek(field_end, what);
  }
}

}  // namespace

ZipArchive::ZipArchive(const RandomAccessFile& file) {
  const auto& path = file.path();
  const std::uint64_t file_size = file.size();
  HeaderReader in(file);
  const std::uint64_t end_offset = find_end_record(file);
  const Directory dir = read_directory(in, end_offset);
  check_extent(path, "zip central directory", dir.offset, dir.size, file_size);
  if (dir.entries > dir.size / kCentralBytes)
    fail(ErrorCode::bad_input, path.string(), ": zip central directory: ", dir.entries,
         " entries cannot fit in its ", dir.size, " bytes");

  in.seek(dir.offset, "zip central directory");
  const std::uint64_t dir_end = dir.offset + dir.size;
  for (std::uint64_t i = 0; i < dir.entries; ++i) {
    const std::uint64_t entry = in.offset();
    const std::string where = "zip directory entry #" + std::to_string(i);
    if (entry + kCentralBytes > dir_end) in.fail_at(entry, where, "runs past the central directory");
    if (in.u32(where) != kCentralSignature) in.fail_at(entry, where, "bad signature");
    in.skip(4, where);  // versions
    const std::uint16_t flags = in.u16(where);
    const std::uint16_t method = in.u16(where);
    in.skip(8, where);  // time, date, crc
    std::uint64_t compressed = in.u32(where);
    std::uint64_t size = in.u32(where);
    const std::uint16_t name_length = in.u16(where);
    const std::uint16_t extra_length = in.u16(where);
    const std::uint16_t comment_length = in.u16(where);
    in.skip(8, where);  // disk, attributes
    std::uint64_t local = in.u32(where);
    ZipRecord record;
    record.name = in.string(name_length, where);
    const std::string what = "zip record '" + record.name + "'";
    const std::uint64_t extra_end = in.offset() + extra_length;
    read_zip64_extra(in, extra_end, what, size, compressed, local);
    in.seek(extra_end, what);
    in.skip(comment_length, what);
    if (in.offset() > dir_end) in.fail_at(entry, what, "directory entry runs past the central directory");

    if (flags & kEncryptedFlag)
      fail(ErrorCode::unsupported, path.string(), ": ", what, " is encrypted; lwload maps stored records only");
    record.stored = method == kStored;
    if (record.stored && compressed != size)
      in.fail_at(entry, what, "stored record has compressed size ", compressed, " != size ", size);
    if (!by_name_.emplace(record.name, records_.size()).second) in.fail_at(entry, what, "the name appears twice");

    // The data follows the local header, whose name and extra lengths are its own. Read with one
    // small pread each, not through `in`: seeking its buffer away and back would refetch a whole
    // buffer per record (a 50,000-tensor checkpoint read 6.5 GB that way).
    check_extent(path, what + " local header", local, kLocalBytes, file_size);
    std::array<std::byte, kLocalBytes> header;
    file.read_exact(local, header, what + " local header");
    if (load_le<std::uint32_t>(header.data()) != kLocalSignature)
      in.fail_at(local, what, "no local header at the offset the directory names");
    const std::uint64_t local_name = load_le<std::uint16_t>(header.data() + 26);
    const std::uint64_t local_extra = load_le<std::uint16_t>(header.data() + 28);
    record.data_offset = local + kLocalBytes + local_name + local_extra;
    record.size = record.stored ? size : compressed;  // a compressed record's bytes as they lie in the file
    check_extent(path, what + " data", record.data_offset, record.size, file_size);
    records_.push_back(std::move(record));
  }
}

const ZipRecord* ZipArchive::find(std::string_view name) const noexcept {
  const auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : &records_[it->second];
}

}  // namespace lwload::formats
