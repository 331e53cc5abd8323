#pragma once
// A T on the heap, made on first write; reading one never written sees a default T. One
// pointer wide until then.
//
// An op's parallel state (strategies, layouts, forward ops; sizeof 424 on x86-64 with GCC 12,
// measured 2026-11-26) is written only for the model's ops; the passes' inserted ops, over half
// the ops of a redistributed graph, never have one. Held here instead of inline, it costs an Op
// one pointer, so a 100k-op model's op array, moved on every growth, stays about half as large.
// Copies are deep, as a plain member's would be.
#include <memory>

namespace irc {

template <typename T>
class HeapDefault {
 public:
  HeapDefault() = default;
  HeapDefault(const HeapDefault& other) : ptr_(other.ptr_ ? std::make_unique<T>(*other.ptr_) : nullptr) {}
  HeapDefault(HeapDefault&&) noexcept = default;
  HeapDefault& operator=(const HeapDefault& other) {
    if (this != &other) ptr_ = other.ptr_ ? std::make_unique<T>(*other.ptr_) : nullptr;
    return *this;
  }
  HeapDefault& operator=(HeapDefault&&) noexcept = default;
  HeapDefault& operator=(T value) {
    ptr_ = std::make_unique<T>(std::move(value));
    return *this;
  }

  // Whether anything was ever written (a read-only pass can skip an unwritten one).
  bool written() const { return ptr_ != nullptr; }

  const T& operator*() const { return ptr_ ? *ptr_ : defaultValue(); }
  const T* operator->() const { return &**this; }
  T& operator*() {
    if (!ptr_) ptr_ = std::make_unique<T>();
    return *ptr_;
  }
  T* operator->() { return &**this; }

 private:
  static const T& defaultValue() {
    static const T value{};
    return value;
  }
  std::unique_ptr<T> ptr_;
};

}  // namespace irc
