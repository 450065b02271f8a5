#include "formats/header_reader.hpp"

#include "formats/varint.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

namespace lwload::formats {

HeaderReader::HeaderReader(const RandomAccessFile& file, std::uint64_t begin)
    : HeaderReader(file, begin, file.size()) {}

HeaderReader::HeaderReader(const RandomAccessFile& file, std::uint64_t begin, std::uint64_t end)
    : file_(file), pos_(begin), end_(end) {
  if (begin > end) fail_at(begin, "header", "starts past the end of the file (", end, " bytes)");
}

void HeaderReader::need(std::uint64_t n, std::string_view what) const {
  if (n > remaining()) fail_at(pos_, what, "needs ", n, " bytes but only ", remaining(), " remain (file truncated?)");
}

const std::byte* HeaderReader::fetch(std::size_t n, std::string_view what) {
  need(n, what);
  if (pos_ < buffer_start_ || pos_ + n > buffer_start_ + buffer_len_) {
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(buffer_.size(), end_ - pos_));
    std::size_t got = 0;
    while (got < want) {
      const std::size_t r = file_.read_at(pos_ + got, std::span(buffer_).subspan(got, want - got));
      if (r == 0) break;
      got += r;
    }
    fetched_ += got;
    buffer_start_ = pos_;
    buffer_len_ = got;
    if (got < n) fail_at(pos_, what, "the file ended after ", got, " of ", n, " bytes");
  }
  return buffer_.data() + (pos_ - buffer_start_);
}

template <typename T>
T HeaderReader::scalar(std::string_view what) {
  const auto v = load_le<T>(fetch(sizeof(T), what));
  pos_ += sizeof(T);
  return v;
}

std::uint8_t HeaderReader::u8(std::string_view what) { return scalar<std::uint8_t>(what); }
std::uint16_t HeaderReader::u16(std::string_view what) { return scalar<std::uint16_t>(what); }
std::uint32_t HeaderReader::u32(std::string_view what) { return scalar<std::uint32_t>(what); }
std::uint64_t HeaderReader::u64(std::string_view what) { return scalar<std::uint64_t>(what); }
float HeaderReader::f32(std::string_view what) { return std::bit_cast<float>(u32(what)); }
double HeaderReader::f64(std::string_view what) { return std::bit_cast<double>(u64(what)); }

std::uint64_t HeaderReader::varint(std::string_view what) {
  const auto available = static_cast<std::size_t>(std::min<std::uint64_t>(10, remaining()));
  const Varint v = decode_varint({fetch(std::max<std::size_t>(available, 1), what), available});
  switch (v.status) {
    case Varint::Status::ok: break;
    case Varint::Status::truncated:
      need(available + 1, what);  // throws "needs .. bytes .. remain"
      break;
    case Varint::Status::overflow: fail_at(pos_, what, "varint overflows 64 bits");
    case Varint::Status::too_long: fail_at(pos_, what, "varint longer than 10 bytes");
  }
  pos_ += v.length;
  return v.value;
}

std::string HeaderReader::string(std::uint64_t n, std::string_view what) {
  need(n, what);
  std::string out(static_cast<std::size_t>(n), '\0');
  read(std::as_writable_bytes(std::span(out)), what);
  return out;
}

void HeaderReader::read(std::span<std::byte> dst, std::string_view what) {
  need(dst.size(), what);
  std::size_t done = 0;
  while (done < dst.size()) {
    const std::size_t chunk = std::min(dst.size() - done, buffer_.size());
    std::memcpy(dst.data() + done, fetch(chunk, what), chunk);
    pos_ += chunk;
    done += chunk;
  }
}

void HeaderReader::skip(std::uint64_t n, std::string_view what) {
  need(n, what);
  pos_ += n;
}

void HeaderReader::seek(std::uint64_t offset, std::string_view what) {
  if (offset > end_) fail_at(offset, what, "lies past the end of the file (", end_, " bytes)");
  pos_ = offset;
}

}  // namespace lwload::formats
