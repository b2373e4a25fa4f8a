#include "kernels/cpu_features.hpp"

#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <cpuid.h>

namespace bitnet::kernels {
namespace {

std::uint64_t read_xcr0() noexcept {
    std::uint32_t lo = 0;
    std::uint32_t hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (static_cast<std::uint64_t>(hi) << 32) | lo;
}

cpu_features probe() noexcept {
    cpu_features f;
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid_max(0, nullptr) < 7)
        return f;
    __cpuid_count(1, 0, a, b, c, d);
    const bool osxsave = (c >> 27) & 1u;
    const bool fma = (c >> 12) & 1u;
    const bool f16c = (c >> 29) & 1u;
    if (!osxsave)
        return f;
    const std::uint64_t xcr0 = read_xcr0();
    const bool ymm_state = (xcr0 & 0x6u) == 0x6u;   // SSE + AVX state
    const bool zmm_state = (xcr0 & 0xe6u) == 0xe6u; // + opmask, ZMM_Hi256, Hi16_ZMM
    __cpuid_count(7, 0, a, b, c, d);
    const bool avx2 = (b >> 5) & 1u;
    const bool avx512f = (b >> 16) & 1u;
    const bool avx512bw = (b >> 30) & 1u;
    const bool avx512vl = (b >> 31) & 1u;
    const bool avx512vnni = (c >> 11) & 1u;
    f.avx2 = ymm_state && avx2 && fma && f16c;
    f.avx512 = f.avx2 && zmm_state && avx512f && avx512bw && avx512vl && avx512vnni;
    return f;
}

} // namespace

const cpu_features& detect_cpu_features() noexcept {
    static const cpu_features features = probe();
    return features;
}

bool isa_supported(isa i) noexcept {
    const cpu_features& f = detect_cpu_features();
    switch (i) {
    case isa::scalar:
        return true;
    case isa::avx2:
        return f.avx2;
    case isa::avx512_vnni:
        return f.avx512;
    }
    return false;
}

isa best_isa_up_to(isa want) noexcept {
    while (want != isa::scalar && !isa_supported(want))
        want = static_cast<isa>(static_cast<int>(want) - 1);
    return want;
}

isa best_isa() noexcept {
    static const isa chosen = [] {
        isa best = isa::scalar;
        if (isa_supported(isa::avx2))
            best = isa::avx2;
        if (isa_supported(isa::avx512_vnni))
            best = isa::avx512_vnni;
        if (const char* env = std::getenv("BITNET_ISA")) {
            const std::string_view want(env);
            if (want == "scalar")
                best = isa::scalar;
            else if (want == "avx2" && best != isa::scalar)
                best = isa::avx2;
        }
        return best;
    }();
    return chosen;
}

bool isa_pinned() noexcept {
    static const bool pinned = [] {
        const char* env = std::getenv("BITNET_ISA");
        if (env == nullptr)
            return false;
        const std::string_view want(env);
        return want == "scalar" || want == "avx2" || want == "avx512_vnni";
    }();
    return pinned;
}

std::string_view isa_name(isa i) noexcept {
    switch (i) {
    case isa::scalar:
        return "scalar";
    case isa::avx2:
        return "avx2";
    case isa::avx512_vnni:
        return "avx512_vnni";
    }
    return "unknown";
}

} // namespace bitnet::kernels
