// The portable read engine: blocking pread (via the FileSystem seam's read_at) on a small thread
// pool, completions posted back to the loader's io_context.
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include "io/read_engine.hpp"

namespace lwload::io {
namespace {

class PreadEngine final : public ReadEngine {
 public:
  PreadEngine(boost::asio::io_context& completions, std::vector<ReadSource> files, unsigned threads)
      : completions_(completions), files_(std::move(files)), threads_(threads == 0 ? 1 : threads), pool_(threads_) {}

  ~PreadEngine() override { pool_.join(); }  // no stop(): reads in flight finish into their buffers

  void read(std::size_t file, std::uint64_t offset, std::span<std::byte> dst, ReadDone done) override {
    const RandomAccessFile* source = files_.at(file).file;
    boost::asio::post(pool_, [this, source, offset, dst, done = std::move(done)]() mutable {
      std::exception_ptr error;
      std::size_t got = 0;
      try {
        while (got < dst.size()) {
          const std::size_t want = dst.size() - got;
          const std::size_t n = source->read_at(offset + got, dst.subspan(got));
          got += n;
          // Short only at end of file (the seam's contract); asking again there would fail on an
          // O_DIRECT descriptor, whose offsets must stay aligned.
          if (n < want) break;
        }
      } catch (...) {
        error = std::current_exception();
      }
      boost::asio::post(completions_, [done = std::move(done), error, got] { done(error, got); });
    });
  }

  IoEngine engine() const noexcept override { return IoEngine::pread; }
  std::size_t concurrency() const noexcept override { return threads_; }

 private:
  boost::asio::io_context& completions_;
  std::vector<ReadSource> files_;
  unsigned threads_;
  boost::asio::thread_pool pool_;
};

}  // namespace

std::unique_ptr<ReadEngine> make_pread_engine(boost::asio::io_context& completions, std::vector<ReadSource> files,
                                              unsigned threads) {
  return std::make_unique<PreadEngine>(completions, std::move(files), threads);
}

}  // namespace lwload::io
