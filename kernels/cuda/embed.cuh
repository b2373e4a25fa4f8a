// The step's token embeddings gathered on the device from the F16 table (the tied logits matrix
// the device holds anyway), so that a step uploads token ids (4 bytes a token) rather than rows of
// n_embd floats looked up on the host, and the host need not keep the table at all.
// Fidelity: exact (an F16 widened to float is exact; kernels/f16.hpp's conversion on both sides).
#pragma once

#include "kernels/cuda/grid.hpp"
#include "kernels/cuda/kernel_args.hpp"
#include "kernels/f16.hpp"

#include <cstddef>
#include <stdexcept>

namespace bitnet::kernels::cuda {

struct embed_kernel {
    using args = embed_args;
    static constexpr unsigned threads = 256;

    static BITNET_DEVICE void body(const block& b, const args& a) {
        const unsigned r = b.y();
        const std::uint16_t* src =
            a.table + static_cast<std::size_t>(a.tokens[r]) * static_cast<std::size_t>(a.n_embd);
        float* dst = a.x + static_cast<std::size_t>(r) * a.ldx;
        b.threads([&](unsigned t) {
            const unsigned k = b.x() * b.size() + t;
            if (k < a.n_embd)
                dst[k] = f16_to_f32(src[k]);
        });
    }
};

template <class Launcher>
void launch(const embed_args& a, Launcher& l) {
    if (a.n_rows == 0 || a.n_embd == 0)
        return;
    if (a.n_rows > 65535u)
        throw std::invalid_argument("embed: more than 65535 rows in one launch");
    l.template run<embed_kernel>({(a.n_embd + embed_kernel::threads - 1) / embed_kernel::threads,
                                  a.n_rows, embed_kernel::threads},
                                 a);
}

} // namespace bitnet::kernels::cuda
