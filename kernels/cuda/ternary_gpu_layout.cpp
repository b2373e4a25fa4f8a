#include "kernels/cuda/ternary_gpu_layout.hpp"

namespace bitnet::kernels::cuda {

std::vector<std::uint8_t> pack_ternary_gpu(const std::uint8_t* i2s, std::uint32_t rows,
                                           std::uint32_t cols) {
    std::vector<std::uint8_t> out(ternary_gpu_bytes(rows, cols), 0);
    const std::size_t row_bytes = cols / 4;
    for (std::size_t m = 0; m < rows; ++m) {
        const std::uint8_t* src = i2s + m * row_bytes;
        std::uint8_t* dst = out.data() + m * row_bytes;
        for (std::size_t k = 0; k < cols; ++k) {
            // I2_S: column k of the row is code k % 128 of block k / 128, at byte k % 32 of the
            // block's 32, shift 6 − 2 · ((k % 128) / 32).
            const std::size_t j = k % 128;
            unsigned code = (src[32 * (k / 128) + j % 32] >> (6 - 2 * (j / 32))) & 3u;
            if (code == 3)
                code = 1;
            // GPU layout: word k / 16, byte k % 4 of it, bits 2g for g = (k % 16) / 4.
            const std::size_t word = k / ternary_gpu_word_cols;
            const std::size_t byte = k % 4;
            const unsigned g = static_cast<unsigned>((k % ternary_gpu_word_cols) / 4);
            dst[4 * word + byte] |= static_cast<std::uint8_t>(code << (2 * g));
        }
    }
    return out;
}

} // namespace bitnet::kernels::cuda
