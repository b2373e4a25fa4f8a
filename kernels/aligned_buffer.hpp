// A fixed-size, 64-byte-aligned byte buffer for kernel operands (repacked weights, scratch), so
// vector loads never straddle cache lines by accident.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>

namespace bitnet::kernels {

class aligned_buffer {
public:
    static constexpr std::size_t alignment = 64;

    aligned_buffer() = default;
    explicit aligned_buffer(std::size_t n_bytes)
        : size_(n_bytes) {
        if (n_bytes == 0)
            return;
        const std::size_t rounded = (n_bytes + alignment - 1) / alignment * alignment;
        void* p = std::aligned_alloc(alignment, rounded);
        if (p == nullptr)
            throw std::bad_alloc();
        data_.reset(static_cast<std::uint8_t*>(p));
    }

    [[nodiscard]] std::uint8_t* data() noexcept { return data_.get(); }
    [[nodiscard]] const std::uint8_t* data() const noexcept { return data_.get(); }
    [[nodiscard]] std::size_t size() const noexcept { return size_; }

    template <class T>
    [[nodiscard]] T* as() noexcept {
        return reinterpret_cast<T*>(data_.get());
    }
    template <class T>
    [[nodiscard]] const T* as() const noexcept {
        return reinterpret_cast<const T*>(data_.get());
    }

private:
    struct free_delete {
        void operator()(std::uint8_t* p) const noexcept { std::free(p); }
    };
    std::unique_ptr<std::uint8_t, free_delete> data_;
    std::size_t size_ = 0;
};

} // namespace bitnet::kernels
