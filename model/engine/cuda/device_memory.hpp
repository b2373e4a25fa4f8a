// Memory of a kernels::cuda::ops object (device memory, or page-locked host memory for the copies)
// owned like a unique_ptr: released through the same ops when it goes. The ops must outlive it,
// so an owner declares its ops before its buffers (members die in reverse order).
#pragma once

#include "kernels/cuda/ops.hpp"

#include <cstddef>
#include <utility>

namespace bitnet::model {

template <bool Pinned>
class ops_memory {
public:
    ops_memory() = default;
    ops_memory(kernels::cuda::ops& o, std::size_t bytes)
        : ops_(&o)
        , p_(Pinned ? o.alloc_pinned(bytes) : o.alloc(bytes))
        , bytes_(bytes) {}
    ops_memory(ops_memory&& o) noexcept
        : ops_(std::exchange(o.ops_, nullptr))
        , p_(std::exchange(o.p_, nullptr))
        , bytes_(std::exchange(o.bytes_, 0)) {}
    ops_memory& operator=(ops_memory&& o) noexcept {
        if (this != &o) {
            reset();
            ops_ = std::exchange(o.ops_, nullptr);
            p_ = std::exchange(o.p_, nullptr);
            bytes_ = std::exchange(o.bytes_, 0);
        }
        return *this;
    }
    ops_memory(const ops_memory&) = delete;
    ops_memory& operator=(const ops_memory&) = delete;
    ~ops_memory() { reset(); }

    template <class T>
    [[nodiscard]] T* as() const noexcept {
        return static_cast<T*>(p_);
    }
    [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }

private:
    void reset() noexcept {
        if (p_ != nullptr) {
            if constexpr (Pinned)
                ops_->release_pinned(p_);
            else
                ops_->release(p_);
        }
        p_ = nullptr;
        bytes_ = 0;
    }

    kernels::cuda::ops* ops_ = nullptr;
    void* p_ = nullptr;
    std::size_t bytes_ = 0;
};

/// Device memory.
using device_memory = ops_memory<false>;
/// Page-locked host memory: the host side of asynchronous uploads and downloads.
using pinned_memory = ops_memory<true>;

} // namespace bitnet::model
