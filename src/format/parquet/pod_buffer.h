// PodBuffer: a growable byte buffer for the column writers' hot appends. Unlike
// std::string it never zero-fills, and an append of a constant size (an int, a double, a
// 16-byte UUID) compiles to one capacity check and one inline copy instead of a library
// call. Not thread-safe; copies copy the bytes (std::function needs copyable tasks; the
// writer moves).
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>

namespace icestream::format::parquet {

class PodBuffer {
 public:
  PodBuffer() = default;
  PodBuffer(const PodBuffer& o) { append(o.data(), o.size()); }
  PodBuffer& operator=(const PodBuffer& o) {
    if (this != &o) {
      clear();
      append(o.data(), o.size());
    }
    return *this;
  }
  PodBuffer(PodBuffer&& o) noexcept
      : data_(std::move(o.data_)), size_(o.size_), capacity_(o.capacity_) {
    o.size_ = o.capacity_ = 0;
  }
  PodBuffer& operator=(PodBuffer&& o) noexcept {
    data_ = std::move(o.data_);
    size_ = o.size_;
    capacity_ = o.capacity_;
    o.size_ = o.capacity_ = 0;
    return *this;
  }

  const char* data() const { return data_.get(); }
  char* data() { return data_.get(); }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  bool empty() const { return size_ == 0; }
  operator std::string_view() const { return {data_.get(), size_}; }  // NOLINT: a view of it
  std::string_view substr(size_t pos, size_t n) const {
    return std::string_view(*this).substr(pos, n);
  }
  char operator[](size_t i) const { return data_[i]; }

  void clear() { size_ = 0; }
  // Shrinks (a rollback); growing through resize() is not offered: bytes are appended.
  void truncate(size_t n) {
    if (n < size_) size_ = n;
  }
  void reserve(size_t n) {
    if (n > capacity_) Reallocate(n);
  }
  void push_back(char c) {
    if (size_ == capacity_) Grow(1);
    data_[size_++] = c;
  }
  void append(const void* p, size_t n) {
    if (n == 0) return;  // (memcpy from a null p is undefined even for 0 bytes)
    if (n > capacity_ - size_) Grow(n);
    std::memcpy(data_.get() + size_, p, n);
    size_ += n;
  }
  void append(std::string_view s) { append(s.data(), s.size()); }

  friend bool operator==(const PodBuffer& a, const PodBuffer& b) {
    return std::string_view(a) == std::string_view(b);
  }

 private:
  void Grow(size_t more) {
    size_t want = size_ + more;
    size_t next = capacity_ < 64 ? 64 : capacity_ * 2;
    Reallocate(next < want ? want : next);
  }
  void Reallocate(size_t n) {
    std::unique_ptr<char[]> fresh(new char[n]);  // default-initialized: not zeroed
    if (size_ > 0) std::memcpy(fresh.get(), data_.get(), size_);
    data_ = std::move(fresh);
    capacity_ = n;
  }

  std::unique_ptr<char[]> data_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace icestream::format::parquet
