// The io_uring read engine: Boost.Asio random_access_file (io_uring-backed when
// BOOST_ASIO_HAS_IO_URING) on duplicates of the seam's descriptors, so files are still opened
// through the FileSystem and closing them stays the seam's business.
#include "io/read_engine.hpp"

#if LWLOAD_HAVE_IO_URING
#include <unistd.h>

#include <boost/asio/random_access_file.hpp>
#include <cerrno>
#include <cstring>
#include <deque>

#include "lwload/error.hpp"

namespace lwload::io {
namespace {

class UringEngine final : public ReadEngine {
 public:
  UringEngine(boost::asio::io_context& completions, std::vector<ReadSource> files, unsigned depth)
      : sources_(std::move(files)), depth_(depth == 0 ? 1 : depth) {
    for (const ReadSource& entry : sources_) {
      const RandomAccessFile* source = entry.file;
      if (!source) {
        files_.emplace_back(completions);  // a file this load does not read
        continue;
      }
      if (source->native_handle() < 0)
        fail(ErrorCode::io, source->path().string(), ": no file descriptor for io_uring");
      const int fd = ::dup(source->native_handle());
      if (fd < 0) fail(ErrorCode::io, source->path().string(), ": dup: ", std::strerror(errno));
      try {
        files_.emplace_back(completions, fd);  // takes ownership of fd
      } catch (...) {
        ::close(fd);
        throw;
      }
    }
  }

  void read(std::size_t file, std::uint64_t offset, std::span<std::byte> dst, ReadDone done) override {
    read_rest(files_.at(file), sources_.at(file), offset, dst, 0, std::move(done));
  }

  IoEngine engine() const noexcept override { return IoEngine::io_uring; }
  std::size_t concurrency() const noexcept override { return depth_; }

 private:
  // Reads until dst is full or the file ends. A short read with bytes is asked again for the rest
  // on a buffered descriptor (the end of the file answers 0 there); on an O_DIRECT one a short read
  // is the end of the file, and asking again at that unaligned offset would fail.
  static void read_rest(boost::asio::random_access_file& file, const ReadSource& source, std::uint64_t offset,
                        std::span<std::byte> dst, std::size_t got, ReadDone done) {
    file.async_read_some_at(offset + got, boost::asio::buffer(dst.data() + got, dst.size() - got),
                            [&file, &source, offset, dst, got, done = std::move(done)](
                                const boost::system::error_code& ec, std::size_t n) mutable {
                              if (ec && ec != boost::asio::error::eof) {
                                done(std::make_exception_ptr(Error(
                                         ErrorCode::io, str(source.file->path().string(), ": read of ", dst.size(),
                                                            " bytes at offset ", offset, ": ", ec.message()))),
                                     got);
                                return;
                              }
                              got += n;
                              if (n == 0 || got == dst.size() || source.direct_io) {
                                done(nullptr, got);
                                return;
                              }
                              read_rest(file, source, offset, dst, got, std::move(done));
                            });
  }

  std::vector<ReadSource> sources_;
  std::deque<boost::asio::random_access_file> files_;  // deque: no moves of files with ops pending
  unsigned depth_;
};

}  // namespace

std::unique_ptr<ReadEngine> make_uring_engine(boost::asio::io_context& completions, std::vector<ReadSource> files,
                                              unsigned depth) {
  return std::make_unique<UringEngine>(completions, std::move(files), depth);
}

}  // namespace lwload::io

#else

#include "lwload/error.hpp"

namespace lwload::io {

std::unique_ptr<ReadEngine> make_uring_engine(boost::asio::io_context&, std::vector<ReadSource>, unsigned) {
  fail(ErrorCode::unsupported, "lwload was built without io_uring (liburing)");
}

}  // namespace lwload::io

#endif
