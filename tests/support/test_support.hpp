// Shared test helpers: where the test data (tests/data) is, scratch folders that clean up after
// themselves, and small file writers. Every suite links this with doctest's main.
#pragma once

#include <concepts>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <doctest/doctest.h>

#include "lwload/error.hpp"
#include "lwload/file_system.hpp"
#include "lwload/loader.hpp"
#include "lwload/manifest.hpp"

namespace lwload::test {

// tests/data, or LWLOAD_TESTDATA (set by meson; -Dtestdata=DIR moves it).
std::filesystem::path testdata();
// Every model file in testdata() (safetensors, GGUF, ONNX, TFLite, TFJS model.json), sorted: the
// layouts the formats' own writers produce.
std::vector<std::filesystem::path> real_model_files();

// A fresh folder under the build's scratch space, removed (with its contents) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(std::string_view name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

void write_file(const std::filesystem::path& path, std::span<const std::byte> bytes);
void write_file(const std::filesystem::path& path, std::string_view text);
std::vector<std::byte> read_file(const std::filesystem::path& path);
// Bytes [offset, offset+length) of a file.
std::vector<std::byte> read_range(const std::filesystem::path& path, std::uint64_t offset, std::uint64_t length);

// The lwload::Error `action` throws; the test fails when it throws nothing (or something else).
template <std::invocable F>
Error error_of(F&& action) {
  try {
    action();
  } catch (const Error& e) {
    return e;
  }
  FAIL("expected lwload::Error");
  return Error(ErrorCode::usage, "unreachable");
}

// Runs a shell command, returns its exit status; stdout is captured into *out when given.
int run_command(const std::string& command, std::string* out = nullptr);

// The POSIX file system, counting the bytes read through the seam: the "headers only" measurement.
class CountingFileSystem final : public FileSystem {
 public:
  std::unique_ptr<RandomAccessFile> open(const std::filesystem::path& path, FileOpenFlags flags = {}) override;
  bool is_directory(const std::filesystem::path& path) override { return inner_->is_directory(path); }
  bool exists(const std::filesystem::path& path) override { return inner_->exists(path); }
  std::uint64_t bytes_read = 0;

 private:
  std::shared_ptr<FileSystem> inner_ = posix_file_system();
};

// Runs the lwload tool (LWLOAD_EXE, set by meson) with `args`; returns its exit status, stdout into
// *out, stderr discarded. Throws when LWLOAD_EXE is not set (the suite was not run by meson test).
int run_lwload(const std::string& args, std::string* out = nullptr);

// Prerequisites a test needs from its environment (a device, a layer, the CLI). LWLOAD_REQUIRE
// lists, comma-separated, those a run must have ("all" for every one); CI sets it, so a missing
// runtime fails there instead of passing silently. Names: exe (LWLOAD_EXE, the CLI), opencl,
// vulkan, validation (the Khronos validation layer), cuda_sim, level_zero_sim, xrt_sim, rsvg.
bool required(std::string_view what);
// True when `present`. Otherwise false after a visible "SKIP <what>: <why>" message — or, when
// LWLOAD_REQUIRE names `what`, a test failure saying what is missing.
bool available(std::string_view what, bool present, std::string_view why);
// available("exe", ...) for LWLOAD_EXE.
bool have_exe();

// Built with AddressSanitizer (the clang ASan/UBSan build CI also runs the suites in): its shadow
// memory is terabytes of reserved address space, so a case that sets RLIMIT_AS cannot run there.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

// For a test that sets RLIMIT_AS (or runs commands under `ulimit -v`): false after a visible
// "SKIP rlimit_as" in a build with AddressSanitizer.
bool can_limit_address_space();

// /usr/bin/python3 (Debian's, with python3-onnx and numpy), for tests that use reference writers.
inline constexpr const char* kPython = "/usr/bin/python3";

// Checks a loaded model against an independent reader, tensor by tensor and in order: runs
// tests/real/reference_<format>.py (python3-onnx, torch, ...) on `model` and compares each
// tensor's name, dtype and shape with the manifest and its bytes with what the device holds
// (read back). The reference's tensor count must equal the manifest's; returns it.
// `options` are passed to the script (reference_tflite.py --densify).
std::size_t check_against_reference(const std::filesystem::path& model, const std::string& format,
                                    const Manifest& manifest, const Weights& weights, const std::string& options = "");

// n bytes counting up from `start` (wrapping at 256): data whose every offset is recognisable.
std::vector<std::byte> counting_bytes(std::size_t n, std::uint8_t start = 0);

// counting_bytes with every 256-byte block shifted by a different amount: a byte read from the
// wrong offset (even one a multiple of 256 away) differs.
std::vector<std::byte> marked_bytes(std::size_t n, std::uint8_t start = 0);
// bytes[offset, offset + length), copied.
std::vector<std::byte> slice(const std::vector<std::byte>& bytes, std::uint64_t offset, std::uint64_t length);

// Little-endian append helpers for building binary headers by hand.
void put_u8(std::vector<std::byte>& out, std::uint8_t v);
void put_u16(std::vector<std::byte>& out, std::uint16_t v);
void put_u32(std::vector<std::byte>& out, std::uint32_t v);
void put_u64(std::vector<std::byte>& out, std::uint64_t v);
void put_bytes(std::vector<std::byte>& out, std::string_view s);

}  // namespace lwload::test
