// A vector that keeps its first N elements inside itself, for the manifest's per-tensor lists: a
// tensor's shape (rank 4 or less for almost every tensor) and its pieces (one for almost every
// tensor). A header may list millions of tensors, and a std::vector costs each of them a heap
// block of at least 32 bytes and an allocation to make and free; this costs nothing past N.
//
// It reads like the std::vector it replaces (begin/end, size, data, operator[], push_back,
// assign, comparison with another or with a std::vector), is a contiguous range for std::span,
// and converts to std::vector. Elements are trivially copyable (int64_t, Piece): copies are memcpy.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <new>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace lwload {

template <typename T, std::size_t N>
class InlineVector {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                "InlineVector copies its elements as bytes and never destroys them");
  static_assert(N > 0);

 public:
  using value_type = T;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using reference = T&;
  using const_reference = const T&;
  using pointer = T*;
  using const_pointer = const T*;
  using iterator = T*;
  using const_iterator = const T*;

  InlineVector() noexcept {}
  InlineVector(std::initializer_list<T> values) { assign(values.begin(), values.end()); }
  template <std::input_iterator It>
  InlineVector(It first, It last) {
    assign(first, last);
  }
  // From a std::vector or a span (a reader's list, a caller's shape).
  InlineVector(std::span<const T> values) { assign(values.begin(), values.end()); }
  InlineVector(const std::vector<T>& values) { assign(values.begin(), values.end()); }
  InlineVector(const InlineVector& other) { assign(other.begin(), other.end()); }
  InlineVector(InlineVector&& other) noexcept { take(other); }
  ~InlineVector() { release(); }

  InlineVector& operator=(const InlineVector& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }
  InlineVector& operator=(InlineVector&& other) noexcept {
    if (this != &other) {
      release();
      take(other);
    }
    return *this;
  }
  InlineVector& operator=(std::initializer_list<T> values) {
    assign(values.begin(), values.end());
    return *this;
  }

  template <std::input_iterator It>
  void assign(It first, It last) {
    clear();
    if constexpr (std::forward_iterator<It>) reserve(static_cast<size_type>(std::distance(first, last)));
    for (; first != last; ++first) push_back(*first);
  }

  T* data() noexcept { return heap() ? storage_.heap : std::launder(reinterpret_cast<T*>(storage_.bytes)); }
  const T* data() const noexcept {
    return heap() ? storage_.heap : std::launder(reinterpret_cast<const T*>(storage_.bytes));
  }
  size_type size() const noexcept { return size_; }
  size_type capacity() const noexcept { return capacity_; }
  bool empty() const noexcept { return size_ == 0; }

  iterator begin() noexcept { return data(); }
  iterator end() noexcept { return data() + size_; }
  const_iterator begin() const noexcept { return data(); }
  const_iterator end() const noexcept { return data() + size_; }
  const_iterator cbegin() const noexcept { return begin(); }
  const_iterator cend() const noexcept { return end(); }

  T& operator[](size_type i) noexcept { return data()[i]; }
  const T& operator[](size_type i) const noexcept { return data()[i]; }
  T& at(size_type i) {
    if (i >= size_) throw std::out_of_range("InlineVector::at");
    return data()[i];
  }
  const T& at(size_type i) const {
    if (i >= size_) throw std::out_of_range("InlineVector::at");
    return data()[i];
  }
  T& front() noexcept { return data()[0]; }
  const T& front() const noexcept { return data()[0]; }
  T& back() noexcept { return data()[size_ - 1]; }
  const T& back() const noexcept { return data()[size_ - 1]; }

  void reserve(size_type wanted) {
    if (wanted <= capacity_) return;
    if (wanted > UINT32_MAX) throw std::length_error("InlineVector: more than 2^32 - 1 elements");
    T* grown = static_cast<T*>(::operator new(wanted * sizeof(T)));
    const std::uint32_t size = size_;
    if (size > 0) std::memcpy(static_cast<void*>(grown), data(), size * sizeof(T));
    release();
    storage_.heap = grown;
    size_ = size;
    capacity_ = static_cast<std::uint32_t>(wanted);
  }
  void push_back(const T& value) {
    if (size_ == capacity_) {
      const T copy = value;  // `value` may be one of the elements the growth moves
      reserve(std::max<size_type>(2 * size_type{capacity_}, N));
      ::new (static_cast<void*>(data() + size_++)) T(copy);
      return;
    }
    ::new (static_cast<void*>(data() + size_++)) T(value);
  }
  template <typename... Args>
  T& emplace_back(Args&&... args) {
    push_back(T{std::forward<Args>(args)...});
    return back();
  }
  void pop_back() noexcept { --size_; }
  void resize(size_type count, const T& value = T{}) {
    reserve(count);
    for (size_type i = size_; i < count; ++i) ::new (static_cast<void*>(data() + i)) T(value);
    size_ = static_cast<std::uint32_t>(count);
  }
  void clear() noexcept { size_ = 0; }

  // (std::span takes it as the contiguous range it is.)
  operator std::vector<T>() const { return std::vector<T>(begin(), end()); }

  friend bool operator==(const InlineVector& a, const InlineVector& b) { return equal(a, b.begin(), b.end()); }
  friend bool operator==(const InlineVector& a, const std::vector<T>& b) { return equal(a, b.begin(), b.end()); }

 private:
  bool heap() const noexcept { return capacity_ > N; }
  template <typename It>
  static bool equal(const InlineVector& a, It first, It last) {
    return std::equal(a.begin(), a.end(), first, last);
  }
  void release() noexcept {
    if (heap()) ::operator delete(storage_.heap);
    capacity_ = N;
    size_ = 0;
  }
  // Takes `other`'s elements (its heap block, or a copy of its inline ones); `other` is left empty.
  void take(InlineVector& other) noexcept {
    if (other.heap()) {
      storage_.heap = other.storage_.heap;
    } else if (other.size_ > 0) {
      std::memcpy(storage_.bytes, other.storage_.bytes, other.size_ * sizeof(T));
    }
    size_ = other.size_;
    capacity_ = other.capacity_;
    other.size_ = 0;
    other.capacity_ = N;
  }

  // The first N elements' bytes, or (capacity_ > N) the heap block holding them all.
  union Storage {
    alignas(T) unsigned char bytes[N * sizeof(T)];
    T* heap;
  } storage_;
  std::uint32_t size_ = 0;
  std::uint32_t capacity_ = N;
};

}  // namespace lwload
