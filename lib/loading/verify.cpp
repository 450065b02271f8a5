// lwload::verify: every loaded tensor read back from the device and compared with the file, a few
// MiB at a time, so verifying a large model costs bounded host memory.
#include <algorithm>
#include <cstring>
#include <map>

#include "formats/decode/encoded.hpp"
#include "loading/setup.hpp"
#include "lwload/error.hpp"
#include "lwload/loader.hpp"

namespace lwload {
namespace {

constexpr std::uint64_t kVerifyChunk = 4ull << 20;

[[noreturn]] void mismatch(const TensorInfo& t, std::uint64_t at, std::span<const std::byte> expected,
                           std::span<const std::byte> got) {
  const auto diff = std::mismatch(expected.begin(), expected.end(), got.begin());
  const auto i = static_cast<std::uint64_t>(diff.first - expected.begin());
  fail(ErrorCode::device, "verify: tensor '", t.name, "' differs from the file at byte ", at + i, " of ", t.bytes,
       " (file 0x", std::hex, static_cast<unsigned>(expected[i]), ", device 0x", static_cast<unsigned>(got[i]), ")");
}

void read_back(const Weights& weights, const TensorHandle& h, std::uint64_t offset, std::span<std::byte> dst) {
  try {
    weights.read_back(h, offset, dst);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::unsupported)
      fail(ErrorCode::unsupported, "device ", weights.device().id(), " cannot read tensors back: not verifiable (",
           e.what(), ")");
    throw;
  }
}

}  // namespace

VerifyReport verify(const Weights& weights) {
  const Manifest& manifest = weights.manifest();
  std::vector<bool> checked(manifest.files.size());
  const auto file = [&](std::uint32_t index) -> const RandomAccessFile& {
    const RandomAccessFile* loaded = weights.file(index);
    if (!loaded) fail(ErrorCode::usage, "verify: the load read nothing from ", manifest.files.at(index).string());
    if (!checked[index]) {
      // A rewritten or truncated file proves nothing about the device's bytes (and would fault
      // zero-copy tensors read through their mapping). The load's own open file is compared, so a
      // path renamed over since is not "another file": these are the bytes that were loaded.
      loading::fail_if_changed(manifest.files.at(index), weights.file_identities().at(index), loaded->identity(),
                               "it was loaded", "verify compares nothing");
      checked[index] = true;
    }
    return *loaded;
  };

  VerifyReport report;
  std::vector<std::byte> expected, got;
  for (const TensorHandle& h : weights.tensors()) {
    if (!h.buffer) continue;
    const TensorInfo& t = *h.info;
    for (const Piece& p : t.pieces) (void)file(p.file);  // identity first: before reading any mapping
    if (t.encoding != Encoding::raw) {
      std::uint64_t encoded_size = 0;
      for (const Piece& p : t.pieces) encoded_size += p.length;
      std::vector<std::byte> encoded(encoded_size);
      std::uint64_t at = 0;
      for (const Piece& p : t.pieces) {
        file(p.file).read_exact(p.offset, std::span(encoded).subspan(at, p.length), str("tensor '", t.name, "' data"));
        at += p.length;
      }
      // The load's decode (encoded + decoded bytes, which the plan checked fit), and the device's
      // bytes read back a chunk at a time beside it.
      std::vector<std::byte> decoded(t.bytes);
      formats::decode_tensor(t, encoded, decoded, manifest.files.at(t.pieces.empty() ? 0 : t.pieces[0].file));
      for (std::uint64_t done = 0; done < t.bytes;) {
        const std::uint64_t n = std::min(kVerifyChunk, t.bytes - done);
        got.resize(n);
        read_back(weights, h, done, got);
        const auto expected_chunk = std::span<const std::byte>(decoded).subspan(done, n);
        if (std::memcmp(expected_chunk.data(), got.data(), n) != 0) mismatch(t, done, expected_chunk, got);
        done += n;
      }
    } else {
      std::uint64_t tensor_offset = 0;
      for (const Piece& p : t.pieces) {
        for (std::uint64_t done = 0; done < p.length;) {
          const std::uint64_t n = std::min(kVerifyChunk, p.length - done);
          expected.resize(n);
          got.resize(n);
          file(p.file).read_exact(p.offset + done, expected, str("tensor '", t.name, "' data"));
          read_back(weights, h, tensor_offset, got);
          if (std::memcmp(expected.data(), got.data(), n) != 0) mismatch(t, tensor_offset, expected, got);
          done += n;
          tensor_offset += n;
        }
      }
    }
    ++report.tensors;
    report.bytes += t.bytes;
  }
  return report;
}

}  // namespace lwload
