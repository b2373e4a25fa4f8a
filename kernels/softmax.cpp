#include "kernels/softmax.hpp"

#include "kernels/cpu/expf_glibc_data.hpp"
#include "kernels/cpu/softmax_kernels.hpp"
#include "kernels/f16.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

namespace bitnet::kernels {
namespace {

// The scalar twin: the definition every family must equal bit for bit.
void softmax_rows_scalar(float* s, std::size_t n_rows, std::size_t n, bool round_f16) {
    for (std::size_t r = 0; r < n_rows; ++r) {
        float* row = s + r * n;
        float max_s = -INFINITY;
        for (std::size_t p = 0; p < n; ++p)
            max_s = std::max(max_s, row[p]);
        double sum = 0.0;
        for (std::size_t p = 0; p < n; ++p) {
            row[p] = std::exp(row[p] - max_s);
            sum += row[p];
        }
        const auto inv = static_cast<float>(1.0 / sum);
        for (std::size_t p = 0; p < n; ++p) {
            row[p] *= inv;
            if (round_f16)
                row[p] = f16_to_f32(f32_to_f16(row[p]));
        }
    }
}

bool vector_runs(isa family) {
    return family != isa::scalar && isa_supported(isa::avx2) && vector_expf_matches_libm();
}

bool check_vector_expf() {
    if (!isa_supported(isa::avx2))
        return false;
    std::vector<float> x;
    // A stride through every bit pattern (NaNs, infinities, subnormals, both signs)...
    for (std::uint64_t bits = 0; bits <= 0xffffffffu; bits += 65537)
        x.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(bits)));
    // ... and a dense one through [-104, -0], where x - max lies, with the ends of each
    // special range of glibc's expf.
    for (std::uint32_t bits = 0x80000000u; bits <= 0xc2d00000u; bits += 4099)
        x.push_back(std::bit_cast<float>(bits));
    namespace g = cpu::glibc_expf;
    for (const std::uint32_t edge : {g::overflow_above, g::underflow_below, g::subnormal_below,
                                     g::special_from, g::special_from | 0x80000000u})
        for (std::uint32_t d = 0; d < 8; ++d)
            x.insert(x.end(), {std::bit_cast<float>(edge - d), std::bit_cast<float>(edge + d)});
    std::vector<float> y(x.size());
    cpu::expf_rows_avx2(x.data(), y.data(), x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
        const float want = std::exp(x[i]);
        if (std::bit_cast<std::uint32_t>(want) != std::bit_cast<std::uint32_t>(y[i]) &&
            !(std::isnan(want) && std::isnan(y[i])))
            return false;
    }
    return true;
}

} // namespace

bool vector_expf_matches_libm() {
    static const bool matches = check_vector_expf();
    return matches;
}

void softmax_rows(float* s, std::size_t n_rows, std::size_t n, bool round_f16, isa family) {
    if (n == 0 || n_rows == 0)
        return;
    if (vector_runs(family))
        cpu::softmax_rows_avx2(s, n_rows, n, round_f16);
    else
        softmax_rows_scalar(s, n_rows, n, round_f16);
}

void expf_rows(const float* x, float* y, std::size_t n, isa family) {
    if (family != isa::scalar && isa_supported(isa::avx2)) {
        cpu::expf_rows_avx2(x, y, n);
        return;
    }
    for (std::size_t i = 0; i < n; ++i)
        y[i] = std::exp(x[i]);
}

} // namespace bitnet::kernels
