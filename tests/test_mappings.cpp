// The mappings on their own (io/mmap_mapping.hpp, io/memory_mapping.hpp) and the page-cache counts
// (io/page_cache.hpp), without a load: mmap mappings of real files this suite writes start on the
// page (core/align's page_size(), also a larger one set through its seam) below an unaligned
// range and hold the file's bytes; a range past the end is the one error RandomAccessFile::map
// gives; resident counts and make_resident on a mapping; an in-memory mapping keeps its owner alive
// exactly as long as it lives. Page-cache assertions are made only where the pages are pinned
// (mlock) or their absence was seen first (mincore): nothing here depends on eviction or timing.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/align.hpp"
#include "io/memory_mapping.hpp"
#include "io/mmap_mapping.hpp"
#include "io/page_cache.hpp"
#include "lwload/error.hpp"
#include "lwload/file_system.hpp"
#include "lwload/memory_file_system.hpp"
#include "support/test_support.hpp"

using namespace lwload;

namespace {

std::vector<std::byte> copy(const std::byte* p, std::size_t n) { return {p, p + n}; }

// page_size() set to `bytes` while it lives, then back to what it was (LWLOAD_PAGE_SIZE may have
// set it for the whole suite).
class PageSizeAs {
 public:
  explicit PageSizeAs(std::size_t bytes) : before_(page_size()), set_(testing::set_page_size(bytes)) {}
  ~PageSizeAs() { testing::set_page_size(before_ == system_page_size() ? 0 : before_); }
  bool set() const { return set_; }

 private:
  std::size_t before_;
  bool set_;
};

// The page span of mapping `offset, +length` of a file holding `bytes`: the mapping's bytes are the
// file's, and the mapping starts at the page_size() boundary at or below `offset` (the header's
// promise), so the bytes between that boundary and bytes() are mapped and are the file's too; and
// mmap maps whole system pages, so the rest of the last one is the file's.
void check_span(const RandomAccessFile& file, const std::vector<std::byte>& bytes, std::uint64_t offset,
                std::uint64_t length) {
  CAPTURE(offset);
  CAPTURE(length);
  CAPTURE(page_size());
  const auto mapping = file.map(offset, length);
  REQUIRE(mapping);
  CHECK(dynamic_cast<const MmapMapping*>(mapping.get()) != nullptr);
  const std::span<const std::byte> view = mapping->bytes();
  REQUIRE(view.size() == length);
  CHECK(copy(view.data(), view.size()) == test::slice(bytes, offset, length));
  const auto address = reinterpret_cast<std::uintptr_t>(view.data());
  // The kernel placed the mapping on one of its pages; bytes() is `offset` into lwload's page.
  CHECK(address % system_page_size() == offset % system_page_size());
  const std::uint64_t start = align_down(offset, page_size());
  // Mapped (mincore fails with ENOMEM on a page that is not) before it is read.
  const std::byte* first = view.data() - (offset - start);
  std::vector<unsigned char> in_core((offset - start) / system_page_size() + 1);
  REQUIRE(::mincore(const_cast<std::byte*>(first), offset - start + 1, in_core.data()) == 0);
  CHECK(copy(view.data() - (offset - start), offset - start) == test::slice(bytes, start, offset - start));
  const std::uint64_t end = std::min<std::uint64_t>(align_up(offset + length, system_page_size()), bytes.size());
  CHECK(copy(view.data() + length, end - offset - length) ==
        test::slice(bytes, offset + length, end - offset - length));
}

// Locks `span`'s pages in memory while it lives (the page cache cannot drop them); `locked()`
// false where RLIMIT_MEMLOCK or the sandbox refuses.
class Locked {
 public:
  explicit Locked(std::span<const std::byte> span) {
    const auto begin = align_down(reinterpret_cast<std::uintptr_t>(span.data()), system_page_size());
    const auto end = align_up(reinterpret_cast<std::uintptr_t>(span.data() + span.size()), system_page_size());
    addr_ = reinterpret_cast<void*>(begin);
    length_ = end - begin;
    locked_ = ::mlock(addr_, length_) == 0;
    if (!locked_) why_ = std::strerror(errno);
  }
  ~Locked() {
    if (locked_) ::munlock(addr_, length_);
  }
  bool locked() const { return locked_; }
  const std::string& why() const { return why_; }

 private:
  void* addr_ = nullptr;
  std::size_t length_ = 0;
  bool locked_ = false;
  std::string why_;
};

// Pages of `path`'s first `length` bytes in the page cache, as mincore(2) counts them itself.
std::size_t resident_pages(const std::filesystem::path& path, std::size_t length) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  void* map = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  REQUIRE(map != MAP_FAILED);
  std::vector<unsigned char> vec((length + system_page_size() - 1) / system_page_size());
  const int rc = ::mincore(map, length, vec.data());
  ::munmap(map, length);
  REQUIRE(rc == 0);
  std::size_t pages = 0;
  for (unsigned char v : vec) pages += v & 1;
  return pages;
}

}  // namespace

TEST_CASE("mappings: an mmap mapping holds the file's bytes and starts on the page below its range") {
  test::TempDir dir;
  const std::size_t page = page_size();
  const auto bytes = test::marked_bytes(3 * page + 777);
  test::write_file(dir / "f.bin", bytes);
  const auto file = posix_file_system()->open(dir / "f.bin");
  REQUIRE(file->size() == bytes.size());
  for (const auto& [offset, length] :
       std::vector<std::pair<std::uint64_t, std::uint64_t>>{{0, bytes.size()},
                                                            {1, 1},
                                                            {page - 1, 2},
                                                            {page, page},
                                                            {page + 123, 2 * page - 123},
                                                            {2 * page + 5, bytes.size() - 2 * page - 5},
                                                            {bytes.size() - 1, 1}})
    check_span(*file, bytes, offset, length);
  // An empty range maps nothing, at the end of the file too.
  for (const std::uint64_t offset : {std::uint64_t{0}, std::uint64_t{page + 1}, std::uint64_t{bytes.size()}}) {
    const auto empty = file->map(offset, 0);
    REQUIRE(empty);
    CHECK(empty->bytes().empty());
    CHECK(empty->resident_bytes() == 0);
  }
}

TEST_CASE("mappings: the page span follows core/align's page size (16 and 64 KiB, as on ARM kernels)") {
  for (const std::size_t asked : {std::size_t{16} << 10, std::size_t{64} << 10}) {
    CAPTURE(asked);
    PageSizeAs as(asked);
    if (!test::available("page_size", as.set(),
                         "this system's " + std::to_string(system_page_size()) + "-byte pages are larger than " +
                             std::to_string(asked)))
      continue;
    REQUIRE(page_size() == asked);
    test::TempDir dir;
    const auto bytes = test::marked_bytes(3 * asked + 999, 11);
    test::write_file(dir / "f.bin", bytes);
    const auto file = posix_file_system()->open(dir / "f.bin");
    // An offset a few system pages above a boundary: mapped from that boundary, not the system page.
    check_span(*file, bytes, asked + 3 * system_page_size() + 10, asked);
    check_span(*file, bytes, 2 * asked + asked / 2, asked / 2 + 999);
    check_span(*file, bytes, asked - 1, 2);
  }
}

TEST_CASE("mappings: a range past the end of the file is RandomAccessFile::map's one error, for every file") {
  test::TempDir dir;
  const auto bytes = test::marked_bytes(10000);
  test::write_file(dir / "f.bin", bytes);
  MemoryFileSystem memory;
  memory.add_file("m.bin", bytes);
  const auto posix_file = posix_file_system()->open(dir / "f.bin");
  const auto memory_file = memory.open("m.bin");
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  for (const RandomAccessFile* file : {static_cast<const RandomAccessFile*>(posix_file.get()),
                                       static_cast<const RandomAccessFile*>(memory_file.get())}) {
    CAPTURE(file->path());
    for (const auto& range : std::vector<std::pair<std::uint64_t, std::uint64_t>>{
             {9990, 11}, {10001, 0}, {0, 10001}, {kMax, 2}, {5000, kMax}, {kMax, kMax}}) {
      // Named copies, not a structured binding: clang 15 cannot capture one in a lambda.
      const std::uint64_t offset = range.first, length = range.second;
      CAPTURE(offset);
      CAPTURE(length);
      const Error e = test::error_of([&] { file->map(offset, length); });
      CHECK(e.code() == ErrorCode::bad_input);
      const std::string message = e.what();
      CHECK(message.find(file->path().string()) != std::string::npos);
      CHECK(message.find("extends past the end of the file (10000 bytes)") != std::string::npos);
      CHECK(message.find(std::to_string(offset)) != std::string::npos);
    }
    const auto last = file->map(9990, 10);  // the last bytes exactly: fine
    REQUIRE(last);
    CHECK(copy(last->bytes().data(), 10) == test::slice(bytes, 9990, 10));
  }
}

TEST_CASE("mappings: make_resident and resident_bytes on an mmap mapping") {
  test::TempDir dir;
  const std::size_t page = system_page_size();
  const auto bytes = test::marked_bytes(8 * page + 100, 21);
  test::write_file(dir / "f.bin", bytes);
  const auto file = posix_file_system()->open(dir / "f.bin");
  for (const MapAccess access : {MapAccess::normal, MapAccess::random, MapAccess::resident}) {
    CAPTURE(static_cast<int>(access));
    const std::uint64_t offset = page / 2, length = 6 * page + 50;
    const auto mapping = file->map(offset, length, access);
    REQUIRE(mapping);
    mapping->will_need(0, length);       // advice only: nothing to assert but that it is harmless
    mapping->will_need(length + 5, 10);  // past the end: ignored
    mapping->make_resident(0, length);
    mapping->make_resident(length, 0);
    CHECK(copy(mapping->bytes().data(), length) == test::slice(bytes, offset, length));
    // Outside the mapping: a usage error naming the file, never a read past it.
    const Error outside = test::error_of([&] { mapping->make_resident(1, length); });
    CHECK(outside.code() == ErrorCode::usage);
    CHECK(std::string(outside.what()).find("f.bin") != std::string::npos);
    const Locked pinned(mapping->bytes());
    if (!test::available("mlock", pinned.locked(), "mlock: " + pinned.why())) continue;
    // Every byte is in memory while locked; the count is of bytes() (not of the whole pages around
    // it, which are larger).
    CHECK(mapping->resident_bytes() == length);
  }
}

TEST_CASE("mappings: make_resident on a file truncated after it was mapped is an Error(io), not a signal") {
  test::TempDir dir;
  // lwload's page: make_resident populates whole ones, and under a larger page size set through
  // core/align's seam a page the truncation cut short still reaches past the (4 KiB-paged) end.
  const std::size_t page = page_size();
  const auto bytes = test::marked_bytes(6 * page, 2);
  test::write_file(dir / "shrinks.bin", bytes);
  const auto file = posix_file_system()->open(dir / "shrinks.bin");
  for (const MapAccess access : {MapAccess::normal, MapAccess::resident}) {
    CAPTURE(static_cast<int>(access));
    test::write_file(dir / "shrinks.bin", bytes);
    const auto mapping = file->map(0, bytes.size(), access);
    REQUIRE(mapping);
    std::filesystem::resize_file(dir / "shrinks.bin", 2 * page);
    mapping->make_resident(0, 2 * page);  // what the file still holds reads fine
    const Error lost = test::error_of([&] { mapping->make_resident(0, bytes.size()); });
    CHECK(lost.code() == ErrorCode::io);
    CHECK(std::string(lost.what()).find("shrinks.bin") != std::string::npos);
    CHECK(std::string(lost.what()).find("truncated") != std::string::npos);
  }
}

TEST_CASE("mappings: an in-memory mapping keeps its owner alive exactly while it lives") {
  SUBCASE("owned") {
    auto owner = std::make_shared<std::vector<std::byte>>(test::marked_bytes(5000, 4));
    const std::weak_ptr<std::vector<std::byte>> watch = owner;
    const std::span<const std::byte> view(owner->data() + 100, 4000);
    auto mapping = std::make_unique<io::MemoryMapping>(view, owner);
    owner.reset();
    CHECK_FALSE(watch.expired());                   // the mapping holds it
    CHECK(mapping->bytes().data() == view.data());  // the bytes themselves, not a copy
    CHECK(mapping->bytes().size() == 4000);
    CHECK(copy(mapping->bytes().data(), 4000) == test::slice(test::marked_bytes(5000, 4), 100, 4000));
    CHECK(mapping->resident_bytes() == 4000);
    mapping->make_resident(0, 4000);
    mapping.reset();
    CHECK(watch.expired());  // released with the mapping
  }
  SUBCASE("borrowed") {
    const auto buffer = test::marked_bytes(300, 8);
    const io::MemoryMapping mapping(std::span<const std::byte>(buffer).subspan(10, 200));
    CHECK(mapping.bytes().data() == buffer.data() + 10);
    CHECK(mapping.bytes().size() == 200);
    CHECK(mapping.resident_bytes() == 200);
  }
  SUBCASE("a MemoryFileSystem file's mapping outlives the file and its file system") {
    const auto bytes = test::marked_bytes(20000, 6);
    std::shared_ptr<const FileMapping> mapping;
    {
      auto fs = std::make_unique<MemoryFileSystem>();
      fs->add_file("m.bin", bytes);
      const auto file = fs->open("m.bin");
      mapping = file->map(1234, 5678);
      REQUIRE(mapping);
      CHECK(dynamic_cast<const io::MemoryMapping*>(mapping.get()) != nullptr);
      fs->add_file("m.bin", test::marked_bytes(20000, 99));  // replaced in the file system meanwhile
    }
    CHECK(copy(mapping->bytes().data(), mapping->bytes().size()) == test::slice(bytes, 1234, 5678));
    CHECK(mapping->resident_bytes() == 5678);
  }
}

TEST_CASE("mappings: page-cache counts of a file whose pages are pinned, or seen gone") {
  test::TempDir dir;
  const std::size_t page = system_page_size();
  const auto bytes = test::marked_bytes(16 * page + 300, 13);
  test::write_file(dir / "f.bin", bytes);
  const auto file = posix_file_system()->open(dir / "f.bin");
  const std::uint64_t size = bytes.size();

  // Bounds that hold whatever the page cache does.
  CHECK(io::cached_bytes(*file, 0, 0) == 0);
  CHECK(io::cached_bytes(*file, 0, size) <= size);
  CHECK(io::count_cached(*file, 0, size).bytes <= size);
  CHECK(io::count_cached(*file, 0, size).exact());  // small ranges are always counted exactly

  // A file without a descriptor (in memory) counts as cached.
  MemoryFileSystem memory;
  memory.add_file("m.bin", bytes);
  const auto in_memory = memory.open("m.bin");
  CHECK(io::cached_bytes(*in_memory, 10, 1000) == 1000);
  CHECK(io::count_cached(*in_memory, 0, size).bytes == size);
  CHECK(io::count_cached(*in_memory, 0, size).exact());

  SUBCASE("pinned: every byte counts, an unaligned range by its own length") {
    const auto mapping = file->map(0, size);
    REQUIRE(mapping);
    const Locked pinned(mapping->bytes());
    if (!test::available("mlock", pinned.locked(), "mlock: " + pinned.why())) return;
    CHECK(io::cached_bytes(*file, 0, size) == size);
    CHECK(io::cached_bytes(*file, 100, 1000) == 1000);
    CHECK(io::cached_bytes(*file, page - 1, 2) == 2);
    CHECK(io::cached_bytes(*file, 3 * page, 5 * page) == 5 * page);
    const io::CachedCount counted = io::count_cached(*file, 0, size);
    CHECK(counted.bytes == size);
    CHECK(counted.exact());
    CHECK(io::count_cached(*file, 7, size - 7).bytes == size - 7);
  }
  SUBCASE("dropped: none counts, once mincore saw them gone") {
    {
      const int fd = ::open((dir / "f.bin").c_str(), O_RDONLY | O_CLOEXEC);
      REQUIRE(fd >= 0);
      ::fdatasync(fd);  // clean pages can be dropped, dirty ones not
      ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
      ::close(fd);
    }
    const std::size_t left = resident_pages(dir / "f.bin", size);
    if (!test::available("page_cache_drop", left == 0,
                         std::to_string(left) + " pages still cached after POSIX_FADV_DONTNEED"))
      return;
    CHECK(io::cached_bytes(*file, 0, size) == 0);
    CHECK(io::count_cached(*file, 0, size).bytes == 0);
    CHECK(io::cached_bytes(*file, 100, 1000) == 0);

    // Four kernel pages brought back and pinned, lwload's page set larger than the kernel's: both
    // counts are in the kernel's pages (cachestat and mincore count those), so they agree.
    // (A mapping of our own, MADV_RANDOM before the pages fault in: no readahead brings in more.)
    const int fd = ::open((dir / "f.bin").c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    void* four = ::mmap(nullptr, 4 * page, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    REQUIRE(four != MAP_FAILED);
    const std::unique_ptr<void, std::function<void(void*)>> unmap(four, [&](void* p) { ::munmap(p, 4 * page); });
    ::madvise(four, 4 * page, MADV_RANDOM);
    const Locked pinned(std::span<const std::byte>(static_cast<const std::byte*>(four), 4 * page));
    const bool exactly_four = resident_pages(dir / "f.bin", size) == 4;
    if (!test::available("mlock", pinned.locked(), "mlock: " + pinned.why()) ||
        !test::available("page_cache_exact", exactly_four, "readahead brought in more than the four pages"))
      return;
    const std::size_t larger = 16 * page;
    if (!test::available("page_size_seam", larger <= (std::size_t{1} << 20), "system pages too large")) return;
    const PageSizeAs as(larger);
    CHECK(io::cached_bytes(*file, 0, size) == 4 * page);
    CHECK(io::count_cached(*file, 0, size).bytes == 4 * page);
  }
}
