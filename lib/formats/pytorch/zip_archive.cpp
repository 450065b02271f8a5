// Zip central directory reader (APPNOTE.TXT 6.3): end of central directory record, ZIP64 end
// record via its locator, central directory entries with their ZIP64 extra fields, then each local
// header (whose name and extra lengths may differ from the directory's) to find where data starts.
#include "formats/pytorch/zip_archive.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <span>
#include <string_view>

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
constexpr std::uint64_t kEndBytes = 22;  // end record without its comment
constexpr std::uint64_t kLocatorBytes = 20;
constexpr std::uint64_t kMaxComment = 0xFFFF;
constexpr std::uint64_t kCentralBytes = 46;  // fixed part of a directory entry
constexpr std::uint64_t kLocalBytes = 30;    // fixed part of a local header
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
    fail(ErrorCode::bad_input, file.path().string(), ": no zip end of central directory record in the last ", window,
         " bytes (truncated archive?)");
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
void read_zip64_extra(HeaderReader& in, std::uint64_t extra_end, const std::string& what, std::uint64_t& size,
                      std::uint64_t& compressed, std::uint64_t& local) {
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
    fail(ErrorCode::bad_input, path.string(), ": zip central directory: ", dir.entries, " entries cannot fit in its ",
         dir.size, " bytes");

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
    record.method = method;
    record.uncompressed = size;
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

namespace {

// RFC 1951 inflate, after Mark Adler's puff.c: canonical Huffman codes decoded a bit at a time.
class Inflater {
 public:
  Inflater(std::span<const std::byte> in, std::uint64_t limit, const std::string& what)
      : in_(in), limit_(limit), what_(what) {}

  std::vector<std::byte> run() {
    bool last = false;
    do {
      last = bits(1) != 0;
      switch (bits(2)) {
        case 0: stored(); break;
        case 1: fixed(); break;
        case 2: dynamic(); break;
        default: bad("block type 3");
      }
    } while (!last);
    return std::move(out_);
  }

 private:
  struct Huffman {
    std::array<std::uint16_t, 16> count{};
    std::array<std::uint16_t, 288> symbol{};
  };

  [[noreturn]] void bad(std::string_view why) const {
    fail(ErrorCode::bad_input, what_, ": corrupt deflate stream (", why, ")");
  }
  unsigned bits(unsigned need) {
    std::uint32_t value = buffer_;
    while (count_ < need) {
      if (pos_ == in_.size()) bad("it ends early");
      value |= std::uint32_t{std::to_integer<std::uint8_t>(in_[pos_++])} << count_;
      count_ += 8;
    }
    buffer_ = value >> need;
    count_ -= need;
    return value & ((std::uint32_t{1} << need) - 1);
  }
  void put(std::byte b) {
    if (out_.size() >= limit_) bad("it inflates past the size its directory entry gives");
    out_.push_back(b);
  }
  void stored() {
    buffer_ = 0;
    count_ = 0;
    if (in_.size() - pos_ < 4) bad("a stored block ends early");
    const unsigned length = std::to_integer<unsigned>(in_[pos_]) | std::to_integer<unsigned>(in_[pos_ + 1]) << 8;
    const unsigned check = std::to_integer<unsigned>(in_[pos_ + 2]) | std::to_integer<unsigned>(in_[pos_ + 3]) << 8;
    pos_ += 4;
    if (length != (~check & 0xffffu)) bad("a stored block's length check");
    if (in_.size() - pos_ < length) bad("a stored block ends early");
    for (unsigned i = 0; i < length; ++i) put(in_[pos_++]);
  }
  int decode(const Huffman& h) {
    int code = 0, first = 0, index = 0;
    for (int length = 1; length <= 15; ++length) {
      code |= static_cast<int>(bits(1));
      const int count = h.count[static_cast<std::size_t>(length)];
      if (code - count < first) return h.symbol[static_cast<std::size_t>(index + (code - first))];
      index += count;
      first += count;
      first <<= 1;
      code <<= 1;
    }
    bad("a code not in its table");
  }
  // Builds the decoding table from code lengths; returns 0 for a complete code, > 0 incomplete,
  // < 0 over-subscribed.
  static int construct(Huffman& h, const std::uint16_t* length, int n) {
    h.count.fill(0);
    for (int s = 0; s < n; ++s) ++h.count[length[s]];
    if (h.count[0] == n) return 0;
    int left = 1;
    for (int len = 1; len <= 15; ++len) {
      left <<= 1;
      left -= h.count[static_cast<std::size_t>(len)];
      if (left < 0) return left;
    }
    std::array<std::uint16_t, 16> offsets{};
    for (std::size_t len = 1; len < 15; ++len)
      offsets[len + 1] = static_cast<std::uint16_t>(offsets[len] + h.count[len]);
    for (int s = 0; s < n; ++s)
      if (length[s] != 0) h.symbol[offsets[length[s]]++] = static_cast<std::uint16_t>(s);
    return left;
  }
  void codes(const Huffman& lengths, const Huffman& distances) {
    static constexpr std::uint16_t kBase[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                                31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
    static constexpr std::uint8_t kExtra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                                2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
    static constexpr std::uint16_t kDistBase[30] = {1,    2,    3,    4,    5,    7,    9,    13,    17,    25,
                                                    33,   49,   65,   97,   129,  193,  257,  385,   513,   769,
                                                    1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
    static constexpr std::uint8_t kDistExtra[30] = {0, 0, 0, 0, 1, 1, 2, 2,  3,  3,  4,  4,  5,  5,  6,
                                                    6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};
    for (;;) {
      int symbol = decode(lengths);
      if (symbol < 256) {
        put(static_cast<std::byte>(symbol));
        continue;
      }
      if (symbol == 256) return;
      symbol -= 257;
      if (symbol >= 29) bad("a length symbol past 285");
      const unsigned length = kBase[symbol] + bits(kExtra[symbol]);
      symbol = decode(distances);
      if (symbol >= 30) bad("a distance symbol past 29");
      const std::uint64_t distance = kDistBase[symbol] + bits(kDistExtra[symbol]);
      if (distance > out_.size()) bad("a distance before the start");
      for (unsigned i = 0; i < length; ++i) put(out_[out_.size() - distance]);
    }
  }
  void fixed() {
    if (!fixed_built_) {
      std::array<std::uint16_t, 288> length{};
      for (std::size_t s = 0; s < 288; ++s) length[s] = s < 144 ? 8 : s < 256 ? 9 : s < 280 ? 7 : 8;
      construct(fixed_lengths_, length.data(), 288);
      std::array<std::uint16_t, 30> distance;
      distance.fill(5);
      construct(fixed_distances_, distance.data(), 30);
      fixed_built_ = true;
    }
    codes(fixed_lengths_, fixed_distances_);
  }
  void dynamic() {
    static constexpr std::uint8_t kOrder[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
    const int nlen = static_cast<int>(bits(5)) + 257, ndist = static_cast<int>(bits(5)) + 1;
    const int ncode = static_cast<int>(bits(4)) + 4;
    if (nlen > 286 || ndist > 30) bad("too many length or distance codes");
    std::array<std::uint16_t, 320> lengths{};
    for (int i = 0; i < ncode; ++i) lengths[kOrder[i]] = static_cast<std::uint16_t>(bits(3));
    Huffman lencode, distcode;
    if (construct(lencode, lengths.data(), 19) != 0) bad("an incomplete code length code");
    int index = 0;
    while (index < nlen + ndist) {
      int symbol = decode(lencode);
      if (symbol < 16) {
        lengths[static_cast<std::size_t>(index++)] = static_cast<std::uint16_t>(symbol);
        continue;
      }
      std::uint16_t length = 0;
      if (symbol == 16) {
        if (index == 0) bad("a repeat with nothing before it");
        length = lengths[static_cast<std::size_t>(index - 1)];
        symbol = 3 + static_cast<int>(bits(2));
      } else if (symbol == 17) {
        symbol = 3 + static_cast<int>(bits(3));
      } else {
        symbol = 11 + static_cast<int>(bits(7));
      }
      if (index + symbol > nlen + ndist) bad("too many lengths");
      while (symbol-- > 0) lengths[static_cast<std::size_t>(index++)] = length;
    }
    if (lengths[256] == 0) bad("no end-of-block code");
    int err = construct(lencode, lengths.data(), nlen);
    if (err < 0 || (err > 0 && nlen != lencode.count[0] + lencode.count[1])) bad("an incomplete literal/length code");
    err = construct(distcode, lengths.data() + nlen, ndist);
    if (err < 0 || (err > 0 && ndist != distcode.count[0] + distcode.count[1])) bad("an incomplete distance code");
    codes(lencode, distcode);
  }

  std::span<const std::byte> in_;
  std::uint64_t limit_;
  const std::string& what_;
  std::size_t pos_ = 0;
  std::uint32_t buffer_ = 0;
  unsigned count_ = 0;
  std::vector<std::byte> out_;
  bool fixed_built_ = false;
  Huffman fixed_lengths_, fixed_distances_;
};

}  // namespace

std::vector<std::byte> read_record(const RandomAccessFile& file, const ZipRecord& record, std::uint64_t limit) {
  const std::string what = file.path().string() + ": zip record '" + record.name + "'";
  if (record.method != kStored && record.method != 8)
    fail(ErrorCode::unsupported, what, ": compression method ", record.method,
         " (lwload reads stored and deflated records)");
  if (record.uncompressed > limit || record.size > limit)
    fail(ErrorCode::unsupported, what, ": ", std::max(record.uncompressed, record.size),
         " bytes exceed lwload's limit of ", limit, " bytes for it");
  std::vector<std::byte> bytes(static_cast<std::size_t>(record.size));
  file.read_exact(record.data_offset, bytes, "zip record '" + record.name + "'");
  if (record.method == kStored) return bytes;
  auto out = Inflater(bytes, record.uncompressed, what).run();
  if (out.size() != record.uncompressed)
    fail(ErrorCode::bad_input, what, ": inflates to ", out.size(), " bytes, its directory entry says ",
         record.uncompressed);
  return out;
}

const ZipRecord* ZipArchive::find(std::string_view name) const noexcept {
  const auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : &records_[it->second];
}

}  // namespace lwload::formats
