// The GGUF reader's fuzz property, shared by the in-tree mutation fuzzer and the libFuzzer entry:
// parsing arbitrary bytes returns a value or an error, never crashes, and every view it hands out
// lies inside the input.
#pragma once

#include "model/gguf/gguf_reader.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

namespace bitnet::fuzz {

inline void check_gguf_bytes(std::span<const std::uint8_t> bytes) {
    auto f = model::gguf_file::parse(bytes);
    if (!f) {
        if (f.error().message.empty()) {
            std::fprintf(stderr, "error without a message\n");
            std::abort();
        }
        return;
    }
    const auto* begin = bytes.data();
    const auto* end = bytes.data() + bytes.size();
    auto inside = [&](const void* p, std::uint64_t n) {
        const auto* b = static_cast<const std::uint8_t*>(p);
        return n == 0 || (b >= begin && b <= end && n <= static_cast<std::uint64_t>(end - b));
    };
    for (const auto& t : f->tensors()) {
        if (!inside(t.data, t.n_bytes)) {
            std::fprintf(stderr, "tensor view outside the input\n");
            std::abort();
        }
    }
    for (const auto& kv : f->metadata()) {
        if (!inside(kv.key.data(), kv.key.size()))
            std::abort();
        for (const auto& s : kv.value.array_strings)
            if (!inside(s.data(), s.size()))
                std::abort();
        // Touch every decoded element through the public getters.
        (void)f->get_float_array(kv.key);
        (void)f->get_int_array(kv.key);
        (void)f->get_string_array(kv.key);
    }
}

} // namespace bitnet::fuzz
