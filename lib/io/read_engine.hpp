// Asynchronous positional reads for the loader's pipeline, behind one small interface with one
// class per engine: io_uring (Boost.Asio random_access_file) and pread on a thread pool. Either
// way the completion runs on the loader's io_context thread, so the pipeline needs no locks.
#pragma once

#include "io/layer.hpp"

#include <boost/asio/io_context.hpp>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "lwload/file_system.hpp"
#include "lwload/io_engine.hpp"

namespace lwload::io {

// A file the engine reads; O_DIRECT files need aligned offsets, sizes and buffers (the caller's job).
struct ReadSource {
  const RandomAccessFile* file = nullptr;
  bool direct_io = false;
};

// `got` < dst.size() only at end of file; `error` non-null on an OS error (an lwload::Error).
// A read is one system call unless the kernel returns less than asked before the end of the file.
using ReadDone = std::function<void(std::exception_ptr error, std::size_t got)>;

class ReadEngine {
 public:
  virtual ~ReadEngine() = default;  // waits for reads in flight (their buffers are the caller's)
  // Reads into dst (which must stay valid until `done` runs) bytes of files[file] at `offset`.
  virtual void read(std::size_t file, std::uint64_t offset, std::span<std::byte> dst, ReadDone done) = 0;
  virtual IoEngine engine() const noexcept = 0;
  // How many reads are worth keeping in flight.
  virtual std::size_t concurrency() const noexcept = 0;
};

// pread(2) through RandomAccessFile::read_at on `threads` threads (works for every FileSystem).
std::unique_ptr<ReadEngine> make_pread_engine(boost::asio::io_context& completions, std::vector<ReadSource> files,
                                              unsigned threads);

// io_uring reads on duplicates of the files' descriptors. Throws (Error(io) or
// boost::system::system_error) when a file has no descriptor or the ring cannot be set up.
std::unique_ptr<ReadEngine> make_uring_engine(boost::asio::io_context& completions, std::vector<ReadSource> files,
                                              unsigned depth);

}  // namespace lwload::io
