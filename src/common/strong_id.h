// StrongInt<Tag, T>: an integer that does not mix with integers of another tag
// (offsets, shard indexes, field ids each get their own).
#pragma once

#include <compare>
#include <cstdint>
#include <functional>

namespace icestream {

template <typename Tag, typename T = uint64_t>
class StrongInt {
 public:
  using ValueType = T;
  constexpr StrongInt() = default;
  constexpr explicit StrongInt(T v) : v_(v) {}
  constexpr T value() const { return v_; }
  constexpr auto operator<=>(const StrongInt&) const = default;
  constexpr StrongInt& operator++() {
    ++v_;
    return *this;
  }
  constexpr StrongInt operator+(T d) const { return StrongInt(v_ + d); }
  constexpr StrongInt operator-(T d) const { return StrongInt(v_ - d); }
  constexpr T operator-(StrongInt o) const { return v_ - o.v_; }

 private:
  T v_{};
};

}  // namespace icestream

template <typename Tag, typename T>
struct std::hash<icestream::StrongInt<Tag, T>> {
  size_t operator()(const icestream::StrongInt<Tag, T>& v) const {
    return std::hash<T>()(v.value());
  }
};
