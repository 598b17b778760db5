// Overloaded{lambdas...}: a visitor for std::visit built from lambdas (internal).
#pragma once

namespace icestream::iceberg {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

}  // namespace icestream::iceberg
