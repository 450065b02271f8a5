// The read engines on their own (io/read_engine.hpp), without a load: the pread pool and io_uring
// (where the kernel lets this process set up a ring) reading real files this suite writes. Each
// read's bytes land at its offset, in its buffer and nowhere else; every read completes exactly
// once, on the thread that runs the completions' io_context; the end of a file is a short count,
// never a full buffer; an OS error is an Error(io) naming the file; O_DIRECT works with aligned
// reads where the file system allows it. The engine names and the auto choice are pinned too.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/align.hpp"
#include "io/read_engine.hpp"
#include "io/io_engine.hpp"
#include "lwload/error.hpp"
#include "lwload/file_system.hpp"
#include "lwload/memory_file_system.hpp"
#include "lwload/plan.hpp"
#include "plan/schedule.hpp"
#include "support/test_support.hpp"

using namespace lwload;

namespace {

using MakeReader =
    std::function<std::unique_ptr<io::ReadEngine>(boost::asio::io_context&, std::vector<io::ReadSource>)>;

struct Engine {
  const char* name;
  MakeReader make;
};

// The engines this process can use: pread always, io_uring where a ring can be set up (skipped
// visibly otherwise: seccomp, container sandboxes and kernels with io_uring disabled refuse it).
std::vector<Engine> engines() {
  std::vector<Engine> list;
  list.push_back({"pread", [](boost::asio::io_context& ctx, std::vector<io::ReadSource> files) {
                    return io::make_pread_engine(ctx, std::move(files), 3);
                  }});
  const io::UringProbe& probe = io::probe_io_uring();
  if (test::available("io_uring", probe.usable, probe.note))
    list.push_back({"io_uring", [](boost::asio::io_context& ctx, std::vector<io::ReadSource> files) {
                      return io::make_uring_engine(ctx, std::move(files), 4);
                    }});
  return list;
}

// One read and what came of it.
struct Request {
  std::size_t file = 0;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  // The buffer: kGuard canary bytes, the destination, kGuard canary bytes.
  std::vector<std::byte> buffer;
  int completions = 0;
  std::exception_ptr error;
  std::size_t got = 0;
  std::thread::id completed_on;

  static constexpr std::size_t kGuard = 64;
  static constexpr std::byte kCanary{0xE7};
  Request(std::size_t f, std::uint64_t o, std::uint64_t n)
      : file(f), offset(o), length(n), buffer(n + 2 * kGuard, kCanary) {}
  std::span<std::byte> dst() { return {buffer.data() + kGuard, static_cast<std::size_t>(length)}; }
  std::vector<std::byte> landed(std::size_t n) const {
    return {buffer.begin() + kGuard, buffer.begin() + static_cast<std::ptrdiff_t>(kGuard + n)};
  }
  // The canaries around the destination and the destination's bytes from `from` on are untouched.
  bool untouched_from(std::size_t from) const {
    for (std::size_t i = 0; i < buffer.size(); ++i) {
      const bool outside = i < kGuard || i >= kGuard + from;
      if (outside && buffer[i] != kCanary) return false;
    }
    return true;
  }
};

// Issues every request at once (all in flight together), then runs the completions on this thread
// until each has completed, and drains the io_context so a second completion would be seen.
void read_all(io::ReadEngine& reader, boost::asio::io_context& ctx, std::vector<Request>& requests) {
  auto guard = boost::asio::make_work_guard(ctx);
  for (Request& r : requests)
    reader.read(r.file, r.offset, r.dst(), [&r](std::exception_ptr error, std::size_t got) {
      ++r.completions;
      r.error = error;
      r.got = got;
      r.completed_on = std::this_thread::get_id();
    });
  std::size_t done = 0;
  // A generous bound so a lost completion fails the test instead of hanging it (no assertion here
  // depends on how long reads take).
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (done < requests.size() && std::chrono::steady_clock::now() < give_up) {
    ctx.run_one_for(std::chrono::milliseconds(200));
    done = 0;
    for (const Request& r : requests) done += r.completions > 0;
  }
  guard.reset();
  ctx.run();  // whatever else was queued: a duplicate completion runs here
  ctx.restart();
}

std::string message_of(std::exception_ptr error, ErrorCode* code = nullptr) {
  try {
    if (error) std::rethrow_exception(error);
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  } catch (const std::exception& e) {
    return std::string("not an lwload::Error: ") + e.what();
  }
  return "";
}

// A block-aligned buffer for O_DIRECT.
struct AlignedBuffer {
  std::byte* data;
  std::size_t size;
  explicit AlignedBuffer(std::size_t n)
      : data(static_cast<std::byte*>(std::aligned_alloc(kDirectIoAlignment, align_up(n, kDirectIoAlignment)))),
        size(n) {
    std::memset(data, 0xE7, n);
  }
  ~AlignedBuffer() { std::free(data); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
};

}  // namespace

TEST_CASE("io engines: each read's bytes land at its offset, in its own buffer, and nowhere else") {
  test::TempDir dir;
  const auto a_bytes = test::marked_bytes(300 * 1024 + 5, 0);
  const auto b_bytes = test::marked_bytes(100 * 1024 + 17, 77);
  test::write_file(dir / "a.bin", a_bytes);
  test::write_file(dir / "b.bin", b_bytes);
  auto fs = posix_file_system();
  const auto a = fs->open(dir / "a.bin");
  const auto b = fs->open(dir / "b.bin");
  for (const Engine& engine : engines()) {
    CAPTURE(engine.name);
    boost::asio::io_context ctx;
    auto reader = engine.make(ctx, {io::ReadSource{a.get()}, io::ReadSource{b.get()}});
    CHECK(reader->concurrency() >= 1);
    CHECK(io_engine_name(reader->engine()) == std::string_view(engine.name));
    std::vector<Request> requests;
    requests.emplace_back(0, 0, 1);                   // the first byte
    requests.emplace_back(0, 1, 4095);                // unaligned start, ends on a page boundary
    requests.emplace_back(0, 4095, 2);                // across a page boundary
    requests.emplace_back(1, 256, 256);               // another file, a block 256 bytes in
    requests.emplace_back(0, 256, 256);               // the same range of the first file
    requests.emplace_back(0, 65536 + 3, 70001);       // several pages, unaligned both ends
    requests.emplace_back(1, b_bytes.size() - 1, 1);  // the last byte of a file
    requests.emplace_back(0, 0, a_bytes.size());      // a whole file
    requests.emplace_back(1, 12345, 54321);
    read_all(*reader, ctx, requests);
    const auto self = std::this_thread::get_id();
    for (Request& r : requests) {
      CAPTURE(r.file);
      CAPTURE(r.offset);
      CAPTURE(r.length);
      CHECK(r.completions == 1);
      CHECK(message_of(r.error) == "");
      CHECK(r.got == r.length);
      CHECK(r.completed_on == self);  // completions run where the io_context runs
      CHECK(r.landed(r.length) == test::slice(r.file == 0 ? a_bytes : b_bytes, r.offset, r.length));
      CHECK(r.untouched_from(r.length));
    }
  }
}

TEST_CASE("io engines: hundreds of reads in flight complete exactly once each, with their own bytes") {
  test::TempDir dir;
  const auto bytes = test::marked_bytes(1 << 20, 3);
  test::write_file(dir / "f.bin", bytes);
  const auto file = posix_file_system()->open(dir / "f.bin");
  for (const Engine& engine : engines()) {
    CAPTURE(engine.name);
    boost::asio::io_context ctx;
    auto reader = engine.make(ctx, {io::ReadSource{file.get()}});
    std::vector<Request> requests;
    requests.reserve(600);
    for (std::uint64_t i = 0; i < 600; ++i) {
      const std::uint64_t offset = (i * 7919 * 13) % (bytes.size() - 5000);  // scattered, overlapping
      requests.emplace_back(0, offset, 1 + (i * 37) % 4999);
    }
    read_all(*reader, ctx, requests);
    std::size_t once = 0, right = 0;
    for (Request& r : requests) {
      once += r.completions == 1;
      right += !r.error && r.got == r.length && r.landed(r.length) == test::slice(bytes, r.offset, r.length) &&
               r.untouched_from(r.length);
    }
    CHECK(once == requests.size());
    CHECK(right == requests.size());
    reader.reset();  // the destructor waits for reads in flight: none is left to complete
    ctx.run();
    ctx.restart();
    std::size_t still_once = 0;
    for (const Request& r : requests) still_once += r.completions == 1;
    CHECK(still_once == requests.size());
  }
}

TEST_CASE("io engines: the end of a file is a short count, never a buffer presented as full") {
  test::TempDir dir;
  const auto bytes = test::marked_bytes(10000, 9);
  test::write_file(dir / "f.bin", bytes);
  test::write_file(dir / "shrinks.bin", bytes);
  auto fs = posix_file_system();
  const auto file = fs->open(dir / "f.bin");
  const auto shrinks = fs->open(dir / "shrinks.bin");
  for (const Engine& engine : engines()) {
    CAPTURE(engine.name);
    test::write_file(dir / "shrinks.bin", bytes);  // full again (truncated by the previous engine)
    boost::asio::io_context ctx;
    auto reader = engine.make(ctx, {io::ReadSource{file.get()}, io::ReadSource{shrinks.get()}});
    // Truncated after it was opened and the reader was made: the reader sees the file as it is now.
    std::filesystem::resize_file(dir / "shrinks.bin", 5000);
    std::vector<Request> requests;
    requests.emplace_back(0, 9000, 4096);  // 1000 bytes left
    requests.emplace_back(0, 10000, 100);  // at the end
    requests.emplace_back(0, 20000, 100);  // past the end
    requests.emplace_back(1, 4000, 4096);  // 1000 bytes left after the truncation
    requests.emplace_back(1, 6000, 100);   // past the new end
    read_all(*reader, ctx, requests);
    const std::size_t expected_got[] = {1000, 0, 0, 1000, 0};
    for (std::size_t i = 0; i < requests.size(); ++i) {
      Request& r = requests[i];
      CAPTURE(i);
      CHECK(r.completions == 1);
      CHECK(message_of(r.error) == "");
      CHECK(r.got == expected_got[i]);
      CHECK(r.got < r.length);  // short: the caller sees the file ended
      CHECK(r.landed(r.got) == test::slice(bytes, r.offset, r.got));
      CHECK(r.untouched_from(r.got));  // nothing past the end was written (no zero fill)
    }
  }
}

TEST_CASE("io engines: a failing read is one Error(io) naming the file") {
  SUBCASE("pread: the seam's error reaches the completion, once") {
    MemoryFileSystem fs;
    fs.add_file("disk.bin", test::marked_bytes(50000, 1));
    fs.fail_reads_from("disk.bin", 20000);
    const auto file = fs.open("disk.bin");
    boost::asio::io_context ctx;
    auto reader = io::make_pread_engine(ctx, {io::ReadSource{file.get()}}, 2);
    std::vector<Request> requests;
    requests.emplace_back(0, 0, 10000);     // before the bad part: fine
    requests.emplace_back(0, 19000, 2000);  // touches it
    read_all(*reader, ctx, requests);
    CHECK(requests[0].completions == 1);
    CHECK_FALSE(requests[0].error);
    CHECK(requests[0].got == 10000);
    CHECK(requests[1].completions == 1);
    ErrorCode code = ErrorCode::usage;
    const std::string message = message_of(requests[1].error, &code);
    CHECK(code == ErrorCode::io);
    CHECK(message.find("disk.bin") != std::string::npos);
    CHECK(requests[1].got < requests[1].length);  // never reported as complete
  }
  SUBCASE("io_uring: an OS error (EISDIR) from the kernel") {
    const io::UringProbe& probe = io::probe_io_uring();
    if (!test::available("io_uring", probe.usable, probe.note)) return;
    test::TempDir dir;
    // A file whose descriptor is a directory: read(2) on it fails with EISDIR.
    class DirectoryAsFile final : public RandomAccessFile {
     public:
      explicit DirectoryAsFile(std::filesystem::path p)
          : path_(std::move(p)), fd_(::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {}
      ~DirectoryAsFile() override {
        if (fd_ >= 0) ::close(fd_);
      }
      const std::filesystem::path& path() const noexcept override { return path_; }
      std::uint64_t size() const override { return 1 << 20; }
      std::size_t read_at(std::uint64_t, std::span<std::byte>) const override {
        fail(ErrorCode::io, path_.string(), ": read_at is not how io_uring reads");
      }
      int native_handle() const noexcept override { return fd_; }

     private:
      std::filesystem::path path_;
      int fd_;
    };
    DirectoryAsFile opened(dir.path());
    REQUIRE(opened.native_handle() >= 0);
    boost::asio::io_context ctx;
    auto reader = io::make_uring_engine(ctx, {io::ReadSource{&opened}}, 2);
    std::vector<Request> requests;
    requests.emplace_back(0, 0, 4096);
    read_all(*reader, ctx, requests);
    CHECK(requests[0].completions == 1);
    ErrorCode code = ErrorCode::usage;
    const std::string message = message_of(requests[0].error, &code);
    CHECK(code == ErrorCode::io);
    CHECK(message.find(dir.path().string()) != std::string::npos);
    CHECK(requests[0].got == 0);
  }
  SUBCASE("io_uring: a file without a descriptor is refused when the reader is made, naming it") {
    const io::UringProbe& probe = io::probe_io_uring();
    if (!test::available("io_uring", probe.usable, probe.note)) return;
    MemoryFileSystem fs;
    fs.add_file("in-memory.bin", test::marked_bytes(100, 0));
    const auto file = fs.open("in-memory.bin");
    boost::asio::io_context ctx;
    const Error e = test::error_of([&] { io::make_uring_engine(ctx, {io::ReadSource{file.get()}}, 2); });
    CHECK(e.code() == ErrorCode::io);
    CHECK(std::string(e.what()).find("in-memory.bin") != std::string::npos);
  }
}

TEST_CASE("io engines: O_DIRECT reads with aligned buffers and offsets, where the file system allows it") {
  test::TempDir dir;                               // under LWLOAD_SCRATCH (the build folder): tmpfs refuses O_DIRECT
  constexpr std::size_t kSize = (1 << 20) + 1000;  // ends 1000 bytes into a block
  const auto bytes = test::marked_bytes(kSize, 5);
  test::write_file(dir / "cold.bin", bytes);
  std::unique_ptr<RandomAccessFile> file;
  std::string refusal;
  try {
    file = posix_file_system()->open(dir / "cold.bin", FileOpenFlags{.direct_io = true});
  } catch (const Error& e) {
    refusal = e.what();
  }
  if (!test::available("o_direct", file != nullptr, "O_DIRECT refused under " + dir.path().string() + ": " + refusal))
    return;
  // Whether this file system refuses an unaligned O_DIRECT read (ext4, xfs, btrfs do, with
  // EINVAL), asked of the kernel directly.
  bool refuses_unaligned = false;
  {
    const int fd = ::open((dir / "cold.bin").c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
    REQUIRE(fd >= 0);
    AlignedBuffer probe(8192);
    refuses_unaligned = ::pread(fd, probe.data, 4096, 100) < 0 && errno == EINVAL;
    ::close(fd);
  }
  for (const Engine& engine : engines()) {
    CAPTURE(engine.name);
    boost::asio::io_context ctx;
    auto reader = engine.make(ctx, {io::ReadSource{file.get(), true}});
    struct Aligned {
      std::uint64_t offset, length, expect;
    };
    const Aligned reads[] = {{0, 4096, 4096}, {4096 * 5, 65536, 65536}, {1 << 20, 8192, 1000}, {0, 1 << 20, 1 << 20}};
    std::vector<std::unique_ptr<AlignedBuffer>> buffers;
    std::vector<int> completions(std::size(reads), 0);
    std::vector<std::size_t> got(std::size(reads), 0);
    std::vector<std::string> errors(std::size(reads));
    auto guard = boost::asio::make_work_guard(ctx);
    for (std::size_t i = 0; i < std::size(reads); ++i) {
      buffers.push_back(std::make_unique<AlignedBuffer>(reads[i].length));
      reader->read(0, reads[i].offset, {buffers.back()->data, buffers.back()->size},
                   [&, i](std::exception_ptr error, std::size_t n) {
                     ++completions[i];
                     got[i] = n;
                     errors[i] = message_of(error);
                   });
    }
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    auto all_done = [&] {
      for (int c : completions)
        if (c == 0) return false;
      return true;
    };
    while (!all_done() && std::chrono::steady_clock::now() < give_up) ctx.run_one_for(std::chrono::milliseconds(200));
    guard.reset();
    ctx.run();
    for (std::size_t i = 0; i < std::size(reads); ++i) {
      CAPTURE(reads[i].offset);
      CAPTURE(reads[i].length);
      CHECK(completions[i] == 1);
      CHECK(errors[i] == "");
      CHECK(got[i] == reads[i].expect);
      CHECK(std::vector<std::byte>(buffers[i]->data, buffers[i]->data + got[i]) ==
            test::slice(bytes, reads[i].offset, got[i]));
    }
    if (refuses_unaligned) {
      ctx.restart();
      std::vector<Request> unaligned;
      unaligned.emplace_back(0, 100, 4096);
      read_all(*reader, ctx, unaligned);
      CHECK(unaligned[0].completions == 1);
      ErrorCode code = ErrorCode::usage;
      const std::string message = message_of(unaligned[0].error, &code);
      CHECK(code == ErrorCode::io);
      CHECK(message.find("cold.bin") != std::string::npos);
    } else {
      test::available("o_direct_alignment", false, "this file system accepts an unaligned O_DIRECT read");
    }
  }
}

TEST_CASE("io engines: names and parsing round-trip; auto reads with the pread pool") {
  for (const IoEngine e : {IoEngine::auto_, IoEngine::io_uring, IoEngine::pread}) {
    CAPTURE(io_engine_name(e));
    CHECK(parse_io_engine(io_engine_name(e)) == e);
  }
  CHECK(io_engine_name(IoEngine::auto_) == "auto");
  CHECK(io_engine_name(IoEngine::io_uring) == "io_uring");
  CHECK(io_engine_name(IoEngine::pread) == "pread");
  CHECK(parse_io_engine("") == IoEngine::auto_);
  CHECK(parse_io_engine("io-uring") == IoEngine::io_uring);
  CHECK(parse_io_engine("uring") == IoEngine::io_uring);
  const Error bad = test::error_of([] { parse_io_engine("aio"); });
  CHECK(bad.code() == ErrorCode::usage);
  CHECK(std::string(bad.what()).find("'aio'") != std::string::npos);

  // The engine a plan schedules for each choice (plan/schedule.hpp).
  const auto scheduled = [](IoEngine asked) {
    Manifest m;
    m.format = "test";
    Plan plan;
    plan.options.io = asked;
    plan::schedule(m, plan);
    return plan.schedule;
  };
  const Schedule automatic = scheduled(IoEngine::auto_);
  CHECK(automatic.engine == IoEngine::pread);
  CHECK(automatic.engine_reason.rfind("auto", 0) == 0);
  CHECK(scheduled(IoEngine::pread).engine == IoEngine::pread);
  const Schedule uring = scheduled(IoEngine::io_uring);
  const io::UringProbe& probe = io::probe_io_uring();
  if (probe.usable) {
    CHECK(uring.engine == IoEngine::io_uring);
  } else {
    CHECK(uring.engine == IoEngine::pread);  // falls back, saying why
    CHECK(uring.engine_reason.find(probe.note) != std::string::npos);
  }
  CHECK(probe.usable == probe.note.empty());
}
